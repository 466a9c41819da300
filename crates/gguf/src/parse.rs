//! The sans-IO GGUF header reader. It takes the first bytes of a file, however many the caller
//! has, and either returns the header or says how many bytes it needs ([`ParseError::Truncated`]),
//! so a page can read a 40 GB file's first megabytes and nothing more.
//!
//! Layout (ggml-org/ggml `docs/gguf.md`; `gguf_init_from_file_impl` in ggml-org/llama.cpp
//! `ggml/src/gguf.cpp` @ `327e2ca6f208b2c1f1726b6138d24fa687fbd466`), all little-endian:
//! `"GGUF"`, `u32` version, `u64` tensor count, `u64` metadata count; each metadata entry is a
//! string key (`u64` length + UTF-8 bytes), a `u32` value type and the value (an array is a `u32`
//! element type, a `u64` length and the elements); each tensor is a string name, a `u32` dimension
//! count, `u64` dimensions (ne0 first), a `u32` ggml type and a `u64` offset into the data, which
//! starts after the tensor list, padded to the alignment.
//!
//! Every count and length comes from the file, so none is trusted: each is checked against the
//! bytes it needs, and against [`MAX_HEADER_BYTES`], before anything is allocated or skipped.

use std::collections::HashSet;

use crate::error::{Counted, ParseError, MAX_DIMS, MAX_HEADER_BYTES, MAX_TENSOR_NAME_BYTES};
use crate::header::{pad_to, Header, TensorInfo, ALIGNMENT_KEY, DEFAULT_ALIGNMENT};
use crate::metadata::{
    ArrayValues, MetaArray, MetaValue, ScalarType, ARRAY_TYPE_ID, MAX_KEPT_ARRAY_LEN,
    STRING_LENGTH_BYTES,
};
use crate::types::GgmlType;

/// The file's first four bytes.
pub(crate) const MAGIC: &[u8; 4] = b"GGUF";

/// The smallest a metadata entry can be: a key length, a 1-byte key, a type, a 1-byte value.
const MIN_ENTRY_BYTES: u64 = 8 + 1 + 4 + 1;

/// The smallest a tensor description can be: a name length, a dimension count, a type, an offset.
const MIN_TENSOR_BYTES: u64 = 8 + 4 + 4 + 8;

/// Reads a GGUF header from the start of a file. `bytes` may hold the whole file or any prefix of
/// it; bytes after the tensor list are not looked at.
pub fn parse_header(bytes: &[u8]) -> Result<Header, ParseError> {
    let mut r = Reader { bytes, pos: 0 };
    let magic = r.take(4)?;
    if magic != MAGIC {
        return Err(ParseError::NotGguf {
            start: magic.to_vec(),
        });
    }
    let version = read_version(&mut r)?;
    let tensor_count = r.u64()?;
    let entry_count = r.u64()?;
    // llama.cpp reads both counts as signed; checking them before reading on fails fast on a
    // header claiming 2^60 tensors.
    r.require_items(tensor_count, MIN_TENSOR_BYTES, Counted::Tensors)?;
    r.require_items(entry_count, MIN_ENTRY_BYTES, Counted::MetadataEntries)?;

    let metadata = read_metadata(&mut r, entry_count)?;
    let alignment = alignment_of(&metadata)?;
    let tensors = read_tensors(&mut r, tensor_count, alignment)?;
    // The position is below MAX_HEADER_BYTES and the alignment a u32, so this cannot overflow.
    let data_offset = pad_to(r.position(), alignment).ok_or(ParseError::HeaderTooLarge {
        needed_at_least: r.position(),
    })?;
    Ok(Header {
        version,
        alignment,
        metadata,
        tensors,
        data_offset,
    })
}

/// The tensor data alignment the metadata sets: `general.alignment`, which must be a `u32`
/// power of two, or 32.
pub(crate) fn alignment_of(metadata: &[(String, MetaValue)]) -> Result<u64, ParseError> {
    match metadata.iter().find(|(key, _)| key == ALIGNMENT_KEY) {
        None => Ok(DEFAULT_ALIGNMENT),
        Some((_, MetaValue::U32(a))) if a.is_power_of_two() => Ok(u64::from(*a)),
        Some((_, other)) => Err(ParseError::BadAlignment {
            found: describe(other),
        }),
    }
}

/// The value and its type, for a message (written out here rather than through `Debug`, which
/// would link a formatter for every metadata type into the page).
fn describe(value: &MetaValue) -> String {
    let Some(t) = value.scalar_type() else {
        return "an array".to_string();
    };
    let shown = match value {
        MetaValue::I8(v) => i64::from(*v).to_string(),
        MetaValue::I16(v) => i64::from(*v).to_string(),
        MetaValue::I32(v) => i64::from(*v).to_string(),
        MetaValue::I64(v) => v.to_string(),
        MetaValue::Bool(v) => v.to_string(),
        MetaValue::String(s) => format!("\"{s}\""),
        other => match (other.as_u64(), other.as_f64()) {
            (Some(n), _) => n.to_string(),
            (_, Some(x)) => x.to_string(),
            _ => String::new(),
        },
    };
    format!("{shown} (a {t})")
}

fn read_version(r: &mut Reader<'_>) -> Result<u32, ParseError> {
    let version = r.u32()?;
    if version == 0 {
        return Err(ParseError::UnsupportedVersion { version });
    }
    // A big-endian version 3 reads as 0x03000000: its low half is zero (llama.cpp's own test).
    if version & 0xFFFF == 0 {
        return Err(ParseError::BigEndian { version });
    }
    if !(2..=3).contains(&version) {
        return Err(ParseError::UnsupportedVersion { version });
    }
    Ok(version)
}

fn read_metadata(r: &mut Reader<'_>, count: u64) -> Result<Vec<(String, MetaValue)>, ParseError> {
    // `require_items` has checked that `count` entries fit in the bytes given, so the capacity
    // is bounded by the input.
    let mut metadata = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut seen: HashSet<String> = HashSet::new();
    for index in 0..count {
        let key = r.text()?;
        if key.is_empty() {
            return Err(ParseError::EmptyKey { index });
        }
        if !seen.insert(key.clone()) {
            return Err(ParseError::DuplicateKey { key });
        }
        let type_id = r.u32()?;
        let value = if type_id == ARRAY_TYPE_ID {
            MetaValue::Array(read_array(r, &key)?)
        } else {
            let t = ScalarType::from_id(type_id).ok_or_else(|| ParseError::UnknownValueType {
                key: key.clone(),
                type_id,
            })?;
            read_scalar(r, t)?
        };
        metadata.push((key, value));
    }
    Ok(metadata)
}

fn read_scalar(r: &mut Reader<'_>, t: ScalarType) -> Result<MetaValue, ParseError> {
    Ok(match t {
        ScalarType::U8 => MetaValue::U8(u8::from_le_bytes(r.array()?)),
        ScalarType::I8 => MetaValue::I8(i8::from_le_bytes(r.array()?)),
        ScalarType::U16 => MetaValue::U16(u16::from_le_bytes(r.array()?)),
        ScalarType::I16 => MetaValue::I16(i16::from_le_bytes(r.array()?)),
        ScalarType::U32 => MetaValue::U32(r.u32()?),
        ScalarType::I32 => MetaValue::I32(i32::from_le_bytes(r.array()?)),
        ScalarType::F32 => MetaValue::F32(f32::from_le_bytes(r.array()?)),
        // llama.cpp reads a bool as an int8: anything but 0 is true.
        ScalarType::Bool => MetaValue::Bool(u8::from_le_bytes(r.array()?) != 0),
        ScalarType::String => {
            let len = r.u64()?;
            MetaValue::String(String::from_utf8_lossy(r.take(len)?).into_owned())
        }
        ScalarType::U64 => MetaValue::U64(r.u64()?),
        ScalarType::I64 => MetaValue::I64(i64::from_le_bytes(r.array()?)),
        ScalarType::F64 => MetaValue::F64(f64::from_le_bytes(r.array()?)),
    })
}

fn read_array(r: &mut Reader<'_>, key: &str) -> Result<MetaArray, ParseError> {
    let type_id = r.u32()?;
    if type_id == ARRAY_TYPE_ID {
        return Err(ParseError::NestedArray {
            key: key.to_string(),
        });
    }
    let element_type =
        ScalarType::from_id(type_id).ok_or_else(|| ParseError::UnknownValueType {
            key: key.to_string(),
            type_id,
        })?;
    let len = r.u64()?;
    let a = ArrayRead {
        key,
        element_type,
        len,
    };
    match element_type {
        ScalarType::String => a.skip_strings(r),
        ScalarType::U8 => a.numbers(r, ArrayValues::U8, u8::from_le_bytes),
        ScalarType::I8 => a.numbers(r, ArrayValues::I8, i8::from_le_bytes),
        ScalarType::U16 => a.numbers(r, ArrayValues::U16, u16::from_le_bytes),
        ScalarType::I16 => a.numbers(r, ArrayValues::I16, i16::from_le_bytes),
        ScalarType::U32 => a.numbers(r, ArrayValues::U32, u32::from_le_bytes),
        ScalarType::I32 => a.numbers(r, ArrayValues::I32, i32::from_le_bytes),
        ScalarType::F32 => a.numbers(r, ArrayValues::F32, f32::from_le_bytes),
        // llama.cpp reads each bool as an int8: anything but 0 is true.
        ScalarType::Bool => a.numbers(r, ArrayValues::Bool, |[b]: [u8; 1]| b != 0),
        ScalarType::U64 => a.numbers(r, ArrayValues::U64, u64::from_le_bytes),
        ScalarType::I64 => a.numbers(r, ArrayValues::I64, i64::from_le_bytes),
        ScalarType::F64 => a.numbers(r, ArrayValues::F64, f64::from_le_bytes),
    }
}

/// An array whose element type and length have been read.
struct ArrayRead<'k> {
    key: &'k str,
    element_type: ScalarType,
    len: u64,
}

impl ArrayRead<'_> {
    fn counted(&self) -> Counted {
        Counted::ArrayElements {
            key: self.key.to_string(),
        }
    }

    /// Strings are a length and bytes each; they are skipped one by one without copying.
    fn skip_strings(&self, r: &mut Reader<'_>) -> Result<MetaArray, ParseError> {
        r.require_items(self.len, STRING_LENGTH_BYTES, self.counted())?;
        let start = r.position();
        for _ in 0..self.len {
            let n = r.u64()?;
            r.take(n)?;
        }
        Ok(self.summary(r.position() - start))
    }

    /// Numbers of `N` bytes each, kept when there are at most [`MAX_KEPT_ARRAY_LEN`].
    fn numbers<T, const N: usize>(
        &self,
        r: &mut Reader<'_>,
        wrap: fn(Vec<T>) -> ArrayValues,
        decode: fn([u8; N]) -> T,
    ) -> Result<MetaArray, ParseError> {
        let size = N as u64;
        r.require_items(self.len, size, self.counted())?;
        // `require_items` checked that len * size is below MAX_HEADER_BYTES and was given, so the
        // elements are taken at once.
        let bytes = self.len * size;
        let elements = r.take(bytes)?;
        if self.len > MAX_KEPT_ARRAY_LEN {
            return Ok(self.summary(bytes));
        }
        // Every chunk is N bytes, so the conversion never falls back to zeros.
        let values = elements
            .chunks_exact(N)
            .map(|element| decode(element.try_into().unwrap_or([0; N])))
            .collect();
        Ok(MetaArray::Values(wrap(values)))
    }

    fn summary(&self, bytes: u64) -> MetaArray {
        MetaArray::Summary {
            element_type: self.element_type,
            len: self.len,
            bytes,
        }
    }
}

fn read_tensors(
    r: &mut Reader<'_>,
    count: u64,
    alignment: u64,
) -> Result<Vec<TensorInfo>, ParseError> {
    let mut tensors = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut seen: HashSet<String> = HashSet::new();
    // Where the next tensor's data must start: llama.cpp requires the tensors to be laid out in
    // order, each padded to the alignment.
    let mut expected_offset = 0u64;
    for _ in 0..count {
        let name = r.text()?;
        if name.len() > MAX_TENSOR_NAME_BYTES {
            return Err(ParseError::TensorNameTooLong { name });
        }
        if !seen.insert(name.clone()) {
            return Err(ParseError::DuplicateTensor { name });
        }
        let n_dims = r.u32()?;
        if n_dims > MAX_DIMS {
            return Err(ParseError::TooManyDims {
                tensor: name,
                dims: n_dims,
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.u64()?);
        }
        let type_id = r.u32()?;
        let offset = r.u64()?;
        let too_large = || ParseError::TensorTooLarge {
            tensor: name.clone(),
        };
        // ggml keeps dimensions and the element count in int64s and checks the product stays
        // below INT64_MAX.
        if dims.iter().any(|&d| d > i64::MAX as u64) {
            return Err(too_large());
        }
        let elements = dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| n < i64::MAX as u64)
            .ok_or_else(too_large)?;
        let ggml_type =
            GgmlType::from_id(type_id).ok_or_else(|| ParseError::UnknownTensorType {
                tensor: name.clone(),
                type_id,
            })?;
        let row_length = dims.first().copied().unwrap_or(1);
        if !row_length.is_multiple_of(ggml_type.block_elements()) {
            return Err(ParseError::RowNotWholeBlocks {
                tensor: name,
                ggml_type,
                row_length,
            });
        }
        let bytes = ggml_type.bytes_for(elements).ok_or_else(too_large)?;
        if offset != expected_offset {
            return Err(ParseError::MisplacedTensor {
                tensor: name,
                offset,
                expected: expected_offset,
            });
        }
        expected_offset = pad_to(bytes, alignment)
            .and_then(|padded| expected_offset.checked_add(padded))
            .ok_or_else(too_large)?;
        tensors.push(TensorInfo {
            name,
            dims,
            ggml_type,
            offset,
        });
    }
    Ok(tensors)
}

/// A position in the bytes given, where running out means [`ParseError::Truncated`].
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn position(&self) -> u64 {
        self.pos as u64
    }

    /// Fails unless `n` more bytes are there: too many for any header, or more than were given.
    fn require(&self, n: u64) -> Result<(), ParseError> {
        let needed_at_least = self.position().saturating_add(n);
        if needed_at_least > MAX_HEADER_BYTES {
            return Err(ParseError::HeaderTooLarge { needed_at_least });
        }
        if needed_at_least > self.bytes.len() as u64 {
            return Err(ParseError::Truncated { needed_at_least });
        }
        Ok(())
    }

    /// Checks that `count` items of at least `min_bytes` each can follow, before reading any.
    fn require_items(
        &self,
        count: u64,
        min_bytes: u64,
        counted: Counted,
    ) -> Result<(), ParseError> {
        let needed = count.saturating_mul(min_bytes);
        if self.position().saturating_add(needed) > MAX_HEADER_BYTES {
            return Err(ParseError::CountTooLarge { counted, count });
        }
        self.require(needed)
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], ParseError> {
        self.require(n)?;
        // `require` bounded `pos + n` by the slice length, so `end` exists and is in range.
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .ok_or(ParseError::HeaderTooLarge {
                needed_at_least: u64::MAX,
            })?;
        let taken = self.bytes.get(self.pos..end).ok_or(ParseError::Truncated {
            needed_at_least: end as u64,
        })?;
        self.pos = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ParseError> {
        let taken = self.take(N as u64)?;
        let mut out = [0u8; N];
        out.copy_from_slice(taken);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, ParseError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ParseError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A key or tensor name: a length and UTF-8 bytes.
    fn text(&mut self) -> Result<String, ParseError> {
        let len = self.u64()?;
        let at = self.position();
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|_| ParseError::InvalidUtf8 { at })
    }
}
