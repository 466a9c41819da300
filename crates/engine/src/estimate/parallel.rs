//! How each kind of state is split across GPUs: ZeRO/FSDP shards (Rajbhandari et al. 2020),
//! tensor parallelism, and a pipeline's fullest stage.

use super::formula::{Formula, Fx};
use super::stack::Stack;
use crate::dtype::BYTE;
use crate::estimate::ComponentId;
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Sharding;
use crate::workload::{Float8, Mode};

/// How many ways each kind of state is split across the GPUs.
pub(super) struct Split {
    pub weights: f64,
    pub gradients: f64,
    pub optimizer: f64,
    /// Activations and the KV cache: split only by tensor or pipeline parallelism.
    pub model_parallel: f64,
    /// Tensor parallelism's degree: all the GPUs under `sharding=tensor`, `tp` beside a
    /// data-parallel sharding (2-D parallelism), 1 otherwise.
    pub tensor: f64,
    /// The GPUs a ZeRO/FSDP group shards the data-parallel state over: gpus / (tp · replicas).
    pub data_shards: f64,
    /// Routed experts, further: split N ways by expert parallelism, which splits nothing else.
    pub experts: f64,
    /// Each training sequence: context parallelism gives every GPU seq/cp of its tokens, whose
    /// activations and logits it keeps (torchtitan's `context_parallel` shards the inputs along
    /// the sequence; ring attention passes the keys and values around, a block at a time).
    pub context: f64,
}

impl Split {
    /// The tokens of a training step whose activations one GPU keeps: b·s/cp.
    pub fn tokens(&self, s: &Scenario) -> f64 {
        f64::from(s.batch) * self.sequence(s)
    }

    /// The part of each sequence one GPU holds.
    pub fn sequence(&self, s: &Scenario) -> f64 {
        f64::from(s.seq) / self.context
    }
}

impl Split {
    /// Model-parallel layouts split every state over all the GPUs. Beside a data-parallel
    /// sharding, tensor parallelism splits every state `tp` ways and the sharding splits what it
    /// shards further, over its group (torchtitan's FSDP mesh is `dp_shard × cp`, with
    /// `dp_replicate` groups each holding a whole copy under HSDP).
    pub fn new(s: &Scenario) -> Split {
        let n = f64::from(s.gpus.max(1));
        let model_parallel = s.sharding.is_model_parallel();
        let tensor = if s.sharding == Sharding::Tensor {
            n
        } else {
            f64::from(s.tp.max(1))
        };
        let data_shards = if model_parallel {
            1.0
        } else {
            (n / (tensor * f64::from(s.replicas.max(1)))).max(1.0)
        };
        let by = |on: bool| match (on, model_parallel) {
            (true, true) => n,
            (true, false) => tensor * data_shards,
            (false, _) => tensor,
        };
        Split {
            weights: by(s.sharding.shards_weights()),
            gradients: by(s.sharding.shards_gradients()),
            optimizer: by(s.sharding.shards_optimizer()),
            model_parallel: if model_parallel { n } else { tensor },
            tensor,
            data_shards,
            experts: if s.sharding == Sharding::Expert {
                n
            } else {
                1.0
            },
            context: if s.mode.is_training() {
                f64::from(s.cp.max(1))
            } else {
                1.0
            },
        }
    }

    /// The per-GPU share of `bytes` of a state split `ways` ways, of which the fraction `routed`
    /// lies in routed experts, which expert parallelism splits further.
    pub fn share(&self, bytes: f64, ways: f64, routed: f64) -> f64 {
        self.share_of(Fx::new(false).num(bytes), ways, routed)
            .value()
    }

    /// [`Split::share`] as a formula.
    #[inline(always)]
    pub fn share_of(&self, bytes: Formula, ways: f64, routed: f64) -> Formula {
        let fx = bytes.fx();
        let routed_share = fx.num(1.0) - fx.sym("routed", routed)
            + fx.sym("routed", routed) / fx.sym("EP", self.experts);
        bytes * routed_share.shown_if(self.experts > 1.0) / self.ways(fx, ways)
    }

    /// The divisor of a state split `ways` ways, `N`; left out of the text when 1.
    #[inline]
    pub fn ways(&self, fx: Fx, ways: f64) -> Formula {
        fx.sym("N", ways).shown_if(ways > 1.0)
    }

    /// The vocabulary dimension of the logits is split only by tensor parallelism (Megatron's
    /// vocab-parallel cross-entropy, torchtitan's `loss_parallel`).
    pub fn vocab(&self) -> f64 {
        self.tensor
    }
}

/// The per-GPU share of the `weights` (the fraction `routed` in routed experts).
///
/// A pipeline puts whole layers on successive GPUs, the embedding with the first and the LM head
/// with the last (each keeps a copy of a tied table): the fullest GPU holds ⌈L/N⌉ layers and one
/// table, which is what must fit. Every other split is even.
pub(super) fn weights_per_gpu(
    s: &Scenario,
    r: &Resolved,
    split: &Split,
    weights: Formula,
    routed: f64,
) -> Formula {
    if s.sharding != Sharding::Pipeline || split.weights <= 1.0 {
        return split.share_of(weights, split.weights, routed);
    }
    let fx = weights.fx();
    let a = &r.arch;
    let layers = f64::from(a.layers);
    let table = || fx.num(table_bytes(r)).words("table").size(s.units);
    let tables = fx.num(if a.tied { 1.0 } else { 2.0 }) * table();
    let blocks = weights - tables;
    let fullest_layers = (fx.sym("L", layers) / fx.sym("N", split.weights)).ceil();
    (blocks * fullest_layers / fx.sym("L", layers) + table())
        .remark("the fullest stage: ⌈L/N⌉ layers and one embedding table")
}

/// One embedding table (or LM head) in bytes. Embedding tables are never quantized: they stay in
/// the compute dtype. Scaled like the linear share, so a bare parameter count keeps its shape's
/// proportions.
pub(super) fn table_bytes(r: &Resolved) -> f64 {
    let table_dtype = if r.weights.is_quantized() {
        r.act_dtype
    } else {
        r.weights
    };
    let a = &r.arch;
    f64::from(a.vocab) * f64::from(a.hidden) * r.params / r.shape_params.max(1.0)
        * table_dtype.bytes()
}

/// What a fully sharded run holds unsharded beside its shards, in bytes per GPU.
///
/// ZeRO-3 and FSDP all-gather one layer at a time and prefetch the next (Zhao et al. 2023, FSDP
/// §3): two layers' linear weights. FSDP's mixed precision (FSDP2's `MixedPrecisionPolicy`
/// `param_dtype`, FSDP1's `MixedPrecision`) casts each shard to the compute dtype before the
/// all-gather, so fp32 shards gather as 16-bit copies; ZeRO-3 gathers the parameters' format.
/// FSDP also keeps its root unit (the embeddings and the LM head, outside the wrapped blocks)
/// unsharded from its forward to the end of the backward: FSDP1's `_post_forward_reshard` frees
/// no root parameters, and FSDP2's `_lazy_init` clears the root's `post_forward_mesh_info`.
/// In the backward, FSDP2's `foreach_reduce` copies a layer's unsharded gradients (computed in
/// the gathered format) into a reduce-scatter buffer of the whole layer in the reduce dtype,
/// which is kept until the next layer's reduce-scatter: counted here in the gradients' format
/// (torchtitan's default `mixed_precision_reduce = "float32"` with fp32 parameters).
/// With float8 training's `enable_fsdp_float8_all_gather` (torchao's
/// `WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather`), each shard of a float8 linear is
/// cast to fp8 before the all-gather, so the gathered copies of the block linears (routed experts
/// aside: grouped matmuls, not `Float8Linear`) are 1 B/param; their gradients still come back in
/// the compute dtype. `precompute_float8_dynamic_scale_for_fsdp` only computes one scalar per
/// weight for that cast.
#[derive(Default)]
pub(super) struct Gathered {
    /// The current and the prefetched layer.
    pub layers: f64,
    /// FSDP's root unit: embedding tables and LM head.
    pub root: f64,
    /// One layer's unsharded gradients and its reduce-scatter buffer (full training).
    pub reduce: f64,
}

impl Gathered {
    pub fn new(s: &Scenario, r: &Resolved, split: &Split, linear: f64) -> Gathered {
        if !s.sharding.is_fully_sharded() || split.data_shards <= 1.0 {
            return Gathered::default();
        }
        let fsdp = s.sharding == Sharding::Fsdp;
        let gathered_bytes = if fsdp {
            r.param_dtype.bytes().min(r.act_dtype.bytes())
        } else {
            r.param_dtype.bytes()
        };
        // Under 2-D parallelism each GPU gathers its tensor-parallel slice of every layer.
        let layer = linear / f64::from(r.arch.layers.max(1)) / split.tensor;
        let tables = r.arch.embedding_params() * r.params / r.shape_params.max(1.0) / split.tensor;
        let gathered_layer = if s.mode == Mode::Full && s.float8 == Float8::Gather {
            let routed = r.routed_params * r.params / r.shape_params.max(1.0);
            let routed_share = (routed / linear.max(1.0)).min(1.0);
            layer * ((1.0 - routed_share) * BYTE + routed_share * gathered_bytes)
        } else {
            layer * gathered_bytes
        };
        Gathered {
            layers: 2.0 * gathered_layer,
            root: if fsdp { tables * gathered_bytes } else { 0.0 },
            reduce: if s.mode == Mode::Full {
                layer * (gathered_bytes + r.grads.bytes())
            } else {
                0.0
            },
        }
    }
}

/// The share of the parameters in routed experts: what expert parallelism splits.
pub(super) fn routed_fraction(r: &Resolved) -> f64 {
    r.routed_params / r.shape_params.max(1.0)
}

/// Expert parallelism's token exchange: each GPU sends every token to the GPUs holding its k
/// experts and receives their outputs back, so the dispatched copies (b·s·k hidden states) and
/// their combined results stand in two buffers (Megatron-Core's all-to-all token dispatcher
/// permutes into one and unpermutes from the other; DeepEP's dispatch and combine likewise).
pub(super) fn push_all_to_all(s: &Scenario, r: &Resolved, stack: &mut Stack) {
    if s.sharding != Sharding::Expert || !r.arch.moe.is_moe() {
        return;
    }
    const BUFFERS: f64 = 2.0;
    let e = r.act_dtype.bytes();
    let tokens = f64::from(s.batch) * super::inference::forward_tokens(s);
    let k = f64::from(r.arch.moe.per_token) * super::per_token::routed_copies_per_route(s);
    let fx = stack.fx();
    let bytes = fx.num(BUFFERS)
        * fx.sym("b·s", tokens)
        * fx.sym("k", k)
        * fx.sym("H", f64::from(r.arch.hidden))
        * fx.num(e).unit("B");
    stack.push(ComponentId::AllToAll, "Expert all-to-all buffers", bytes);
}
