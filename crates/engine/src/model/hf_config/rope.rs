//! The RoPE tables a config implies: how many positions vLLM's `get_rope` (and SGLang's copy of
//! it) precompute for each rotary embedding the model builds, and how wide each is.
//!
//! vLLM (vllm/model_executor/layers/rotary_embedding/, `_compute_cos_sin_cache` of each class)
//! builds `max_position_embeddings` positions for the default, Llama 3 and multimodal RoPE,
//! `max_position × factor` for linear and dynamic-NTK scaling, `original_max_position_embeddings
//! × factor` for YaRN (DeepSeek's too), and Phi-3's LongRoPE keeps its short table
//! (`original_max_position_embeddings`) beside the long one. Gemma 3's sliding layers build a
//! second, unscaled table with their own base (`rope_local_base_freq`; vllm/model_executor/
//! models/gemma3.py). `get_rope` caches by configuration, so layers sharing one share its table.

use super::keys::Keys;
use crate::model::Rope;
use serde_json::{Map, Value};

/// Families whose positions are learned or ALiBi, or absent: no rotary table.
const NO_ROPE_FAMILIES: &[&str] = &["gpt2", "bert", "opt", "gpt_bigcode", "bloom", "mpt"];

pub(super) fn rope(keys: &Keys, head_dim: u32, warnings: &mut Vec<String>) -> Rope {
    // Falcon's `alibi: true` variants (falcon-rw) have no rotary embedding.
    if NO_ROPE_FAMILIES.contains(&keys.family()) || keys.flag(&["alibi"]) == Some(true) {
        return Rope::default();
    }
    let Some(max_positions) = keys.positive(&["max_position_embeddings"]) else {
        warnings.push(
            "max_position_embeddings: not given, so the RoPE cos/sin table vLLM and SGLang \
             precompute is not counted (set rope-positions)"
                .to_string(),
        );
        return Rope::default();
    };
    // transformers v5 writes `rope_parameters` beside a null `rope_scaling`.
    let scaling = keys
        .object(&["rope_scaling"])
        .or_else(|| keys.object(&["rope_parameters"]));
    let setting = |name: &str| scaling.and_then(|s| s.get(name));
    let kind = setting("rope_type")
        .or_else(|| setting("type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    let factor = setting("factor").and_then(Value::as_f64).unwrap_or(1.0);
    let original = setting("original_max_position_embeddings")
        .and_then(Value::as_f64)
        .unwrap_or(f64::from(max_positions));
    let max = f64::from(max_positions);
    let positions = match kind {
        "linear" | "dynamic" => max * factor,
        "yarn" | "deepseek_yarn" => original * factor,
        "longrope" | "su" => original + max,
        "default" | "llama3" | "mrope" | "ntk" => max,
        other => {
            warnings.push(format!(
                "rope_scaling type {other}: its table is counted at max_position_embeddings \
                 ({max_positions} positions)"
            ));
            max
        }
    };
    Rope {
        positions: to_positions(positions),
        // Every Gemma 3 sliding layer builds its own unscaled RoPE; vLLM's Gemma 3 reads
        // `rope_local_base_freq` whatever the file says, so the second table is always there.
        local_positions: if keys.family() == "gemma3_text" {
            max_positions
        } else {
            0
        },
        dim: partial_width(keys, scaling, head_dim),
    }
}

/// The width rotated when it is part of the head: `partial_rotary_factor` (Phi, GLM, Qwen3-Next,
/// Qwen3.5, in the config or its `rope_parameters`), GPT-NeoX's `rotary_pct`, GPT-J's
/// `rotary_dim`; 0 for the whole head.
fn partial_width(keys: &Keys, scaling: Option<&Map<String, Value>>, head_dim: u32) -> u32 {
    let fraction = keys
        .value(&["partial_rotary_factor", "rotary_pct"])
        .or_else(|| scaling.and_then(|s| s.get("partial_rotary_factor")))
        .and_then(Value::as_f64);
    let width = match fraction {
        Some(f) if f > 0.0 && f < 1.0 => (f64::from(head_dim) * f) as u32,
        _ => keys.positive(&["rotary_dim"]).unwrap_or(0),
    };
    if width >= head_dim {
        0
    } else {
        width
    }
}

fn to_positions(positions: f64) -> u32 {
    positions.clamp(0.0, f64::from(u32::MAX)) as u32
}
