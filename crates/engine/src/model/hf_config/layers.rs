//! What kind each layer is: full or windowed attention, a recurrent mixer, or a block without
//! attention or without an MLP. Read from an explicit per-layer list where the config has one,
//! else from the family's rule in transformers.

use super::keys::{Keys, GATED_DELTA_NET_FAMILIES};
use serde_json::Value;

/// The per-layer kinds, counted.
#[derive(Debug, Default)]
pub(super) struct LayerKinds {
    /// The layer count, when a per-layer list gives it (NemotronH deprecates `num_hidden_layers`).
    pub layers: Option<u32>,
    /// Layers attending within a window (sliding or chunked) and the window in tokens.
    pub windowed: u32,
    pub window: u32,
    pub recurrent: u32,
    pub no_attention: u32,
    pub no_mlp: u32,
    /// Layers whose MLP is dense in a mixture of experts (NemotronH's `-` blocks).
    pub dense_mlp: Option<u32>,
}

/// Reads the layer kinds. `layers` is `num_hidden_layers` where given.
pub(super) fn layer_kinds(
    keys: &Keys,
    layers: Option<u32>,
    warnings: &mut Vec<String>,
) -> LayerKinds {
    if let Some(pattern) = keys.text(&["hybrid_override_pattern"]) {
        return block_pattern(pattern.chars().map(block_of_char), warnings);
    }
    if let Some(blocks) = keys.list(&["layers_block_type"]) {
        return block_pattern(
            blocks
                .iter()
                .map(|b| block_of_name(b.as_str().unwrap_or(""))),
            warnings,
        );
    }
    if let Some(types) = keys.list(&["layer_types"]) {
        return attention_types(keys, types, warnings);
    }
    let mut kinds = LayerKinds::default();
    let Some(layers) = layers else {
        return kinds;
    };
    let family = keys.family();
    let (windowed, window_keys): (u32, &[&str]) = match family {
        // Gemma 2 and gpt-oss alternate, starting with a windowed layer.
        "gemma2" | "gpt_oss" => (layers.div_ceil(2), &["sliding_window"]),
        // Gemma 3: every `sliding_window_pattern`-th layer is global.
        "gemma3_text" => {
            let pattern = keys.positive(&["sliding_window_pattern"]).unwrap_or(6);
            (layers - layers / pattern, &["sliding_window"])
        }
        // Llama 4: every 4th layer is a global NoPE layer, the rest attend within chunks.
        "llama4_text" => {
            let global = match keys.list(&["no_rope_layers"]) {
                Some(flags) => flags.iter().filter(|f| f.as_u64() == Some(0)).count() as u32,
                None => layers / 4,
            };
            (layers.saturating_sub(global), &["attention_chunk_size"])
        }
        // Qwen2/Qwen3 window only with `use_sliding_window`, from `max_window_layers` on.
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" | "qwen2_5_vl" => {
            if keys.flag(&["use_sliding_window"]) == Some(true) {
                let from = keys.count(&["max_window_layers"]).unwrap_or(layers);
                (layers.saturating_sub(from), &["sliding_window"])
            } else {
                (0, &[])
            }
        }
        family if GATED_DELTA_NET_FAMILIES.contains(&family) => {
            let interval = keys.positive(&["full_attention_interval"]).unwrap_or(4);
            let linear = layers - layers / interval;
            kinds.recurrent = linear;
            kinds.no_attention = linear;
            (0, &[])
        }
        _ => {
            if keys.given(&["sliding_window"]) {
                warnings.push(
                    "sliding_window: no layer_types say which layers use it, so every layer is \
                     counted as windowed"
                        .to_string(),
                );
                (layers, &["sliding_window"])
            } else {
                (0, &[])
            }
        }
    };
    let window = if window_keys.is_empty() {
        0
    } else {
        keys.count(window_keys).unwrap_or(0)
    };
    if window > 0 {
        kinds.windowed = windowed;
        kinds.window = window;
    }
    kinds
}

/// One block of a hybrid pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Recurrent,
    Attention,
    Mlp,
    Moe,
    Unknown,
}

/// NemotronH's `hybrid_override_pattern`: `M` Mamba-2, `*` attention, `-` MLP, `E` experts.
fn block_of_char(c: char) -> BlockKind {
    match c {
        'M' => BlockKind::Recurrent,
        '*' => BlockKind::Attention,
        '-' => BlockKind::Mlp,
        'E' => BlockKind::Moe,
        _ => BlockKind::Unknown,
    }
}

/// The newer `layers_block_type` list's names.
fn block_of_name(name: &str) -> BlockKind {
    match name {
        "mamba" => BlockKind::Recurrent,
        "attention" => BlockKind::Attention,
        "mlp" => BlockKind::Mlp,
        "moe" => BlockKind::Moe,
        _ => BlockKind::Unknown,
    }
}

/// Counts a pattern of single-purpose blocks: each is a mixer (recurrent or attention) or an MLP.
fn block_pattern(
    blocks: impl Iterator<Item = BlockKind>,
    warnings: &mut Vec<String>,
) -> LayerKinds {
    let mut kinds = LayerKinds::default();
    let mut layers = 0u32;
    let mut dense = 0u32;
    let mut unknown = 0u32;
    for block in blocks {
        layers += 1;
        match block {
            BlockKind::Recurrent => {
                kinds.recurrent += 1;
                kinds.no_attention += 1;
                kinds.no_mlp += 1;
            }
            BlockKind::Attention => kinds.no_mlp += 1,
            BlockKind::Mlp => {
                kinds.no_attention += 1;
                dense += 1;
            }
            BlockKind::Moe => kinds.no_attention += 1,
            BlockKind::Unknown => unknown += 1,
        }
    }
    if unknown > 0 {
        warnings.push(format!(
            "hybrid_override_pattern: {unknown} blocks of an unknown kind are counted as attention + MLP layers"
        ));
    }
    kinds.layers = Some(layers);
    kinds.dense_mlp = Some(dense);
    kinds
}

/// transformers' `layer_types`: each layer's attention.
fn attention_types(keys: &Keys, types: &[Value], warnings: &mut Vec<String>) -> LayerKinds {
    let mut kinds = LayerKinds {
        layers: Some(types.len() as u32),
        ..LayerKinds::default()
    };
    let mut chunked = false;
    for t in types {
        match t.as_str().unwrap_or("") {
            "sliding_attention" => kinds.windowed += 1,
            "chunked_attention" => {
                kinds.windowed += 1;
                chunked = true;
            }
            "linear_attention" | "mamba" => {
                kinds.recurrent += 1;
                kinds.no_attention += 1;
            }
            "full_attention" | "attention" => {}
            other => warnings.push(format!(
                "layer_types: `{other}` layers are counted as full attention"
            )),
        }
    }
    let window_key: &[&str] = if chunked {
        &["attention_chunk_size"]
    } else {
        &["sliding_window"]
    };
    kinds.window = keys.count(window_key).unwrap_or(0);
    if kinds.windowed > 0 && kinds.window == 0 {
        warnings.push(format!(
            "layer_types: {} windowed layers but no {}: cached as full attention",
            kinds.windowed, window_key[0]
        ));
        kinds.windowed = 0;
    }
    kinds
}
