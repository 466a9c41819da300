//! Why a safetensors header could not be read, each reason with a message that says what is wrong
//! and, where it is one tensor's fault, which tensor. The checks are the reference
//! implementation's (`SafeTensors::read_metadata` and `Metadata::validate` in
//! huggingface/safetensors `safetensors/src/tensor.rs`
//! @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9`), with their `SafeTensorError` named on each
//! variant, so a file refused here is one `safetensors` refuses too.

use std::fmt;

use crate::dtype::Dtype;

/// The bytes before the header: its length, a little-endian `u64`.
pub const HEADER_LENGTH_BYTES: u64 = 8;

/// The longest header the reference reads (`MAX_HEADER_SIZE` = 100,000,000 bytes, decimal, not
/// MiB). Real headers are tens of KB to a few MB.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The header key that holds the file's free-form string→string metadata rather than a tensor.
pub const METADATA_KEY: &str = "__metadata__";

/// Why [`crate::parse_header`] refused the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The bytes end before the header does. Read exactly the first `needed` bytes of the file
    /// (more is fine: everything after the header is ignored) and try again. With fewer than 8
    /// bytes, `needed` is 8: the header's length comes first.
    Truncated { needed: u64 },
    /// The header length is over [`MAX_HEADER_BYTES`] (`HeaderTooLarge`).
    HeaderTooLarge { declared: u64 },
    /// The header is not UTF-8 (`InvalidHeader`); `at` is the file offset of the first bad byte.
    InvalidUtf8 { at: u64 },
    /// The header is not JSON (`InvalidHeaderDeserialization`); `message` is serde_json's, with
    /// the line and column in the header text.
    InvalidJson { message: String },
    /// The header is JSON but not an object.
    NotAnObject { found: String },
    /// A key appears twice: a tensor name, [`METADATA_KEY`], or a key inside it. The format's
    /// README disallows duplicates; the reference keeps the last one.
    DuplicateKey { key: String },
    /// [`METADATA_KEY`] is not an object of strings (`null` counts as absent, as in the
    /// reference). `key` is the entry whose value is not a string, or `None` when the metadata
    /// itself is not an object.
    MetadataNotStrings { key: Option<String>, found: String },
    /// A tensor's entry is not an object.
    NotATensor { tensor: String, found: String },
    /// A tensor's entry lacks `dtype`, `shape` or `data_offsets`.
    MissingField { tensor: String, field: &'static str },
    /// A tensor's entry has `field` twice.
    DuplicateField { tensor: String, field: &'static str },
    /// `dtype` is not a string, `shape` not an array of whole numbers, or `data_offsets` not two
    /// whole numbers (each below 2^64).
    BadField {
        tensor: String,
        field: &'static str,
        found: String,
    },
    /// A dtype the format does not define (or newer than vramfit).
    UnknownDtype { tensor: String, dtype: String },
    /// A tensor whose data does not start where the tensors before it (in offset order) end, or
    /// ends before it starts (`InvalidOffset`): the data must cover the buffer from 0 with no gap
    /// and no overlap.
    MisplacedTensor {
        tensor: String,
        data_offsets: (u64, u64),
        expected_start: u64,
    },
    /// A tensor whose element count, bit count or end in the file does not fit in 64 bits
    /// (`ValidationOverflow`).
    TooLarge { tensor: String },
    /// A sub-byte dtype whose elements are not a whole number of bytes (`MisalignedSlice`).
    NotWholeBytes {
        tensor: String,
        dtype: Dtype,
        elements: u64,
    },
    /// A tensor whose offsets span a different number of bytes than its shape and dtype take
    /// (`TensorInvalidInfo`).
    SizeMismatch {
        tensor: String,
        dtype: Dtype,
        shape: Vec<u64>,
        span: u64,
        expected: u64,
    },
    /// From [`crate::Header::check_file_len`]: the file is not exactly the header and the data
    /// (`MetadataIncompleteBuffer`). Shorter is an incomplete download; longer is a file with
    /// bytes no tensor covers, which the format refuses.
    FileLength { expected: u64, actual: u64 },
}

/// The advice for a file that is damaged rather than merely cut short.
const DAMAGED: &str =
    "the file is damaged or was not written by a safetensors writer; download it again";

impl fmt::Display for ParseError {
    #[expect(clippy::too_many_lines, reason = "a data table: one message per error")]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { needed } => write!(
                f,
                "the safetensors header continues past the bytes given; read the first {needed} \
                 bytes of the file (if the file is shorter, it is incomplete: download it again)"
            ),
            ParseError::HeaderTooLarge { declared } => write!(
                f,
                "the safetensors header claims to be {declared} bytes long, more than the format's \
                 limit of {MAX_HEADER_BYTES}; this is not a safetensors file, or {DAMAGED}"
            ),
            ParseError::InvalidUtf8 { at } => write!(
                f,
                "the safetensors header is not UTF-8 text (byte {at} of the file); this is not a \
                 safetensors file, or {DAMAGED}"
            ),
            ParseError::InvalidJson { message } => write!(
                f,
                "the safetensors header is not valid JSON ({message}); {DAMAGED}"
            ),
            ParseError::NotAnObject { found } => write!(
                f,
                "the safetensors header is {found}, not a JSON object of tensors; {DAMAGED}"
            ),
            ParseError::DuplicateKey { key } => write!(
                f,
                "the key `{key}` appears twice in the safetensors header, which the format \
                 disallows; {DAMAGED}"
            ),
            ParseError::MetadataNotStrings { key: None, found } => write!(
                f,
                "`{METADATA_KEY}` is {found}, but must be an object of strings; {DAMAGED}"
            ),
            ParseError::MetadataNotStrings {
                key: Some(key),
                found,
            } => write!(
                f,
                "`{METADATA_KEY}`'s entry `{key}` is {found}, but every value there must be a \
                 string; {DAMAGED}"
            ),
            ParseError::NotATensor { tensor, found } => write!(
                f,
                "the entry for tensor `{tensor}` is {found}, not an object with dtype, shape and \
                 data_offsets; {DAMAGED}"
            ),
            ParseError::MissingField { tensor, field } => {
                write!(f, "tensor `{tensor}` has no `{field}`; {DAMAGED}")
            }
            ParseError::DuplicateField { tensor, field } => {
                write!(f, "tensor `{tensor}` has `{field}` twice; {DAMAGED}")
            }
            ParseError::BadField {
                tensor,
                field,
                found,
            } => write!(
                f,
                "tensor `{tensor}`'s `{field}` is {found}, but must be {}; {DAMAGED}",
                match *field {
                    "dtype" => "a dtype name such as \"BF16\"",
                    "shape" => "an array of whole numbers",
                    _ => "an array of two whole numbers, [start, end]",
                }
            ),
            ParseError::UnknownDtype { tensor, dtype } => write!(
                f,
                "tensor `{tensor}` has dtype \"{dtype}\", which is not a safetensors dtype \
                 vramfit knows (names are upper-case, such as BF16 or F8_E4M3; a newer dtype \
                 needs a newer vramfit)"
            ),
            ParseError::MisplacedTensor {
                tensor,
                data_offsets: (start, end),
                expected_start,
            } => {
                if end < start {
                    write!(
                        f,
                        "tensor `{tensor}`'s data_offsets [{start}, {end}] end before they start; \
                         {DAMAGED}"
                    )
                } else {
                    write!(
                        f,
                        "tensor `{tensor}`'s data starts at {start}, but the tensors before it \
                         end at {expected_start}; safetensors data must be contiguous from 0 \
                         with no gap or overlap; {DAMAGED}"
                    )
                }
            }
            ParseError::TooLarge { tensor } => write!(
                f,
                "tensor `{tensor}`'s element count, bit count or end in the file does not fit \
                 in 64 bits; {DAMAGED}"
            ),
            ParseError::NotWholeBytes {
                tensor,
                dtype,
                elements,
            } => write!(
                f,
                "tensor `{tensor}` has {elements} {dtype} elements of {} bits, not a whole number \
                 of bytes, which safetensors refuses; {DAMAGED}",
                dtype.bits()
            ),
            ParseError::SizeMismatch {
                tensor,
                dtype,
                shape,
                span,
                expected,
            } => write!(
                f,
                "tensor `{tensor}` is {dtype} of shape {shape:?}, which takes {expected} bytes, but \
                 its data_offsets span {span}; {DAMAGED}"
            ),
            ParseError::FileLength { expected, actual } => {
                if actual < expected {
                    write!(
                        f,
                        "the file is {actual} bytes, but its header and tensors take {expected}; \
                         it is incomplete: download it again"
                    )
                } else {
                    write!(
                        f,
                        "the file is {actual} bytes, but its header and tensors take only \
                         {expected}; safetensors refuses bytes no tensor covers; {DAMAGED}"
                    )
                }
            }
        }
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_says_how_much_to_read() {
        let text = ParseError::Truncated { needed: 8_000_008 }.to_string();
        assert!(text.contains("first 8000008 bytes"), "{text}");
    }

    #[test]
    fn offsets_say_which_way_they_are_wrong() {
        let reversed = ParseError::MisplacedTensor {
            tensor: "w".into(),
            data_offsets: (8, 4),
            expected_start: 8,
        }
        .to_string();
        assert!(reversed.contains("end before they start"), "{reversed}");
        let gap = ParseError::MisplacedTensor {
            tensor: "w".into(),
            data_offsets: (16, 20),
            expected_start: 8,
        }
        .to_string();
        assert!(
            gap.contains("starts at 16") && gap.contains("end at 8"),
            "{gap}"
        );
    }
}
