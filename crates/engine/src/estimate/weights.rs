//! The model's weights on each GPU, and the constants quantized formats keep beside them.

use super::formula::{Formula, Fx};
use super::parallel::{routed_fraction, weights_per_gpu, Gathered, Split};
use super::stack::Stack;
use crate::dtype::{Dtype, BYTE, FP32_BYTES};
use crate::dtype::{Nf4Kernel, QuantScope};
use crate::estimate::ComponentId;
use crate::model::{Block, CheckpointWeights};
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::Units;
use crate::workload::KbitPrep;

/// bitsandbytes NF4 quantizes in blocks of 64 weights with one fp32 absmax each (Dettmers et al.
/// 2023, QLoRA §2); double quantization stores those absmax values as 8-bit with one fp32 constant per
/// 256 of them (§3: 0.5 → 0.127 bits per parameter).
pub const NF4_BLOCK: f64 = 64.0;
pub const NF4_DOUBLE_QUANT_BLOCK: f64 = 256.0;
/// Block-wise fp8 (DeepSeek-V3's and Qwen3's `weight_block_size: [128, 128]`) keeps one fp32
/// `weight_scale_inv` per 128×128 block.
pub const FP8_BLOCK: f64 = 128.0 * 128.0;
/// Where fp8 runs weight-only through Marlin, vLLM repeats each block's scale along the block's
/// 128 output columns and keeps it in the model's dtype: one 16-bit scale per 128 inputs of each
/// column (`prepare_fp8_layer_for_marlin` and `prepare_fp8_moe_layer_for_marlin`, "block-wise
/// quantization -> group-wise quantization", vllm/model_executor/layers/quantization/utils/
/// marlin_utils_fp8.py of v0.10.0, v0.24.0 and v0.33.0). The fp32 block scales are replaced.
pub const FP8_MARLIN_GROUP: f64 = 128.0;
/// MXFP4 (OCP Microscaling spec v1.0, §5) shares one 8-bit E8M0 scale among 32 values.
pub const MXFP4_BLOCK: f64 = 32.0;

/// `count` parameters of the shape, scaled to the scenario's parameter count: a bare `params`
/// keeps its count, and the shape only decides the split.
fn share(r: &Resolved, count: f64) -> f64 {
    r.params * count / r.shape_params.max(1.0)
}

/// The parameters in the blocks' linear layers.
pub(super) fn linear_params(r: &Resolved) -> f64 {
    share(r, r.linear_params)
}

/// The parameters a quantized format covers: every linear layer but the router (and the LM head
/// under `quant-head`), or (for gpt-oss's MXFP4) the routed experts only.
fn quantized_params(s: &Scenario, r: &Resolved) -> f64 {
    match r.quantized {
        QuantScope::AllLinear => share(
            r,
            r.linear_params - r.arch.params_in(&[Block::Router]) + head_params(s, r),
        ),
        QuantScope::Experts => share(r, r.arch.params_in(&[Block::RoutedExpert])),
    }
}

/// The LM head's parameters when `quant-head` quantizes it with the blocks. A tied head becomes
/// a quantized copy beside the embedding, which stays in the compute dtype: `quantize_` swaps the
/// output layer's weight for a new tensor and leaves the embedding's.
fn head_params(s: &Scenario, r: &Resolved) -> f64 {
    if s.quant_head && r.weights.is_quantized() && r.quantized == QuantScope::AllLinear {
        f64::from(r.arch.vocab) * f64::from(r.arch.hidden)
    } else {
        0.0
    }
}

/// The vision tower's parameters: kept in the compute dtype (every quantized multimodal
/// checkpoint lists the tower in `modules_to_not_convert` or `ignore`).
pub(super) fn vision_params(r: &Resolved) -> f64 {
    share(r, r.arch.vision_params())
}

/// A factor of 1 while a state is on the GPU, left out of the text; 0 once offloaded to CPU memory.
pub(super) fn kept_on_gpu(fx: Fx, on_gpu: bool) -> Formula {
    if on_gpu {
        fx.num(1.0).shown_if(false)
    } else {
        fx.num(0.0).remark("offloaded to CPU")
    }
}

/// [`kept_on_gpu`] for the weights, which ZeRO-Offload can move to CPU memory.
pub(super) fn on_gpu(s: &Scenario, fx: Fx) -> Formula {
    kept_on_gpu(fx, s.offload != Offload::All)
}

/// A buffer a formula adds, named by `what`; left out of the text when there is none.
pub(super) fn buffer(fx: Fx, what: &'static str, bytes: f64, units: Units) -> Formula {
    fx.num(bytes).words(what).size(units).shown_if(bytes > 0.0)
}

/// Pushes the weights and, for quantized formats, their constants.
pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let fx = stack.fx();
    let gathered = Gathered::new(s, r, split, linear_params(r));
    let vision = vision_params(r);
    let text = r.params - vision;
    let checkpoint = checkpoint(s, r);
    let (text_weights, routed_bytes) = match checkpoint {
        Some(c) => (checkpoint_weights(c, fx), c.experts() as f64),
        None => {
            let weights = text_weights(s, r, text, fx);
            // Routed experts are in every quantized scope, so they take the weight format's bytes.
            let routed = routed_fraction(r) * r.params * r.weights.bytes();
            (weights, routed)
        }
    };
    let weight_bytes = text_weights.value();
    let routed = routed_bytes / weight_bytes.max(1.0);
    let per_gpu = weights_per_gpu(s, r, split, text_weights, routed);
    let bytes = per_gpu * on_gpu(s, fx)
        + buffer(fx, "2 gathered layers", gathered.layers, s.units)
        + buffer(
            fx,
            "the unsharded root (embeddings, head)",
            gathered.root,
            s.units,
        );
    stack.push(ComponentId::Weights, "Model weights", bytes);
    push_mtp(s, r, stack, split, weight_bytes / text.max(1.0), checkpoint);
    if vision > 0.0 {
        push_vision_activations(s, r, stack, split);
        push_vision_tower(s, r, stack, split, vision, checkpoint);
    }
    // A checkpoint's bytes hold its scales already.
    if checkpoint.is_none() {
        push_quant_constants(s, r, stack, split);
    }
}

/// The checkpoint's own tensor bytes (`checkpoint-weights`), where they stand for the weights:
/// in the format the scenario keeps, under a runtime that loads safetensors and the detailed
/// method (the lesson's formula is the chapter's).
pub(super) fn checkpoint<'a>(s: &'a Scenario, r: &Resolved) -> Option<&'a CheckpointWeights> {
    s.checkpoint_weights
        .as_ref()
        .filter(|c| c.format == r.weights && !s.runtime.rules().facts().reads_gguf_weights)
}

/// Why `checkpoint-weights` is set but not used, when it is not.
pub(super) fn unused_checkpoint(s: &Scenario, r: &Resolved) -> Option<String> {
    let c = s.checkpoint_weights.as_ref()?;
    if s.runtime.rules().facts().reads_gguf_weights {
        Some(format!("checkpoint-weights (a safetensors checkpoint's tensors) is not read under {}, which loads a GGUF file; the weights are sized from the quant.", s.runtime))
    } else if c.format != r.weights {
        Some(format!("checkpoint-weights holds {} tensors but weights is {}, so the weights are sized from the shape in {}.", c.format, r.weights, r.weights))
    } else {
        None
    }
}

/// The language model's tensors as the checkpoint stores them.
fn checkpoint_weights(c: &CheckpointWeights, fx: Fx) -> Formula {
    let layers: u64 = c.blocks.iter().map(|b| b.bytes).sum();
    fx.num(c.embed as f64).words("the checkpoint's embedding")
        + fx.num(layers as f64)
            .words(format_args!("{} layers", c.blocks.len()))
        + fx.num(c.head as f64).words("head")
}

/// The language model's weights in bytes: a quantized format on the linear layers it covers and
/// the compute dtype for the rest, or one format throughout.
fn text_weights(s: &Scenario, r: &Resolved, text: f64, fx: Fx) -> Formula {
    let dtype = |d: Dtype| fx.num(d.bytes()).unit(format_args!("B ({d})"));
    if r.weights.is_quantized() {
        let quantized = quantized_params(s, r);
        let tied_copy = if r.arch.tied {
            share(r, head_params(s, r))
        } else {
            0.0
        };
        let other = text - quantized + tied_copy;
        fx.num(quantized).words(format_args!("{}", r.quantized)) * dtype(r.weights)
            + fx.num(other).words("the rest") * dtype(unquantized_dtype(s, r))
    } else {
        fx.sym("P", text) * dtype(r.weights)
    }
}

/// The scales (and zero points) of a quantized format, split like the weights they belong to.
fn push_quant_constants(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    if !r.weights.is_quantized() {
        return;
    }
    let fx = stack.fx();
    let quantized = quantized_params(s, r);
    let constants = quant_constants(s, r, quantized, fx);
    let routed = routed_fraction(r) * r.params / quantized.max(1.0);
    stack.push(
        ComponentId::QuantConstants,
        "Quantization constants",
        split.share_of(constants * on_gpu(s, fx), split.weights, routed),
    );
}

/// The multi-token-prediction modules, when loaded: the checkpoint's, or at the model's own bytes
/// per parameter (they are quantized like its layers).
fn push_mtp(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    per_param: f64,
    checkpoint: Option<&CheckpointWeights>,
) {
    if !s.mtp || r.arch.mtp_layers == 0 {
        return;
    }
    let fx = stack.fx();
    let mtp = share(r, r.arch.mtp_params());
    let bytes = match checkpoint {
        Some(c) => fx.num(c.mtp as f64).words("the checkpoint's MTP tensors"),
        None => {
            fx.num(mtp)
                .words(format_args!("{} modules'", r.arch.mtp_layers))
                .unit("params")
                * fx.num(per_param)
                    .unit("B per parameter, as the model's weights")
        }
    };
    stack.push(
        ComponentId::Mtp,
        "Multi-token-prediction modules (optional)",
        bytes * on_gpu(s, fx) / split.ways(fx, split.weights),
    );
}

/// The vision tower's weights: the checkpoint's, or in the compute dtype when the text model is
/// quantized.
fn push_vision_tower(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    vision: f64,
    checkpoint: Option<&CheckpointWeights>,
) {
    let fx = stack.fx();
    let dtype = tower_dtype(s, r);
    let bytes = match checkpoint {
        Some(c) => fx
            .num(c.vision as f64)
            .words("the checkpoint's vision tensors"),
        None => {
            fx.num(vision).unit("params") * fx.num(dtype.bytes()).unit(format_args!("B ({dtype})"))
        }
    };
    stack.push(
        ComponentId::Vision,
        "Vision tower",
        bytes * on_gpu(s, fx) / split.ways(fx, split.weights),
    );
}

/// The vision tower encoding the batch's images, one layer at a time: every image's patch tokens
/// through one tower layer (the tower runs before the language model and frees each layer's
/// tensors; a frozen tower, as multimodal fine-tunes keep it, saves nothing for backward).
fn push_vision_activations(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let v = &r.arch.vision;
    if s.images == 0 {
        return;
    }
    let fx = stack.fx();
    let patches = fx.sym("b", f64::from(s.batch))
        * fx.sym("images", f64::from(s.images))
        * fx.sym("(image ÷ patch)²", v.patches_per_image());
    let per_patch = fx
        .num(v.layer_bytes_per_patch(r.act_dtype.bytes()))
        .unit("B");
    stack.push(
        ComponentId::VisionActivations,
        "Vision tower activations (one layer)",
        patches * per_patch / split.ways(fx, split.model_parallel),
    );
}

/// The format the vision tower is kept in: the weights' unless they are quantized.
fn tower_dtype(s: &Scenario, r: &Resolved) -> Dtype {
    if r.weights.is_quantized() {
        unquantized_dtype(s, r)
    } else {
        r.weights
    }
}

/// Whether peft's `prepare_model_for_kbit_training` casts the parameters a quantized format leaves
/// alone to fp32: for bitsandbytes' formats only (NF4, LLM.int8), as it skips GPTQ, AQLM, EETQ,
/// HQQ and torchao models (`is_gptq_quantized` and its siblings, peft 0.17.1 src/peft/utils/other.py).
pub(super) fn kbit_prep_upcasts(s: &Scenario, r: &Resolved) -> bool {
    s.kbit_prep == KbitPrep::Peft
        && s.mode.is_adapter()
        && matches!(r.weights, Dtype::Nf4 | Dtype::Int8)
        && s.nf4_kernel != Nf4Kernel::Torchao
}

/// What `kbit-prep=peft` leaves uncounted, or why it does not apply.
pub(super) fn kbit_prep_note(s: &Scenario, r: &Resolved) -> Option<String> {
    if s.kbit_prep != KbitPrep::Peft || !s.mode.is_adapter() {
        return None;
    }
    Some(if kbit_prep_upcasts(s, r) {
        "kbit-prep=peft: the norms, embeddings and unquantized head are counted in fp32, but the \
         activations in act-dtype; bitsandbytes' Linear4bit returns its input's dtype, so after \
         the fp32 embedding the hidden states can stay fp32 too, which is not counted."
            .to_string()
    } else if r.weights.is_quantized() {
        format!(
            "kbit-prep=peft is counted for bitsandbytes' formats only (nf4 with the bnb kernels, \
             int8): peft leaves GPTQ, AQLM, EETQ, HQQ and torchao models as loaded, so the {} \
             model's other parameters stay in act-dtype.",
            r.weights
        )
    } else {
        format!(
            "kbit-prep=peft on an unquantized model casts every {} parameter to fp32: set \
             weights=fp32 to count it.",
            r.weights
        )
    })
}

/// The format of the parameters a quantized format leaves alone (norms, embeddings, an
/// unquantized head, the vision tower): the compute format, or fp32 after peft's preparation.
fn unquantized_dtype(s: &Scenario, r: &Resolved) -> Dtype {
    if kbit_prep_upcasts(s, r) {
        Dtype::Fp32
    } else {
        r.act_dtype
    }
}

/// The scales (and zero points) a quantized format keeps for `linear` weights.
fn quant_constants(s: &Scenario, r: &Resolved, linear: f64, fx: Fx) -> Formula {
    let per_block = |block: f64, blocks: &'static str, bytes: f64, what: &dyn std::fmt::Display| {
        fx.num(linear) / fx.num(block).unit(blocks) * fx.num(bytes).unit(format_args!("B{what}"))
    };
    match r.weights {
        Dtype::Fp8 if s.runtime.rules().fp8_marlin(r) => per_block(
            FP8_MARLIN_GROUP,
            "Marlin groups (128 inputs × 1 column)",
            r.act_dtype.bytes(),
            &format_args!(" scale ({})", r.act_dtype),
        ),
        Dtype::Fp8 => per_block(FP8_BLOCK, "blocks (128×128)", FP32_BYTES, &" scale"),
        Dtype::Mxfp4 => per_block(MXFP4_BLOCK, "", BYTE, &" E8M0 scale"),
        // torchao's NF4Tensor always double-quantizes: int8 scalers per 64 weights and one
        // 16-bit factor per 256 scalers, within 2 bytes per 16,384 weights of bitsandbytes'.
        Dtype::Nf4 if s.double_quant || s.nf4_kernel == Nf4Kernel::Torchao => {
            let scalers = per_block(NF4_BLOCK, "", BYTE, &" scaler");
            let second_level = NF4_BLOCK * NF4_DOUBLE_QUANT_BLOCK;
            let factors = per_block(second_level, "", FP32_BYTES, &" factor");
            (scalers + factors).remark("double quantization")
        }
        Dtype::Nf4 => per_block(NF4_BLOCK, "blocks", FP32_BYTES, &" absmax"),
        Dtype::Int4 => per_block(
            f64::from(s.int4_group.max(1)),
            "groups",
            s.int4_layout.group_bytes(),
            &format_args!(" ({} scale and zero)", s.int4_layout),
        ),
        Dtype::Int8 => int8_row_scales(s, r, fx),
        _ => fx.num(0.0),
    }
}

/// LLM.int8 keeps one fp32 scale per output row (Dettmers et al. 2022); a quantized LM head adds
/// one per vocabulary entry.
fn int8_row_scales(s: &Scenario, r: &Resolved, fx: Fx) -> Formula {
    let head_rows = if head_params(s, r) > 0.0 {
        f64::from(r.arch.vocab)
    } else {
        0.0
    };
    let rows: f64 = head_rows
        + r.arch
            .block_linears()
            .iter()
            .map(|m| m.cols * m.count)
            .sum::<f64>();
    fx.num(rows).unit("output rows") * fx.num(FP32_BYTES).unit("B scale")
}

/// One layer's routed experts, dequantized whole while that layer runs, under axolotl's
/// `quantize_moe_experts` (docs/expert_quantization.qmd, PR #3439). transformers v5 stores a
/// layer's experts as fused `gate_up_proj` [E, 2·I, H] and `down_proj` [E, H, I] parameters;
/// axolotl quantizes them with bitsandbytes' `replace_parameter_4bit` (bitsandbytes
/// nn/parametrize.py), whose parametrization returns `dequantize_4bit` of the whole tensor, cached
/// between the experts module's forward pre-hook and forward hook. Each hit expert's matmul then
/// saves a slice of that tensor for its input's gradient, which keeps the whole dequantized
/// storage alive until the layer's backward pass (one layer at a time under checkpointing, whose
/// recomputation dequantizes again). Same-sized blocks every layer, so the allocator reuses them.
/// Expert parallelism gives each GPU its share of the experts, tensor parallelism its slice.
pub(super) fn push_dequantized_experts(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    notes: &mut Vec<String>,
) {
    if !s.quantize_moe_experts {
        return;
    }
    let moe_layers = r.arch.moe_layers();
    if moe_layers == 0.0 || r.weights != Dtype::Nf4 {
        notes.push(format!(
            "quantize-moe-experts not used: it dequantizes NF4 routed experts, and this model {}.",
            if moe_layers == 0.0 {
                "has none"
            } else {
                "keeps its weights in another format (axolotl's 8-bit parametrization is not modelled)"
            }
        ));
        return;
    }
    let fx = stack.fx();
    let one_layer = share(r, r.routed_params) / moe_layers;
    let e = r.act_dtype;
    let bytes = fx.num(one_layer).words("one MoE layer's routed experts")
        * fx.num(e.bytes()).unit(format_args!("B ({e})"))
        / fx.sym("EP", split.experts).shown_if(split.experts > 1.0)
        / fx.sym("TP", split.tensor).shown_if(split.tensor > 1.0);
    stack.push(
        ComponentId::DequantizedExperts,
        "Dequantized experts (one layer)",
        bytes,
    );
}
