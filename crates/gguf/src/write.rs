//! Writes a [`Header`] back as GGUF bytes: the header alone, padded to the alignment, with each
//! tensor's offset placed where a writer would put its data. Tests here and the engine's and
//! page's end-to-end tests use it to make header-only `.gguf` files of any model without
//! gigabytes of weights.
//!
//! For a header from [`crate::parse_header`], `parse_header(&write_header(&h)) == Ok(h)`, except
//! where a string value was not UTF-8: it was read with U+FFFD replacements and is written as
//! read. Arrays the reader kept only as a summary are written as stand-ins of the same length
//! and byte size (zeros; empty strings and one of NUL text), so they read back as the same
//! summary and the header keeps its size. The derived fields (`alignment`, `data_offset`, tensor
//! `offset`s) are recomputed, so a hand-built header may leave them 0. A hand-built header that
//! `parse_header` would refuse (a duplicate key, too many dimensions) is written as given, and is
//! refused the same way when read back.

use crate::header::{pad_to, Header, DEFAULT_ALIGNMENT};
use crate::metadata::{
    ArrayValues, MetaArray, MetaValue, ScalarType, ARRAY_TYPE_ID, STRING_LENGTH_BYTES,
};
use crate::parse::{alignment_of, MAGIC};

/// The GGUF bytes of `header`: everything before the tensor data.
pub fn write_header(header: &Header) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, header.version);
    put_u64(&mut out, header.tensors.len() as u64);
    put_u64(&mut out, header.metadata.len() as u64);
    for (key, value) in &header.metadata {
        put_str(&mut out, key);
        put_value(&mut out, value);
    }
    // An invalid alignment makes the file unreadable anyway; 32 keeps the layout defined.
    let alignment = alignment_of(&header.metadata).unwrap_or(DEFAULT_ALIGNMENT);
    let mut offset = 0u64;
    for tensor in &header.tensors {
        put_str(&mut out, &tensor.name);
        put_u32(&mut out, tensor.dims.len() as u32);
        for &d in &tensor.dims {
            put_u64(&mut out, d);
        }
        put_u32(&mut out, tensor.ggml_type.id());
        put_u64(&mut out, offset);
        // A tensor with no valid size is refused on reading; its successors' offsets no longer
        // matter then.
        let padded = tensor
            .bytes()
            .and_then(|b| pad_to(b, alignment))
            .unwrap_or(0);
        offset = offset.saturating_add(padded);
    }
    let end = pad_to(out.len() as u64, alignment).unwrap_or(out.len() as u64);
    out.resize(usize::try_from(end).unwrap_or(out.len()), 0);
    out
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &MetaValue) {
    put_u32(
        out,
        value.scalar_type().map_or(ARRAY_TYPE_ID, ScalarType::id),
    );
    match value {
        MetaValue::U8(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::Bool(v) => out.push(u8::from(*v)),
        MetaValue::String(s) => put_str(out, s),
        MetaValue::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        MetaValue::Array(array) => put_array(out, array),
    }
}

fn put_array(out: &mut Vec<u8>, array: &MetaArray) {
    put_u32(out, array.element_type().id());
    put_u64(out, array.len());
    match array {
        MetaArray::Values(values) => put_values(out, values),
        MetaArray::Summary {
            element_type,
            len,
            bytes,
        } => put_summary(out, *element_type, *len, *bytes),
    }
}

/// Stand-in elements taking `bytes` in all: zeros for numbers; for strings, empty ones and a last
/// one of NUL text that makes up the rest. A parsed summary's size is bounded by the bytes it was
/// read from; a hand-built one of more than memory cannot be written.
fn put_summary(out: &mut Vec<u8>, element_type: ScalarType, len: u64, bytes: u64) {
    let zeros = |out: &mut Vec<u8>, n: u64| {
        out.resize(
            out.len()
                .saturating_add(usize::try_from(n).unwrap_or(usize::MAX)),
            0,
        )
    };
    if element_type != ScalarType::String || len == 0 {
        zeros(
            out,
            len.saturating_mul(element_type.fixed_size().unwrap_or(STRING_LENGTH_BYTES)),
        );
        return;
    }
    let lengths = len.saturating_mul(STRING_LENGTH_BYTES);
    zeros(out, lengths - STRING_LENGTH_BYTES);
    put_u64(out, bytes.saturating_sub(lengths));
    zeros(out, bytes.saturating_sub(lengths));
}

fn put_values(out: &mut Vec<u8>, values: &ArrayValues) {
    fn each<T: Copy, const N: usize>(out: &mut Vec<u8>, v: &[T], encode: fn(T) -> [u8; N]) {
        for &x in v {
            out.extend_from_slice(&encode(x));
        }
    }
    match values {
        ArrayValues::U8(v) => each(out, v, u8::to_le_bytes),
        ArrayValues::I8(v) => each(out, v, i8::to_le_bytes),
        ArrayValues::U16(v) => each(out, v, u16::to_le_bytes),
        ArrayValues::I16(v) => each(out, v, i16::to_le_bytes),
        ArrayValues::U32(v) => each(out, v, u32::to_le_bytes),
        ArrayValues::I32(v) => each(out, v, i32::to_le_bytes),
        ArrayValues::F32(v) => each(out, v, f32::to_le_bytes),
        ArrayValues::Bool(v) => each(out, v, |b| [u8::from(b)]),
        ArrayValues::U64(v) => each(out, v, u64::to_le_bytes),
        ArrayValues::I64(v) => each(out, v, i64::to_le_bytes),
        ArrayValues::F64(v) => each(out, v, f64::to_le_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::TensorInfo;
    use crate::parse_header;
    use crate::types::GgmlType;

    fn small_header() -> Header {
        Header {
            version: 3,
            alignment: 0,
            metadata: vec![
                (
                    "general.architecture".into(),
                    MetaValue::String("llama".into()),
                ),
                ("general.alignment".into(), MetaValue::U32(64)),
                (
                    "tokenizer.ggml.tokens".into(),
                    MetaValue::Array(MetaArray::summary(ScalarType::String, 3)),
                ),
                (
                    "llama.flags".into(),
                    MetaValue::Array(MetaArray::Values(ArrayValues::Bool(vec![true, false]))),
                ),
            ],
            tensors: vec![
                TensorInfo {
                    name: "a".into(),
                    dims: vec![5],
                    ggml_type: GgmlType::F32,
                    offset: 0,
                },
                TensorInfo {
                    name: "b".into(),
                    dims: vec![32, 2],
                    ggml_type: GgmlType::Q8_0,
                    offset: 0,
                },
            ],
            data_offset: 0,
        }
    }

    #[test]
    fn derived_fields_are_recomputed() {
        let bytes = write_header(&small_header());
        assert_eq!(bytes.len() % 64, 0, "padded to general.alignment");
        let parsed = parse_header(&bytes).unwrap();
        assert_eq!(parsed.alignment, 64);
        assert_eq!(parsed.data_offset, bytes.len() as u64);
        assert_eq!(
            parsed.tensors[1].offset, 64,
            "20 bytes of `a`, padded to 64"
        );
        assert_eq!(parsed.metadata, small_header().metadata);
        assert_eq!(write_header(&parsed), bytes);
    }

    #[test]
    fn string_summaries_keep_their_byte_size() {
        let tokens = MetaArray::Summary {
            element_type: ScalarType::String,
            len: 4,
            bytes: 4 * 8 + 21,
        };
        let mut out = Vec::new();
        put_array(&mut out, &tokens);
        assert_eq!(out.len(), 4 + 8 + 53);
        let mut header = small_header();
        header
            .metadata
            .push(("tokenizer.ggml.merges".into(), MetaValue::Array(tokens)));
        let parsed = parse_header(&write_header(&header)).unwrap();
        assert_eq!(parsed.metadata, header.metadata);
    }

    #[test]
    fn summaries_are_written_as_zeros() {
        let mut out = Vec::new();
        put_array(&mut out, &MetaArray::summary(ScalarType::String, 3));
        assert_eq!(out.len(), 4 + 8 + 3 * 8, "three empty strings");
        let mut out = Vec::new();
        put_array(&mut out, &MetaArray::summary(ScalarType::I32, 100_000));
        assert_eq!(out.len(), 4 + 8 + 100_000 * 4);
        assert!(out[12..].iter().all(|&b| b == 0));
    }
}
