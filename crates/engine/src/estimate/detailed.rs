//! The detailed method: each tensor a PyTorch training or inference step keeps alive at its peak,
//! component by component, with the constants cited where they are defined.

use super::parallel::Split;
use super::serving::{self, Serving};
use super::stack::Stack;
use super::{activations, inference, logits, overhead, parallel, training, weights};
use crate::scenario::{Resolved, Scenario};

/// Pushes every component and returns the trainable parameter count (0 for inference) and, for
/// a serving runtime, what it does with its pool.
pub(super) fn detailed(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    notes: &mut Vec<String>,
) -> (f64, Option<Serving>) {
    let split = Split::new(s);
    weights::push(s, r, stack, &split);
    notes.extend(weights::unused_checkpoint(s, r));
    notes.extend(weights::kbit_prep_note(s, r));
    if !s.mode.is_training() {
        if let Some(serving) = serving::push(s, r, stack, notes) {
            return (0.0, Some(serving));
        }
        inference::push(s, r, stack, &split);
        parallel::push_all_to_all(s, r, stack);
        logits::push_prompt(s, r, stack);
        logits::push_kept_scores(s, r, stack, notes);
        overhead::push(s, stack);
        return (0.0, None);
    }
    let trained = training::push_state(s, r, stack, &split, notes);
    trained.push_weight_copies(stack);
    activations::push(s, r, stack, &split);
    weights::push_dequantized_experts(s, r, stack, &split, notes);
    parallel::push_all_to_all(s, r, stack);
    logits::push_training(s, r, stack, &split, notes);
    trained.push_optimizer_step(stack);
    overhead::push(s, stack);
    (trained.state.trainable, None)
}
