//! Writing then reading gives the same header, for generated headers of every value and tensor
//! type; and every prefix of a header reads as `Truncated` (asking for more than it has) until the
//! whole tensor list is there, never as a wrong success.

use proptest::prelude::*;
use vramfit_gguf::{
    parse_header, write_header, ArrayValues, GgmlType, Header, MetaArray, MetaValue, ParseError,
    ScalarType, TensorInfo, DEFAULT_ALIGNMENT, MAX_KEPT_ARRAY_LEN,
};

const FIXTURE: &[u8] = include_bytes!("fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");

fn scalar() -> impl Strategy<Value = MetaValue> {
    prop_oneof![
        any::<u8>().prop_map(MetaValue::U8),
        any::<i8>().prop_map(MetaValue::I8),
        any::<u16>().prop_map(MetaValue::U16),
        any::<i16>().prop_map(MetaValue::I16),
        any::<u32>().prop_map(MetaValue::U32),
        any::<i32>().prop_map(MetaValue::I32),
        any::<f32>().prop_map(MetaValue::F32),
        any::<bool>().prop_map(MetaValue::Bool),
        any::<String>().prop_map(MetaValue::String),
        any::<u64>().prop_map(MetaValue::U64),
        any::<i64>().prop_map(MetaValue::I64),
        any::<f64>().prop_map(MetaValue::F64),
    ]
}

fn kept_array() -> impl Strategy<Value = ArrayValues> {
    use prop::collection::vec;
    prop_oneof![
        vec(any::<u8>(), 0..20).prop_map(ArrayValues::U8),
        vec(any::<i8>(), 0..20).prop_map(ArrayValues::I8),
        vec(any::<u16>(), 0..20).prop_map(ArrayValues::U16),
        vec(any::<i16>(), 0..20).prop_map(ArrayValues::I16),
        vec(any::<u32>(), 0..20).prop_map(ArrayValues::U32),
        vec(any::<i32>(), 0..20).prop_map(ArrayValues::I32),
        vec(any::<f32>(), 0..20).prop_map(ArrayValues::F32),
        vec(any::<bool>(), 0..20).prop_map(ArrayValues::Bool),
        vec(any::<u64>(), 0..20).prop_map(ArrayValues::U64),
        vec(any::<i64>(), 0..20).prop_map(ArrayValues::I64),
        vec(any::<f64>(), 0..20).prop_map(ArrayValues::F64),
    ]
}

/// Any value; with `big`, also numeric arrays just past the size kept (65 KB and more).
fn value(big: bool) -> BoxedStrategy<MetaValue> {
    let small = prop_oneof![
        4 => scalar(),
        2 => kept_array().prop_map(|a| MetaValue::Array(MetaArray::Values(a))),
        // String arrays, whose text is summarised as a byte count.
        1 => (0..40u64, 0..200u64).prop_map(|(len, text)| MetaValue::Array(MetaArray::Summary {
            element_type: ScalarType::String,
            len,
            bytes: len * 8 + if len == 0 { 0 } else { text },
        })),
    ];
    if !big {
        return small.boxed();
    }
    let past_the_cap =
        prop::sample::select(vec![ScalarType::U8, ScalarType::Bool, ScalarType::I32])
            .prop_map(|t| MetaValue::Array(MetaArray::summary(t, MAX_KEPT_ARRAY_LEN + 1)));
    prop_oneof![7 => small, 1 => past_the_cap].boxed()
}

/// A tensor of a random type with whole-block rows and a few dimensions.
fn tensor() -> impl Strategy<Value = (GgmlType, Vec<u64>)> {
    (
        prop::sample::select(GgmlType::ALL.to_vec()),
        1..4u64,
        prop::collection::vec(1..5u64, 0..4),
    )
        .prop_map(|(t, row_blocks, rest)| {
            let mut dims = vec![row_blocks * t.block_elements()];
            dims.extend(rest);
            (t, dims)
        })
}

fn header(big: bool) -> impl Strategy<Value = Header> {
    let alignment = prop::option::of(prop::sample::select(vec![1u32, 8, 32, 64, 4096]));
    (
        2..=3u32,
        alignment,
        prop::collection::vec(value(big), 0..8),
        prop::collection::vec(tensor(), 0..6),
    )
        .prop_map(|(version, alignment, values, tensors)| {
            let mut metadata: Vec<(String, MetaValue)> = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("test.key{i}"), v))
                .collect();
            if let Some(a) = alignment {
                metadata.push(("general.alignment".into(), MetaValue::U32(a)));
            }
            let tensors = tensors
                .into_iter()
                .enumerate()
                .map(|(i, (ggml_type, dims))| TensorInfo {
                    name: format!("blk.{i}.weight"),
                    dims,
                    ggml_type,
                    offset: 0,
                })
                .collect();
            Header {
                version,
                alignment: 0,
                metadata,
                tensors,
                data_offset: 0,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn write_then_parse_gives_the_same_header(h in header(true)) {
        let bytes = write_header(&h);
        let parsed = parse_header(&bytes).unwrap();
        prop_assert_eq!(parsed.version, h.version);
        prop_assert_eq!(&parsed.metadata, &h.metadata);
        let shapes = |h: &Header| h.tensors.iter().map(|t| (t.name.clone(), t.dims.clone(), t.ggml_type)).collect::<Vec<_>>();
        prop_assert_eq!(shapes(&parsed), shapes(&h));
        let alignment = h.get("general.alignment").and_then(MetaValue::as_u64).unwrap_or(DEFAULT_ALIGNMENT);
        prop_assert_eq!(parsed.alignment, alignment);
        prop_assert_eq!(parsed.data_offset, bytes.len() as u64);
        prop_assert_eq!(bytes.len() as u64 % alignment, 0);
        for t in &parsed.tensors {
            prop_assert_eq!(t.offset % alignment, 0);
        }
        // With the derived fields filled in, the round trip is exact.
        prop_assert_eq!(write_header(&parsed), bytes.clone());
        prop_assert_eq!(parse_header(&bytes), Ok(parsed));
    }
}

proptest! {
    // Fewer and smaller headers, since each case reads every prefix.
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn every_prefix_of_a_generated_header_is_truncated(h in header(false)) {
        check_prefixes(&write_header(&h));
    }
}

/// Every prefix shorter than the tensor list's end is `Truncated`, asking for more bytes than it
/// has and no more than the header; every longer one reads as the whole header.
fn check_prefixes(bytes: &[u8]) {
    let whole = parse_header(bytes).unwrap();
    let mut first_success = None;
    for len in 0..=bytes.len() {
        match parse_header(&bytes[..len]) {
            Err(ParseError::Truncated { needed_at_least }) => {
                assert!(
                    first_success.is_none(),
                    "prefix {len} is truncated after a longer one parsed"
                );
                assert!(
                    needed_at_least > len as u64,
                    "prefix {len} asks for {needed_at_least}"
                );
                assert!(
                    needed_at_least <= whole.data_offset,
                    "prefix {len} asks for {needed_at_least}"
                );
            }
            Ok(h) => {
                assert_eq!(h, whole, "prefix {len}");
                first_success.get_or_insert(len);
            }
            Err(e) => panic!("prefix {len}: {e}"),
        }
    }
    // Only the padding after the tensor list may be missing.
    let first = first_success.unwrap() as u64;
    assert!(
        first + whole.alignment > whole.data_offset,
        "{first} vs {}",
        whole.data_offset
    );
}

#[test]
fn every_prefix_of_the_llama_header_is_truncated() {
    check_prefixes(FIXTURE);
}

#[test]
fn reading_more_when_asked_always_gets_there() {
    // How a page reads a file: a first slice, then what `Truncated` asks for.
    let mut len = 1;
    let mut reads = 0;
    let header = loop {
        reads += 1;
        match parse_header(&FIXTURE[..len]) {
            Ok(h) => break h,
            Err(ParseError::Truncated { needed_at_least }) => len = needed_at_least as usize,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(header.tensors.len(), 292);
    assert!(reads > 2 && reads < 2000, "{reads} reads");
}
