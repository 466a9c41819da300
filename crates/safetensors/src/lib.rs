//! Sans-IO reading of safetensors file headers (Hugging Face's tensor format), so vramfit can show
//! the exact weight bytes of a `.safetensors` file, or of a shard on the Hub, from its first
//! bytes: a caller reads 8 bytes, learns how long the header is, and reads exactly that much.
//!
//! - [`parse_header`] reads the header from any prefix of a file, or says how many bytes it needs
//!   ([`ParseError::Truncated`]); it never panics, never reads, and never trusts a count or size
//!   from the file.
//! - [`write_header`] writes a header back, for header-only test files.
//! - [`Dtype`] is the format's dtype table (wire names and bit widths): the one place sizes live.
//!
//! The rules are the reference implementation's (`Metadata::validate` and
//! `SafeTensors::read_metadata` in huggingface/safetensors `safetensors/src/tensor.rs`
//! @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9`), so a file refused here is one `safetensors`
//! refuses too, except that a name given twice is refused here (the format's README disallows it;
//! the reference keeps the last one).
//!
//! ```
//! use vramfit_safetensors::{parse_header, write_header, Dtype, Header, ParseError};
//!
//! let w = ("w".to_string(), Dtype::BF16, vec![2, 3]);
//! let file = write_header(&Header::lay_out([w], vec![]).unwrap());
//! // The first 8 bytes say exactly how many to read (one Range request: bytes=0-(needed-1)).
//! let Err(ParseError::Truncated { needed }) = parse_header(&file[..8]) else {
//!     unreachable!()
//! };
//! let header = parse_header(&file[..needed as usize]).unwrap();
//! assert_eq!((header.tensor_bytes(), header.file_len()), (12, needed + 12));
//! ```
//!
//! Nothing here does IO, reads a clock or holds global state; it builds for wasm32 and native.

mod dtype;
mod error;
mod header;
mod parse;
mod write;

pub use dtype::Dtype;
pub use error::{ParseError, HEADER_LENGTH_BYTES, MAX_HEADER_BYTES, METADATA_KEY};
pub use header::{Header, TensorInfo};
pub use parse::parse_header;
pub use write::write_header;
