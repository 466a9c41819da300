//! SGLang's memory pool (python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py,
//! `profile_max_num_token`; python/sglang/srt/server_args.py for the defaults).
//!
//! - `F0` is the free memory after distributed init, before the weights load (the minimum over
//!   ranks). The weights and the KV pool together take `mem_fraction_static × F0`:
//!   `pool = F0 × mem_fraction_static − (F0 − free after the weights)`.
//! - Tokens: `pool // cell_size`, where a cell is one token over every layer on this rank
//!   (`get_cell_size_per_token`: `kv_heads / tp × (head_dim + v_head_dim) × layers × dtype`, or
//!   MLA's `(kv_lora_rank + qk_rope_head_dim) × layers × dtype`, not split by TP).
//! - Outside the fraction: the CUDA context and NCCL (before `F0`); activations and CUDA graphs
//!   live in the remaining `(1 − mem_fraction_static) × F0`.
//! - Default fraction (`_handle_gpu_memory_settings`, server_args.py; arg_groups/memory_hook.py
//!   since 0.5.20): `(gpu_mem − reserved) / gpu_mem`, rounded to 3 decimals, by `sglang-version`
//!   (each rule read in that release's wheel):
//!   - v0.5.3 on: `reserved = 512 + 1.5 × max(chunked_prefill_size, 2048) + 2 × cuda_graph_max_bs
//!     + 1024 × tp × pp / 8` MB, at least 10240 MB above 60 GiB; `chunked_prefill_size` and
//!     `cuda_graph_max_bs` by capacity (below).
//!   - v0.5.10 on: piecewise CUDA graphs for prefill are on by default
//!     (`disable_piecewise_cuda_graph = False`; off with pipeline parallelism, a vision tower, on AMD or (to 0.5.13) with speculative decoding,
//!     `_handle_piecewise_cuda_graph`), and the reserve adds 8 MB per captured size
//!     (`len(piecewise_cuda_graph_tokens) * 8`; sizes up to `chunked_prefill_size`, capped by
//!     `max_total_tokens`) or, with an MLA backend, 1.5 GiB, before the 10240 MB floor.
//!   - v0.4.8 to v0.5.2: `reserved` from a table by capacity: `(2.8 + tp·pp/10)` GiB below
//!     35 GiB, `(9.5 + tp·pp/2)` GiB below 90, `(12 + tp·pp/2)` GiB below 160, 32 GiB above.
//!   - v0.4.0 to v0.4.7: no formula, a fraction by parallel size (0.88 at TP1, 0.87 at TP2,
//!     0.85 at TP4, 0.81 at TP8, 0.79 at TP16), since v0.4.6 only up to 80 GiB; other GPUs and
//!     releases: give `mem-fraction-static`.
//! - `--max-total-tokens` caps the pool's tokens (`_apply_token_constraints`: the smaller of it
//!   and what the fraction leaves), and the pool is allocated for the capped tokens.
//! - `max_running_requests` defaults to `min(max(tokens / context_len × 512, 2048), 4096)`.

use super::{
    gib2, note_unknown_rope_tables, push_non_torch, push_rope_tables, Build, Deployment, Facts,
    Flag, Host, KvLayout, Launch, Parallel, RuntimeRules, RuntimeSpeed, Serving, Setting, Settings,
    When, Write,
};
use crate::dtype::Dtype;
use crate::estimate::overhead;
use crate::estimate::stack::Stack;
use crate::estimate::ComponentId;
use crate::gpu_catalogue::Gpu;
use crate::runtime::{ContextLength, Release, Runtime};
use crate::scenario::Group;
use crate::scenario::{FieldError, Resolved, Scenario};
use crate::units::{Bytes, MIB};

pub(super) struct Sglang;

/// The share of a rank's own free memory below which SGLang refuses a tensor-parallel group
/// whose smallest free memory is less (`min_per_gpu_memory < local_gpu_memory * 0.9`,
/// `ModelRunner.init_torch_distributed`, python/sglang/srt/model_executor/model_runner.py).
const TP_MEMORY_BALANCE: f64 = 0.9;

/// SGLang's facts: its name, settings, benchmark and launch command; its log prints what every
/// server with a pool does.
const FACTS: Facts = Facts {
    settings_group: Some(Group::Sglang),
    serving_bench: Some("python -m sglang.bench_serving --backend sglang"),
    launch: Some(&SGLANG_LAUNCH),
    ..Facts::server("SGLang", "SGLang serving")
};

impl RuntimeRules for Sglang {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// `--context-length` is a number of tokens: `auto` is vLLM's `--max-model-len auto`.
    fn check(&self, s: &Scenario, errors: &mut Vec<FieldError>) {
        if s.max_model_len == Some(ContextLength::Auto) {
            errors.push(FieldError::new(
                "max-model-len",
                "SGLang's --context-length takes a number of tokens; auto is vLLM's (--max-model-len auto)",
            ));
        }
    }

    /// Every rank budgets the group's smallest free memory: `get_available_gpu_memory(...,
    /// distributed=True)` all-reduces it with `ReduceOp.MIN` (python/sglang/srt/utils/common.py
    /// @4e75f468), and model_runner.py's `min_per_gpu_memory` sizes the pool from it. Ranks
    /// whose free memory differs by more than a tenth stop the start with "The memory capacity
    /// is unbalanced" (a warning only under SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK).
    fn unlike_gpus(&self, smallest: Bytes, largest: Bytes) -> Option<String> {
        let rule = "every rank budgets the smallest free memory of the group (get_available_gpu_memory all-reduces it with MIN), so the larger GPUs' extra memory stays unused";
        let refused = (smallest.0 as f64) < TP_MEMORY_BALANCE * largest.0 as f64;
        Some(if refused {
            format!("{rule}; and as it is under 90% of the largest GPU's, SGLang refuses to start (\"The memory capacity is unbalanced\") unless SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK is set.")
        } else {
            format!("{rule}.")
        })
    }

    fn release(&self, s: &Scenario) -> Option<Release> {
        Some(s.sglang_version)
    }

    fn push(&self, b: Build<'_>) -> Option<Serving> {
        let serving = push(b.s, b.r, &b.d, b.stack, b.notes);
        note_unknown_rope_tables(b.s, b.r, b.notes);
        Some(serving)
    }
}

/// Its speed is the default's: llama.cpp's CUDA shares, until runs of its own set them.
impl RuntimeSpeed for Sglang {}

/// `python -m sglang.launch_server --model-path MODEL` and its flags, as `ServerArgs.add_cli_args`
/// names them (python/sglang/srt/server_args.py): `--context-length` (written always: unset,
/// SGLang takes the model's whole context), `--mem-fraction-static`, `--chunked-prefill-size`,
/// `--max-running-requests`, `--max-total-tokens`, `--kv-cache-dtype` (`fp8_e4m3`),
/// `--mamba-ssm-dtype`, and
/// `--tp-size`, `--pp-size` and `--ep-size`.
static SGLANG_LAUNCH: Launch = Launch {
    program: &["python", "-m", "sglang.launch_server"],
    model_flag: Some("--model-path"),
    gguf: false,
    parallel: Some(Parallel {
        tensor: "--tp-size",
        pipeline: "--pp-size",
        expert: Write::Text,
        expert_flag: "--ep-size",
    }),
    flags: &[
        Flag::new(
            "max-model-len",
            "--context-length",
            Write::Text,
            When::Always,
        ),
        Flag::new(
            "mem-fraction-static",
            "--mem-fraction-static",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "max-num-batched-tokens",
            "--chunked-prefill-size",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "max-num-seqs",
            "--max-running-requests",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "max-total-tokens",
            "--max-total-tokens",
            Write::Text,
            When::Changed,
        ),
        Flag::new(
            "mtp",
            "--speculative-algorithm",
            Write::Words(&[("true", "NEXTN")]),
            When::Changed,
        ),
        Flag::new(
            "kv-dtype",
            "--kv-cache-dtype",
            Write::Words(&[("fp8", "fp8_e4m3")]),
            When::Changed,
        ),
        Flag::new(
            "ssm-dtype",
            "--mamba-ssm-dtype",
            Write::Words(&[("fp32", "float32"), ("bf16", "bfloat16")]),
            When::Changed,
        ),
    ],
};

/// The capacity buckets of SGLang's heuristic, in MiB of nvidia-smi's total: the bucket's upper
/// bound, its `chunked_prefill_size`, and `cuda_graph_max_bs` below and from TP4.
const BUCKETS: &[(u64, u32, u32, u32)] = &[
    (20 * 1024, 2048, 8, 8),
    (35 * 1024, 2048, 24, 80),
    (60 * 1024, 4096, 32, 160),
    (90 * 1024, 8192, 256, 512),
    (160 * 1024, 8192, 256, 512),
    (u64::MAX, 16384, 512, 512),
];

/// MB the heuristic reserves for speculative decoding with the model's own MTP modules (NEXTN,
/// run as EAGLE), after the floor: 2048 from 0.4.8 (the table's "draft model and larger cuda
/// graph buffers"), 4096 from 0.5.10 ("eagle draft models and cuda graphs"), none from 0.5.14,
/// whose heuristic drops the term (server_args.py of 0.4.8, 0.5.2, 0.5.9, 0.5.10, 0.5.13 and
/// 0.5.14).
fn speculative_mb(release: Release) -> f64 {
    if release.at_least([0, 5, 14]) {
        0.0
    } else if release.at_least(PIECEWISE_DEFAULT) {
        4096.0
    } else {
        2048.0
    }
}

/// The least `reserved` above 60 GiB, in MB.
const LARGE_GPU_RESERVE_MB: f64 = 10240.0;

/// MB of CUDA-graph memory the heuristic expects per captured batch size.
const GRAPH_MB_PER_BATCH: f64 = 2.0;

/// MB the heuristic expects per piecewise prefill graph (v0.5.10 on), and for them all with an
/// MLA backend.
const PIECEWISE_MB_PER_SIZE: f64 = 8.0;
const PIECEWISE_MLA_MB: f64 = 1536.0;

/// The newest SGLang release whose rules were checked: what `latest` means.
const NEWEST_CHECKED: [u32; 3] = [0, 5, 23];
/// The release whose heuristic is the `reserved` formula, and the first with piecewise prefill
/// graphs on by default; the oldest whose table was checked.
const RESERVE_FORMULA: [u32; 3] = [0, 5, 3];
const PIECEWISE_DEFAULT: [u32; 3] = [0, 5, 10];
const CAPACITY_TABLE: [u32; 3] = [0, 4, 8];

/// Before the capacity table, the default fraction by parallel size, the largest first
/// (`ServerArgs.__post_init__`, python/sglang/srt/server_args.py of 0.4.0, 0.4.6 and 0.4.7;
/// the same table in 0.4.1, 0.4.1.post7, 0.4.2, 0.4.3.post4 and 0.4.4.post1): the oldest release
/// with it (0.3.6 gives TP8 0.82), the first that applies it only up to 81920 MiB (above, other
/// rules this table does not model), and the first that counts `tp × pp` rather than `tp`.
const TP_FRACTIONS: [(u32, f64); 5] = [(16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88)];
const TP_TABLE: [u32; 3] = [0, 4, 0];
const TP_TABLE_UP_TO_80_GIB: [u32; 3] = [0, 4, 6];
const TP_TABLE_WITH_PP: [u32; 3] = [0, 4, 7];
const TP_TABLE_MAX_MIB: u64 = 81920;

/// The first release that lowers a multimodal model's default fraction by its vision tower
/// (`adjust_mem_fraction_for_vlm`: added in 0.4.9.post3, whose post number the release setting
/// does not carry, so 0.4.10; the same in 0.5.10's server_args.py and 0.5.21's
/// arg_groups).
const VLM_FRACTION: [u32; 3] = [0, 4, 10];

/// `adjust_mem_fraction_for_vlm`'s terms: 0.95 for any tower, then 10% less per 100% more
/// `layers × hidden²` than ViT-L/14's 24 × 1024², the factor kept within 0.8 and 1.05.
const VLM_BASE_FACTOR: f64 = 0.95;
const VIT_L_LAYERS: f64 = 24.0;
const VIT_L_HIDDEN: f64 = 1024.0;
const VLM_SENSITIVITY: f64 = 0.1;

/// What SGLang multiplies a multimodal model's default fraction by. It reads the tower's depth
/// as `vision_config.num_hidden_layers`, 24 where the config does not name it so: Qwen's towers
/// (Qwen2.5-VL, Qwen3-VL, Qwen3.5) name it `depth`, and they are the towers that merge patches,
/// so a merging tower is read as 24 layers.
fn vlm_factor(vision: &crate::model::Vision) -> f64 {
    let layers = if vision.merge > 1 {
        VIT_L_LAYERS
    } else {
        f64::from(vision.layers)
    };
    let ratio = layers * f64::from(vision.hidden).powi(2) / (VIT_L_LAYERS * VIT_L_HIDDEN.powi(2));
    VLM_BASE_FACTOR * (1.0 - VLM_SENSITIVITY * (ratio - 1.0)).clamp(0.8, 1.05)
}

struct Defaults {
    chunked_prefill: u32,
    graph_batch: u32,
    fraction: f64,
    /// What the fraction was multiplied by for a vision tower (1 without).
    vlm: f64,
    /// Whether the release's default fraction is modelled on this GPU.
    modelled: bool,
}

/// The default fraction of a release before the capacity table, where it is modelled.
fn tp_table_fraction(release: Release, gpu_mib: u64, d: &Deployment) -> Option<f64> {
    let in_table = release.at_least(TP_TABLE) && !release.at_least(CAPACITY_TABLE);
    if !in_table || (release.at_least(TP_TABLE_UP_TO_80_GIB) && gpu_mib > TP_TABLE_MAX_MIB) {
        return None;
    }
    let ranks = if release.at_least(TP_TABLE_WITH_PP) {
        d.tp * d.pp
    } else {
        d.tp
    };
    TP_FRACTIONS
        .iter()
        .find(|&&(from, _)| ranks >= from)
        .map(|&(_, fraction)| fraction)
}

/// The sizes SGLang captures piecewise prefill graphs at, up to `max_tokens`
/// (`_generate_piecewise_cuda_graph_tokens`; `generate_prefill_cuda_graph_batch_sizes` since
/// 0.5.15): how many there are.
fn piecewise_sizes(max_tokens: u32) -> usize {
    let steps: [(u32, u32, u32); 6] = [
        (4, 32, 4),
        (48, 256, 16),
        (288, 512, 32),
        (576, 1024, 64),
        (1280, 4096, 256),
        (4608, u32::MAX, 512),
    ];
    steps
        .iter()
        .map(|&(from, to, step)| {
            let to = to.min(max_tokens);
            if to < from {
                0
            } else {
                ((to - from) / step + 1) as usize
            }
        })
        .sum()
}

/// Whether piecewise prefill graphs stay on from 0.5.10 (`_handle_piecewise_cuda_graph`,
/// server_args.py of 0.5.10): not with pipeline parallelism, a vision tower, on an AMD GPU
/// (`is_hip`), or, until 0.5.14, with speculative decoding.
fn piecewise_prefill(s: &Scenario, r: &Resolved, d: &Deployment) -> bool {
    let amd = r.gpu.is_some_and(Gpu::is_amd);
    let speculative = s.mtp && !s.sglang_version.at_least([0, 5, 14]);
    d.pp == 1 && r.arch.vision.layers == 0 && !amd && !speculative
}

/// The MB the release's heuristic reserves outside the fraction.
fn reserved_mb(s: &Scenario, r: &Resolved, d: &Deployment, chunked: u32, graph_batch: u32) -> f64 {
    let gpu_mib = r.capacity.0 / MIB;
    let parallel = f64::from(d.tp * d.pp);
    let release = s.sglang_version;
    if !release.at_least(RESERVE_FORMULA) {
        let gib = match gpu_mib {
            m if m < 35 * 1024 => 2.8 + parallel / 10.0,
            m if m < 90 * 1024 => 9.5 + parallel / 2.0,
            m if m < 160 * 1024 => 12.0 + parallel / 2.0,
            _ => 32.0,
        };
        return gib * 1024.0 + if s.mtp { speculative_mb(release) } else { 0.0 };
    }
    let mut reserved = 512.0
        + 1.5 * f64::from(chunked.max(2048))
        + GRAPH_MB_PER_BATCH * f64::from(graph_batch)
        + 1024.0 * parallel / 8.0;
    if release.at_least(PIECEWISE_DEFAULT) && piecewise_prefill(s, r, d) {
        reserved += if r.arch.mla.is_mla() {
            PIECEWISE_MLA_MB
        } else {
            let max_tokens = s.max_total_tokens.map_or(chunked, |t| t.min(chunked));
            PIECEWISE_MB_PER_SIZE * piecewise_sizes(max_tokens) as f64
        };
    }
    if gpu_mib > 60 * 1024 {
        reserved = reserved.max(LARGE_GPU_RESERVE_MB);
    }
    if s.mtp {
        reserved += speculative_mb(release);
    }
    reserved
}

fn defaults(s: &Scenario, r: &Resolved, d: &Deployment) -> Defaults {
    let gpu_mib = r.capacity.0 / MIB;
    let &(_, chunked, small_tp, large_tp) = BUCKETS
        .iter()
        .find(|b| gpu_mib < b.0)
        .unwrap_or(&BUCKETS[BUCKETS.len() - 1]);
    let chunked_prefill = s.max_num_batched_tokens.unwrap_or(chunked);
    let graph_batch = if d.tp < 4 { small_tp } else { large_tp };
    let reserved_mb = reserved_mb(s, r, d, chunked_prefill, graph_batch);
    let gpu_mb = gpu_mib as f64;
    let fraction = ((gpu_mb - reserved_mb) / gpu_mb * 1000.0).round() / 1000.0;
    let table = tp_table_fraction(s.sglang_version, gpu_mib, d);
    let vlm = if r.arch.vision.layers > 0 && s.sglang_version.at_least(VLM_FRACTION) {
        vlm_factor(&r.arch.vision)
    } else {
        1.0
    };
    Defaults {
        chunked_prefill,
        graph_batch,
        fraction: table.unwrap_or(fraction.clamp(0.01, 1.0) * vlm),
        vlm: if table.is_some() { 1.0 } else { vlm },
        modelled: table.is_some() || s.sglang_version.at_least(CAPACITY_TABLE),
    }
}

fn push(
    s: &Scenario,
    r: &Resolved,
    d: &Deployment,
    stack: &mut Stack,
    notes: &mut Vec<String>,
) -> Serving {
    let context_len = s
        .max_model_len
        .and_then(ContextLength::tokens)
        .unwrap_or(s.seq);
    let dflt = defaults(s, r, d);
    let fraction = s.mem_fraction_static.unwrap_or(dflt.fraction);
    let layout = KvLayout::new(r, d);
    note_unmodelled_pools(&layout, notes);
    notes.extend(release_note(s.sglang_version, dflt.modelled));
    push_rope_tables(r, Dtype::Fp32, stack);
    let weights = stack.model_load();
    let non_torch = push_non_torch(s, d, "NCCL and workspaces (before the pool)", stack);
    let free_before_weights =
        (d.cuda_total.as_f64() - s.context.as_f64() - s.reserved.as_f64() - non_torch.as_f64())
            .max(0.0);
    let fx = stack.fx();
    let pool = (fx.sym("mem-fraction-static", fraction)
        * fx.num(free_before_weights)
            .words("free after init")
            .size(s.units)
        - fx.num(weights).words("weights").size(s.units))
    .max(fx.num(0.0));
    let cell = layout.attention_token_bytes();
    let pool = match s.max_total_tokens {
        Some(cap) if cell > 0.0 => {
            pool.min(fx.sym("max-total-tokens", f64::from(cap)) * fx.num(cell).unit("B per token"))
        }
        _ => pool,
    };
    let pool_bytes = pool.value();
    stack.push(ComponentId::KvCache, "KV cache pool (preallocated)", pool);
    push_outside_the_fraction(&dflt, stack);
    overhead::push_context(s, stack);
    let kv_tokens = if cell > 0.0 {
        (pool_bytes / cell).floor() as u64
    } else {
        0
    };
    let reason = (kv_tokens == 0).then(|| {
        format!(
            "Not enough memory. Please try to increase --mem-fraction-static. (The weights take {} GiB of the {} GiB the fraction allows.)",
            gib2(weights),
            gib2(fraction * free_before_weights)
        )
    });
    Serving {
        runtime: Runtime::Sglang,
        kv_pool_bytes: Bytes::from_f64(pool_bytes),
        kv_tokens,
        kv_blocks: None,
        max_concurrency: kv_tokens as f64 / f64::from(context_len.max(1)),
        context_tokens: context_len,
        starts: reason.is_none(),
        reason,
        host: Host::NONE,
        command: None,
        settings: settings(s, &dflt, fraction, kv_tokens, stack.explain),
    }
}

/// What the estimate says of the release it was asked for: nothing for a release whose rules
/// were checked.
fn release_note(release: Release, modelled: bool) -> Option<String> {
    match release {
        Release::Version(v) if v > NEWEST_CHECKED => Some(format!(
            "SGLang {release} is newer than the releases whose memory rules were checked: those of 0.5.23 apply."
        )),
        Release::Version(_) if !modelled => Some(format!(
            "SGLang {release}'s default mem-fraction-static is not modelled here (before 0.4.8 it came from tables by parallel size, checked from 0.4.0 and, since 0.4.6, only up to 80 GiB): the 0.4.8 table applies; give mem-fraction-static."
        )),
        _ => None,
    }
}

/// The pools SGLang keeps beside the KV cache that the planner counts as KV cache.
fn note_unmodelled_pools(layout: &KvLayout, notes: &mut Vec<String>) {
    if layout.recurrent_layers > 0 {
        notes.push("SGLang splits a hybrid model's pool between the Mamba cache and the KV cache (mamba_full_memory_ratio); that split is not modelled, so the pool is counted as KV cache.".to_string());
    }
    if layout.sliding_layers > 0 {
        notes.push("SGLang's separate sliding-window pool (swa_full_tokens_ratio) is not modelled: every layer's tokens are counted at full length, so the token count is a lower bound.".to_string());
    }
}

/// What lives in the rest of the free memory: the heuristic's own terms for a prefill chunk's
/// activations (1.5 MB per token) and the CUDA graphs (2 MB per captured batch size).
fn push_outside_the_fraction(dflt: &Defaults, stack: &mut Stack) {
    let fx = stack.fx();
    let workspace = (fx.num(1.5).unit("MB")
        * fx.num(f64::from(dflt.chunked_prefill.max(2048)))
            .unit("tokens")
        + fx.num(GRAPH_MB_PER_BATCH).unit("MB")
            * fx.num(f64::from(dflt.graph_batch))
                .unit("graph batch sizes"))
        * fx.num(MIB as f64).unit("B per MB (MiB)");
    stack.push(
        ComponentId::Activations,
        "Prefill chunk and CUDA graphs (outside the fraction)",
        workspace,
    );
}

/// The settings as SGLang applies them; `max_running_requests` from the pool's tokens.
fn settings(
    s: &Scenario,
    dflt: &Defaults,
    fraction: f64,
    kv_tokens: u64,
    explain: bool,
) -> Vec<Setting> {
    let context_len = s
        .max_model_len
        .and_then(ContextLength::tokens)
        .unwrap_or(s.seq);
    let running = s.max_num_seqs.unwrap_or(
        ((kv_tokens as f64 / f64::from(context_len.max(1)) * 512.0) as u32).clamp(2048, 4096),
    );
    let default = "SGLang's default for this GPU";
    let mut settings = Settings::new(explain);
    settings.push(
        "sglang-version",
        s.sglang_version,
        s.sglang_version != Release::Latest,
        "the newest release whose rules were checked, 0.5.23",
    );
    settings.push(
        "max-model-len",
        context_len,
        s.max_model_len.is_some(),
        "seq",
    );
    let fraction_from = if dflt.vlm == 1.0 {
        default.to_string()
    } else {
        // In ten-thousandths, written without float formatting, which the page's shell
        // otherwise links only for this.
        let factor = (dflt.vlm * 1e4).round() as u32;
        format!("{default} × 0.{factor:04} for the vision tower")
    };
    // A vision tower's factor leaves the fraction unrounded, as SGLang keeps it; four places
    // show it.
    settings.push(
        "mem-fraction-static",
        (fraction * 1e4).round() / 1e4,
        s.mem_fraction_static.is_some(),
        &fraction_from,
    );
    settings.push(
        "max-num-batched-tokens",
        dflt.chunked_prefill,
        s.max_num_batched_tokens.is_some(),
        default,
    );
    settings.push("max-num-seqs", running, s.max_num_seqs.is_some(), default);
    settings.push(
        "max-total-tokens",
        kv_tokens,
        s.max_total_tokens.is_some(),
        "what mem-fraction-static leaves",
    );
    settings.into_list()
}

#[cfg(test)]
mod tests {
    use super::piecewise_sizes;
    use crate::estimate::estimate;
    use crate::query::scenario_from_query;

    #[test]
    fn piecewise_prefill_sizes_follow_sglangs_list() {
        // 4..=32 by 4, 48..=256 by 16, 288..=512 by 32, 576..=1024 by 64, 1280..=4096 by 256,
        // then by 512: 58 sizes up to 8192.
        assert_eq!(piecewise_sizes(8192), 58);
        assert_eq!(piecewise_sizes(2048), 8 + 14 + 8 + 8 + 4);
        assert_eq!(piecewise_sizes(3), 0);
    }

    fn serving(query: &str) -> crate::estimate::Serving {
        let (s, errors) = scenario_from_query(query);
        assert!(errors.is_empty(), "{errors:?}");
        estimate(&s).unwrap().serving.unwrap()
    }

    fn setting(serving: &crate::estimate::Serving, key: &str) -> String {
        serving
            .settings
            .iter()
            .find(|s| s.key == key)
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn each_release_reserves_by_its_own_heuristic() {
        let base = "runtime=sglang&mode=inference&model=llama-3.1-8b&gpu=h100-80";
        let fraction = |release: &str| {
            setting(
                &serving(&format!("{base}&sglang-version={release}")),
                "mem-fraction-static",
            )
        };
        // 512 + 1.5 × 8192 + 2 × 256 + 128 MB on the H100's 81559 MiB; since 0.5.10 also
        // 58 piecewise prefill graphs × 8 MB; before 0.5.3, (9.5 + 1/2) GiB.
        assert_eq!(fraction("0.5.9"), "0.835");
        assert_eq!(fraction("latest"), "0.83");
        assert_eq!(fraction("0.4.10"), "0.874");
        assert_eq!(fraction("0.4.8"), "0.874");
        // Before 0.4.8, by parallel size: TP1's 0.88 on the H100's 80 GiB.
        assert_eq!(fraction("0.4.7"), "0.88");
        let tp4 = |release: &str, gpu: &str| {
            let (s, _) = scenario_from_query(&format!(
                "runtime=sglang&mode=inference&model=llama-3.1-8b&gpu={gpu}&gpus=4&sharding=tensor&sglang-version={release}"
            ));
            let e = estimate(&s).unwrap();
            let fraction = setting(e.serving.as_ref().unwrap(), "mem-fraction-static");
            (
                fraction,
                e.notes.iter().any(|n| n.contains("not modelled here")),
            )
        };
        assert_eq!(tp4("0.4.3", "l4"), ("0.85".to_string(), false));
        // From 0.4.6 the table stops at 80 GiB; an H200's default is not modelled.
        assert!(tp4("0.4.6", "h200").1);
        // 0.4.0 has the same table (0.4.1, 0.4.2 and 0.4.3 too); 0.3.6's TP8 figure differs.
        assert_eq!(tp4("0.4.0", "l4"), ("0.85".to_string(), false));
        assert!(tp4("0.3.6", "l4").1);
    }

    #[test]
    fn a_vision_tower_lowers_the_default_fraction_from_0_4_10() {
        let base = "runtime=sglang&mode=inference&model=gemma-3-27b&gpu=h100-80";
        let fraction = |release: &str| -> f64 {
            setting(
                &serving(&format!("{base}&sglang-version={release}")),
                "mem-fraction-static",
            )
            .parse()
            .unwrap()
        };
        // Gemma 3's SigLIP: 27 layers of 1152, 1.42 times ViT-L/14's 24 of 1024: × 0.95 × 0.958.
        let factor =
            0.95 * (1.0 - 0.1 * (27.0 * 1152.0_f64.powi(2) / (24.0 * 1024.0_f64.powi(2)) - 1.0));
        assert_eq!(fraction("0.4.9"), 0.874);
        assert!((fraction("0.4.10") - 0.874 * factor).abs() < 5e-5);
        // Qwen's towers name their depth `depth`, which SGLang reads as 24 layers.
        let mut qwen = crate::model::Vision {
            layers: 27,
            hidden: 1152,
            merge: 2,
            ..Default::default()
        };
        let as_24 = 0.95 * (1.0 - 0.1 * (1152.0_f64.powi(2) / 1024.0_f64.powi(2) - 1.0));
        assert!((super::vlm_factor(&qwen) - as_24).abs() < 1e-12);
        qwen.hidden = 4096;
        assert!((super::vlm_factor(&qwen) - 0.95 * 0.8).abs() < 1e-12);
    }

    #[test]
    fn mtp_speculative_decoding_reserves_by_release() {
        let base = "runtime=sglang&mode=inference&model=deepseek-v3&gpu=h100-80";
        let fraction = |release: &str, mtp: bool| -> f64 {
            setting(
                &serving(&format!("{base}&sglang-version={release}&mtp={mtp}")),
                "mem-fraction-static",
            )
            .parse()
            .unwrap()
        };
        // The H100's 81559 MiB: 2048 MB more in the table (0.4.8) and the formula (0.5.9); from
        // 0.5.10, 4096 MB after the floor, but with piecewise prefill graphs off, so without
        // their 1536 MB for an MLA model; none from 0.5.14.
        let less = |release: &str| fraction(release, false) - fraction(release, true);
        assert!((less("0.4.8") - 2048.0 / 81559.0).abs() < 0.0006);
        assert!((less("0.5.9") - 2048.0 / 81559.0).abs() < 0.0006);
        assert!((less("0.5.10") - (4096.0 - 1536.0) / 81559.0).abs() < 0.0006);
        assert_eq!(less("0.5.14"), 0.0);
    }

    #[test]
    fn max_total_tokens_caps_the_pool() {
        let base = "runtime=sglang&mode=inference&model=llama-3.1-8b&gpu=h100-80";
        let capped = serving(&format!("{base}&max-total-tokens=100000"));
        assert_eq!(capped.kv_tokens, 100000);
        // Llama 3.1 8B: 32 layers × 8 KV heads × 128 × 2 (K and V) × 2 B per token.
        assert_eq!(capped.kv_pool_bytes.0, 100000 * 32 * 8 * 128 * 2 * 2);
        assert!(serving(base).kv_tokens > 100000);
    }
}
