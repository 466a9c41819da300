//! How fast: a roofline per step from the bytes the memory model already knows.
//!
//! A decode step reads every weight a batch of `b` tokens touches (for a mixture of experts, the
//! experts `b` tokens reach in expectation, not all of them, read through llama.cpp's
//! `mul_mat_id` kernels at their own share of the bandwidth) and each request's cache at its
//! current length, and does `2 × active parameters` FLOPs per token plus attention's; it takes
//! whichever of the reads (at the card's bandwidth) and the FLOPs (at its tensor throughput) is
//! slower, plus a fixed time per layer. Without flash attention the cache is read at
//! its own share of the bandwidth. Prefill does the prompt's FLOPs, which attention makes grow
//! with the prompt's square, against compute; without flash attention it also writes and reads
//! every attention score (f32, then f16), and a path that dequantizes the weights for its GEMMs
//! reads them and writes their f16 copy once per ubatch, bytes no FLOPs overlap. Layers llama.cpp keeps
//! in system RAM are read at the host's bandwidth in decode and copied over the link in prefill.
//! Peaks are the card's datasheet's; what a runtime reaches of them is its [`Efficiency`] and
//! [`TensorPath`], named in its rules; the band is where 90% of measurements fall around the
//! estimate, [`SPEED_SPREAD`].

use super::component::ComponentId;
use super::links::{Parallel, Traffic};
use super::serving::{Deployment, KvLayout, Serving};
use super::stack::Component;
use crate::gpu_catalogue::Datasheet;
use crate::scenario::{Resolved, Scenario};
use crate::units::group_thousands;
use serde::{Deserialize, Serialize};

/// What a runtime reaches of the card's peaks: its shares, and the time each layer of a decode
/// step takes whatever it reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Efficiency {
    /// Of the memory bandwidth, in a decode step.
    pub bandwidth: f64,
    /// Of the memory bandwidth, for the KV cache a decode step reads without flash attention:
    /// the attention kernels that multiply one query by the cache (`KQ`, then `KQV`) rather than
    /// one fused kernel. With flash attention the cache is read at [`Efficiency::bandwidth`].
    pub attention: f64,
    /// Of the memory bandwidth, for the routed experts a decode step reads: kernels that multiply
    /// each token by the few experts it chose, one small matrix each (llama.cpp's `mul_mat_id`,
    /// MLX's gathered matmuls).
    pub experts: f64,
    /// Of the tensor throughput, in prefill.
    pub compute: f64,
    /// Seconds each layer adds to a decode step's reads and FLOPs: launching and synchronising
    /// its kernels, which no bandwidth shortens. It dominates a step that reads little (a small
    /// model, a mixture of experts' few active experts, a fast card). Charged only for the layers
    /// the GPU runs.
    pub layer_s: f64,
    /// Seconds each layer kept on the CPU (llama.cpp's `-ngl` below all) adds beside its reads at
    /// the host's bandwidth: the CPU backend's own time per node.
    pub cpu_layer_s: f64,
    /// Where set, and the card's sheet states its SMs and boost clock, these replace
    /// `bandwidth` and `layer_s`.
    pub clocked: Option<Clocked>,
}

/// A decode step timed on the card's streaming multiprocessors (SMs) and clock: the weights are
/// read at the lesser of a share of the bandwidth and what the SMs stream at most (the
/// kernel's own ceiling per SM, which a card with much bandwidth per SM meets first), and each
/// layer adds a number of GPU cycles (its kernels' launch, synchronisation and tail, which a
/// faster clock shortens), not a fixed time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clocked {
    pub bandwidth: f64,
    pub sm_ceiling: SmCeiling,
    pub layer_cycles: f64,
}

/// What one SM of a batch-1 matmul kernel streams at most.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SmCeiling {
    /// Bytes per SM per cycle at the boost clock: a kernel bound by the instructions it issues.
    PerCycle(f64),
    /// Bytes per SM per second, whatever the clock: a kernel bound by the loads it keeps in
    /// flight against the memory's latency (bytes in flight over latency, Little's law).
    PerSecond(f64),
}

/// The tensor throughput a runtime's prefill matmuls run at, the share of it they reach, and
/// whether they dequantize the weights to 16 bits first (a copy written once per ubatch, which
/// no matmul overlaps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorPath {
    pub peak: f64,
    pub share: f64,
    pub dequantizes: bool,
}

/// A figure with its spread: the low, typical and high ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    pub low: f64,
    pub typical: f64,
    pub high: f64,
}

impl Band {
    pub const fn new(low: f64, typical: f64, high: f64) -> Band {
        Band { low, typical, high }
    }
}

/// The band's low and high ends as shares of a speed figure: where a new card's or model's
/// measurement falls, at 90% (5th to 95th percentile), by a rule stated before its held-out
/// coverage was seen and computed from the fit rows alone
/// (`vramfit_engine::accuracy::speed_band_rule`, checked by the accuracy tests): the spread of
/// the decode rows the efficiency constants were set from, measured over predicted, widened for
/// the constants fitted on them. Pooled over every runtime and backend: ROCm's and the Instinct
/// cards' constants rest on two or three rows each, too few for a spread of their own.
pub const SPEED_SPREAD: (f64, f64) = (0.77, 1.17);

/// Which limit a decode step meets first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    Memory,
    Compute,
}

/// The speed of one scenario on its GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Speed {
    /// Prompt tokens per second for one request (llama-bench's `pp`); `None` where the card's
    /// maker publishes no tensor throughput.
    pub prefill_tokens_per_s: Option<f64>,
    /// New tokens per second for each request while it decodes (llama-bench's `tg` at
    /// concurrency 1).
    pub decode_tokens_per_s: f64,
    /// New tokens per second over every request at the concurrency, prefills included (`vllm
    /// bench serve`'s output token throughput).
    pub output_tokens_per_s: f64,
    /// Time to first token of one request: its prefill.
    pub ttft_s: Option<f64>,
    pub bound: Bound,
    /// `output_tokens_per_s`'s band: where 90% of measurements fall ([`SPEED_SPREAD`]).
    pub low: f64,
    pub high: f64,
    /// Requests decoding at once.
    pub concurrency: u32,
    /// Why, in words: what a step reads and at what bandwidth.
    pub basis: String,
    /// The benchmark that measures these figures, where the runtime has one.
    pub measure: Option<String>,
}

/// Bandwidth of the system RAM llama.cpp reads offloaded layers from, when `host-bandwidth` is
/// unset: dual-channel DDR5-5600, a current desktop's (2 × 64 bit × 5600 MT/s = 89.6 GB/s).
pub const HOST_BANDWIDTH_DEFAULT_BYTES_PER_S: f64 = 89.6e9;

/// The tokens a decode benchmark generates when the scenario names no prompt (llama-bench's
/// default `-n 128`).
const DECODE_BENCH_TOKENS: u32 = 128;

/// What one step reads and computes, on the GPU and in system RAM.
struct Step {
    gpu_bytes: f64,
    /// The routed experts a decode step reads, at their own share of the bandwidth.
    expert_bytes: f64,
    /// The KV cache a decode step reads, at its own share of the bandwidth.
    cache_bytes: f64,
    /// Bytes that kernels between the matmuls read and write, which overlap no FLOPs: in prefill
    /// the dequantized weights and, without flash attention, the attention scores.
    serial_bytes: f64,
    host_bytes: f64,
    /// Bytes copied over the link (llama.cpp's offloaded layers in a large batch).
    link_bytes: f64,
    flops: f64,
}

/// The shares of the peaks one run of the model takes, and the fixed time of a step.
#[derive(Clone, Copy)]
struct Shares {
    bandwidth: f64,
    attention: f64,
    experts: f64,
    compute: f64,
    fixed: Fixed,
}

/// A decode step's fixed time: seconds per layer over the GPU's `layers` layers, and the CPU's
/// time per layer over the `cpu_layers` it runs.
#[derive(Clone, Copy)]
struct Fixed {
    layer_s: f64,
    layers: f64,
    cpu_layer_s: f64,
    cpu_layers: f64,
}

impl Fixed {
    const NONE: Fixed = Fixed {
        layer_s: 0.0,
        layers: 0.0,
        cpu_layer_s: 0.0,
        cpu_layers: 0.0,
    };

    fn seconds(&self) -> f64 {
        self.layers * self.layer_s + self.cpu_layers * self.cpu_layer_s
    }

    /// The same sum in words: "32 layers × 66 µs of kernel launches", and with layers on the
    /// CPU "… and 12 CPU layers × 46 µs of the CPU threads' barriers"; a part of no time is left out.
    fn words(&self) -> String {
        let gpu = (self.layers > 0.0 && self.layer_s > 0.0).then(|| {
            let us = self.layer_s * 1e6;
            format!("{} layers × {us:.0} µs of kernel launches", self.layers)
        });
        let cpu = (self.cpu_layers > 0.0).then(|| {
            let us = self.cpu_layer_s * 1e6;
            format!(
                "{} CPU layers × {us:.0} µs of the CPU threads' barriers",
                self.cpu_layers
            )
        });
        gpu.into_iter().chain(cpu).collect::<Vec<_>>().join(" and ")
    }
}

impl Shares {
    /// The shares, and a decode step's fixed time over
    /// `layers` on the GPU and `cpu_layers` on the CPU; the cache takes the weights' share under
    /// flash attention. `clock` is the sheet
    /// a decode step is timed on by its SMs and clock (`Efficiency::clocked`); without one, or
    /// on a sheet that states neither, the unclocked share and time per layer hold.
    fn at(
        (eff, path, clock): (&Efficiency, &TensorPath, Option<&Datasheet>),
        flash_attn: bool,
        (layers, cpu_layers): (f64, f64),
    ) -> Shares {
        let clocked = clock
            .filter(|sheet| sheet.sms > 0 && sheet.boost_mhz > 0)
            .zip(eff.clocked);
        let (bandwidth, layer_s) = match clocked {
            Some((sheet, c)) => {
                let hz = f64::from(sheet.boost_mhz) * 1e6;
                let per_sm = match c.sm_ceiling {
                    SmCeiling::PerCycle(bytes) => bytes * hz,
                    SmCeiling::PerSecond(bytes) => bytes,
                };
                let sm_bytes_per_s = per_sm * f64::from(sheet.sms);
                (
                    c.bandwidth.min(sm_bytes_per_s / sheet.memory_bytes_per_s),
                    c.layer_cycles / hz,
                )
            }
            None => (eff.bandwidth, eff.layer_s),
        };
        Shares {
            bandwidth,
            attention: if flash_attn { bandwidth } else { eff.attention },
            experts: eff.experts,
            compute: path.share,
            fixed: Fixed {
                layer_s,
                layers,
                cpu_layer_s: eff.cpu_layer_s,
                cpu_layers,
            },
        }
    }
}

impl Step {
    /// Seconds at the given shares of the peaks, plus the step's fixed time, and what the step
    /// waits on most. The GPU's reads and its FLOPs overlap, so it takes the slower of the two;
    /// the serial bytes, and the layers in system RAM (read there, or copied over the link to
    /// compute), come before or after them, not beside them.
    fn seconds(&self, sheet: &Datasheet, (peak, host): (f64, f64), sh: Shares) -> (f64, Bound) {
        let bandwidth = sheet.memory_bytes_per_s;
        let memory = self.gpu_bytes / (bandwidth * sh.bandwidth)
            + self.expert_bytes / (bandwidth * sh.experts)
            + self.cache_bytes / (bandwidth * sh.attention);
        // A card whose maker states no throughput (peak 0) is taken as never compute-bound.
        let math = if peak > 0.0 {
            self.flops / (peak * sh.compute)
        } else {
            0.0
        };
        // A unified device (link 0) keeps its CPU layers in the memory the GPU reads: nothing
        // crosses a link.
        let link = if self.link_bytes > 0.0 && sheet.link_bytes_per_s > 0.0 {
            self.link_bytes / sheet.link_bytes_per_s
        } else {
            0.0
        };
        let serial = self.serial_bytes / (bandwidth * sh.bandwidth);
        let offloaded = self.host_bytes / host + link;
        let bound = if math > memory && math > offloaded {
            Bound::Compute
        } else {
            Bound::Memory
        };
        (
            memory.max(math) + serial + offloaded + sh.fixed.seconds(),
            bound,
        )
    }
}

impl Step {
    /// The step of a pipeline whose every stage does this one's work in turn: their reads and
    /// FLOPs added (the planned GPU's weights once a stage, less what that over-counts); what
    /// the host holds is read once.
    fn through(self, p: &Parallel) -> Step {
        let n = f64::from(p.stages.max(1));
        Step {
            gpu_bytes: self.gpu_bytes * n - p.overcount_bytes,
            expert_bytes: self.expert_bytes * n,
            cache_bytes: self.cache_bytes * n,
            serial_bytes: self.serial_bytes * n,
            flops: self.flops * n,
            ..self
        }
    }
}

/// The model's weights as a step reads them.
struct Weights {
    /// On the GPU, without the routed experts.
    gpu_dense: f64,
    /// The routed experts on the GPU.
    gpu_experts: f64,
    /// In system RAM (llama.cpp's CPU layers and `--n-cpu-moe` experts), dense and experts.
    host_dense: f64,
    host_experts: f64,
}

impl Weights {
    fn new(r: &Resolved, components: &[Component], serving: Option<&Serving>) -> Weights {
        let sum = |list: &[Component]| {
            list.iter()
                .filter(|c| matches!(c.id, ComponentId::Weights | ComponentId::QuantConstants))
                .map(|c| c.bytes.as_f64())
                .sum::<f64>()
        };
        let routed = r.routed_params / r.shape_params.max(1.0);
        let gpu = sum(components);
        let host = serving.map_or(0.0, |s| s.host.layer_bytes.as_f64());
        Weights {
            gpu_dense: gpu * (1.0 - routed),
            gpu_experts: gpu * routed,
            host_dense: host * (1.0 - routed),
            host_experts: host * routed,
        }
    }
}

/// The share of a layer's routed experts `tokens` tokens reach, each choosing `k` of `e` at
/// random: `1 − (1 − k/e)^tokens` (1 for a dense model).
fn experts_touched(r: &Resolved, tokens: f64) -> f64 {
    let moe = &r.arch.moe;
    if !moe.is_moe() {
        return 1.0;
    }
    let chosen = f64::from(moe.per_token) / f64::from(moe.experts.max(1));
    1.0 - (1.0 - chosen.min(1.0)).powf(tokens)
}

/// FLOPs of attention for `tokens` new tokens against `context` cached ones, per GPU: scores
/// and their weighted sum, `2 × 2 × query width` per pair and attention layer.
fn attention_flops(r: &Resolved, d: &Deployment, tokens: f64, context: f64) -> f64 {
    let a = &r.arch;
    4.0 * tokens * context * a.q_width() * f64::from(a.attention_layers())
        / f64::from(d.tp.max(1) * d.pp.max(1))
}

/// Linear-layer FLOPs per token on one GPU: two per active parameter.
fn linear_flops(r: &Resolved, d: &Deployment) -> f64 {
    let active = r.arch.active_param_count().unwrap_or(r.shape_params);
    2.0 * active * r.params / r.shape_params.max(1.0) / f64::from(d.tp.max(1) * d.pp.max(1))
}

/// The cache one request reads per step at `context` tokens, on one GPU.
fn cache_bytes(layout: &KvLayout, context: f64) -> f64 {
    let full = f64::from(layout.full_layers) * context;
    let sliding = f64::from(layout.sliding_layers) * context.min(f64::from(layout.window));
    (full + sliding) * layout.token_bytes
        + f64::from(layout.recurrent_layers) * layout.request_bytes
}

/// A decode step of `b` requests at `context` cached tokens each.
fn decode_step(
    r: &Resolved,
    d: &Deployment,
    w: &Weights,
    layout: &KvLayout,
    b: f64,
    context: f64,
) -> Step {
    let touched = experts_touched(r, b);
    Step {
        gpu_bytes: w.gpu_dense,
        expert_bytes: w.gpu_experts * touched,
        cache_bytes: b * cache_bytes(layout, context),
        serial_bytes: 0.0,
        host_bytes: w.host_dense + w.host_experts * touched,
        link_bytes: 0.0,
        flops: b * (linear_flops(r, d) + attention_flops(r, d, 1.0, context)),
    }
}

/// Bytes one attention score costs without flash attention, on CUDA: `ggml_mul_mat(k, q)`
/// writes it in f32 (4), `ggml_soft_max_ext` reads it and writes its f32 probability (8), and
/// `ggml_mul_mat(v, kq)` through cuBLAS converts that to f16 (reads 4, writes 2) for the GEMM
/// that reads it (2): llama.cpp's attention without flash attention (`build_attn_mha`,
/// src/llama-graph.cpp; `llm_build_kqv` in src/llama.cpp of May 2024), and
/// `ggml_cuda_mul_mat_cublas_impl`, ggml/src/ggml-cuda/ggml-cuda.cu, ggml-org/llama.cpp@00108827,
/// which converts a non-f16 operand first. Metal multiplies the f32 probabilities directly (16
/// bytes); the difference is a few percent of this term, itself a few percent of Metal's prefill.
const SCORE_BYTES: f64 = 20.0;

/// The attention scores a prompt materialises without flash attention, on one GPU: llama.cpp
/// computes each ubatch's queries against every cache cell up to the ubatch's end (the mask
/// hides the rest), so a full-attention layer holds `prompt × (prompt + ubatch) / 2` scores per
/// query head over the prompt, and a sliding-window layer at most `window + ubatch` cells per
/// query.
fn score_bytes(r: &Resolved, d: &Deployment, layout: &KvLayout, prompt: f64, ubatch: f64) -> f64 {
    let u = ubatch.max(1.0).min(prompt);
    let full = prompt * (prompt + u) / 2.0;
    let sliding = prompt * ((prompt + u) / 2.0).min(f64::from(layout.window) + u);
    let heads = f64::from(r.arch.heads) / f64::from(d.tp.max(1));
    SCORE_BYTES
        * heads
        * (f64::from(layout.full_layers) * full + f64::from(layout.sliding_layers) * sliding)
}

/// Bytes a parameter's f16 copy takes. A path that dequantizes writes it once per ubatch
/// (`to_fp16_cuda` into a pool buffer, then cuBLAS, in `ggml_cuda_op_mul_mat_cublas`); the GEMM
/// that reads it back reads its operand as it multiplies, so that read overlaps its FLOPs and is
/// not counted again.
const F16_BYTES: f64 = 2.0;

/// Prefill of one request's `prompt` tokens: every weight read once, offloaded ones copied to
/// the GPU; weights dequantized to 16 bits once per ubatch where the path does (the quantized
/// weights read and their f16 copy written, [`F16_BYTES`] a parameter), and the scores without
/// flash attention.
fn prefill_step(
    (r, d, layout): (&Resolved, &Deployment, &KvLayout),
    w: &Weights,
    (prompt, ubatch): (f64, f64),
    (path, flash_attn): (&TensorPath, bool),
) -> Step {
    let weights = w.gpu_dense + w.gpu_experts * experts_touched(r, prompt);
    let dequantized = if path.dequantizes {
        (prompt / ubatch.max(1.0)).ceil() * (weights + F16_BYTES * linear_flops(r, d) / 2.0)
    } else {
        0.0
    };
    let scores = if flash_attn {
        0.0
    } else {
        score_bytes(r, d, layout, prompt, ubatch)
    };
    Step {
        gpu_bytes: weights,
        expert_bytes: 0.0,
        cache_bytes: 0.0,
        serial_bytes: dequantized + scores,
        host_bytes: 0.0,
        link_bytes: w.host_dense + w.host_experts,
        flops: prompt * linear_flops(r, d) + attention_flops(r, d, prompt, prompt) / 2.0,
    }
}

/// The prompt, the tokens each request generates (`None` when no prompt is given: then `seq` is
/// both the prompt timed for the first token and the context decoding reads), and the mean
/// context a decode step reads, as the cache grows from the prompt to `seq`.
fn lengths(s: &Scenario) -> (f64, Option<f64>, f64) {
    let seq = f64::from(s.seq.max(1));
    match s.prompt {
        Some(prompt) => {
            let prompt = f64::from(prompt.max(1)).min(seq);
            let output = (seq - prompt).max(1.0);
            (prompt, Some(output), prompt + output / 2.0)
        }
        None => (seq, None, seq),
    }
}

/// The card's datasheet, or the note saying why there is no speed (none to say for training,
/// which `train_speed` times, or without a catalogue GPU).
fn datasheet(s: &Scenario, r: &Resolved) -> Result<&'static Datasheet, Option<String>> {
    let gpu = match (s.mode.is_training(), r.gpu, r.custom_vram) {
        (false, Some(gpu), _) => gpu,
        _ => return Err(None),
    };
    gpu.datasheet.as_ref().ok_or_else(|| {
        Some(format!(
            "No speed estimate: the catalogue has no datasheet figures (bandwidth, throughput) for the {} yet.",
            gpu.name
        ))
    })
}

/// The deployment a step is timed on: the runtime's own ranks and stages (llama.cpp splits by
/// layer whatever `sharding` says).
fn deployment(s: &Scenario, r: &Resolved, par: &Parallel) -> Deployment {
    Deployment {
        tp: par.tp,
        pp: par.stages,
        ..Deployment::new(s, r)
    }
}

/// What the speed model times a scenario's steps with: the card's sheet, the runtime's constants
/// and its split over GPUs, the weights a step reads, and the lengths and batch it runs.
struct Setup {
    sheet: &'static Datasheet,
    eff: Efficiency,
    par: Parallel,
    d: Deployment,
    layout: KvLayout,
    w: Weights,
    /// The path prefill's matmuls take, and the host's bandwidth (bytes/s).
    path: TensorPath,
    host: f64,
    /// The prompt, the tokens each request generates and the mean context decoding reads.
    lengths: (f64, Option<f64>, f64),
    /// Requests in all, and in each batch in flight.
    b: f64,
    micro: f64,
    /// Layers on the GPU and on the CPU.
    layers: (f64, f64),
}

impl Setup {
    fn new(
        s: &Scenario,
        r: &Resolved,
        components: &[Component],
        serving: Option<&Serving>,
    ) -> Result<Setup, Option<String>> {
        let sheet = datasheet(s, r)?;
        let par = s.runtime.speed().parallel(s, r);
        let d = deployment(s, r, &par);
        let b = f64::from(s.concurrency.unwrap_or(s.batch).max(1));
        // The requests split into the batches in flight; each passes every stage.
        let micro = (b / f64::from(par.in_flight.max(1))).ceil();
        // The layers llama.cpp keeps on the CPU add the CPU's time per layer, not the GPU's.
        let cpu_layers = f64::from(serving.map_or(0, |s| s.host.layers).min(r.arch.layers));
        Ok(Setup {
            sheet,
            eff: s.runtime.speed().efficiency(s, r),
            layout: KvLayout::new(r, &d),
            w: Weights::new(r, components, serving),
            path: s.runtime.speed().tensor_path(s, r, sheet),
            host: s
                .host_bandwidth
                .map_or(HOST_BANDWIDTH_DEFAULT_BYTES_PER_S, |gb| gb * 1e9),
            lengths: lengths(s),
            b,
            micro,
            layers: (f64::from(r.arch.layers) - cpu_layers, cpu_layers),
            par,
            d,
        })
    }

    /// A decode step of the batch in flight, through every stage.
    fn decode(&self, r: &Resolved) -> Step {
        let context = self.lengths.2;
        decode_step(r, &self.d, &self.w, &self.layout, self.micro, context).through(&self.par)
    }

    /// The seconds a decode step takes at `eff`'s shares and what it
    /// waits on most: its reads, FLOPs and fixed time, and the links' traffic.
    fn decode_seconds(
        &self,
        (decode, traffic): (&Step, f64),
        (eff, flash_attn): (&Efficiency, bool),
    ) -> (f64, Bound, Shares) {
        let shares = Shares::at((eff, &self.path, Some(self.sheet)), flash_attn, self.layers);
        let (step, bound) = decode.seconds(self.sheet, (self.path.peak, self.host), shares);
        (step + traffic, bound, shares)
    }
}

/// A decode step's parts as the speed model times them, for fitting a runtime's constants to
/// measured step times (the accuracy module's fits): what it reads at each share, the layers the
/// GPU runs, and its time at any trial constant.
pub struct DecodeParts {
    /// Bytes the GPU reads per step at the weights' share (dense weights and shared experts).
    pub dense_bytes: f64,
    /// Bytes of routed experts, at the experts' share.
    pub expert_bytes: f64,
    /// Bytes of KV cache, at the attention share (the weights' under flash attention).
    pub cache_bytes: f64,
    /// Layers the GPU runs, each adding the time per layer.
    pub layers: f64,
    /// The constant the scenario runs at, after its settings.
    pub efficiency: Efficiency,
    scenario: Scenario,
    setup: Setup,
    step: Step,
    traffic_s: f64,
}

impl DecodeParts {
    /// Whether the scenario runs at `constant` (as its settings adjust it).
    pub fn runs(&self, constant: &Efficiency) -> bool {
        self.scenario
            .runtime
            .speed()
            .at_settings(&self.scenario, *constant)
            == self.efficiency
    }

    /// Seconds a decode step takes had the runtime's constant been `constant` (as the
    /// scenario's settings adjust it).
    pub fn seconds(&self, constant: &Efficiency) -> f64 {
        let eff = self
            .scenario
            .runtime
            .speed()
            .at_settings(&self.scenario, *constant);
        let parts = (&self.step, self.traffic_s);
        self.setup
            .decode_seconds(parts, (&eff, self.scenario.flash_attn))
            .0
    }
}

/// The scenario's decode step in parts, or `None` where it has no speed.
pub(super) fn decode_parts(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
    serving: Option<&Serving>,
) -> Option<DecodeParts> {
    let setup = Setup::new(s, r, components, serving).ok()?;
    let step = setup.decode(r);
    let traffic_s = Traffic::new(&setup.par, r, setup.micro).seconds(setup.sheet.link_bytes_per_s);
    Some(DecodeParts {
        dense_bytes: step.gpu_bytes,
        expert_bytes: step.expert_bytes,
        cache_bytes: step.cache_bytes,
        layers: setup.layers.0,
        efficiency: setup.eff,
        scenario: s.clone(),
        setup,
        step,
        traffic_s,
    })
}

/// The scenario's speed, or the note saying why there is none (none to say for training, which
/// `train_speed` times, or without a catalogue GPU).
pub(super) fn speed(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
    serving: Option<&Serving>,
) -> Result<Speed, Option<String>> {
    let setup = Setup::new(s, r, components, serving)?;
    let (sheet, eff, path, par) = (setup.sheet, &setup.eff, &setup.path, &setup.par);
    let peaks = (path.peak, setup.host);
    let ((prompt, output, _), b, micro) = (setup.lengths, setup.b, setup.micro);
    // Without a published throughput there is no prefill to time, and output is decoding alone.
    let prefill_known = path.peak > 0.0;
    let prefill_work = prefill_step(
        (r, &setup.d, &setup.layout),
        &setup.w,
        (prompt, f64::from(s.ubatch_size)),
        (path, s.flash_attn),
    )
    .through(par);
    let decode = setup.decode(r);
    let (traffic, link) = (
        |tokens| Traffic::new(par, r, tokens),
        sheet.link_bytes_per_s,
    );
    // Prefill's compute shares were set from whole prompts, their fixed time included, and
    // beside the unclocked share of the bandwidth.
    let unclocked = Shares::at((eff, path, None), s.flash_attn, setup.layers);
    let (prefill, _) = prefill_work.seconds(
        sheet,
        peaks,
        Shares {
            fixed: Fixed::NONE,
            ..unclocked
        },
    );
    let prefill = prefill + traffic(prompt).seconds(link);
    let decode_parts = (&decode, traffic(micro).seconds(link));
    let (step, bound, shares) = setup.decode_seconds(decode_parts, (eff, s.flash_attn));
    // Every request's prefill, then its output one step at a time with the others; without
    // a prompt, decoding alone.
    let output_rate = match output.filter(|_| prefill_known) {
        Some(output) => b * output / (output * step + b * prefill),
        None => b / step,
    };
    Ok(Speed {
        prefill_tokens_per_s: prefill_known.then(|| prompt / prefill),
        decode_tokens_per_s: 1.0 / step,
        output_tokens_per_s: output_rate,
        ttft_s: prefill_known.then_some(prefill),
        bound,
        low: output_rate * SPEED_SPREAD.0,
        high: output_rate * SPEED_SPREAD.1,
        concurrency: b as u32,
        basis: basis(
            &decode,
            bound,
            (sheet, path.peak, setup.host),
            micro,
            &shares,
        ) + &traffic(micro).words(link),
        measure: s.runtime.speed().bench_command(
            prompt as u32,
            output.map_or(DECODE_BENCH_TOKENS, |o| o as u32),
            b as u32,
            s,
        ),
    })
}

/// The basis in words: what a decode step reads or computes, against which peak.
fn basis(
    step: &Step,
    bound: Bound,
    peaks: (&Datasheet, f64, f64),
    b: f64,
    shares: &Shares,
) -> String {
    let (sheet, peak, host) = peaks;
    let gb = |bytes: f64| format!("{:.2} GB", bytes / 1e9);
    // A backend fitted with no fixed time (ROCm on a Radeon) names none.
    let launches = if shares.fixed.seconds() > 0.0 {
        format!(", plus {}", shares.fixed.words())
    } else {
        String::new()
    };
    match bound {
        Bound::Memory => {
            let host_part = if step.host_bytes > 0.0 {
                format!(
                    " and {} from system RAM at {:.0} GB/s",
                    gb(step.host_bytes),
                    host / 1e9
                )
            } else {
                String::new()
            };
            // A mixture of experts' routed experts, read by their own kernels at their own share.
            let experts_part = if step.expert_bytes > 0.0 {
                format!(
                    " (the routed experts' {} of it at {:.0}%)",
                    gb(step.expert_bytes),
                    shares.experts * 100.0
                )
            } else {
                String::new()
            };
            format!(
                "memory-bound: a step of {} token{} reads {} at {} GB/s × {:.0}%{experts_part}\
                 {host_part}{launches}",
                b,
                if b == 1.0 { "" } else { "s" },
                gb(step.gpu_bytes + step.expert_bytes + step.cache_bytes),
                group_thousands((sheet.memory_bytes_per_s / 1e9).round() as u64),
                shares.bandwidth * 100.0,
            )
        }
        Bound::Compute => format!(
            "compute-bound: a step of {b} tokens does {:.1} TFLOP at {:.0} TFLOPS × {:.0}%\
             {launches}",
            step.flops / 1e12,
            peak / 1e12,
            shares.compute * 100.0,
        ),
    }
}
