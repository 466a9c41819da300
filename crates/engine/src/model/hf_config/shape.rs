//! The architecture under each family's key names: the dense shape, the experts, latent
//! attention, the layer kinds, the recurrent mixers, the vision tower and Nemotron-NAS's
//! per-layer blocks.

use super::keys::{whole, Keys, GATED_DELTA_NET_FAMILIES};
use super::layers::{layer_kinds, LayerKinds};
use super::quant::float_dtype;
use super::rope::rope;
use super::ConfigError;
use crate::dtype::Dtype;
use crate::model::{dense_shape, Architecture, Mla, Moe, Recurrent, Vision, Window};
use serde_json::Value;

/// Model types whose MLP is the plain two-matrix kind with LayerNorm.
const PLAIN_MLP_FAMILIES: &[&str] = &[
    "gpt2",
    "gpt_neox",
    "falcon",
    "phi",
    "bert",
    "opt",
    "gpt_bigcode",
];

/// The architecture, part by part. Keys are read in this order because the family defaults they
/// fall back on are reported in it.
pub(super) fn architecture(
    keys: &Keys,
    warnings: &mut Vec<String>,
) -> Result<Architecture, ConfigError> {
    let stated_layers = keys.positive(&["num_hidden_layers", "n_layer", "num_layers"]);
    let kinds = layer_kinds(keys, stated_layers, warnings);
    let nas = nas_blocks(keys, warnings);
    let [layers, hidden, heads, vocab] =
        required_sizes(keys, stated_layers.or(kinds.layers).or(nas.layers))?;
    let mla = latent_attention(keys);
    let head_dim = head_dim(keys, &mla, hidden, heads)?;
    let plain = plain_mlp(keys);
    let kv_heads = kv_heads(keys, &nas, &mla, heads);
    let moe = experts(keys, layers, &kinds);
    let ffn = ffn(keys, &nas, hidden);
    let tied = keys.tied(warnings);
    Ok(Architecture {
        moe,
        mla,
        window: Window {
            tokens: kinds.window,
            layers: kinds.windowed,
        },
        vision: vision(keys, warnings),
        recurrent: recurrent(keys, hidden, kinds.recurrent),
        rope: rope(keys, head_dim, warnings),
        no_attention: kinds.no_attention + nas.no_attention,
        no_mlp: kinds.no_mlp + nas.no_mlp,
        // DeepSeek-V3's name, and Qwen3.5's (which transformers leaves unread).
        mtp_layers: keys
            .count(&["num_nextn_predict_layers", "mtp_num_hidden_layers"])
            .unwrap_or(0),
        // transformers' Phi3Attention has one `qkv_proj`.
        fused_qkv: keys.family() == "phi3",
        // Qwen3-Next's attention gates unconditionally; `attn_output_gate` only records it, and
        // other implementations (MAX's Qwen3.5) read it.
        attention_gate: GATED_DELTA_NET_FAMILIES.contains(&keys.family())
            || keys.flag(&["attn_output_gate"]) == Some(true),
        ..dense_shape(
            layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied, !plain,
        )
    })
}

/// The layers, width, heads and vocabulary, each named when it is missing.
fn required_sizes(keys: &Keys, layers: Option<u32>) -> Result<[u32; 4], ConfigError> {
    let mut missing = Vec::new();
    let mut required = |name: &str, value: Option<u32>| {
        value.unwrap_or_else(|| {
            missing.push(name.to_string());
            0
        })
    };
    let sizes = [
        required("num_hidden_layers", layers.filter(|n| *n > 0)),
        required(
            "hidden_size",
            keys.positive(&["hidden_size", "n_embd", "d_model"]),
        ),
        required(
            "num_attention_heads",
            keys.positive(&["num_attention_heads", "n_head"]),
        ),
        required("vocab_size", keys.positive(&["vocab_size"])),
    ];
    if !missing.is_empty() {
        return Err(ConfigError::Missing(missing));
    }
    Ok(sizes)
}

/// Whether the MLP is the plain two-matrix kind: by family, or by its activation (GELU-new,
/// ReLU or squared ReLU).
fn plain_mlp(keys: &Keys) -> bool {
    let activation = keys
        .text(&["mlp_hidden_act", "hidden_act", "activation_function"])
        .unwrap_or("silu");
    PLAIN_MLP_FAMILIES.contains(&keys.family())
        || activation.starts_with("gelu_new")
        || matches!(activation, "relu" | "relu2")
}

/// Each head's width: under latent attention its RoPE and non-RoPE parts, else `head_dim` or
/// `hidden / heads`.
fn head_dim(keys: &Keys, mla: &Mla, hidden: u32, heads: u32) -> Result<u32, ConfigError> {
    let head_dim = if mla.is_mla() {
        mla.rope_dim + keys.count(&["qk_nope_head_dim"]).unwrap_or(0)
    } else {
        keys.positive(&["head_dim"]).unwrap_or(hidden / heads)
    };
    if head_dim == 0 {
        return Err(ConfigError::NoHeadDim { hidden, heads });
    }
    Ok(head_dim)
}

/// The KV heads: every head's under latent attention, else Nemotron-NAS's most common grouping
/// or the config's count, else one per query head.
fn kv_heads(keys: &Keys, nas: &NasBlocks, mla: &Mla, heads: u32) -> u32 {
    if mla.is_mla() {
        return heads;
    }
    nas.kv_heads
        .or_else(|| {
            keys.positive(&[
                "num_key_value_heads",
                "num_kv_heads",
                "multi_query_group_num",
            ])
        })
        .unwrap_or(heads)
}

/// The dense MLP's width: Nemotron-NAS's mean, the config's, else 4 × hidden.
fn ffn(keys: &Keys, nas: &NasBlocks, hidden: u32) -> u32 {
    // Saturating: `hidden_size` may be any u32, and `4 * hidden` overflowed (a panic in debug
    // builds, a wrapped and possibly zero ffn in release). The saturated value is past the
    // scenario's 1e7 limit, so setting it is rejected by name.
    nas.ffn
        .or_else(|| {
            keys.positive(&[
                "intermediate_size_mlp",
                "intermediate_size",
                "n_inner",
                "ffn_dim",
            ])
        })
        .unwrap_or(hidden.saturating_mul(4))
}

/// DeepSeek's multi-head latent attention, when `kv_lora_rank` is set.
fn latent_attention(keys: &Keys) -> Mla {
    match keys.positive(&["kv_lora_rank"]) {
        Some(kv_rank) => Mla {
            // `"q_lora_rank": null` (V2-Lite) means a plain query projection.
            q_rank: keys.count(&["q_lora_rank"]).unwrap_or(0),
            kv_rank,
            rope_dim: keys.count(&["qk_rope_head_dim"]).unwrap_or(0),
            v_head_dim: keys.count(&["v_head_dim"]).unwrap_or(0),
        },
        None => Mla::default(),
    }
}

/// The experts, under Mixtral's, Qwen's, DeepSeek's, gpt-oss's, Llama 4's and NemotronH's names.
fn experts(keys: &Keys, layers: u32, kinds: &LayerKinds) -> Moe {
    let Some(experts) = keys.positive(&["num_local_experts", "num_experts", "n_routed_experts"])
    else {
        return Moe::default();
    };
    let per_token = keys
        .positive(&["num_experts_per_tok", "experts_per_token", "moe_topk"])
        // Not guessed: left at 0, validation names experts-per-token.
        .unwrap_or(0);
    // Mixtral, gpt-oss and Llama 4 size experts by `intermediate_size`.
    let expert_ffn = keys
        .positive(&["moe_intermediate_size", "intermediate_size"])
        .unwrap_or(0);
    let shared_ffn = keys
        .positive(&[
            "shared_expert_intermediate_size",
            "moe_shared_expert_intermediate_size",
            "shared_intermediate_size",
        ])
        .or_else(|| {
            keys.positive(&["n_shared_experts"])
                .zip(keys.positive(&["moe_intermediate_size"]))
                .map(|(n, width)| n.saturating_mul(width))
        })
        // Llama 4's MoE layers each add one shared expert of the experts' width.
        .or((keys.family() == "llama4_text").then_some(expert_ffn))
        .unwrap_or(0);
    let dense_layers = kinds
        .dense_mlp
        .unwrap_or_else(|| dense_layers(keys, layers));
    Moe {
        experts,
        per_token,
        expert_ffn,
        shared_ffn,
        dense_layers,
    }
}

/// Layers whose MLP stays dense: DeepSeek's first k, Qwen's `mlp_only_layers` and sparse step,
/// Llama 4's interleaving (`moe_layers = range(step − 1, L, step)`).
fn dense_layers(keys: &Keys, layers: u32) -> u32 {
    if let Some(k) = keys.count(&["first_k_dense_replace"]) {
        return k.min(layers);
    }
    let step = keys
        .positive(&[
            "interleave_moe_layer_step",
            "decoder_sparse_step",
            "moe_layer_freq",
        ])
        .unwrap_or(1);
    let only_mlp = keys
        .list(&["mlp_only_layers"])
        .map_or(0, |l| l.len() as u32);
    (layers - layers / step + only_mlp).min(layers)
}

/// Mamba-2 (NemotronH, granite-4.0-h) or gated DeltaNet (Qwen3-Next, Qwen3.5) mixers in
/// `layers` layers.
fn recurrent(keys: &Keys, hidden: u32, layers: u32) -> Recurrent {
    if layers == 0 {
        return Recurrent::default();
    }
    if GATED_DELTA_NET_FAMILIES.contains(&keys.family()) {
        return Recurrent {
            layers,
            heads: keys.count(&["linear_num_value_heads"]).unwrap_or(0),
            head_dim: keys.count(&["linear_value_head_dim"]).unwrap_or(0),
            state: keys.count(&["linear_key_head_dim"]).unwrap_or(0),
            groups: keys.count(&["linear_num_key_heads"]).unwrap_or(0),
            conv: keys.count(&["linear_conv_kernel_dim"]).unwrap_or(0),
            state_dtype: state_dtype(keys),
        };
    }
    let heads = keys
        .count(&["mamba_num_heads", "mamba_n_heads"])
        .unwrap_or(0);
    let expand = keys.positive(&["expand", "mamba_expand"]).unwrap_or(0);
    // granite-4.0-h writes `"mamba_d_head": "auto"`: expand × hidden / heads.
    let head_dim = keys
        .count(&["mamba_head_dim", "mamba_d_head"])
        .unwrap_or_else(|| (expand.saturating_mul(hidden)) / heads.max(1));
    Recurrent {
        layers,
        heads,
        head_dim,
        state: keys
            .count(&["ssm_state_size", "mamba_d_state"])
            .unwrap_or(0),
        // Not guessed: a size neither the file nor the family's defaults give is left at 0, and
        // validation names it.
        groups: keys.count(&["n_groups", "mamba_n_groups"]).unwrap_or(0),
        conv: keys.count(&["conv_kernel", "mamba_d_conv"]).unwrap_or(0),
        state_dtype: state_dtype(keys),
    }
}

/// The state's format the checkpoint asks for: Qwen3.5's `mamba_ssm_dtype` (which vLLM's
/// `Qwen3_5ForConditionalGenerationConfig` and SGLang's `mamba2_state_dtype` read) or
/// Nemotron-H's `mamba_ssm_cache_dtype`, fp32 when absent (`NemotronHForCausalLMConfig`,
/// vllm/model_executor/models/config.py: "Only `float32` is known to have no accuracy issues").
fn state_dtype(keys: &Keys) -> Option<Dtype> {
    let named = keys
        .text(&["mamba_ssm_dtype", "mamba_ssm_cache_dtype"])
        .and_then(float_dtype);
    match keys.family() {
        "nemotron_h" => named.or(Some(Dtype::Fp32)),
        _ => named,
    }
}

/// The vision tower from `vision_config`, named in a warning when its sizes are missing.
fn vision(keys: &Keys, warnings: &mut Vec<String>) -> Vision {
    let Some(v) = keys.object(&["vision_config"]) else {
        return Vision::default();
    };
    let size = |names: &[&str]| names.iter().find_map(|n| v.get(*n).and_then(whole));
    let tower = Vision {
        layers: size(&["num_hidden_layers", "depth"]).unwrap_or(0),
        hidden: size(&["hidden_size", "embed_dim"]).unwrap_or(0),
        ffn: size(&["intermediate_size"]).unwrap_or(0),
        patch: size(&["patch_size"]).unwrap_or(0),
        image: size(&["image_size"]).unwrap_or(0),
        merge: size(&["spatial_merge_size"]).unwrap_or(0),
    };
    // Qwen3-VL adds a merger per listed layer (`deepstack_merger_list`), each the size of the
    // main one; Qwen3.5 lists none.
    let deepstack = v
        .get("deepstack_visual_indexes")
        .and_then(serde_json::Value::as_array)
        .map_or(0, Vec::len);
    if deepstack > 0 {
        warnings.push(format!(
            "deepstack_visual_indexes: the {deepstack} deepstack mergers of the vision tower are \
             not counted"
        ));
    }
    if [tower.layers, tower.hidden, tower.ffn].contains(&0) {
        warnings.push(
            "vision_config: no num_hidden_layers, hidden_size or intermediate_size; the vision \
             tower is not counted"
                .to_string(),
        );
        return Vision::default();
    }
    tower
}

/// Nemotron-NAS (DeciLM) `block_configs`: per-layer no-op attention or FFN, KV groups and FFN
/// multipliers. Widths that vary by layer are averaged, which keeps the parameter count within
/// rounding and is said in a warning.
#[derive(Default)]
struct NasBlocks {
    layers: Option<u32>,
    no_attention: u32,
    no_mlp: u32,
    kv_heads: Option<u32>,
    ffn: Option<u32>,
}

fn nas_blocks(keys: &Keys, warnings: &mut Vec<String>) -> NasBlocks {
    let Some(blocks) = keys.list(&["block_configs"]) else {
        return NasBlocks::default();
    };
    let heads = keys.positive(&["num_attention_heads"]).unwrap_or(1);
    let hidden = f64::from(keys.positive(&["hidden_size"]).unwrap_or(0));
    let mut nas = NasBlocks {
        layers: Some(blocks.len() as u32),
        ..NasBlocks::default()
    };
    let (mut groups, mut ffns) = (Vec::new(), Vec::new());
    for block in blocks {
        let part = |name: &str| block.get(name).and_then(Value::as_object);
        let no_op = |p: Option<&serde_json::Map<String, Value>>| {
            p.and_then(|p| p.get("no_op")).and_then(Value::as_bool) == Some(true)
        };
        let (attention, ffn) = (part("attention"), part("ffn"));
        if no_op(attention) {
            nas.no_attention += 1;
        } else if let Some(g) = attention
            .and_then(|a| a.get("n_heads_in_group"))
            .and_then(whole)
        {
            groups.push(g.max(1));
        }
        if no_op(ffn) {
            nas.no_mlp += 1;
        } else if let Some(mult) = ffn.and_then(|f| f.get("ffn_mult")).and_then(Value::as_f64) {
            // DeciLM's `_ffn_mult_to_intermediate_size`: mult × 2/3 × hidden, rounded up to 256.
            let width = (mult * 2.0 / 3.0 * hidden / 256.0).ceil() * 256.0;
            ffns.push(width);
        }
    }
    if let Some(&common) = mode(&groups) {
        nas.kv_heads = Some(heads / common);
    }
    if !ffns.is_empty() {
        nas.ffn = Some((ffns.iter().sum::<f64>() / ffns.len() as f64).round() as u32);
    }
    if groups.windows(2).any(|w| w[0] != w[1]) || ffns.windows(2).any(|w| w[0] != w[1]) {
        warnings.push(
            "block_configs: per-layer KV groups and FFN widths vary; the most common KV group and \
             the mean FFN width are used"
                .to_string(),
        );
    }
    nas
}

/// The most frequent value.
fn mode(values: &[u32]) -> Option<&u32> {
    values
        .iter()
        .max_by_key(|v| values.iter().filter(|w| w == v).count())
}
