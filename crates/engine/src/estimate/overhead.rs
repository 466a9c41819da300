//! What sits around the tensors: the CUDA context and the caching allocator's slack.

use super::component::{ComponentId, Slack};
use super::stack::Stack;
use crate::scenario::Scenario;

/// PyTorch's caching allocator rounds large blocks up and keeps freed blocks cached, so reserved
/// memory exceeds the live tensors. Transient tensors (activations, logits, KV growth) fragment;
/// tensors allocated once and kept (weights, optimizer state) barely do; each component's
/// `Slack` says which it is. The split follows
/// Answer.AI's fsdp_qlora benchmark (peak allocated 8.28 GiB vs reserved 9.16 GiB, row M131's source).
pub const FRAGMENTATION_OF_TRANSIENT: f64 = 0.20;
pub const FRAGMENTATION_OF_STATIC: f64 = 0.02;

/// The CUDA context every process on a GPU holds before its first tensor.
pub(super) fn push_context(s: &Scenario, stack: &mut Stack) {
    let context = stack
        .fx()
        .num(s.context.as_f64())
        .words("driver + kernels")
        .exact_size();
    stack.push(ComponentId::CudaContext, "CUDA context", context);
}

pub(super) fn push(s: &Scenario, stack: &mut Stack) {
    let fx = stack.fx();
    let transient = fx
        .num(stack.sum_slack(Slack::Transient))
        .words("transient")
        .size(s.units);
    let persistent = fx
        .num(stack.sum_slack(Slack::Persistent))
        .words("persistent")
        .size(s.units);
    push_context(s, stack);
    stack.push(
        ComponentId::Fragmentation,
        "Allocator fragmentation",
        transient * fx.num(FRAGMENTATION_OF_TRANSIENT).percent()
            + persistent * fx.num(FRAGMENTATION_OF_STATIC).percent(),
    );
}
