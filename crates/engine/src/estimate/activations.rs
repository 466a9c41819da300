//! Training activations: what the forward pass saves for the backward pass under each
//! checkpointing policy, on every layer or every k-th, where it is kept (the GPU, or CPU memory
//! under activation offloading), plus the one layer the backward pass works on at a time.

use super::formula::{Formula, Fx, Lazy};
use super::parallel::Split;
use super::per_token::{
    adapter_bytes_per_token, dropout_bytes_per_token, eager_scores_bytes_per_token,
    layer_bytes_per_token, norms_bytes_per_token, op_checkpoint_bytes_per_token,
};
use super::stack::{num, Stack};
use crate::dtype::BYTE;
use crate::estimate::ComponentId;
use crate::model::Architecture;
use crate::scenario::{Resolved, Scenario};
use crate::workload::{Checkpointing, SequenceParallel};

/// How many of `layers` blocks the policy wraps when only every `every`-th is checkpointed:
/// torchtitan counts the blocks from 1 and wraps those whose count is a multiple of k
/// (`ptd_checkpoint_wrapper._count % ac_freq == 0`, parallelize_llama.py @9dec370), so ⌊L/k⌋.
pub(super) fn checkpointed_layers(layers: f64, every: u32) -> f64 {
    (layers / f64::from(every.max(1))).floor()
}

pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let fx = stack.fx();
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    let tokens = split.tokens(s);
    let per_layer = layer_bytes_per_token(s, a, e, s.compile)
        + dropout_bytes_per_token(s, a)
        + adapter_bytes_per_token(s, r, e);
    let scores = eager_scores_bytes_per_token(s, a, e, split.sequence(s));
    let whole = Unsplit::new(s, a, e, split.tensor);
    let everything = per_layer + scores + whole.layer;
    // What a checkpointed layer keeps per token; with no checkpointing, everything.
    let kept = match s.checkpointing {
        Checkpointing::None => (everything, "layer + scores"),
        Checkpointing::Selective => (per_layer + whole.layer, "layer, scores recomputed"),
        Checkpointing::Op => (
            op_checkpoint_bytes_per_token(s, a, e, scores) + whole.input,
            "input, attention and every other matmul output",
        ),
        Checkpointing::Full => (f64::from(a.hidden) * e + whole.input, "layer input only"),
    };
    let saved = saved_for_backward(s, a, fx.sym("b·s", tokens), kept, everything);
    let on_gpu = if s.offload_activations {
        offloaded(saved, f64::from(a.layers), fx)
    } else {
        saved
    };
    // The backward pass of one layer needs that layer's activations (recomputed, under
    // checkpointing) and their gradients at once.
    let working = fx.sym("b·s", tokens) * fx.num(everything).unit("B (one layer in backward)");
    let head_input = fx.sym("b·s", tokens) * fx.num(whole.head_input).unit("B (the head's input)");
    let mut bytes = (on_gpu + working + head_input.shown_if(whole.head_input > 0.0))
        / split.ways(fx, split.model_parallel);
    if whole.layer > 0.0 {
        bytes = bytes.remark(format_args!(
            "with {} B/token per layer {}",
            Lazy(|| num(whole.layer)),
            whole.what
        ));
    }
    stack.push(ComponentId::Activations, "Activations", bytes);
}

/// What the forward pass saves for the backward pass over every layer: `kept` per token on the
/// checkpointed layers, `everything` on the rest.
fn saved_for_backward(
    s: &Scenario,
    a: &Architecture,
    tokens: Formula,
    (kept, kept_label): (f64, &str),
    everything: f64,
) -> Formula {
    let fx = tokens.fx();
    let layers = f64::from(a.layers);
    let checkpointed = if s.checkpointing == Checkpointing::None {
        0.0
    } else {
        checkpointed_layers(layers, s.checkpoint_every)
    };
    let plain = layers - checkpointed;
    let (checkpointed_symbol, plain_symbol) = if plain == 0.0 || checkpointed == 0.0 {
        ("L", "L")
    } else {
        ("L_ckpt", "L_rest")
    };
    let all_kept = if s.checkpointing == Checkpointing::None {
        kept_label
    } else {
        "all kept"
    };
    let on_checkpointed = fx.sym(checkpointed_symbol, checkpointed)
        * fx.num(kept).unit(format_args!("B ({kept_label})"));
    let on_plain =
        fx.sym(plain_symbol, plain) * fx.num(everything).unit(format_args!("B ({all_kept})"));
    tokens * (on_checkpointed.shown_if(checkpointed != 0.0) + on_plain.shown_if(plain != 0.0))
}

/// What tensor parallelism over `t` GPUs leaves whole, per token, as the excess over the 1/t
/// share the later division by `t` gives it, so that the division leaves it whole.
struct Unsplit {
    /// Per layer, kept with the layer's activations.
    layer: f64,
    /// Per layer, the layer input a checkpointed layer keeps.
    input: f64,
    /// The LM head's input.
    head_input: f64,
    what: &'static str,
}

impl Unsplit {
    /// - `dtensor`: torchtitan's plan (`parallelize_llama.py` `apply_tp`; torchtune and
    ///   accelerate use the same DTensor styles) runs each norm `SequenceParallel`, then
    ///   `PrepareModuleInput` redistributes its output from `Shard(1)` to `Replicate()` before the
    ///   `ColwiseParallel` q/k/v and gate/up projections, which save that whole-sequence input for
    ///   their weight gradients: two hidden-wide tensors per layer. The LM head's input is
    ///   gathered too (`output` is `ColwiseParallel` with `input_layouts=Shard(1)`). Under float8
    ///   training torchtitan uses torchao's `PrepareFloat8ModuleInput` and
    ///   `Float8ColwiseParallel` (torchao/float8/float8_tensor_parallel.py), which cast the input
    ///   to float8 before the all-gather, and the float8 linears save that copy: 1 B an element.
    /// - `megatron`: Megatron-LM's column-parallel linears save the sequence-sharded input and
    ///   gather it again in the backward pass (`LinearWithGradAccumulationAndAsyncCommunication`,
    ///   megatron/core/tensor_parallel/layers.py; Korthikanti et al. 2022, §4.2.2): nothing whole.
    /// - `off`: without sequence parallelism each GPU runs the norms, dropouts and residual adds on
    ///   the whole sequence (Korthikanti et al. 2022, §4.2.1: the 10·sbh of 34·sbh that tensor
    ///   parallelism alone does not split): both norms' saved tensors, the dropout masks, and a
    ///   checkpointed layer's input.
    fn new(s: &Scenario, a: &Architecture, e: f64, tensor: f64) -> Unsplit {
        let extra = (tensor - 1.0).max(0.0);
        let h = f64::from(a.hidden);
        match s.sequence_parallel {
            SequenceParallel::Dtensor => {
                let element = if s.float8.is_on() { BYTE } else { e };
                const GATHERED_PER_LAYER: f64 = 2.0;
                Unsplit {
                    layer: GATHERED_PER_LAYER * h * element * extra,
                    input: 0.0,
                    head_input: h * element * extra,
                    what: "of all-gathered inputs",
                }
            }
            SequenceParallel::Megatron => Unsplit {
                layer: 0.0,
                input: 0.0,
                head_input: 0.0,
                what: "",
            },
            SequenceParallel::Off => Unsplit {
                layer: (norms_bytes_per_token(a, e, s.compile) + dropout_bytes_per_token(s, a))
                    * extra,
                input: h * e * extra,
                head_input: h * e * extra,
                what: "of norms and dropouts whole on each tensor-parallel GPU",
            },
        }
    }
}

/// Activation offloading (torchtune's `OffloadActivations`, which TRL ported and axolotl's
/// `activation_offloading` uses) is a `saved_tensors_hooks` pair: every tensor autograd saves in
/// the forward pass, of at least `min_offload_size` = 1024 bytes and not a parameter, is copied to
/// pinned CPU memory on a side stream, and brought back when the backward pass unpacks it. Under
/// checkpointing the saved tensors are the checkpoints' inputs (`_NoopSaveInputs` saves them
/// under the outer hooks). What stays on the GPU is one layer's share: in the forward pass the
/// copies in flight (`max_fwd_stash_size` = 5 tensors stay alive until their copy is done, and
/// until the backward pass starts), in the backward pass the tensors of the node being run,
/// freed when the next node starts. The layer being recomputed and its gradients stay on the
/// GPU, so offloading never goes below that working set.
fn offloaded(saved: Formula, layers: f64, fx: Fx) -> Formula {
    (saved / fx.sym("L", layers.max(1.0)))
        .remark("one layer's share on the GPU, the rest offloaded to CPU")
}
