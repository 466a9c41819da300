//! `parse_header` must never panic: it will run in a browser tab on whatever file is dropped
//! there, where a panic takes the page down. Arbitrary bytes, bytes framed as a header of their
//! own length, JSON made of the format's own tokens, and valid headers damaged the ways files get
//! damaged. Whatever parses must also write back and read back the same; any header
//! `Header::lay_out` builds must read back equal.

use proptest::prelude::*;
use vramfit_safetensors::{parse_header, write_header, Dtype, Header, ParseError};

/// Reads `bytes`; on success uses every derived figure and checks the header survives writing and
/// reading back.
fn exercise(bytes: &[u8]) -> Result<Header, ParseError> {
    let header = match parse_header(bytes) {
        Err(ParseError::Truncated { needed }) => {
            assert!(needed > bytes.len() as u64, "Truncated asks for more");
            return Err(ParseError::Truncated { needed });
        }
        other => other?,
    };
    let _ = (header.tensor_bytes(), header.file_len());
    for t in &header.tensors {
        assert_eq!(t.expected_bytes(), Some(t.bytes()), "{}", t.name);
    }
    assert_eq!(header.check_file_len(header.file_len()), Ok(()));
    let written = write_header(&header);
    let reread = parse_header(&written).expect("a written header reads back");
    assert_eq!(reread.tensors, header.tensors);
    assert_eq!(reread.metadata, header.metadata);
    assert_eq!(reread.data_start, written.len() as u64);
    assert_eq!(write_header(&reread), written, "writing is stable");
    Ok(header)
}

/// `8-byte length ++ body`.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut b = (body.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(body);
    b
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop::sample::select(Dtype::ALL.to_vec())
}

/// Names with the characters JSON must escape, and non-ASCII.
fn name() -> impl Strategy<Value = String> {
    "[a-z0-9._\"\\\\\n\t\u{1}é名]{0,12}"
}

/// A header of up to 8 tensors whose sizes are whole bytes, with distinct names and keys.
fn header() -> impl Strategy<Value = Header> {
    let tensor = (
        name(),
        dtype(),
        prop::collection::vec(prop_oneof![0..5u64, Just(1024), Just(151_936)], 0..4),
    );
    (
        prop::collection::vec(tensor, 0..8),
        prop::collection::vec((name(), name()), 0..4),
    )
        .prop_filter_map("distinct names, whole bytes", |(tensors, metadata)| {
            let mut seen = std::collections::BTreeSet::new();
            let tensors: Vec<_> = tensors
                .into_iter()
                .enumerate()
                .map(|(i, (n, d, s))| (format!("{i}{n}"), d, s))
                .collect();
            if !metadata.iter().all(|(k, _)| seen.insert(k.clone())) {
                return None;
            }
            Header::lay_out(tensors, metadata)
        })
}

/// JSON made of the format's tokens, so random sequences reach the field checks.
fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\"w\"",
        "\"v\"",
        "\"dtype\"",
        "\"shape\"",
        "\"data_offsets\"",
        "\"__metadata__\"",
        "\"F32\"",
        "\"BF16\"",
        "\"F4\"",
        "\"F6_E3M2\"",
        "\"pt\"",
        "0",
        "1",
        "2",
        "3",
        "4",
        "8",
        "16",
        "-1",
        "1.5",
        "1e3",
        "null",
        "true",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
    ]);
    prop::collection::vec(token, 0..48).prop_map(|t| t.concat().into_bytes())
}

#[derive(Debug, Clone)]
enum Damage {
    /// Cut the file short.
    Truncate(prop::sample::Index),
    /// Overwrite one byte.
    Set(prop::sample::Index, u8),
    /// Overwrite the length with a count-like value.
    Length(u64),
    /// Overwrite bytes with a number's digits (shapes and offsets are decimal).
    Digits(prop::sample::Index, u64),
    /// Insert bytes.
    Insert(prop::sample::Index, Vec<u8>),
    /// Remove a run of bytes.
    Remove(prop::sample::Index, usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let count = prop_oneof![
        0..600u64,
        Just(u64::MAX),
        Just(100_000_000),
        Just(100_000_001),
        any::<u64>(),
    ];
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Set(i, b)),
        count.prop_map(Damage::Length),
        (any::<prop::sample::Index>(), any::<u64>()).prop_map(|(i, v)| Damage::Digits(i, v)),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, b)| Damage::Insert(i, b)),
        (any::<prop::sample::Index>(), 1..64usize).prop_map(|(i, n)| Damage::Remove(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let len = bytes.len().max(1);
    let put = |bytes: &mut Vec<u8>, at: usize, value: &[u8]| {
        for (k, b) in value.iter().enumerate() {
            if let Some(slot) = bytes.get_mut(at + k) {
                *slot = *b;
            }
        }
    };
    match damage {
        Damage::Truncate(i) => bytes.truncate(i.index(len)),
        Damage::Set(i, b) => put(bytes, i.index(len), &[*b]),
        Damage::Length(v) => put(bytes, 0, &v.to_le_bytes()),
        Damage::Digits(i, v) => put(bytes, i.index(len), v.to_string().as_bytes()),
        Damage::Insert(i, b) => {
            let at = i.index(len + 1).min(bytes.len());
            bytes.splice(at..at, b.iter().copied());
        }
        Damage::Remove(i, n) => {
            let at = i.index(len).min(bytes.len());
            let end = (at + n).min(bytes.len());
            bytes.drain(at..end);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = exercise(&bytes);
        let _ = exercise(&framed(&bytes));
    }

    #[test]
    fn token_soup_never_panics(body in token_soup()) {
        let _ = exercise(&framed(&body));
    }

    #[test]
    fn laid_out_headers_read_back_equal(header in header()) {
        let bytes = write_header(&header);
        prop_assert_eq!(parse_header(&bytes), Ok(header.clone()));
        prop_assert_eq!(exercise(&bytes), Ok(header));
    }

    #[test]
    fn damaged_headers_never_panic(
        header in header(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let mut bytes = write_header(&header);
        for d in &damages {
            apply(&mut bytes, d);
        }
        let _ = exercise(&bytes);
    }
}

/// The fuzz target's seeds (`fuzz/seeds`): each `.header` is a whole header and each `.json` the
/// JSON alone, which the target also reads framed by its own length. All are valid.
#[test]
fn the_fuzz_seeds_are_valid_headers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let bytes = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => framed(&bytes),
            _ => bytes,
        };
        assert!(exercise(&bytes).is_ok(), "{}", path.display());
        read += 1;
    }
    assert_eq!(read, 12);
}
