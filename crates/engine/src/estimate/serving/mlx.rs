//! MLX's mlx-lm (`mlx_lm.generate`, `mlx_lm.benchmark`) on an Apple GPU: the arrays it keeps
//! alive, which is what `mx.get_peak_memory()` counts and what mlx-lm prints as "Peak memory:
//! X GB" (`peak_memory=mx.get_peak_memory() / 1e9`, `print(f"Peak memory: {…:.3f} GB")`:
//! decimal GB). Read at mlx-lm v0.31.3 (ed1fca4c) and mlx v0.32.1 (3a621991).
//!
//! - Allocator (mlx/backend/metal/allocator.cpp): a buffer over a page (16 KiB) is rounded up to
//!   whole pages, and `active_memory_` counts each live buffer's length; `peak_memory_` is its
//!   high-water mark. Freed buffers go to a cache that the peak does not count. The cache and
//!   everything else is capped by `block_limit_ = min(1.5 × recommendedMaxWorkingSetSize,
//!   0.95 × memsize)`, but `malloc` does not refuse beyond Metal's working set: macOS pages
//!   instead, so the verdict holds the peak against the working set (`wired-limit` where
//!   `sysctl iogpu.wired_limit_mb` raises it). `mlx_lm`'s `wired_limit` wires up to the working
//!   set while generating and warns when the weights pass 0.9 of it. Page rounding (at most
//!   16 KiB a tensor) is not counted.
//! - Weights (mlx_lm/utils.py `quantize_model`, mlx `nn.quantize`): `mlx_lm.convert -q` quantizes
//!   every module with `to_quantized` (every Linear, the embedding, and an untied `lm_head`)
//!   whose input width divides by the group, affine by default with 4 bits and groups of 64;
//!   each group keeps a scale and a bias in the weight's float type (`mx.quantize`). So a
//!   quantized weight is `bits/8 + 2·f/group` bytes (`f` the float type's bytes: 0.5625 at 4
//!   bits, 64, bf16); norms stay in the float type. Some models' `quant_predicate` keep a few
//!   tensors at 8 bits (Qwen3-MoE's router): not modelled, under 0.1% of their weights.
//! - KV cache (mlx_lm/models/cache.py `KVCache`): each layer's keys and values grow in steps of
//!   256 tokens: a forward of `n` tokens that overflows appends `⌈n/256⌉·256` cells (after
//!   trimming a cache not on a step boundary to its tokens). `--max-kv-size M`
//!   (`RotatingKVCache`): a prompt chunk is concatenated after the last `M − 1` tokens, so a
//!   chunk of `c` holds up to `M − 1 + c` cells; one-token steps grow by 256 up to `M`.
//! - Prompt (mlx_lm/generate.py `generate_step`): all but the last prompt token go through the
//!   model in chunks of `prefill_step_size` (2048 since mlx-lm 0.22, a5322574; 512 before), each
//!   evaluating only the cache (`mx.eval([c.state …])`), so no chunk's logits are computed; the
//!   last token starts the decode, one token a step. Before 0.27 (`mlx-lm-version`) the
//!   remainder after whole chunks went through at once, with its logits. A chunk's working set is one layer's: the
//!   residual and its norm (`2cE`) and the MLP's gate, up and product (`3cF`; a mixture of
//!   experts' the larger of `3ckF` and the per-expert copies `2ckE`); attention runs
//!   fused (`sdpa_full`) for head dims 64, 72, 80, 96 and 128 (mlx/backend/metal/
//!   scaled_dot_product_attention.cpp `use_fallback`), otherwise the fallback materialises
//!   `H·c·kv` scores in the float type.
//! - Buffers in flight (mlx/backend/metal/eval.cpp, device.cpp; mlx/transforms.cpp): a command
//!   buffer keeps its ops' inputs alive until the GPU completes it, is committed once its distinct
//!   inputs pass `max_mb_per_buffer` (50 MiB on Max and Ultra chips, 40 otherwise), and `eval`
//!   waits once 10 are in flight. A prompt chunk keeps the GPU behind, so its freed intermediates
//!   stay held up to `10 × min(max_mb_per_buffer, one layer's working set)`; a decode step's are
//!   too small to count.
//!
//! - Quantized cache (`--kv-bits`, `--kv-group-size`, `--quantized-kv-start`: generate.py
//!   `maybe_quantize_kv_cache`, cache.py `QuantizedKVCache`): once a forward leaves the cache at
//!   `quantized-kv-start` tokens or more (5000 by `mlx_lm.generate`'s default, 0 in
//!   `generate_step`'s), each layer's cache is quantized whole, lazily, so each float layer is
//!   freed as its copy is made; it then grows in steps of 256 as before. Attention over it is
//!   `quantized_scaled_dot_product_attention`, unfused: a chunk's scores and a boolean mask.
//!   mlx-lm refuses it with `--max-kv-size`.
//!
//! Not modelled (a note says so): sliding-window and recurrent layers' own caches, MLA, MLX's
//! CUDA backend, and more than one device.

use super::{
    llamacpp, Build, Facts, Host, LoggedFigure, PoolWords, Reads, Requests, RuntimeRules,
    RuntimeSpeed, Serving, Settings,
};
use crate::estimate::formula::{Formula, Fx};
use crate::estimate::speed::Efficiency;
use crate::estimate::stack::Stack;
use crate::estimate::ComponentId;
use crate::model::Architecture;
use crate::runtime::{Release, Runtime};
use crate::scenario::{FieldError, Group, Resolved, Scenario};
use crate::units::{Bytes, MIB};

pub(super) struct Mlx;

/// `KVCache.step`: the cells a growing cache appends at a time.
const KV_STEP: u32 = 256;

/// The head dims whose prompt attention runs in `sdpa_full`, without materialised scores.
const FUSED_HEAD_DIMS: [u32; 5] = [64, 72, 80, 96, 128];

/// The bits `mx.quantize` packs in affine mode, and the group sizes it takes.
const BITS: [u32; 6] = [2, 3, 4, 5, 6, 8];
const GROUP_SIZES: [u32; 3] = [32, 64, 128];

/// MLX's facts: a server-like runtime on one device with a cache per request, no pool, whose
/// one logged figure is mlx-lm's peak.
const FACTS: Facts = Facts {
    requests: Requests::One,
    settings_group: Some(Group::Mlx),
    runs_on_metal: true,
    pool_words: PoolWords {
        pool: "KV cache",
        tokens: "KV cells",
    },
    logged_figures: &[LoggedFigure::new("peak", Reads::Total)],
    ..Facts::server("MLX", "MLX")
};

impl RuntimeRules for Mlx {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn check(&self, s: &Scenario, errors: &mut Vec<FieldError>) {
        if s.mlx_bits.is_some_and(|b| !BITS.contains(&b)) {
            errors.push(FieldError::new(
                "mlx-bits",
                "MLX's affine quantization packs 2, 3, 4, 5, 6 or 8 bits",
            ));
        }
        if !GROUP_SIZES.contains(&s.mlx_group_size) {
            errors.push(FieldError::new(
                "mlx-group-size",
                "MLX quantizes in groups of 32, 64 or 128",
            ));
        }
        if s.prefill_step_size < KV_STEP {
            errors.push(FieldError::new(
                "prefill-step-size",
                "prefill steps below 256 tokens are not modelled",
            ));
        }
        if s.kv_bits.is_some_and(|b| !BITS.contains(&b)) {
            errors.push(FieldError::new(
                "kv-bits",
                "mx.quantize packs 2, 3, 4, 5, 6 or 8 bits",
            ));
        }
        if !GROUP_SIZES.contains(&s.kv_group_size) {
            errors.push(FieldError::new(
                "kv-group-size",
                "MLX quantizes in groups of 32, 64 or 128",
            ));
        }
        if s.kv_bits.is_some() && s.max_kv_size.is_some() {
            errors.push(FieldError::new(
                "kv-bits",
                "mlx-lm does not quantize a rotating cache (\"RotatingKVCache Quantization NYI\"); unset kv-bits or max-kv-size",
            ));
        }
        if crate::gpu_catalogue::find(&s.gpu).is_some_and(|g| g.is_amd()) {
            errors.push(FieldError::new(
                "runtime",
                "MLX runs on Apple silicon (Metal) and NVIDIA GPUs (CUDA), not on AMD GPUs; plan an AMD GPU with llama.cpp, vLLM or SGLang",
            ));
        }
        if s.gpus > 1 {
            errors.push(FieldError::new(
                "gpus",
                "mlx-lm is planned on one device (mx.distributed over several Macs is not modelled)",
            ));
        }
    }

    fn release(&self, s: &Scenario) -> Option<Release> {
        Some(s.mlx_lm_version)
    }

    fn push(&self, b: Build<'_>) -> Option<Serving> {
        notes(b.s, b.r, b.notes);
        let serving = push(b.s, b.r, b.stack);
        b.notes.extend(near_the_working_set(b.r, b.stack));
        Some(serving)
    }
}

/// mlx-lm on an Apple GPU (MLX's Metal backend). Decode: its own published benchmark table,
/// mlx_lm/BENCHMARKS.md @a4c64703 (a 64 GB M4 Max, mlx-lm 0.28.2, `mlx_lm.benchmark -p 2048 -g
/// 128`; calibration/speed-measured.csv speed-1593 to speed-1613, the `fit` rows of
/// speed-scenarios.csv), fitted by the rule [`llamacpp::LLAMA_CPP_METAL`]'s were: least squares
/// of the step time's relative error. Qwen3-4B's seven precisions (bf16 to q4) vary the bytes at
/// 36 layers: 91% of the bandwidth (91.1%) and 64.3 µs a layer, where llama.cpp's Metal backend
/// takes 187.5 µs; every dense fit row within 1%. Qwen3-30B-A3B's four (q8 to q4, 48 layers)
/// then set the routed experts' share with those held: 59% (58.8%; speed-1613 reads 52.2%); its
/// rows put the fixed time per layer, as llama.cpp's MoE rows did (squared relative error 0.0077
/// per layer, 0.0148 per step). The rows ran at one context (2,048 to 2,176 tokens), so the
/// cache is read at the weights' share as under flash attention, and `attention` (the cache
/// without it) stays Metal's; Apple states no M4 Max throughput, so prefill keeps Metal's shares.
pub const MLX_METAL: Efficiency = Efficiency {
    bandwidth: 0.91,
    attention: llamacpp::LLAMA_CPP_METAL.attention,
    experts: 0.59,
    compute: llamacpp::LLAMA_CPP_METAL.compute,
    layer_s: 64.3e-6,
    // MLX keeps no layer on the CPU, so this is never charged.
    cpu_layer_s: llamacpp::LLAMA_CPP_METAL.cpu_layer_s,
    clocked: None,
};

impl RuntimeSpeed for Mlx {
    /// [`MLX_METAL`] on a Mac; on an NVIDIA GPU (MLX's CUDA backend, no rows of which are in
    /// calibration/) llama.cpp's CUDA shares stand in, and a note says so.
    fn efficiency(&self, _s: &Scenario, r: &Resolved) -> Efficiency {
        if r.gpu.is_some_and(|g| g.is_mac()) {
            MLX_METAL
        } else {
            llamacpp::LLAMA_CPP_CUDA
        }
    }
}

/// mlx-lm's own warning (generate.py `wired_limit`): weights above 0.9 of Metal's recommended
/// working set "can be slow".
fn near_the_working_set(r: &Resolved, stack: &Stack) -> Option<String> {
    let weights: f64 = stack
        .components
        .iter()
        .filter(|c| c.id.is_model_load())
        .map(|c| c.bytes.as_f64())
        .sum();
    let working_set = r.capacity.as_f64();
    (r.gpu.is_some_and(|g| g.is_mac()) && weights > 0.9 * working_set).then(|| {
        format!(
            "mlx-lm warns that generating with weights of {} MiB, close to the working set of {} MiB, can be slow (more than 0.9 of it; raise iogpu.wired_limit_mb, or wired-limit here).",
            (weights / MIB as f64) as u64,
            (working_set / MIB as f64) as u64
        )
    })
}

/// The release whose `generate_step` sends the prompt's last token alone (mlx-lm PR #406,
/// 24fefe3d, first in 0.27.0); before it the prompt's remainder after whole chunks went through
/// the model at once, its logits computed for every token (`logits[:, -1, :]` slices them after
/// the head).
const LAST_TOKEN_ALONE: [u32; 3] = [0, 27, 0];

/// The tokens a run puts through the model: the prompt, the forward that ends it and starts the
/// decode, and the whole sequence.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tokens {
    prompt: u32,
    /// The prompt's last forward, whose logits are computed: one token, or before
    /// [`LAST_TOKEN_ALONE`] the remainder after whole chunks (1 to `prefill-step-size`).
    tail: u32,
    total: u32,
}

impl Tokens {
    fn of(s: &Scenario) -> Tokens {
        let prompt = s.prompt.unwrap_or(s.seq).max(1);
        let step = s.prefill_step_size.max(1);
        let tail = if s.mlx_lm_version.at_least(LAST_TOKEN_ALONE) {
            1
        } else {
            prompt - (prompt - 1) / step * step
        };
        Tokens {
            prompt,
            tail,
            total: s.seq.max(prompt),
        }
    }

    /// The prompt tokens that go through the chunked prefill, without logits.
    fn prefilled(self) -> u32 {
        self.prompt - self.tail
    }
}

/// The cache's cells at the end of the prompt's chunks and at the end of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cells {
    prefill: u32,
    last: u32,
    /// The largest chunk the prefill runs.
    chunk: u32,
    /// The cells after a prompt's last forward of several tokens (releases before
    /// [`LAST_TOKEN_ALONE`]).
    tail: Option<u32>,
}

fn pad(n: u32, to: u32) -> u32 {
    n.div_ceil(to).saturating_mul(to)
}

impl Cells {
    fn new(t: Tokens, step: u32, max_kv_size: Option<u32>) -> Cells {
        let prefilled = t.prefilled();
        let chunk = step.min(prefilled);
        // `_update_concat` keeps the last `m − 1` tokens and appends the forward's.
        let (prefill, tail) = match max_kv_size {
            None => (
                grown_by_chunks(prefilled, step),
                grown_by_chunks(t.prompt, step),
            ),
            Some(m) => (
                prefilled.min((m - 1).saturating_add(chunk)),
                t.prompt.min((m - 1).saturating_add(t.tail)),
            ),
        };
        let tail = (t.tail > 1).then_some(tail);
        // One-token steps from here on grow the cache 256 cells at a time, to `m` at most.
        let from = tail.unwrap_or(prefill);
        let grown = from.saturating_add(pad(t.total.saturating_sub(from), KV_STEP));
        let last = match max_kv_size {
            None => grown,
            Some(m) if from >= m => m,
            Some(m) => m.min(grown),
        };
        Cells {
            prefill,
            last,
            chunk,
            tail,
        }
    }
}

/// `KVCache`'s cells after `tokens` go through in chunks of `step`: exact for a step that is a
/// multiple of 256, else each chunk replayed (`check` keeps such steps at 256 or more).
fn grown_by_chunks(tokens: u32, step: u32) -> u32 {
    if step.is_multiple_of(KV_STEP) {
        return pad(tokens, KV_STEP);
    }
    let (mut cells, mut offset) = (0u32, 0u32);
    while offset < tokens {
        let n = step.min(tokens - offset);
        if offset + n > cells {
            let kept = if offset.is_multiple_of(KV_STEP) {
                cells
            } else {
                offset
            };
            cells = kept.saturating_add(pad(n, KV_STEP));
        }
        offset += n;
    }
    cells
}

/// A moment the peak may fall at: the cache's cells and format then, and the prompt chunk in
/// flight, if any.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Moment {
    cells: u32,
    quantized: bool,
    chunk: Option<u32>,
    /// Rows of logits the forward computes beside its working set.
    logits: u32,
    when: &'static str,
}

impl Moment {
    fn new(cells: u32, quantized: bool, chunk: Option<u32>, when: &'static str) -> Moment {
        Moment {
            cells,
            quantized,
            chunk,
            logits: 0,
            when,
        }
    }

    /// The moments the peak may fall at: the prompt's last chunk and the run's end, and with
    /// `kv-bits` the step that quantizes the cache, after which the cache is quantized.
    fn candidates(s: &Scenario, t: Tokens, cells: Cells) -> Vec<Moment> {
        let chunk = (cells.chunk > 0).then_some(cells.chunk);
        let last_chunk = "at the prompt's last chunk";
        let end = "at the run's end";
        let mut moments = Vec::with_capacity(3);
        if let Some(at) = cells.tail {
            moments.push(Moment {
                logits: t.tail,
                ..Moment::new(
                    at,
                    false,
                    Some(t.tail),
                    "at the prompt's last forward, with logits",
                )
            });
        }
        match conversion(s, t, cells) {
            None => {
                moments.push(Moment::new(cells.prefill, false, chunk, last_chunk));
                moments.push(Moment::new(cells.last, false, None, end));
            }
            Some((at, true)) => {
                moments.push(Moment::new(
                    at,
                    false,
                    chunk,
                    "as the chunk that quantizes it runs",
                ));
                moments.push(Moment::new(cells.prefill, true, chunk, last_chunk));
                moments.push(Moment::new(cells.last, true, None, end));
            }
            Some((at, false)) => {
                moments.push(Moment::new(cells.prefill, false, chunk, last_chunk));
                moments.push(Moment::new(
                    at,
                    false,
                    None,
                    "as the step that quantizes it runs",
                ));
                moments.push(Moment::new(cells.last, true, None, end));
            }
        }
        moments
    }

    /// The moment whose cache and chunk hold the most.
    fn peak(s: &Scenario, r: &Resolved, float: f64, t: Tokens, cells: Cells) -> Moment {
        let (fx, a) = (Fx::new(false), &r.arch);
        let bytes = |m: &Moment| {
            let per_cell = if m.quantized {
                kv_per_cell_quantized(s, a, float, fx)
            } else {
                kv_per_cell(a, float, fx)
            };
            let work = m.chunk.map_or(0.0, |c| {
                let work = chunk_working_set(a, c, m.cells, m.quantized, float, fx);
                work.value() + held_for_the_gpu(r, work, fx).value()
            });
            per_cell.value() * f64::from(m.cells) + work + logits(a, m.logits, float, fx).value()
        };
        Moment::candidates(s, t, cells)
            .into_iter()
            .max_by(|x, y| bytes(x).total_cmp(&bytes(y)))
            .unwrap_or(Moment::new(cells.last, false, None, "at the run's end"))
    }
}

/// Where `maybe_quantize_kv_cache` (mlx_lm/generate.py) converts the cache, as `KVCache.
/// to_quantized` quantizes it whole: after the first forward whose offset reaches
/// `quantized-kv-start`, a prompt chunk or a decode step. Its float cells then, and whether a
/// prompt chunk did it; `None` without `kv-bits`, or when the run ends first.
fn conversion(s: &Scenario, t: Tokens, cells: Cells) -> Option<(u32, bool)> {
    s.kv_bits?;
    let (start, step, prefilled) = (s.quantized_kv_start, s.prefill_step_size, t.prefilled());
    if prefilled > 0 && start <= prefilled {
        let offset = start
            .div_ceil(step)
            .max(1)
            .saturating_mul(step)
            .min(prefilled);
        Some((grown_by_chunks(offset, step), true))
    } else if start <= t.total {
        let grown = start.max(t.prompt).saturating_sub(cells.prefill);
        Some((cells.prefill.saturating_add(pad(grown, KV_STEP)), false))
    } else {
        None
    }
}

/// One token's quantized keys and values (`QuantizedKVCache`): per head, `head_dim ÷ (32 ÷
/// bits)` packed 32-bit words and a scale and bias per `kv-group-size` values in the float type.
fn kv_per_cell_quantized(s: &Scenario, a: &Architecture, float: f64, fx: Fx) -> Formula {
    let per_word = 32 / s.kv_bits.unwrap_or(8).max(1);
    let words = fx.sym("words", f64::from(a.head_dim / per_word));
    let groups = fx.sym("groups", f64::from(a.head_dim / s.kv_group_size.max(1)));
    fx.num(2.0)
        * fx.sym("attention layers", f64::from(a.attention_layers()))
        * fx.sym("kv-heads", f64::from(a.kv_heads))
        * (words * fx.num(4.0).unit("B") + groups * fx.num(2.0) * fx.num(float).unit("B"))
}

/// The logits of `rows` tokens in the float type (releases before [`LAST_TOKEN_ALONE`]).
fn logits(a: &Architecture, rows: u32, float: f64, fx: Fx) -> Formula {
    fx.sym("rows", f64::from(rows)) * fx.sym("vocab", f64::from(a.vocab)) * fx.num(float).unit("B")
}

/// `MAX_ACTIVE_TASKS` (mlx/transforms.cpp): the command buffers in flight before `eval` waits
/// for one to complete.
const TASKS_IN_FLIGHT: f64 = 10.0;

/// `max_mb_per_buffer` (mlx/backend/metal/device.cpp): a command buffer is committed once its
/// distinct inputs pass this many MiB: 50 on Max and Ultra chips, 40 on base and Pro ones, the
/// default for a device it does not name.
fn mib_per_buffer(r: &Resolved) -> f64 {
    match r.gpu {
        Some(g) if g.id.contains("-max-") || g.id.contains("-ultra-") => 50.0,
        _ => 40.0,
    }
}

/// The chunk's freed intermediates that command buffers still hold: a buffer keeps its ops'
/// inputs alive until the GPU completes it (metal/eval.cpp's completion handler), and a prompt
/// chunk keeps the GPU behind the encoder, so up to ten buffers are in flight, each holding about
/// `max_mb_per_buffer` of them, or one layer's working set when the chunk is smaller.
fn held_for_the_gpu(r: &Resolved, work: Formula, fx: Fx) -> Formula {
    let per_buffer = fx.sym("MiB per buffer", mib_per_buffer(r)) * fx.num(MIB as f64);
    fx.sym("buffers in flight", TASKS_IN_FLIGHT) * per_buffer.min(work)
}

/// The weights' bytes: the packed values, and the groups' scales and biases.
struct Weights {
    packed: Formula,
    constants: Formula,
}

/// Quantized elements (input width divisible by the group) and the rest.
fn split_by_group(a: &Architecture, group: u32) -> (f64, f64) {
    let g = f64::from(group);
    let (mut quantized, mut plain) = (0.0, 0.0);
    let mut add = |cols: f64, elements: f64| {
        // A whole number of groups: `fract`, as `%` on f64 is a software fmod in wasm.
        if (cols / g).fract() == 0.0 {
            quantized += elements;
        } else {
            plain += elements;
        }
    };
    a.each_linear(|l| add(l.shape.rows, l.shape.elements()));
    for m in a.embedding_matrices() {
        add(m.cols, m.elements());
    }
    (quantized, plain + a.norm_params())
}

fn weights(s: &Scenario, a: &Architecture, float: f64, fx: Fx) -> Weights {
    let f = || fx.num(float).unit("B");
    match s.mlx_bits {
        None => Weights {
            packed: fx.sym("params", a.text_param_count()) * f(),
            constants: fx.num(0.0),
        },
        Some(bits) => {
            let (quantized, plain) = split_by_group(a, s.mlx_group_size);
            let q = || fx.sym("quantized weights", quantized);
            Weights {
                packed: q() * fx.sym("bits", f64::from(bits)) / fx.num(8.0)
                    + fx.sym("other params", plain) * f(),
                constants: q() * fx.num(2.0) * f() / fx.sym("group", f64::from(s.mlx_group_size)),
            }
        }
    }
}

/// One token's keys and values over the attention layers, in the float type.
fn kv_per_cell(a: &Architecture, float: f64, fx: Fx) -> Formula {
    fx.num(2.0)
        * fx.sym("attention layers", f64::from(a.attention_layers()))
        * fx.sym("kv-heads", f64::from(a.kv_heads))
        * fx.sym("head-dim", f64::from(a.head_dim))
        * fx.num(float).unit("B")
}

/// One prompt chunk's working set in a layer over `kv` cells: the residual and its norm beside
/// the larger of the MLP's three intermediates and, where attention is not fused (a head dim
/// `sdpa_full` lacks, or a quantized cache), its scores and, for a quantized cache, the boolean
/// causal mask `quantized_scaled_dot_product_attention` builds (mlx_lm/models/base.py).
fn chunk_working_set(
    a: &Architecture,
    chunk: u32,
    kv: u32,
    quantized_cache: bool,
    float: f64,
    fx: Fx,
) -> Formula {
    let c = fx.sym("chunk", f64::from(chunk));
    let mlp = if a.moe.is_moe() {
        // `SwitchGLU` gathers each token's input once per chosen expert (`_gather_sort`) and
        // returns one output per expert, unsorted, before the router's weights sum them
        // (mlx_lm/models/switch_layers.py): `2kE` beside the experts' `3kF`.
        let k = f64::from(a.moe.per_token);
        let experts = fx.num(3.0) * fx.sym("k × expert-ffn", k * f64::from(a.moe.expert_ffn));
        let copies = fx.num(2.0) * fx.sym("k × hidden", k * f64::from(a.hidden));
        let dense = if a.moe.dense_layers > 0 {
            a.ffn.max(a.moe.shared_ffn)
        } else {
            a.moe.shared_ffn
        };
        experts
            .max(copies)
            .max(fx.num(3.0) * fx.sym("dense or shared ffn", f64::from(dense)))
    } else {
        fx.num(3.0) * fx.sym("ffn", f64::from(a.ffn))
    };
    let f = || fx.num(float).unit("B");
    let residual = fx.num(2.0) * fx.sym("hidden", f64::from(a.hidden));
    if FUSED_HEAD_DIMS.contains(&a.head_dim) && !quantized_cache {
        return c * (residual + mlp) * f();
    }
    let kv = || fx.sym("kv", f64::from(kv));
    let mut scores = fx.sym("heads", f64::from(a.heads)) * kv() * f();
    if quantized_cache {
        scores = scores + kv() * fx.num(1.0).unit("B (mask)");
    }
    c * (residual * f() + (mlp * f()).max(scores.remark("unfused attention scores")))
}

pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack) -> Serving {
    let fx = stack.fx();
    let a = &r.arch;
    let float = r.act_dtype.bytes();
    stack.components.retain(|c| !c.id.is_model_load());
    let w = weights(s, a, float, fx);
    stack.push(ComponentId::Weights, "Weights (MLX arrays)", w.packed);
    stack.push(
        ComponentId::QuantConstants,
        "Scales and biases",
        w.constants,
    );
    let tokens = Tokens::of(s);
    let cells = Cells::new(tokens, s.prefill_step_size, s.max_kv_size);
    let peak = Moment::peak(s, r, float, tokens, cells);
    let per_cell = if peak.quantized {
        kv_per_cell_quantized(s, a, float, fx)
    } else {
        kv_per_cell(a, float, fx)
    };
    let kv = (per_cell * fx.sym("cells", f64::from(peak.cells))).remark(peak.when);
    let (work, held) = match peak.chunk {
        Some(chunk) => {
            let work = chunk_working_set(a, chunk, peak.cells, peak.quantized, float, fx);
            let held = held_for_the_gpu(r, work.clone(), fx);
            (work, held)
        }
        None => (fx.num(0.0), fx.num(0.0)),
    };
    let kv_bytes = kv.value();
    stack.push(ComponentId::KvCache, "KV cache", kv);
    stack.push(
        ComponentId::Activations,
        "Prompt chunk's working set",
        work.remark("one layer of the chunk"),
    );
    stack.push(
        ComponentId::Activations,
        "Inputs held for the GPU",
        held.remark("command buffers in flight keep their inputs"),
    );
    stack.push(
        ComponentId::Logits,
        "Logits of the prompt's last forward",
        logits(a, peak.logits, float, fx),
    );
    Serving {
        runtime: Runtime::Mlx,
        kv_pool_bytes: Bytes::from_f64(kv_bytes),
        kv_tokens: u64::from(cells.last.max(cells.prefill)),
        kv_blocks: None,
        max_concurrency: 1.0,
        context_tokens: tokens.total,
        starts: true,
        reason: None,
        host: Host::NONE,
        command: None,
        settings: settings(s, stack.explain),
    }
}

fn settings(s: &Scenario, explain: bool) -> Vec<super::Setting> {
    let mut settings = Settings::new(explain);
    settings.given("mlx-lm-version", s.mlx_lm_version);
    match s.mlx_bits {
        Some(bits) => settings.given("mlx-bits", bits),
        None => settings.push("mlx-bits", "none", false, "unquantized"),
    }
    settings.push(
        "mlx-group-size",
        s.mlx_group_size,
        s.mlx_group_size != 64,
        "mlx_lm.convert's default",
    );
    settings.push(
        "prefill-step-size",
        s.prefill_step_size,
        s.prefill_step_size != 2048,
        "mlx-lm's default since 0.22",
    );
    match s.max_kv_size {
        Some(m) => settings.given("max-kv-size", m),
        None => settings.push("max-kv-size", "none", false, "a cache that grows"),
    }
    match s.kv_bits {
        Some(bits) => {
            settings.given("kv-bits", bits);
            settings.push(
                "kv-group-size",
                s.kv_group_size,
                s.kv_group_size != 64,
                "mlx-lm's default",
            );
            settings.push(
                "quantized-kv-start",
                s.quantized_kv_start,
                s.quantized_kv_start != 5000,
                "mlx_lm.generate's default",
            );
        }
        None => settings.push("kv-bits", "none", false, "the cache in the float type"),
    }
    settings.into_list()
}

/// What the rules above leave out, named.
fn notes(s: &Scenario, r: &Resolved, notes: &mut Vec<String>) {
    let a = &r.arch;
    let mut unmodelled = Vec::new();
    if a.window.layers > 0 {
        unmodelled.push("sliding-window layers' rotating caches (counted as full caches)");
    }
    if a.recurrent.layers > 0 {
        unmodelled.push("recurrent layers' state");
    }
    if a.mla.is_mla() {
        unmodelled.push("MLA's latent cache (counted as per-head keys and values)");
    }
    if a.vision.layers > 0 {
        unmodelled.push("the vision tower (mlx-lm loads the language model only)");
    }
    if !unmodelled.is_empty() {
        notes.push(format!(
            "MLX rules not modelled for this model: {}.",
            unmodelled.join("; ")
        ));
    }
    if s.batch > 1 {
        notes.push(format!("mlx_lm.generate runs one sequence: batch={} is not read (mlx-lm's batch_generate is not modelled).", s.batch));
    }
    if !r.weights.is_float() {
        notes.push(format!(
            "Under MLX the weights are sized from mlx-bits; weights={} is not read.",
            r.weights
        ));
    }
    // MLX's CUDA backend: the `mlx[cuda]` wheel, mlx/backend/cuda.
    match r.gpu.map(|g| g.is_mac()) {
        Some(true) => notes.push("MLX's decode speed uses its own share of the bandwidth and time per layer, fitted on mlx-lm's benchmark table (one M4 Max, Qwen3-4B and Qwen3-30B-A3B at a 2,048-token prompt); its prefill uses llama.cpp Metal's shares.".to_string()),
        Some(false) => {
            notes.push("MLX runs on NVIDIA GPUs through its CUDA backend, whose allocator is not modelled: these are the Metal allocator's rules.".to_string());
            notes.push("MLX's speed on an NVIDIA GPU uses llama.cpp's CUDA shares: no MLX CUDA runs were fitted.".to_string());
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Timing;

    fn tokens(prompt: u32, total: u32) -> Tokens {
        Tokens {
            prompt,
            tail: 1,
            total,
        }
    }

    /// `mlx_lm.benchmark -p 2048 -g 128`: 2047 tokens in one chunk take 8 steps of 256; the last
    /// prompt token and 128 new ones take one more step.
    #[test]
    fn the_cache_grows_in_steps_of_256() {
        let c = Cells::new(tokens(2048, 2176), 2048, None);
        assert_eq!((c.prefill, c.last, c.chunk), (2048, 2304, 2047));
        // 32188 prompt tokens in chunks of 2048 and 892 new: 33080 tokens, 130 steps.
        let c = Cells::new(tokens(32188, 33080), 2048, None);
        assert_eq!((c.prefill, c.last), (32256, 33280));
    }

    /// A step that is not a multiple of 256 trims the cache to its tokens before each growth.
    #[test]
    fn an_odd_step_trims_before_it_grows() {
        // 1000 + 1000 tokens: 1024 cells, then trimmed to 1000 and 1024 more.
        assert_eq!(grown_by_chunks(2000, 1000), 2024);
        assert_eq!(grown_by_chunks(1000, 1000), 1024);
        assert_eq!(grown_by_chunks(0, 1000), 0);
    }

    /// A rotating cache holds `M − 1 + chunk` after a long prompt's chunk, then `M`.
    #[test]
    fn a_rotating_cache_holds_its_size_and_one_chunk() {
        let c = Cells::new(tokens(10_000, 10_100), 2048, Some(4096));
        assert_eq!((c.prefill, c.last), (4095 + 2048, 4096));
        let c = Cells::new(tokens(100, 200), 2048, Some(4096));
        assert_eq!((c.prefill, c.last), (99, 99 + 256));
    }

    /// 4 bits in groups of 64 with bf16 scales and biases: 0.5625 bytes a weight.
    #[test]
    fn a_quantized_weight_takes_its_bits_and_its_groups_constants() {
        let a = crate::model::preset("qwen3-4b").unwrap().arch;
        let s = Scenario {
            mlx_bits: Some(4),
            ..Scenario::default()
        };
        let w = weights(&s, &a, 2.0, Fx::new(false));
        let (q, plain) = split_by_group(&a, 64);
        assert_eq!(plain, a.norm_params());
        assert_eq!(q + plain, a.text_param_count());
        assert_eq!(w.packed.value(), q * 0.5 + plain * 2.0);
        assert_eq!(w.constants.value(), q * 4.0 / 64.0);
    }

    fn estimate(query: &str) -> Result<crate::estimate::Estimate, Vec<FieldError>> {
        let (s, errors) = crate::query::scenario_from_query(query);
        assert!(errors.is_empty(), "{errors:?}");
        crate::estimate::estimate(&s)
    }

    fn bytes(e: &crate::estimate::Estimate, id: &str) -> u64 {
        e.components
            .iter()
            .filter(|c| c.id == id)
            .map(|c| c.bytes.0)
            .sum()
    }

    /// `mlx_lm.benchmark -p 2048 -g 128` of Qwen3-4B in 4 bits, by hand: 4,022,272,000 quantized
    /// weights (36 × 100,925,440 in the blocks, 388,956,160 in the tied embedding) at half a
    /// byte, a bf16 scale and bias per 64 of them, 186,880 norm weights in bf16; the prompt's
    /// last chunk (2047 tokens) over 2048 cells of 147,456 bytes beside one layer's 2047 ×
    /// (2 × 2560 + 3 × 9728) bf16 values, more than the run's end at 2304 cells.
    #[test]
    fn qwen3_4b_in_4_bits_by_hand() {
        let e = estimate("runtime=mlx&mode=inference&model=qwen3-4b&seq=2176&prompt=2048&mlx-bits=4&gpu=m4-max-64").unwrap();
        assert_eq!(bytes(&e, "weights"), 2_011_136_000 + 186_880 * 2);
        assert_eq!(bytes(&e, "quant_constants"), 251_392_000);
        assert_eq!(bytes(&e, "kv_cache"), 2048 * 147_456);
        // Ten command buffers of 50 MiB (an M4 Max) hold inputs the chunk has freed.
        assert_eq!(bytes(&e, "activations"), 2047 * 34_304 * 2 + 10 * 50 * MIB);
        let total: u64 = e.components.iter().map(|c| c.bytes.0).sum();
        assert_eq!(total, 2_705_332_224 + 524_288_000);
        let serving = e.serving.unwrap();
        assert_eq!((serving.kv_tokens, serving.context_tokens), (2304, 2176));
    }

    /// Qwen3-30B-A3B's chunk: 2047 × (2 × 2048 + max(3 × 8 × 768, 2 × 8 × 2048)) bf16 values,
    /// the eight per-expert copies of each token's hidden state outweighing its experts' MLPs.
    #[test]
    fn a_mixture_of_experts_chunk_holds_a_copy_per_chosen_expert() {
        let e = estimate(
            "runtime=mlx&mode=inference&model=qwen3-30b-a3b&seq=2176&prompt=2048&mlx-bits=4",
        )
        .unwrap();
        assert_eq!(
            bytes(&e, "activations"),
            2047 * (4096 + 32_768) * 2 + 10 * 40 * MIB
        );
    }

    /// With `quantized-kv-start=0` a 2048-token prompt's only chunk still runs over the float
    /// cache, which it quantizes after: the peak is the unquantized one.
    #[test]
    fn the_chunk_that_quantizes_the_cache_runs_over_floats() {
        let base = "runtime=mlx&mode=inference&model=qwen3-4b&seq=2176&prompt=2048&mlx-bits=4";
        let plain = estimate(base).unwrap();
        let quantized = estimate(&format!("{base}&kv-bits=4&quantized-kv-start=0")).unwrap();
        assert_eq!(bytes(&quantized, "kv_cache"), 2048 * 147_456);
        assert_eq!(quantized.total_bytes, plain.total_bytes);
    }

    /// A 20,000-token prompt with `--kv-bits 8` (start 5000): quantized after the third chunk,
    /// the cache is 20,224 cells of 2 × 36 × 8 heads × (32 words × 4 B + 2 groups × 2 × 2 B),
    /// and the last chunk's unfused attention holds 32 heads × 2048 × 20,224 bf16 scores and the
    /// boolean mask beside the residual.
    #[test]
    fn a_quantized_cache_is_smaller_but_its_attention_is_unfused() {
        let e = estimate(
            "runtime=mlx&mode=inference&model=qwen3-4b&seq=20100&prompt=20000&mlx-bits=4&kv-bits=8",
        )
        .unwrap();
        assert_eq!(bytes(&e, "kv_cache"), 20_224 * 78_336);
        let scores = 32 * 20_224 * 2 + 20_224;
        assert_eq!(
            bytes(&e, "activations"),
            2048 * (2 * 2560 * 2 + scores) + 10 * 40 * MIB
        );
        let refused =
            estimate("runtime=mlx&mode=inference&model=qwen3-4b&kv-bits=8&max-kv-size=4096");
        assert!(refused.unwrap_err().iter().any(|e| e.field == "kv-bits"));
    }

    /// A short prompt's chunk is smaller than a command buffer: the buffers in flight hold at
    /// most ten of its working sets.
    #[test]
    fn buffers_in_flight_hold_at_most_ten_working_sets() {
        let e = estimate(
            "runtime=mlx&mode=inference&model=qwen3-4b&seq=40&prompt=16&mlx-bits=4&gpu=m3-pro-18",
        )
        .unwrap();
        assert_eq!(bytes(&e, "activations"), 11 * 15 * 34_304 * 2);
    }

    /// Qwen3-30B-A3B in 8 bits (32 GB of weights) on a 36 GB Mac passes 0.9 of its working set.
    #[test]
    fn weights_near_the_working_set_repeat_mlx_lms_warning() {
        let warned = |gpu: &str| {
            estimate(&format!(
                "runtime=mlx&mode=inference&model=qwen3-30b-a3b&mlx-bits=8&gpu={gpu}"
            ))
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("mlx-lm warns"))
        };
        assert!(warned("m4-max-36"));
        assert!(!warned("m4-max-64"));
    }

    /// Before mlx-lm 0.27 a 2048-token prompt went through whole, its logits with it: 2048 ×
    /// 128,256 bf16 values for Llama 3.2 3B; a 32,188-token prompt in chunks of 512 ended on a
    /// forward of the 444 left.
    #[test]
    fn before_0_27_the_prompts_last_forward_held_its_logits() {
        let q = "runtime=mlx&mode=inference&model=llama-3.2-3b&seq=2176&prompt=2048&mlx-bits=4";
        let old = estimate(&format!("{q}&mlx-lm-version=0.26.4")).unwrap();
        assert_eq!(bytes(&old, "logits"), 2048 * 128_256 * 2);
        assert_eq!(bytes(&estimate(q).unwrap(), "logits"), 0);
        let mut s = Scenario {
            prompt: Some(32_188),
            seq: 33_080,
            prefill_step_size: 512,
            mlx_lm_version: Release::parse("0.21.4").unwrap(),
            ..Scenario::default()
        };
        assert_eq!(Tokens::of(&s).tail, 444);
        s.mlx_lm_version = Release::Latest;
        assert_eq!(Tokens::of(&s).tail, 1);
    }

    /// A long generation ends with the larger cache and no prompt chunk alive.
    #[test]
    fn a_long_generation_peaks_at_its_end() {
        let e =
            estimate("runtime=mlx&mode=inference&model=qwen3-4b&seq=8000&prompt=100&mlx-bits=4")
                .unwrap();
        assert_eq!(bytes(&e, "kv_cache"), 8192 * 147_456);
        assert_eq!(bytes(&e, "activations"), 0);
    }

    /// Apple GPUs run it; an NVIDIA card is planned with a note (MLX's CUDA backend); an AMD
    /// card, or two devices, are refused.
    #[test]
    fn mlx_runs_on_a_mac_and_is_noted_on_nvidia_and_refused_on_amd() {
        let base = "runtime=mlx&mode=inference&model=qwen3-4b&mlx-bits=4";
        let mac = estimate(&format!("{base}&gpu=m4-max-64")).unwrap();
        assert!(!mac.notes.iter().any(|n| n.contains("CUDA backend")));
        let nvidia = estimate(&format!("{base}&gpu=rtx-4090")).unwrap();
        assert!(nvidia.notes.iter().any(|n| n.contains("CUDA backend")));
        let amd = estimate(&format!("{base}&gpu=mi300x")).unwrap_err();
        assert!(amd.iter().any(|e| e.field == "runtime"), "{amd:?}");
        let two = estimate(&format!("{base}&gpu=m4-max-64&gpus=2&sharding=tensor")).unwrap_err();
        assert!(two.iter().any(|e| e.field == "gpus"), "{two:?}");
        let bits = estimate(&format!("{base}&mlx-bits=7")).unwrap_err();
        assert!(bits.iter().any(|e| e.field == "mlx-bits"), "{bits:?}");
    }

    /// The same run's decode step by hand: the weights above (2,262,901,760 bytes with their
    /// constants and norms) and the cache at its mean 2,112 tokens read at 91% of the M4 Max's
    /// 546 GB/s, and 36 layers × 64.3 µs ([`MLX_METAL`]); on an NVIDIA card llama.cpp's CUDA
    /// shares stand in, and a note says so.
    #[test]
    fn a_decode_step_on_a_mac_takes_mlx_metals_share_and_time_per_layer() {
        let q = "runtime=mlx&mode=inference&model=qwen3-4b&seq=2176&prompt=2048&mlx-bits=4";
        let mac = estimate(&format!("{q}&gpu=m4-max-64")).unwrap();
        let reads = (2_262_901_760.0 + 2112.0 * 147_456.0) / 546e9;
        let step = reads / 0.91 + 36.0 * 64.3e-6;
        let decode = mac
            .speed
            .as_ref()
            .and_then(Timing::inference)
            .unwrap()
            .decode_tokens_per_s;
        assert!(
            (decode * step - 1.0).abs() < 1e-9,
            "{decode} vs {}",
            1.0 / step
        );
        assert!(mac.notes.iter().any(|n| n.contains("fitted on mlx-lm's")));
        let nvidia = estimate(&format!("{q}&gpu=rtx-4090")).unwrap();
        assert!(nvidia.notes.iter().any(|n| n.contains("no MLX CUDA runs")));
        assert!(!nvidia
            .notes
            .iter()
            .any(|n| n.contains("fitted on mlx-lm's")));
    }

    /// Qwen3-4B's KV per token: 2 × 36 layers × 8 heads × 128 × 2 bytes = 147,456 bytes.
    #[test]
    fn a_cells_keys_and_values_cover_every_attention_layer() {
        let a = crate::model::preset("qwen3-4b").unwrap().arch;
        assert_eq!(kv_per_cell(&a, 2.0, Fx::new(false)).value(), 147_456.0);
    }
}
