//! What sits around the tensors: the CUDA context and the caching allocator's slack.

use super::stack::{explain, percent, Stack};
use crate::scenario::Scenario;
use crate::units::{format_size_exact, Bytes};

/// PyTorch's caching allocator rounds large blocks up and keeps freed blocks cached, so reserved
/// memory exceeds the live tensors. Transient tensors (activations, logits, KV growth) fragment;
/// tensors allocated once and kept (weights, optimizer state) barely do. The split follows
/// Answer.AI's fsdp_qlora benchmark (peak allocated 8.28 GiB vs reserved 9.16 GiB, row M131's source).
pub const FRAGMENTATION_OF_TRANSIENT: f64 = 0.20;
pub const FRAGMENTATION_OF_STATIC: f64 = 0.02;

const TRANSIENT: &[&str] = &[
    "activations",
    "weight_copies",
    "logits",
    "kv_cache",
    "kv_cache_sliding",
    "recurrent_state",
    "all_to_all",
    "vision_activations",
];
/// Tensors allocated in the same sizes at every step, whose freed blocks the next step reuses
/// exactly: the state, the optimizer step's per-parameter temporaries, a layer's dequantized
/// experts, and the distributions `generate` keeps (one same-sized tensor a token).
const PERSISTENT: &[&str] = &[
    "optimizer_step",
    "kept_scores",
    "dequantized_experts",
    "weights",
    "quant_constants",
    "vision",
    "mtp",
    "adapters",
    "gradients",
    "optimizer",
    "master_weights",
];

/// The CUDA context every process on a GPU holds before its first tensor.
pub(super) fn push_context(s: &Scenario, stack: &mut Stack) {
    stack.push(
        "cuda_context",
        "CUDA context",
        s.context.as_f64(),
        explain!(
            stack.explain,
            "driver + kernels: {}",
            format_size_exact(s.context)
        ),
    );
}

pub(super) fn push(s: &Scenario, stack: &mut Stack) {
    let ex = stack.explain;
    let transient = stack.sum(TRANSIENT);
    let persistent = stack.sum(PERSISTENT);
    push_context(s, stack);
    stack.push(
        "fragmentation",
        "Allocator fragmentation",
        transient * FRAGMENTATION_OF_TRANSIENT + persistent * FRAGMENTATION_OF_STATIC,
        explain!(
            ex,
            "{} of transient {} + {} of persistent {}",
            percent(FRAGMENTATION_OF_TRANSIENT),
            Bytes::from_f64(transient).display(s.units),
            percent(FRAGMENTATION_OF_STATIC),
            Bytes::from_f64(persistent).display(s.units)
        ),
    );
}
