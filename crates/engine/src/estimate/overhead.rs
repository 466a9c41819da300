//! What sits around the tensors: the CUDA context and the caching allocator's slack.

use super::component::{ComponentId, Slack};
use super::stack::{explain, percent, Stack};
use crate::scenario::Scenario;
use crate::units::{format_size_exact, Bytes};

/// PyTorch's caching allocator rounds large blocks up and keeps freed blocks cached, so reserved
/// memory exceeds the live tensors. Transient tensors (activations, logits, KV growth) fragment;
/// tensors allocated once and kept (weights, optimizer state) barely do; each component's
/// `Slack` says which it is. The split follows
/// Answer.AI's fsdp_qlora benchmark (peak allocated 8.28 GiB vs reserved 9.16 GiB, row M131's source).
pub const FRAGMENTATION_OF_TRANSIENT: f64 = 0.20;
pub const FRAGMENTATION_OF_STATIC: f64 = 0.02;

/// The CUDA context every process on a GPU holds before its first tensor.
pub(super) fn push_context(s: &Scenario, stack: &mut Stack) {
    stack.push(
        ComponentId::CudaContext,
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
    let transient = stack.sum_slack(Slack::Transient);
    let persistent = stack.sum_slack(Slack::Persistent);
    push_context(s, stack);
    stack.push(
        ComponentId::Fragmentation,
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
