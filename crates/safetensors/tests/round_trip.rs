//! Headers written by `write_header` read back as the same header, and headers written by other
//! writers (the reference's own bytes, whitespace, any key order) read as the reference reads
//! them.

use vramfit_safetensors::{parse_header, write_header, Dtype, Header, TensorInfo};

fn tensor(name: &str, dtype: Dtype, shape: &[u64]) -> (String, Dtype, Vec<u64>) {
    (name.to_string(), dtype, shape.to_vec())
}

/// `8-byte length ++ json`, the way any writer frames a header.
fn framed(json: &str) -> Vec<u8> {
    let mut b = (json.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(json.as_bytes());
    b
}

#[test]
fn every_dtype_round_trips() {
    let tensors = Dtype::ALL
        .iter()
        .enumerate()
        .map(|(i, &d)| tensor(&format!("t{i}.{d}"), d, &[4, 3]));
    let header = Header::lay_out(tensors, vec![("format".into(), "pt".into())]).unwrap();
    let bytes = write_header(&header);
    assert_eq!(bytes.len() as u64, header.data_start);
    let read = parse_header(&bytes).unwrap();
    assert_eq!(read, header);
    for (t, d) in read.tensors.iter().zip(Dtype::ALL) {
        assert_eq!(t.dtype, d);
        assert_eq!(t.bytes(), 12 * d.bits() / 8, "{d}");
        assert_eq!(t.expected_bytes(), Some(t.bytes()));
    }
    assert_eq!(
        read.tensor_bytes(),
        Dtype::ALL.iter().map(|d| 12 * d.bits() / 8).sum::<u64>()
    );
}

#[test]
fn empty_scalar_zero_sized_and_escaped_names_round_trip() {
    let empty = Header::lay_out([], vec![]).unwrap();
    assert_eq!(write_header(&empty), framed("{}      "));
    assert_eq!(parse_header(&write_header(&empty)), Ok(empty.clone()));
    assert_eq!(empty.file_len(), 16);

    let header = Header::lay_out(
        [
            tensor("scalar", Dtype::F32, &[]),
            tensor("empty", Dtype::I32, &[2, 0]),
            tensor("also empty", Dtype::F16, &[0]),
            tensor("quote\" back\\slash\nnew\u{1}line é 名", Dtype::U8, &[3]),
        ],
        vec![
            ("format".into(), "pt".into()),
            ("note".into(), "\"quoted\"\t\u{7f}".into()),
        ],
    )
    .unwrap();
    assert_eq!(parse_header(&write_header(&header)), Ok(header.clone()));
    let offsets: Vec<_> = header.tensors.iter().map(|t| t.data_offsets).collect();
    assert_eq!(offsets, [(0, 4), (4, 4), (4, 4), (4, 7)]);
}

/// The reference's test bytes (`test_deserialization`'s doc example and `test_zero_sized_tensor`
/// in `safetensors/src/tensor.rs` @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9`).
#[test]
fn reads_the_references_bytes() {
    let mut bytes = b"<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}".to_vec();
    bytes.extend_from_slice(&[0; 16]);
    let header = parse_header(&bytes).unwrap();
    assert_eq!(
        header.tensors,
        [TensorInfo {
            name: "test".into(),
            dtype: Dtype::I32,
            shape: vec![2, 2],
            data_offsets: (0, 16),
        }]
    );
    assert_eq!((header.data_start, header.file_len()), (68, 84));
    assert_eq!(header.check_file_len(bytes.len() as u64), Ok(()));

    let zero = parse_header(b"<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}").unwrap();
    assert_eq!(zero.tensors[0].shape, [2, 0]);
    assert_eq!(zero.tensor_bytes(), 0);
}

#[test]
fn any_key_order_whitespace_and_unknown_fields_read_as_the_reference_reads_them() {
    // Out of offset order, fields in another order, an unknown field, metadata last, padding
    // before and after (the reference tests both: `test_whitespace_*padded_header`).
    let json = " \t\n{ \"b\" : {\"data_offsets\":[8,12],\"shape\":[2],\"dtype\":\"BF16\",\"extra\":{\"x\":[1,{}]}},\r\n\
                \"a\":{\"shape\":[2],\"dtype\":\"F32\",\"data_offsets\":[0,8]},\
                \"__metadata__\":{\"format\":\"pt\"}}   \n";
    let header = parse_header(&framed(json)).unwrap();
    let names: Vec<_> = header.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "sorted by offsets");
    assert_eq!(header.metadata_value("format"), Some("pt"));
    // Written back it is the same header, apart from where the data starts.
    let written = write_header(&header);
    let again = parse_header(&written).unwrap();
    assert_eq!(
        (again.tensors, again.metadata),
        (header.tensors, header.metadata)
    );
    assert_eq!(again.data_start, written.len() as u64);

    // `__metadata__: null` is no metadata, as the reference's `Option` reads it.
    let null = parse_header(&framed("{\"__metadata__\":null}")).unwrap();
    assert!(null.metadata.is_empty());
}

#[test]
fn a_prefix_longer_than_the_header_reads_the_same() {
    let header = Header::lay_out([tensor("w", Dtype::F16, &[8, 8])], vec![]).unwrap();
    let mut bytes = write_header(&header);
    bytes.extend_from_slice(&[0xAB; 128]);
    assert_eq!(parse_header(&bytes), Ok(header.clone()));
    assert_eq!(header.check_file_len(bytes.len() as u64), Ok(()));
}
