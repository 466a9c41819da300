//! What one GPU of a serving runtime keeps per token and per request: the layers on the fullest
//! rank by kind (full attention, sliding window, recurrent), each attention layer's bytes per
//! token, and each recurrent layer's bytes per request. vLLM's blocks and SGLang's token pool are
//! both built from it.

use super::Deployment;
use crate::scenario::Resolved;

/// The cache of one GPU, before a runtime lays it out in blocks or token slots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct KvLayout {
    /// Full-attention (or MLA) layers on the fullest pipeline stage.
    pub full_layers: u32,
    /// Sliding-window layers on that stage, and their window in tokens.
    pub sliding_layers: u32,
    pub window: u32,
    /// Recurrent (Mamba, linear-attention) layers on that stage.
    pub recurrent_layers: u32,
    /// One attention layer's bytes per token on this GPU: keys and values of this rank's heads
    /// (`max(1, kv_heads / tp)`: vLLM replicates a head when TP exceeds the KV heads), or MLA's
    /// latent and RoPE key, which tensor parallelism does not split.
    pub token_bytes: f64,
    /// One recurrent layer's state per request on this GPU: the SSM state in its format
    /// (`ssm-dtype`) and the convolution's last inputs in the activation dtype, split across TP
    /// ranks by head.
    pub request_bytes: f64,
}

/// ⌈layers / stages⌉: the fullest pipeline stage's share.
fn per_stage(layers: u32, stages: u32) -> u32 {
    layers.div_ceil(stages.max(1))
}

impl KvLayout {
    pub fn new(r: &Resolved, d: &Deployment) -> KvLayout {
        let a = &r.arch;
        let b = r.kv_dtype.bytes();
        let token_bytes = if a.mla.is_mla() {
            (f64::from(a.mla.kv_rank) + f64::from(a.mla.rope_dim)) * b
        } else {
            let heads = (a.kv_heads / d.tp).max(1);
            2.0 * f64::from(heads) * f64::from(a.head_dim) * b
        };
        let (state, conv) = a.recurrent.state_elements();
        let request_bytes =
            (state * r.state_dtype.bytes() + conv * r.act_dtype.bytes()) / f64::from(d.tp.max(1));
        let sliding = if a.window.tokens > 0 {
            a.window.layers.min(a.attention_layers())
        } else {
            0
        };
        KvLayout {
            full_layers: per_stage(a.attention_layers() - sliding, d.pp),
            sliding_layers: per_stage(sliding, d.pp),
            window: a.window.tokens,
            recurrent_layers: per_stage(a.recurrent.layers, d.pp),
            token_bytes,
            request_bytes,
        }
    }

    /// Every attention layer's bytes per token, windowed or not.
    pub fn attention_token_bytes(&self) -> f64 {
        f64::from(self.full_layers + self.sliding_layers) * self.token_bytes
    }
}
