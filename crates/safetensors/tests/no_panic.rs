//! `parse_header` must never panic: it will run in a browser tab on whatever file is dropped
//! there, where a panic takes the page down. Arbitrary bytes, bytes framed as a header of their
//! own length, JSON made of the format's own tokens, and valid headers damaged the ways files get
//! damaged. Whatever parses must also write back and read back the same; any header
//! `Header::lay_out` builds must read back equal.

use proptest::prelude::*;
mod common;

use common::exercise;
use vramfit_damage::{apply, damage, Damage};
use vramfit_safetensors::{parse_header, write_header, Dtype, Header};

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

/// What a safetensors file reads as its header's length (the first 8 bytes) and, in the JSON,
/// as shapes and offsets (decimal numbers).
fn fields() -> impl Strategy<Value = Damage> {
    let count = prop_oneof![
        0..600u64,
        Just(u64::MAX),
        Just(100_000_000),
        Just(100_000_001),
        any::<u64>(),
    ];
    prop_oneof![
        count.prop_map(|v| Damage::PutAtStart(v.to_le_bytes().to_vec())),
        (any::<prop::sample::Index>(), any::<u64>())
            .prop_map(|(i, v)| Damage::Put(i, v.to_string().into_bytes())),
    ]
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
        damages in prop::collection::vec(damage(fields()), 1..4),
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
