//! Why a GGUF header could not be read, each reason with a message that says what to do. The
//! checks are llama.cpp's own (`gguf_init_from_file_impl` in `ggml/src/gguf.cpp`
//! @ `327e2ca6f208b2c1f1726b6138d24fa687fbd466`), so a file refused here is one llama.cpp refuses
//! too, plus a bound on the header's size so that no count in a damaged file makes the reader
//! allocate or ask for more than [`MAX_HEADER_BYTES`].

use std::fmt;

use crate::types::GgmlType;

/// The largest header the reader accepts. Real headers are up to tens of MB (a 256k-token
/// vocabulary is 5–15 MB of strings); a count or length that would need more is damage.
pub const MAX_HEADER_BYTES: u64 = 256 * 1024 * 1024;

/// The longest tensor name llama.cpp accepts (`GGML_MAX_NAME` = 64, including the terminator).
pub const MAX_TENSOR_NAME_BYTES: usize = 63;

/// The most dimensions a tensor has (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;

/// What a count in the header counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counted {
    Tensors,
    MetadataEntries,
    ArrayElements { key: String },
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Counted::Tensors => f.write_str("tensors"),
            Counted::MetadataEntries => f.write_str("metadata entries"),
            Counted::ArrayElements { key } => write!(f, "elements in the array `{key}`"),
        }
    }
}

/// Why [`crate::parse_header`] refused the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The bytes end before the header does. Read at least `needed_at_least` bytes from the start
    /// of the file (more is fine: everything after the header is ignored) and try again.
    Truncated {
        needed_at_least: u64,
    },
    /// The file does not start with `GGUF`.
    NotGguf {
        start: Vec<u8>,
    },
    /// The version field reads as a huge number: the file is big-endian.
    BigEndian {
        version: u32,
    },
    /// A version other than 2 or 3.
    UnsupportedVersion {
        version: u32,
    },
    /// A count that would need more than [`MAX_HEADER_BYTES`] of header.
    CountTooLarge {
        counted: Counted,
        count: u64,
    },
    /// A string, or the header so far, would run past [`MAX_HEADER_BYTES`].
    HeaderTooLarge {
        needed_at_least: u64,
    },
    /// A metadata key of zero length.
    EmptyKey {
        index: u64,
    },
    /// A metadata key or tensor name that is not UTF-8.
    InvalidUtf8 {
        at: u64,
    },
    DuplicateKey {
        key: String,
    },
    /// A value type id that is not in the GGUF spec.
    UnknownValueType {
        key: String,
        type_id: u32,
    },
    /// An array of arrays, which GGUF does not allow.
    NestedArray {
        key: String,
    },
    /// `general.alignment` that is not a `u32` power of two.
    BadAlignment {
        found: String,
    },
    TensorNameTooLong {
        name: String,
    },
    DuplicateTensor {
        name: String,
    },
    TooManyDims {
        tensor: String,
        dims: u32,
    },
    /// A dimension or element count past what ggml's signed 64-bit counts hold, or a byte size
    /// past 64 bits.
    TensorTooLarge {
        tensor: String,
    },
    /// A tensor type id ggml does not define (or removed).
    UnknownTensorType {
        tensor: String,
        type_id: u32,
    },
    /// A row length that is not a whole number of blocks of the tensor's type.
    RowNotWholeBlocks {
        tensor: String,
        ggml_type: GgmlType,
        row_length: u64,
    },
    /// A tensor whose data offset is not where the tensors before it end.
    MisplacedTensor {
        tensor: String,
        offset: u64,
        expected: u64,
    },
}

/// The advice for a file that is damaged rather than merely cut short.
const DAMAGED: &str = "the file is damaged or was not written by a GGUF writer; download it again";

impl fmt::Display for ParseError {
    #[expect(clippy::too_many_lines, reason = "a data table: one message per error")]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { needed_at_least } => write!(
                f,
                "the GGUF header continues past the bytes given; read at least the first \
                 {needed_at_least} bytes of the file (if the file is shorter, it is incomplete: \
                 download it again)"
            ),
            ParseError::NotGguf { start } => {
                write!(f, "not a GGUF file: it starts with {} ", shown(start))?;
                match start.as_slice() {
                    b"lmgg" | b"fmgg" | b"tjgg" => write!(
                        f,
                        "(an old GGML/GGJT model; convert it to GGUF with llama.cpp's \
                         conversion scripts)"
                    ),
                    _ => write!(
                        f,
                        "(a GGUF file starts with the bytes GGUF; pick the .gguf file itself, \
                         not a .safetensors, .bin or archive)"
                    ),
                }
            }
            ParseError::BigEndian { version } => write!(
                f,
                "this GGUF file is big-endian (its version reads as {version}); vramfit reads \
                 little-endian GGUF, the kind Hugging Face hosts and llama.cpp writes on x86 and \
                 ARM"
            ),
            ParseError::UnsupportedVersion { version } => write!(
                f,
                "GGUF version {version} is not supported (versions 2 and 3 are); {}",
                if *version < 2 {
                    "re-convert the model with a current llama.cpp"
                } else {
                    "this file is newer than vramfit; update vramfit"
                }
            ),
            ParseError::CountTooLarge { counted, count } => write!(
                f,
                "the GGUF header claims {count} {counted}, more than a header of at most \
                 {MAX_HEADER_BYTES} bytes can hold; {DAMAGED}"
            ),
            ParseError::HeaderTooLarge { needed_at_least } => write!(
                f,
                "the GGUF header would be at least {needed_at_least} bytes long, more than the \
                 {MAX_HEADER_BYTES} bytes any real model needs; {DAMAGED}"
            ),
            ParseError::EmptyKey { index } => {
                write!(f, "metadata entry {index} has an empty key; {DAMAGED}")
            }
            ParseError::InvalidUtf8 { at } => write!(
                f,
                "the key or tensor name at byte {at} is not UTF-8 text; {DAMAGED}"
            ),
            ParseError::DuplicateKey { key } => {
                write!(f, "the metadata key `{key}` appears twice; {DAMAGED}")
            }
            ParseError::UnknownValueType { key, type_id } => write!(
                f,
                "the metadata value `{key}` has type {type_id}, which GGUF does not define \
                 (0-12); {DAMAGED}"
            ),
            ParseError::NestedArray { key } => write!(
                f,
                "the metadata value `{key}` is an array of arrays, which GGUF does not allow; \
                 {DAMAGED}"
            ),
            ParseError::BadAlignment { found } => write!(
                f,
                "general.alignment is {found}, but must be a u32 power of two; {DAMAGED}"
            ),
            ParseError::TensorNameTooLong { name } => write!(
                f,
                "the tensor name `{name}` is longer than llama.cpp's {MAX_TENSOR_NAME_BYTES} \
                 bytes; llama.cpp cannot load this file"
            ),
            ParseError::DuplicateTensor { name } => {
                write!(f, "the tensor `{name}` is listed twice; {DAMAGED}")
            }
            ParseError::TooManyDims { tensor, dims } => write!(
                f,
                "tensor `{tensor}` has {dims} dimensions, more than ggml's {MAX_DIMS}; {DAMAGED}"
            ),
            ParseError::TensorTooLarge { tensor } => write!(
                f,
                "tensor `{tensor}` has more elements or bytes than 64-bit counts hold; {DAMAGED}"
            ),
            ParseError::UnknownTensorType { tensor, type_id } => write!(
                f,
                "tensor `{tensor}` has type id {type_id}, which is not a ggml type vramfit knows \
                 (ids 4, 5, 31-33 and 36-38 were removed from ggml; higher ids are newer than \
                 vramfit: update it)"
            ),
            ParseError::RowNotWholeBlocks {
                tensor,
                ggml_type,
                row_length,
            } => write!(
                f,
                "tensor `{tensor}` is {ggml_type} with rows of {row_length} values, not whole \
                 blocks of {}; {DAMAGED}",
                ggml_type.block_elements()
            ),
            ParseError::MisplacedTensor {
                tensor,
                offset,
                expected,
            } => write!(
                f,
                "tensor `{tensor}` starts at data offset {offset}, but the tensors before it end \
                 at {expected}; llama.cpp refuses such a file; {DAMAGED}"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// The first bytes, as text where printable and as hex escapes where not.
fn shown(start: &[u8]) -> String {
    let text: String = start
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                char::from(b).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect();
    format!("`{text}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_gguf_names_what_it_found() {
        let e = ParseError::NotGguf {
            start: vec![b'{', b'"', 0, 0xff],
        };
        let text = e.to_string();
        assert!(text.contains("`{\"\\x00\\xff`"), "{text}");
        assert!(text.contains("starts with the bytes GGUF"), "{text}");
        let old = ParseError::NotGguf {
            start: b"tjgg".to_vec(),
        }
        .to_string();
        assert!(old.contains("GGJT"), "{old}");
    }

    #[test]
    fn truncated_says_how_much_to_read() {
        let text = ParseError::Truncated {
            needed_at_least: 8_000_000,
        }
        .to_string();
        assert!(text.contains("first 8000000 bytes"), "{text}");
    }
}
