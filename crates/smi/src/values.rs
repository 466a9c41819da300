//! Cell-level reading shared by every format: placeholder tokens, sizes with units, numbers.
//!
//! Every function here returns `None` rather than guessing, because a placeholder such as `N/A`
//! read as `0` would tell the planner a GPU is empty when nobody knows.

use vramfit_units::parse_f64;
pub(crate) use vramfit_units::MIB;

/// The warning for processes listed without a memory figure.
pub(crate) const NO_PROCESS_MEMORY: &str = "some processes have no memory figure (Windows WDDM \
and WSL cannot attribute memory to a process); only the GPU totals are usable there";

/// Whether `s` is one of the tokens nvidia-smi and friends print for "no value".
pub(crate) fn is_placeholder(s: &str) -> bool {
    let t = s.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(t)
        .trim();
    if inner.is_empty() {
        return true;
    }
    let lower = inner.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "n/a"
            | "na"
            | "none"
            | "null"
            | "unknown"
            | "err!"
            | "unknown error"
            | "not supported"
            | "insufficient permissions"
            | "requested functionality has been deprecated"
    ) || lower.starts_with("not available")
}

/// A trimmed string, or `None` for a placeholder.
pub(crate) fn text(s: &str) -> Option<String> {
    let t = s.trim();
    (!is_placeholder(t)).then(|| t.to_string())
}

/// A non-negative integer such as an index or a PID.
pub(crate) fn uint(s: &str) -> Option<u32> {
    s.trim().parse().ok()
}

/// A number with an optional trailing unit (`38 %`, `53 C`, `24.80 W`).
pub(crate) fn number(s: &str) -> Option<f64> {
    let (num, _unit) = split_unit(s.trim());
    parse_f64(num).filter(|v| v.is_finite())
}

/// A size in bytes: `2296 MiB`, `2296MiB`, `9293398016`, with `default_unit` for a bare number.
///
/// `MB`/`GB` are read as binary units because the tools that print them (gpustat) divide by
/// 1024².
pub(crate) fn size(s: &str, default_unit: u64) -> Option<u64> {
    let t = s.trim();
    if is_placeholder(t) {
        return None;
    }
    let (num, unit) = split_unit(t);
    let factor = match unit.to_ascii_lowercase().as_str() {
        "" => default_unit,
        "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    if let Ok(whole) = num.parse::<u64>() {
        return whole.checked_mul(factor);
    }
    let value = parse_f64(num)?;
    let bytes = value * factor as f64;
    // u64::MAX as f64 rounds up to 2^64, which would saturate rather than fail; stay below it.
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then(|| bytes.round() as u64)
}

/// Splits `"2296 MiB"` / `"2296MiB"` into the numeric prefix and the trimmed rest.
fn split_unit(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(s.len(), |(i, _)| i);
    let (num, rest) = s.split_at(end);
    (num, rest.trim())
}

/// Byte spans of the whitespace-separated tokens of `s`, so callers can cut out a free-text run
/// (a process name with spaces) between two tokens.
pub(crate) fn token_spans(s: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(st)) => {
                spans.push((st, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(st) = start {
        spans.push((st, s.len()));
    }
    spans
}

/// Whether `s` looks like a PCI bus id such as `00000000:0C:00.0`.
pub(crate) fn is_bus_id(s: &str) -> bool {
    let s = s.trim();
    s.contains(':')
        && s.contains('.')
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
}

/// Whether `s` looks like a version number (`595.71.05`, `13.2`), as opposed to prose that 610
/// prints in version fields.
pub(crate) fn is_version(s: &str) -> bool {
    let s = s.trim();
    s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// The version at the start of `value`, dropping the `[Deprecated; …]` note that 610 appends.
pub(crate) fn version(value: &str) -> Option<String> {
    value
        .split_whitespace()
        .next()
        .filter(|v| is_version(v))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_none_never_zero() {
        for p in [
            "N/A",
            "[N/A]",
            "[Not Supported]",
            "Not Supported",
            "[Insufficient Permissions]",
            "ERR!",
            "[Unknown Error]",
            "Not available in WDDM driver model",
            "",
        ] {
            assert!(is_placeholder(p), "{p}");
            assert_eq!(size(p, MIB), None, "{p}");
            assert_eq!(number(p), None, "{p}");
            assert_eq!(text(p), None, "{p}");
        }
    }

    #[test]
    fn sizes_take_units_or_the_default() {
        assert_eq!(size("2296 MiB", 1), Some(2296 * MIB));
        assert_eq!(size("59MiB", 1), Some(59 * MIB));
        assert_eq!(size("800", MIB), Some(800 * MIB));
        assert_eq!(size("9293398016", 1), Some(9_293_398_016));
        assert_eq!(size("1.5 GiB", 1), Some(3 * (1 << 29)));
        assert_eq!(size("0 MiB", 1), Some(0));
        assert_eq!(size("12 parsecs", 1), None);
        assert_eq!(size("-5 MiB", 1), None);
        assert_eq!(size("99999999999999999999 MiB", 1), None);
        assert_eq!(size("18446744073709551615 MiB", 1), None);
        assert_eq!(size("1e400", 1), None);
    }

    #[test]
    fn numbers_drop_their_unit() {
        assert_eq!(number("38 %"), Some(38.0));
        assert_eq!(number("53 C"), Some(53.0));
        assert_eq!(number("24.80 W"), Some(24.8));
        assert_eq!(number("-8 C"), Some(-8.0));
        assert_eq!(number("N/A"), None);
    }

    #[test]
    fn token_spans_cover_multibyte_text() {
        let s = " ab  çd\te ";
        let toks: Vec<&str> = token_spans(s).iter().map(|&(a, b)| &s[a..b]).collect();
        assert_eq!(toks, ["ab", "çd", "e"]);
    }

    #[test]
    fn shapes() {
        assert!(is_bus_id("00000000:0C:00.0"));
        assert!(!is_bus_id("GPU-0000"));
        assert!(is_version("610.57.04"));
        assert!(!is_version("Deprecated, see \"KMD version\" instead"));
        assert_eq!(
            version(
                "610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]"
            ),
            Some("610.57.04".to_string())
        );
        assert_eq!(version("N/A"), None);
    }
}
