//! The bytes a training step's non-matmul work moves through memory, which runs at the card's
//! bandwidth beside the FLOP count: per token per layer the norms, residual adds, the MLP's
//! activation, dropout and eager attention's softmax; per token the loss over the vocabulary; and
//! once per optimizer step the update of the trained state. Each elementwise kernel reads its
//! inputs and writes its output once (eager PyTorch runs one kernel per op; torch.compile's
//! fusion is not modelled, as it changes no other figure).

use super::activations::checkpointed_layers;
use super::component::ComponentId;
use super::per_token::{
    dropout_bytes_per_token, eager_scores_bytes_per_token, norms_bytes_per_token,
};
use super::stack::Component;
use crate::dtype::Dtype;
use crate::model::Architecture;
use crate::scenario::{Resolved, Scenario};
use crate::workload::{Checkpointing, Head, LogitsDtype, Loss};

/// Residual adds per layer: after attention and after the MLP.
const RESIDUAL_ADDS: f64 = 2.0;
/// Dropouts per layer, where the model has them: on the attention's and the MLP's outputs.
const DROPOUTS: f64 = 2.0;

/// Bytes one layer's elementwise ops move per token: (forward, backward).
///
/// - A norm reads its input and writes its output ([`norms_bytes_per_token`] counts exactly those
///   tensors); its backward reads the input and the output's gradient and writes the input's.
/// - A residual add reads two hidden states and writes one; its backward adds the branch's
///   gradient to the stream's, the same three.
/// - A plain MLP's activation reads fc1's output and writes its own (backward: input, gradient
///   in, gradient out); a gated one runs act(gate) and then its product with up (backward: the
///   product's three reads and two writes, then the activation's three).
/// - Dropout reads and writes a hidden state and writes a one-byte mask; its backward reads the
///   gradient and the mask and writes the gradient.
/// - Eager attention's softmax is counted as a norm: forward the scores it keeps
///   ([`eager_scores_bytes_per_token`]), backward half as much again; flash attention's own reads
///   run inside its kernel, timed by its FLOPs.
fn layer_bytes(s: &Scenario, a: &Architecture, e: f64, seq: f64) -> (f64, f64) {
    let h = f64::from(a.hidden);
    let norms = norms_bytes_per_token(a, e, false);
    let residual = RESIDUAL_ADDS * 3.0 * h * e;
    let w = active_mlp_width(a) * e;
    let (act_fwd, act_bwd) = if a.gated {
        (2.0 * w + 3.0 * w, 5.0 * w + 3.0 * w)
    } else {
        (2.0 * w, 3.0 * w)
    };
    let masks = dropout_bytes_per_token(s, a);
    let dropout = if masks > 0.0 {
        DROPOUTS * 2.0 * h * e + masks
    } else {
        0.0
    };
    let share = f64::from(a.attention_layers()) / f64::from(a.layers.max(1));
    let scores = share * eager_scores_bytes_per_token(s, a, e, seq);
    let forward = norms + residual + act_fwd + dropout + scores;
    let backward = 1.5 * (norms + scores) + residual + act_bwd + dropout;
    (forward, backward)
}

/// The MLP's intermediate width a token runs through, averaged over the layers: `ffn` on a dense
/// layer, its `per_token` routed experts (each `capacity` times over) and the shared experts' on
/// a mixture-of-experts layer.
fn active_mlp_width(a: &Architecture) -> f64 {
    let layers = f64::from(a.layers.max(1));
    let mlp = f64::from(a.mlp_layers());
    let moe = a.moe_layers();
    let m = &a.moe;
    let routed = f64::from(m.per_token) * f64::from(m.expert_ffn) + f64::from(m.shared_ffn);
    ((mlp - moe) * f64::from(a.ffn) + moe * routed) / layers
}

/// Bytes the loss moves per token over the vocabulary: the log-softmax reads the 16-bit logits
/// and writes its log-probabilities in the loss's format (`logits-dtype`: fp32 as autocast runs
/// cross-entropy); the backward writes their gradient, reads it with the log-probabilities and
/// writes the logits' gradient. Cut Cross-Entropy never builds the logits.
fn loss_bytes(s: &Scenario, r: &Resolved) -> f64 {
    if s.head != Head::Lm || s.loss == Loss::Cce {
        return 0.0;
    }
    let e = r.act_dtype.bytes();
    let l = match s.logits_dtype {
        LogitsDtype::Fp32 => Dtype::Fp32.bytes(),
        LogitsDtype::Activations => e,
    };
    f64::from(r.arch.vocab) * (e + l + l + 2.0 * l + e)
}

/// Bytes one micro-batch's non-matmul work moves per token on one GPU: every layer's forward and
/// backward, the forward again where checkpointing recomputes it (`full` and `op` recompute the
/// elementwise ops, `selective` only eager attention's scores), and the loss.
pub(super) fn micro_batch_bytes_per_token(s: &Scenario, r: &Resolved, seq: f64) -> f64 {
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    let layers = f64::from(a.layers.max(1));
    let (forward, backward) = layer_bytes(s, a, e, seq);
    let covered = match s.checkpointing {
        Checkpointing::None => 0.0,
        _ => checkpointed_layers(layers, s.checkpoint_every),
    };
    let recomputed = match s.checkpointing {
        Checkpointing::None => 0.0,
        Checkpointing::Full | Checkpointing::Op => forward,
        Checkpointing::Selective => {
            let share = f64::from(a.attention_layers()) / layers;
            share * eager_scores_bytes_per_token(s, a, e, seq)
        }
    };
    layers * (forward + backward) + covered * recomputed + loss_bytes(s, r)
}

/// Bytes one GPU's optimizer step moves, from the memory estimate's own components: it reads and
/// writes the trained weights (the adapters under LoRA and QLoRA), the fp32 master weights and
/// the optimizer state once each, and reads the gradients.
pub(super) fn optimizer_step_bytes(s: &Scenario, components: &[Component]) -> f64 {
    let trained = if s.mode.is_adapter() {
        ComponentId::Adapters
    } else {
        ComponentId::Weights
    };
    let bytes = |id: &ComponentId| -> f64 {
        components
            .iter()
            .filter(|c| &c.id == id)
            .map(|c| c.bytes.as_f64())
            .sum()
    };
    let updated = [
        trained,
        ComponentId::MasterWeights,
        ComponentId::Optimizer,
        ComponentId::PagedOptimizer,
    ];
    let read_and_written: f64 = updated.iter().map(bytes).sum();
    2.0 * read_and_written + bytes(&ComponentId::Gradients)
}
