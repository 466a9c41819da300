//! `parse_header` must never panic: it runs in a browser tab on whatever file is dropped there,
//! where a panic takes the page down. Arbitrary bytes, bytes that start like a GGUF file, and the
//! committed Llama-3.1-8B header damaged the ways files get damaged. Whatever parses must also
//! write back and read back the same.

use proptest::prelude::*;
use vramfit_damage::{apply, damage, Damage};
use vramfit_gguf::{parse_header, write_header, Header, ParseError};

const FIXTURE: &[u8] = include_bytes!("fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");

/// Reads `bytes`; on success uses every derived figure (so their arithmetic runs too) and checks
/// the header survives writing and reading back.
fn exercise(bytes: &[u8]) -> Result<Header, ParseError> {
    let header = parse_header(bytes)?;
    let _ = (
        header.tensor_bytes_total(),
        header.expected_file_size(),
        header.tensor_type_counts(),
        header.file_type(),
        header.arch_u64("block_count"),
        header.arch_per_layer_u64("attention.head_count_kv"),
        header.arch_f32("rope.freq_base"),
    );
    for tensor in &header.tensors {
        assert!(
            tensor.bytes().is_some(),
            "a parsed tensor always has a size"
        );
    }
    let written = write_header(&header);
    let reread = parse_header(&written).expect("a written header reads back");
    assert_eq!(reread.metadata, header.metadata);
    assert_eq!(reread.tensors, header.tensors);
    assert_eq!(write_header(&reread), written, "writing is stable");
    Ok(header)
}

/// What a GGUF file reads as lengths and counts (u64) and as types (u32), written over any place.
fn fields() -> impl Strategy<Value = Damage> {
    let count = prop_oneof![
        0..16u64,
        Just(u64::MAX),
        Just(1 << 60),
        Just(i64::MAX as u64),
        Just(65_536),
        Just(65_537),
        any::<u64>(),
    ];
    let type_id = prop_oneof![0..16u32, 36..44u32, Just(u32::MAX), any::<u32>()];
    let index = any::<prop::sample::Index>;
    prop_oneof![
        (index(), count).prop_map(|(i, v)| Damage::Put(i, v.to_le_bytes().to_vec())),
        (index(), type_id).prop_map(|(i, v)| Damage::Put(i, v.to_le_bytes().to_vec())),
    ]
}

/// The start of a GGUF v3 file with small counts, so random bytes after it reach the metadata
/// and tensor readers instead of failing at the magic.
fn gguf_start() -> impl Strategy<Value = Vec<u8>> {
    (0..4u64, 0..4u64, prop::collection::vec(any::<u8>(), 0..256)).prop_map(
        |(tensors, entries, rest)| {
            let mut bytes = b"GGUF".to_vec();
            bytes.extend_from_slice(&3u32.to_le_bytes());
            bytes.extend_from_slice(&tensors.to_le_bytes());
            bytes.extend_from_slice(&entries.to_le_bytes());
            bytes.extend(rest);
            bytes
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = exercise(&bytes);
    }

    #[test]
    fn gguf_like_bytes_never_panic(bytes in gguf_start()) {
        let _ = exercise(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn a_damaged_real_header_never_panics(damages in prop::collection::vec(damage(fields()), 1..4)) {
        let mut bytes = FIXTURE.to_vec();
        for d in &damages {
            apply(&mut bytes, d);
        }
        let _ = exercise(&bytes);
    }
}

#[test]
fn the_fixture_itself_exercises_cleanly() {
    let header = exercise(FIXTURE).unwrap();
    assert_eq!(header.tensors.len(), 292);
}
