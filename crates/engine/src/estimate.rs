//! The two estimation methods and the per-GPU budget verdict.
//!
//! `lesson` is chapter 62's formula (seed 003), term for term. `detailed` counts each tensor a
//! PyTorch training or inference step keeps alive at its peak, with the constants cited where they
//! are defined. Both produce the same [`Estimate`]: components with their formula and the numbers
//! substituted in, a per-GPU total, and a verdict against the usable budget.

use crate::model::{Architecture, MatrixShape};
use crate::precision::*;
use crate::scenario::{FieldError, Resolved, Scenario};
use crate::units::{Bytes, GB, MIB};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

pub const ESTIMATE_SCHEMA: &str = "vramfit.estimate/1";

/// Chapter 62's fixed "CUDA kernels + workspace" overhead: 0.5 GB.
pub const LESSON_OVERHEAD_BYTES: f64 = 0.5 * GB;
/// Chapter 62: "Activations ≈ 2 × layers × batch_size × seq_length × hidden_dim × bytes".
pub const LESSON_ACTIVATION_FACTOR: f64 = 2.0;
/// Chapter 62's checkpointing multiplier ("activation_base *= 0.4  # ~60% savings").
pub const LESSON_CHECKPOINT_FACTOR: f64 = 0.4;

/// Memory the CUDA driver context, cuBLAS/cuDNN handles and PyTorch's kernel images take before any
/// tensor exists. With CUDA ≥ 11.7 lazy module loading (the default since PyTorch 2.0) this is about
/// 0.4–0.6 GiB on A100/H100-class cards; the public set's 2021 V100 row (M084, eager loading) shows
/// 1343 MiB. 512 MiB is the lazy-loading figure.
pub const CUDA_CONTEXT_BYTES: f64 = 512.0 * MIB;

/// How far above the detailed method published bitsandbytes QLoRA runs measured: the median of
/// measured ÷ predicted − 1 over calibration/'s `qlora` rows (LitGPT), which tests/accuracy.rs
/// recomputes. Every QLoRA estimate says so until the gap is explained.
pub const QLORA_MEASURED_ABOVE_PCT: f64 = 9.0;
/// PyTorch's caching allocator rounds large blocks up and keeps freed blocks cached, so reserved
/// memory exceeds the live tensors. Transient tensors (activations, logits, KV growth) fragment;
/// tensors allocated once and kept (weights, optimizer state) barely do. The split follows
/// Answer.AI's fsdp_qlora benchmark (peak allocated 8.28 GiB vs reserved 9.16 GiB, row M131's source).
pub const FRAGMENTATION_OF_TRANSIENT: f64 = 0.20;
pub const FRAGMENTATION_OF_STATIC: f64 = 0.02;
/// bitsandbytes NF4 quantizes in blocks of 64 weights with one fp32 absmax each (Dettmers et al.
/// 2023, QLoRA §2); double quantization stores those absmax values as 8-bit with one fp32 constant per
/// 256 of them (§3: 0.5 → 0.127 bits per parameter).
pub const NF4_BLOCK: f64 = 64.0;
pub const NF4_DOUBLE_QUANT_BLOCK: f64 = 256.0;
/// GPTQ/AWQ-style int4 stores an fp16 scale and a packed 4-bit zero point per group of 128 weights.
pub const INT4_GROUP: f64 = 128.0;
/// The chunk of tokens a chunked cross-entropy keeps in fp32 at once.
pub const LOSS_CHUNK_TOKENS: f64 = 1024.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Fits,
    Tight,
    Oom,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Fits => "fits",
            Verdict::Tight => "tight",
            Verdict::Oom => "oom",
        }
    }
}

/// One slice of the memory stack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// Stable: `weights`, `quant_constants`, `adapters`, `gradients`, `optimizer`, `master_weights`,
    /// `weight_copies`, `activations`, `logits`, `kv_cache`, `cuda_context`, `fragmentation`,
    /// `custom:<name>`.
    pub id: Cow<'static, str>,
    pub label: String,
    pub bytes: Bytes,
    /// The formula with its numbers substituted ("show your work").
    pub formula: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub schema: String,
    pub scenario: Scenario,
    pub method: Method,
    pub params: f64,
    pub trainable_params: f64,
    pub components: Vec<Component>,
    /// Everything on one GPU: what nvidia-smi would show for this process.
    pub total_bytes: Bytes,
    pub capacity_bytes: Bytes,
    /// Capacity less memory in use by others and the safety margin.
    pub usable_bytes: Bytes,
    /// Usable less total; negative when it does not fit.
    pub headroom_bytes: i64,
    pub tight_threshold_bytes: Bytes,
    pub verdict: Verdict,
    pub gpu_name: String,
    pub gpus: u32,
    pub notes: Vec<String>,
}

impl Estimate {
    pub fn component(&self, id: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }

    pub fn bytes_of(&self, id: &str) -> Bytes {
        self.component(id).map(|c| c.bytes).unwrap_or(Bytes::ZERO)
    }

    /// What `torch.cuda.max_memory_allocated()` would report: no context, no allocator slack.
    pub fn allocated_bytes(&self) -> Bytes {
        self.total_bytes
            .saturating_sub(self.bytes_of("cuda_context"))
            .saturating_sub(self.bytes_of("fragmentation"))
    }

    /// What `torch.cuda.max_memory_reserved()` would report: allocator slack but no context.
    pub fn reserved_bytes(&self) -> Bytes {
        self.total_bytes
            .saturating_sub(self.bytes_of("cuda_context"))
    }
}

/// Builds the estimate, or every invalid field.
pub fn estimate(scenario: &Scenario) -> Result<Estimate, Vec<FieldError>> {
    let resolved = scenario.resolve()?;
    Ok(estimate_resolved(scenario, &resolved))
}

/// The total on one GPU without building any formula text or the result object: the solver's inner loop.
pub fn total_bytes(scenario: &Scenario) -> Result<Bytes, Vec<FieldError>> {
    let resolved = scenario.resolve()?;
    let mut notes = Vec::new();
    let (stack, _) = build_stack(scenario, &resolved, false, &mut notes);
    Ok(stack.components.iter().map(|c| c.bytes).sum())
}

/// Formats formula text only when it will be shown, so the solver's thousands of estimates stay cheap.
macro_rules! explain {
    ($on:expr, $($arg:tt)*) => {
        if $on { format!($($arg)*) } else { String::new() }
    };
}

/// A compact number for formulas: 4096, 8.03B, 1.07e-3.
fn num(x: f64) -> String {
    let abs = x.abs();
    if abs >= 1e12 {
        format!("{:.2}T", x / 1e12)
    } else if abs >= 1e9 {
        format!("{:.2}B", x / 1e9)
    } else if abs >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x.fract() == 0.0 {
        format!("{x}")
    } else {
        format!("{x:.3}")
    }
}

struct Stack {
    explain: bool,
    components: Vec<Component>,
}

impl Stack {
    fn push(&mut self, id: impl Into<Cow<'static, str>>, label: &str, bytes: f64, formula: String) {
        let id = id.into();
        if bytes > 0.0 || id == "weights" {
            self.components.push(Component {
                id,
                label: if self.explain {
                    label.to_string()
                } else {
                    String::new()
                },
                bytes: Bytes::from_f64(bytes),
                formula,
            });
        }
    }

    fn sum(&self, ids: &[&str]) -> f64 {
        self.components
            .iter()
            .filter(|c| ids.contains(&c.id.as_ref()))
            .map(|c| c.bytes.as_f64())
            .sum()
    }
}

/// How many ways each kind of state is split across the GPUs.
struct Split {
    weights: f64,
    gradients: f64,
    optimizer: f64,
    model_parallel: f64,
}

impl Split {
    fn new(s: &Scenario) -> Split {
        let n = f64::from(s.gpus.max(1));
        let by = |on: bool| if on { n } else { 1.0 };
        Split {
            weights: by(s.sharding.shards_weights()),
            gradients: by(s.sharding.shards_gradients()),
            optimizer: by(s.sharding.shards_optimizer()),
            model_parallel: by(s.sharding.is_model_parallel()),
        }
    }

    fn note(&self, on: f64) -> &'static str {
        if on > 1.0 {
            " ÷ N"
        } else {
            ""
        }
    }
}

/// Every component of the stack, and the trainable parameter count.
fn build_stack(s: &Scenario, r: &Resolved, explain: bool, notes: &mut Vec<String>) -> (Stack, f64) {
    let mut stack = Stack {
        explain,
        components: Vec::with_capacity(12),
    };
    let trainable = match s.method {
        Method::Lesson => lesson(s, r, &mut stack),
        Method::Detailed => detailed(s, r, &mut stack, notes),
    };
    for c in &s.custom {
        stack.push(
            format!("custom:{}", c.name),
            &c.name,
            c.bytes.as_f64(),
            explain!(explain, "given: {} bytes", c.bytes.0),
        );
    }
    (stack, trainable)
}

fn estimate_resolved(s: &Scenario, r: &Resolved) -> Estimate {
    let mut notes = Vec::new();
    let (stack, trainable) = build_stack(s, r, true, &mut notes);
    if s.method == Method::Detailed && s.mode == Mode::Qlora {
        notes.push(format!(
            "Published QLoRA runs (LitGPT with bitsandbytes) used a median {QLORA_MEASURED_ABOVE_PCT}% \
             more than this method predicts; keep the safety margin."
        ));
    }
    if r.shape_assumed {
        notes.push(format!(
            "Architecture: fields not given are taken from {}.",
            r.shape_from.name
        ));
    }
    let total: Bytes = stack.components.iter().map(|c| c.bytes).sum();
    let usable = r
        .capacity
        .saturating_sub(s.reserved)
        .saturating_sub(s.margin);
    let tight_threshold = Bytes::from_f64(usable.as_f64() * s.tight / 100.0);
    let verdict = if total > usable {
        Verdict::Oom
    } else if total > tight_threshold {
        Verdict::Tight
    } else {
        Verdict::Fits
    };
    let headroom = i64::try_from(usable.0)
        .unwrap_or(i64::MAX)
        .saturating_sub(i64::try_from(total.0).unwrap_or(i64::MAX));
    Estimate {
        schema: ESTIMATE_SCHEMA.to_string(),
        scenario: s.clone(),
        method: s.method,
        params: r.params,
        trainable_params: trainable,
        components: stack.components,
        total_bytes: total,
        capacity_bytes: r.capacity,
        usable_bytes: usable,
        headroom_bytes: headroom,
        tight_threshold_bytes: tight_threshold,
        verdict,
        gpu_name: r.gpu_name(),
        gpus: s.gpus,
        notes,
    }
}

/// Chapter 62 (seed 003), exactly:
/// `Total = P·Bw + P·Bg + P·Bo + 2·L·B·S·H·Ba (×0.4 with checkpointing) + 0.5 GB`, with LoRA's
/// trainable count `2 × rank × hidden × num_target_modules × layers`.
///
/// The lesson's printed Python outputs (98.65 and 5.36) contradict its own code, which gives 97.57
/// and 5.01 for the same inputs, so only the formula is reproduced, never those printouts. Its QLoRA
/// prose says ~5.6 GB because it rounds checkpointed activations up to "~1 GB"; the formula gives
/// 1.07 × 0.4 = 0.43 GB.
fn lesson(s: &Scenario, r: &Resolved, stack: &mut Stack) -> f64 {
    let ex = stack.explain;
    let split = Split::new(s);
    let p = r.params;
    let a = &r.arch;
    let bw = r.weights.bytes();
    stack.push(
        "weights",
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
    if !s.mode.is_training() {
        stack.push(
            "cuda_context",
            "Overhead (CUDA kernels + workspace)",
            LESSON_OVERHEAD_BYTES,
            explain!(ex, "fixed 0.5 GB"),
        );
        return 0.0;
    }
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
        (p, explain!(ex, "P = {}", num(p)))
    };
    let bg = r.grads.bytes();
    stack.push(
        "gradients",
        "Gradients",
        trainable * bg / split.gradients,
        explain!(
            ex,
            "({trainable_formula}) × Bg {} B{}",
            bg,
            split.note(split.gradients)
        ),
    );
    // Seed 004's table gives Adafactor "0.5× model size"; the lesson only covers AdamW.
    let bo = s.optimizer.state_bytes_per_param().unwrap_or(0.5 * bw);
    let optimizer_on_gpu = if s.offload == Offload::None { 1.0 } else { 0.0 };
    stack.push(
        "optimizer",
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
            "master_weights",
            "fp32 master weights",
            trainable * 4.0 * optimizer_on_gpu / split.optimizer,
            explain!(ex, "{} trainable × 4 B", num(trainable)),
        );
    }
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
        "activations",
        "Activations",
        activations,
        explain!(
            ex,
            "2 × L × B × S × H × Ba{} = 2 × {} × {} × {} × {} × {} B{}",
            if checkpoint < 1.0 {
                " × 0.4 (checkpointing)"
            } else {
                ""
            },
            a.layers,
            s.batch,
            s.seq,
            a.hidden,
            ba,
            split.note(split.model_parallel)
        ),
    );
    stack.push(
        "cuda_context",
        "Overhead (CUDA kernels + workspace)",
        LESSON_OVERHEAD_BYTES,
        explain!(ex, "fixed 0.5 GB"),
    );
    trainable
}

/// A targeted projection's (fan-in, fan-out), or `None` where the architecture has no such
/// projection (a gate in a plain MLP).
fn target_shape(target: LoraTarget, a: &Architecture) -> Option<(f64, f64)> {
    let h = f64::from(a.hidden);
    let ffn = f64::from(a.ffn);
    match target {
        LoraTarget::Q => Some((h, a.q_width())),
        LoraTarget::K | LoraTarget::V => Some((h, a.kv_width())),
        LoraTarget::O => Some((a.q_width(), h)),
        LoraTarget::Gate if !a.gated => None,
        LoraTarget::Gate | LoraTarget::Up => Some((h, ffn)),
        LoraTarget::Down => Some((ffn, h)),
    }
}

/// The matrices an optimizer updates: every weight for full fine-tuning, the low-rank A and B
/// factors (r×in and out×r, Hu et al. 2021) of each targeted projection for LoRA.
fn trainable_matrices(s: &Scenario, a: &Architecture) -> Vec<MatrixShape> {
    if !s.mode.is_adapter() {
        let mut all = a.block_linears();
        all.extend(a.embedding_matrices());
        return all;
    }
    let r = f64::from(s.lora_rank);
    let layers = f64::from(a.layers);
    let mut shapes = Vec::new();
    for (fan_in, fan_out) in s.lora_targets.iter().filter_map(|t| target_shape(t, a)) {
        shapes.push(MatrixShape {
            rows: r,
            cols: fan_in,
            count: layers,
        });
        shapes.push(MatrixShape {
            rows: fan_out,
            cols: r,
            count: layers,
        });
    }
    shapes
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

    fn of(target: LoraTarget) -> Option<LinearInput> {
        match target {
            LoraTarget::Q | LoraTarget::K | LoraTarget::V => Some(LinearInput::Attention),
            LoraTarget::O => None,
            LoraTarget::Gate | LoraTarget::Up => Some(LinearInput::Mlp),
            LoraTarget::Down => Some(LinearInput::MlpHidden),
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
/// none, while bitsandbytes' 4- and 8-bit matmuls keep their input whatever needs a gradient
/// (`MatMul4Bit.forward`: `ctx.tensors = (A, B)`). An adapter keeps its own input: the
/// projection's, or with `lora_dropout` a one-byte mask and the dropped copy for each adapter.
/// Nothing here is fitted; counting these tensors took LitGPT's q,v LoRA rows (dropout 0.05) from
/// +11…−1% to −0.1…−4.9% of `max_memory_allocated`, and its QLoRA rows from −11…−16% to −3…−9%.
fn adapter_bytes_per_token(s: &Scenario, r: &Resolved, e: f64) -> f64 {
    if !s.mode.is_adapter() {
        return 0.0;
    }
    let a = &r.arch;
    let frozen_16bit = !r.weights.is_quantized();
    let targets = || {
        s.lora_targets
            .iter()
            .filter(|&t| target_shape(t, a).is_some())
    };
    let bytes = |input: &LinearInput| input.bytes_per_token(a, e);
    let released: f64 = if frozen_16bit {
        LinearInput::ALL.iter().map(bytes).sum()
    } else {
        0.0
    };
    let kept_by_adapters: f64 = if s.lora_dropout {
        targets()
            .filter_map(|t| target_shape(t, a))
            .map(|(fan_in, _)| fan_in * (1.0 + e))
            .sum()
    } else if frozen_16bit {
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

/// Bytes each token keeps alive in one transformer layer for the backward pass, without the
/// attention-score term. Korthikanti et al. 2022 (§4.1) count `sbh(34 + 5as/h)` for GPT-3 with
/// dropout; this is the same accounting for today's layers, tensor by tensor:
/// - each of the two norms saves its fp32 upcast input and its output (RMSNorm as HF and LitGPT
///   write it) or its input and output (LayerNorm);
/// - attention saves q, k, v after RoPE (k and v at the KV width, so GQA shrinks them) and its
///   output, plus flash attention's fp32 log-sum-exp per head;
/// - a gated MLP saves gate, up, act(gate) and their product; a plain MLP fc1's output and the
///   activation's output.
///
/// Dropout is counted apart: hidden-state masks in [`dropout_bytes_per_token`], attention
/// dropout with the scores in [`eager_scores_bytes_per_token`].
fn layer_bytes_per_token(a: &Architecture, e: f64) -> f64 {
    let h = f64::from(a.hidden);
    let norm = if a.gated { h * (4.0 + e) } else { 2.0 * h * e };
    let attention = e * (2.0 * a.q_width() + 2.0 * a.kv_width()) + 4.0 * f64::from(a.heads);
    let mlp = if a.gated { 4.0 } else { 2.0 } * f64::from(a.ffn) * e;
    2.0 * norm + attention + mlp
}

/// Eager attention's extra bytes per token per layer: the s×s scores per head, kept as the fp32
/// softmax output (HF upcasts it) and as the tensor the product with V keeps: the softmax output
/// itself in fp32, its copy in a 16-bit compute dtype, or, with attention dropout in training, a
/// one-byte mask and the dropped copy. Flash/SDPA never store scores, and draw their dropout mask
/// from an RNG seed.
fn eager_scores_bytes_per_token(s: &Scenario, a: &Architecture, e: f64) -> f64 {
    if s.attention == Attention::Flash {
        return 0.0;
    }
    let softmax_output = 4.0;
    let kept_for_value_product = if s.attention_dropout && s.mode.is_training() {
        1.0 + e
    } else if e < 4.0 {
        e
    } else {
        0.0
    };
    f64::from(a.heads) * f64::from(s.seq) * (softmax_output + kept_for_value_product)
}

/// Hidden-state dropout's bytes per token per layer in training: the attention block's and the
/// MLP's outputs each pass a dropout before the residual add (BERT, GPT-2, OPT), and PyTorch's
/// `native_dropout` keeps a one-byte boolean mask for the backward pass (the dropped tensor itself
/// flows into the add and is not kept).
fn dropout_bytes_per_token(s: &Scenario, a: &Architecture) -> f64 {
    if s.dropout {
        2.0 * f64::from(a.hidden)
    } else {
        0.0
    }
}

fn detailed(s: &Scenario, r: &Resolved, stack: &mut Stack, notes: &mut Vec<String>) -> f64 {
    let ex = stack.explain;
    let a = &r.arch;
    let split = Split::new(s);
    let e = r.act_dtype.bytes();
    let tokens = f64::from(s.batch) * f64::from(s.seq);
    let layers = f64::from(a.layers);
    let shards_full_weights = matches!(s.sharding, Sharding::Zero3 | Sharding::Fsdp);

    // Weights: a bare --params keeps its count; the shape only decides the linear/non-linear split.
    let arch_params = a.param_count().max(1.0);
    let linear = r.params * a.linear_params() / arch_params;
    let other = r.params - linear;
    let weights_on_gpu = if s.offload == Offload::All { 0.0 } else { 1.0 };
    // ZeRO-3/FSDP all-gathers one layer at a time and prefetches the next (Zhao et al. 2023, FSDP §3).
    let gathered = if shards_full_weights && split.weights > 1.0 {
        2.0 * linear / layers * r.param_dtype.bytes()
    } else {
        0.0
    };
    let (weight_bytes, weight_formula) = if r.weights.is_quantized() {
        let compute = r.act_dtype.bytes();
        (
            linear * r.weights.bytes() + other * compute,
            explain!(
                ex,
                "linear {} × {} B ({}) + embeddings/norms {} × {} B ({})",
                num(linear),
                r.weights.bytes(),
                r.weights,
                num(other),
                compute,
                r.act_dtype
            ),
        )
    } else {
        (
            r.params * r.weights.bytes(),
            explain!(
                ex,
                "P × Bw = {} × {} B ({})",
                num(r.params),
                r.weights.bytes(),
                r.weights
            ),
        )
    };
    // A pipeline puts whole layers on successive GPUs, the embedding with the first and the LM head
    // with the last (each keeps a copy of a tied table): the fullest GPU holds ⌈L/N⌉ layers and one
    // table, which is what must fit.
    let (weights_per_gpu, split_note) = if s.sharding == Sharding::Pipeline && split.weights > 1.0 {
        // Embedding tables are never quantized: they stay in the compute dtype.
        let table_dtype = if r.weights.is_quantized() {
            r.act_dtype
        } else {
            r.weights
        };
        // Scaled like `linear` above, so a bare parameter count keeps its shape's proportions.
        let table_params = f64::from(a.vocab) * f64::from(a.hidden) * r.params / arch_params;
        let table_bytes = table_params * table_dtype.bytes();
        let tables = if a.tied { 1.0 } else { 2.0 } * table_bytes;
        let blocks = weight_bytes - tables;
        let fullest_layers = (layers / split.weights).ceil();
        (
            blocks * fullest_layers / layers + table_bytes,
            " on the fullest stage: ⌈L/N⌉ layers + one embedding table",
        )
    } else {
        (weight_bytes / split.weights, split.note(split.weights))
    };
    stack.push(
        "weights",
        "Model weights",
        weights_per_gpu * weights_on_gpu + gathered,
        explain!(
            ex,
            "{weight_formula}{}{}{}",
            split_note,
            if weights_on_gpu == 0.0 {
                " (offloaded to CPU)"
            } else {
                ""
            },
            if gathered > 0.0 {
                format!(
                    " + 2 gathered layers {}",
                    Bytes::from_f64(gathered).display(s.units)
                )
            } else {
                String::new()
            }
        ),
    );

    if r.weights.is_quantized() {
        let (constants, formula) = match r.weights {
            Dtype::Nf4 if s.double_quant => (
                linear / NF4_BLOCK + linear / (NF4_BLOCK * NF4_DOUBLE_QUANT_BLOCK) * 4.0,
                explain!(
                    ex,
                    "double-quant: {} / 64 × 1 B + {} / 16384 × 4 B",
                    num(linear),
                    num(linear)
                ),
            ),
            Dtype::Nf4 => (
                linear / NF4_BLOCK * 4.0,
                explain!(ex, "{} / 64 blocks × 4 B absmax", num(linear)),
            ),
            Dtype::Int4 => (
                linear / INT4_GROUP * 2.5,
                explain!(
                    ex,
                    "{} / 128 groups × 2.5 B (fp16 scale + 4-bit zero)",
                    num(linear)
                ),
            ),
            // LLM.int8 keeps one fp32 scale per output row (Dettmers et al. 2022); fp8 one per tensor.
            Dtype::Int8 => {
                let rows: f64 = a.block_linears().iter().map(|m| m.cols * m.count).sum();
                (
                    rows * 4.0,
                    explain!(ex, "{} output rows × 4 B scale", num(rows)),
                )
            }
            _ => (0.0, String::new()),
        };
        stack.push(
            "quant_constants",
            "Quantization constants",
            constants * weights_on_gpu / split.weights,
            formula,
        );
    }

    if !s.mode.is_training() {
        inference_working_set(s, r, stack, &split);
        context_and_fragmentation(s, stack);
        return 0.0;
    }

    let matrices = trainable_matrices(s, a);
    let mut trainable: f64 = matrices.iter().map(MatrixShape::elements).sum();
    if s.mode == Mode::Full {
        // A bare --params is the count to train; norms are part of it.
        trainable = r.params;
    }
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
    let optimizer_on_gpu = if s.offload == Offload::None { 1.0 } else { 0.0 };
    if r.master_weights && r.param_dtype != Dtype::Fp32 {
        stack.push(
            "master_weights",
            "fp32 master weights",
            trainable * 4.0 * optimizer_on_gpu / split.optimizer,
            explain!(
                ex,
                "{} × 4 B{}",
                num(trainable),
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
                factored * 4.0,
                explain!(ex, "Σ(rows + cols) {} × 4 B (factored)", num(factored)),
            )
        }
    };
    stack.push(
        "optimizer",
        "Optimizer states",
        optimizer_bytes * optimizer_on_gpu / split.optimizer,
        explain!(
            ex,
            "{optimizer_formula}{}{}",
            split.note(split.optimizer),
            if optimizer_on_gpu == 0.0 {
                " (offloaded to CPU)"
            } else {
                ""
            }
        ),
    );
    if optimizer_on_gpu == 0.0 && ex {
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

    // torch.autocast casts each fp32 weight to the 16-bit compute dtype where a matmul uses it, and
    // the matmul keeps that copy for its input's gradient; trainable weights' casts are also cached
    // until the forward pass ends (`cache_enabled`, PyTorch's AMP docs). So when the forward pass
    // ends, a copy of every linear weight is alive, except for frozen weights under checkpointing,
    // which are cast again layer by layer.
    if r.weights == Dtype::Fp32 && e < 4.0 && !shards_full_weights {
        let all_layers = s.mode == Mode::Full || s.checkpointing == Checkpointing::None;
        let copied = if all_layers { linear } else { linear / layers };
        stack.push(
            "weight_copies",
            "16-bit weight copies (autocast)",
            copied * e * weights_on_gpu / split.weights,
            explain!(
                ex,
                "{} linear weights{} × {} B ({})",
                num(copied),
                if all_layers { "" } else { " of one layer" },
                e,
                r.act_dtype
            ),
        );
    }
    let per_layer = layer_bytes_per_token(a, e)
        + dropout_bytes_per_token(s, a)
        + adapter_bytes_per_token(s, r, e);
    let scores = eager_scores_bytes_per_token(s, a, e);
    let one_layer = tokens * (per_layer + scores);
    let (saved, saved_formula) = match s.checkpointing {
        Checkpointing::None => (
            layers * one_layer,
            explain!(
                ex,
                "L × b·s × (layer {} B + scores {} B) = {} × {} × {}",
                num(per_layer),
                num(scores),
                a.layers,
                num(tokens),
                num(per_layer + scores)
            ),
        ),
        Checkpointing::Selective => (
            layers * tokens * per_layer,
            explain!(
                ex,
                "L × b·s × layer {} B (scores recomputed) = {} × {} × {}",
                num(per_layer),
                a.layers,
                num(tokens),
                num(per_layer)
            ),
        ),
        Checkpointing::Full => (
            layers * tokens * f64::from(a.hidden) * e,
            explain!(
                ex,
                "L × b·s × H × {} B (layer inputs only) = {} × {} × {}",
                e,
                a.layers,
                num(tokens),
                a.hidden
            ),
        ),
    };
    // The backward pass of one layer needs that layer's activations (recomputed, under
    // checkpointing) and their gradients at once.
    let working = one_layer;
    stack.push(
        "activations",
        "Activations",
        (saved + working) / split.model_parallel,
        explain!(
            ex,
            "{saved_formula} + one layer in backward {}{}",
            num(working),
            split.note(split.model_parallel)
        ),
    );
    if s.head == Head::Lm {
        let elements = tokens * f64::from(a.vocab);
        let (bytes, formula) = if s.chunked_loss {
            let chunk =
                f64::from(s.batch) * LOSS_CHUNK_TOKENS.min(f64::from(s.seq)) * f64::from(a.vocab);
            (
                elements * e + chunk * 8.0,
                explain!(
                    ex,
                    "b·s·V × {} B + one {}-token chunk × 8 B (fp32 log-probs + grad)",
                    e,
                    LOSS_CHUNK_TOKENS
                ),
            )
        } else {
            (
                elements * (e + 8.0),
                explain!(
                    ex,
                    "b·s·V × ({} B logits + 4 B fp32 log-probs + 4 B their grad) = {} × {} × {}",
                    e,
                    num(tokens),
                    a.vocab,
                    e + 8.0
                ),
            )
        };
        let vocab_split = if s.sharding == Sharding::Tensor {
            split.model_parallel
        } else {
            1.0
        };
        stack.push(
            "logits",
            "Logits & cross-entropy",
            bytes / vocab_split,
            formula,
        );
    }
    context_and_fragmentation(s, stack);
    trainable
}

/// Inference keeps the KV cache for every token in context, the prompt's logits, and one layer's
/// transient tensors at a time.
fn inference_working_set(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let ex = stack.explain;
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    let tokens = f64::from(s.batch) * f64::from(s.seq);
    let kv_per_token = 2.0 * f64::from(a.layers) * a.kv_width() * r.kv_dtype.bytes();
    stack.push(
        "kv_cache",
        "KV cache",
        tokens * kv_per_token / split.model_parallel,
        explain!(
            ex,
            "2 × L × kv-heads × head-dim × b·s × {} B = 2 × {} × {} × {} × {} × {}{}",
            r.kv_dtype.bytes(),
            a.layers,
            a.kv_heads,
            a.head_dim,
            num(tokens),
            r.kv_dtype.bytes(),
            split.note(split.model_parallel)
        ),
    );
    let one_layer = tokens * (layer_bytes_per_token(a, e) + eager_scores_bytes_per_token(s, a, e));
    stack.push(
        "activations",
        "Activations (one layer's working set)",
        one_layer / split.model_parallel,
        explain!(
            ex,
            "b·s × one layer's tensors = {} × {}",
            num(tokens),
            num(one_layer / tokens.max(1.0))
        ),
    );
    if s.head == Head::Lm {
        stack.push(
            "logits",
            "Prompt logits",
            tokens * f64::from(a.vocab) * e,
            explain!(ex, "b·s·V × {} B = {} × {}", e, num(tokens), a.vocab),
        );
    }
}

fn context_and_fragmentation(s: &Scenario, stack: &mut Stack) {
    let ex = stack.explain;
    let transient = stack.sum(&["activations", "weight_copies", "logits", "kv_cache"]);
    let persistent = stack.sum(&[
        "weights",
        "quant_constants",
        "adapters",
        "gradients",
        "optimizer",
        "master_weights",
    ]);
    stack.push(
        "cuda_context",
        "CUDA context",
        s.context.as_f64(),
        explain!(
            ex,
            "driver + kernels: {}",
            crate::units::format_size_exact(s.context)
        ),
    );
    stack.push(
        "fragmentation",
        "Allocator fragmentation",
        transient * FRAGMENTATION_OF_TRANSIENT + persistent * FRAGMENTATION_OF_STATIC,
        explain!(
            ex,
            "20% of transient {} + 2% of persistent {}",
            Bytes::from_f64(transient).display(s.units),
            Bytes::from_f64(persistent).display(s.units)
        ),
    );
}
