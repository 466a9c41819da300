//! The model API's JSON (`GET /api/models/{repo_id}`), in the shape huggingface_hub's
//! `ModelInfo` and huggingface.js' `ApiModelInfo` read it:
//!
//! - `gated` is `false`, `"auto"` or `"manual"`; `safetensors` is
//!   `{"parameters": {dtype: count}, "total": n}`; `siblings` is `[{"rfilename"}]`, with `size`,
//!   `blobId` and `lfs: {sha256, size, pointerSize}` when `blobs=true` is asked
//!   (huggingface/huggingface_hub@ee0a4510f4bc15e26cb722be2efc2bdb01383ca0:
//!   src/huggingface_hub/hf_api.py `ModelInfo.__init__`, `model_info`;
//!   huggingface/huggingface.js@10436c767b2ff9facfa779a4b8435d192e4412af:
//!   packages/hub/src/types/api/api-model.ts).
//! - `gguf` is `{"total": parameters, "architecture", "context_length"}` as the Hub returns it for
//!   ggml-org/gemma-3-1b-it-GGUF (an API dump in a public file, code index id 63360925110).
//! - `expand=…` (repeatable, also `expand[]=…`) limits the answer to `_id`, `id` and the fields
//!   asked for; an unknown field is a 400, as on the Hub.

use serde_json::{json, Map, Value};
use vramfit_gguf::parse_header;

use crate::checkpoint::Checkpoint;
use crate::files::RepoFile;

/// The fields `expand` may ask for here (the Hub has more; these are the ones fixtures fill).
pub const EXPANDABLE: [&str; 14] = [
    "author",
    "config",
    "disabled",
    "downloads",
    "gated",
    "gguf",
    "library_name",
    "likes",
    "pipeline_tag",
    "private",
    "safetensors",
    "sha",
    "siblings",
    "usedStorage",
];

/// The model info of `ckpt`: every field, or `_id`, `id` and the `expand`ed ones.
/// `Err(field)` names an `expand` value that is not a field.
pub fn model_info(ckpt: &Checkpoint, expand: &[&str], blobs: bool) -> Result<Value, String> {
    if let Some(bad) = expand.iter().find(|e| !EXPANDABLE.contains(e)) {
        return Err(bad.to_string());
    }
    let all = full_info(ckpt, blobs);
    if expand.is_empty() {
        return Ok(Value::Object(all));
    }
    let mut some = Map::new();
    for key in ["_id", "id"].iter().chain(expand) {
        if let Some(v) = all.get(*key) {
            some.insert(key.to_string(), v.clone());
        }
    }
    Ok(Value::Object(some))
}

fn full_info(ckpt: &Checkpoint, blobs: bool) -> Map<String, Value> {
    let (author, _) = ckpt.org_name();
    let is_gguf = ckpt.files.iter().any(|f| f.path.ends_with(".gguf"));
    let mut info = json!({
        "_id": &ckpt.sha[..24],
        "id": ckpt.repo,
        "modelId": ckpt.repo,
        "author": author,
        "sha": ckpt.sha,
        "private": false,
        "disabled": false,
        "gated": ckpt.gated.json(),
        "downloads": 0,
        "likes": 0,
        "library_name": if is_gguf { "gguf" } else { "transformers" },
        "pipeline_tag": "text-generation",
        "tags": [if is_gguf { "gguf" } else { "safetensors" }],
        "siblings": ckpt.files.iter().map(|f| sibling(f, blobs)).collect::<Vec<_>>(),
        "usedStorage": ckpt.files.iter().map(|f| f.size).sum::<u64>(),
    });
    let map = info.as_object_mut().expect("an object");
    if let Some(config) = config_summary(ckpt) {
        map.insert("config".into(), config);
    }
    let parameters = ckpt.parameters();
    if !parameters.is_empty() {
        let total: u64 = parameters.values().sum();
        map.insert(
            "safetensors".into(),
            json!({"parameters": parameters, "total": total}),
        );
    }
    if let Some(gguf) = ckpt.files.iter().find_map(gguf_summary) {
        map.insert("gguf".into(), gguf);
    }
    std::mem::take(map)
}

fn sibling(file: &RepoFile, blobs: bool) -> Value {
    if !blobs {
        return json!({"rfilename": file.path});
    }
    let mut s = json!({"rfilename": file.path, "size": file.size, "blobId": &file.etag()[..40]});
    if file.is_lfs() {
        s["lfs"] = json!({"sha256": file.etag(), "size": file.size, "pointerSize": 134});
    }
    s
}

/// The Hub's `config` field: a few keys of config.json.
fn config_summary(ckpt: &Checkpoint) -> Option<Value> {
    let config: Value = serde_json::from_slice(&ckpt.file("config.json")?.head).ok()?;
    let mut out = Map::new();
    for key in ["architectures", "model_type", "quantization_config"] {
        if let Some(v) = config.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Some(Value::Object(out))
}

/// The `gguf` field of the first GGUF file that has the architecture keys (the first split).
fn gguf_summary(file: &RepoFile) -> Option<Value> {
    let header = parse_header(&file.head).ok()?;
    let arch = header.architecture()?.to_string();
    let total: u64 = header.tensors.iter().filter_map(|t| t.elements()).sum();
    Some(json!({
        "total": total,
        "architecture": arch,
        "context_length": header.arch_u64("context_length"),
    }))
}
