//! Bytes each token keeps alive per layer for the backward pass (and, in inference, while a layer
//! runs): the layer's own tensors, eager attention's scores, dropout's masks, and what LoRA
//! changes about which projection inputs autograd keeps.

use crate::dtype::{Dtype, BYTE, FP32_BYTES};
use crate::model::{Architecture, Block, Projection};
use crate::scenario::{Resolved, Scenario};
use crate::workload::Attention;

/// Bytes each token keeps alive in one transformer layer for the backward pass, without the
/// attention-score term. Korthikanti et al. 2022 (§4.1) count `sbh(34 + 5as/h)` for GPT-3 with
/// dropout; this is the same accounting for today's layers, tensor by tensor:
/// - each of the two norms saves its fp32 upcast input and its output (RMSNorm as HF and LitGPT
///   write it) or its input and output (LayerNorm);
/// - attention saves q, k, v after RoPE (k and v at the KV width, so GQA shrinks them) and its
///   output, plus flash attention's fp32 log-sum-exp per head; an output gate (Qwen3-Next,
///   Qwen3.5: `attn_output * torch.sigmoid(gate)`) adds two query-wide tensors, the sigmoid's
///   output the product's backward reads and the gated output o_proj reads (compiled: the
///   gate's logits, from which the sigmoid is recomputed, and the gated output);
/// - a gated MLP saves gate, up, act(gate) and their product; a plain MLP fc1's output and the
///   activation's output.
///
/// Dropout is counted apart: hidden-state masks in [`dropout_bytes_per_token`], attention
/// dropout with the scores in [`eager_scores_bytes_per_token`].
///
/// `compiled`: the layers run under torch.compile, whose partitioner
/// (`min_cut_rematerialization_partition`, torch/_functorch/partitioners.py) saves the cheapest
/// set of tensors the backward pass can start from and recomputes pointwise ops there. It never
/// recomputes a matmul, a reduction whose output is 4× smaller than its input, or a tensor a
/// backward matmul reads (`should_ban_recomputation`, `is_materialized_backwards`). So an RMSNorm
/// keeps its 16-bit input and the fp32 reciprocal RMS per token instead of the fp32 upcast, and a
/// gated MLP keeps gate, up and their product (the down projection's input) but not act(gate).
/// LayerNorm is one op that saves its input either way; RoPE and flash attention keep the same
/// q, k, v and output.
pub(super) fn layer_bytes_per_token(s: &Scenario, a: &Architecture, e: f64, compiled: bool) -> f64 {
    let gate = if a.attention_gate { 2.0 } else { 0.0 };
    let attention =
        e * ((2.0 + gate) * a.q_width() + 2.0 * a.kv_width()) + FP32_BYTES * f64::from(a.heads);
    let layers = f64::from(a.layers).max(1.0);
    let attention_share = f64::from(a.attention_layers()) / layers;
    norms_bytes_per_token(a, e, compiled)
        + attention * attention_share
        + recurrent_bytes_per_token(a, e)
        + mlp_bytes_per_token(a, e, compiled, routed_copies_per_route(s))
}

/// The two norms' share of [`layer_bytes_per_token`] (see there): RMSNorm's fp32 upcast input
/// and its output, compiled its 16-bit input, output and fp32 reciprocal RMS; LayerNorm's input
/// and output.
pub(super) fn norms_bytes_per_token(a: &Architecture, e: f64, compiled: bool) -> f64 {
    const NORMS_PER_LAYER: f64 = 2.0;
    let h = f64::from(a.hidden);
    let norm = match (a.gated, compiled) {
        (true, false) => h * (FP32_BYTES + e),
        (true, true) => 2.0 * h * e + FP32_BYTES,
        (false, _) => 2.0 * h * e,
    };
    NORMS_PER_LAYER * norm
}

/// The tokens each expert receives per token routed to it: 1 routed dropless, the capacity
/// factor under a token-dropping router, which pads every expert's batch to its capacity.
pub(super) fn routed_copies_per_route(s: &Scenario) -> f64 {
    s.capacity_factor.unwrap_or(1.0)
}

/// Bytes each token keeps per layer under torchtitan's op-level selective checkpointing
/// (`selective_ac_option = "op"`: `_save_list` and `_custom_policy` in
/// torchtitan/parallelisms/parallelize_llama.py @9dec370, torchtitan/distributed/
/// activation_checkpoint.py today). The block's input stays, for the recompute to start from,
/// and the recompute reuses the outputs of the ops in the save list instead of running them:
/// the attention kernel's and every `aten.mm`'s except every second one, counted per block in
/// forward order (Llama's q, k, v, o, gate, up, down: q, v, gate and down are kept). Flash/SDPA
/// keeps its output and fp32 log-sum-exp per head; eager attention keeps its output and `scores`
/// (today's list holds the math SDPA kernel, whose probabilities are its second output). Norms,
/// RoPE, the activation and the products are recomputed. Routed experts run grouped matmuls, not
/// `aten.mm`, and count as recomputed; where layers differ in kind, the alternation is counted
/// over one layer holding every kind, in [`Architecture::each_linear`]'s order.
///
/// torchao's float8 linears run `torch._scaled_mm`, which the list does not hold either
/// (`_save_list` @9dec370 and @e7c0cae; torchtitan keeps `aten.max` for the scales, scalars here,
/// and dropped `aten.abs` in #820), so under float8 every block linear's output is recomputed and
/// nothing a `Float8Linear` saves (torchao's `matmul_with_hp_or_float8_args`) outlives its layer.
pub(super) fn op_checkpoint_bytes_per_token(
    s: &Scenario,
    a: &Architecture,
    e: f64,
    scores: f64,
) -> f64 {
    let layers = f64::from(a.layers).max(1.0);
    let attention_share = f64::from(a.attention_layers()) / layers;
    let kernel = if s.attention == Attention::Flash {
        (e * a.q_width() + FP32_BYTES * f64::from(a.heads)) * attention_share
    } else {
        e * a.q_width() * attention_share + scores
    };
    let mut position = 0u32;
    let mut kept_matmul_outputs = 0.0;
    a.each_linear(|linear| {
        if linear.block == Block::RoutedExpert || s.float8.is_on() {
            return;
        }
        position += 1;
        if position % 2 == 1 {
            kept_matmul_outputs += e * linear.shape.cols * linear.shape.count / layers;
        }
    });
    e * f64::from(a.hidden) + kernel + kept_matmul_outputs
}

/// A recurrent mixer's share of [`layer_bytes_per_token`], averaged over the layers: its input
/// projection's output, the convolution's output and the gated output before the out projection.
fn recurrent_bytes_per_token(a: &Architecture, e: f64) -> f64 {
    let rec = &a.recurrent;
    let per_layer = e * (rec.in_width() + rec.conv_channels() + rec.inner());
    per_layer * f64::from(rec.layers) / f64::from(a.layers).max(1.0)
}

/// The MLP's share of [`layer_bytes_per_token`], averaged over the layers: a dense layer keeps
/// its intermediate tensors at `ffn`; a mixture-of-experts layer keeps them at `expert_ffn` for
/// each of the `per_token` experts a token is routed to and at `shared_ffn` for the shared
/// experts, plus the router's fp32 logits over every expert and the token's `per_token` copies
/// dispatched to the experts, each routed copy `capacity` times over when a token-dropping router
/// pads the experts' batches (`capacity-factor`). Compiled, a gated MLP recomputes act(gate) (see
/// [`layer_bytes_per_token`]); a plain MLP's activation output is the second projection's input,
/// which stays saved.
fn mlp_bytes_per_token(a: &Architecture, e: f64, compiled: bool, capacity: f64) -> f64 {
    let tensors = match (a.gated, compiled) {
        (true, false) => 4.0,
        (true, true) => 3.0,
        (false, _) => 2.0,
    };
    let dense = tensors * f64::from(a.ffn) * e;
    let layers = f64::from(a.layers).max(1.0);
    let mlp_layers = f64::from(a.mlp_layers());
    let moe_layers = a.moe_layers();
    if moe_layers == 0.0 {
        return dense * mlp_layers / layers;
    }
    let m = &a.moe;
    let k = f64::from(m.per_token) * capacity;
    let routed = tensors * e * (k * f64::from(m.expert_ffn) + f64::from(m.shared_ffn))
        + FP32_BYTES * f64::from(m.experts)
        + k * e * f64::from(a.hidden);
    ((mlp_layers - moe_layers) * dense + moe_layers * routed) / layers
}

/// Eager attention's extra bytes per query token per layer: its scores against `keys` keys per
/// head (the sequence in training, the cache's length in inference), kept as the fp32
/// softmax output (HF upcasts it) and as the tensor the product with V keeps: the softmax output
/// itself in fp32, its copy in a 16-bit compute dtype, or, with attention dropout in training, a
/// one-byte mask and the dropped copy. Flash/SDPA never store scores, and draw their dropout mask
/// from an RNG seed.
pub(super) fn eager_scores_bytes_per_token(
    s: &Scenario,
    a: &Architecture,
    e: f64,
    keys: f64,
) -> f64 {
    if s.attention == Attention::Flash {
        return 0.0;
    }
    let softmax_output = FP32_BYTES;
    let kept_for_value_product = if s.attention_dropout && s.mode.is_training() {
        BYTE + e
    } else if e < FP32_BYTES {
        e
    } else {
        0.0
    };
    f64::from(a.heads) * keys * (softmax_output + kept_for_value_product)
}

/// Hidden-state dropout's bytes per token per layer in training: the attention block's and the
/// MLP's outputs each pass a dropout before the residual add (BERT, GPT-2, OPT), and PyTorch's
/// `native_dropout` keeps a one-byte boolean mask for the backward pass (the dropped tensor itself
/// flows into the add and is not kept).
pub(super) fn dropout_bytes_per_token(s: &Scenario, a: &Architecture) -> f64 {
    const DROPOUTS_PER_LAYER: f64 = 2.0;
    if s.dropout {
        DROPOUTS_PER_LAYER * BYTE * f64::from(a.hidden)
    } else {
        0.0
    }
}

/// The tensor a group of a layer's projections reads, where nothing but the projections keeps
/// it: q, k and v read the first norm's output, gate and up (or fc1) the second's, down the MLP's
/// hidden state. o reads the attention output, which flash/SDPA keep for their own backward pass
/// (and which is counted as kept under eager too, a frozen o's `e·q` bytes per token at most).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LinearInput {
    Attention,
    Mlp,
    MlpHidden,
}

impl LinearInput {
    const ALL: [LinearInput; 3] = [
        LinearInput::Attention,
        LinearInput::Mlp,
        LinearInput::MlpHidden,
    ];

    fn of(projection: Projection) -> Option<LinearInput> {
        match projection {
            Projection::Q | Projection::K | Projection::V => Some(LinearInput::Attention),
            Projection::O => None,
            Projection::Gate | Projection::Up => Some(LinearInput::Mlp),
            Projection::Down => Some(LinearInput::MlpHidden),
        }
    }

    /// Bytes per token that [`layer_bytes_per_token`] counts only because a projection keeps
    /// this input for its weight's gradient.
    fn bytes_per_token(self, a: &Architecture, e: f64) -> f64 {
        match self {
            LinearInput::Attention | LinearInput::Mlp => e * f64::from(a.hidden),
            LinearInput::MlpHidden => e * f64::from(a.ffn),
        }
    }
}

/// How LoRA changes [`layer_bytes_per_token`], in bytes per token per layer.
///
/// Autograd keeps a matmul's input only to compute its weight's gradient (PyTorch's
/// `derivatives.yaml`: `mm_mat2_backward` needs the input, and generated code saves it only when
/// `should_compute_output` says that gradient is wanted), so a frozen 16-bit projection keeps
/// none, nor does a frozen NF4 one under today's bitsandbytes or torchao (`Nf4Kernel`), while
/// bitsandbytes' 8-bit matmul (`MatMul8bitLt`: `ctx.tensors = (CAt, subA, A)`), GPTQ-style int4
/// and bitsandbytes' 4-bit matmul before 0.43.2 keep their input whatever needs a gradient. An
/// adapter keeps its own input: the projection's, or with `lora_dropout` a one-byte mask and the
/// dropped copy for each adapter.
/// peft's 16-bit `Linear` casts the input to wider adapters' dtype (`_cast_input_dtype`,
/// huggingface/peft@5d602fdb src/peft/tuners/lora/layer.py) and autocast casts it back, so each
/// adapter keeps a copy of its own then too; its bitsandbytes layers skip that cast under autocast.
/// Nothing here is fitted; counting these tensors took LitGPT's q,v LoRA rows (dropout 0.05) from
/// +11…−1% to −0.1…−4.9% of `max_memory_allocated`, and its QLoRA rows from −11…−16% to −3…−9%.
pub(super) fn adapter_bytes_per_token(s: &Scenario, r: &Resolved, e: f64) -> f64 {
    if !s.mode.is_adapter() {
        return 0.0;
    }
    let a = &r.arch;
    let frozen_keeps_no_input =
        !r.weights.is_quantized() || (r.weights == Dtype::Nf4 && !s.nf4_kernel.keeps_input());
    let targets = || s.lora_targets.iter().filter(|&t| a.projection(t).is_some());
    let bytes = |input: &LinearInput| input.bytes_per_token(a, e);
    let released: f64 = if frozen_keeps_no_input {
        LinearInput::ALL.iter().map(bytes).sum()
    } else {
        0.0
    };
    let recast = !r.weights.is_quantized() && r.trained_dtype.bytes() > e;
    let kept_by_adapters: f64 = if s.lora_dropout || recast {
        let mask = if s.lora_dropout { BYTE } else { 0.0 };
        targets()
            .filter_map(|t| a.projection(t))
            .map(|(fan_in, _)| fan_in * (mask + e))
            .sum()
    } else if frozen_keeps_no_input {
        LinearInput::ALL
            .iter()
            .filter(|&&i| targets().any(|t| LinearInput::of(t) == Some(i)))
            .map(bytes)
            .sum()
    } else {
        0.0
    };
    kept_by_adapters - released
}
