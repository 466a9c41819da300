//! Where a model comes from when it is not a preset: a checkpoint directory (`--model-dir`) or a
//! Hugging Face repo (`--hf REPO[@REVISION]`), read from the local HF cache first and then from
//! the Hub. Only config.json and the safetensors headers are read, never the tensors' data; what
//! they give is applied as scenario fields, as a pasted config.json is.

mod cache;
mod gguf;
mod hub;

use std::path::{Path, PathBuf};
use vramfit_engine::model::{self, Checkpoint, HfConfig};
use vramfit_safetensors::{parse_header, ParseError, TensorInfo, HEADER_LENGTH_BYTES};

pub use gguf::read_local as read_gguf;
pub use hub::HubRepo;

/// A place that holds a checkpoint's files, read by name and by byte range, from a few threads at
/// once.
trait Files: Sync {
    /// Where the files are, for messages.
    fn origin(&self) -> String;
    /// A whole small file (config.json, the index); `Ok(None)` when there is no such file.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, String>;
    /// `len` bytes from `start` of a large file.
    fn read_range(&self, name: &str, start: u64, len: u64) -> Result<Vec<u8>, String>;
    /// Every file, by its path in the repo.
    fn list(&self) -> Result<Vec<String>, String>;
}

/// How many shards' headers are read at once: enough to hide the Hub's latency, few enough to be
/// polite to it.
const HEADERS_IN_FLIGHT: usize = 4;

/// What a checkpoint gave: the config and the tensors.
pub struct ReadModel {
    pub origin: String,
    pub config: HfConfig,
    pub checkpoint: Checkpoint,
    /// Header bytes read, over every shard.
    pub header_bytes: u64,
}

impl ReadModel {
    /// The scenario fields: the config's shape and format, then the checkpoint's tensors.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![("model", String::new()), ("params", String::new())];
        pairs.extend(self.config.pairs());
        pairs.extend(self.checkpoint.pairs());
        pairs
    }

    /// What to tell the user on stderr: the summary, then each warning.
    pub fn messages(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{}: {} {} ({} B of headers read)",
            self.origin,
            self.config.summary(),
            self.checkpoint.summary(),
            self.header_bytes
        )];
        lines.extend(self.config.warnings.iter().cloned());
        if !self.config.defaults_used.is_empty() {
            lines.push(format!(
                "not in config.json, taken from the {} defaults: {}",
                self.config.model_type.as_deref().unwrap_or("family"),
                self.config.defaults_used.join(", ")
            ));
        }
        lines.extend(self.checkpoint.warnings.iter().cloned());
        lines
    }
}

/// Reads a local checkpoint directory.
pub fn read_dir(dir: &Path) -> Result<ReadModel, String> {
    read_model(&LocalDir(dir.to_path_buf()))
}

/// What a Hub repo gave: a safetensors checkpoint, or one quant of a GGUF repo.
pub enum HubModel {
    Checkpoint(ReadModel),
    Gguf(model::GgufModel),
}

impl HubModel {
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        match self {
            HubModel::Checkpoint(read) => read.pairs(),
            HubModel::Gguf(file) => file.pairs(),
        }
    }

    pub fn messages(&self) -> Vec<String> {
        match self {
            HubModel::Checkpoint(read) => read.messages(),
            HubModel::Gguf(file) => std::iter::once(file.summary())
                .chain(file.warnings.iter().cloned())
                .collect(),
        }
    }
}

/// Reads a Hub repo: from the HF cache when it holds the revision's files, else from the Hub
/// (never under `HF_HUB_OFFLINE=1`).
pub fn read_hub(repo: &HubRepo) -> Result<HubModel, String> {
    let env = hub::Env::from_process();
    let read = |files: &dyn Files| match &repo.quant {
        Some(quant) => {
            let shards = gguf::pick_quant(&files.list()?, quant)?;
            gguf::read_files(files, &shards).map(HubModel::Gguf)
        }
        None => read_model(files).map(HubModel::Checkpoint),
    };
    if let Some(dir) = cache::snapshot(&env.hub_cache(), repo) {
        let cached = read(&LocalDir(dir));
        if cached.is_ok() || env.offline {
            return cached;
        }
    } else if env.offline {
        return Err(format!(
            "{repo} is not in the HF cache ({}) and HF_HUB_OFFLINE is set, so the Hub is not asked",
            env.hub_cache().display()
        ));
    }
    read(&hub::Remote::new(env, repo.clone())?)
}

fn read_model(files: &dyn Files) -> Result<ReadModel, String> {
    let origin = files.origin();
    let config = files
        .read("config.json")?
        .ok_or_else(|| format!("{origin} has no config.json"))?;
    let config = String::from_utf8_lossy(&config);
    let config = model::parse_hf_config(&config).map_err(|e| format!("{origin}: {e}"))?;
    let shards = shard_names(files)?;
    if shards.len() > HEADERS_IN_FLIGHT {
        eprintln!("vramfit: {origin}: reading {} headers", shards.len());
    }
    let mut tensors = Vec::new();
    let mut header_bytes = 0;
    for batch in shards.chunks(HEADERS_IN_FLIGHT) {
        let read: Vec<_> = std::thread::scope(|scope| {
            let reads: Vec<_> = batch
                .iter()
                .map(|shard| scope.spawn(|| read_header(files, shard)))
                .collect();
            reads.into_iter().map(|r| r.join()).collect()
        });
        for result in read {
            let (read, bytes) = result.map_err(|_| format!("{origin}: a header read failed"))??;
            header_bytes += bytes;
            tensors.extend(read);
        }
    }
    let format = config.weights.unwrap_or_else(|| dominant_format(&tensors));
    let checkpoint = model::read_checkpoint(&tensors, config.arch.layers, format)
        .map_err(|e| format!("{origin}: {e}"))?;
    Ok(ReadModel {
        origin,
        config,
        checkpoint,
        header_bytes,
    })
}

/// The shards: the index's files, else `model.safetensors`, else every `.safetensors` file.
fn shard_names(files: &dyn Files) -> Result<Vec<String>, String> {
    let origin = files.origin();
    if let Some(index) = files.read("model.safetensors.index.json")? {
        let index: serde_json::Value = serde_json::from_slice(&index)
            .map_err(|e| format!("{origin}: model.safetensors.index.json is not JSON: {e}"))?;
        let map = index
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| format!("{origin}: model.safetensors.index.json has no weight_map"))?;
        let mut names: Vec<String> = map
            .values()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        return Ok(names);
    }
    let names: Vec<String> = files
        .list()?
        .into_iter()
        .filter(|n| n.ends_with(".safetensors") && !n.contains('/'))
        .collect();
    if names.is_empty() {
        return Err(format!(
            "{origin} has no safetensors weights (no model.safetensors or index); for a GGUF file use --gguf"
        ));
    }
    Ok(names)
}

/// One shard's header in two reads: its length, then the JSON.
fn read_header(files: &dyn Files, shard: &str) -> Result<(Vec<TensorInfo>, u64), String> {
    let origin = files.origin();
    let length = files.read_range(shard, 0, HEADER_LENGTH_BYTES)?;
    let mut prefix = length.clone();
    let needed = match parse_header(&prefix) {
        Err(ParseError::Truncated { needed }) => needed,
        Err(e) => return Err(format!("{origin}/{shard}: {e}")),
        Ok(header) => return Ok((header.tensors, prefix.len() as u64)),
    };
    let rest = needed.saturating_sub(prefix.len() as u64);
    prefix.extend(files.read_range(shard, prefix.len() as u64, rest)?);
    let header = parse_header(&prefix).map_err(|e| format!("{origin}/{shard}: {e}"))?;
    Ok((header.tensors, prefix.len() as u64))
}

/// The format most of the bytes are in, for a config that names none.
fn dominant_format(tensors: &[TensorInfo]) -> vramfit_engine::dtype::Dtype {
    use vramfit_engine::dtype::Dtype;
    use vramfit_safetensors::Dtype as St;
    let mut by_format: Vec<(Dtype, u64)> = Vec::new();
    for t in tensors {
        let format = match t.dtype {
            St::F32 => Dtype::Fp32,
            St::F16 => Dtype::Fp16,
            St::F8_E4M3 | St::F8_E5M2 => Dtype::Fp8,
            _ => Dtype::Bf16,
        };
        match by_format.iter_mut().find(|(f, _)| *f == format) {
            Some((_, bytes)) => *bytes += t.bytes(),
            None => by_format.push((format, t.bytes())),
        }
    }
    by_format
        .into_iter()
        .max_by_key(|(_, bytes)| *bytes)
        .map_or(Dtype::Bf16, |(f, _)| f)
}

/// A checkpoint directory on disk (the HF cache's snapshots are ones too).
struct LocalDir(PathBuf);

impl Files for LocalDir {
    fn origin(&self) -> String {
        self.0.display().to_string()
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        match std::fs::read(self.0.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {}: {e}", self.0.join(name).display())),
        }
    }

    fn read_range(&self, name: &str, start: u64, len: u64) -> Result<Vec<u8>, String> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.0.join(name);
        let fail = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        let mut file = std::fs::File::open(&path).map_err(fail)?;
        file.seek(SeekFrom::Start(start)).map_err(fail)?;
        let mut bytes = Vec::new();
        file.take(len).read_to_end(&mut bytes).map_err(fail)?;
        Ok(bytes)
    }

    fn list(&self) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        list_into(&self.0, "", &mut names)
            .map_err(|e| format!("cannot read {}: {e}", self.0.display()))?;
        names.sort();
        Ok(names)
    }
}

/// The files under `dir`, and one level of folders below it (a GGUF repo's `Q4_K_M/`).
fn list_into(dir: &Path, prefix: &str, names: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let path = entry.path();
        if path.is_dir() && prefix.is_empty() {
            list_into(&path, &format!("{name}/"), names)?;
        } else if path.is_file() {
            names.push(format!("{prefix}{name}"));
        }
    }
    Ok(())
}
