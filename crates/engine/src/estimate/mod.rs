//! The two estimation methods and the per-GPU budget verdict.
//!
//! `lesson` is chapter 62's formula, term for term. `detailed` counts each tensor a PyTorch
//! training or inference step keeps alive at its peak, one module per component. Both produce
//! the same [`Estimate`]: components with their formula and the numbers substituted in, a per-GPU
//! total, and a verdict against the usable budget.

mod activations;
mod budget;
mod component;
mod detailed;
mod devices;
mod formula;
mod inference;
mod lesson;
pub(crate) mod links;
mod logits;
mod overhead;
mod parallel;
mod per_token;
mod serving;
pub(crate) mod speed;
mod stack;
mod train_speed;
mod train_traffic;
mod training;
mod weights;

pub use budget::{Budget, Verdict};
pub use component::{ComponentId, Lifetime, LogFigure, Slack};
pub use devices::DevicePlan;
pub use lesson::{LESSON_ACTIVATION_FACTOR, LESSON_CHECKPOINT_FACTOR, LESSON_OVERHEAD_BYTES};
pub use logits::LOSS_CHUNK_TOKENS;
pub use overhead::{FRAGMENTATION_OF_STATIC, FRAGMENTATION_OF_TRANSIENT};
pub use serving::{
    parse_launch_command, shell_quote, shell_split, Build, Host, Launch, LoggedFigure, ModelSource,
    ParsedLaunch, PoolWords, Reads, Requests, RuntimeRules, Serving, Setting, DMMV_2024,
    FUSED_MOE_CHUNK_TOKENS, GRAPH_BYTES_PER_DENSE_LAYER, GRAPH_BYTES_PER_MOE_LAYER,
    GRAPH_BYTES_PER_SHARED_EXPERT, GRAPH_POOL_BYTES, LLAMA_CPP_CUDA, LLAMA_CPP_CUDA_2024,
    LLAMA_CPP_CUDA_2024_MMVQ, LLAMA_CPP_CUDA_PRE_AMPERE, LLAMA_CPP_METAL, LLAMA_CPP_METAL_2024,
    LLAMA_CPP_ROCM, LLAMA_CPP_ROCM_WAVE64, LLAMA_CPP_VULKAN, MLX_METAL, MMVQ_2024,
    NON_TORCH_SINGLE_GPU, NON_TORCH_TENSOR_PARALLEL, SAMPLER_BYTES_PER_LOGIT,
};
pub use speed::{
    Band, Bound, Clocked, DecodeParts, Efficiency, SmCeiling, Speed, TensorPath,
    HOST_BANDWIDTH_DEFAULT_BYTES_PER_S, SPEED_SPREAD,
};
pub use stack::Component;
pub use train_speed::{
    TrainSpeed, GPUS_PER_NODE, NETWORK_DEFAULT_BITS_PER_S, TRAIN_AMPERE, TRAIN_HOPPER,
    UTILISATION_SPREAD,
};
pub use weights::{NF4_BLOCK, NF4_DOUBLE_QUANT_BLOCK};

use crate::dtype::{Dtype, QuantKernel};
use crate::gpu_catalogue::Unified;
use crate::model::{Family, LayerCounts};
use crate::scenario::{FieldError, Resolved, Scenario};
use crate::sharding::Offload;
use crate::units::Bytes;
use crate::workload::{KeptScores, KvCache, Method, Mode, SequenceParallel};
use serde::{Deserialize, Serialize};
use stack::{Stack, Text};

/// Version 2 added `active_params` and `architecture`, and the components `kv_cache_sliding`,
/// `recurrent_state` and `vision`; version 3 added `speed`.
pub const ESTIMATE_SCHEMA: &str = "vramfit.estimate/3";

/// What the estimate read the model as.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArchitectureSummary {
    pub family: Family,
    pub layers: LayerCounts,
}

/// How far above the detailed method published bitsandbytes QLoRA runs measured: the median of
/// measured ÷ predicted − 1 over calibration/'s `qlora` rows (LitGPT), which tests/accuracy.rs
/// recomputes. Every QLoRA estimate says so until the gap is explained.
pub const QLORA_MEASURED_ABOVE_PCT: f64 = 11.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub schema: String,
    pub scenario: Scenario,
    pub method: Method,
    pub params: f64,
    /// The parameters one token uses, for a mixture of experts; `None` for a dense model.
    pub active_params: Option<f64>,
    pub architecture: ArchitectureSummary,
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
    /// A serving runtime's pool, tokens and concurrency; `None` for transformers and training.
    pub serving: Option<Serving>,
    /// Inference's prefill and decode speed, or a training step's time, on a catalogue GPU whose
    /// datasheet is known.
    pub speed: Option<Timing>,
    pub gpu_name: String,
    pub gpus: u32,
    pub notes: Vec<String>,
    /// Each of unlike GPUs' plan (`devices`), in device order; the fields above are the worst's.
    /// Empty when the GPUs are alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DevicePlan>,
}

impl Estimate {
    pub fn component(&self, id: ComponentId) -> Option<&Component> {
        self.components.iter().find(|c| c.id == id)
    }

    pub fn bytes_of(&self, id: ComponentId) -> Bytes {
        self.component(id).map(|c| c.bytes).unwrap_or(Bytes::ZERO)
    }

    /// What `torch.cuda.max_memory_allocated()` would report: no context, no allocator slack,
    /// no paged optimizer state (CUDA managed memory, which PyTorch's allocator never sees).
    pub fn allocated_bytes(&self) -> Bytes {
        self.reserved_bytes()
            .saturating_sub(self.bytes_of(ComponentId::Fragmentation))
    }

    /// What `torch.cuda.max_memory_reserved()` would report: allocator slack but no context and
    /// no paged optimizer state.
    pub fn reserved_bytes(&self) -> Bytes {
        self.total_bytes
            .saturating_sub(self.bytes_of(ComponentId::CudaContext))
            .saturating_sub(self.bytes_of(ComponentId::PagedOptimizer))
    }
}

/// Builds the estimate, or every invalid field.
pub fn estimate(scenario: &Scenario) -> Result<Estimate, Vec<FieldError>> {
    let planned = devices::plan(scenario)?;
    Ok(estimate_resolved(scenario, planned, Text::Shown, FULL))
}

/// The estimate without its components' formula text (each `formula` is empty), its speed or a
/// serving runtime's launch command, at less cost: what a view that shows the memory answer, the
/// stack and the notes needs. A build that calls only this links no speed model, no command
/// writer, and writes no formula text.
pub fn estimate_memory(scenario: &Scenario) -> Result<Estimate, Vec<FieldError>> {
    let planned = devices::plan(scenario)?;
    Ok(estimate_resolved(
        scenario,
        planned,
        Text::Labels,
        Additions {
            speed: |_, _, _, _, _| None,
            command: |_, _, _, _| {},
        },
    ))
}

/// What a full estimate adds to the memory answer, each a function so that a build that never
/// asks for them links neither: the speed, timed from the stack (a note says why where it cannot
/// be), and a serving runtime's launch command.
#[derive(Clone, Copy)]
struct Additions {
    speed: SpeedOf,
    command: fn(&Scenario, &Resolved, &mut Serving, &mut Vec<String>),
}

type SpeedOf =
    fn(&Scenario, &Resolved, &Stack, Option<&Serving>, &mut Vec<String>) -> Option<Timing>;

const FULL: Additions = Additions {
    speed: with_speed,
    command: serving::write_launch_command,
};

/// The speed an estimate states: inference's figures, or a training step's. Untagged, so the
/// JSON's `speed` holds one struct's keys or the other's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Timing {
    Inference(Speed),
    Training(TrainSpeed),
}

impl Timing {
    pub fn inference(&self) -> Option<&Speed> {
        match self {
            Timing::Inference(speed) => Some(speed),
            Timing::Training(_) => None,
        }
    }

    pub fn training(&self) -> Option<&TrainSpeed> {
        match self {
            Timing::Training(speed) => Some(speed),
            Timing::Inference(_) => None,
        }
    }
}

fn with_speed(
    s: &Scenario,
    r: &Resolved,
    stack: &Stack,
    serving: Option<&Serving>,
    notes: &mut Vec<String>,
) -> Option<Timing> {
    let timed = if s.mode.is_training() {
        train_speed::speed(s, r, &stack.components).map(Timing::Training)
    } else {
        speed::speed(s, r, &stack.components, serving).map(Timing::Inference)
    };
    timed.map_err(|why| notes.extend(why)).ok()
}

/// The estimate with each component's `formula` as plain arithmetic (numbers in the text's form
/// and operators, no words), which evaluates to the component's bytes within the numbers'
/// rounding: what tests check the text against.
#[doc(hidden)]
pub fn arithmetic(scenario: &Scenario) -> Result<Estimate, Vec<FieldError>> {
    let planned = devices::plan(scenario)?;
    Ok(estimate_resolved(scenario, planned, Text::Arithmetic, FULL))
}

/// The stack without labels or formula text, and the budget it is judged against: what the
/// solver's inner loop and the quick-reference tables need, at a fraction of an estimate's cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    pub components: Vec<Component>,
    pub total: Bytes,
    pub budget: Budget,
    pub serving: Option<Serving>,
}

impl Breakdown {
    pub fn bytes_of(&self, id: ComponentId) -> Bytes {
        self.components
            .iter()
            .find(|c| c.id == id)
            .map_or(Bytes::ZERO, |c| c.bytes)
    }

    pub fn verdict(&self) -> Verdict {
        verdict(&self.budget, self.total, self.serving.as_ref())
    }
}

/// The budget's verdict, except that a runtime that will not start is out of memory, a
/// preallocated pool is never "tight": it fills its share by design, and on a unified device
/// what the runtime keeps in CPU buffers must fit beside the GPU's share in the same memory.
fn verdict(budget: &Budget, total: Bytes, serving: Option<&Serving>) -> Verdict {
    let host = serving.and_then(|s| s.host.bytes).unwrap_or(Bytes::ZERO);
    match (budget.verdict(total), serving) {
        (_, Some(s)) if !s.starts => Verdict::Oom,
        _ if budget
            .shared_usable
            .is_some_and(|shared| total.saturating_add(host) > shared) =>
        {
            Verdict::Oom
        }
        (Verdict::Tight, Some(s)) if s.runtime.rules().facts().pools_kv() => Verdict::Fits,
        (verdict, _) => verdict,
    }
}

/// The stack on one GPU without building any formula text.
pub fn breakdown(scenario: &Scenario) -> Result<Breakdown, Vec<FieldError>> {
    let resolved = devices::plan(scenario)?.resolved;
    let mut notes = Vec::new();
    let (stack, _, serving) = build_stack(scenario, &resolved, Text::None, &mut notes);
    Ok(Breakdown {
        total: stack.total(),
        components: stack.components,
        budget: Budget::new(scenario, &resolved),
        serving,
    })
}

/// The speed alone, without formula text: what the serving plan's speed searches read.
pub fn speed_of(scenario: &Scenario) -> Result<Option<Speed>, Vec<FieldError>> {
    let resolved = devices::plan(scenario)?.resolved;
    let mut notes = Vec::new();
    let (stack, _, serving) = build_stack(scenario, &resolved, Text::None, &mut notes);
    Ok(speed::speed(scenario, &resolved, &stack.components, serving.as_ref()).ok())
}

/// A decode step's parts as the speed model times it (`None` without a speed): what fitting a
/// runtime's constants to measured step times reads.
pub fn decode_parts_of(scenario: &Scenario) -> Option<DecodeParts> {
    let resolved = devices::plan(scenario).ok()?.resolved;
    let mut notes = Vec::new();
    let (stack, _, serving) = build_stack(scenario, &resolved, Text::None, &mut notes);
    speed::decode_parts(scenario, &resolved, &stack.components, serving.as_ref())
}

/// The training utilisation at which the scenario's optimizer step takes `step_s` (`None` where
/// it is not timed or no utilisation up to 100% is that fast): what a utilisation constant is the
/// median of.
pub fn implied_utilisation(scenario: &Scenario, step_s: f64) -> Option<f64> {
    let resolved = devices::plan(scenario).ok()?.resolved;
    let mut notes = Vec::new();
    let (stack, _, _) = build_stack(scenario, &resolved, Text::None, &mut notes);
    train_speed::implied_utilisation(scenario, &resolved, &stack.components, step_s)
}

/// The total on one GPU, without formula text.
pub fn total_bytes(scenario: &Scenario) -> Result<Bytes, Vec<FieldError>> {
    breakdown(scenario).map(|b| b.total)
}

/// Every component of the stack, the trainable parameter count, and a serving runtime's pool.
fn build_stack(
    s: &Scenario,
    r: &Resolved,
    text: Text,
    notes: &mut Vec<String>,
) -> (Stack, f64, Option<Serving>) {
    let mut stack = Stack::new(text);
    let (trainable, serving) = match s.method {
        Method::Lesson => (lesson::lesson(s, r, &mut stack), None),
        Method::Detailed => detailed::detailed(s, r, &mut stack, notes),
    };
    for c in &s.custom {
        let given = stack.fx().num(c.bytes.as_f64()).words("given").exact_size();
        stack.push(ComponentId::custom(&c.name), &c.name, given);
    }
    (stack, trainable, serving)
}

/// `prompt`, `cache`, `max-cache-len` and `kept-scores` describe transformers' inference; set
/// elsewhere they are named as unused rather than ignored silently.
fn unused_cache_settings(s: &Scenario) -> Option<String> {
    let set: Vec<&str> = [
        // A serving runtime's speed reads the prompt, so only training leaves it unused.
        ("prompt", s.prompt.is_some() && s.mode.is_training()),
        ("cache", s.cache != KvCache::Dynamic),
        ("max-cache-len", s.max_cache_len.is_some()),
        ("kept-scores", s.kept_scores != KeptScores::None),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if set.is_empty() {
        return None;
    }
    let why = if s.mode.is_training() {
        "training processes all seq tokens, keeps no cache and samples nothing".to_string()
    } else if s.runtime.rules().facts().serves {
        format!(
            "{} keeps its own cache and runs its own sampling",
            s.runtime
        )
    } else if s.max_cache_len.is_some() && s.cache != KvCache::Static {
        return Some(format!(
            "max-cache-len sizes only cache=static; the {} cache holds seq tokens.",
            s.cache
        ));
    } else {
        return None;
    };
    Some(format!("{} not used: {why}.", set.join(", ")))
}

/// What the estimate assumed about the model or knows it misses: QLoRA's measured gap, a shape
/// taken from a preset, the MLA cache's form.
fn note_how_the_model_is_read(s: &Scenario, r: &Resolved, notes: &mut Vec<String>) {
    if s.method == Method::Detailed && s.mode == Mode::Qlora {
        notes.push(format!(
            "Published QLoRA runs (LitGPT with bitsandbytes) used a median {QLORA_MEASURED_ABOVE_PCT}% \
             more than this method predicts; keep the safety margin."
        ));
    }
    if r.shape_assumed {
        let taken: Vec<&str> = [
            ("layers", s.layers.is_none()),
            ("hidden", s.hidden.is_none()),
            ("heads", s.heads.is_none()),
            ("kv-heads", s.kv_heads.is_none()),
            ("ffn", s.ffn.is_none()),
            ("vocab", s.vocab.is_none()),
        ]
        .into_iter()
        .filter_map(|(key, unset)| unset.then_some(key))
        .collect();
        if !taken.is_empty() {
            notes.push(format!(
                "Architecture: {} taken from {}, a dense Llama-style model; name a preset or paste a config.json for any other kind.",
                taken.join(", "),
                r.shape_from.name
            ));
        }
    }
    if r.arch.mla.is_mla() && s.mode == Mode::Inference {
        let cache = s.mla_cache;
        notes.push(format!(
            "MLA cache: {}, {}. Set mla-cache to change it.",
            cache,
            crate::wire::Wire::help(cache)
        ));
    }
}

/// Settings given that this run does not read, each named rather than ignored silently.
fn note_unused_settings(s: &Scenario, r: &Resolved, notes: &mut Vec<String>) {
    notes.extend(unused_cache_settings(s));
    if s.sequence_parallel != SequenceParallel::Dtensor
        && s.mode.is_training()
        && parallel::Split::new(s).tensor <= 1.0
    {
        notes.push(format!(
            "sequence-parallel={} not used: no tensor parallelism (tp=1 and sharding={}).",
            s.sequence_parallel, s.sharding
        ));
    }
    if s.capacity_factor.is_some() && !r.arch.moe.is_moe() {
        notes.push("capacity-factor not used: the model has no routed experts.".to_string());
    }
    if s.quant_kernel != QuantKernel::Auto
        && (s.mode.is_training()
            || s.runtime.rules().facts().serves
            || !matches!(r.weights, Dtype::Int8 | Dtype::Fp8))
    {
        notes.push(format!(
            "quant-kernel not used: it picks the matmul for int8 or fp8 weights in transformers' inference, and this run {}.",
            if s.mode.is_training() {
                "trains".to_string()
            } else if s.runtime.rules().facts().serves {
                format!("runs on {}", s.runtime)
            } else {
                format!("keeps {} weights", r.weights)
            }
        ));
    }
}

/// On a unified device: where the GPU's share comes from, and that what is offloaded to the CPU
/// stays in the same memory. `wired-limit` elsewhere is named as unused.
fn note_unified_memory(
    s: &Scenario,
    r: &Resolved,
    serving: Option<&Serving>,
    notes: &mut Vec<String>,
) {
    let gpu = r.gpu.filter(|_| r.custom_vram.is_none());
    let unified = gpu.and_then(|g| g.unified.map(|rule| (g, rule)));
    let apple = matches!(unified, Some((_, Unified::AppleWorkingSet)));
    if s.wired_limit.is_some() && !apple {
        notes.push("wired-limit not used: it sets a Mac GPU's working-set limit (iogpu.wired_limit_mb), and this run is not on a catalogue Mac.".to_string());
    }
    let Some((gpu, rule)) = unified else { return };
    let units = s.units;
    let machine = gpu.machine_memory().display(units);
    notes.push(match rule {
        Unified::AppleWorkingSet if s.wired_limit.is_some() => format!("Unified memory: the GPU may use {} of this Mac's {machine}, the wired-limit given.", r.capacity.display(units)),
        Unified::AppleWorkingSet => format!("Unified memory: the GPU may use {} of this Mac's {machine}, Metal's recommended working set (macOS 13-15; set wired-limit to the figure your Mac reports or sets). The context setting is CUDA's; no Metal figure is modelled.", r.capacity.display(units)),
        Unified::SharedPool { .. } => format!("Unified memory: the CPU and GPU share {}; put what the OS and other programs hold in reserved.", r.capacity.display(units)),
        Unified::CarveOut { .. } => format!("Unified memory: the GPU may use the {} the firmware sets aside of {machine} (the largest its maker allows); set vram to your system's figure.", r.capacity.display(units)),
    });
    if s.offload != Offload::None {
        notes.push(format!("offload={}: on unified memory the offloaded state stays in the same {machine}; it leaves the GPU's share but not the machine.", s.offload));
    }
    if let Some(host) = serving
        .and_then(|v| v.host.bytes)
        .filter(|b| *b > Bytes::ZERO)
    {
        notes.push(format!("{} in CPU buffers stay in the same memory: with the GPU's share they must fit in {machine} less reserved and margin, and the verdict counts them there.", host.display(units)));
    }
}

fn estimate_resolved(
    s: &Scenario,
    planned: devices::Planned,
    text: Text,
    add: Additions,
) -> Estimate {
    let r = &planned.resolved;
    let mut notes: Vec<String> = planned.note.into_iter().collect();
    let (stack, trainable, mut serving) = build_stack(s, r, text, &mut notes);
    if let Some(serving) = serving.as_mut() {
        (add.command)(s, r, serving, &mut notes);
    }
    note_how_the_model_is_read(s, r, &mut notes);
    note_unused_settings(s, r, &mut notes);
    note_unified_memory(s, r, serving.as_ref(), &mut notes);
    let total = stack.total();
    let budget = Budget::new(s, r);
    let speed = (add.speed)(s, r, &stack, serving.as_ref(), &mut notes);
    Estimate {
        schema: ESTIMATE_SCHEMA.to_string(),
        scenario: s.clone(),
        method: s.method,
        params: r.params,
        active_params: r
            .arch
            .active_param_count()
            .map(|active| active * r.params / r.shape_params.max(1.0)),
        architecture: ArchitectureSummary {
            family: r.arch.family(),
            layers: r.arch.layer_counts(),
        },
        trainable_params: trainable,
        components: stack.components,
        total_bytes: total,
        capacity_bytes: budget.capacity,
        usable_bytes: budget.usable,
        headroom_bytes: budget.headroom(total),
        tight_threshold_bytes: budget.tight_threshold,
        verdict: verdict(&budget, total, serving.as_ref()),
        serving,
        speed,
        gpu_name: r.gpu_name(),
        gpus: s.gpus,
        notes,
        devices: planned.devices,
    }
}
