//! Transformer shapes: the architecture fields, the projections they imply, and the exact
//! parameter count. `presets` holds the published models; `hf_config` reads a pasted
//! Hugging Face config.json; `gguf` reads a GGUF file's header; `checkpoint` groups a
//! safetensors checkpoint's tensors; `repo` says which files to read for them, in order, without
//! reading; `params` reads and writes parameter counts.

mod checkpoint;
mod count;
mod gguf;
mod hf_config;
mod params;
mod parts;
mod presets;
mod published;
mod repo;

pub use checkpoint::{read_checkpoint, Checkpoint, CheckpointError, CheckpointWeights};
pub use count::{Block, Family, LayerCounts, Linear};
pub use gguf::{
    read_gguf, read_gguf_split, BlockBytes, FileWeights, GgufError, GgufModel,
    GGUF_FIRST_READ_BYTES,
};
pub use hf_config::{parse_hf_config, ConfigError, HfConfig};
pub use params::{format_param_count, params_label, parse_param_count};
pub use parts::{Mla, Moe, Recurrent, Rope, Vision, Window};
pub use presets::{nearest_preset, preset, Preset, CATALOGUE_PRESETS, PRESETS};
pub use published::{parse_published, ActiveClaim, Counted, Published};
pub use repo::{
    pick_quant, quants, split_shards, Fetch, HubRepo, ModelInfo, Next, Quant, ReadCheckpoint,
    RepoFile, RepoModel, RepoRead,
};

use serde::{Deserialize, Serialize};

/// A decoder (or encoder) transformer's shape, as config.json states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Architecture {
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    /// Per-head width of queries and keys. Usually hidden/heads; Gemma and Qwen3 set it
    /// explicitly, and under MLA it is `qk_nope_head_dim + qk_rope_head_dim`.
    pub head_dim: u32,
    /// The dense MLP's intermediate size (in a mixture of experts, the dense layers').
    pub ffn: u32,
    pub vocab: u32,
    /// The LM head shares the embedding matrix.
    pub tied: bool,
    /// A gated (SwiGLU/GeGLU) MLP with gate, up and down projections and RMSNorm, as Llama has;
    /// otherwise a plain two-matrix MLP with LayerNorm, as GPT-2, BERT, Falcon and Phi-1.5 have.
    pub gated: bool,
    pub moe: Moe,
    pub mla: Mla,
    pub window: Window,
    pub vision: Vision,
    pub recurrent: Recurrent,
    pub rope: Rope,
    /// Layers without attention: recurrent layers, and Nemotron-H's MLP-only or Nemotron-NAS's
    /// `no_op` attention blocks.
    pub no_attention: u32,
    /// Layers without an MLP: Nemotron-H's mixer-only blocks, Nemotron-NAS's `no_op` FFNs.
    pub no_mlp: u32,
    /// Multi-token-prediction modules beside the layers (DeepSeek-V3's `num_nextn_predict_layers`):
    /// in the checkpoint, loaded only for MTP speculative decoding, not in the published count.
    pub mtp_layers: u32,
    /// Queries, keys and values come from one fused projection whose output llama.cpp splits
    /// into views (Phi-3's `qkv_proj`, GGUF `attn_qkv`), rather than three matrices.
    pub fused_qkv: bool,
    /// Each attention layer gates its output per channel with a sigmoid whose logits q_proj
    /// computes beside the queries, so q_proj is twice the query width (transformers'
    /// `Qwen3NextAttention`, which Qwen3.5 reuses: `attn_output * torch.sigmoid(gate)` before
    /// o_proj).
    pub attention_gate: bool,
}

/// A dense transformer with full attention everywhere: every part absent.
#[allow(clippy::too_many_arguments)]
pub const fn dense_shape(
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ffn: u32,
    vocab: u32,
    tied: bool,
    gated: bool,
) -> Architecture {
    Architecture {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn,
        vocab,
        tied,
        gated,
        moe: Moe {
            experts: 0,
            per_token: 0,
            expert_ffn: 0,
            shared_ffn: 0,
            dense_layers: 0,
        },
        mla: Mla {
            q_rank: 0,
            kv_rank: 0,
            rope_dim: 0,
            v_head_dim: 0,
        },
        window: Window {
            tokens: 0,
            layers: 0,
        },
        vision: Vision {
            layers: 0,
            hidden: 0,
            ffn: 0,
            patch: 0,
            image: 0,
            merge: 0,
        },
        recurrent: Recurrent {
            layers: 0,
            heads: 0,
            head_dim: 0,
            state: 0,
            groups: 0,
            conv: 0,
            state_dtype: None,
        },
        rope: Rope {
            positions: 0,
            local_positions: 0,
            dim: 0,
        },
        no_attention: 0,
        no_mlp: 0,
        mtp_layers: 0,
        fused_qkv: false,
        attention_gate: false,
    }
}

/// One kind of weight matrix in the model: `count` copies of a `rows × cols` matrix, where rows
/// is the fan-in and cols the fan-out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatrixShape {
    pub rows: f64,
    pub cols: f64,
    pub count: f64,
}

impl MatrixShape {
    pub fn elements(&self) -> f64 {
        self.rows * self.cols * self.count
    }
}

/// A linear projection inside a transformer block, by its Llama name: the attention's q, k, v and
/// o, and the MLP's gate, up and down (a plain MLP's fc1 is `up`, its fc2 `down`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Projection {
    Q,
    K,
    V,
    O,
    Gate,
    Up,
    Down,
}

impl Projection {
    pub const ALL: [Projection; 7] = [
        Projection::Q,
        Projection::K,
        Projection::V,
        Projection::O,
        Projection::Gate,
        Projection::Up,
        Projection::Down,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Projection::Q => "q",
            Projection::K => "k",
            Projection::V => "v",
            Projection::O => "o",
            Projection::Gate => "gate",
            Projection::Up => "up",
            Projection::Down => "down",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cards round active counts to two digits ("3.3B", "17B"): Qwen3-30B-A3B's 3.353B is 1.6%
    /// above its "3.3B", so the active check allows the rounding of a two-digit figure.
    const ACTIVE_TOLERANCE: f64 = 0.02;

    #[test]
    fn every_preset_matches_its_published_count_within_one_percent() {
        for p in PRESETS {
            let mtp = if p.published_with_mtp {
                p.arch.mtp_params()
            } else {
                0.0
            };
            let derived = p.arch.param_count() + mtp;
            let error = (derived - p.published_params).abs() / p.published_params;
            assert!(
                error < 0.01,
                "{}: derived {derived} vs published {} ({:.2}%)",
                p.id,
                p.published_params,
                error * 100.0
            );
        }
    }

    #[test]
    fn every_mixture_of_experts_matches_its_published_active_count() {
        for p in PRESETS {
            let (Some(active), Some(published)) = (p.arch.active_param_count(), p.published_active)
            else {
                // Qwen3-Next publishes only its A3B size label.
                assert!(
                    p.published_active.is_none() || p.arch.moe.is_moe(),
                    "{}",
                    p.id
                );
                continue;
            };
            let input_embedding = f64::from(p.arch.vocab) * f64::from(p.arch.hidden);
            let as_counted = if p.active_without_embedding {
                active - input_embedding
            } else {
                active
            };
            let error = (as_counted - published).abs() / published;
            eprintln!(
                "{}: total {:.4}B active {:.4}B ({:+.2}%)",
                p.id,
                p.arch.param_count() / 1e9,
                as_counted / 1e9,
                error * 100.0
            );
            assert!(
                error < ACTIVE_TOLERANCE,
                "{}: {as_counted} vs {published}",
                p.id
            );
        }
    }

    #[test]
    fn a_plain_mlp_has_no_gate() {
        let gpt2 = preset("gpt2").unwrap().arch;
        assert_eq!(gpt2.projection(Projection::Gate), None);
        assert_eq!(gpt2.block_linears().len(), 6);
        let llama = preset("llama-3.1-8b").unwrap().arch;
        assert_eq!(llama.projection(Projection::Gate), Some((4096.0, 14336.0)));
        assert_eq!(llama.projection(Projection::K), Some((4096.0, 1024.0)));
    }
}
