//! A repository file as the fixture Hub holds it: the bytes that matter (a whole small file, or
//! a weights file's header) and the length the file has, the rest being zeros produced on the
//! fly, so a 60 GB checkpoint costs a few megabytes of headers.

use std::collections::BTreeMap;
use std::io::{self, Write};

/// Files the Hub stores in LFS/Xet and answers with a redirect to its CDN. The Hub decides by
/// `.gitattributes`; these are the extensions its default one tracks that fixtures use.
const LFS_EXTENSIONS: [&str; 3] = [".safetensors", ".gguf", ".bin"];

/// One file of a checkpoint repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Path in the repository, such as `model-00001-of-00004.safetensors`.
    pub path: String,
    /// The file's first bytes: all of a small file, the header of a weights file.
    pub head: Vec<u8>,
    /// The file's length; bytes past `head` are zeros.
    pub size: u64,
    /// Bytes of tensor data it holds (0 for JSON files).
    pub tensor_bytes: u64,
    /// Element counts per safetensors dtype name (`BF16`, `I32`, …), as the Hub's
    /// `safetensors.parameters` counts them; empty for other files.
    pub parameters: BTreeMap<String, u64>,
}

impl RepoFile {
    /// A small file held whole.
    pub fn small(path: &str, bytes: Vec<u8>) -> RepoFile {
        RepoFile {
            path: path.to_string(),
            size: bytes.len() as u64,
            head: bytes,
            tensor_bytes: 0,
            parameters: BTreeMap::new(),
        }
    }

    /// Whether the Hub serves it from LFS/Xet storage (a 302 to the CDN).
    pub fn is_lfs(&self) -> bool {
        LFS_EXTENSIONS.iter().any(|ext| self.path.ends_with(ext))
    }

    /// The ETag the Hub gives it: an LFS file's is the SHA-256 of its content (64 hex), a
    /// git-stored file's its git blob id (40 hex). Hashing gigabytes of zeros to get the real
    /// ones is pointless here, so these are stable stand-ins of the same form, derived from the
    /// path, size and head.
    pub fn etag(&self) -> String {
        let width = if self.is_lfs() { 4 } else { 3 };
        let mut hex = String::new();
        for seed in 0..width {
            let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
            let size = self.size.to_le_bytes();
            for &b in self.path.as_bytes().iter().chain(&size).chain(&self.head) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            hex.push_str(&format!("{h:016x}"));
        }
        hex.truncate(if self.is_lfs() { 64 } else { 40 });
        hex
    }

    /// Writes bytes `start..end` of the file to `out` in chunks, returning how many were
    /// written before `out` failed or the range ended.
    pub fn write_range(&self, out: &mut impl Write, start: u64, end: u64) -> (u64, io::Result<()>) {
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        let mut pos = start;
        let end = end.min(self.size);
        while pos < end {
            let head_len = self.head.len() as u64;
            let chunk: &[u8] = if pos < head_len {
                &self.head[pos as usize..end.min(head_len) as usize]
            } else {
                &ZEROS[..(end - pos).min(ZEROS.len() as u64) as usize]
            };
            if let Err(e) = out.write_all(chunk) {
                return (pos - start, Err(e));
            }
            pos += chunk.len() as u64;
        }
        (pos - start, Ok(()))
    }
}
