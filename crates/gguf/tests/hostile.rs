//! Headers built to make a careless reader allocate, loop or trust too much: absurd counts and
//! lengths fail at once with a typed error, and inputs that are the worst case for the reader's
//! loops stay fast. Each check names the rule llama.cpp's own reader (`gguf.cpp`) applies.

use vramfit_gguf::{
    parse_header, write_header, Counted, GgmlType, Header, MetaValue, ParseError, TensorInfo,
    MAX_HEADER_BYTES,
};

/// A GGUF start: magic, version, tensor count, metadata count.
fn start(version: u32, tensors: u64, entries: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&entries.to_le_bytes());
    b
}

fn string(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s);
}

fn u32s(b: &mut Vec<u8>, values: &[u32]) {
    for v in values {
        b.extend_from_slice(&v.to_le_bytes());
    }
}

fn u64s(b: &mut Vec<u8>, values: &[u64]) {
    for v in values {
        b.extend_from_slice(&v.to_le_bytes());
    }
}

/// A header with one tensor `name` of `dims` and type id `type_id` at `offset`.
fn one_tensor(name: &[u8], dims: &[u64], type_id: u32, offset: u64) -> Vec<u8> {
    let mut b = start(3, 1, 0);
    string(&mut b, name);
    u32s(&mut b, &[dims.len() as u32]);
    u64s(&mut b, dims);
    u32s(&mut b, &[type_id]);
    u64s(&mut b, &[offset]);
    b
}

/// `bytes` and then zeros, so that the counts before the damage fit and the reader gets to it.
fn padded(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.resize(bytes.len() + 64, 0);
    bytes
}

/// Parses within the time bound (`vramfit_damage::quick`): a reader quadratic in any count below
/// would take hours on the worst cases here.
fn quick(bytes: &[u8]) -> Result<Header, ParseError> {
    vramfit_damage::quick(|| parse_header(bytes))
}

#[test]
fn absurd_counts_fail_before_allocating() {
    assert_eq!(
        quick(&start(3, 1 << 60, 0)),
        Err(ParseError::CountTooLarge {
            counted: Counted::Tensors,
            count: 1 << 60
        })
    );
    assert_eq!(
        quick(&start(3, 0, u64::MAX)),
        Err(ParseError::CountTooLarge {
            counted: Counted::MetadataEntries,
            count: u64::MAX
        })
    );
    // A count that fits the bound but not the bytes given asks for the bytes.
    assert_eq!(
        quick(&start(3, 1000, 0)),
        Err(ParseError::Truncated {
            needed_at_least: 24 + 24_000
        })
    );
}

#[test]
fn absurd_lengths_fail_before_allocating() {
    let mut key = start(3, 0, 1);
    u64s(&mut key, &[u64::MAX]);
    assert!(matches!(
        quick(&padded(key)),
        Err(ParseError::HeaderTooLarge { .. })
    ));

    let mut array = start(3, 0, 1);
    string(&mut array, b"tokenizer.ggml.tokens");
    u32s(&mut array, &[9, 8]);
    u64s(&mut array, &[1 << 62]);
    let err = quick(&array).unwrap_err();
    assert!(
        matches!(&err, ParseError::CountTooLarge { counted: Counted::ArrayElements { key }, .. } if key == "tokenizer.ggml.tokens"),
        "{err}"
    );
    assert!(err.to_string().contains("tokenizer.ggml.tokens"), "{err}");

    // A string array whose strings claim more than is there.
    let mut strings = start(3, 0, 1);
    string(&mut strings, b"a");
    u32s(&mut strings, &[9, 8]);
    u64s(&mut strings, &[2, 1 << 40]);
    assert!(matches!(
        quick(&padded(strings)),
        Err(ParseError::HeaderTooLarge { .. })
    ));
}

#[test]
fn versions_and_byte_order() {
    let big_endian = {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_be_bytes());
        b
    };
    let err = quick(&big_endian).unwrap_err();
    assert_eq!(
        err,
        ParseError::BigEndian {
            version: 0x0300_0000
        }
    );
    assert!(err.to_string().contains("big-endian"), "{err}");
    for version in [0, 1, 4, 0xFFFF_FFFF] {
        assert_eq!(
            quick(&start(version, 0, 0)),
            Err(ParseError::UnsupportedVersion { version })
        );
    }
    assert!(
        quick(&start(2, 0, 0)).is_ok(),
        "version 2 has the same layout"
    );
    let not_gguf = quick(b"PK\x03\x04rest of a zip").unwrap_err();
    assert!(
        not_gguf.to_string().contains("starts with `PK\\x03\\x04`"),
        "{not_gguf}"
    );
    assert_eq!(
        quick(b"GG"),
        Err(ParseError::Truncated { needed_at_least: 4 })
    );
}

#[test]
fn malformed_metadata() {
    let entry = |key: &[u8], type_id: u32, value: &[u8]| {
        let mut b = start(3, 0, 1);
        string(&mut b, key);
        u32s(&mut b, &[type_id]);
        b.extend_from_slice(value);
        b
    };
    assert_eq!(
        quick(&entry(b"", 4, &[0; 4])),
        Err(ParseError::EmptyKey { index: 0 })
    );
    assert!(matches!(
        quick(&entry(b"\xff\xfe", 4, &[0; 4])),
        Err(ParseError::InvalidUtf8 { at: 32 })
    ));
    assert_eq!(
        quick(&entry(b"x", 13, &[0; 8])),
        Err(ParseError::UnknownValueType {
            key: "x".into(),
            type_id: 13
        })
    );
    assert_eq!(
        quick(&entry(b"x", 9, &[9, 0, 0, 0])),
        Err(ParseError::NestedArray { key: "x".into() })
    );
    assert_eq!(
        quick(&entry(b"general.alignment", 4, &3u32.to_le_bytes())),
        Err(ParseError::BadAlignment {
            found: "3 (a u32)".into()
        })
    );
    assert_eq!(
        quick(&entry(b"general.alignment", 10, &32u64.to_le_bytes())),
        Err(ParseError::BadAlignment {
            found: "32 (a u64)".into()
        })
    );
    // A string value that is not UTF-8 is kept, with replacements.
    let mut lossy = entry(b"general.name", 8, &[]);
    string(&mut lossy, b"caf\xe9");
    assert_eq!(
        quick(&lossy).unwrap().string("general.name"),
        Some("caf\u{fffd}")
    );

    let mut twice = start(3, 0, 2);
    for _ in 0..2 {
        string(&mut twice, b"k");
        u32s(&mut twice, &[4, 1]);
    }
    assert_eq!(
        quick(&twice),
        Err(ParseError::DuplicateKey { key: "k".into() })
    );
}

#[test]
fn malformed_tensors() {
    let name = b"blk.0.attn_q.weight";
    let err = quick(&one_tensor(name, &[4096, 4096], 4, 0)).unwrap_err();
    assert_eq!(
        err,
        ParseError::UnknownTensorType {
            tensor: "blk.0.attn_q.weight".into(),
            type_id: 4
        }
    );
    assert!(
        err.to_string().contains("blk.0.attn_q.weight") && err.to_string().contains("type id 4"),
        "{err}"
    );
    assert_eq!(
        quick(&one_tensor(name, &[100, 2], GgmlType::Q4_K.id(), 0)),
        Err(ParseError::RowNotWholeBlocks {
            tensor: name_str(name),
            ggml_type: GgmlType::Q4_K,
            row_length: 100
        })
    );
    assert_eq!(
        quick(&one_tensor(name, &[1; 5], 0, 0)),
        Err(ParseError::TooManyDims {
            tensor: name_str(name),
            dims: 5
        })
    );
    assert_eq!(
        quick(&one_tensor(name, &[1 << 32, 1 << 32], 0, 0)),
        Err(ParseError::TensorTooLarge {
            tensor: name_str(name)
        })
    );
    assert_eq!(
        quick(&one_tensor(name, &[0, 1 << 63], 0, 0)),
        Err(ParseError::TensorTooLarge {
            tensor: name_str(name)
        })
    );
    assert_eq!(
        quick(&one_tensor(name, &[32], 0, 64)),
        Err(ParseError::MisplacedTensor {
            tensor: name_str(name),
            offset: 64,
            expected: 0
        })
    );
    assert!(matches!(
        quick(&one_tensor(&[b'x'; 64], &[32], 0, 0)),
        Err(ParseError::TensorNameTooLong { .. })
    ));
    assert!(
        quick(&one_tensor(&[b'x'; 63], &[32], 0, 0)).is_ok(),
        "63 bytes is llama.cpp's limit"
    );
}

fn name_str(name: &[u8]) -> String {
    String::from_utf8(name.to_vec()).unwrap()
}

#[test]
fn duplicate_tensors_are_refused() {
    let tensor = |name: &str| TensorInfo {
        name: name.into(),
        dims: vec![32],
        ggml_type: GgmlType::F32,
        offset: 0,
    };
    let header = Header {
        version: 3,
        alignment: 0,
        metadata: vec![],
        tensors: vec![tensor("a"), tensor("a")],
        data_offset: 0,
    };
    assert_eq!(
        parse_header(&write_header(&header)),
        Err(ParseError::DuplicateTensor { name: "a".into() })
    );
}

/// Worst cases for the reader's loops, each several MB: they must stay linear.
#[test]
fn worst_case_inputs_stay_fast() {
    // Half a million one-byte metadata entries (llama.cpp's own duplicate check is quadratic).
    let n = 500_000u64;
    let mut many_entries = start(3, 0, n);
    for i in 0..n {
        string(&mut many_entries, format!("{i:x}").as_bytes());
        u32s(&mut many_entries, &[0]);
        many_entries.push(1);
    }
    assert_eq!(quick(&many_entries).unwrap().metadata.len() as u64, n);

    // A string array of a million empty strings, skipped without copying.
    let mut strings = start(3, 0, 1);
    string(&mut strings, b"tokenizer.ggml.merges");
    u32s(&mut strings, &[9, 8]);
    u64s(&mut strings, &[1_000_000]);
    strings.resize(strings.len() + 8_000_000, 0);
    assert_eq!(quick(&strings).unwrap().metadata.len(), 1);

    // A hundred thousand tensors.
    let t = 100_000u64;
    let mut tensors = start(3, t, 0);
    for i in 0..t {
        string(&mut tensors, format!("t{i}").as_bytes());
        u32s(&mut tensors, &[1]);
        u64s(&mut tensors, &[8]);
        u32s(&mut tensors, &[0]);
        u64s(&mut tensors, &[i * 32]);
    }
    assert_eq!(quick(&tensors).unwrap().tensors.len() as u64, t);
}

#[test]
fn nothing_past_the_bound_is_asked_for() {
    // A key just inside the bound is merely truncated; one byte more is refused.
    let mut key = start(3, 0, 1);
    let header_so_far = key.len() as u64 + 8;
    u64s(&mut key, &[MAX_HEADER_BYTES - header_so_far]);
    assert_eq!(
        quick(&padded(key)),
        Err(ParseError::Truncated {
            needed_at_least: MAX_HEADER_BYTES
        })
    );
    let mut key = start(3, 0, 1);
    u64s(&mut key, &[MAX_HEADER_BYTES - header_so_far + 1]);
    assert_eq!(
        quick(&padded(key)),
        Err(ParseError::HeaderTooLarge {
            needed_at_least: MAX_HEADER_BYTES + 1
        })
    );
}

/// llama.cpp accepts any power-of-two alignment; the reader computes where the data would start
/// without asking for or allocating the padding (the fuzz target's out-of-memory finding was the
/// writer emitting it).
#[test]
fn a_huge_alignment_is_read_not_allocated() {
    let mut b = start(3, 1, 1);
    string(&mut b, b"general.alignment");
    u32s(&mut b, &[4, 1 << 31]);
    string(&mut b, b"t");
    u32s(&mut b, &[1]);
    u64s(&mut b, &[8]);
    u32s(&mut b, &[0]);
    u64s(&mut b, &[0]);
    let header = quick(&b).unwrap();
    assert_eq!((header.alignment, header.data_offset), (1 << 31, 1 << 31));
    assert_eq!(header.expected_file_size(), Some((1 << 31) + (1 << 31)));
}

#[test]
fn bools_other_than_one_read_as_true() {
    let mut b = start(3, 0, 1);
    string(&mut b, b"flag");
    u32s(&mut b, &[7]);
    b.push(2);
    assert_eq!(quick(&b).unwrap().get("flag"), Some(&MetaValue::Bool(true)));
}
