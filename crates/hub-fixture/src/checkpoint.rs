//! A checkpoint repository: its files, its commit, whether it is gated, and the published
//! figures it is checked against; plus the builders that shard a tensor list into safetensors
//! files with an index, as `save_pretrained` does.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use vramfit_safetensors::{write_header, Header};

use crate::files::RepoFile;
use crate::model::{tensor_bytes, Tensor};

/// The Hub's `gated` field: `false`, `"auto"` or `"manual"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gated {
    No,
    Auto,
    Manual,
}

impl Gated {
    /// The JSON value the model API returns.
    pub fn json(self) -> Value {
        match self {
            Gated::No => Value::Bool(false),
            Gated::Auto => "auto".into(),
            Gated::Manual => "manual".into(),
        }
    }
}

/// A published figure and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Total parameters as the publisher states them (may be rounded, such as 21B).
    pub params: Option<u64>,
    /// The tensor bytes of the checkpoint, where a published figure was found.
    pub tensor_bytes: Option<u64>,
    /// Where the figures come from.
    pub source: &'static str,
}

/// One repository of the fixture Hub.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// `org/name`.
    pub repo: &'static str,
    /// The 40-hex commit `main` points to.
    pub sha: &'static str,
    /// What it exercises, such as "bf16 dense, 4 shards".
    pub format: &'static str,
    pub gated: Gated,
    pub files: Vec<RepoFile>,
    pub published: Published,
    /// What differs from the real repository, and why.
    pub notes: &'static str,
}

impl Checkpoint {
    /// The file at `path`.
    pub fn file(&self, path: &str) -> Option<&RepoFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Tensor bytes over all weight files.
    pub fn tensor_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.tensor_bytes).sum()
    }

    /// Element counts per dtype over all safetensors files (the Hub's `safetensors` field).
    pub fn parameters(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for (dtype, n) in self.files.iter().flat_map(|f| &f.parameters) {
            *all.entry(dtype.clone()).or_insert(0) += n;
        }
        all
    }

    /// `org` and `name`.
    pub fn org_name(&self) -> (&str, &str) {
        self.repo.split_once('/').unwrap_or(("", self.repo))
    }
}

/// One safetensors file holding `tensors` in order, with `__metadata__` `{"format": "pt"}` as
/// transformers writes it.
pub fn safetensors_file(path: &str, tensors: Vec<Tensor>) -> RepoFile {
    let mut parameters = BTreeMap::new();
    for (_, dtype, shape) in &tensors {
        *parameters.entry(dtype.name().to_string()).or_insert(0) += shape.iter().product::<u64>();
    }
    let bytes = tensor_bytes(&tensors);
    let metadata = vec![("format".to_string(), "pt".to_string())];
    let header = Header::lay_out(tensors, metadata).expect("fixture tensors are whole bytes");
    RepoFile {
        path: path.to_string(),
        head: write_header(&header),
        size: header.file_len(),
        tensor_bytes: bytes,
        parameters,
    }
}

/// `tensors` split in order into `shards` files of about equal size, named as transformers names
/// them (`model-00001-of-00004.safetensors`), and `model.safetensors.index.json` with
/// `metadata.total_size` (the tensor bytes unless `total_size` overrides it, for repositories
/// whose published index overstates) and a `weight_map` sorted by name, as `json.dumps(…,
/// sort_keys=True)` writes it. One shard gives a lone `model.safetensors` and no index.
pub fn sharded(tensors: Vec<Tensor>, shards: u64, total_size: Option<u64>) -> Vec<RepoFile> {
    if shards <= 1 {
        return vec![safetensors_file("model.safetensors", tensors)];
    }
    let total = tensor_bytes(&tensors).max(1);
    let mut groups: Vec<Vec<Tensor>> = vec![Vec::new(); shards as usize];
    let mut start = 0u64;
    for tensor in tensors {
        let bytes = tensor_bytes(std::slice::from_ref(&tensor));
        let k = ((u128::from(start) * u128::from(shards)) / u128::from(total)) as usize;
        groups[k.min(shards as usize - 1)].push(tensor);
        start += bytes;
    }
    let mut weight_map = BTreeMap::new();
    let mut files = Vec::new();
    for (i, group) in groups.into_iter().enumerate() {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", i + 1);
        for (tensor, ..) in &group {
            weight_map.insert(tensor.clone(), name.clone());
        }
        files.push(safetensors_file(&name, group));
    }
    let sum = files.iter().map(|f| f.tensor_bytes).sum::<u64>();
    let index = json!({
        "metadata": {"total_size": total_size.unwrap_or(sum)},
        "weight_map": weight_map,
    });
    let text = serde_json::to_string_pretty(&index).expect("JSON") + "\n";
    files.insert(
        0,
        RepoFile::small("model.safetensors.index.json", text.into_bytes()),
    );
    files
}

/// A real `config.json` with a `quantization_config` block put in first, for quantized
/// releases whose own config.json was not found: the shape keys stay the base model's bytes.
pub fn with_quantization(config: &str, block: &Value) -> String {
    let body = config.trim_start().strip_prefix('{').unwrap_or(config);
    let block = serde_json::to_string_pretty(block)
        .expect("JSON")
        .replace('\n', "\n  ");
    format!("{{\n  \"quantization_config\": {block},{body}")
}
