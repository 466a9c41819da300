//! GGUF metadata values as the reader keeps them: scalars and strings whole, numeric arrays up to
//! [`MAX_KEPT_ARRAY_LEN`] elements, and longer arrays and every string array as their element type
//! and length only. Tokenizer vocabularies (`tokenizer.ggml.tokens`, `.merges`) are megabytes of
//! strings nobody planning memory needs, so they are skipped, not copied.
//!
//! Value type ids are the GGUF spec's (`ggml-org/ggml` `docs/gguf.md`, and `gguf_type` in
//! `ggml/src/gguf.cpp` @ `327e2ca6f208b2c1f1726b6138d24fa687fbd466`).

use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// Numeric arrays up to this many elements are kept (per-layer head counts, window patterns);
/// longer ones keep only their type and length.
pub const MAX_KEPT_ARRAY_LEN: u64 = 65_536;

/// The type of a single GGUF value, which is also the element type of an array (arrays of
/// arrays are not allowed, so there is no array type here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    U64,
    I64,
    F64,
}

/// Every string starts with its length as a `u64`.
pub(crate) const STRING_LENGTH_BYTES: u64 = 8;

/// The id of the array type, which introduces an element type and a length.
pub(crate) const ARRAY_TYPE_ID: u32 = 9;

impl ScalarType {
    const ALL: [ScalarType; 12] = [
        ScalarType::U8,
        ScalarType::I8,
        ScalarType::U16,
        ScalarType::I16,
        ScalarType::U32,
        ScalarType::I32,
        ScalarType::F32,
        ScalarType::Bool,
        ScalarType::String,
        ScalarType::U64,
        ScalarType::I64,
        ScalarType::F64,
    ];

    /// The `gguf_type` id a file stores.
    pub fn id(self) -> u32 {
        match self {
            ScalarType::U8 => 0,
            ScalarType::I8 => 1,
            ScalarType::U16 => 2,
            ScalarType::I16 => 3,
            ScalarType::U32 => 4,
            ScalarType::I32 => 5,
            ScalarType::F32 => 6,
            ScalarType::Bool => 7,
            ScalarType::String => 8,
            ScalarType::U64 => 10,
            ScalarType::I64 => 11,
            ScalarType::F64 => 12,
        }
    }

    /// The scalar type with this id; `None` for the array id and unknown ids.
    pub fn from_id(id: u32) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// Bytes one value takes, or `None` for strings (a length, then the bytes).
    pub fn fixed_size(self) -> Option<u64> {
        match self {
            ScalarType::U8 | ScalarType::I8 | ScalarType::Bool => Some(1),
            ScalarType::U16 | ScalarType::I16 => Some(2),
            ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => Some(4),
            ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => Some(8),
            ScalarType::String => None,
        }
    }

    /// The short name llama.cpp's loader prints (`u32`, `str`, `f32`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::U8 => "u8",
            ScalarType::I8 => "i8",
            ScalarType::U16 => "u16",
            ScalarType::I16 => "i16",
            ScalarType::U32 => "u32",
            ScalarType::I32 => "i32",
            ScalarType::F32 => "f32",
            ScalarType::Bool => "bool",
            ScalarType::String => "str",
            ScalarType::U64 => "u64",
            ScalarType::I64 => "i64",
            ScalarType::F64 => "f64",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for ScalarType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// One metadata value. Floats compare by their bits, so a header equals itself even with NaNs.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    /// Invalid UTF-8 is replaced (U+FFFD); keys and tensor names must be valid.
    String(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Array(MetaArray),
}

impl MetaValue {
    /// An integer value that is not negative, whatever its width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float value (`f32` or `f64`), as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F32(v) => Some(v.into()),
            MetaValue::F64(v) => Some(v),
            _ => None,
        }
    }

    /// A string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The type a file stores for this value; `None` for arrays.
    pub fn scalar_type(&self) -> Option<ScalarType> {
        Some(match self {
            MetaValue::U8(_) => ScalarType::U8,
            MetaValue::I8(_) => ScalarType::I8,
            MetaValue::U16(_) => ScalarType::U16,
            MetaValue::I16(_) => ScalarType::I16,
            MetaValue::U32(_) => ScalarType::U32,
            MetaValue::I32(_) => ScalarType::I32,
            MetaValue::F32(_) => ScalarType::F32,
            MetaValue::Bool(_) => ScalarType::Bool,
            MetaValue::String(_) => ScalarType::String,
            MetaValue::U64(_) => ScalarType::U64,
            MetaValue::I64(_) => ScalarType::I64,
            MetaValue::F64(_) => ScalarType::F64,
            MetaValue::Array(_) => return None,
        })
    }
}

impl PartialEq for MetaValue {
    fn eq(&self, other: &Self) -> bool {
        use MetaValue as V;
        match (self, other) {
            (V::U8(a), V::U8(b)) => a == b,
            (V::I8(a), V::I8(b)) => a == b,
            (V::U16(a), V::U16(b)) => a == b,
            (V::I16(a), V::I16(b)) => a == b,
            (V::U32(a), V::U32(b)) => a == b,
            (V::I32(a), V::I32(b)) => a == b,
            (V::F32(a), V::F32(b)) => a.to_bits() == b.to_bits(),
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::String(a), V::String(b)) => a == b,
            (V::U64(a), V::U64(b)) => a == b,
            (V::I64(a), V::I64(b)) => a == b,
            (V::F64(a), V::F64(b)) => a.to_bits() == b.to_bits(),
            (V::Array(a), V::Array(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for MetaValue {}

/// An array value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaArray {
    /// A numeric or boolean array of at most [`MAX_KEPT_ARRAY_LEN`] elements, kept whole.
    Values(ArrayValues),
    /// A string array, or a longer one: what it holds, how many, and how many bytes the elements
    /// take in the file (so a header written back keeps its size).
    Summary {
        element_type: ScalarType,
        len: u64,
        bytes: u64,
    },
}

impl MetaArray {
    /// A summary of `len` elements of `element_type` at their smallest: numbers at their size,
    /// strings empty (8 bytes of length each).
    pub fn summary(element_type: ScalarType, len: u64) -> MetaArray {
        let each = element_type.fixed_size().unwrap_or(STRING_LENGTH_BYTES);
        MetaArray::Summary {
            element_type,
            len,
            bytes: len.saturating_mul(each),
        }
    }

    /// The type of the elements.
    pub fn element_type(&self) -> ScalarType {
        match self {
            MetaArray::Values(values) => values.element_type(),
            MetaArray::Summary { element_type, .. } => *element_type,
        }
    }

    /// The number of elements the file holds.
    pub fn len(&self) -> u64 {
        match self {
            MetaArray::Values(values) => values.len(),
            MetaArray::Summary { len, .. } => *len,
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as non-negative integers, when they are kept and all are.
    pub fn to_u64s(&self) -> Option<Vec<u64>> {
        match self {
            MetaArray::Values(values) => values.to_u64s(),
            MetaArray::Summary { .. } => None,
        }
    }
}

/// JSON: `{"type": "i32", "len": 32, "values": [...]}` when kept, `{"type": "str", "len":
/// 128256, "bytes": 1891174}` when summarised.
impl Serialize for MetaArray {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("MetaArray", 3)?;
        s.serialize_field("type", &self.element_type())?;
        s.serialize_field("len", &self.len())?;
        match self {
            MetaArray::Values(values) => s.serialize_field("values", values)?,
            MetaArray::Summary { bytes, .. } => s.serialize_field("bytes", bytes)?,
        }
        s.end()
    }
}

/// The elements of a kept array, typed.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ArrayValues {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl ArrayValues {
    /// The element type.
    pub fn element_type(&self) -> ScalarType {
        match self {
            ArrayValues::U8(_) => ScalarType::U8,
            ArrayValues::I8(_) => ScalarType::I8,
            ArrayValues::U16(_) => ScalarType::U16,
            ArrayValues::I16(_) => ScalarType::I16,
            ArrayValues::U32(_) => ScalarType::U32,
            ArrayValues::I32(_) => ScalarType::I32,
            ArrayValues::F32(_) => ScalarType::F32,
            ArrayValues::Bool(_) => ScalarType::Bool,
            ArrayValues::U64(_) => ScalarType::U64,
            ArrayValues::I64(_) => ScalarType::I64,
            ArrayValues::F64(_) => ScalarType::F64,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        let len = match self {
            ArrayValues::U8(v) => v.len(),
            ArrayValues::I8(v) => v.len(),
            ArrayValues::U16(v) => v.len(),
            ArrayValues::I16(v) => v.len(),
            ArrayValues::U32(v) => v.len(),
            ArrayValues::I32(v) => v.len(),
            ArrayValues::F32(v) => v.len(),
            ArrayValues::Bool(v) => v.len(),
            ArrayValues::U64(v) => v.len(),
            ArrayValues::I64(v) => v.len(),
            ArrayValues::F64(v) => v.len(),
        };
        len as u64
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as non-negative integers, when all are.
    pub fn to_u64s(&self) -> Option<Vec<u64>> {
        // A loop rather than `collect` into an `Option`, whose adapter the page's wasm would
        // hold once per element type.
        fn all<T: Copy>(v: &[T], f: impl Fn(T) -> Option<u64>) -> Option<Vec<u64>> {
            let mut out = Vec::with_capacity(v.len());
            for &x in v {
                out.push(f(x)?);
            }
            Some(out)
        }
        match self {
            ArrayValues::U8(v) => all(v, |x| Some(x.into())),
            ArrayValues::U16(v) => all(v, |x| Some(x.into())),
            ArrayValues::U32(v) => all(v, |x| Some(x.into())),
            ArrayValues::U64(v) => all(v, Some),
            ArrayValues::I8(v) => all(v, |x| u64::try_from(x).ok()),
            ArrayValues::I16(v) => all(v, |x| u64::try_from(x).ok()),
            ArrayValues::I32(v) => all(v, |x| u64::try_from(x).ok()),
            ArrayValues::I64(v) => all(v, |x| u64::try_from(x).ok()),
            ArrayValues::F32(_) | ArrayValues::F64(_) | ArrayValues::Bool(_) => None,
        }
    }
}

impl PartialEq for ArrayValues {
    fn eq(&self, other: &Self) -> bool {
        use ArrayValues as A;
        match (self, other) {
            (A::U8(a), A::U8(b)) => a == b,
            (A::I8(a), A::I8(b)) => a == b,
            (A::U16(a), A::U16(b)) => a == b,
            (A::I16(a), A::I16(b)) => a == b,
            (A::U32(a), A::U32(b)) => a == b,
            (A::I32(a), A::I32(b)) => a == b,
            (A::F32(a), A::F32(b)) => a
                .iter()
                .map(|x| x.to_bits())
                .eq(b.iter().map(|x| x.to_bits())),
            (A::Bool(a), A::Bool(b)) => a == b,
            (A::U64(a), A::U64(b)) => a == b,
            (A::I64(a), A::I64(b)) => a == b,
            (A::F64(a), A::F64(b)) => a
                .iter()
                .map(|x| x.to_bits())
                .eq(b.iter().map(|x| x.to_bits())),
            _ => false,
        }
    }
}

impl Eq for ArrayValues {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_ids_follow_the_spec() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_id(t.id()), Some(t));
        }
        assert_eq!(ScalarType::from_id(ARRAY_TYPE_ID), None);
        assert_eq!(ScalarType::from_id(13), None);
        assert_eq!(ScalarType::String.id(), 8);
        assert_eq!(ScalarType::F64.id(), 12);
    }

    #[test]
    fn nan_equals_itself_bitwise() {
        assert_eq!(MetaValue::F32(f32::NAN), MetaValue::F32(f32::NAN));
        assert_ne!(MetaValue::F32(0.0), MetaValue::F32(-0.0));
        let a = MetaArray::Values(ArrayValues::F64(vec![f64::NAN]));
        assert_eq!(a.clone(), a);
    }

    #[test]
    fn integers_read_as_u64_when_not_negative() {
        assert_eq!(MetaValue::I32(8).as_u64(), Some(8));
        assert_eq!(MetaValue::I32(-1).as_u64(), None);
        assert_eq!(MetaValue::F32(1.0).as_u64(), None);
        let per_layer = MetaArray::Values(ArrayValues::I32(vec![8, 8, 0]));
        assert_eq!(per_layer.to_u64s(), Some(vec![8, 8, 0]));
        let summary = MetaArray::Summary {
            bytes: 2_000_000,
            element_type: ScalarType::String,
            len: 128_256,
        };
        assert_eq!((summary.len(), summary.to_u64s()), (128_256, None));
    }
}
