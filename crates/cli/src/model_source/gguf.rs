//! GGUF files: a local `--gguf FILE` or a quant of a Hub repo (`--hf REPO:QUANT`, as llama.cpp's
//! `-hf` takes it). Only headers are read: a first slice, then what the parser asks for. A file
//! `gguf-split` cut into shards (`…-00001-of-00003.gguf`) is read whole: the first shard's keys
//! and every shard's tensors.

use super::{Files, LocalDir};
use std::path::Path;
use vramfit_engine::model::{self, GgufModel, GGUF_FIRST_READ_BYTES};
use vramfit_gguf::{parse_header, ParseError};

/// Reads a local file and, when it is the first shard of a split file, the shards beside it.
pub fn read_local(path: &Path) -> Result<GgufModel, String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = LocalDir(dir.unwrap_or(Path::new(".")).to_path_buf());
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{} is not a file name", path.display()))?;
    read_files(&dir, &shards(name))
}

/// The shards of a split file, named as gguf-split names them, from its first; else the file.
pub fn shards(name: &str) -> Vec<String> {
    let split = name
        .strip_suffix(".gguf")
        .and_then(|stem| stem.rsplit_once("-00001-of-"))
        .and_then(|(base, count)| {
            (count.len() == 5).then(|| count.parse::<u32>().ok().map(|n| (base, n)))?
        });
    match split {
        Some((base, count)) => (1..=count)
            .map(|i| format!("{base}-{i:05}-of-{count:05}.gguf"))
            .collect(),
        None => vec![name.to_string()],
    }
}

/// Every shard's header, read from `files`.
pub fn read_files(files: &dyn Files, shards: &[String]) -> Result<GgufModel, String> {
    let origin = files.origin();
    let prefixes = shards
        .iter()
        .map(|shard| read_prefix(files, shard))
        .collect::<Result<Vec<_>, _>>()?;
    let others: Vec<&[u8]> = prefixes[1..].iter().map(Vec::as_slice).collect();
    model::read_gguf_split(&prefixes[0], &others)
        .map_err(|e| format!("{origin}/{}: {e}", shards[0]))
}

/// The first bytes of a shard that hold its whole header.
fn read_prefix(files: &dyn Files, shard: &str) -> Result<Vec<u8>, String> {
    let shown = format!("{}/{shard}", files.origin());
    let mut bytes = files.read_range(shard, 0, GGUF_FIRST_READ_BYTES as u64)?;
    loop {
        match parse_header(&bytes) {
            Ok(_) => return Ok(bytes),
            Err(ParseError::Truncated { needed_at_least })
                if needed_at_least > bytes.len() as u64
                    && bytes.len() as u64 >= GGUF_FIRST_READ_BYTES as u64 =>
            {
                let have = bytes.len() as u64;
                let want = needed_at_least.max(have.saturating_mul(2));
                let more = files.read_range(shard, have, want - have)?;
                if more.is_empty() {
                    return Err(truncated(&shown, have, needed_at_least));
                }
                bytes.extend(more);
            }
            Err(ParseError::Truncated { needed_at_least }) => {
                return Err(truncated(&shown, bytes.len() as u64, needed_at_least))
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        }
    }
}

fn truncated(shown: &str, have: u64, needed: u64) -> String {
    format!("{shown} ends after {have} bytes but its header needs {needed}: the file is incomplete; download it again")
}

/// The shards of a repo's file for `quant` (`Q4_K_M`, any letter case), among its files; the
/// multimodal projector (`mmproj…`) is never the model.
pub fn pick_quant(files: &[String], quant: &str) -> Result<Vec<String>, String> {
    let wanted = quant.to_ascii_lowercase();
    let mut matching: Vec<&String> = files
        .iter()
        .filter(|f| f.ends_with(".gguf"))
        .filter(|f| {
            let name = f.rsplit('/').next().unwrap_or(f).to_ascii_lowercase();
            !name.starts_with("mmproj") && f.to_ascii_lowercase().contains(&wanted)
        })
        .collect();
    matching.sort();
    let first = matching
        .iter()
        .find(|f| !f.contains("-of-") || f.contains("-00001-of-"))
        .ok_or_else(|| {
            let quants: Vec<&str> = files
                .iter()
                .filter(|f| f.ends_with(".gguf"))
                .map(|f| f.as_str())
                .collect();
            format!(
                "no .gguf file for {quant}; the repo has: {}",
                quants.join(", ")
            )
        })?;
    let (dir, name) = match first.rsplit_once('/') {
        Some((dir, name)) => (format!("{dir}/"), name),
        None => (String::new(), first.as_str()),
    };
    Ok(shards(name)
        .into_iter()
        .map(|s| format!("{dir}{s}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_files_name_their_shards() {
        assert_eq!(shards("m-Q4_K_M.gguf"), ["m-Q4_K_M.gguf"]);
        assert_eq!(
            shards("m-Q4_K_M-00001-of-00002.gguf"),
            [
                "m-Q4_K_M-00001-of-00002.gguf",
                "m-Q4_K_M-00002-of-00002.gguf"
            ]
        );
    }

    #[test]
    fn a_quant_picks_its_file_not_the_projector() {
        let files: Vec<String> = [
            "README.md",
            "mmproj-Q4_K_M.gguf",
            "Model-Q8_0.gguf",
            "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf",
            "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            pick_quant(&files, "q4_k_m").unwrap(),
            [
                "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf",
                "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf"
            ]
        );
        assert_eq!(pick_quant(&files, "Q8_0").unwrap(), ["Model-Q8_0.gguf"]);
        assert!(pick_quant(&files, "IQ2_XS")
            .unwrap_err()
            .contains("Model-Q8_0.gguf"));
    }
}
