//! The linear-layer inventory and the parameter counts derived from it: total, per block kind
//! and active. The one place block shapes are written.

use super::{Architecture, MatrixShape, Projection};
use crate::wire::wire_enum;
use serde::{Deserialize, Serialize};

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
    /// A recurrent mixer's input and output projections.
    Recurrent,
}

/// One kind of linear layer: `shape.count` copies over the model, the projection it plays (the
/// name LoRA targets; none for the router) and its block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Linear {
    pub projection: Option<Projection>,
    pub block: Block,
    pub shape: MatrixShape,
}

impl Linear {
    fn new(
        projection: Option<Projection>,
        block: Block,
        rows: f64,
        cols: f64,
        count: f64,
    ) -> Linear {
        Linear {
            projection,
            block,
            shape: MatrixShape { rows, cols, count },
        }
    }
}

impl Architecture {
    pub fn q_width(&self) -> f64 {
        f64::from(self.heads) * f64::from(self.head_dim)
    }

    /// q_proj's output width: the queries, and under an attention output gate the gate's logits
    /// beside them.
    pub fn q_proj_width(&self) -> f64 {
        if self.attention_gate {
            2.0 * self.q_width()
        } else {
            self.q_width()
        }
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

    /// Layers with attention (full, windowed or latent).
    pub fn attention_layers(&self) -> u32 {
        self.layers.saturating_sub(self.no_attention)
    }

    /// Layers with an MLP, dense or experts.
    pub fn mlp_layers(&self) -> u32 {
        self.layers.saturating_sub(self.no_mlp)
    }

    /// Layers whose MLP is a mixture of experts.
    pub fn moe_layers(&self) -> f64 {
        if self.moe.is_moe() {
            f64::from(self.mlp_layers().saturating_sub(self.moe.dense_layers))
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
            Projection::Q => Some((h, self.q_proj_width())),
            Projection::K | Projection::V => Some((h, self.kv_width())),
            Projection::O => Some((self.q_width(), h)),
            Projection::Gate if !self.gated => None,
            Projection::Gate | Projection::Up => Some((h, ffn)),
            Projection::Down => Some((ffn, h)),
        }
    }

    /// Visits every kind of linear layer in the blocks: the one place block shapes are written.
    /// The parameter count, quantization, LoRA and the optimizer all read them here.
    pub fn each_linear(&self, mut visit: impl FnMut(Linear)) {
        if self.mla.is_mla() {
            self.latent_attention_linears(&mut visit);
        } else {
            self.attention_linears(&mut visit);
        }
        self.recurrent_linears(&mut visit);
        self.mlp_linears(&mut visit);
    }

    fn attention_linears(&self, visit: &mut impl FnMut(Linear)) {
        let layers = f64::from(self.attention_layers());
        for p in [Projection::Q, Projection::K, Projection::V, Projection::O] {
            if let Some((rows, cols)) = self.projection(p) {
                visit(Linear::new(Some(p), Block::Attention, rows, cols, layers));
            }
        }
    }

    /// MLA's projections (DeepSeek-V3's modeling code), tagged by what they feed: q_a and q_b
    /// as q, kv_a (the latent and the shared RoPE key) as k, kv_b (the per-head keys and values)
    /// as v.
    fn latent_attention_linears(&self, visit: &mut impl FnMut(Linear)) {
        let layers = f64::from(self.attention_layers());
        let h = f64::from(self.hidden);
        let m = &self.mla;
        let heads = f64::from(self.heads);
        let (q_rank, kv_rank, rope) = (
            f64::from(m.q_rank),
            f64::from(m.kv_rank),
            f64::from(m.rope_dim),
        );
        let mut attention = |projection, rows, cols| {
            visit(Linear::new(
                Some(projection),
                Block::Attention,
                rows,
                cols,
                layers,
            ))
        };
        if m.q_rank > 0 {
            attention(Projection::Q, h, q_rank);
            attention(Projection::Q, q_rank, self.q_proj_width());
        } else {
            attention(Projection::Q, h, self.q_proj_width());
        }
        let nope = f64::from(self.head_dim.saturating_sub(m.rope_dim));
        let v = f64::from(m.v_head_dim);
        attention(Projection::K, h, kv_rank + rope);
        attention(Projection::V, kv_rank, heads * (nope + v));
        attention(Projection::O, heads * v, h);
    }

    /// A recurrent mixer's input and output projections.
    fn recurrent_linears(&self, visit: &mut impl FnMut(Linear)) {
        let rec = &self.recurrent;
        if rec.layers > 0 {
            let count = f64::from(rec.layers);
            let h = f64::from(self.hidden);
            visit(Linear::new(
                None,
                Block::Recurrent,
                h,
                rec.in_width(),
                count,
            ));
            visit(Linear::new(None, Block::Recurrent, rec.inner(), h, count));
        }
    }

    /// The dense layers' MLPs, then the routed and shared experts and the router.
    fn mlp_linears(&self, visit: &mut impl FnMut(Linear)) {
        let h = f64::from(self.hidden);
        let moe_layers = self.moe_layers();
        let layers = f64::from(self.mlp_layers());
        let gated = self.gated;
        let mut mlp = |block, width: u32, count: f64| {
            if width == 0 || count == 0.0 {
                return;
            }
            let w = f64::from(width);
            if gated {
                visit(Linear::new(Some(Projection::Gate), block, h, w, count));
            }
            visit(Linear::new(Some(Projection::Up), block, h, w, count));
            visit(Linear::new(Some(Projection::Down), block, w, h, count));
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
            visit(Linear::new(None, Block::Router, h, experts, moe_layers));
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
    /// MLA's norms of the query and key/value latents, and the recurrent mixers' small tensors.
    pub fn norm_params(&self) -> f64 {
        let per_norm = if self.gated { 1.0 } else { 2.0 } * f64::from(self.hidden);
        let latent_norms = f64::from(self.mla.q_rank) + f64::from(self.mla.kv_rank);
        per_norm * (2.0 * f64::from(self.layers) + 1.0)
            + latent_norms * f64::from(self.attention_layers())
            + self.recurrent.small_params() * f64::from(self.recurrent.layers)
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

    /// One multi-token-prediction module per `mtp_layers` (DeepSeek-V3 §2.2): a projection of
    /// the concatenated hidden state and embedding (2H → H), its two norms and the output norm,
    /// and one more decoder layer like the model's last (attention and, in a mixture of experts,
    /// the experts). The embedding and head are the main model's.
    pub fn mtp_params(&self) -> f64 {
        if self.mtp_layers == 0 {
            return 0.0;
        }
        let h = f64::from(self.hidden);
        let per_attention =
            self.params_in(&[Block::Attention]) / f64::from(self.attention_layers().max(1));
        let mlp = if self.moe.is_moe() {
            self.params_in(&[Block::RoutedExpert, Block::SharedExpert, Block::Router])
                / self.moe_layers().max(1.0)
        } else {
            self.params_in(&[Block::Mlp]) / f64::from(self.mlp_layers().max(1))
        };
        let projection_and_norms = 2.0 * h * h + 5.0 * h;
        f64::from(self.mtp_layers) * (per_attention + mlp + projection_and_norms)
    }

    /// The channels RoPE rotates in each head: `rotary-dim` when part of the head, MLA's shared
    /// RoPE key, else the whole head.
    pub fn rope_width(&self) -> u32 {
        if self.rope.dim > 0 {
            self.rope.dim
        } else if self.mla.is_mla() {
            self.mla.rope_dim
        } else {
            self.head_dim
        }
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
        if self.rope.dim > self.head_dim {
            return Some((
                "rotary-dim",
                format!("wider than the head-dim {}", self.head_dim),
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

    /// What kind of model this is, for people and the estimate's JSON.
    pub fn family(&self) -> Family {
        match (
            self.recurrent.layers > 0,
            self.moe.is_moe(),
            self.mla.is_mla(),
        ) {
            (true, _, _) => Family::Hybrid,
            (false, true, true) => Family::LatentMoe,
            (false, true, false) => Family::Moe,
            (false, false, true) => Family::Latent,
            (false, false, false) => Family::Dense,
        }
    }

    /// How many layers of each kind the model has.
    pub fn layer_counts(&self) -> LayerCounts {
        let attention = self.attention_layers();
        let windowed = self.window.layers.min(attention);
        let (latent, full) = if self.mla.is_mla() {
            (attention, 0)
        } else {
            (0, attention - windowed)
        };
        let moe = self.moe_layers() as u32;
        LayerCounts {
            full_attention: full,
            sliding_window: if self.mla.is_mla() { 0 } else { windowed },
            latent_attention: latent,
            recurrent: self.recurrent.layers,
            moe,
            dense_mlp: self.mlp_layers() - moe,
        }
    }
}

wire_enum! {
    /// The kind of model, by what its layers hold.
    Family {
        Dense = "dense" => "every layer attends and has one dense MLP",
        Moe = "moe" => "a mixture of experts",
        Latent = "mla" => "multi-head latent attention",
        LatentMoe = "mla-moe" => "a mixture of experts with multi-head latent attention",
        Hybrid = "hybrid" => "recurrent (Mamba or linear-attention) layers beside attention",
    }
}

/// Layers by kind: each attention layer is full, windowed or latent; each MLP dense or experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerCounts {
    pub full_attention: u32,
    pub sliding_window: u32,
    pub latent_attention: u32,
    pub recurrent: u32,
    pub moe: u32,
    pub dense_mlp: u32,
}
