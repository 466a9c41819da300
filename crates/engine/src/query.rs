//! The URL query form of a [`Scenario`]: `model=llama-3.1-8b&mode=qlora&batch=4`, percent-encoded.
//! Pure string work, so the page, the CLI's links and the tests share one codec.

use crate::scenario::{FieldError, Scenario};

fn hex(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` and `+`; malformed escapes are kept literally, invalid UTF-8 is replaced.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi * 16 + lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes everything but unreserved characters (RFC 3986 §2.3) and the separators `,` and `:`.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b',' | b':' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Splits a query string (with or without the leading `?`) into decoded pairs.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .trim_start_matches('?')
        .split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

/// Keys the page owns that are not scenario fields (layout, embedding, the Hub repo read).
pub const PAGE_KEYS: &[&str] = &["embed", "show", "compare", "lesson", "hf"];

/// Reads a scenario from a query, ignoring page keys and reporting every other bad pair.
pub fn scenario_from_query(query: &str) -> (Scenario, Vec<FieldError>) {
    let pairs = parse_query(query);
    Scenario::from_pairs(
        pairs
            .iter()
            .filter(|(k, _)| !PAGE_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

/// The query for a scenario: only the fields that differ from the default.
pub fn scenario_to_query(scenario: &Scenario) -> String {
    scenario
        .to_pairs()
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn query_round_trips_a_scenario() {
        let (s, errors) = scenario_from_query(
            "?model=llama-3.1-8b&mode=qlora&batch=4&custom=RSSM%20dynamics:500MiB&embed=1",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.custom[0].name, "RSSM dynamics");
        let (back, errors) = scenario_from_query(&scenario_to_query(&s));
        assert!(errors.is_empty());
        assert_eq!(back, s);
    }

    #[test]
    fn bad_pairs_are_reported_and_defaults_kept() {
        let (s, errors) = scenario_from_query("batch=abc&seq=%ZZ&colour=blue&gpu=t4");
        assert_eq!(s.gpu, "t4");
        assert_eq!(s.batch, Scenario::default().batch);
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["batch", "seq", "colour"]);
    }

    proptest! {
        #[test]
        fn decoding_never_panics(text in ".*") {
            let _ = scenario_from_query(&text);
        }

        #[test]
        fn encoding_round_trips(text in ".*") {
            prop_assert_eq!(percent_decode(&percent_encode(&text)), text);
        }
    }
}
