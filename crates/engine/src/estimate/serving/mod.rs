//! Serving runtimes: how each sizes what it holds on the GPU (a preallocated KV pool from a share
//! of the GPU, per-device buffers, arrays grown as the sequence does), and what that holds in
//! tokens and concurrent requests. Each runtime's rules are one module, cited from its source and
//! registered in `rules.rs`; the cache's shape per GPU is `layout`.

mod launch;
mod layout;
mod llamacpp;
mod llamacpp_fit;
mod llamacpp_rules;
mod mlx;
mod rules;
mod sglang;
mod transformers;
mod vllm;
mod vllm_encoder;
mod vllm_graphs;
mod vllm_kv_memory;
mod vllm_rules;

use super::component::ComponentId;
use super::stack::{Component, Stack};
use crate::dtype::Dtype;
use crate::gpu_catalogue::{Unified, DRIVER_RESERVE_FALLBACK};
use crate::runtime::Runtime;
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Sharding;
use crate::units::{Bytes, GIB};
use serde::{Deserialize, Serialize};

pub use launch::{
    parse as parse_launch_command, quote as shell_quote, split as shell_split, Launch, ModelSource,
    Parsed as ParsedLaunch,
};
use launch::{Flag, Parallel, When, Write};
pub(crate) use layout::KvLayout;
pub(crate) use llamacpp::device_blocks;
pub use llamacpp::{
    DMMV_2024, LLAMA_CPP_CUDA, LLAMA_CPP_CUDA_2024, LLAMA_CPP_CUDA_2024_MMVQ,
    LLAMA_CPP_CUDA_PRE_AMPERE, LLAMA_CPP_METAL, LLAMA_CPP_METAL_2024, LLAMA_CPP_ROCM,
    LLAMA_CPP_ROCM_WAVE64, LLAMA_CPP_VULKAN, MMVQ_2024,
};
pub use mlx::MLX_METAL;
pub use rules::{
    Build, Facts, LoggedFigure, PoolWords, Reads, Requests, RuntimeRules, RuntimeSpeed,
};
pub use vllm::{FUSED_MOE_CHUNK_TOKENS, SAMPLER_BYTES_PER_LOGIT};
pub use vllm_graphs::{
    GRAPH_BYTES_PER_DENSE_LAYER, GRAPH_BYTES_PER_MOE_LAYER, GRAPH_BYTES_PER_SHARED_EXPERT,
    GRAPH_POOL_BYTES,
};

/// What a serving runtime will do with the GPU: its KV pool, what the pool holds, and whether the
/// runtime starts at all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Serving {
    pub runtime: Runtime,
    /// The KV pool on one GPU.
    pub kv_pool_bytes: Bytes,
    /// The pool in tokens, as the runtime logs it (vLLM "GPU KV cache size", SGLang
    /// `max_total_num_tokens`).
    pub kv_tokens: u64,
    /// KV blocks, where the runtime has blocks (vLLM `num_gpu_blocks`).
    pub kv_blocks: Option<u64>,
    /// Requests of `context_tokens` each that the pool holds at once.
    pub max_concurrency: f64,
    /// The request length the concurrency is counted at (`max-model-len`).
    pub context_tokens: u32,
    pub starts: bool,
    /// Why it will not start, in the runtime's own words where it prints them.
    pub reason: Option<String>,
    /// What it holds in system RAM.
    #[serde(flatten)]
    pub host: Host,
    /// The settings the runtime applies, defaults filled in, and where each came from.
    pub settings: Vec<Setting>,
    /// The command that starts the runtime as planned, with only the flags that differ from its
    /// defaults; the model is the preset's Hugging Face repo where the weights are its format,
    /// else a placeholder (`MODEL`, `MODEL.gguf`). `None` for a total-only or memory-only
    /// estimate, and where a setting has no flag (a note says which).
    #[serde(default)]
    pub command: Option<String>,
}

impl Serving {
    /// The launch command for another source of the weights (a `--hf` repo, a local file), from
    /// the settings this estimate applied; `None` for a total-only estimate.
    pub fn launch_command(&self, s: &Scenario, model: &ModelSource) -> Option<String> {
        if self.settings.is_empty() {
            return None;
        }
        launch_command(self.runtime, s, &self.settings, model)?.ok()
    }
}

/// The command that starts `runtime` as the scenario plans, from the scenario and the settings
/// it applied, writing only the flags whose value differs from the runtime's defaults (its
/// `Facts::launch` table); `None` without a command, an error naming a setting it has no flag
/// for. Not a [`RuntimeRules`] method, whose table every build links: a build that writes no
/// command links no writer.
fn launch_command(
    runtime: Runtime,
    s: &Scenario,
    settings: &[Setting],
    model: &ModelSource,
) -> Option<Result<String, String>> {
    let table = runtime.rules().facts().launch?;
    Some(launch::write(table, s, settings, model))
}

/// What a serving runtime holds in system RAM: llama.cpp's CPU buffers and layers; nothing
/// ([`Host::NONE`]) for a runtime that keeps the model on the GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// The whole; `None` where it holds none of note.
    #[serde(rename = "host_bytes")]
    pub bytes: Option<Bytes>,
    /// What makes up `bytes`, with the same ids as the GPU's components (`weights`, `kv_cache`,
    /// `compute_buffer`, `output_buffer`).
    #[serde(rename = "host_components")]
    pub components: Vec<Component>,
    /// The weights there that every token passes through (llama.cpp's CPU layers, and its
    /// output layer when not offloaded; `token_embd` is only looked up), which the speed model
    /// reads at the host's bandwidth.
    #[serde(rename = "host_layer_bytes")]
    pub layer_bytes: Bytes,
    /// The layers whose every node runs on the CPU (llama.cpp's layers below `-ngl`): the speed
    /// model charges them the CPU's time per layer rather than the GPU's.
    #[serde(rename = "host_layers", default)]
    pub layers: u32,
}

impl Host {
    pub const NONE: Host = Host {
        bytes: None,
        components: Vec::new(),
        layer_bytes: Bytes::ZERO,
        layers: 0,
    };
}

/// One runtime setting as applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    /// Where an unset value came from ("vLLM's default on GPUs of ≥ 70 GiB"); `None` when given.
    pub default_from: Option<String>,
}

/// The settings a runtime applied, written out only when the estimate explains itself: the
/// solver's inner loop reads none of them, and their text is most of a total-only estimate's
/// allocations.
pub(super) struct Settings {
    explain: bool,
    list: Vec<Setting>,
}

impl Settings {
    pub fn new(explain: bool) -> Settings {
        Settings {
            explain,
            list: Vec::new(),
        }
    }

    /// A setting the user may leave unset: the given value, or else `default`, recorded with
    /// where that default came from; returns the value applied.
    pub fn given_or<T: ToString + Copy>(
        &mut self,
        key: &str,
        given: Option<T>,
        (default, default_from): (T, &str),
    ) -> T {
        let value = given.unwrap_or(default);
        self.push(key, value, given.is_some(), default_from);
        value
    }

    /// A setting as given, or (when `given` is false) its default and where that came from.
    pub fn push(&mut self, key: &str, value: impl ToString, given: bool, default_from: &str) {
        if self.explain {
            self.list.push(Setting {
                key: key.to_string(),
                value: value.to_string(),
                default_from: (!given).then(|| default_from.to_string()),
            });
        }
    }

    /// A setting that has no default to explain.
    pub fn given(&mut self, key: &str, value: impl ToString) {
        self.push(key, value, true, "");
    }

    pub fn into_list(self) -> Vec<Setting> {
        self.list
    }
}

/// How the model is spread over the GPUs, and what CUDA reports on each.
pub(crate) struct Deployment {
    /// Tensor-parallel ranks (`--tensor-parallel-size`).
    pub tp: u32,
    /// Pipeline stages (`--pipeline-parallel-size`).
    pub pp: u32,
    /// `cudaMemGetInfo`'s total: nvidia-smi's less the driver's reserve.
    pub cuda_total: Bytes,
    pub cuda_total_measured: bool,
    /// Tensor-parallel ranks joined by an NVSwitch (NCCL allocates NVLS buffers).
    pub nvswitch: bool,
}

impl Deployment {
    pub fn new(s: &Scenario, r: &Resolved) -> Deployment {
        let gpus = s.gpus.max(1);
        let (tp, pp) = match s.sharding {
            Sharding::Tensor | Sharding::Expert => (gpus, 1),
            Sharding::Pipeline => (1, gpus),
            _ => (1, 1),
        };
        let no_cuda = s.vram.is_none()
            && r.gpu.is_some_and(|g| {
                matches!(
                    g.unified,
                    Some(Unified::AppleWorkingSet | Unified::CarveOut { .. })
                )
            });
        // Metal reports the working set as the device's memory: llama.cpp logs "using device
        // Metal (Apple M4) - 10922 MiB free" on a 16 GB Mac (ggml-org/ci, ggml-100-mac-m4).
        // WSL2's CUDA reports nvidia-smi's total, with no driver reserve taken off: vLLM logs
        // "Free memory on device cuda:0 (30.12/31.84 GiB)" on an RTX 5090 of 32607 MiB
        // (Alex8791-cyber/cognithor PR #318), torch 11.94 GiB on an RTX 5070 of 12227 MiB
        // (calibration/runtime-gpus.csv). NVIDIA's CUDA on WSL guide does not say so.
        let (cuda_total, cuda_total_measured) = match (s.vram, r.gpu) {
            _ if no_cuda || s.wsl2 => (r.capacity, true),
            (None, Some(gpu)) => gpu.cuda_total(),
            _ => (r.capacity.saturating_sub(DRIVER_RESERVE_FALLBACK), false),
        };
        Deployment {
            tp,
            pp,
            cuda_total,
            cuda_total_measured,
            nvswitch: r.gpu.is_some_and(|g| g.nvswitch) && s.vram.is_none(),
        }
    }

    fn note(&self) -> Option<String> {
        (!self.cuda_total_measured).then(|| {
            format!(
                "CUDA's total for this card is not in the catalogue: taken as nvidia-smi's total less {} MiB, the median driver reserve of the cards where both are published.",
                DRIVER_RESERVE_FALLBACK.0 / crate::units::MIB
            )
        })
    }
}

/// Memory outside PyTorch's allocator that a serving worker adds while it profiles: cuBLAS and
/// attention workspaces and NCCL's buffers. vLLM 0.19.0 logs "non-torch forward increase
/// memory" of 0.24–0.26 GiB at TP1 on H100 (llm-d-planner's sweep), 0.21 GiB at TP4 on PCIe
/// L40S; on NVSwitch systems NCCL's NVLink SHARP buffers raise it to 2.06–2.13 GiB per GPU at
/// TP2/TP4 (the same sweep; calibration/runtime-logs.csv).
pub const NON_TORCH_SINGLE_GPU: Bytes = Bytes(GIB / 4);
pub const NON_TORCH_TENSOR_PARALLEL: Bytes = Bytes(21 * GIB / 10);

/// Pushes the non-torch component under `label` and returns its bytes.
fn push_non_torch(s: &Scenario, d: &Deployment, label: &str, stack: &mut Stack) -> Bytes {
    let nvls = d.tp > 1 && d.nvswitch;
    let bytes = if nvls {
        NON_TORCH_TENSOR_PARALLEL
    } else {
        NON_TORCH_SINGLE_GPU
    };
    let mut formula = stack
        .fx()
        .num(bytes.as_f64())
        .size(s.units)
        .unit(format_args!("per GPU at TP{}", d.tp));
    if nvls {
        formula = formula.remark("on an NVSwitch (NCCL NVLS buffers)");
    }
    stack.push(ComponentId::NonTorch, label, formula);
    bytes
}

/// Pushes a serving runtime's components and returns what it does with the pool; `None` for
/// transformers, whose cache the detailed method sizes per sequence.
pub(in crate::estimate) fn push(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    notes: &mut Vec<String>,
) -> Option<Serving> {
    if s.gguf_weights.is_some() && !s.runtime.rules().facts().reads_gguf_weights {
        notes.push(format!("gguf-weights (a .gguf file's tensors) is read only under llama.cpp; {} sizes the weights from the shape and the weight format.", s.runtime));
    }
    let d = Deployment::new(s, r);
    let note = d.note();
    let serving = s.runtime.rules().push(Build {
        s,
        r,
        d,
        stack: &mut *stack,
        notes: &mut *notes,
    })?;
    notes.extend(note);
    Some(serving)
}

/// Writes the command that launches the runtime as the scenario sets it, or a note saying why
/// none is written. Apart from [`push`], so that a build that shows no command links no writer.
pub(super) fn write_launch_command(
    s: &Scenario,
    r: &Resolved,
    serving: &mut Serving,
    notes: &mut Vec<String>,
) {
    let model = ModelSource::of_scenario(s, r);
    match launch_command(s.runtime, s, &serving.settings, &model) {
        Some(Ok(command)) => serving.command = Some(command),
        Some(Err(why)) => notes.push(format!("No launch command is written: {why}.")),
        None => {}
    }
}

/// The RoPE cos/sin tables vLLM and SGLang build while they load the model, whole on every GPU:
/// `(positions + second table's positions) × rotated width` elements of `element` bytes, cos and
/// sin side by side (`_compute_cos_sin_cache`: `torch.cat((cos, sin), dim=-1)` over
/// `rotary_dim / 2` frequencies; `RotaryEmbeddingBase.__init__` registers `cos_sin_cache` as a
/// buffer; vLLM casts it to the model's dtype, SGLang keeps it in fp32 on CUDA, "for numerical
/// stability"). The table covers
/// every position the model can reach, whatever `max-model-len` is: Llama 4 Scout's 10M
/// positions are 2.7 GB on each GPU.
fn push_rope_tables(r: &Resolved, element: Dtype, stack: &mut Stack) {
    let fx = stack.fx();
    let rope = r.arch.rope;
    let positions = fx.sym("rope-positions", f64::from(rope.positions))
        + fx.sym("rope-local-positions", f64::from(rope.local_positions));
    let tables = positions
        * fx.sym("rotated width", f64::from(r.arch.rope_width()))
        * fx.num(element.bytes()).unit(format_args!("B ({element})"));
    stack.push(ComponentId::RopeTables, "RoPE cos/sin tables", tables);
}

/// Says so when a model loaded with RoPE tables has none counted.
fn note_unknown_rope_tables(s: &Scenario, r: &Resolved, notes: &mut Vec<String>) {
    if r.arch.rope.positions == 0 {
        notes.push(format!("No RoPE table is counted (rope-positions 0). If the model rotates its queries and keys, {} keeps a cos/sin table of max_position_embeddings (× a linear scaling's factor) positions on every GPU with the weights: set rope-positions, or paste its config.json.", s.runtime));
    }
}

/// GiB to two decimals, as vLLM and SGLang print them.
fn gib2(bytes: f64) -> String {
    format!("{:.2}", bytes / GIB as f64)
}
