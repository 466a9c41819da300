//! Transformer shapes: the architecture fields, the projections they imply, and the exact
//! parameter count. `presets` holds the published models; `hf_config` reads a pasted
//! Hugging Face config.json; `params` reads and writes parameter counts.

mod hf_config;
mod params;
mod presets;

pub use hf_config::{parse_hf_config, ConfigError, HfConfig};
pub use params::{format_param_count, parse_param_count};
pub use presets::{nearest_preset, preset, Preset, CATALOGUE_PRESETS, PRESETS};

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
}

/// A vision tower (`vision_config`): a ViT of `layers` blocks of width `hidden` with a plain MLP
/// of `ffn`, a patch embedding and a projector to the text model's width. All zero for a
/// text-only model. Family-specific adapters (Llama 4's pixel-shuffle MLP, Qwen2.5-VL's merger
/// MLP) are left out: under 0.1% of those models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vision {
    pub layers: u32,
    pub hidden: u32,
    pub ffn: u32,
    /// The square patch's side in pixels.
    pub patch: u32,
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

/// Colour channels a patch embedding reads.
const IMAGE_CHANNELS: f64 = 3.0;

impl Vision {
    /// Each block's four attention projections, its two MLP matrices and two LayerNorms with
    /// biases, the patch embedding, and a projector from the tower's width to `text_hidden`.
    pub fn param_count(&self, text_hidden: u32) -> f64 {
        if self.layers == 0 {
            return 0.0;
        }
        let h = f64::from(self.hidden);
        let block = 4.0 * h * h + 2.0 * h * f64::from(self.ffn) + 4.0 * h;
        let patch = f64::from(self.patch);
        f64::from(self.layers) * block
            + IMAGE_CHANNELS * patch * patch * h
            + h * f64::from(text_hidden)
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

/// Which part of a block a linear layer belongs to: what quantization scopes, LoRA targets and
/// the active-parameter count select by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Attention,
    /// A dense layer's MLP.
    Mlp,
    /// The shared experts every token passes through.
    SharedExpert,
    /// The routed experts, of which each token uses `per_token`.
    RoutedExpert,
    /// The router's `hidden × experts` gate.
    Router,
}

/// One kind of linear layer: `shape.count` copies over the model, the projection it plays (the
/// name LoRA targets; none for the router) and its block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Linear {
    pub projection: Option<Projection>,
    pub block: Block,
    pub shape: MatrixShape,
}

impl Architecture {
    pub fn q_width(&self) -> f64 {
        f64::from(self.heads) * f64::from(self.head_dim)
    }

    /// The width of the keys attention computes with: every head's under MLA (the latent is
    /// expanded per head), the KV heads' otherwise.
    pub fn kv_width(&self) -> f64 {
        let heads = if self.mla.is_mla() {
            self.heads
        } else {
            self.kv_heads
        };
        f64::from(heads) * f64::from(self.head_dim)
    }

    /// Layers whose MLP is a mixture of experts.
    pub fn moe_layers(&self) -> f64 {
        if self.moe.is_moe() {
            f64::from(self.layers.saturating_sub(self.moe.dense_layers))
        } else {
            0.0
        }
    }

    /// A dense projection's (fan-in, fan-out), or `None` where the architecture has no such
    /// projection (a gate in a plain MLP). LoRA reads these; [`Architecture::each_linear`] lists
    /// every matrix, experts and latent projections included.
    pub fn projection(&self, projection: Projection) -> Option<(f64, f64)> {
        let h = f64::from(self.hidden);
        let ffn = f64::from(self.ffn);
        match projection {
            Projection::Q => Some((h, self.q_width())),
            Projection::K | Projection::V => Some((h, self.kv_width())),
            Projection::O => Some((self.q_width(), h)),
            Projection::Gate if !self.gated => None,
            Projection::Gate | Projection::Up => Some((h, ffn)),
            Projection::Down => Some((ffn, h)),
        }
    }

    /// Visits every kind of linear layer in the blocks: the one place block shapes are written.
    /// The parameter count, quantization, LoRA and the optimizer all read them here.
    ///
    /// MLA's projections (DeepSeek-V3's modeling code) are tagged by what they feed: q_a and q_b
    /// as q, kv_a (the latent and the shared RoPE key) as k, kv_b (the per-head keys and values)
    /// as v.
    pub fn each_linear(&self, mut visit: impl FnMut(Linear)) {
        let layers = f64::from(self.layers);
        let h = f64::from(self.hidden);
        let mut linear = |projection, block, rows, cols, count| {
            visit(Linear {
                projection,
                block,
                shape: MatrixShape { rows, cols, count },
            })
        };
        let attention = Block::Attention;
        if self.mla.is_mla() {
            let m = &self.mla;
            let heads = f64::from(self.heads);
            let (q_rank, kv_rank, rope) = (
                f64::from(m.q_rank),
                f64::from(m.kv_rank),
                f64::from(m.rope_dim),
            );
            if m.q_rank > 0 {
                linear(Some(Projection::Q), attention, h, q_rank, layers);
                linear(
                    Some(Projection::Q),
                    attention,
                    q_rank,
                    self.q_width(),
                    layers,
                );
            } else {
                linear(Some(Projection::Q), attention, h, self.q_width(), layers);
            }
            let nope = f64::from(self.head_dim.saturating_sub(m.rope_dim));
            let v = f64::from(m.v_head_dim);
            linear(Some(Projection::K), attention, h, kv_rank + rope, layers);
            linear(
                Some(Projection::V),
                attention,
                kv_rank,
                heads * (nope + v),
                layers,
            );
            linear(Some(Projection::O), attention, heads * v, h, layers);
        } else {
            for p in [Projection::Q, Projection::K, Projection::V, Projection::O] {
                if let Some((rows, cols)) = self.projection(p) {
                    linear(Some(p), attention, rows, cols, layers);
                }
            }
        }
        let moe_layers = self.moe_layers();
        let gated = self.gated;
        let mut mlp = |block, width: u32, count: f64| {
            if width == 0 || count == 0.0 {
                return;
            }
            let w = f64::from(width);
            if gated {
                linear(Some(Projection::Gate), block, h, w, count);
            }
            linear(Some(Projection::Up), block, h, w, count);
            linear(Some(Projection::Down), block, w, h, count);
        };
        mlp(Block::Mlp, self.ffn, layers - moe_layers);
        if moe_layers > 0.0 {
            let experts = f64::from(self.moe.experts);
            mlp(
                Block::RoutedExpert,
                self.moe.expert_ffn,
                moe_layers * experts,
            );
            mlp(Block::SharedExpert, self.moe.shared_ffn, moe_layers);
            linear(None, Block::Router, h, experts, moe_layers);
        }
    }

    /// Every linear layer's shape, the ones quantization applies to.
    pub fn block_linears(&self) -> Vec<MatrixShape> {
        let mut shapes = Vec::new();
        self.each_linear(|l| shapes.push(l.shape));
        shapes
    }

    /// The parameters of the linear layers in `blocks`, without building a list: the estimate
    /// asks on every call.
    pub fn params_in(&self, blocks: &[Block]) -> f64 {
        let mut total = 0.0;
        self.each_linear(|l| {
            if blocks.contains(&l.block) {
                total += l.shape.elements();
            }
        });
        total
    }

    /// The parameters of every linear layer in the blocks.
    pub fn linear_params(&self) -> f64 {
        let mut total = 0.0;
        self.each_linear(|l| total += l.shape.elements());
        total
    }

    /// Embedding and (untied) LM head matrices.
    pub fn embedding_matrices(&self) -> Vec<MatrixShape> {
        let embedding = MatrixShape {
            rows: f64::from(self.vocab),
            cols: f64::from(self.hidden),
            count: if self.tied { 1.0 } else { 2.0 },
        };
        vec![embedding]
    }

    pub fn embedding_params(&self) -> f64 {
        let tables = if self.tied { 1.0 } else { 2.0 };
        f64::from(self.vocab) * f64::from(self.hidden) * tables
    }

    /// Norm weights: two per layer plus the final norm (LayerNorm adds a bias of the same size),
    /// and MLA's norms of the query and key/value latents.
    pub fn norm_params(&self) -> f64 {
        let per_norm = if self.gated { 1.0 } else { 2.0 } * f64::from(self.hidden);
        let latent_norms = f64::from(self.mla.q_rank) + f64::from(self.mla.kv_rank);
        per_norm * (2.0 * f64::from(self.layers) + 1.0) + latent_norms * f64::from(self.layers)
    }

    /// The exact parameter count the shape implies. Biases other than LayerNorm's, Qwen3's
    /// per-head q/k norms and gpt-oss's attention sinks are left out: under 0.1% of every preset.
    pub fn param_count(&self) -> f64 {
        self.text_param_count() + self.vision_params()
    }

    /// The language model's parameters, without a vision tower.
    pub fn text_param_count(&self) -> f64 {
        self.linear_params() + self.embedding_params() + self.norm_params()
    }

    pub fn vision_params(&self) -> f64 {
        self.vision.param_count(self.hidden)
    }

    /// The parameters one token uses: all but the routed experts it is not sent to. Includes the
    /// input embedding, as Mixtral's and Qwen's cards count it (OpenAI's and DeepSeek's leave it
    /// out). `None` for a dense model.
    pub fn active_param_count(&self) -> Option<f64> {
        if !self.moe.is_moe() {
            return None;
        }
        let routed = self.params_in(&[Block::RoutedExpert]);
        let unused = 1.0 - f64::from(self.moe.per_token) / f64::from(self.moe.experts.max(1));
        Some(self.param_count() - routed * unused)
    }

    /// The shape as scenario `key=value` pairs, so a pasted config.json fills the same fields a
    /// person would type; every one is written, so nothing comes from a previous preset.
    pub fn pairs(&self) -> [(&'static str, String); 24] {
        let value = |n: u32| n.to_string();
        [
            ("layers", value(self.layers)),
            ("hidden", value(self.hidden)),
            ("heads", value(self.heads)),
            ("kv-heads", value(self.kv_heads)),
            ("head-dim", value(self.head_dim)),
            ("ffn", value(self.ffn)),
            ("vocab", value(self.vocab)),
            ("tied", self.tied.to_string()),
            ("gated", self.gated.to_string()),
            ("experts", value(self.moe.experts)),
            ("experts-per-token", value(self.moe.per_token)),
            ("expert-ffn", value(self.moe.expert_ffn)),
            ("shared-ffn", value(self.moe.shared_ffn)),
            ("dense-layers", value(self.moe.dense_layers)),
            ("q-lora-rank", value(self.mla.q_rank)),
            ("kv-lora-rank", value(self.mla.kv_rank)),
            ("rope-head-dim", value(self.mla.rope_dim)),
            ("v-head-dim", value(self.mla.v_head_dim)),
            ("sliding-window", value(self.window.tokens)),
            ("sliding-layers", value(self.window.layers)),
            ("vision-layers", value(self.vision.layers)),
            ("vision-hidden", value(self.vision.hidden)),
            ("vision-ffn", value(self.vision.ffn)),
            ("vision-patch", value(self.vision.patch)),
        ]
    }

    /// Every field that must be positive, with its value, for validation.
    pub fn fields(&self) -> [(&'static str, u32); 7] {
        [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv-heads", self.kv_heads),
            ("head-dim", self.head_dim),
            ("ffn", self.ffn),
            ("vocab", self.vocab),
        ]
    }

    /// How the layers' memory differs from a dense model's, for each combination of fields that
    /// must agree: the first contradiction, by field and reason.
    pub fn contradiction(&self) -> Option<(&'static str, String)> {
        let m = &self.moe;
        if m.is_moe() {
            if m.per_token == 0 || m.per_token > m.experts {
                return Some((
                    "experts-per-token",
                    format!("must be from 1 to the {} experts", m.experts),
                ));
            }
            if m.expert_ffn == 0 {
                return Some((
                    "expert-ffn",
                    "a mixture of experts needs the experts' width".into(),
                ));
            }
            if m.dense_layers > self.layers {
                return Some((
                    "dense-layers",
                    format!("more than the {} layers", self.layers),
                ));
            }
        }
        if self.mla.is_mla() && (self.mla.rope_dim >= self.head_dim || self.mla.v_head_dim == 0) {
            return Some((
                "rope-head-dim",
                format!(
                    "MLA needs rope-head-dim below head-dim {} and a v-head-dim",
                    self.head_dim
                ),
            ));
        }
        if self.window.layers > self.layers {
            return Some((
                "sliding-layers",
                format!("more than the {} layers", self.layers),
            ));
        }
        if self.window.layers > 0 && self.window.tokens == 0 {
            return Some((
                "sliding-window",
                "windowed layers need a window size".into(),
            ));
        }
        None
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
            let derived = p.arch.param_count();
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
                assert_eq!(
                    p.arch.moe.is_moe(),
                    p.published_active.is_some(),
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
