//! How long a training step takes: its FLOPs against the card's datasheet 16-bit tensor
//! throughput (an fp32 run: the CUDA cores' derived fp32 rate), at a utilisation set from
//! published runs, plus what no FLOPs overlap.
//!
//! FLOPs per token follow the convention the published utilisations are computed with (PaLM,
//! Chowdhery et al. 2022, appendix B; llm-foundry's scripts/train/benchmarking/collect_results.py;
//! torchtitan's `get_num_flop_per_token`): two per matmul parameter forward and four backward
//! (activation and weight gradients), and attention's `4 × seq × query width` per layer forward,
//! twice that backward, over the whole square (no causal half), so a full step does
//! `6·N + 12·L·d·s` per token. Frozen weights (LoRA, QLoRA) get no weight gradients: `4·N`, plus
//! the adapters' own `6` per adapter parameter. Activation checkpointing recomputes the forward
//! of the layers it covers (`full`: the whole layer; `op`: every other matmul; `selective`: the
//! attention scores). The utilisation is of the hardware FLOPs, recomputation included.
//!
//! QLoRA dequantizes every 4-bit weight to 16 bits in the forward and again in the backward
//! (bitsandbytes 0.49.2, bitsandbytes/autograd/_functions.py: `MatMul4Bit.forward` line 315,
//! `F.dequantize_4bit(B, quant_state).to(A.dtype)` into `linear`, and `backward` line 346 for
//! `grad_A`; torchao's `LinearNF4`, torchao/dtypes/nf4tensor.py @0598012, `weight.to(dtype)` in
//! both), and once more where checkpointing recomputes the forward: the 4-bit codes and their
//! absmax read and a 16-bit copy written, at the card's bandwidth, after the FLOPs.
//!
//! The non-matmul work (norms, residual adds, activations, dropout, the loss over the vocabulary,
//! the optimizer step; `train_traffic`) moves its bytes at the card's datasheet bandwidth, added
//! to the FLOPs' time: eager PyTorch issues each elementwise kernel on the same stream as the
//! matmuls, after the one whose output it reads, so nothing overlaps them.
//!
//! Data parallelism runs `batch × seq` tokens on each GPU and exchanges gradients over the
//! card's link by ring (`2(n−1)/n` of the gradients each way, once an optimizer step, overlapping
//! the last micro-batch's backward, as DDP's buckets do); a fully sharded run also gathers the
//! weights twice a micro-batch and reduce-scatters the gradients (`(n−1)/n` each), overlapping
//! that micro-batch's compute. Only what outlasts its overlap adds to the step. Past one node the
//! ring also crosses the network between nodes, and runs at its slowest link: every hop of a ring
//! carries the same `2(n−1)/n` of the data (nccl-tests doc/PERFORMANCE.md, the all-reduce's bus
//! bandwidth), and with a network port per GPU the node's rings leave it through all its ports at
//! once, so a node's whole network carries what one GPU's link does.

use super::activations::checkpointed_layers;
use super::speed::Band;
use super::stack::Component;
use super::train_traffic::{micro_batch_bytes_per_token, optimizer_step_bytes};
use super::training::trainable_elements;
use super::{NF4_BLOCK, NF4_DOUBLE_QUANT_BLOCK};
use crate::dtype::{Dtype, QuantScope};
use crate::gpu_catalogue::{Datasheet, Gpu};
use crate::model::Block;
use crate::scenario::{Resolved, Scenario};
use crate::sharding::{Offload, Sharding};
use crate::units::group_thousands;
use crate::workload::Checkpointing;
use serde::{Deserialize, Serialize};

/// Of the 16-bit tensor throughput, what training reaches on an Ampere card, recomputation
/// counted: the median implied utilisation of llm-foundry's MPT-7B rows on one node of 8 A100s
/// (its tables "A100 80GB with 1600 Gbps node-node interconnect", amp_bf16, seq 1,024 to 65,536,
/// and "A100 40GB ...", pure bf16, seq 512 to 16,384; Composer FSDP full shard;
/// scripts/train/benchmarking/README.md @495218376), the `TRAIN_AMPERE` rows of
/// calibration/training-speed.csv.
pub const TRAIN_AMPERE: f64 = 0.699;

/// The same on a Hopper card, whose datasheet peak its wgmma kernels reach at a smaller share:
/// the median of the same README's MPT-7B rows on one node of 8 H100s ("H100 80GB BF16",
/// seq 1,024 to 65,536), the `TRAIN_HOPPER` rows.
pub const TRAIN_HOPPER: f64 = 0.497;

/// The band's low and high ends as shares of the typical utilisation: the lowest and highest
/// ratio of a fit row's implied utilisation to its architecture's constant, over every fit row.
pub const UTILISATION_SPREAD: (f64, f64) = (0.764, 1.202);

const BITS_PER_BYTE: f64 = 8.0;

/// GPUs one node holds: eight in NVIDIA's DGX and HGX systems (DGX BasePOD reference architecture,
/// "Core Components": DGX B200, H200 and H100, eight GPUs each; DGX A100 likewise).
pub const GPUS_PER_NODE: u32 = 8;

/// A node's network to the others, in bits per second each way, where `network` is unset: eight
/// single-port ConnectX-7 at 400 Gb/s (InfiniBand NDR), one per GPU, the compute fabric of the
/// DGX H100, H200 and B200 (the same reference architecture).
pub const NETWORK_DEFAULT_BITS_PER_S: f64 = 3200e9;

/// Bytes of a weight's 16-bit copy, which dequantization writes.
const HALF_BYTES: f64 = 2.0;

/// A training step's speed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainSpeed {
    /// Seconds per optimizer step: `grad-accum` micro-batches of `batch × seq` tokens on each
    /// GPU, and what of the gradients' exchange no compute overlaps.
    pub train_step_s: f64,
    /// Tokens per second over every data-parallel GPU.
    pub train_tokens_per_s: f64,
    /// Tokens per second on one GPU (torchtitan's TPS/GPU, llm-foundry's T/s/GPU).
    pub train_tokens_per_s_per_gpu: f64,
    /// `train_tokens_per_s` at the low and high utilisation.
    pub train_tokens_per_s_low: f64,
    pub train_tokens_per_s_high: f64,
    /// The typical share of the tensor throughput the step is timed at.
    pub utilisation: f64,
    /// Why, in words: the FLOPs, the peak and the share.
    pub basis: String,
}

/// One GPU's optimizer step: the work and the peaks it is timed against.
struct Step {
    /// Tokens one micro-batch runs on one GPU.
    tokens: f64,
    micro_batches: f64,
    /// FLOPs per token: forward and backward, recomputation, and of those the backward.
    model_flops: f64,
    recompute_flops: f64,
    backward_flops: f64,
    peak_flops_per_s: f64,
    /// What the peak is, where it is not the 16-bit tensor throughput.
    peak_words: String,
    /// Bytes the 4-bit weights' dequantization reads and writes per micro-batch.
    dequant_bytes: f64,
    /// Bytes the elementwise work and the loss move per micro-batch, and the optimizer step.
    traffic_bytes: f64,
    optimizer_bytes: f64,
    bandwidth_bytes_per_s: f64,
    exchange: Exchange,
}

/// The gradients' (and a sharded run's weights') traffic over one GPU's link.
struct Exchange {
    gpus: f64,
    /// Bytes each GPU sends per optimizer step, and per micro-batch.
    step_bytes: f64,
    micro_bytes: f64,
    link_bytes_per_s: f64,
    /// Whether the ring crosses the network between nodes.
    across_nodes: bool,
}

impl Step {
    fn compute_s(&self, utilisation: f64) -> f64 {
        self.tokens * (self.model_flops + self.recompute_flops)
            / (self.peak_flops_per_s * utilisation)
    }

    /// What runs at the memory's bandwidth in one micro-batch.
    fn memory_s(&self) -> f64 {
        (self.dequant_bytes + self.traffic_bytes) / self.bandwidth_bytes_per_s
    }

    /// What of the exchange outlasts the compute it overlaps: a micro-batch's sharded traffic
    /// its forward and backward, the step's gradients the last backward.
    fn exposed_s(&self, utilisation: f64) -> f64 {
        let x = &self.exchange;
        if x.gpus <= 1.0 || x.link_bytes_per_s <= 0.0 {
            return 0.0;
        }
        let micro = self.compute_s(utilisation);
        let backward = micro * self.backward_flops / (self.model_flops + self.recompute_flops);
        self.micro_batches * (x.micro_bytes / x.link_bytes_per_s - micro).max(0.0)
            + (x.step_bytes / x.link_bytes_per_s - backward).max(0.0)
    }

    fn seconds(&self, utilisation: f64) -> f64 {
        self.micro_batches * (self.compute_s(utilisation) + self.memory_s())
            + self.optimizer_bytes / self.bandwidth_bytes_per_s
            + self.exposed_s(utilisation)
    }

    /// The bandwidth-bound terms in words.
    fn memory_words(&self) -> String {
        let dequant = if self.dequant_bytes > 0.0 {
            format!(
                ", dequantizing the 4-bit weights {:.2} GB",
                self.dequant_bytes / 1e9
            )
        } else {
            String::new()
        };
        format!(
            ", plus at {} GB/s: elementwise work and the loss {:.2} GB a micro-batch{dequant}, \
             the optimizer step {:.2} GB",
            group_thousands((self.bandwidth_bytes_per_s / 1e9).round() as u64),
            self.traffic_bytes / 1e9,
            self.optimizer_bytes / 1e9,
        )
    }

    /// The same sum in words, naming the utilisation's rule.
    fn words(&self, utilisation: f64, rule: &str) -> String {
        let recompute = if self.recompute_flops > 0.0 {
            format!(" (+{:.2} recomputed)", self.recompute_flops / 1e9)
        } else {
            String::new()
        };
        let memory = self.memory_words();
        let exposed = self.exposed_s(utilisation);
        let exchange = if self.exchange.gpus > 1.0 {
            format!(
                ", plus {:.0} ms of the exchange over {} GB/s{} that no compute hides",
                exposed * 1e3,
                (self.exchange.link_bytes_per_s / 1e9).round(),
                if self.exchange.across_nodes {
                    " (the slower of the link and the node's network)"
                } else {
                    ""
                }
            )
        } else {
            String::new()
        };
        let accum = if self.micro_batches > 1.0 {
            format!("{} micro-batches × ", self.micro_batches)
        } else {
            String::new()
        };
        format!(
            "compute-bound: {accum}{} tokens × {:.2} GFLOP a token{recompute} at {:.0} \
             TFLOPS{} × {:.0}% ({rule}){memory}{exchange}",
            group_thousands(self.tokens as u64),
            self.model_flops / 1e9,
            self.peak_flops_per_s / 1e12,
            self.peak_words,
            utilisation * 100.0,
        )
    }
}

/// The typical utilisation on the card, and its band, by its architecture's rule; LoRA and QLoRA
/// take it too, since they run a full fine-tune's GEMMs at its shapes (less the frozen weights'
/// gradients, which the FLOPs leave out) and QLoRA's dequantization is timed apart. Hopper's
/// rule holds where the tensor cores run asynchronously, fed by TMA (wgmma on Hopper, tcgen05 on
/// data-centre Blackwell); Ampere's where each warp issues its own synchronous MMA (mma.sync from
/// Volta to Ada and on GeForce and RTX PRO Blackwell, AMD's MFMA). The words name the rule, and
/// on a card of neither fit architecture say that it is the nearest one and why.
fn utilisation(gpu: &Gpu, sheet: &Datasheet) -> (Band, String) {
    let ampere = gpu.is_nvidia() && !gpu.pre_ampere && sheet.fp8_flops_per_s <= 0.0;
    let hopper_like = ("Hopper's", "asynchronous MMA fed by TMA, as Hopper's wgmma");
    let ampere_like = (
        "Ampere's",
        "synchronous MMA issued by each warp, as Ampere's mma.sync",
    );
    let (typical, rule, own) = if gpu.hopper {
        (TRAIN_HOPPER, hopper_like, true)
    } else if gpu.nvswitch && sheet.fp4_flops_per_s > 0.0 {
        (TRAIN_HOPPER, hopper_like, false)
    } else {
        (TRAIN_AMPERE, ampere_like, ampere)
    };
    let words = if own {
        format!("{} utilisation", rule.0)
    } else {
        format!(
            "{} utilisation, the nearest rule: no published run on the {}'s architecture set one; \
             it runs {}",
            rule.0, gpu.name, rule.1
        )
    };
    let band = Band::new(
        typical * UTILISATION_SPREAD.0,
        typical,
        typical * UTILISATION_SPREAD.1,
    );
    (band, words)
}

/// Matmul parameters one token uses, in the blocks and in the LM head (whose matmul runs whether
/// or not it shares the embedding's matrix; the embedding itself is a lookup), scaled as `params`
/// scales the shape.
fn matmul_params(r: &Resolved) -> (f64, f64) {
    let a = &r.arch;
    let routed = a.params_in(&[Block::RoutedExpert]);
    let unused = if a.moe.is_moe() {
        1.0 - f64::from(a.moe.per_token) / f64::from(a.moe.experts.max(1))
    } else {
        0.0
    };
    let scale = r.params / r.shape_params.max(1.0);
    let head = f64::from(a.vocab) * f64::from(a.hidden);
    ((r.linear_params - routed * unused) * scale, head * scale)
}

/// Attention's forward FLOPs per token: `4 × query width` per position attended, `seq` on a
/// full-attention layer and at most the window on a sliding one.
fn attention_flops(r: &Resolved, seq: f64) -> f64 {
    let a = &r.arch;
    let layers = f64::from(a.attention_layers());
    let windowed = f64::from(a.window.layers).min(layers);
    let window = if a.window.tokens > 0 {
        seq.min(f64::from(a.window.tokens))
    } else {
        seq
    };
    4.0 * a.q_width() * ((layers - windowed) * seq + windowed * window)
}

/// FLOPs per token: (forward and backward, recomputed, backward alone).
fn token_flops(s: &Scenario, r: &Resolved, seq: f64) -> (f64, f64, f64) {
    let (blocks, head) = matmul_params(r);
    let n = blocks + head;
    let attention = attention_flops(r, seq);
    let adapters = if s.mode.is_adapter() {
        trainable_elements(s, r)
    } else {
        0.0
    };
    let weight_grads = if s.mode.is_adapter() { 0.0 } else { 2.0 * n };
    let forward = 2.0 * n + attention + 2.0 * adapters;
    let backward = 2.0 * n + 2.0 * attention + 4.0 * adapters + weight_grads;
    let layers = f64::from(r.arch.layers.max(1));
    let covered = match s.checkpointing {
        Checkpointing::None => 0.0,
        _ => checkpointed_layers(layers, s.checkpoint_every) / layers,
    };
    let recomputed = match s.checkpointing {
        Checkpointing::None => 0.0,
        Checkpointing::Full => 2.0 * blocks + attention + 2.0 * adapters,
        Checkpointing::Op => blocks,
        Checkpointing::Selective => attention,
    };
    (forward + backward, covered * recomputed, backward)
}

/// Bytes one micro-batch's dequantization moves: each pass reads the 4-bit codes and their
/// absmax and writes the 16-bit copy (the matmul's read of it overlaps its FLOPs), twice, and
/// once more for the share of the forward that checkpointing recomputes.
fn dequant_bytes(s: &Scenario, r: &Resolved) -> f64 {
    if r.weights.is_float() || !s.mode.is_adapter() {
        return 0.0;
    }
    let quantized = match r.quantized {
        QuantScope::AllLinear => r.linear_params,
        QuantScope::Experts => r.arch.params_in(&[Block::RoutedExpert]),
    } * r.params
        / r.shape_params.max(1.0);
    // One fp32 absmax per block, or under double quantization one byte per block and one fp32
    // constant per NF4_DOUBLE_QUANT_BLOCK of those.
    let absmax = match (r.weights, s.double_quant) {
        (Dtype::Nf4, false) => Dtype::Fp32.bytes() / NF4_BLOCK,
        (Dtype::Nf4, true) => (1.0 + Dtype::Fp32.bytes() / NF4_DOUBLE_QUANT_BLOCK) / NF4_BLOCK,
        _ => 0.0,
    };
    let layers = f64::from(r.arch.layers.max(1));
    let covered = checkpointed_layers(layers, s.checkpoint_every) / layers;
    let recomputed = match s.checkpointing {
        Checkpointing::Full => covered,
        Checkpointing::Op => covered / 2.0,
        Checkpointing::None | Checkpointing::Selective => 0.0,
    };
    (2.0 + recomputed) * quantized * (r.weights.bytes() + absmax + HALF_BYTES)
}

/// What each GPU sends per optimizer step and per micro-batch.
fn exchange(s: &Scenario, r: &Resolved, sheet: &Datasheet) -> Exchange {
    let gpus = f64::from(s.gpus.max(1));
    let share = (gpus - 1.0) / gpus;
    let gradients = trainable_elements(s, r) * r.grads.bytes();
    let (step_bytes, micro_bytes) = if s.sharding.is_fully_sharded() {
        (
            0.0,
            share * (2.0 * r.params * r.act_dtype.bytes() + gradients),
        )
    } else {
        (2.0 * share * gradients, 0.0)
    };
    let across_nodes = s.gpus > GPUS_PER_NODE;
    let network = s
        .network
        .map_or(NETWORK_DEFAULT_BITS_PER_S, |gbit| gbit * 1e9)
        / BITS_PER_BYTE;
    Exchange {
        gpus,
        step_bytes,
        micro_bytes,
        link_bytes_per_s: if across_nodes {
            sheet.link_bytes_per_s.min(network)
        } else {
            sheet.link_bytes_per_s
        },
        across_nodes,
    }
}

/// Why this scenario has no training speed, where the model does not cover it.
fn unmodelled(s: &Scenario) -> Option<String> {
    let why = if s.tp > 1
        || s.cp > 1
        || s.sharding.is_model_parallel()
        || s.sharding == Sharding::Expert
    {
        "tensor, pipeline, context and expert parallelism are not modelled (data parallelism is)"
            .to_string()
    } else if s.float8.is_on() {
        "float8 linears run on the fp8 tensor cores beside 16-bit attention, which is not modelled"
            .to_string()
    } else if s.offload != Offload::None {
        format!("offload={} moves state over PCIe and steps the optimizer on the CPU, which is not modelled", s.offload)
    } else {
        return None;
    };
    Some(format!("No training speed estimate: {why}."))
}

/// The peak the matmuls run at and its words: the 16-bit tensor throughput, or for an fp32 run
/// the CUDA cores' fp32 rate. PyTorch runs fp32 matmuls without TF32 unless told to
/// (`torch.backends.cuda.matmul.allow_tf32` defaults to False since 1.12: PyTorch's
/// docs/source/notes/cuda.rst, "TensorFloat-32 (TF32) on Ampere (and later) devices"), and the
/// HF Trainer's `tf32` argument defaults to None, leaving PyTorch's default (transformers PR
/// #14606, training_args.py); the scenario has no TF32 setting, so the words say what TF32
/// would give.
fn peak(gpu: &Gpu, sheet: &Datasheet, dtype: Dtype) -> Result<(f64, String), Option<String>> {
    if dtype != Dtype::Fp32 {
        if sheet.half_flops_per_s <= 0.0 {
            return Err(Some(format!(
                "No training speed estimate: the {}'s maker states no 16-bit tensor throughput.",
                gpu.name
            )));
        }
        return Ok((sheet.half_flops_per_s, String::new()));
    }
    let fp32 = gpu.fp32_flops_per_s();
    if fp32 <= 0.0 {
        return Err(Some(format!(
            "No training speed estimate: it computes in fp32, and the {}'s fp32 peak is not \
             known (it follows from an NVIDIA card's SMs, boost clock and FP32 lanes per SM, \
             Volta on, which the catalogue does not give for it).",
            gpu.name
        )));
    }
    let tf32 = gpu.tf32_flops_per_s();
    let words = if tf32 > 0.0 {
        format!(
            " fp32 on the CUDA cores (TF32 off, PyTorch's default; with TF32 on, the tensor \
             cores' {:.0} TFLOPS would be faster)",
            tf32 / 1e12
        )
    } else {
        " fp32 on the CUDA cores (no TF32 tensor path)".to_string()
    };
    Ok((fp32, words))
}

/// The step the scenario runs on its card and the utilisation it runs at, or the note saying
/// why it is not timed.
fn step(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
) -> Result<(Step, Band, String), Option<String>> {
    let gpu = r.gpu.ok_or(None)?;
    let sheet = gpu.datasheet.as_ref().ok_or_else(|| {
        Some(format!(
            "No speed estimate: the catalogue has no datasheet figures (bandwidth, throughput) for the {} yet.",
            gpu.name
        ))
    })?;
    if let Some(why) = unmodelled(s) {
        return Err(Some(why));
    }
    let (peak_flops_per_s, peak_words) = peak(gpu, sheet, r.act_dtype)?;
    let seq = f64::from(s.seq.max(1));
    let (model_flops, recompute_flops, backward_flops) = token_flops(s, r, seq);
    let (band, mut rule) = utilisation(gpu, sheet);
    if r.act_dtype == Dtype::Fp32 {
        rule.push_str(", set on 16-bit runs");
    }
    let tokens = f64::from(s.batch.max(1)) * seq;
    let step = Step {
        tokens,
        micro_batches: f64::from(s.grad_accum.max(1)),
        model_flops,
        recompute_flops,
        backward_flops,
        peak_flops_per_s,
        peak_words,
        dequant_bytes: dequant_bytes(s, r),
        traffic_bytes: tokens * micro_batch_bytes_per_token(s, r, seq),
        optimizer_bytes: optimizer_step_bytes(s, components),
        bandwidth_bytes_per_s: sheet.memory_bytes_per_s,
        exchange: exchange(s, r, sheet),
    };
    Ok((step, band, rule))
}

/// The training step's speed on the scenario's card, or the note saying why there is none.
pub(super) fn speed(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
) -> Result<TrainSpeed, Option<String>> {
    let (step, band, rule) = step(s, r, components)?;
    let gpus = step.exchange.gpus;
    let rate = |u: f64| gpus * step.micro_batches * step.tokens / step.seconds(u);
    Ok(TrainSpeed {
        train_step_s: step.seconds(band.typical),
        train_tokens_per_s: rate(band.typical),
        train_tokens_per_s_per_gpu: rate(band.typical) / gpus,
        train_tokens_per_s_low: rate(band.low),
        train_tokens_per_s_high: rate(band.high),
        utilisation: band.typical,
        basis: step.words(band.typical, &rule),
    })
}

/// The utilisation at which the scenario's optimizer step takes `step_s` (bisection: the step
/// shortens as the utilisation grows), the figure a utilisation constant is the median of; `None`
/// where the scenario is not timed or no utilisation up to 100% is that fast.
pub(super) fn implied_utilisation(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
    step_s: f64,
) -> Option<f64> {
    let (step, ..) = step(s, r, components).ok()?;
    let (mut low, mut high) = (1e-4, 1.0);
    if !(step.seconds(high) <= step_s && step_s <= step.seconds(low)) {
        return None;
    }
    for _ in 0..60 {
        let mid = (low + high) / 2.0;
        if step.seconds(mid) > step_s {
            low = mid;
        } else {
            high = mid;
        }
    }
    Some((low + high) / 2.0)
}
