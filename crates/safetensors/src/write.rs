//! Writes a [`Header`] back as safetensors bytes: the 8-byte length and the JSON header, padded
//! with spaces to a multiple of 8 bytes as the reference's `serialize` pads it (so the data that
//! follows is 8-byte aligned). Tests use it to make header-only files of any model without
//! gigabytes of weights.
//!
//! The tensors are written in the order given with their `data_offsets` as given, and
//! `__metadata__` first when it has entries; `data_start` is not read (it is where the written
//! bytes end). So for a header from [`crate::parse_header`], parsing the written bytes gives the
//! same tensors and metadata, and a `data_start` of the written length: the same header when it
//! was written here, as [`Header::lay_out`]'s are. A hand-built header that `parse_header` would
//! refuse is written as given, and is refused the same way when read back.

use crate::error::{HEADER_LENGTH_BYTES, METADATA_KEY};
use crate::header::Header;

/// The safetensors bytes of `header`: everything before the tensor data.
pub fn write_header(header: &Header) -> Vec<u8> {
    let mut json = String::from("{");
    if !header.metadata.is_empty() {
        put_str(&mut json, METADATA_KEY);
        json.push_str(":{");
        for (i, (key, value)) in header.metadata.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            put_str(&mut json, key);
            json.push(':');
            put_str(&mut json, value);
        }
        json.push('}');
    }
    for (i, tensor) in header.tensors.iter().enumerate() {
        if i > 0 || !header.metadata.is_empty() {
            json.push(',');
        }
        put_str(&mut json, &tensor.name);
        json.push_str(":{\"dtype\":");
        put_str(&mut json, tensor.dtype.name());
        json.push_str(",\"shape\":[");
        for (k, d) in tensor.shape.iter().enumerate() {
            if k > 0 {
                json.push(',');
            }
            json.push_str(&d.to_string());
        }
        let (start, end) = tensor.data_offsets;
        json.push_str(&format!("],\"data_offsets\":[{start},{end}]}}"));
    }
    json.push('}');
    while !(json.len() as u64).is_multiple_of(HEADER_LENGTH_BYTES) {
        json.push(' ');
    }
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out
}

/// `s` as a JSON string: quotes, backslashes and control characters escaped (the short forms
/// where JSON has them), everything else as is, so no string is written longer than the
/// shortest JSON that reads as it.
fn put_str(json: &mut String, s: &str) {
    json.push('"');
    for c in s.chars() {
        match c {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            '\n' => json.push_str("\\n"),
            '\r' => json.push_str("\\r"),
            '\t' => json.push_str("\\t"),
            '\u{8}' => json.push_str("\\b"),
            '\u{c}' => json.push_str("\\f"),
            c if u32::from(c) < 0x20 => json.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => json.push(c),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::header::TensorInfo;

    #[test]
    fn writes_what_the_reference_writes() {
        // The reference's own `test_serialization_fp4` bytes: `{"attn.0":{...}}` padded to 64.
        let header = Header {
            tensors: vec![TensorInfo {
                name: "attn.0".into(),
                dtype: Dtype::F4,
                shape: vec![1, 2],
                data_offsets: (0, 1),
            }],
            metadata: vec![],
            data_start: 0,
        };
        let mut expected = 64u64.to_le_bytes().to_vec();
        expected.extend_from_slice(
            b"{\"attn.0\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}    ",
        );
        assert_eq!(write_header(&header), expected);
    }

    #[test]
    fn escapes_strings() {
        let mut json = String::new();
        put_str(&mut json, "a\"b\\c\n\u{1}é");
        assert_eq!(json, "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}
