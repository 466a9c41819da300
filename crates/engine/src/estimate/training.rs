//! Training state: what an optimizer step needs besides the weights and activations — LoRA
//! adapters, fp32 master weights, gradients, optimizer state — and autocast's 16-bit weight copies.

use super::formula::{Formula, Fx, Lazy};
use super::parallel::{routed_fraction, Gathered, Split};
use super::stack::{num, Stack};
use super::weights::{buffer, kept_on_gpu, linear_params, on_gpu};
use crate::dtype::{Dtype, FP32_BYTES};
use crate::estimate::{ComponentId, Lifetime};
use crate::model::{Architecture, Block, MatrixShape};
use crate::optimizer::{Optimizer, OptimizerStep};
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::Bytes;
use crate::workload::{Checkpointing, Mode};

/// The matrices an optimizer updates: every weight for full fine-tuning, the low-rank A and B
/// factors (r×in and out×r, Hu et al. 2021) of each targeted projection for LoRA. PEFT wraps
/// every `nn.Linear` whose name matches a target, so a mixture of experts gets adapters on every
/// expert's gate, up and down projections, and none on the router; under `quantize-moe-experts`
/// the routed experts are fused 3-D parameters, not `nn.Linear`, so no target name reaches them.
/// Also returns the trainable elements that lie in routed experts, which expert parallelism
/// splits.
fn trainable_matrices(s: &Scenario, a: &Architecture) -> (Vec<MatrixShape>, f64) {
    if !s.mode.is_adapter() {
        let mut all = a.block_linears();
        all.extend(a.embedding_matrices());
        return (all, a.params_in(&[Block::RoutedExpert]));
    }
    let r = f64::from(s.lora_rank);
    let mut shapes = Vec::new();
    let mut routed = 0.0;
    a.each_linear(|linear| {
        let fused_expert = s.quantize_moe_experts && linear.block == Block::RoutedExpert;
        let targeted = !fused_expert
            && linear
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
            if linear.block == Block::RoutedExpert {
                routed += r * (m.rows + m.cols) * m.count;
            }
        }
    });
    (shapes, routed)
}

/// The parameters the scenario trains (as [`TrainableState`] counts them): every one in full
/// fine-tuning, the adapters' otherwise.
pub(super) fn trainable_elements(s: &Scenario, r: &Resolved) -> f64 {
    let (matrices, routed_elements) = trainable_matrices(s, &r.arch);
    TrainableState::new(s, r, &matrices, routed_elements).trainable
}

/// A factor of 1 while the optimizer state (and master weights) are on the GPU, 0 when offloaded.
fn optimizer_on_gpu(s: &Scenario, fx: Fx) -> Formula {
    kept_on_gpu(fx, s.offload == Offload::None)
}

/// What the training components are sized from: the scenario, its resolution, how parallelism
/// splits the state, and what is trained.
#[derive(Clone, Copy)]
pub(super) struct Trained<'a> {
    s: &'a Scenario,
    r: &'a Resolved,
    split: &'a Split,
    pub state: TrainableState,
}

/// Pushes adapters, master weights, gradients and optimizer state; returns what is trained.
pub(super) fn push_state<'a>(
    s: &'a Scenario,
    r: &'a Resolved,
    stack: &mut Stack,
    split: &'a Split,
    notes: &mut Vec<String>,
) -> Trained<'a> {
    let (matrices, routed_elements) = trainable_matrices(s, &r.arch);
    let state = TrainableState::new(s, r, &matrices, routed_elements);
    let trained = Trained { s, r, split, state };
    if s.mode.is_adapter() && state.trainable == 0.0 {
        notes.push(format!(
            "lora-targets {} name no nn.Linear in this model{}: nothing is trained.",
            Lazy(|| s.lora_targets.to_wire()),
            if s.quantize_moe_experts {
                " (under quantize-moe-experts the routed experts are fused tensors)"
            } else {
                ""
            }
        ));
    }
    if s.mode.is_adapter() {
        trained.push_adapters(stack);
    }
    if r.master_weights && r.trained_dtype != Dtype::Fp32 {
        trained.push_master_weights(stack);
    }
    trained.push_gradients(stack);
    trained.push_optimizer(stack, notes, &matrices);
    trained
}

impl Trained<'_> {
    /// Adapters are parameters like any other: ZeRO-3/FSDP shard them with the rest, and tensor or
    /// pipeline parallelism place them with the layer they adapt.
    fn push_adapters(self, stack: &mut Stack) {
        let Trained { s, r, split, state } = self;
        let fx = stack.fx();
        let dtype = r.trained_dtype;
        let params = fx.num(state.trainable).unit(format_args!(
            "params (r={} on {})",
            s.lora_rank,
            Lazy(|| s.lora_targets.to_wire())
        ));
        let bytes = params * fx.num(dtype.bytes()).unit(format_args!("B ({dtype})"));
        stack.push(
            ComponentId::Adapters,
            "LoRA adapters",
            state.per_gpu(split, bytes, split.weights),
        );
    }

    /// The fp32 copy of the trained weights that the optimizer updates, beside their 16-bit copies.
    fn push_master_weights(self, stack: &mut Stack) {
        let Trained {
            s, split, state, ..
        } = self;
        let fx = stack.fx();
        let bytes = fx.num(state.trainable)
            * (fx.num(FP32_BYTES).unit("B (fp32)") * optimizer_on_gpu(s, fx));
        stack.push(
            ComponentId::MasterWeights,
            "fp32 master weights",
            state.per_gpu(split, bytes, split.optimizer),
        );
    }

    /// The gradients alive at the backward pass's peak, plus the unsharded gradients and
    /// reduce-scatter buffer of the layer a fully sharded backward pass works on.
    fn push_gradients(self, stack: &mut Stack) {
        let Trained { s, r, split, state } = self;
        let fx = stack.fx();
        let dtype = r.grads;
        let bytes = || fx.num(dtype.bytes()).unit(format_args!("B ({dtype})"));
        let gradients = if s.optimizer_step == OptimizerStep::InBackward {
            // torchtune's `register_optim_in_bwd_hooks` (torchtune/training/memory.py) gives each
            // parameter its own optimizer, steps it in a post-accumulate-grad hook and frees the
            // gradient with `zero_grad()`, so gradients exist one tensor at a time. The largest is
            // the embedding table's: an untied head's at the start of the backward pass, when the
            // activations peak, a tied table's from the head's backward to the lookup's, since its
            // hook fires only once both have accumulated.
            let largest = fx.num(state.largest_tensor).words("largest tensor");
            (largest * bytes() / split.ways(fx, split.gradients)).remark("stepped in backward")
        } else {
            state.per_gpu(split, fx.num(state.trainable) * bytes(), split.gradients)
        };
        let reduce = Gathered::new(s, r, split, linear_params(r)).reduce;
        stack.push(
            ComponentId::Gradients,
            "Gradients",
            gradients
                + buffer(
                    fx,
                    "one layer's unsharded grads and reduce-scatter buffer",
                    reduce,
                    s.units,
                ),
        );
    }
}

/// The trainable parameters, the elements the shape trains (which a bare `--params` may scale),
/// the fraction of them in routed experts, and the elements of the largest trainable tensor.
#[derive(Clone, Copy)]
pub(super) struct TrainableState {
    pub trainable: f64,
    shape_elements: f64,
    routed: f64,
    largest_tensor: f64,
}

impl TrainableState {
    /// What `matrices` train, `routed_elements` of their elements in routed experts.
    fn new(
        s: &Scenario,
        r: &Resolved,
        matrices: &[MatrixShape],
        routed_elements: f64,
    ) -> TrainableState {
        // What the shape trains: every parameter for full fine-tuning, else the matrices' elements.
        let shape_elements = if s.mode == Mode::Full {
            r.shape_params
        } else {
            matrices.iter().map(MatrixShape::elements).sum()
        };
        // A bare --params is the count to train in full fine-tuning; norms are part of it.
        let trainable = if s.mode == Mode::Full {
            r.params
        } else {
            shape_elements
        };
        TrainableState {
            trainable,
            shape_elements,
            routed: routed_elements / shape_elements.max(1.0),
            largest_tensor: matrices.iter().map(|m| m.rows * m.cols).fold(0.0, f64::max),
        }
    }

    /// The trainable parameters that `elements` of the shape's stand for.
    fn share_of(self, elements: f64) -> f64 {
        self.trainable * (elements / self.shape_elements.max(1.0)).min(1.0)
    }

    /// Per GPU, the trainable parameters' `bytes`, for a state split `ways` ways.
    fn per_gpu(self, split: &Split, bytes: Formula, ways: f64) -> Formula {
        split.share_of(bytes, ways, self.routed)
    }
}

impl Trained<'_> {
    fn push_optimizer(self, stack: &mut Stack, notes: &mut Vec<String>, matrices: &[MatrixShape]) {
        let Trained { s, r, split, state } = self;
        let fx = stack.fx();
        let trainable = state.trainable;
        let optimizer = match s.optimizer.state_bytes_per_param() {
            Some(per_param) => {
                fx.num(trainable) * fx.num(per_param).unit(format_args!("B ({})", s.optimizer))
            }
            None => {
                // Adafactor factors each matrix's second moment into a row and a column vector
                // (Shazeer & Stern 2018), with no first moment by default.
                let factored: f64 = matrices.iter().map(|m| (m.rows + m.cols) * m.count).sum();
                fx.num(factored).words("Σ(rows + cols)") * fx.num(FP32_BYTES).unit("B (factored)")
            }
        };
        let optimizer_bytes = optimizer.value();
        let on_gpu = s.offload == Offload::None;
        let paged = paged_state_bytes(s, notes, state, matrices, fx) * optimizer_on_gpu(s, fx);
        let paged_bytes = paged.value();
        let not_paged = optimizer * optimizer_on_gpu(s, fx)
            - fx.num(paged_bytes)
                .words("paged")
                .size(s.units)
                .shown_if(paged_bytes > 0.0);
        stack.push(
            ComponentId::Optimizer,
            "Optimizer states",
            split.share_of(not_paged, split.optimizer, state.routed),
        );
        if paged_bytes > 0.0 {
            stack.push(
                ComponentId::PagedOptimizer,
                "Paged optimizer states (CUDA managed)",
                split
                    .share_of(paged, split.optimizer, state.routed)
                    .remark("outside PyTorch's allocator"),
            );
        }
        if !on_gpu && stack.explain {
            notes.push(format!(
                "Offloaded to CPU RAM: {} of optimizer state{}.",
                Bytes::from_f64(split.share(optimizer_bytes, split.optimizer, state.routed))
                    .display(s.units),
                if r.master_weights {
                    " plus the fp32 master copy"
                } else {
                    ""
                }
            ));
        }
    }

    /// What the optimizer step needs beyond the backward pass's peak. The step runs once the backward
    /// pass has freed the activations and logits, with the weights, every gradient and the optimizer
    /// state alive, plus the update's temporary `sqrt(v)`
    /// ([`Optimizer::step_temporary_bytes_per_element`]): for every parameter at once in torch's
    /// multi-tensor step, for one tensor at a time in the per-parameter loop, none in the fused kernel.
    /// The step is the peak when that temporary outgrows what the backward pass held besides the
    /// state (full fine-tuning with checkpointing or short sequences). Only the excess is pushed, so
    /// the stack's total is the larger of the two moments.
    ///
    /// [`Optimizer::step_temporary_bytes_per_element`]: crate::optimizer::Optimizer::step_temporary_bytes_per_element
    pub(super) fn push_optimizer_step(self, stack: &mut Stack) {
        let Trained {
            s, split, state, ..
        } = self;
        // A paged optimizer is bitsandbytes', whose 32-bit and 8-bit kernels update in place.
        let torch_step = if pages_state(s) { 0.0 } else { 1.0 };
        let fx = stack.fx();
        let per_element = fx
            .num(
                s.optimizer.step_temporary_bytes_per_element()
                    * optimizer_on_gpu(s, fx).value()
                    * torch_step,
            )
            .unit(format_args!("B ({} step's sqrt(v))", s.optimizer_step));
        let temporary = match s.optimizer_step {
            OptimizerStep::Foreach => state.per_gpu(
                split,
                fx.num(state.trainable) * per_element,
                split.optimizer,
            ),
            OptimizerStep::ForLoop | OptimizerStep::InBackward => {
                fx.num(state.largest_tensor).words("largest tensor") * per_element
                    / split.ways(fx, split.optimizer)
            }
            OptimizerStep::Fused => fx.num(0.0),
        };
        let freed = fx
            .num(stack.sum_lifetime(Lifetime::ForwardBackward))
            .words("freed activations and logits")
            .size(s.units);
        stack.push(
            ComponentId::OptimizerStep,
            "Optimizer step (beyond the backward peak)",
            (temporary - freed).max(fx.num(0.0)),
        );
    }

    /// torch.autocast casts each fp32 weight to the 16-bit compute dtype where a matmul uses it, and
    /// the matmul keeps that copy for its input's gradient; trainable weights' casts are also cached
    /// until the forward pass ends (`cache_enabled`, PyTorch's AMP docs). So when the forward pass
    /// ends, a copy of every linear weight is alive, except for frozen weights under checkpointing,
    /// which are cast again layer by layer. Adapters wider than the compute dtype (peft's fp32 ones)
    /// are trainable, so every layer's copies are cached.
    pub(super) fn push_weight_copies(self, stack: &mut Stack) {
        let Trained { s, r, split, state } = self;
        let fx = stack.fx();
        let dtype = r.act_dtype;
        let e = dtype.bytes();
        if e >= FP32_BYTES || s.sharding.is_fully_sharded() {
            return;
        }
        let e = || fx.num(dtype.bytes()).unit(format_args!("B ({dtype})"));
        let linear = linear_params(r);
        let all_layers = s.mode == Mode::Full || s.checkpointing == Checkpointing::None;
        let copied = match (r.weights, all_layers) {
            (Dtype::Fp32, true) => linear,
            (Dtype::Fp32, false) => linear / f64::from(r.arch.layers),
            _ => 0.0,
        };
        let adapters = if s.mode.is_adapter() && r.trained_dtype.bytes() > dtype.bytes() {
            state.trainable
        } else {
            0.0
        };
        let adapter_copies = if adapters > 0.0 {
            let adapters = fx.num(state.trainable).unit("adapter weights");
            state.per_gpu(split, adapters * e(), split.weights)
        } else {
            fx.num(0.0).shown_if(false)
        };
        if copied + adapters == 0.0 {
            return;
        }
        let linear_copies = fx.num(copied).unit(if all_layers {
            "linear weights"
        } else {
            "linear weights of one layer"
        }) * e()
            * on_gpu(s, fx);
        let routed = routed_fraction(r) * r.params / linear.max(1.0);
        stack.push(
            ComponentId::WeightCopies,
            "16-bit weight copies (autocast)",
            split
                .share_of(linear_copies, split.weights, routed)
                .shown_if(copied > 0.0)
                + adapter_copies,
        );
    }
}

/// Whether the scenario asks for a paged optimizer that bitsandbytes has (`PagedAdamW`,
/// `PagedAdamW8bit`, `PagedLion`).
fn pages_state(s: &Scenario) -> bool {
    s.paged_optimizer
        && matches!(
            s.optimizer,
            Optimizer::Adamw | Optimizer::Adamw8bit | Optimizer::Lion
        )
}

/// bitsandbytes pages a state buffer only when its tensor has at least this many values
/// (`Optimizer8bit.get_state_buffer`: `if not self.is_paged or p.numel() < 1e5`, bitsandbytes
/// 0.45); smaller ones, and the 8-bit block scales, are ordinary PyTorch tensors.
pub const PAGED_MIN_VALUES: f64 = 1e5;

/// The optimizer state a bitsandbytes paged optimizer allocates with `cudaMallocManaged`
/// (`functional.get_paged`): the moments of every trainable matrix of [`PAGED_MIN_VALUES`] or
/// more. It sits on the GPU while it fits, so nvidia-smi counts it, but PyTorch's allocated and
/// reserved peaks do not; under memory pressure the driver evicts its pages to host memory
/// instead of failing. Optimizers bitsandbytes has no paged version of keep their state in
/// PyTorch's allocator, and the note says so.
fn paged_state_bytes(
    s: &Scenario,
    notes: &mut Vec<String>,
    state: TrainableState,
    matrices: &[MatrixShape],
    fx: Fx,
) -> Formula {
    if !s.paged_optimizer {
        return fx.num(0.0);
    }
    if !pages_state(s) {
        notes.push(format!(
            "paged-optimizer: bitsandbytes has no paged {}; its state is counted as PyTorch tensors.",
            s.optimizer
        ));
        return fx.num(0.0);
    }
    let large: f64 = matrices
        .iter()
        .filter(|m| m.rows * m.cols >= PAGED_MIN_VALUES)
        .map(MatrixShape::elements)
        .sum();
    let moments = s.optimizer.moment_bytes_per_param().unwrap_or(0.0);
    fx.num(state.share_of(large)).unit(format_args!(
        "params in tensors of ≥ {} values",
        Lazy(|| num(PAGED_MIN_VALUES))
    )) * fx.num(moments).unit("B of moments")
}
