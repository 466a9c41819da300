//! The model's weights on each GPU, and the constants quantized formats keep beside them.

use super::parallel::{routed_fraction, weights_per_gpu, Gathered, Split};
use super::stack::{explain, num, Stack};
use crate::dtype::{Dtype, BYTE, FP32_BYTES};
use crate::dtype::{Nf4Kernel, QuantScope};
use crate::estimate::ComponentId;
use crate::model::{Block, CheckpointWeights};
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::{Bytes, Units};

/// bitsandbytes NF4 quantizes in blocks of 64 weights with one fp32 absmax each (Dettmers et al.
/// 2023, QLoRA §2); double quantization stores those absmax values as 8-bit with one fp32 constant per
/// 256 of them (§3: 0.5 → 0.127 bits per parameter).
pub const NF4_BLOCK: f64 = 64.0;
pub const NF4_DOUBLE_QUANT_BLOCK: f64 = 256.0;
/// Block-wise fp8 (DeepSeek-V3's and Qwen3's `weight_block_size: [128, 128]`) keeps one fp32
/// `weight_scale_inv` per 128×128 block.
pub const FP8_BLOCK: f64 = 128.0 * 128.0;
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

/// 1 while the weights are on the GPU, 0 when ZeRO-Offload moved them to CPU memory.
pub(super) fn on_gpu(s: &Scenario) -> f64 {
    if s.offload == Offload::All {
        0.0
    } else {
        1.0
    }
}

/// ` + {what} {bytes}` for a buffer a formula adds, or nothing when there is none.
pub(super) fn plus_buffer(what: &str, bytes: f64, units: Units) -> String {
    if bytes > 0.0 {
        format!(" + {what} {}", Bytes::from_f64(bytes).display(units))
    } else {
        String::new()
    }
}

/// Pushes the weights and, for quantized formats, their constants.
pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let ex = stack.explain;
    let on_gpu = on_gpu(s);
    let gathered = Gathered::new(s, r, split, linear_params(r));
    let vision = vision_params(r);
    let text = r.params - vision;
    let checkpoint = checkpoint(s, r);
    let (weight_bytes, weight_formula, routed_bytes) = match checkpoint {
        Some(c) => checkpoint_weights(c, ex),
        None => {
            let (bytes, formula) = text_weights(s, r, text, ex);
            // Routed experts are in every quantized scope, so they take the weight format's bytes.
            (
                bytes,
                formula,
                routed_fraction(r) * r.params * r.weights.bytes(),
            )
        }
    };
    let routed = routed_bytes / weight_bytes.max(1.0);
    let (per_gpu, split_note) = weights_per_gpu(s, r, split, weight_bytes, routed);
    stack.push(
        ComponentId::Weights,
        "Model weights",
        per_gpu * on_gpu + gathered.layers + gathered.root,
        explain!(
            ex,
            "{weight_formula}{split_note}{}{}{}",
            if on_gpu == 0.0 {
                " (offloaded to CPU)"
            } else {
                ""
            },
            plus_buffer("2 gathered layers", gathered.layers, s.units),
            plus_buffer(
                "the unsharded root (embeddings, head)",
                gathered.root,
                s.units
            )
        ),
    );
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
        .filter(|c| c.format == r.weights && !s.runtime.rules().reads_gguf_weights())
}

/// Why `checkpoint-weights` is set but not used, when it is not.
pub(super) fn unused_checkpoint(s: &Scenario, r: &Resolved) -> Option<String> {
    let c = s.checkpoint_weights.as_ref()?;
    if s.runtime.rules().reads_gguf_weights() {
        Some(format!("checkpoint-weights (a safetensors checkpoint's tensors) is not read under {}, which loads a GGUF file; the weights are sized from the quant.", s.runtime))
    } else if c.format != r.weights {
        Some(format!("checkpoint-weights holds {} tensors but weights is {}, so the weights are sized from the shape in {}.", c.format, r.weights, r.weights))
    } else {
        None
    }
}

/// The language model's tensors as the checkpoint stores them, and its routed experts.
fn checkpoint_weights(c: &CheckpointWeights, ex: bool) -> (f64, String, f64) {
    let layers: u64 = c.blocks.iter().map(|b| b.bytes).sum();
    (
        c.text() as f64,
        explain!(
            ex,
            "the checkpoint's tensors ({}): embedding {} + {} layers {} + head {}",
            c.format,
            num(c.embed as f64),
            c.blocks.len(),
            num(layers as f64),
            num(c.head as f64)
        ),
        c.experts() as f64,
    )
}

/// The language model's weights in bytes, with their formula: a quantized format on the linear
/// layers it covers and the compute dtype for the rest, or one format throughout.
fn text_weights(s: &Scenario, r: &Resolved, text: f64, ex: bool) -> (f64, String) {
    if r.weights.is_quantized() {
        let quantized = quantized_params(s, r);
        let tied_copy = if r.arch.tied {
            share(r, head_params(s, r))
        } else {
            0.0
        };
        let other = text - quantized + tied_copy;
        let compute = r.act_dtype.bytes();
        (
            quantized * r.weights.bytes() + other * compute,
            explain!(
                ex,
                "{} {} × {} B ({}) + the rest {} × {} B ({})",
                r.quantized,
                num(quantized),
                r.weights.bytes(),
                r.weights,
                num(other),
                compute,
                r.act_dtype
            ),
        )
    } else {
        (
            text * r.weights.bytes(),
            explain!(
                ex,
                "P × Bw = {} × {} B ({})",
                num(text),
                r.weights.bytes(),
                r.weights
            ),
        )
    }
}

/// The scales (and zero points) of a quantized format, split like the weights they belong to.
fn push_quant_constants(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    if !r.weights.is_quantized() {
        return;
    }
    let quantized = quantized_params(s, r);
    let (constants, formula) = quant_constants(s, r, quantized, stack.explain);
    let routed = routed_fraction(r) * r.params / quantized.max(1.0);
    stack.push(
        ComponentId::QuantConstants,
        "Quantization constants",
        split.share(constants * on_gpu(s), split.weights, routed),
        formula,
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
    let ex = stack.explain;
    let on_gpu = on_gpu(s);
    let mtp = share(r, r.arch.mtp_params());
    let (bytes, formula) = match checkpoint {
        Some(c) => (
            c.mtp as f64,
            explain!(ex, "the checkpoint's MTP tensors {}", num(c.mtp as f64)),
        ),
        None => (
            mtp * per_param,
            explain!(
                ex,
                "{} × {} × {} B per parameter, as the model's weights",
                r.arch.mtp_layers,
                num(mtp / f64::from(r.arch.mtp_layers)),
                num(per_param)
            ),
        ),
    };
    stack.push(
        ComponentId::Mtp,
        "Multi-token-prediction modules (optional)",
        bytes * on_gpu / split.weights,
        explain!(ex, "{formula}{}", split.note(split.weights)),
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
    let ex = stack.explain;
    let on_gpu = on_gpu(s);
    let (bytes, formula) = match checkpoint {
        Some(c) => (
            c.vision as f64,
            explain!(
                ex,
                "the checkpoint's vision tensors {}",
                num(c.vision as f64)
            ),
        ),
        None => {
            let b = tower_dtype(r).bytes();
            (vision * b, explain!(ex, "{} × {} B", num(vision), b))
        }
    };
    stack.push(
        ComponentId::Vision,
        "Vision tower",
        bytes * on_gpu / split.weights,
        explain!(ex, "{formula}{}", split.note(split.weights)),
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
    let patches = f64::from(s.batch) * f64::from(s.images) * v.patches_per_image();
    let per_patch = v.layer_bytes_per_patch(r.act_dtype.bytes());
    stack.push(
        ComponentId::VisionActivations,
        "Vision tower activations (one layer)",
        patches * per_patch / split.model_parallel,
        explain!(
            stack.explain,
            "b × images × (image / patch)² × {} B = {} × {} × {} × {}{}",
            num(per_patch),
            s.batch,
            s.images,
            num(v.patches_per_image()),
            num(per_patch),
            split.note(split.model_parallel)
        ),
    );
}

/// The format the vision tower is kept in: the weights' unless they are quantized.
fn tower_dtype(r: &Resolved) -> Dtype {
    if r.weights.is_quantized() {
        r.act_dtype
    } else {
        r.weights
    }
}

/// The scales (and zero points) a quantized format keeps for `linear` weights.
fn quant_constants(s: &Scenario, r: &Resolved, linear: f64, ex: bool) -> (f64, String) {
    match r.weights {
        Dtype::Fp8 => per_block(
            linear,
            FP8_BLOCK,
            " blocks (128×128)",
            FP32_BYTES,
            " scale",
            ex,
        ),
        Dtype::Mxfp4 => per_block(linear, MXFP4_BLOCK, "", BYTE, " E8M0 scale", ex),
        // torchao's NF4Tensor always double-quantizes: int8 scalers per 64 weights and one
        // 16-bit factor per 256 scalers, within 2 bytes per 16,384 weights of bitsandbytes'.
        Dtype::Nf4 if s.double_quant || s.nf4_kernel == Nf4Kernel::Torchao => {
            let (scalers, scalers_formula) = per_block(linear, NF4_BLOCK, "", BYTE, "", ex);
            let second_level = NF4_BLOCK * NF4_DOUBLE_QUANT_BLOCK;
            let (factors, factors_formula) =
                per_block(linear, second_level, "", FP32_BYTES, "", ex);
            (
                scalers + factors,
                explain!(ex, "double-quant: {scalers_formula} + {factors_formula}"),
            )
        }
        Dtype::Nf4 => per_block(linear, NF4_BLOCK, " blocks", FP32_BYTES, " absmax", ex),
        Dtype::Int4 => per_block(
            linear,
            f64::from(s.int4_group.max(1)),
            " groups",
            s.int4_layout.group_bytes(),
            format_args!(" ({} scale and zero)", s.int4_layout),
            ex,
        ),
        Dtype::Int8 => int8_row_scales(s, r, ex),
        _ => (0.0, String::new()),
    }
}

/// One `bytes`-byte constant per `block` of the `linear` weights: `blocks` names the unit and
/// `what` the constant.
fn per_block(
    linear: f64,
    block: f64,
    blocks: &str,
    bytes: f64,
    what: impl std::fmt::Display,
    ex: bool,
) -> (f64, String) {
    (
        linear / block * bytes,
        explain!(
            ex,
            "{} / {}{blocks} × {} B{what}",
            num(linear),
            num(block),
            num(bytes)
        ),
    )
}

/// LLM.int8 keeps one fp32 scale per output row (Dettmers et al. 2022); a quantized LM head adds
/// one per vocabulary entry.
fn int8_row_scales(s: &Scenario, r: &Resolved, ex: bool) -> (f64, String) {
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
    (
        rows * FP32_BYTES,
        explain!(
            ex,
            "{} output rows × {fp32} B scale",
            num(rows),
            fp32 = num(FP32_BYTES)
        ),
    )
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
    let tensor_parallel = split.tensor;
    let one_layer = share(r, r.routed_params) / moe_layers;
    let e = r.act_dtype.bytes();
    stack.push(
        ComponentId::DequantizedExperts,
        "Dequantized experts (one layer)",
        one_layer * e / split.experts / tensor_parallel,
        explain!(
            stack.explain,
            "one MoE layer's routed experts {} × {} B ({}){}",
            num(one_layer),
            e,
            r.act_dtype,
            split.note(split.experts * tensor_parallel)
        ),
    );
}
