//! The parts an architecture may add to a dense transformer: a mixture of experts, latent
//! attention, sliding windows, recurrent (Mamba or linear-attention) layers, a vision tower, and
//! the rotary position table serving runtimes precompute. Each is all zeros when the model does
//! not have it.

use crate::dtype::Dtype;
use serde::{Deserialize, Serialize};

/// A vision tower (`vision_config`): a ViT of `layers` blocks of width `hidden` with a plain MLP
/// of `ffn`, a patch embedding and a projector to the text model's width: one matrix, or, where
/// `merge` patches a side are merged into one token, the Qwen-VL merger MLP. All zero for a
/// text-only model. Llama 4's pixel-shuffle MLP, Qwen's temporal patch and position table are
/// left out: under 0.1% of those models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vision {
    pub layers: u32,
    pub hidden: u32,
    pub ffn: u32,
    /// The square patch's side in pixels.
    pub patch: u32,
    /// The square image's side in pixels the tower takes (`image_size`): (image / patch)² patch
    /// tokens per image (per tile, for tiling models).
    pub image: u32,
    /// Patches a side that the projector merges into one token (Qwen2.5-VL's, Qwen3-VL's and
    /// Qwen3.5's `spatial_merge_size`); 0 or 1 for a plain projection.
    pub merge: u32,
}

/// A mixture of experts: which layers route, to how many experts, of what width. All zero for a
/// dense model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moe {
    /// Routed experts in each MoE layer (`num_local_experts`, `num_experts`, `n_routed_experts`).
    pub experts: u32,
    /// Experts each token is routed to (`num_experts_per_tok`).
    pub per_token: u32,
    /// Each routed expert's intermediate size (`moe_intermediate_size`; Mixtral, gpt-oss and
    /// Llama 4 use `intermediate_size`).
    pub expert_ffn: u32,
    /// The shared experts' combined intermediate size, which every token passes through
    /// (DeepSeek's `n_shared_experts × moe_intermediate_size`, Llama 4's `intermediate_size`).
    pub shared_ffn: u32,
    /// Layers with a dense MLP of `ffn` instead of experts (DeepSeek's `first_k_dense_replace`,
    /// Llama 4 Maverick's interleaving, Qwen's `mlp_only_layers`).
    pub dense_layers: u32,
}

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): keys and values pass through a
/// low-rank latent, which is what serving engines cache. All zero for ordinary attention.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    /// The query's low-rank width (`q_lora_rank`); 0 for a plain query projection.
    pub q_rank: u32,
    /// The compressed key/value width (`kv_lora_rank`); 0 when the model has no MLA.
    pub kv_rank: u32,
    /// The decoupled RoPE key width, shared by all heads (`qk_rope_head_dim`).
    pub rope_dim: u32,
    /// Each head's value width (`v_head_dim`).
    pub v_head_dim: u32,
}

/// Sliding-window (or chunked) attention: how many layers see only the last `tokens` positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Positions a windowed layer attends to and caches; 0 when every layer is full attention.
    pub tokens: u32,
    /// How many of the layers use the window.
    pub layers: u32,
}

/// The rotary position embedding's positions, as far as memory sees them: vLLM and SGLang build
/// one cos/sin table of `positions × dim` per distinct RoPE when they load the model, and keep it
/// on every GPU. All zero for a model without RoPE (learned or ALiBi positions, or none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rope {
    /// Positions in the table: `max_position_embeddings`, times the factor of a linear or
    /// dynamic-NTK scaling; a YaRN scaling's `original_max_position_embeddings × factor`; Phi-3's
    /// LongRoPE adds its short table's original positions.
    pub positions: u32,
    /// A second table's positions: Gemma 3's sliding layers rotate with their own base and no
    /// scaling (`rope_local_base_freq`). 0 when every layer shares one RoPE.
    pub local_positions: u32,
    /// The width rotated in each head when it is less than the head (`partial_rotary_factor ×
    /// head_dim`, GPT-NeoX's `rotary_pct`); 0 for the whole head, or MLA's `qk_rope_head_dim`.
    pub dim: u32,
}

/// Colour channels a patch embedding reads.
const IMAGE_CHANNELS: f64 = 3.0;

impl Vision {
    /// Patch tokens per image.
    pub fn patches_per_image(&self) -> f64 {
        if self.patch == 0 {
            return 0.0;
        }
        let side = f64::from(self.image / self.patch);
        side * side
    }

    /// Bytes each patch token keeps while one tower layer runs, at `e` bytes per element: its
    /// two LayerNorms' outputs, q, k, v and the attention output (flash/SDPA: no scores), and
    /// the MLP's fc1 output and activation.
    pub fn layer_bytes_per_patch(&self, e: f64) -> f64 {
        let h = f64::from(self.hidden);
        e * (2.0 * h + 4.0 * h + 2.0 * f64::from(self.ffn))
    }

    /// Each block's four attention projections, its two MLP matrices and two LayerNorms with
    /// biases, the patch embedding, and the projector to `text_hidden`: one matrix, or under
    /// `merge` the merger, whose two linears read the `merge²` patches concatenated
    /// (transformers' `Qwen3VLVisionPatchMerger`: `linear_fc1` merged → merged, `linear_fc2`
    /// merged → `out_hidden_size`, the text width).
    pub fn param_count(&self, text_hidden: u32) -> f64 {
        if self.layers == 0 {
            return 0.0;
        }
        let h = f64::from(self.hidden);
        let block = 4.0 * h * h + 2.0 * h * f64::from(self.ffn) + 4.0 * h;
        let patch = f64::from(self.patch);
        let text = f64::from(text_hidden);
        let projector = if self.merge > 1 {
            let merged = f64::from(self.merge * self.merge) * h;
            merged * merged + merged * text
        } else {
            h * text
        };
        f64::from(self.layers) * block + IMAGE_CHANNELS * patch * patch * h + projector
    }
}

impl Moe {
    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }
}

impl Mla {
    pub fn is_mla(&self) -> bool {
        self.kv_rank > 0
    }
}

/// Recurrent mixers that replace attention in some layers and keep a fixed-size state per
/// sequence instead of a KV cache: Mamba-2 (Nemotron-H's `M` layers) and gated DeltaNet
/// (Qwen3-Next's `linear_attention` layers). Both project the hidden state to `heads ×
/// head_dim` values and `groups × state` keys, run a causal convolution of width `conv` over
/// them, and carry a `heads × head_dim × state` matrix from token to token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recurrent {
    /// Layers whose mixer is recurrent.
    pub layers: u32,
    /// Value heads (`mamba_num_heads`, `linear_num_value_heads`).
    pub heads: u32,
    /// Each value head's width (`mamba_head_dim`, `linear_value_head_dim`).
    pub head_dim: u32,
    /// The state's key width (`ssm_state_size`, `linear_key_head_dim`).
    pub state: u32,
    /// Key groups (`n_groups`, `linear_num_key_heads`).
    pub groups: u32,
    /// The causal convolution's width (`conv_kernel`, `linear_conv_kernel_dim`).
    pub conv: u32,
    /// The format the checkpoint asks the state to be kept in (Qwen3.5's `mamba_ssm_dtype`,
    /// Nemotron-H's `mamba_ssm_cache_dtype`); `None` leaves it to the runtime.
    pub state_dtype: Option<Dtype>,
}

impl Recurrent {
    pub fn inner(&self) -> f64 {
        f64::from(self.heads) * f64::from(self.head_dim)
    }

    /// The channels the convolution runs over: the values and the grouped keys and queries.
    pub fn conv_channels(&self) -> f64 {
        self.inner() + 2.0 * f64::from(self.groups) * f64::from(self.state)
    }

    /// The input projection's width: the gate and the values, keys, queries, and one step size
    /// per head (Mamba-2's `in_proj`; gated DeltaNet's `in_proj_qkvz` and `in_proj_ba` differ
    /// by one `hidden × heads` matrix, under 0.1% of Qwen3-Next).
    pub fn in_width(&self) -> f64 {
        self.inner() + self.conv_channels() + f64::from(self.heads)
    }

    /// Per layer, the parameters outside the two projections: the convolution's weight and bias,
    /// the per-head decay, skip and step bias, and the gated norm.
    pub fn small_params(&self) -> f64 {
        self.conv_channels() * (f64::from(self.conv) + 1.0)
            + 3.0 * f64::from(self.heads)
            + self.inner()
    }

    /// Elements each sequence carries per layer: the `heads × head_dim × state` recurrent state
    /// and the last `conv − 1` inputs of the convolution.
    pub fn state_elements(&self) -> (f64, f64) {
        (
            self.inner() * f64::from(self.state),
            self.conv_channels() * f64::from(self.conv.saturating_sub(1)),
        )
    }
}
