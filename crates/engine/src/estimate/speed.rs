//! How fast: a roofline per step from the bytes the memory model already knows.
//!
//! A decode step reads every weight a batch of `b` tokens touches (for a mixture of experts, the
//! experts `b` tokens reach in expectation, not all of them) and each request's cache at its
//! current length, and does `2 × active parameters` FLOPs per token plus attention's; it takes
//! whichever of the reads (at the card's bandwidth) and the FLOPs (at its tensor throughput) is
//! slower. Prefill does the prompt's FLOPs, which attention makes grow with the prompt's square,
//! against compute. Layers llama.cpp keeps in system RAM are read at the host's bandwidth in
//! decode and copied over the link in prefill. Peaks are the card's datasheet's; what a runtime
//! reaches of them is its [`Efficiency`], named in its rules, and the band spans its low and high.

use super::component::ComponentId;
use super::serving::{Deployment, KvLayout, Serving};
use super::stack::Component;
use crate::gpu_catalogue::Datasheet;
use crate::scenario::{Resolved, Scenario};
use crate::units::group_thousands;
use serde::{Deserialize, Serialize};

/// What a runtime reaches of the card's peaks: low, typical and high shares, and the time a
/// decode step takes whatever it reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Efficiency {
    /// Of the memory bandwidth, in a decode step.
    pub bandwidth: Band,
    /// Of the tensor throughput, in prefill.
    pub compute: Band,
    /// Seconds a decode step adds to its reads and FLOPs: launching and synchronising its
    /// kernels, which no bandwidth shortens. It dominates a step that reads little (a small
    /// model, a mixture of experts' few active experts, a fast card). Its `low` is the slow
    /// end, the longest time, and `high` the shortest.
    pub step_s: Band,
}

/// A share with its spread.
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
    /// `output_tokens_per_s` at the runtime's low and high efficiency.
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
    host_bytes: f64,
    /// Bytes copied over the link (llama.cpp's offloaded layers in a large batch).
    link_bytes: f64,
    flops: f64,
}

impl Step {
    /// Seconds at the given shares of the peaks, plus the step's fixed `step_s`, and what the
    /// step waits on most. The GPU's reads and its FLOPs overlap, so it takes the slower of the
    /// two; the layers in system RAM (read there, or copied over the link to compute) come
    /// before or after the GPU's, not beside them.
    fn seconds(
        &self,
        sheet: &Datasheet,
        (peak, host): (f64, f64),
        (bw, compute): (f64, f64),
        step_s: f64,
    ) -> (f64, Bound) {
        let memory = self.gpu_bytes / (sheet.memory_bytes_per_s * bw);
        // A card whose maker states no throughput (peak 0) is taken as never compute-bound.
        let math = if peak > 0.0 {
            self.flops / (peak * compute)
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
        let offloaded = self.host_bytes / host + link;
        let bound = if math > memory && math > offloaded {
            Bound::Compute
        } else {
            Bound::Memory
        };
        (memory.max(math) + offloaded + step_s, bound)
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
        let host = serving.map_or(0.0, |s| s.host_layer_bytes.as_f64());
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
        gpu_bytes: w.gpu_dense + w.gpu_experts * touched + b * cache_bytes(layout, context),
        host_bytes: w.host_dense + w.host_experts * touched,
        link_bytes: 0.0,
        flops: b * (linear_flops(r, d) + attention_flops(r, d, 1.0, context)),
    }
}

/// Prefill of one request's `prompt` tokens: every weight read once, offloaded ones copied to
/// the GPU.
fn prefill_step(r: &Resolved, d: &Deployment, w: &Weights, prompt: f64) -> Step {
    Step {
        gpu_bytes: w.gpu_dense + w.gpu_experts * experts_touched(r, prompt),
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

/// The scenario's speed, or the note saying why there is none (none to say for training, which
/// has no speed model yet, or without a catalogue GPU).
pub(super) fn speed(
    s: &Scenario,
    r: &Resolved,
    components: &[Component],
    serving: Option<&Serving>,
) -> Result<Speed, Option<String>> {
    let gpu = match (s.mode.is_training(), r.gpu, r.custom_vram) {
        (false, Some(gpu), _) => gpu,
        _ => return Err(None),
    };
    let sheet = gpu.datasheet.as_ref().ok_or_else(|| {
        Some(format!(
            "No speed estimate: the catalogue has no datasheet figures (bandwidth, throughput) for the {} yet.",
            gpu.name
        ))
    })?;
    let eff = s.runtime.rules().efficiency(s, r);
    let d = Deployment::new(s, r);
    let layout = KvLayout::new(r, &d);
    let w = Weights::new(r, components, serving);
    let host = s
        .host_bandwidth
        .map_or(HOST_BANDWIDTH_DEFAULT_BYTES_PER_S, |gb| gb * 1e9);
    let (peak, compute) = s.runtime.rules().tensor_path(s, r, sheet);
    let (prompt, output, context) = lengths(s);
    let b = f64::from(s.concurrency.unwrap_or(s.batch).max(1));
    // Without a published throughput there is no prefill to time, and output is decoding alone.
    let prefill_known = peak > 0.0;
    let run = |band: fn(&Band) -> f64| {
        let (bw, compute, step_s) = (band(&eff.bandwidth), band(&compute), band(&eff.step_s));
        // Prefill's compute shares were set from whole prompts, their fixed time included.
        let (prefill, _) =
            prefill_step(r, &d, &w, prompt).seconds(sheet, (peak, host), (bw, compute), 0.0);
        let (step, bound) = decode_step(r, &d, &w, &layout, b, context).seconds(
            sheet,
            (peak, host),
            (bw, compute),
            step_s,
        );
        // Every request's prefill, then its output one step at a time with the others; without
        // a prompt, decoding alone.
        let output_rate = match output.filter(|_| prefill_known) {
            Some(output) => b * output / (output * step + b * prefill),
            None => b / step,
        };
        (prefill, step, bound, output_rate)
    };
    let (prefill, step, bound, output_rate) = run(|b| b.typical);
    let decode = decode_step(r, &d, &w, &layout, b, context);
    Ok(Speed {
        prefill_tokens_per_s: prefill_known.then(|| prompt / prefill),
        decode_tokens_per_s: 1.0 / step,
        output_tokens_per_s: output_rate,
        ttft_s: prefill_known.then_some(prefill),
        bound,
        low: run(|b| b.low).3,
        high: run(|b| b.high).3,
        concurrency: b as u32,
        basis: basis(
            &decode,
            bound,
            (sheet, peak, host),
            b,
            (&eff.bandwidth, &compute),
            eff.step_s.typical,
        ),
        measure: s.runtime.rules().bench_command(
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
    shares: (&Band, &Band),
    step_s: f64,
) -> String {
    let (sheet, peak, host) = peaks;
    let gb = |bytes: f64| format!("{:.2} GB", bytes / 1e9);
    // A backend fitted with no fixed time (ROCm on a Radeon) names none.
    let launches = if step_s > 0.0 {
        format!(", plus {:.1} ms of kernel launches", step_s * 1e3)
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
            format!(
                "memory-bound: a step of {} token{} reads {} at {} GB/s × {:.0}%{host_part}\
                 {launches}",
                b,
                if b == 1.0 { "" } else { "s" },
                gb(step.gpu_bytes),
                group_thousands((sheet.memory_bytes_per_s / 1e9).round() as u64),
                shares.0.typical * 100.0,
            )
        }
        Bound::Compute => format!(
            "compute-bound: a step of {b} tokens does {:.1} TFLOP at {:.0} TFLOPS × {:.0}%\
             {launches}",
            step.flops / 1e12,
            peak / 1e12,
            shares.1.typical * 100.0,
        ),
    }
}
