//! Training activations: what the forward pass saves for the backward pass under each
//! checkpointing policy, plus the one layer the backward pass works on at a time.

use super::parallel::Split;
use super::per_token::{
    adapter_bytes_per_token, dropout_bytes_per_token, eager_scores_bytes_per_token,
    layer_bytes_per_token,
};
use super::stack::{explain, num, Stack};
use crate::scenario::{Resolved, Scenario};
use crate::workload::Checkpointing;

pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let ex = stack.explain;
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    let tokens = f64::from(s.batch) * f64::from(s.seq);
    let layers = f64::from(a.layers);
    let per_layer = layer_bytes_per_token(a, e)
        + dropout_bytes_per_token(s, a)
        + adapter_bytes_per_token(s, r, e);
    let scores = eager_scores_bytes_per_token(s, a, e, f64::from(s.seq));
    let one_layer = tokens * (per_layer + scores);
    let (saved, saved_formula) = match s.checkpointing {
        Checkpointing::None => (
            layers * tokens * (per_layer + scores),
            explain!(
                ex,
                "L × b·s × (layer {} B + scores {} B) = {} × {} × {}",
                num(per_layer),
                num(scores),
                a.layers,
                num(tokens),
                num(per_layer + scores)
            ),
        ),
        Checkpointing::Selective => (
            layers * tokens * per_layer,
            explain!(
                ex,
                "L × b·s × layer {} B (scores recomputed) = {} × {} × {}",
                num(per_layer),
                a.layers,
                num(tokens),
                num(per_layer)
            ),
        ),
        Checkpointing::Full => (
            layers * tokens * f64::from(a.hidden) * e,
            explain!(
                ex,
                "L × b·s × H × {} B (layer inputs only) = {} × {} × {}",
                e,
                a.layers,
                num(tokens),
                a.hidden
            ),
        ),
    };
    // The backward pass of one layer needs that layer's activations (recomputed, under
    // checkpointing) and their gradients at once.
    let working = one_layer;
    stack.push(
        "activations",
        "Activations",
        (saved + working) / split.model_parallel,
        explain!(
            ex,
            "{saved_formula} + one layer in backward {}{}",
            num(working),
            split.note(split.model_parallel)
        ),
    );
}
