//! GGUF files for the fixture Hub: the gguf crate's committed Llama-3.1-8B-Instruct Q4_K_M
//! header (generated tensor by tensor from llama.cpp's quantizer rules, see
//! `crates/gguf/tests/models.rs`), whole and split as `llama-gguf-split --split` splits it.
//!
//! The split follows ggml-org/llama.cpp@3e00f05f2f854195b1a271f935e5b8925b52ab0b:
//! tools/gguf-split/gguf-split.cpp (`split_strategy`): the first file keeps all metadata, every
//! file gets `split.no` (u16, from 0), `split.count` (u16) and `split.tensors.count` (i32, the
//! total), and files are named `%s-%05d-of-%05d.gguf` counting from 1.

use vramfit_gguf::{parse_header, write_header, Header, MetaValue};

use crate::files::RepoFile;

/// The committed header-only file: 292 tensors, 4,912,898,304 bytes of tensor data.
const LLAMA_Q4_K_M: &[u8] =
    include_bytes!("../../gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");

/// The committed Q4_K_M header, parsed.
pub fn llama_q4_k_m() -> Header {
    parse_header(LLAMA_Q4_K_M).expect("the gguf crate's committed fixture parses")
}

/// A GGUF file of `header`: its header bytes, then zeros up to the size its tensors need.
pub fn gguf_file(path: &str, header: &Header) -> RepoFile {
    let head = write_header(header);
    let reread = parse_header(&head).expect("written headers parse");
    RepoFile {
        path: path.to_string(),
        size: reread.expected_file_size().expect("sizes fit"),
        tensor_bytes: reread.tensor_bytes_total().expect("sizes fit"),
        head,
        parameters: Default::default(),
    }
}

/// `header` split into `count` files of about equal tensor bytes under `prefix`
/// (`…-00001-of-00002.gguf`), as `--split-max-size` would cut it.
pub fn split(prefix: &str, header: &Header, count: u16) -> Vec<RepoFile> {
    let total: u64 = header.tensors.iter().filter_map(|t| t.bytes()).sum();
    let mut parts: Vec<Header> = (0..count)
        .map(|no| {
            let mut metadata = if no == 0 {
                header.metadata.clone()
            } else {
                vec![]
            };
            metadata.push(("split.no".into(), MetaValue::U16(no)));
            metadata.push(("split.count".into(), MetaValue::U16(count)));
            let n = header.tensors.len() as i32;
            metadata.push(("split.tensors.count".into(), MetaValue::I32(n)));
            Header {
                version: header.version,
                alignment: 0,
                metadata,
                tensors: vec![],
                data_offset: 0,
            }
        })
        .collect();
    let mut start = 0u64;
    for tensor in &header.tensors {
        let k = (start * u64::from(count) / total.max(1)).min(u64::from(count) - 1);
        parts[k as usize].tensors.push(tensor.clone());
        start += tensor.bytes().unwrap_or(0);
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| gguf_file(&format!("{prefix}-{:05}-of-{count:05}.gguf", i + 1), part))
        .collect()
}
