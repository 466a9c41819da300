//! Sans-IO reading of GGUF file headers (llama.cpp's model format), so vramfit can show the exact
//! weight bytes of a `.gguf` file from its first megabytes: the page reads a slice from the start
//! of the dropped file, and `vramfit estimate --gguf FILE` reads the same.
//!
//! - [`parse_header`] reads the header from any prefix of a file, or says how many bytes it needs
//!   ([`ParseError::Truncated`]); it never panics and never trusts a count from the file.
//! - [`write_header`] writes a header back, for header-only test files.
//! - [`GgmlType`] is ggml's type table (ids, names, block sizes): the one place sizes live.
//! - [`FileType`] is llama.cpp's file types (`Q4_K_M`, …) and [`quantize`] the per-tensor type
//!   `llama-quantize` picks for each, so a model known only by its shape can be sized as a GGUF
//!   file of any type.
//!
//! Nothing here does IO, reads a clock or holds global state; it builds for wasm32 and native.

mod error;
mod file_type;
mod header;
mod metadata;
mod parse;
pub mod quantize;
mod types;
mod write;

pub use error::{Counted, ParseError, MAX_DIMS, MAX_HEADER_BYTES, MAX_TENSOR_NAME_BYTES};
pub use file_type::{FileType, UnknownFileType};
pub use header::{Header, PerLayer, TensorInfo, ALIGNMENT_KEY, DEFAULT_ALIGNMENT};
pub use metadata::{ArrayValues, MetaArray, MetaValue, ScalarType, MAX_KEPT_ARRAY_LEN};
pub use parse::parse_header;
pub use types::{GgmlType, UnknownGgmlType};
pub use write::write_header;
