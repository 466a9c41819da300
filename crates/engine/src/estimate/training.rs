//! Training state: what an optimizer step needs besides the weights and activations — LoRA
//! adapters, fp32 master weights, gradients, optimizer state — and autocast's 16-bit weight copies.

use super::parallel::Split;
use super::stack::{explain, num, Stack};
use super::weights::{linear_params, on_gpu};
use crate::dtype::{Dtype, FP32_BYTES};
use crate::model::{Architecture, MatrixShape};
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::Bytes;
use crate::workload::{Checkpointing, Mode};

/// The matrices an optimizer updates: every weight for full fine-tuning, the low-rank A and B
/// factors (r×in and out×r, Hu et al. 2021) of each targeted projection for LoRA. PEFT wraps
/// every `nn.Linear` whose name matches a target, so a mixture of experts gets adapters on every
/// expert's gate, up and down projections, and none on the router.
fn trainable_matrices(s: &Scenario, a: &Architecture) -> Vec<MatrixShape> {
    if !s.mode.is_adapter() {
        let mut all = a.block_linears();
        all.extend(a.embedding_matrices());
        return all;
    }
    let r = f64::from(s.lora_rank);
    let mut shapes = Vec::new();
    a.each_linear(|linear| {
        let targeted = linear
            .projection
            .is_some_and(|p| s.lora_targets.contains(p));
        if targeted {
            let m = linear.shape;
            shapes.push(MatrixShape {
                rows: r,
                cols: m.rows,
                count: m.count,
            });
            shapes.push(MatrixShape {
                rows: m.cols,
                cols: r,
                count: m.count,
            });
        }
    });
    shapes
}

/// 1 while the optimizer state (and master weights) are on the GPU, 0 when offloaded.
fn optimizer_on_gpu(s: &Scenario) -> f64 {
    if s.offload == Offload::None {
        1.0
    } else {
        0.0
    }
}

/// Pushes adapters, master weights, gradients and optimizer state; returns the trainable count.
pub(super) fn push_state(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    notes: &mut Vec<String>,
) -> f64 {
    let ex = stack.explain;
    let matrices = trainable_matrices(s, &r.arch);
    // A bare --params is the count to train in full fine-tuning; norms are part of it.
    let trainable = if s.mode == Mode::Full {
        r.params
    } else {
        matrices.iter().map(MatrixShape::elements).sum()
    };
    if s.mode.is_adapter() {
        // Adapters are parameters like any other: ZeRO-3/FSDP shard them with the rest, and tensor
        // or pipeline parallelism place them with the layer they adapt.
        stack.push(
            "adapters",
            "LoRA adapters",
            trainable * r.param_dtype.bytes() / split.weights,
            explain!(
                ex,
                "{} params (r={} on {}) × {} B ({}){}",
                num(trainable),
                s.lora_rank,
                s.lora_targets.to_wire(),
                r.param_dtype.bytes(),
                r.param_dtype,
                split.note(split.weights)
            ),
        );
    }
    if r.master_weights && r.param_dtype != Dtype::Fp32 {
        stack.push(
            "master_weights",
            "fp32 master weights",
            trainable * FP32_BYTES * optimizer_on_gpu(s) / split.optimizer,
            explain!(
                ex,
                "{} × {} B{}",
                num(trainable),
                num(FP32_BYTES),
                split.note(split.optimizer)
            ),
        );
    }
    stack.push(
        "gradients",
        "Gradients",
        trainable * r.grads.bytes() / split.gradients,
        explain!(
            ex,
            "{} × {} B ({}){}",
            num(trainable),
            r.grads.bytes(),
            r.grads,
            split.note(split.gradients)
        ),
    );
    push_optimizer(s, r, stack, split, notes, trainable, &matrices);
    trainable
}

fn push_optimizer(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    notes: &mut Vec<String>,
    trainable: f64,
    matrices: &[MatrixShape],
) {
    let ex = stack.explain;
    let (optimizer_bytes, optimizer_formula) = match s.optimizer.state_bytes_per_param() {
        Some(per_param) => (
            trainable * per_param,
            explain!(ex, "{} × {} B ({})", num(trainable), per_param, s.optimizer),
        ),
        None => {
            // Adafactor factors each matrix's second moment into a row and a column vector
            // (Shazeer & Stern 2018), with no first moment by default.
            let factored: f64 = matrices.iter().map(|m| (m.rows + m.cols) * m.count).sum();
            (
                factored * FP32_BYTES,
                explain!(
                    ex,
                    "Σ(rows + cols) {} × {} B (factored)",
                    num(factored),
                    num(FP32_BYTES)
                ),
            )
        }
    };
    let on_gpu = optimizer_on_gpu(s);
    stack.push(
        "optimizer",
        "Optimizer states",
        optimizer_bytes * on_gpu / split.optimizer,
        explain!(
            ex,
            "{optimizer_formula}{}{}",
            split.note(split.optimizer),
            if on_gpu == 0.0 {
                " (offloaded to CPU)"
            } else {
                ""
            }
        ),
    );
    if on_gpu == 0.0 && ex {
        notes.push(format!(
            "Offloaded to CPU RAM: {} of optimizer state{}.",
            Bytes::from_f64(optimizer_bytes / split.optimizer).display(s.units),
            if r.master_weights {
                " plus the fp32 master copy"
            } else {
                ""
            }
        ));
    }
}

/// torch.autocast casts each fp32 weight to the 16-bit compute dtype where a matmul uses it, and
/// the matmul keeps that copy for its input's gradient; trainable weights' casts are also cached
/// until the forward pass ends (`cache_enabled`, PyTorch's AMP docs). So when the forward pass
/// ends, a copy of every linear weight is alive, except for frozen weights under checkpointing,
/// which are cast again layer by layer.
pub(super) fn push_weight_copies(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let e = r.act_dtype.bytes();
    if r.weights != Dtype::Fp32 || e >= FP32_BYTES || s.sharding.is_fully_sharded() {
        return;
    }
    let linear = linear_params(r);
    let all_layers = s.mode == Mode::Full || s.checkpointing == Checkpointing::None;
    let copied = if all_layers {
        linear
    } else {
        linear / f64::from(r.arch.layers)
    };
    stack.push(
        "weight_copies",
        "16-bit weight copies (autocast)",
        copied * e * on_gpu(s) / split.weights,
        explain!(
            stack.explain,
            "{} linear weights{} × {} B ({})",
            num(copied),
            if all_layers { "" } else { " of one layer" },
            e,
            r.act_dtype
        ),
    );
}
