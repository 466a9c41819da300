//! vLLM's V1 engine, as the release `vllm-version` names sizes memory: v0.19.0's rules (the
//! version of most calibration logs) with what changed since, each from the release that
//! introduced it (`vllm_rules`).
//!
//! - Budget: `requested = gpu_memory_utilization × total`, where total is CUDA's
//!   (`MemorySnapshot`, vllm/utils/mem_utils.py); the worker refuses to start when free memory is
//!   below it (`init_device`, vllm/v1/worker/gpu_worker.py).
//! - KV pool: `requested − weights − the profile run's torch peak − non-torch increase`
//!   (`determine_available_memory`), less the CUDA graphs' estimate since v0.20
//!   (`profile-cudagraphs`: `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`, whose log line says "The
//!   current --gpu-memory-utilization=U is equivalent to … without CUDA graph memory profiling");
//!   before, the graphs were captured afterwards, outside the budget. `vllm_graphs` sizes them.
//! - The profile run (`_dummy_run(max_num_batched_tokens)` then `_dummy_sampler_run` over
//!   `min(max_num_seqs, max_num_batched_tokens)` rows of logits) sets the activation peak, with
//!   a mixture of experts' fused-MoE workspace kept beneath it; with chunked prefill (always on in
//!   V1) it does not depend on `max_model_len`. Model Runner V2 (`model-runner-v2`, the default
//!   for dense models since 0.25 and every model since 0.29) runs the same rows, but its sampler
//!   keeps only the logits, and before 0.29 it estimates no graph memory (`vllm_rules`).
//! - Blocks: one page is `block_size` tokens of one layer; layers of several kinds are grouped
//!   (`group_size` = the fewest layers of a kind, or the most when under 1.5× the fewest) and
//!   share a page size; `num_blocks = pool // page // group_size`, concurrency = `num_blocks /
//!   Σ blocks one request needs`, and the logged tokens `num_blocks // groups × block_size`,
//!   since v0.20.1 `int(concurrency × max_model_len)` (vllm/v1/core/kv_cache_utils.py). A sliding-window layer needs
//!   `⌈min(window − 1 + max_num_batched_tokens, max_model_len) / block⌉ + 1` blocks
//!   (`SlidingWindowSpec`), a Mamba layer one block per request, two under prefix caching, plus
//!   one per speculative token (vllm/v1/kv_cache_interface.py). MTP drafters' attention layers
//!   join the cache.
//! - Defaults (`EngineArgs.get_batch_defaults`, vllm/engine/arg_utils.py, `vllm serve`): on GPUs
//!   of ≥ 70 GiB other than the A100, `max_num_batched_tokens` 8192 and `max_num_seqs` 1024;
//!   elsewhere 2048 and 256; since v0.28, 16384 and 1024 from 160 GiB; since v0.33, GB10 keeps
//!   the small tier. Before v0.8 (the V0 engine): 256 sequences and `max(max_model_len, 2048)`
//!   tokens, or chunked prefill of 2048 (512 before v0.6.5) above 32K. `block_size` 16; MLA
//!   backends (FlashMLA, CUTLASS MLA) use 64.

use super::vllm_rules::{Rule, Rules};
use super::{
    gib2, note_unknown_rope_tables, push_non_torch, push_rope_tables, vllm_encoder, vllm_graphs,
    vllm_kv_memory, Build, Deployment, Facts, Flag, Host, KvLayout, Launch, LoggedFigure, Parallel,
    Reads, RuntimeRules, RuntimeSpeed, Serving, Settings, When, Write,
};
use crate::dtype::Dtype;
use crate::estimate::formula::Formula;
use crate::estimate::overhead;
use crate::estimate::stack::Stack;
use crate::estimate::ComponentId;
use crate::estimate::LogFigure;
use crate::runtime::{AttentionBackend, ContextLength, Release, Runtime};
use crate::scenario::Group;
use crate::scenario::{FieldError, Resolved, Scenario};
use crate::sharding::Sharding;
use crate::units::{Bytes, GIB};

pub(super) struct Vllm;

/// vLLM's facts: its name, settings, benchmark, launch command and the figures its log prints.
const FACTS: Facts = Facts {
    settings_group: Some(Group::Vllm),
    serving_bench: Some("vllm bench serve --model MODEL"),
    launch: Some(&VLLM_LAUNCH),
    logged_figures: &[
        LoggedFigure::new("activation_peak", Reads::Gpu(LogFigure::ActivationPeak)),
        LoggedFigure::new("non_torch", Reads::Gpu(LogFigure::NonTorch)),
        LoggedFigure::new("cuda_graphs", Reads::Gpu(LogFigure::CudaGraphs)),
        LoggedFigure::new("max_concurrency", Reads::Concurrency),
    ],
    ..Facts::server("vLLM", "vLLM serving")
};

impl RuntimeRules for Vllm {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// `get_kv_cache_configs` (vllm/v1/core/kv_cache_utils.py): "Change the num_blocks of each
    /// rank to the smallest among all ranks".
    fn unlike_gpus(&self, _smallest: Bytes, _largest: Bytes) -> Option<String> {
        Some("each worker's KV blocks are cut to the fewest any worker holds (get_kv_cache_configs), so the larger GPUs' extra memory stays unused; tensor parallelism never splits unequally.".into())
    }

    /// vLLM's "auto" keeps the state in the convolution state's format, the model's dtype
    /// (`MambaStateDtypeCalculator._mamba_state_dtype`, vllm/model_executor/layers/mamba/mamba_utils.py).
    fn default_state_dtype(&self, act_dtype: Dtype) -> Dtype {
        act_dtype
    }

    fn release(&self, s: &Scenario) -> Option<Release> {
        Some(s.vllm_version)
    }

    fn check(&self, s: &Scenario, errors: &mut Vec<FieldError>) {
        vllm_kv_memory::check(s, errors);
        check_auto_length(s, errors);
    }

    /// On CUDA below compute capability 8.9 the fp8 linear and MoE layers run through Marlin:
    /// `MarlinFP8ScaledMMLinearKernel` is the first block-fp8 kernel supported there
    /// (`_POSSIBLE_FP8_BLOCK_KERNELS`, vllm/model_executor/kernels/linear/__init__.py of v0.24.0;
    /// DeepGEMM and CUTLASS's block kernel need Hopper), and the fp8 MoE oracle falls through to
    /// `Fp8MoeBackend.MARLIN` where `supports_fp8()` (capability 8.9) fails; v0.10.0 sets
    /// `use_marlin` below 8.9 directly (vllm/model_executor/layers/quantization/fp8.py).
    /// ROCm never takes it.
    fn fp8_marlin(&self, r: &Resolved) -> bool {
        r.weights == Dtype::Fp8
            && r.gpu
                .is_some_and(|g| g.is_nvidia() && g.has_fp8_tensor_path() == Some(false))
    }

    fn push(&self, b: Build<'_>) -> Option<Serving> {
        let rules = Rules::new(b.s.vllm_version);
        let serving = push(b.s, b.r, &b.d, rules, (b.stack, &mut *b.notes));
        note_unknown_rope_tables(b.s, b.r, b.notes);
        b.notes.extend(rules.note());
        b.notes.extend(rules.pinned_blocks_note());
        b.notes.extend(vllm_encoder::note(b.r, rules));
        b.notes.extend(unknown_fp8_path(b.r));
        b.notes.extend(vllm_kv_memory::note(b.s));
        Some(serving)
    }
}

/// Its speed is the default's: llama.cpp's CUDA shares, until runs of its own set them.
impl RuntimeSpeed for Vllm {}

/// `vllm serve MODEL` and its flags, as `EngineArgs.add_cli_args` names them
/// (vllm/engine/arg_utils.py): `--max-model-len` (written always: unset, vLLM takes the model's
/// whole `max_position_embeddings`, not the scenario's `seq`), `--gpu-memory-utilization`
/// (written when set: unset, each release applies its own default, as the estimate does),
/// `--kv-cache-memory-bytes` (`human_readable_int`: written as a whole number of bytes),
/// `--kv-cache-dtype` (`CacheDType` in vllm/config/cache.py: `fp8`, `bfloat16`, `float16`),
/// `--mamba-ssm-cache-dtype` (`MambaDType`), `--compilation-config.cudagraph_mode` (a dotted
/// key of the JSON argument, `CUDAGraphMode`'s names), `--max-cudagraph-capture-size` (the
/// `CompilationConfig` group), `--attention-backend` (`AttentionBackendEnum`'s names), and
/// `--tensor-parallel-size`, `--pipeline-parallel-size` and `--enable-expert-parallel`
/// (`ParallelConfig`).
static VLLM_LAUNCH: Launch = Launch {
    program: &["vllm", "serve"],
    model_flag: None,
    gguf: false,
    parallel: Some(Parallel {
        tensor: "--tensor-parallel-size",
        pipeline: "--pipeline-parallel-size",
        expert: Write::Switch,
        expert_flag: "--enable-expert-parallel",
    }),
    flags: &[
        Flag::new(
            "max-model-len",
            "--max-model-len",
            Write::Text,
            When::Always,
        ),
        Flag::new(
            "gpu-memory-utilization",
            "--gpu-memory-utilization",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "kv-cache-memory",
            "--kv-cache-memory-bytes",
            Write::Bytes,
            When::Changed,
        ),
        Flag::new("max-num-seqs", "--max-num-seqs", Write::Text, When::Changed),
        Flag::new(
            "max-num-batched-tokens",
            "--max-num-batched-tokens",
            Write::Text,
            When::Changed,
        ),
        Flag::new("block-size", "--block-size", Write::Text, When::Changed),
        Flag::new(
            "kv-dtype",
            "--kv-cache-dtype",
            Write::Words(&[("fp8", "fp8"), ("bf16", "bfloat16"), ("fp16", "float16")]),
            When::Changed,
        ),
        Flag::new(
            "ssm-dtype",
            "--mamba-ssm-cache-dtype",
            Write::Words(&[
                ("fp32", "float32"),
                ("fp16", "float16"),
                ("bf16", "bfloat16"),
            ]),
            When::Changed,
        ),
        Flag::new(
            "enforce-eager",
            "--enforce-eager",
            Write::Switch,
            When::Changed,
        ),
        Flag::new(
            "cudagraph-mode",
            "--compilation-config.cudagraph_mode",
            Write::Words(&[
                ("full-and-piecewise", "FULL_AND_PIECEWISE"),
                ("piecewise", "PIECEWISE"),
                ("full-decode-only", "FULL_DECODE_ONLY"),
            ]),
            When::Changed,
        ),
        Flag::new(
            "max-cudagraph-capture-size",
            "--max-cudagraph-capture-size",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "attention-backend",
            "--attention-backend",
            Write::Words(&[("flash-attn", "FLASH_ATTN"), ("triton", "TRITON_ATTN")]),
            When::Changed,
        ),
    ],
};

/// Bytes the dummy sampler keeps per logit at its peak: the logits, an fp32 copy, the
/// probabilities, the random-sampling tensor and top-k/top-p masks. Fitted to the dense H100 runs
/// of llm-d-planner's vLLM 0.19.0 sweep (vocabularies of 32k–262k), which grow 14–15 B per added
/// logit; 8 of its 9 models land within 4%.
pub const SAMPLER_BYTES_PER_LOGIT: f64 = 15.0;

/// The dummy sampler's bytes per logit at its peak, and what they hold. V1's sampler runs
/// every path ([`SAMPLER_BYTES_PER_LOGIT`]). Model Runner V2's dummy requests keep their
/// initial sampling state (temperature 0, top-k the vocabulary, top-p 1), so
/// `_requires_logits_processing` is false and the sampler keeps only the logits in the model's
/// dtype (`LogitsProcessor` computes them in the head's dtype; the Gumbel kernel's scratch is
/// 12 B per 1024 logits; vllm/v1/worker/gpu/sample/sampler.py of v0.25.0–v0.32.0). From
/// v0.33.0 its second, warmup-parameter pass runs the fp32 pipeline, counted at V1's bytes.
fn sampler_bytes_per_logit(rules: Rules, v2: bool, act_dtype: Dtype) -> (f64, &'static str) {
    if !v2 {
        (SAMPLER_BYTES_PER_LOGIT, "V1 sampler's bytes per logit")
    } else if rules.applies(Rule::V2SamplerWarmup) {
        (
            SAMPLER_BYTES_PER_LOGIT,
            "V2 sampler's warmup pass, at V1's bytes per logit",
        )
    } else {
        (act_dtype.bytes(), "V2 sampler: the logits alone")
    }
}

/// vLLM's `block_size` when unset, and the MLA backends' (FlashMLA's and CUTLASS MLA's multiple
/// of 64; vllm/platforms/cuda.py `check_and_update_config`).
pub const DEFAULT_BLOCK_TOKENS: u32 = 16;
pub const MLA_BLOCK_TOKENS: u32 = 64;

/// Above this total, a GPU other than the A100 gets the large scheduler defaults.
const LARGE_GPU: Bytes = Bytes(70 * GIB);

/// V0's `max_num_seqs` (`EngineArgs`, vllm/engine/arg_utils.py of v0.6.4 and v0.7.2), and the
/// context above which it turns chunked prefill on (`use_long_context = max_model_len > 32768`;
/// not for sliding-window, speculative, multimodal or LoRA runs, which the scheduler defaults
/// here do not tell apart).
const V0_MAX_NUM_SEQS: u32 = 256;
const V0_LONG_CONTEXT: u32 = 32768;
/// V0's least `max_num_batched_tokens` without chunked prefill: `max(max_model_len, 2048)`
/// (`SchedulerConfig`, vllm/config.py of v0.6.4 and v0.7.2).
const V0_MIN_BATCHED_TOKENS: u32 = 2048;

/// From this total, the largest defaults since v0.28 (`Rule::LargestTier`).
const LARGEST_GPU: Bytes = Bytes(160 * GIB);

struct Scheduler {
    batched_tokens: u32,
    seqs: u32,
    block: u32,
    /// Blocks one request keeps in each recurrent group.
    recurrent_blocks: u64,
}

/// Why the fp8 scales are counted as blocks on a card whose fp8 path the catalogue cannot tell.
fn unknown_fp8_path(r: &Resolved) -> Option<String> {
    let unknown = match r.gpu {
        Some(g) => g.is_nvidia() && g.has_fp8_tensor_path().is_none(),
        None => true,
    };
    (r.weights == Dtype::Fp8 && unknown).then(|| {
        "fp8 weights: the scales are counted as one fp32 per 128×128 block; below compute \
         capability 8.9 vLLM runs them through Marlin with one 16-bit scale per 128 inputs of \
         each column, which the catalogue cannot tell for this card."
            .to_string()
    })
}

/// The V0 engine's `max_num_batched_tokens` and `max_num_seqs` for this context, and why: the
/// whole context in one batch up to 32K, chunks of 2048 (512 before v0.6.5) above.
fn v0_batch_defaults(rules: Rules, max_model_len: u32) -> (u32, u32, &'static str) {
    if max_model_len <= V0_LONG_CONTEXT {
        (
            max_model_len.max(V0_MIN_BATCHED_TOKENS),
            V0_MAX_NUM_SEQS,
            "vLLM V0's default (before 0.8): max(max-model-len, 2048), chunked prefill off up to 32K",
        )
    } else if rules.applies(Rule::V0ChunkedPrefill2048) {
        (
            2048,
            V0_MAX_NUM_SEQS,
            "vLLM V0's default (0.6.5 to 0.7): chunked prefill above 32K, 2048 tokens",
        )
    } else {
        (
            512,
            V0_MAX_NUM_SEQS,
            "vLLM V0's default before 0.6.5: chunked prefill above 32K, 512 tokens",
        )
    }
}

/// `vllm serve`'s `max_num_batched_tokens` and `max_num_seqs` on this GPU and context, and why.
fn batch_defaults(
    s: &Scenario,
    r: &Resolved,
    rules: Rules,
    max_model_len: u32,
) -> (u32, u32, &'static str) {
    if !rules.applies(Rule::V1Engine) {
        return v0_batch_defaults(rules, max_model_len);
    }
    let named = |id: &str| r.gpu.is_some_and(|g| g.id.contains(id)) && s.vram.is_none();
    let gb10 = named("dgx-spark") && rules.applies(Rule::Gb10SmallTier);
    if r.capacity >= LARGEST_GPU && rules.applies(Rule::LargestTier) {
        (
            16384,
            1024,
            "vLLM serve's default on GPUs of ≥ 160 GiB since 0.28",
        )
    } else if r.capacity >= LARGE_GPU && !named("a100") && !gb10 {
        (
            8192,
            1024,
            "vLLM serve's default on GPUs of ≥ 70 GiB other than the A100",
        )
    } else {
        (
            2048,
            256,
            "vLLM serve's default below 70 GiB, on the A100 and (since 0.33) on GB10",
        )
    }
}

fn scheduler(
    s: &Scenario,
    r: &Resolved,
    rules: Rules,
    max_model_len: u32,
    layout: &KvLayout,
    settings: &mut Settings,
) -> Scheduler {
    let (tokens, seqs, class) = batch_defaults(s, r, rules, max_model_len);
    let batched_tokens = s.max_num_batched_tokens.unwrap_or(tokens);
    settings.push(
        "max-num-batched-tokens",
        batched_tokens,
        s.max_num_batched_tokens.is_some(),
        class,
    );
    // `max_num_seqs = min(default, max_num_batched_tokens)`.
    let seqs = s.max_num_seqs.unwrap_or(seqs.min(batched_tokens));
    settings.push("max-num-seqs", seqs, s.max_num_seqs.is_some(), class);
    let (block, from) = match s.block_size {
        Some(b) => (b, ""),
        None if r.arch.mla.is_mla() => (MLA_BLOCK_TOKENS, "the MLA backend's"),
        None => (DEFAULT_BLOCK_TOKENS, "vLLM's default"),
    };
    let hybrid = hybrid_block_tokens(layout);
    let (block, from) = if block < hybrid {
        (
            hybrid,
            "raised so one attention page holds a recurrent layer's state, as vLLM does for hybrids",
        )
    } else {
        (block, from)
    };
    settings.push("block-size", block, s.block_size == Some(block), from);
    Scheduler {
        batched_tokens,
        seqs,
        block,
        recurrent_blocks: recurrent_blocks(s, rules, layout, settings),
    }
}

/// The state blocks one request keeps in a recurrent group (`MambaSpec.max_memory_usage_bytes`,
/// vllm/v1/kv_cache_interface.py of v0.19.0 and v0.24.0): one, two under prefix caching
/// (`mamba_cache_mode` 'align', which `MambaModelConfig` sets when prefix caching is on), plus
/// one per speculative token (`num_speculative_blocks`). Unset, prefix caching is on for hybrid
/// models from v0.28 and off before ([`Rule::HybridPrefixCaching`]).
fn recurrent_blocks(s: &Scenario, rules: Rules, layout: &KvLayout, settings: &mut Settings) -> u64 {
    settings.given("speculative-tokens", s.speculative_tokens);
    let hybrid = layout.recurrent_layers > 0;
    let default = if hybrid && rules.applies(Rule::HybridPrefixCaching) {
        (true, "vLLM's default for hybrid models since 0.28")
    } else if hybrid {
        (false, "vLLM's default for hybrid models before 0.28")
    } else {
        (
            true,
            "vLLM's default (no memory of its own without recurrent layers)",
        )
    };
    let prefix = settings.given_or("prefix-caching", s.prefix_caching, default);
    if !hybrid {
        return 1;
    }
    u64::from(if prefix { 2 } else { 1 } + s.speculative_tokens)
}

/// The cache vLLM lays out: the model's, and the MTP modules' attention layers when they draft
/// (vLLM's MTP drafters, `Qwen3_5MTP` among them, give their decoder layer a KV cache beside the
/// model's).
fn vllm_layout(s: &Scenario, r: &Resolved, d: &Deployment) -> KvLayout {
    let mut layout = KvLayout::new(r, d);
    if s.mtp && s.speculative_tokens > 0 {
        layout.full_layers += r.arch.mtp_layers;
    }
    layout
}

/// The fewest tokens an attention block of a hybrid model holds: vLLM raises `block_size` to
/// `16 × ⌈state page / (16 × one token's attention bytes)⌉` so that an attention page is at
/// least one recurrent layer's state (`HybridAttentionMambaModelConfig.verify_and_update_config`,
/// vllm/model_executor/models/config.py: "Setting attention block size to N tokens to ensure that
/// attention page size is >= mamba page size"), then pads the state page to it. 0 without
/// recurrent layers or without attention.
fn hybrid_block_tokens(layout: &KvLayout) -> u32 {
    const ALIGNMENT_TOKENS: f64 = 16.0;
    if layout.recurrent_layers == 0 || layout.token_bytes <= 0.0 {
        return 0;
    }
    let blocks = (layout.request_bytes / (ALIGNMENT_TOKENS * layout.token_bytes)).ceil();
    (ALIGNMENT_TOKENS * blocks).min(f64::from(u32::MAX)) as u32
}

/// Tokens one fused-MoE call processes at a time (`VLLM_FUSED_MOE_CHUNK_SIZE`, vllm/envs.py).
pub const FUSED_MOE_CHUNK_TOKENS: u32 = 16 * 1024;

/// The fused-MoE kernels' scratch for the batched tokens, which stays allocated after the forward
/// pass: `FusedMoEModularKernel` takes it from the `WorkspaceManager` (vllm/v1/worker/
/// workspace.py, since vLLM PR #27532), one buffer that grows to the largest request and is kept,
/// so the profile run's sampler peaks on top of it. The shapes are the experts kernel's
/// `workspace_shapes` for `M` tokens, each routed to `topk` experts of intermediate `I` on this
/// rank (the whole expert under expert parallelism), `N` the first GEMM's width (`2I` gated):
/// - `TritonExperts` (16-bit and fp8) and `MarlinExperts` (int4): `(M, topk, max(I, H))`, whose
///   storage the `(M, H)` output shares when one chunk holds every token, and `(M, topk, max(N, H))`;
/// - `OAITritonExperts` (MXFP4 on Hopper, vLLM's "TRITON" MXFP4 backend): the `(M, H)` output and
///   `(M·topk, I)`.
///
/// Zero for a dense model.
fn moe_workspace(r: &Resolved, d: &Deployment, expert_parallel: bool, sched: &Scheduler) -> f64 {
    let a = &r.arch;
    if a.moe_layers() <= 0.0 {
        return 0.0;
    }
    let e = r.act_dtype.bytes();
    let hidden = f64::from(a.hidden);
    let topk = f64::from(a.moe.per_token.max(1));
    let split = if expert_parallel { 1 } else { d.tp.max(1) };
    let inter = f64::from(a.moe.expert_ffn) / f64::from(split);
    let first_gemm = if a.gated { 2.0 * inter } else { inter };
    let tokens = f64::from(sched.batched_tokens);
    let chunk = f64::from(sched.batched_tokens.min(FUSED_MOE_CHUNK_TOKENS));
    let output = tokens * hidden;
    let elements = if r.weights == Dtype::Mxfp4 {
        output + chunk * topk * inter
    } else {
        let workspace13 = chunk * topk * inter.max(hidden);
        let workspace2 = chunk * topk * first_gemm.max(hidden);
        let shared = if chunk < tokens {
            workspace13 + output
        } else {
            workspace13.max(output)
        };
        shared + workspace2
    };
    elements * e
}

/// Whether some layer has a dense MLP (a mixture of experts' dense layers, or any dense model).
fn has_dense_mlp(r: &Resolved) -> bool {
    r.arch.moe_layers() < f64::from(r.arch.mlp_layers())
}

/// The profile run's torch peak: the larger of its two phases, the forward over the batched
/// tokens (hidden states and, where the model has dense MLP layers, their gate/up and activation
/// outputs: `T × (2H + 4F/tp)` elements, the MLP's columns split over the tensor-parallel ranks by
/// `MergedColumnParallelLinear`, vllm/model_executor/layers/linear.py) and the sampler over
/// `min(max_num_seqs, T)` rows of the full
/// vocabulary (gathered on every tensor-parallel rank, on the last pipeline stage) beside the last
/// hidden states, plus the fused-MoE workspace both run beside.
fn activation_peak(
    r: &Resolved,
    sched: &Scheduler,
    tp: u32,
    (per_logit, per_logit_words): (f64, &'static str),
    moe_workspace: Formula,
) -> Formula {
    let fx = moe_workspace.fx();
    let a = &r.arch;
    let e = || fx.num(r.act_dtype.bytes()).unit("B");
    let tokens = || fx.sym("tokens", f64::from(sched.batched_tokens));
    let hidden = || fx.sym("H", f64::from(a.hidden));
    let rows = fx.sym(
        "min(seqs, tokens)",
        f64::from(sched.seqs.min(sched.batched_tokens)),
    );
    let sampler =
        rows * fx.sym("V", f64::from(a.vocab)) * fx.num(per_logit).unit("B").words(per_logit_words)
            + tokens() * hidden() * e();
    let dense_mlp = if has_dense_mlp(r) {
        fx.num(4.0) * fx.sym("F", f64::from(a.ffn)) / fx.sym("tp", f64::from(tp.max(1)))
    } else {
        fx.num(0.0).shown_if(false)
    };
    let forward = tokens() * (fx.num(2.0) * hidden() + dense_mlp) * e();
    sampler.max(forward) + moe_workspace
}

/// The pool laid out in blocks: bytes of one page, how many blocks one `max_model_len` request
/// needs, how many pages one block index spans (the group size), and how many groups there are.
struct Blocks {
    page: f64,
    group_size: f64,
    groups: u64,
    per_request: u64,
    /// Bytes one request of `max_model_len` needs over every real (unpadded) layer.
    needed: f64,
}

fn blocks(layout: &KvLayout, sched: &Scheduler, max_model_len: u32) -> Blocks {
    let block = sched.block.max(1);
    let full_blocks = u64::from(max_model_len.div_ceil(block));
    let window_tokens = (layout.window.saturating_sub(1))
        .saturating_add(sched.batched_tokens)
        .min(max_model_len);
    let sliding_blocks = u64::from(window_tokens.div_ceil(block)) + 1;
    // A Mamba layer's state is one page per request, padded to the attention page that
    // `hybrid_block_tokens` sized to hold it; a `block-size` set larger makes the attention page
    // the larger of the two.
    let attention_page = f64::from(block) * layout.token_bytes;
    let page = attention_page.max(if layout.recurrent_layers > 0 {
        layout.request_bytes
    } else {
        0.0
    });
    let all_kinds = [
        (layout.full_layers, full_blocks),
        (layout.sliding_layers, sliding_blocks),
        (layout.recurrent_layers, sched.recurrent_blocks),
    ];
    let kinds = || all_kinds.iter().filter(|(layers, _)| *layers > 0);
    let fewest = kinds().map(|k| k.0).min().unwrap_or(1).max(1);
    let most = kinds().map(|k| k.0).max().unwrap_or(1);
    let group_size = if f64::from(most) < 1.5 * f64::from(fewest) {
        most
    } else {
        fewest
    };
    let groups_of = |layers: u32| u64::from(layers.div_ceil(group_size));
    Blocks {
        page,
        group_size: f64::from(group_size),
        groups: kinds().map(|k| groups_of(k.0)).sum::<u64>().max(1),
        per_request: kinds().map(|k| groups_of(k.0) * k.1).sum::<u64>().max(1),
        needed: kinds().map(|k| f64::from(k.0) * k.1 as f64 * page).sum(),
    }
}

/// The tokens "GPU KV cache size" reports: the blocks of one group, or since v0.20.1 what the
/// concurrency holds at `max_model_len` (`Rule::TokensFromConcurrency`).
fn logged_tokens(
    rules: Rules,
    b: &Blocks,
    sched: &Scheduler,
    num_blocks: u64,
    max_model_len: u32,
) -> u64 {
    if rules.applies(Rule::TokensFromConcurrency) {
        (num_blocks as f64 / b.per_request as f64 * f64::from(max_model_len)).floor() as u64
    } else {
        num_blocks / b.groups * u64::from(sched.block)
    }
}

/// The longest `max_model_len` whose one request fits the pool: vLLM's "estimated maximum model
/// length" (a binary search, as `check_enough_kv_cache_memory` does).
fn longest_fitting(layout: &KvLayout, sched: &Scheduler, pool: f64, upper: u32) -> u32 {
    let (mut lo, mut hi) = (0u32, upper);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if blocks(layout, sched, mid).needed <= pool {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The recurrent state's format, for a model with recurrent layers.
fn push_ssm_setting(s: &Scenario, r: &Resolved, layout: &KvLayout, settings: &mut Settings) {
    if layout.recurrent_layers > 0 {
        let from = if r.arch.recurrent.state_dtype.is_some() {
            "the checkpoint's mamba_ssm_dtype; fp32 for Nemotron-H"
        } else {
            "vLLM's auto: the model's dtype"
        };
        settings.push("ssm-dtype", r.state_dtype, s.ssm_dtype.is_some(), from);
    }
}

fn push(
    s: &Scenario,
    r: &Resolved,
    d: &Deployment,
    rules: Rules,
    (stack, notes): (&mut Stack, &mut Vec<String>),
) -> Serving {
    let mut settings = Settings::new(stack.explain);
    settings.push(
        "vllm-version",
        rules.release,
        rules.release != Release::Latest,
        "the newest release whose rules were checked, 0.33",
    );
    let (max_model_len, auto) = requested_length(s, r, &mut settings);
    let layout = vllm_layout(s, r, d);
    push_ssm_setting(s, r, &layout, &mut settings);
    let sched = scheduler(s, r, rules, max_model_len, &layout, &mut settings);
    notes.extend(rules.intel_block_note(r.gpu, layout.recurrent_layers, sched.block));
    push_rope_tables(r, r.act_dtype, stack);
    let weights = stack.model_load();
    let v2 = v2_runner(s, r, rules, &layout, (&mut settings, notes));
    let per_logit = sampler_bytes_per_logit(rules, v2, r.act_dtype);
    let activations = push_profile_peak(s, r, d, rules, (&sched, per_logit, max_model_len), stack);
    let non_torch = push_non_torch(
        s,
        d,
        "Non-torch memory (workspaces, all-reduce buffers)",
        stack,
    );
    let fx = stack.fx();
    let graphs = vllm_graphs::cuda_graphs(
        s,
        r,
        rules,
        (d.tp, d.pp),
        (sched.seqs, sched.batched_tokens),
        &mut settings,
        fx,
    );
    let budget = Budget::new(s, d, (rules, v2), &mut settings);
    let taken = [weights, activations, non_torch.as_f64()];
    let stack_bytes = taken.iter().sum::<f64>() + graphs.value();
    let (available_bytes, pool_bytes) = push_pool_and_graphs(s, &budget, taken, graphs, stack);
    vllm_kv_memory::push_setting(s, pool_bytes, &mut settings);
    overhead::push_context(s, stack);
    let check_pool = check_pool(rules, &blocks(&layout, &sched, max_model_len), pool_bytes);
    let fitted = auto.then(|| auto_fit(&layout, &sched, check_pool, max_model_len, notes));
    let max_model_len = fitted.unwrap_or(max_model_len).max(1);
    let b = blocks(&layout, &sched, max_model_len);
    let num_blocks = (pool_bytes / b.page.max(1.0) / b.group_size).floor() as u64;
    let reason = fp8_refusal(s, r, rules)
        .or_else(|| {
            refusal(
                &budget,
                (available_bytes, check_pool),
                &b,
                max_model_len,
                fitted == Some(0),
                || longest_fitting(&layout, &sched, check_pool, max_model_len),
            )
        })
        .or_else(|| {
            vllm_kv_memory::out_of_memory(s, stack_bytes + pool_bytes, budget.free_at_start)
        });
    let max_concurrency = num_blocks as f64 / b.per_request as f64;
    Serving {
        runtime: Runtime::Vllm,
        kv_pool_bytes: Bytes::from_f64(pool_bytes),
        kv_tokens: logged_tokens(rules, &b, &sched, num_blocks, max_model_len),
        kv_blocks: Some(num_blocks),
        max_concurrency,
        context_tokens: max_model_len,
        starts: reason.is_none(),
        reason,
        host: Host::NONE,
        command: None,
        settings: settings.into_list(),
    }
}

/// The profile run's peak: the text model's ([`push_activation_peak`]) with what the multimodal
/// encoder's profile before it leaves beside it ([`vllm_encoder::push`]).
fn push_profile_peak(
    s: &Scenario,
    r: &Resolved,
    d: &Deployment,
    rules: Rules,
    (sched, per_logit, max_model_len): (&Scheduler, (f64, &'static str), u32),
    stack: &mut Stack,
) -> f64 {
    let activations = push_activation_peak(s, r, d, (sched, per_logit), stack);
    let encoder = vllm_encoder::Budget {
        tp: d.tp,
        batched_tokens: sched.batched_tokens,
        seqs: sched.seqs,
        max_model_len,
    };
    activations + vllm_encoder::push(s, r, rules, &encoder, activations, stack)
}

/// Whether Model Runner V2 runs (`VLLM_USE_V2_MODEL_RUNNER`, else the release's default for
/// a model with or without experts or recurrent layers).
fn v2_runner(
    s: &Scenario,
    r: &Resolved,
    rules: Rules,
    layout: &KvLayout,
    (settings, notes): (&mut Settings, &mut Vec<String>),
) -> bool {
    let experts_or_recurrent = r.arch.moe_layers() > 0.0 || layout.recurrent_layers > 0;
    let v2 = settings.given_or(
        "model-runner-v2",
        s.model_runner_v2,
        rules.default_v2_runner(experts_or_recurrent),
    );
    notes.extend(rules.v2_note(s.model_runner_v2.is_some(), v2));
    v2
}

/// vLLM's refusal of fp8 on a card too old for it, in its own words:
/// - fp8 weights below compute capability 7.5 (`Fp8Config.get_min_capability` is 75,
///   vllm/model_executor/layers/quantization/fp8.py; `_get_quantization_config` raises,
///   vllm/config/vllm.py of v0.19.0–v0.33.0);
/// - an fp8 KV cache under the Triton attention backend below 8.9 (`TritonAttentionImpl`,
///   vllm/v1/attention/backends/triton_attn.py since v0.24.0).
fn fp8_refusal(s: &Scenario, r: &Resolved, rules: Rules) -> Option<String> {
    let gpu = r.gpu.filter(|g| g.is_nvidia() && s.vram.is_none())?;
    if r.weights == Dtype::Fp8 && gpu.pre_turing {
        return Some(format!(
            "The quantization method fp8 is not supported for the current GPU. Minimum capability: 75. Current capability: below 75 ({}).",
            gpu.name
        ));
    }
    let triton = s.attention_backend == AttentionBackend::Triton;
    let below_ada = gpu.has_fp8_tensor_path() == Some(false);
    (r.kv_dtype == Dtype::Fp8 && triton && below_ada && rules.applies(Rule::TritonFp8Kv)).then(|| {
        format!(
            "FP8 KV cache is not supported by the Triton attention backend on {} (compute capability below 8.9); native FP8 (fp8e4nv) requires SM89+.",
            gpu.name
        )
    })
}

/// What vLLM asks of the GPU at start.
struct Budget {
    /// `cudaMemGetInfo`'s total.
    total: f64,
    /// `gpu_memory_utilization × total`.
    requested: f64,
    /// What is free when the worker starts.
    free_at_start: f64,
    util: f64,
    /// The CUDA graphs' estimate is taken out of the budget.
    graphs_inside: bool,
}

impl Budget {
    /// The budget as the release applies it, each unset setting at the release's default.
    fn new(
        s: &Scenario,
        d: &Deployment,
        (rules, v2): (Rules, bool),
        settings: &mut Settings,
    ) -> Budget {
        let util = settings.given_or(
            "gpu-memory-utilization",
            s.gpu_memory_utilization,
            rules.default_utilization(),
        );
        let graphs_inside = if let Some(inside) = vllm_kv_memory::graphs_inside(s, settings) {
            inside
        } else if rules.graphs_profiled(v2) {
            settings.given_or(
                "profile-cudagraphs",
                s.profile_cudagraphs,
                rules.default_graphs_in_budget(),
            )
        } else {
            settings.push("profile-cudagraphs", false, false, "Model Runner V2 before 0.29 estimates no CUDA-graph memory (profile_cudagraph_memory returns 0): the graphs are captured after the pool, outside the budget");
            false
        };
        let total = d.cuda_total.as_f64();
        Budget {
            total,
            requested: util * total,
            free_at_start: (total - s.context.as_f64() - s.reserved.as_f64()).max(0.0),
            util,
            graphs_inside,
        }
    }
}

/// Pushes the profile run's activation peak and returns it.
fn push_activation_peak(
    s: &Scenario,
    r: &Resolved,
    d: &Deployment,
    (sched, per_logit): (&Scheduler, (f64, &'static str)),
    stack: &mut Stack,
) -> f64 {
    let workspace = moe_workspace(r, d, s.sharding == Sharding::Expert, sched);
    let workspace = stack
        .fx()
        .num(workspace)
        .words("fused-MoE workspace (kept between forwards)")
        .size(s.units)
        .shown_if(workspace > 0.0);
    let activations = activation_peak(r, sched, d.tp, per_logit, workspace);
    let bytes = activations.value();
    stack.push(
        ComponentId::Activations,
        "Profile-run activation peak",
        activations.remark("the larger of the sampler and the forward"),
    );
    bytes
}

/// Pushes the KV pool, what the budget leaves once the weights, activation peak and non-torch
/// memory are `taken`, and the CUDA graphs, inside the budget or beside it. Returns the bytes left
/// (negative when nothing is) and the pool.
fn push_pool_and_graphs(
    s: &Scenario,
    budget: &Budget,
    [weights, activations, non_torch]: [f64; 3],
    graphs: Formula,
    stack: &mut Stack,
) -> (f64, f64) {
    let fx = stack.fx();
    let in_budget = budget.graphs_inside && graphs.value() > 0.0;
    let graphs_in_budget = if in_budget { graphs.value() } else { 0.0 };
    let taken = |value: f64, what: &'static str| fx.num(value).words(what).size(s.units);
    let available = match s.kv_cache_memory {
        Some(given) => taken(given.as_f64(), "kv-cache-memory"),
        None => {
            fx.num(budget.util) * taken(budget.total, "CUDA total")
                - taken(weights, "weights")
                - taken(activations, "activation peak")
                - taken(non_torch, "non-torch")
                - taken(graphs_in_budget, "CUDA graphs").shown_if(in_budget)
        }
    };
    let available_bytes = available.value();
    let pool = available.max(fx.num(0.0));
    let pool_bytes = pool.value();
    stack.push(ComponentId::KvCache, "KV cache pool (preallocated)", pool);
    let (label, when) = if in_budget {
        (
            "CUDA graphs (estimated inside the budget)",
            "profiled before the pool is sized and taken out of the budget",
        )
    } else {
        (
            "CUDA graphs (outside the budget)",
            "captured after the pool is sized",
        )
    };
    stack.push(ComponentId::CudaGraphs, label, graphs.remark(when));
    (available_bytes, pool_bytes)
}

/// vLLM's refusal to start, in its own words: too little free memory for the budget, no room
/// for the pool, `auto` finding no length that fits, or a pool too small for one request of
/// `max_model_len`.
fn refusal(
    budget: &Budget,
    (available, pool): (f64, f64),
    b: &Blocks,
    max_model_len: u32,
    auto_fits_nothing: bool,
    longest_fitting: impl FnOnce() -> u32,
) -> Option<String> {
    if budget.free_at_start < budget.requested {
        Some(format!(
            "Free memory on device ({}/{} GiB) on startup is less than desired GPU memory utilization ({}, {} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
            gib2(budget.free_at_start),
            gib2(budget.total),
            budget.util,
            gib2(budget.requested)
        ))
    } else if available <= 0.0 {
        Some("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.".to_string())
    } else if auto_fits_nothing {
        Some(AUTO_FIT_NOTHING.to_string())
    } else if b.needed > pool {
        Some(format!(
            "To serve at least one request with the model's max seq len ({max_model_len}), ({} GiB KV cache is needed, which is larger than the available KV cache memory ({} GiB). Based on the available memory, the estimated maximum model length is {}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
            gib2(b.needed),
            gib2(pool),
            longest_fitting()
        ))
    } else {
        None
    }
}

/// `max-model-len` as vLLM sizes the profile run and the graphs, and whether vLLM fits it to the
/// pool afterwards: the given length, `seq` when unset, or for `auto` the model's whole context
/// (`_get_and_verify_max_len` treats -1 as unset, vllm/config/model.py of v0.14.0), which the
/// shape carries as its RoPE table's positions (`seq` for a shape without one).
fn requested_length(s: &Scenario, r: &Resolved, settings: &mut Settings) -> (u32, bool) {
    match s.max_model_len {
        Some(ContextLength::Auto) => {
            settings.given("max-model-len", ContextLength::Auto);
            match r.arch.rope.positions {
                0 => (s.seq, true),
                whole => (whole, true),
            }
        }
        given => {
            let tokens = given.and_then(ContextLength::tokens).unwrap_or(s.seq);
            settings.push("max-model-len", tokens, given.is_some(), "seq");
            (tokens, false)
        }
    }
}

/// vLLM's parser reads `auto` (and -1) for `--max-model-len` from v0.14.0.
fn check_auto_length(s: &Scenario, errors: &mut Vec<FieldError>) {
    let rules = Rules::new(s.vllm_version);
    if s.max_model_len == Some(ContextLength::Auto) && !rules.applies(Rule::AutoMaxModelLen) {
        errors.push(FieldError::new(
            "max-model-len",
            format!(
                "vLLM {} has no --max-model-len auto (added in 0.14); give a length",
                s.vllm_version
            ),
        ));
    }
}

/// The pool the one-request check and auto-fit plan against: since v0.29 less the null block, one
/// block of every group's pages (`_pool_bytes_per_block`, [`Rule::NullBlockReserved`]).
fn check_pool(rules: Rules, b: &Blocks, pool: f64) -> f64 {
    if rules.applies(Rule::NullBlockReserved) {
        (pool - b.page * b.group_size).max(0.0)
    } else {
        pool
    }
}

/// vLLM's refusal when `auto` finds no length that fits (`_auto_fit_max_model_len`).
const AUTO_FIT_NOTHING: &str = "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`.";

/// `--max-model-len auto`: the longest request the pool holds, searched from 1 token to the
/// model's whole context as `_estimate_max_model_len_from_groups` does (vllm/v1/core/
/// kv_cache_utils.py of v0.14.0; kv_cache_planning.py of v0.33.0), and what vLLM logs of it.
fn auto_fit(
    layout: &KvLayout,
    sched: &Scheduler,
    pool: f64,
    whole: u32,
    notes: &mut Vec<String>,
) -> u32 {
    let fitted = longest_fitting(layout, sched, pool, whole);
    if fitted >= whole {
        notes.push(format!("max-model-len auto: the model's whole context, {whole} tokens (its RoPE table's positions, or seq without one; vLLM derives it from config.json, which differs for Gemma 3, YaRN and LongRoPE scalings), fits the pool: vLLM logs \"Auto-fit max_model_len: full model context length {whole} fits\"."));
    } else if fitted > 0 {
        notes.push(format!("max-model-len auto: vLLM lowers the context to the longest request the pool holds, {fitted} tokens (\"Auto-fit max_model_len: reduced from {whole} to {fitted}\"); the concurrency and tokens are counted at it."));
    }
    fitted
}
