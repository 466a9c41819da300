//! `parse_header` must never panic: it runs in a browser tab on whatever file is dropped there,
//! where a panic takes the page down. Arbitrary bytes, bytes that start like a GGUF file, and the
//! committed Llama-3.1-8B header damaged the ways files get damaged. Whatever parses must also
//! write back and read back the same.

use proptest::prelude::*;
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

#[derive(Debug, Clone)]
enum Damage {
    /// Cut the file short.
    Truncate(prop::sample::Index),
    /// Overwrite one byte.
    Set(prop::sample::Index, u8),
    /// Overwrite 8 bytes with a count-like value (lengths and counts are u64s).
    SetU64(prop::sample::Index, u64),
    /// Overwrite 4 bytes with a type-like value.
    SetU32(prop::sample::Index, u32),
    /// Insert bytes.
    Insert(prop::sample::Index, Vec<u8>),
    /// Remove a run of bytes.
    Remove(prop::sample::Index, usize),
}

fn damage() -> impl Strategy<Value = Damage> {
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
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Set(i, b)),
        (any::<prop::sample::Index>(), count).prop_map(|(i, v)| Damage::SetU64(i, v)),
        (any::<prop::sample::Index>(), type_id).prop_map(|(i, v)| Damage::SetU32(i, v)),
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
        Damage::SetU64(i, v) => put(bytes, i.index(len), &v.to_le_bytes()),
        Damage::SetU32(i, v) => put(bytes, i.index(len), &v.to_le_bytes()),
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
    fn a_damaged_real_header_never_panics(damages in prop::collection::vec(damage(), 1..4)) {
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
