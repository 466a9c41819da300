//! Chapter 62's formula, term for term:
//! `Total = P·Bw + P·Bg + P·Bo + 2·L·B·S·H·Ba (×0.4 with checkpointing) + 0.5 GB`, with LoRA's
//! trainable count `2 × rank × hidden × num_target_modules × layers`.
//!
//! The lesson's printed Python outputs (98.65 and 5.36) contradict its own code, which gives 97.57
//! and 5.01 for the same inputs, so only the formula is reproduced, never those printouts. Its QLoRA
//! prose says ~5.6 GB because it rounds checkpointed activations up to "~1 GB"; the formula gives
//! 1.07 × 0.4 = 0.43 GB.

use super::formula::Formula;
use super::parallel::Split;
use super::stack::Stack;
use super::weights::kept_on_gpu;
use crate::dtype::FP32_BYTES;
use crate::estimate::ComponentId;
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::{Units, GB};
use crate::workload::Checkpointing;

/// Chapter 62's fixed "CUDA kernels + workspace" overhead: 0.5 GB.
pub const LESSON_OVERHEAD_BYTES: f64 = 0.5 * GB as f64;
/// Chapter 62: "Activations ≈ 2 × layers × batch_size × seq_length × hidden_dim × bytes".
pub const LESSON_ACTIVATION_FACTOR: f64 = 2.0;
/// Chapter 62's checkpointing multiplier ("activation_base *= 0.4  # ~60% savings").
pub const LESSON_CHECKPOINT_FACTOR: f64 = 0.4;

/// Pushes the lesson's terms and returns the trainable parameter count.
pub(super) fn lesson(s: &Scenario, r: &Resolved, stack: &mut Stack) -> f64 {
    let fx = stack.fx();
    let split = Split::new(s);
    let weights = fx.sym("P", r.params) * fx.sym("Bw", r.weights.bytes()).unit("B")
        / split.ways(fx, split.weights);
    stack.push(ComponentId::Weights, "Model weights", weights);
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
    let fx = stack.fx();
    let a = &r.arch;
    let trainable: Formula = if s.mode.is_adapter() {
        fx.num(2.0)
            * fx.sym("r", f64::from(s.lora_rank))
            * fx.sym("H", f64::from(a.hidden))
            * fx.sym("targets", f64::from(s.lora_targets.len()))
            * fx.sym("L", f64::from(a.layers))
    } else {
        fx.sym("P", r.params)
    };
    let gradients = trainable.clone() * fx.sym("Bg", r.grads.bytes()).unit("B")
        / split.ways(fx, split.gradients);
    stack.push(ComponentId::Gradients, "Gradients", gradients);
    // The OOM budget guide's table gives Adafactor "0.5× model size"; the lesson only covers AdamW.
    let bo = s
        .optimizer
        .state_bytes_per_param()
        .unwrap_or(0.5 * r.weights.bytes());
    let on_gpu = || kept_on_gpu(fx, s.offload == Offload::None);
    let optimizer =
        trainable.clone() * fx.sym("Bo", bo).unit(format_args!("B ({})", s.optimizer)) * on_gpu()
            / split.ways(fx, split.optimizer);
    stack.push(ComponentId::Optimizer, "Optimizer states", optimizer);
    if r.master_weights {
        let master = trainable.clone() * fx.num(FP32_BYTES).unit("B (fp32)") * on_gpu()
            / split.ways(fx, split.optimizer);
        stack.push(ComponentId::MasterWeights, "fp32 master weights", master);
    }
    trainable.value()
}

fn activations(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let fx = stack.fx();
    let a = &r.arch;
    let checkpoint = if s.checkpointing == Checkpointing::None {
        fx.num(1.0).shown_if(false)
    } else {
        fx.num(LESSON_CHECKPOINT_FACTOR).unit("(checkpointing)")
    };
    let activations = fx.num(LESSON_ACTIVATION_FACTOR)
        * fx.sym("L", f64::from(a.layers))
        * fx.sym("B", f64::from(s.batch))
        * fx.sym("S", f64::from(s.seq))
        * fx.sym("H", f64::from(a.hidden))
        * fx.sym("Ba", r.act_dtype.bytes()).unit("B")
        * checkpoint
        / split.ways(fx, split.model_parallel);
    stack.push(ComponentId::Activations, "Activations", activations);
}

fn overhead(stack: &mut Stack) {
    let overhead = stack
        .fx()
        .num(LESSON_OVERHEAD_BYTES)
        .words("fixed")
        .size(Units::Gb);
    stack.push(
        ComponentId::CudaContext,
        "Overhead (CUDA kernels + workspace)",
        overhead,
    );
}
