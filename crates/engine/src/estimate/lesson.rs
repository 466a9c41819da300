//! Chapter 62's formula, term for term:
//! `Total = P·Bw + P·Bg + P·Bo + 2·L·B·S·H·Ba (×0.4 with checkpointing) + 0.5 GB`, with LoRA's
//! trainable count `2 × rank × hidden × num_target_modules × layers`.
//!
//! The lesson's printed Python outputs (98.65 and 5.36) contradict its own code, which gives 97.57
//! and 5.01 for the same inputs, so only the formula is reproduced, never those printouts. Its QLoRA
//! prose says ~5.6 GB because it rounds checkpointed activations up to "~1 GB"; the formula gives
//! 1.07 × 0.4 = 0.43 GB.

use super::parallel::Split;
use super::stack::{explain, num, Stack};
use crate::dtype::FP32_BYTES;
use crate::estimate::ComponentId;
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::GB;
use crate::workload::Checkpointing;

/// Chapter 62's fixed "CUDA kernels + workspace" overhead: 0.5 GB.
pub const LESSON_OVERHEAD_BYTES: f64 = 0.5 * GB as f64;
/// Chapter 62: "Activations ≈ 2 × layers × batch_size × seq_length × hidden_dim × bytes".
pub const LESSON_ACTIVATION_FACTOR: f64 = 2.0;
/// Chapter 62's checkpointing multiplier ("activation_base *= 0.4  # ~60% savings").
pub const LESSON_CHECKPOINT_FACTOR: f64 = 0.4;

/// Pushes the lesson's terms and returns the trainable parameter count.
pub(super) fn lesson(s: &Scenario, r: &Resolved, stack: &mut Stack) -> f64 {
    let ex = stack.explain;
    let split = Split::new(s);
    let p = r.params;
    let bw = r.weights.bytes();
    stack.push(
        ComponentId::Weights,
        "Model weights",
        p * bw / split.weights,
        explain!(
            ex,
            "P × Bw = {} × {} B{}",
            num(p),
            bw,
            split.note(split.weights)
        ),
    );
    if s.mode.is_training() {
        let trainable = training_terms(s, r, stack, &split);
        activations(s, r, stack, &split);
        overhead(stack);
        trainable
    } else {
        overhead(stack);
        0.0
    }
}

/// Gradients, optimizer state and (when on) master weights for the trainable count.
fn training_terms(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) -> f64 {
    let ex = stack.explain;
    let a = &r.arch;
    let (trainable, trainable_formula) = if s.mode.is_adapter() {
        let count = 2.0
            * f64::from(s.lora_rank)
            * f64::from(a.hidden)
            * f64::from(s.lora_targets.len())
            * f64::from(a.layers);
        let text = explain!(
            ex,
            "2 × r × H × targets × L = 2 × {} × {} × {} × {}",
            s.lora_rank,
            a.hidden,
            s.lora_targets.len(),
            a.layers
        );
        (count, text)
    } else {
        (r.params, explain!(ex, "P = {}", num(r.params)))
    };
    let bg = r.grads.bytes();
    stack.push(
        ComponentId::Gradients,
        "Gradients",
        trainable * bg / split.gradients,
        explain!(
            ex,
            "({trainable_formula}) × Bg {} B{}",
            bg,
            split.note(split.gradients)
        ),
    );
    // The OOM budget guide's table gives Adafactor "0.5× model size"; the lesson only covers AdamW.
    let bo = s
        .optimizer
        .state_bytes_per_param()
        .unwrap_or(0.5 * r.weights.bytes());
    let optimizer_on_gpu = if s.offload == Offload::None { 1.0 } else { 0.0 };
    stack.push(
        ComponentId::Optimizer,
        "Optimizer states",
        trainable * bo * optimizer_on_gpu / split.optimizer,
        explain!(
            ex,
            "{} trainable × Bo {} B ({}){}",
            num(trainable),
            bo,
            s.optimizer,
            split.note(split.optimizer)
        ),
    );
    if r.master_weights {
        stack.push(
            ComponentId::MasterWeights,
            "fp32 master weights",
            trainable * FP32_BYTES * optimizer_on_gpu / split.optimizer,
            explain!(ex, "{} trainable × {} B", num(trainable), num(FP32_BYTES)),
        );
    }
    trainable
}

fn activations(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let ex = stack.explain;
    let a = &r.arch;
    let ba = r.act_dtype.bytes();
    let checkpoint = if s.checkpointing == Checkpointing::None {
        1.0
    } else {
        LESSON_CHECKPOINT_FACTOR
    };
    let activations = LESSON_ACTIVATION_FACTOR
        * f64::from(a.layers)
        * f64::from(s.batch)
        * f64::from(s.seq)
        * f64::from(a.hidden)
        * ba
        * checkpoint
        / split.model_parallel;
    stack.push(
        ComponentId::Activations,
        "Activations",
        activations,
        explain!(
            ex,
            "{} × L × B × S × H × Ba{} = {} × {} × {} × {} × {} × {} B{}",
            num(LESSON_ACTIVATION_FACTOR),
            if checkpoint < 1.0 {
                format!(" × {} (checkpointing)", num(LESSON_CHECKPOINT_FACTOR))
            } else {
                String::new()
            },
            num(LESSON_ACTIVATION_FACTOR),
            a.layers,
            s.batch,
            s.seq,
            a.hidden,
            ba,
            split.note(split.model_parallel)
        ),
    );
}

fn overhead(stack: &mut Stack) {
    let ex = stack.explain;
    stack.push(
        ComponentId::CudaContext,
        "Overhead (CUDA kernels + workspace)",
        LESSON_OVERHEAD_BYTES,
        explain!(ex, "fixed {} GB", num(LESSON_OVERHEAD_BYTES / GB as f64)),
    );
}
