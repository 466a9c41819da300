//! Every way the reader refuses a header, each with its typed error and a message that names the
//! tensor; truncation at every length; and headers built to make a careless reader allocate,
//! recurse or loop. Each check names the reference's own (`SafeTensorError` in
//! huggingface/safetensors `safetensors/src/tensor.rs`
//! @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9`), whose tests several of these inputs copy.

use vramfit_safetensors::{
    parse_header, write_header, Dtype, Header, ParseError, MAX_HEADER_BYTES,
};

/// `8-byte length ++ json`.
fn framed(json: &str) -> Vec<u8> {
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json.as_bytes());
    b
}

/// Parses within the time bound (`vramfit_damage::quick`): a reader quadratic in any count below
/// would take hours on the worst cases here.
fn quick(bytes: &[u8]) -> Result<Header, ParseError> {
    vramfit_damage::quick(|| parse_header(bytes))
}

/// Reads `json` as a header and expects `error`, whose message must name `names` (the tensor or
/// key at fault).
fn refused(json: &str, error: ParseError, names: &[&str]) {
    let got = quick(&framed(json));
    assert_eq!(got, Err(error), "{json}");
    let text = got.unwrap_err().to_string();
    for name in names {
        assert!(text.contains(name), "{text:?} should name {name:?}");
    }
}

/// One tensor entry `w` whose fields are `fields` (raw JSON).
fn one(fields: &str) -> String {
    format!("{{\"w\":{{{fields}}}}}")
}

fn bad_field(field: &'static str, found: &str) -> ParseError {
    ParseError::BadField {
        tensor: "w".into(),
        field,
        found: found.into(),
    }
}

fn qwen_like() -> Header {
    let mut tensors = vec![(
        "model.embed_tokens.weight".to_string(),
        Dtype::BF16,
        vec![64, 16],
    )];
    for i in 0..3 {
        for (part, shape) in [("q_proj", vec![32, 16]), ("q_norm", vec![8])] {
            tensors.push((
                format!("model.layers.{i}.self_attn.{part}.weight"),
                Dtype::BF16,
                shape,
            ));
        }
    }
    Header::lay_out(tensors, vec![("format".into(), "pt".into())]).unwrap()
}

#[test]
fn every_prefix_is_truncated_with_the_exact_length_and_never_a_wrong_ok() {
    let header = qwen_like();
    let mut file = write_header(&header);
    let data_start = file.len();
    file.resize(data_start + 64, 0x5A);
    for len in 0..file.len() {
        let got = quick(&file[..len]);
        if len < 8 {
            assert_eq!(got, Err(ParseError::Truncated { needed: 8 }), "{len}");
        } else if len < data_start {
            assert_eq!(
                got,
                Err(ParseError::Truncated {
                    needed: data_start as u64
                }),
                "{len}"
            );
        } else {
            assert_eq!(got.as_ref(), Ok(&header), "{len}");
        }
    }
    // The reference's `test_header_too_small` and `test_invalid_header_length`: no bytes, and a
    // length with no header after it.
    assert_eq!(quick(b""), Err(ParseError::Truncated { needed: 8 }));
    assert_eq!(
        quick(b"<\x00\x00\x00\x00\x00\x00\x00"),
        Err(ParseError::Truncated { needed: 68 })
    );
}

#[test]
fn a_length_over_the_limit_is_refused_from_eight_bytes() {
    // `HeaderTooLarge`, from the reference's `test_header_too_large`.
    let declared = u64::from_le_bytes(*b"<\x00\x00\x00\x00\xff\xff\xff");
    assert_eq!(
        quick(b"<\x00\x00\x00\x00\xff\xff\xff{\"test\":{}}"),
        Err(ParseError::HeaderTooLarge { declared })
    );
    for declared in [MAX_HEADER_BYTES + 1, u64::MAX] {
        let err = quick(&declared.to_le_bytes()).unwrap_err();
        assert_eq!(err, ParseError::HeaderTooLarge { declared });
        assert!(err.to_string().contains("100000000"), "{err}");
    }
    // At the limit it is merely truncated: the caller is told to read 100,000,008 bytes, and
    // nothing is allocated for them.
    assert_eq!(
        quick(&MAX_HEADER_BYTES.to_le_bytes()),
        Err(ParseError::Truncated {
            needed: MAX_HEADER_BYTES + 8
        })
    );
}

#[test]
fn not_utf8_not_json_not_an_object() {
    // `InvalidHeader`, from `test_invalid_header_non_utf8`; `at` is the file offset.
    assert_eq!(
        quick(b"\x01\x00\x00\x00\x00\x00\x00\x00\xff"),
        Err(ParseError::InvalidUtf8 { at: 8 })
    );
    assert_eq!(
        quick(&framed("{\"caf\u{e9}\":1}")[..]).map(|_| ()),
        Err(ParseError::NotATensor {
            tensor: "caf\u{e9}".into(),
            found: "the number 1".into()
        })
    );
    let mut split = framed("{\"\u{e9}\"}");
    split[11] = b'{';
    assert_eq!(quick(&split), Err(ParseError::InvalidUtf8 { at: 10 }));

    // `InvalidHeaderDeserialization`, from `test_invalid_header_not_json`, and others.
    for json in [
        "{",
        "",
        "{\"w\":}",
        "{} x",
        "{\"a\",}",
        "{'a':1}",
        "{\"w\":{\"shape\":[1,]}}",
    ] {
        let got = quick(&framed(json));
        assert!(
            matches!(&got, Err(ParseError::InvalidJson { message }) if message.contains("line 1")),
            "{json}: {got:?}"
        );
    }
    // A header length shorter than its JSON cuts the JSON.
    let mut short = framed("{\"__metadata__\":{\"a\":\"b\"}}");
    short[0] -= 3;
    assert!(matches!(quick(&short), Err(ParseError::InvalidJson { .. })));

    for (json, found) in [
        ("[]", "an array"),
        ("1", "the number 1"),
        ("\"{}\"", "a string"),
        ("null", "null"),
        ("true", "true"),
    ] {
        refused(
            json,
            ParseError::NotAnObject {
                found: found.into(),
            },
            &[found],
        );
    }
}

#[test]
fn duplicate_keys_are_refused() {
    let t = "{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}";
    refused(
        &format!("{{\"w\":{t},\"v\":{t},\"w\":{t}}}"),
        ParseError::DuplicateKey { key: "w".into() },
        &["`w`"],
    );
    refused(
        "{\"__metadata__\":null,\"__metadata__\":{}}",
        ParseError::DuplicateKey {
            key: "__metadata__".into(),
        },
        &["__metadata__"],
    );
    refused(
        "{\"__metadata__\":{\"format\":\"pt\",\"format\":\"np\"}}",
        ParseError::DuplicateKey {
            key: "format".into(),
        },
        &["format"],
    );
}

#[test]
fn metadata_must_be_strings() {
    for (value, found) in [
        ("[]", "an array"),
        ("\"pt\"", "a string"),
        ("7", "the number 7"),
    ] {
        refused(
            &format!("{{\"__metadata__\":{value}}}"),
            ParseError::MetadataNotStrings {
                key: None,
                found: found.into(),
            },
            &["__metadata__", found],
        );
    }
    for (value, found) in [
        ("1", "the number 1"),
        ("null", "null"),
        ("{\"a\":[]}", "an object"),
        ("false", "false"),
    ] {
        refused(
            &format!("{{\"__metadata__\":{{\"format\":\"pt\",\"step\":{value}}}}}"),
            ParseError::MetadataNotStrings {
                key: Some("step".into()),
                found: found.into(),
            },
            &["`step`", found],
        );
    }
}

#[test]
fn tensor_entries_must_have_their_three_fields() {
    for (value, found) in [
        ("[1,2]", "an array"),
        ("\"F16\"", "a string"),
        ("null", "null"),
    ] {
        refused(
            &format!("{{\"w\":{value}}}"),
            ParseError::NotATensor {
                tensor: "w".into(),
                found: found.into(),
            },
            &["`w`"],
        );
    }
    let missing = |field| ParseError::MissingField {
        tensor: "w".into(),
        field,
    };
    refused(
        &one("\"shape\":[1],\"data_offsets\":[0,1]"),
        missing("dtype"),
        &["`w`", "dtype"],
    );
    refused(
        &one("\"dtype\":\"U8\",\"data_offsets\":[0,1]"),
        missing("shape"),
        &["shape"],
    );
    refused(
        &one("\"dtype\":\"U8\",\"shape\":[1]"),
        missing("data_offsets"),
        &["data_offsets"],
    );
    refused(
        &one("\"Dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]"),
        missing("dtype"),
        &[],
    );
    let twice = |field| ParseError::DuplicateField {
        tensor: "w".into(),
        field,
    };
    refused(
        &one("\"dtype\":\"U8\",\"dtype\":\"U8\""),
        twice("dtype"),
        &["`w`", "dtype"],
    );
    refused(
        &one("\"shape\":[],\"shape\":[]"),
        twice("shape"),
        &["shape"],
    );
    refused(
        &one("\"data_offsets\":[0,0],\"data_offsets\":[0,0]"),
        twice("data_offsets"),
        &[],
    );
}

#[test]
fn fields_of_the_wrong_kind_are_refused() {
    for (fields, error) in [
        ("\"dtype\":16", bad_field("dtype", "the number 16")),
        ("\"dtype\":[\"F16\"]", bad_field("dtype", "an array")),
        ("\"shape\":\"[1]\"", bad_field("shape", "a string")),
        ("\"shape\":{}", bad_field("shape", "an object")),
        (
            "\"shape\":[1,-1]",
            bad_field("shape", "an array holding the negative number -1"),
        ),
        (
            "\"shape\":[1,[2],3]",
            bad_field("shape", "an array holding an array"),
        ),
        (
            "\"shape\":[1.0]",
            bad_field(
                "shape",
                "an array holding a number with a fraction or an exponent, or past 2^64 - 1",
            ),
        ),
        (
            "\"shape\":[18446744073709551616]",
            bad_field(
                "shape",
                "an array holding a number with a fraction or an exponent, or past 2^64 - 1",
            ),
        ),
        (
            "\"data_offsets\":[0]",
            bad_field("data_offsets", "an array of 1 numbers"),
        ),
        (
            "\"data_offsets\":[0,1,2]",
            bad_field("data_offsets", "an array of 3 numbers"),
        ),
        (
            "\"data_offsets\":[]",
            bad_field("data_offsets", "an array of 0 numbers"),
        ),
        (
            "\"data_offsets\":[0,\"8\"]",
            bad_field("data_offsets", "an array holding a string"),
        ),
        (
            "\"data_offsets\":{\"0\":8}",
            bad_field("data_offsets", "an object"),
        ),
        (
            "\"data_offsets\":[0,null]",
            bad_field("data_offsets", "an array holding null"),
        ),
    ] {
        refused(&one(fields), error, &["`w`"]);
    }
}

#[test]
fn unknown_dtypes_are_named() {
    for dtype in ["bf16", "F8_E4M3FN", "Q4_K", "", "F32 "] {
        refused(
            &one(&format!(
                "\"dtype\":\"{dtype}\",\"shape\":[1],\"data_offsets\":[0,4]"
            )),
            ParseError::UnknownDtype {
                tensor: "w".into(),
                dtype: dtype.into(),
            },
            &["`w`", &format!("\"{dtype}\"")],
        );
    }
}

/// `InvalidOffset`: the tensors, in offset order, cover the data from 0 with no gap or overlap.
#[test]
fn offsets_must_be_contiguous_from_zero() {
    let t = |name: &str, start: u64, end: u64| {
        format!(
            "\"{name}\":{{\"dtype\":\"U8\",\"shape\":[{}],\"data_offsets\":[{start},{end}]}}",
            end.saturating_sub(start)
        )
    };
    let misplaced = |tensor: &str, data_offsets, expected_start| ParseError::MisplacedTensor {
        tensor: tensor.into(),
        data_offsets,
        expected_start,
    };
    refused(
        &format!("{{{}}}", t("a", 4, 8)),
        misplaced("a", (4, 8), 0),
        &["`a`", "at 4"],
    );
    refused(
        &format!("{{{},{}}}", t("a", 0, 4), t("b", 6, 8)),
        misplaced("b", (6, 8), 4),
        &["`b`"],
    );
    refused(
        &format!("{{{},{}}}", t("a", 0, 4), t("b", 2, 8)),
        misplaced("b", (2, 8), 4),
        &["`b`"],
    );
    refused(
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},\
         \"r\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}",
        misplaced("r", (4, 0), 0),
        &["`r`", "end before they start"],
    );
    // The reference's `test_json_attack`: ten tensors over the same 16 bytes.
    let same: Vec<String> = (0..10)
        .map(|i| {
            format!("\"weight_{i}\":{{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}")
        })
        .collect();
    let got = quick(&framed(&format!("{{{}}}", same.join(","))));
    assert!(
        matches!(&got, Err(ParseError::MisplacedTensor { tensor, data_offsets: (0, 16), expected_start: 16 }) if tensor == "weight_1"),
        "{got:?}"
    );
    // Listed out of order is fine: the order is the offsets'.
    let reordered = quick(&framed(&format!("{{{},{}}}", t("b", 4, 8), t("a", 0, 4)))).unwrap();
    assert_eq!(reordered.tensors[0].name, "a");
}

#[test]
fn sizes_must_match_shape_and_dtype() {
    // `TensorInvalidInfo`, from `test_invalid_info`.
    refused(
        "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0, 4]}}",
        ParseError::SizeMismatch {
            tensor: "test".into(),
            dtype: Dtype::I32,
            shape: vec![2, 2],
            span: 4,
            expected: 16,
        },
        &["`test`", "16 bytes", "span 4"],
    );
    // `MisalignedSlice`: sub-byte dtypes must fill whole bytes.
    refused(
        &one("\"dtype\":\"F4\",\"shape\":[1,3],\"data_offsets\":[0,2]"),
        ParseError::NotWholeBytes {
            tensor: "w".into(),
            dtype: Dtype::F4,
            elements: 3,
        },
        &["`w`", "4 bits"],
    );
    refused(
        &one("\"dtype\":\"F6_E2M3\",\"shape\":[2],\"data_offsets\":[0,2]"),
        ParseError::NotWholeBytes {
            tensor: "w".into(),
            dtype: Dtype::F6_E2M3,
            elements: 2,
        },
        &["6 bits"],
    );
    let f6 = quick(&framed(&one(
        "\"dtype\":\"F6_E3M2\",\"shape\":[2,2],\"data_offsets\":[0,3]",
    )))
    .unwrap();
    assert_eq!(f6.tensor_bytes(), 3);
}

/// `ValidationOverflow`, from `test_validation_overflow`, and an end past 2^64 that only the sum
/// of eight tensors reaches.
#[test]
fn counts_that_overflow_are_refused() {
    let too_large = |tensor: &str| ParseError::TooLarge {
        tensor: tensor.into(),
    };
    refused(
        "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,18446744073709551614],\"data_offsets\":[0,16]}}",
        too_large("test"),
        &["`test`", "64 bits"],
    );
    refused(
        "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,9223372036854775807],\"data_offsets\":[0,16]}}",
        too_large("test"),
        &["`test`"],
    );
    let most = (1u64 << 61) - 1; // the most U8 elements whose bit count fits in 64 bits
    let entries: Vec<String> = (0..8u64)
        .map(|i| {
            format!(
                "\"t{i}\":{{\"dtype\":\"U8\",\"shape\":[{most}],\"data_offsets\":[{},{}]}}",
                i * most,
                (i + 1) * most
            )
        })
        .collect();
    refused(
        &format!("{{{}}}", entries.join(",")),
        too_large("t7"),
        &["`t7`"],
    );
    // Seven of them fit: the file would be 2^64 - 7 - … bytes, still a u64.
    let seven = quick(&framed(&format!("{{{}}}", entries[..7].join(",")))).unwrap();
    assert_eq!(seven.tensor_bytes(), 7 * most);
    assert_eq!(seven.file_len(), seven.data_start + 7 * most);
}

/// `MetadataIncompleteBuffer`, from `test_metadata_incomplete_buffer`: the reader of a prefix
/// leaves it to the caller, who knows the file's length.
#[test]
fn the_file_must_be_exactly_header_and_data() {
    let mut file = b"<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}".to_vec();
    file.extend_from_slice(&[0; 16]);
    let header = quick(&file).unwrap();
    assert_eq!(header.check_file_len(84), Ok(()));
    let polyglot = header.check_file_len(84 + 34).unwrap_err();
    assert_eq!(
        polyglot,
        ParseError::FileLength {
            expected: 84,
            actual: 118
        }
    );
    assert!(
        polyglot.to_string().contains("no tensor covers"),
        "{polyglot}"
    );
    let short = header.check_file_len(82).unwrap_err();
    assert!(short.to_string().contains("incomplete"), "{short}");
}

/// Worst cases for the reader, each several MB: they must stay linear, and deep nesting must be
/// an error rather than a stack overflow.
#[test]
fn worst_case_inputs_stay_fast_and_shallow() {
    // A hundred thousand tensors, listed in reverse offset order.
    let n = 100_000u64;
    let entries: Vec<String> = (0..n)
        .rev()
        .map(|i| {
            format!(
                "\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[{},{}]}}",
                i * 8,
                i * 8 + 8
            )
        })
        .collect();
    let many = quick(&framed(&format!("{{{}}}", entries.join(",")))).unwrap();
    assert_eq!(many.tensors.len() as u64, n);
    assert_eq!(many.tensors[0].name, "t0");
    assert_eq!(many.tensor_bytes(), 8 * n);

    // A shape of a million ones.
    let ones = vec!["1"; 1_000_000].join(",");
    let long = quick(&framed(&one(&format!(
        "\"dtype\":\"U8\",\"shape\":[{ones}],\"data_offsets\":[0,1]"
    ))))
    .unwrap();
    assert_eq!(long.tensors[0].shape.len(), 1_000_000);

    // Nesting a hundred thousand deep, wherever the reader takes values it does not keep: it
    // skips them without recursing (serde_json's `IgnoredAny`), so each is its typed error, not a
    // stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let fields =
        |tensor_fields: &str| one(&format!("{tensor_fields},\"dtype\":\"U8\",\"shape\":[0]"));
    for (json, error) in [
        (
            fields(&format!("\"extra\":{deep},\"data_offsets\":[0,0]")),
            None,
        ),
        (
            format!("{{\"__metadata__\":{{\"a\":{deep}}}}}"),
            Some(ParseError::MetadataNotStrings {
                key: Some("a".into()),
                found: "an array".into(),
            }),
        ),
        (
            deep.clone(),
            Some(ParseError::NotAnObject {
                found: "an array".into(),
            }),
        ),
        (
            fields(&format!("\"data_offsets\":[0,{deep}]")),
            Some(bad_field("data_offsets", "an array holding an array")),
        ),
    ] {
        match (quick(&framed(&json)), error) {
            (Ok(header), None) => assert_eq!(header.tensors.len(), 1),
            (got, Some(error)) => assert_eq!(got, Err(error)),
            (got, None) => panic!("{got:?}"),
        }
    }
}
