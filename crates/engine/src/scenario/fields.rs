//! The field table: one entry per scenario field. From it come the `Scenario` struct and its
//! defaults, the JSON keys (serde's kebab-case), [`KEYS`], [`FIELDS`] (how each key is read,
//! written and offered), the CLI's flags and help, and the page's form. Adding a field is one
//! entry here plus the formula that reads it.

use super::codec::*;
use crate::dtype::{Dtype, Int4Layout, Nf4Kernel, QuantKernel, QuantScope};
use crate::lora::LoraTargets;
use crate::model::{CheckpointWeights, FileWeights};
use crate::optimizer::{Optimizer, OptimizerStep};
use crate::runtime::{
    AttentionBackend, CacheType, ContextLength, CudagraphMode, GpuBackend, KqMask, LlamaBuild,
    LogitRows, OffloadOutput, Release, Runtime,
};
use crate::sharding::{Offload, Sharding};
use crate::units::{Bytes, Units, MIB};
use crate::wire::Choice;
use crate::workload::{
    Attention, Checkpointing, Float8, Head, KbitPrep, KeptScores, KvCache, LogitsDtype, Loss,
    Method, MlaCache, Mode, SequenceParallel,
};
use serde_json::Value as Json;
use vramfit_gguf::FileType;

/// Memory the CUDA driver context, cuBLAS/cuDNN handles and PyTorch's kernel images take before any
/// tensor exists. With CUDA ≥ 11.7 lazy module loading (the default since PyTorch 2.0) this is about
/// 0.4–0.6 GiB on A100/H100-class cards; the public set's 2021 V100 row (M084, eager loading) shows
/// 1343 MiB. 512 MiB is the lazy-loading figure.
pub const DEFAULT_CUDA_CONTEXT: Bytes = Bytes(512 * MIB);

/// Kept free on purpose: the VRAM auto-config guide's default 1024 MiB.
pub const DEFAULT_MARGIN: Bytes = Bytes(1024 * MIB);

/// Where a field sits in the page's form: a fieldset, and inside it an optional folded part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Model,
    Architecture,
    Experts,
    Layers,
    Method,
    Precision,
    MorePrecision,
    Batch,
    Dropout,
    Budget,
    /// Settings vLLM and SGLang share.
    Serving,
    Vllm,
    Sglang,
    LlamaCpp,
    Mlx,
    Extras,
}

impl Group {
    /// In the order the page shows them.
    pub const ALL: &'static [Group] = &[
        Group::Model,
        Group::Architecture,
        Group::Experts,
        Group::Layers,
        Group::Method,
        Group::Serving,
        Group::Vllm,
        Group::Sglang,
        Group::LlamaCpp,
        Group::Mlx,
        Group::Precision,
        Group::MorePrecision,
        Group::Batch,
        Group::Dropout,
        Group::Budget,
        Group::Extras,
    ];

    /// The fieldset's legend.
    pub fn legend(self) -> &'static str {
        match self {
            Group::Model | Group::Architecture | Group::Experts | Group::Layers => "Model",
            Group::Method => "Method",
            Group::Precision | Group::MorePrecision => "Precision & optimizer",
            Group::Batch | Group::Dropout => "Batch & sequence",
            Group::Budget => "GPU & budget",
            Group::Serving | Group::Vllm | Group::Sglang | Group::LlamaCpp | Group::Mlx => {
                "Serving runtime"
            }
            Group::Extras => "Extras",
        }
    }

    /// Whether the group's settings mean anything for this runtime: a runtime's own settings
    /// are shown only when it is chosen.
    pub fn applies_to(self, runtime: Runtime) -> bool {
        match (self, Runtime::owning(self)) {
            (Group::Serving, _) => runtime.rules().facts().pools_kv(),
            (_, Some(owner)) => owner == runtime,
            (_, None) => true,
        }
    }

    /// Whether the group's settings can matter in this mode: a serving runtime's own settings
    /// only for inference, the one mode a serving runtime runs.
    fn applies_in(self, mode: Mode) -> bool {
        self.applies_to(Runtime::Transformers) || mode == Mode::Inference
    }

    /// The summary of the folded part this group is, if it is one.
    pub fn folded(self) -> Option<&'static str> {
        match self {
            Group::Architecture => Some("Architecture"),
            Group::Experts => Some("Mixture of experts"),
            Group::Layers => Some("Attention layers & vision"),
            Group::MorePrecision => Some("More precision"),
            Group::Dropout => Some("Dropout"),
            _ => None,
        }
    }
}

/// The modes a field means something for. Outside them the estimate does not read it (a
/// test changes every field outside its modes and finds the estimate unchanged), so the page
/// hides it and keeps its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modes {
    All,
    /// Full fine-tuning, LoRA and QLoRA: what backpropagation and the optimizer keep.
    Training,
    /// LoRA and QLoRA: the adapters.
    Adapters,
    /// Inference: how the model is run and what its cache holds.
    Inference,
}

impl Modes {
    pub fn includes(self, mode: Mode) -> bool {
        match self {
            Modes::All => true,
            Modes::Training => mode.is_training(),
            Modes::Adapters => mode.is_adapter(),
            Modes::Inference => mode == Mode::Inference,
        }
    }

    /// What `--help` adds to a field that is not for every mode.
    fn note(self) -> Option<&'static str> {
        match self {
            Modes::All => None,
            Modes::Training => Some("training only"),
            Modes::Adapters => Some("lora and qlora only"),
            Modes::Inference => Some("inference only"),
        }
    }
}

/// One scenario field: its key, label, help, group, and how it is read and written.
pub struct Field {
    /// The URL query key, the CLI flag and the JSON key.
    pub key: &'static str,
    /// The page's label.
    pub label: &'static str,
    /// One line for `--help` and the page's tooltip.
    pub help: &'static str,
    pub group: Group,
    /// The modes it applies to: `in Training` after the group in the table, else all.
    pub modes: Modes,
    slot: &'static dyn Access,
}

/// A field's value seen through its codec. One implementation per codec type ([`Slot`]), so
/// each operation is compiled once per kind of value rather than once per field.
trait Access: Sync {
    fn control(&self) -> Control;
    fn syntax(&self) -> Option<&'static str>;
    fn placeholder(&self) -> String;
    fn set(&self, scenario: &mut Scenario, text: &str) -> Result<(), String>;
    fn edit(&self, scenario: &mut Scenario, text: &str) -> Result<(), String>;
    fn get(&self, scenario: &Scenario) -> String;
    fn items(&self, scenario: &Scenario) -> Option<Vec<String>>;
}

/// A field's value as JSON, in a table of its own ([`JSON_SLOTS`]): the page's first module
/// reads and writes no JSON, and a method of [`Access`] would be linked into it through the
/// vtable whether called or not.
pub(super) trait JsonAccess: Sync {
    fn write_json(&self, scenario: &Scenario) -> Json;
    fn read_json(&self, scenario: &mut Scenario, json: &Json) -> Result<(), String>;
}

/// A codec and where its value lives in a [`Scenario`].
struct Slot<C: Codec> {
    codec: C,
    get: fn(&Scenario) -> &C::Value,
    get_mut: fn(&mut Scenario) -> &mut C::Value,
}

impl<C: Codec> Access for Slot<C> {
    fn control(&self) -> Control {
        self.codec.control()
    }

    fn syntax(&self) -> Option<&'static str> {
        self.codec.syntax()
    }

    fn placeholder(&self) -> String {
        self.codec.placeholder((self.get)(&Scenario::default()))
    }

    fn set(&self, scenario: &mut Scenario, text: &str) -> Result<(), String> {
        match self.codec.append((self.get_mut)(scenario), text) {
            Some(appended) => appended,
            None => self.edit(scenario, text),
        }
    }

    fn edit(&self, scenario: &mut Scenario, text: &str) -> Result<(), String> {
        *(self.get_mut)(scenario) = self.codec.parse(text)?;
        Ok(())
    }

    fn get(&self, scenario: &Scenario) -> String {
        self.codec.format((self.get)(scenario))
    }

    fn items(&self, scenario: &Scenario) -> Option<Vec<String>> {
        self.codec.items((self.get)(scenario))
    }
}

impl<C: Codec> JsonAccess for Slot<C> {
    fn write_json(&self, scenario: &Scenario) -> Json {
        self.codec.write_json((self.get)(scenario))
    }

    fn read_json(&self, scenario: &mut Scenario, json: &Json) -> Result<(), String> {
        match self.codec.read_json(json) {
            Some(value) => {
                *(self.get_mut)(scenario) = value?;
                Ok(())
            }
            None => Access::edit(self, scenario, &self.codec.json_text(json)?),
        }
    }
}

impl Field {
    /// Whether the field means anything for a scenario of this mode and runtime: the rule the
    /// page's form shows and hides fields by.
    pub fn applies_to(&self, mode: Mode, runtime: Runtime) -> bool {
        self.modes.includes(mode) && self.group.applies_to(runtime) && self.group.applies_in(mode)
    }

    pub fn control(&self) -> Control {
        self.slot.control()
    }

    /// What a value looks like, where the help alone does not say ("24GiB, 16376MiB…").
    pub fn syntax(&self) -> Option<&'static str> {
        self.slot.syntax()
    }

    /// The grey text of an empty text box: the default, or what an unset value means.
    pub fn placeholder(&self) -> String {
        self.slot.placeholder()
    }

    /// Applies one URL pair or CLI flag (a list field appends). On error nothing changes.
    pub fn set(&self, scenario: &mut Scenario, text: &str) -> Result<(), String> {
        self.slot.set(scenario, text)
    }

    /// Replaces the whole value from the page's text box (a list field takes `a; b`).
    pub fn edit(&self, scenario: &mut Scenario, text: &str) -> Result<(), String> {
        self.slot.edit(scenario, text)
    }

    /// The value as the page's text box shows it; empty when unset.
    pub fn get(&self, scenario: &Scenario) -> String {
        self.slot.get(scenario)
    }

    /// The value as URL pairs: one, or one per list item.
    pub fn wire(&self, scenario: &Scenario) -> Vec<String> {
        self.slot
            .items(scenario)
            .unwrap_or_else(|| vec![self.get(scenario)])
    }

    /// The help line with the modes it is for and the accepted values or their syntax: what
    /// `--help` prints.
    pub fn full_help(&self) -> String {
        let listed = match self.control() {
            Control::Choices(choices) => Some(
                choices
                    .iter()
                    .filter(|c| !c.value.is_empty())
                    .map(Choice::describe)
                    .collect::<Vec<_>>()
                    .join(" | "),
            ),
            Control::Text | Control::Catalogue(_) => self.syntax().map(str::to_string),
        };
        let help = match self.modes.note() {
            Some(note) => format!("{} ({note})", self.help),
            None => self.help.to_string(),
        };
        match listed {
            Some(values) => format!("{help}: {values}"),
            None => help,
        }
    }
}

/// A field's [`Modes`]: the one named after `in`, else all.
macro_rules! modes {
    () => {
        Modes::All
    };
    ($modes:ident) => {
        Modes::$modes
    };
}

/// Declares the scenario: each entry is a struct field with its default, then its key, codec,
/// page group (and `in` the modes it applies to, where not all), label and help.
macro_rules! scenario_fields {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident: $ty:ty = $default:expr,
            $key:literal, $codec:expr, $group:ident $(in $modes:ident)?, $label:literal, $help:literal;
    )+) => {
        /// Everything a person describes: model, method, precisions, batch, GPU, budget. Its
        /// JSON form (`scenario/json.rs`) comes from this table too.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Scenario {
            $($(#[doc = $doc])* pub $name: $ty,)+
        }

        impl Default for Scenario {
            fn default() -> Scenario {
                Scenario { $($name: $default,)+ }
            }
        }

        /// Every key, in the order the CLI's help and the URL list them.
        pub const KEYS: &[&str] = &[$($key),+];

        /// Every field, in [`KEYS`] order.
        pub static FIELDS: &[Field] = &[$(Field {
            key: $key,
            label: $label,
            help: $help,
            group: Group::$group,
            modes: modes!($($modes)?),
            slot: &Slot {
                codec: $codec,
                get: |s| &s.$name,
                get_mut: |s| &mut s.$name,
            },
        }),+];

        /// Each field's JSON form, in [`KEYS`] order (see [`JsonAccess`]).
        pub(super) static JSON_SLOTS: &[&dyn JsonAccess] = &[$(&Slot {
            codec: $codec,
            get: |s: &Scenario| &s.$name,
            get_mut: |s: &mut Scenario| &mut s.$name,
        }),+];
    };
}

const FROM_PRESET: &str = "from preset";

scenario_fields! {
    /// A preset id (`vramfit list models`). Architecture fields below override its values.
    model: Option<String> = None,
        "model", Optional { inner: ModelId, none: "custom / by size" }, Model,
        "Preset", "preset id (see `vramfit list models`)";
    /// A bare parameter count, for when only the size is known.
    params: Option<f64> = None,
        "params", Optional { inner: ParamCount, none: "from the preset's shape" }, Model,
        "Parameters", "parameter count (overrides the preset's)";
    /// A safetensors checkpoint's exact tensor bytes by part, read from its headers; unset, the
    /// weights are sized from the shape and the weight format.
    checkpoint_weights: Option<CheckpointWeights> = None,
        "checkpoint-weights", Optional { inner: CheckpointTensors, none: "sized from the shape" }, Architecture,
        "Checkpoint tensors", "a checkpoint's tensor bytes by part, set by --hf or --model-dir (unset: sized from the shape)";
    layers: Option<u32> = None,
        "layers", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "Layers", "transformer blocks";
    hidden: Option<u32> = None,
        "hidden", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "Hidden size", "hidden size";
    heads: Option<u32> = None,
        "heads", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "Attention heads", "attention (query) heads";
    kv_heads: Option<u32> = None,
        "kv-heads", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "KV heads (GQA)", "key/value heads (fewer than heads: GQA)";
    head_dim: Option<u32> = None,
        "head-dim", Optional { inner: Count, none: "hidden / heads" }, Architecture,
        "Head dim", "per-head size (default hidden / heads)";
    ffn: Option<u32> = None,
        "ffn", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "FFN (intermediate)", "MLP intermediate size";
    vocab: Option<u32> = None,
        "vocab", Optional { inner: Count, none: FROM_PRESET }, Architecture,
        "Vocabulary", "vocabulary size";
    tied: Option<bool> = None,
        "tied", Optional { inner: Flag, none: FROM_PRESET }, Architecture,
        "Tied embeddings", "true if the LM head shares the embedding table";
    gated: Option<bool> = None,
        "gated", Optional { inner: Flag, none: FROM_PRESET }, Architecture,
        "Gated MLP", "true for a gated MLP (SwiGLU/GeGLU: gate, up, down)";
    experts: Option<u32> = None,
        "experts", Optional { inner: Whole, none: FROM_PRESET }, Experts,
        "Routed experts", "routed experts per MoE layer (0: a dense model)";
    experts_per_token: Option<u32> = None,
        "experts-per-token", Optional { inner: Whole, none: FROM_PRESET }, Experts,
        "Experts per token", "experts each token is routed to (top-k)";
    expert_ffn: Option<u32> = None,
        "expert-ffn", Optional { inner: Whole, none: FROM_PRESET }, Experts,
        "Expert FFN", "each routed expert's intermediate size";
    shared_ffn: Option<u32> = None,
        "shared-ffn", Optional { inner: Whole, none: FROM_PRESET }, Experts,
        "Shared-expert FFN", "the shared experts' combined intermediate size (0: none)";
    dense_layers: Option<u32> = None,
        "dense-layers", Optional { inner: Whole, none: FROM_PRESET }, Experts,
        "Dense layers", "layers with a dense MLP instead of experts";
    /// Token-dropping routers (GShard, Switch, DeepSpeed-MoE) pad every expert's batch to
    /// `capacity = factor × k × tokens / experts`; dropless routing (transformers, Megatron-Core's
    /// default, vLLM) sends exactly `k × tokens`.
    capacity_factor: Option<f64> = None,
        "capacity-factor", Optional { inner: FACTOR, none: "dropless" }, Experts,
        "Capacity factor", "experts padded to factor × k·tokens/E (GShard, DeepSpeed-MoE; unset: dropless)";
    q_lora_rank: Option<u32> = None,
        "q-lora-rank", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "MLA query rank", "multi-head latent attention: the query's low rank (0: a full query)";
    kv_lora_rank: Option<u32> = None,
        "kv-lora-rank", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "MLA KV rank", "multi-head latent attention: the key/value latent's width (0: no MLA)";
    rope_head_dim: Option<u32> = None,
        "rope-head-dim", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "MLA RoPE dim", "multi-head latent attention: the shared RoPE key's width";
    v_head_dim: Option<u32> = None,
        "v-head-dim", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "MLA value dim", "multi-head latent attention: each head's value width";
    /// Qwen3-Next's and Qwen3.5's gated attention: q_proj also computes a sigmoid gate on every
    /// attention output channel.
    attention_gate: Option<bool> = None,
        "attention-gate", Optional { inner: Flag, none: FROM_PRESET }, Layers,
        "Attention output gate", "true if q_proj also computes a sigmoid gate on each attention output (Qwen3-Next, Qwen3.5: q_proj twice as wide)";
    /// Phi-3's fused `qkv_proj`, which llama.cpp splits into views.
    fused_qkv: Option<bool> = None,
        "fused-qkv", Optional { inner: Flag, none: FROM_PRESET }, Layers,
        "Fused QKV projection", "true if queries, keys and values come from one fused projection (Phi-3's qkv_proj, GGUF attn_qkv), which llama.cpp splits into views";
    sliding_window: Option<u32> = None,
        "sliding-window", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Sliding window", "tokens a sliding-window layer attends to and caches (0: none)";
    sliding_layers: Option<u32> = None,
        "sliding-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Sliding-window layers", "how many layers use the sliding window";
    vision_layers: Option<u32> = None,
        "vision-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision layers", "vision tower blocks (0: a text-only model)";
    vision_hidden: Option<u32> = None,
        "vision-hidden", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision hidden size", "vision tower width";
    vision_ffn: Option<u32> = None,
        "vision-ffn", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision FFN", "vision tower MLP size";
    vision_patch: Option<u32> = None,
        "vision-patch", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision patch", "vision tower patch side in pixels";
    vision_image: Option<u32> = None,
        "vision-image", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision image size", "image side in pixels the vision tower takes (image_size)";
    vision_merge: Option<u32> = None,
        "vision-merge", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Vision patch merge", "patches a side the projector merges into one token (spatial_merge_size; 0: a plain projection)";
    recurrent_layers: Option<u32> = None,
        "recurrent-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent layers", "Mamba or linear-attention layers (fixed state, no KV cache)";
    recurrent_heads: Option<u32> = None,
        "recurrent-heads", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent heads", "recurrent value heads (mamba_num_heads, linear_num_value_heads)";
    recurrent_head_dim: Option<u32> = None,
        "recurrent-head-dim", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent head dim", "each recurrent value head's width";
    recurrent_state: Option<u32> = None,
        "recurrent-state", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent state", "the state's key width (ssm_state_size, linear_key_head_dim)";
    recurrent_groups: Option<u32> = None,
        "recurrent-groups", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent groups", "key groups (n_groups, linear_num_key_heads)";
    recurrent_conv: Option<u32> = None,
        "recurrent-conv", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Recurrent conv", "causal convolution width (conv_kernel)";
    /// The recurrent state's format, as the checkpoint declares it or as a runtime flag sets it
    /// (vLLM's `--mamba-ssm-cache-dtype`, SGLang's `--mamba-ssm-dtype`).
    ssm_dtype: Option<Dtype> = None,
        "ssm-dtype", Optional { inner: pick::<Dtype>(), none: "auto" }, Layers in Inference,
        "Recurrent state format", "the recurrent state's format (auto: the checkpoint's mamba_ssm_dtype, else the runtime's: vLLM the model's dtype, others fp32)";
    no_attention_layers: Option<u32> = None,
        "no-attention-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Layers without attention", "layers with no attention (recurrent, MLP-only or no-op blocks)";
    no_mlp_layers: Option<u32> = None,
        "no-mlp-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "Layers without MLP", "layers with no MLP (mixer-only or no-op blocks)";
    mtp_layers: Option<u32> = None,
        "mtp-layers", Optional { inner: Whole, none: FROM_PRESET }, Layers,
        "MTP modules", "multi-token-prediction modules in the checkpoint (num_nextn_predict_layers)";
    /// The RoPE cos/sin table vLLM and SGLang precompute for every position the model can reach,
    /// whatever `max-model-len` is.
    rope_positions: Option<u32> = None,
        "rope-positions", Optional { inner: Positions, none: FROM_PRESET }, Layers in Inference,
        "RoPE table positions", "positions in the RoPE cos/sin table vLLM and SGLang precompute (max_position_embeddings, × a linear or dynamic scaling's factor; YaRN: original positions × factor; 0: no RoPE)";
    rope_local_positions: Option<u32> = None,
        "rope-local-positions", Optional { inner: Positions, none: FROM_PRESET }, Layers in Inference,
        "Second RoPE table", "positions in a second RoPE table (Gemma 3's sliding layers: max_position_embeddings; 0: none)";
    rotary_dim: Option<u32> = None,
        "rotary-dim", Optional { inner: Whole, none: FROM_PRESET }, Layers in Inference,
        "Rotary dim", "the width RoPE rotates in each head when less than the head (partial_rotary_factor × head-dim; 0: the whole head, or MLA's rope-head-dim)";
    /// Load the multi-token-prediction modules, as MTP speculative decoding (vLLM's and SGLang's
    /// `--speculative-config` with the model's own MTP) does; off, they stay on disk.
    mtp: bool = false,
        "mtp", Flag, Layers,
        "Load MTP modules", "true to load the multi-token-prediction modules (speculative decoding)";
    /// How an MLA model's cache is kept: serving engines keep the latent, transformers' eager
    /// path the per-head keys and values.
    mla_cache: MlaCache = MlaCache::Latent,
        "mla-cache", pick::<MlaCache>(), Layers in Inference,
        "MLA cache", "what an MLA model caches per token";
    head: Head = Head::Lm,
        "head", pick::<Head>(), Architecture,
        "Head", "what sits on the last hidden state";
    mode: Mode = Mode::Full,
        "mode", pick::<Mode>(), Method,
        "Mode", "what the GPU runs";
    /// What runs an inference scenario; training always runs in PyTorch.
    runtime: Runtime = Runtime::Transformers,
        "runtime", pick::<Runtime>(), Method in Inference,
        "Runtime", "what serves the model";
    /// vLLM's `--max-model-len`, SGLang's `--context-length`: the longest request, prompt and
    /// output together, that the pool must hold. Unset: `seq`; `auto`: vLLM's longest that fits.
    max_model_len: Option<ContextLength> = None,
        "max-model-len", ContextLengthCodec { takes_zero: false }, Serving,
        "Max model length", "longest request in tokens, prompt + output (vLLM --max-model-len, SGLang --context-length); auto: the longest vLLM's pool holds";
    /// vLLM's `--max-num-seqs`, SGLang's `--max-running-requests`.
    max_num_seqs: Option<u32> = None,
        "max-num-seqs", Optional { inner: Count, none: "the runtime's default for this GPU" }, Serving,
        "Max sequences", "requests batched in one step (vLLM --max-num-seqs, SGLang --max-running-requests)";
    /// vLLM's `--max-num-batched-tokens`, SGLang's `--chunked-prefill-size`: the tokens one
    /// forward processes, which sizes the activations.
    max_num_batched_tokens: Option<u32> = None,
        "max-num-batched-tokens", Optional { inner: Count, none: "the runtime's default for this GPU" }, Serving,
        "Max batched tokens", "tokens one step processes (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size)";
    /// The vLLM release whose memory rules apply (`estimate/serving/vllm.rs` lists each rule
    /// with the release that introduced it).
    vllm_version: Release = Release::Latest,
        "vllm-version", ReleaseCodec, Vllm,
        "vLLM version", "the vLLM release whose memory rules apply (latest: the newest checked, 0.33)";
    /// Unset: the release's default, 0.92 since 0.20 and 0.9 before.
    gpu_memory_utilization: Option<f64> = None,
        "gpu-memory-utilization", Optional { inner: FRACTION, none: "the release's default (0.92; 0.9 before 0.20)" }, Vllm,
        "GPU memory utilization", "share of the GPU's CUDA total vLLM may take (--gpu-memory-utilization)";
    /// `--kv-cache-memory-bytes` (since 0.10.2): the KV pool's bytes on each GPU, in place of
    /// what the utilization budget leaves; the utilization then only checks the free memory at
    /// start.
    kv_cache_memory: Option<Bytes> = None,
        "kv-cache-memory", Optional { inner: Capacity, none: "what gpu-memory-utilization leaves" }, Vllm,
        "KV cache memory", "the KV pool's size per GPU, in place of the utilization budget (--kv-cache-memory-bytes, since 0.10.2)";
    block_size: Option<u32> = None,
        "block-size", Optional { inner: Count, none: "16, or the MLA backend's" }, Vllm,
        "Block size", "tokens per KV block (--block-size)";
    /// `--enforce-eager`: no CUDA graphs are captured.
    enforce_eager: bool = false,
        "enforce-eager", Flag, Vllm,
        "Enforce eager", "true to run without CUDA graphs (--enforce-eager)";
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`: vLLM ≥ 0.20 profiles the graphs before sizing
    /// the pool and takes their estimate out of the budget; earlier releases capture them
    /// outside. Unset: the release's default.
    profile_cudagraphs: Option<bool> = None,
        "profile-cudagraphs", Optional { inner: Flag, none: "the release's default (true since 0.20)" }, Vllm,
        "Graphs in the budget", "true when vLLM takes its CUDA-graph estimate out of gpu-memory-utilization (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS; unset: true since 0.20, false before)";
    /// `VLLM_USE_V2_MODEL_RUNNER`: Model Runner V2 (vllm/v1/worker/gpu/), whose profile run's
    /// sampler processes no logits and whose CUDA graphs stay outside the budget before 0.29.
    /// Unset: the release's default for the model.
    model_runner_v2: Option<bool> = None,
        "model-runner-v2", Optional { inner: Flag, none: "the release's default (dense models since 0.25, every model since 0.29)" }, Vllm,
        "Model Runner V2", "true when vLLM runs Model Runner V2 (VLLM_USE_V2_MODEL_RUNNER; unset: the release's default, for models without experts or recurrent layers since 0.25 and every model since 0.29)";
    /// `--compilation-config.cudagraph_mode`.
    cudagraph_mode: CudagraphMode = CudagraphMode::FullAndPiecewise,
        "cudagraph-mode", pick::<CudagraphMode>(), Vllm,
        "CUDA graph mode", "which CUDA graphs vLLM captures (--compilation-config.cudagraph_mode)";
    /// `--max-cudagraph-capture-size`: the largest batch, in tokens, a graph is captured for.
    max_cudagraph_capture_size: Option<u32> = None,
        "max-cudagraph-capture-size", Optional { inner: Count, none: "min(2 × max-num-seqs, 512)" }, Vllm,
        "Max CUDA graph size", "largest batch in tokens a CUDA graph is captured for (--max-cudagraph-capture-size; gpt-oss raises it to 1024)";
    attention_backend: AttentionBackend = AttentionBackend::Auto,
        "attention-backend", pick::<AttentionBackend>(), Vllm,
        "Attention backend", "vLLM's attention backend (--attention-backend), which sizes the full graphs' buffers";
    /// `--speculative-config`'s `num_speculative_tokens`. A hybrid model's recurrent layers keep
    /// as many more state blocks per request, and with `mtp` the MTP modules' attention layers
    /// join the KV cache.
    speculative_tokens: u32 = 0,
        "speculative-tokens", Whole, Vllm,
        "Speculative tokens", "tokens the drafter proposes per step (--speculative-config num_speculative_tokens; with mtp, the model's own MTP modules draft; 0: no speculative decoding)";
    /// `--enable-prefix-caching`, which for a hybrid model keeps its recurrent state per block
    /// (mamba_cache_mode 'align'). Unset: vLLM's default, on for hybrid models from 0.28.
    prefix_caching: Option<bool> = None,
        "prefix-caching", Optional { inner: Flag, none: "vLLM's default (on for hybrid models from 0.28, off before)" }, Vllm,
        "Prefix caching", "true for --enable-prefix-caching; a hybrid model then keeps two recurrent state blocks per request, not one (mamba_cache_mode 'align'; unset: vLLM's default, on for hybrid models from 0.28, off before)";
    /// The SGLang release whose memory rules apply (`estimate/serving/sglang.rs`).
    sglang_version: Release = Release::Latest,
        "sglang-version", ReleaseCodec, Sglang,
        "SGLang version", "the SGLang release whose memory rules apply (latest: the newest checked, 0.5.23)";
    mem_fraction_static: Option<f64> = None,
        "mem-fraction-static", Optional { inner: FRACTION, none: "SGLang's default for this GPU" }, Sglang,
        "Mem fraction static", "share of free memory for weights and the KV pool (--mem-fraction-static)";
    /// `--max-total-tokens`: a cap on the pool's tokens below what the fraction leaves.
    max_total_tokens: Option<u32> = None,
        "max-total-tokens", Optional { inner: Count, none: "what the fraction leaves" }, Sglang,
        "Max total tokens", "the most tokens SGLang's KV pool holds, below what mem-fraction-static leaves (--max-total-tokens)";
    /// The llama.cpp build whose defaults apply (`estimate/serving/llamacpp_rules.rs` lists each
    /// change with the first build that has it).
    llama_cpp_build: LlamaBuild = LlamaBuild::Latest,
        "llama-cpp-build", LlamaBuildCodec, LlamaCpp,
        "llama.cpp build", "the llama.cpp build (version: N, release bN) whose defaults apply: --fit, the output layer's place in -ngl, the logit rows (latest: the newest checked)";
    /// The GGUF file type llama.cpp loads; its per-tensor mix is llama-quantize's.
    quant: FileType = FileType::Q4_K_M,
        "quant", GgufFileType, LlamaCpp,
        "GGUF quant", "the GGUF file type (llama-quantize's recipe)";
    /// A GGUF file's exact tensor bytes by block, read from its header; unset, the file is sized
    /// from `quant` by llama-quantize's rules.
    gguf_weights: Option<FileWeights> = None,
        "gguf-weights", Optional { inner: GgufTensors, none: "sized from the quant" }, LlamaCpp,
        "GGUF tensors", "a .gguf file's tensor bytes by block, set by --gguf FILE or a dropped file (unset: sized from quant)";
    /// `-ngl`: the output layer and the last `n − 1` blocks go to the GPU (`offload-output`).
    n_gpu_layers: Option<u32> = None,
        "n-gpu-layers", Optional { inner: Whole, none: "all" }, LlamaCpp,
        "GPU layers (-ngl)", "layers offloaded to the GPU, the output layer counted first (-ngl)";
    /// Unset: the build's (first since PR #18148).
    offload_output: Option<OffloadOutput> = None,
        "offload-output", Optional { inner: pick::<OffloadOutput>(), none: "the build's default (first since PR #18148)" }, LlamaCpp,
        "Output layer offloaded", "whether -ngl offloads the output layer first (builds since PR #18148, December 2025) or last (older builds); unset: the build's";
    /// `-c`: the cache's cells over every slot, or the model's trained context.
    ctx_size: Option<ContextLength> = None,
        "ctx-size", ContextLengthCodec { takes_zero: true }, LlamaCpp,
        "Context (-c)", "context in tokens, over every slot (-c, --ctx-size); 0: the trained context; auto: no -c (--fit may shrink it)";
    /// `-np`: slots, each with `ctx-size / parallel` tokens.
    parallel: u32 = 1,
        "parallel", Count, LlamaCpp,
        "Slots (-np)", "requests served at once, each with ctx-size / parallel tokens (-np)";
    /// `--kv-unified`: one KV stream that every slot shares, so attention reads every cell.
    kv_unified: bool = false,
        "kv-unified", Flag, LlamaCpp,
        "Unified KV (-kvu)", "true when the slots share one KV buffer (--kv-unified; llama-server turns it on when -np is left to auto)";
    cache_type_k: CacheType = CacheType::F16,
        "cache-type-k", pick::<CacheType>(), LlamaCpp,
        "K cache type", "key cache type (--cache-type-k)";
    cache_type_v: CacheType = CacheType::F16,
        "cache-type-v", pick::<CacheType>(), LlamaCpp,
        "V cache type", "value cache type (--cache-type-v; quantized needs flash attention)";
    flash_attn: bool = true,
        "flash-attn", Flag, LlamaCpp,
        "Flash attention", "true for flash attention (-fa; llama.cpp's auto turns it on on CUDA)";
    ubatch_size: u32 = 512,
        "ubatch-size", Count, LlamaCpp,
        "Micro-batch (-ub)", "tokens one compute step processes (-ub), which sizes the compute buffer";
    /// The logits the compute buffer reserves, by the program that loads the model.
    /// Unset: llama-server's at the build (per slot since PR #23861).
    logit_rows: Option<LogitRows> = None,
        "logit-rows", Optional { inner: pick::<LogitRows>(), none: "llama-server's at the build (slots since PR #23861)" }, LlamaCpp,
        "Logit rows", "logits the compute buffer reserves: per slot (llama-server since PR #23861, 2026) or per ubatch token (library, llama-cli, ollama, older servers); unset: llama-server's at the build";
    /// The attention mask's type under flash attention (`KqMask`).
    /// Unset: the build's (f16 since PR #23764, b9410).
    kq_mask: Option<KqMask> = None,
        "kq-mask", Optional { inner: pick::<KqMask>(), none: "the build's (f16 since PR #23764, b9410)" }, LlamaCpp,
        "KQ mask (flash attention)", "the attention mask's type with flash attention: f16 from the host (builds since b9410, May 2026) or f32, cast on the GPU (older builds); unset: the build's";
    gpu_backend: GpuBackend = GpuBackend::Cuda,
        "gpu-backend", pick::<GpuBackend>(), LlamaCpp,
        "GPU backend", "the ggml backend on the GPU (CUDA, also ROCm, or Vulkan)";
    /// `--tensor-split`: each GPU's proportion of the offloaded layers; unset, llama.cpp splits
    /// by each device's free memory (`llama_model::load_tensors`).
    tensor_split: Option<Vec<f64>> = None,
        "tensor-split", Optional { inner: Proportions, none: "by free memory" }, LlamaCpp,
        "Tensor split (-ts)", "each GPU's proportion of the offloaded layers, in device order (--tensor-split 3,1; unset: by free memory)";
    /// `--n-cpu-moe`: the routed experts of the first N layers stay in system RAM.
    n_cpu_moe: u32 = 0,
        "n-cpu-moe", Whole, LlamaCpp,
        "Experts on CPU (layers)", "layers whose routed experts stay in system RAM (--n-cpu-moe)";
    /// `--fit`: llama.cpp lowers what the user left unset (`-ngl`, the experts' placement) until
    /// its buffers leave a margin free on the GPU. Unset: the build's, on since PR #16653.
    fit: Option<bool> = None,
        "fit", Optional { inner: Flag, none: "the build's default (on since PR #16653)" }, LlamaCpp,
        "Fit to free memory (-fit)", "true when llama.cpp moves layers or experts to system RAM until 1 GiB stays free, when -ngl and --n-cpu-moe are left unset (--fit; unset: the build's, on since PR #16653, December 2025)";
    /// The mlx-lm release whose rules apply (`estimate/serving/mlx.rs`).
    mlx_lm_version: Release = Release::Latest,
        "mlx-lm-version", ReleaseCodec, Mlx,
        "mlx-lm version", "the mlx-lm release whose rules apply: before 0.27 the prompt's last forward held its logits (latest: the newest checked, 0.31.3)";
    /// `mlx_lm.convert -q --q-bits`: the affine quantization's bits per weight; unset, the
    /// model's float format (`estimate/serving/mlx.rs`).
    mlx_bits: Option<u32> = None,
        "mlx-bits", Optional { inner: Count, none: "unquantized (the model's float format)" }, Mlx,
        "MLX bits", "bits per weight of an MLX affine-quantized model (mlx_lm.convert -q --q-bits: 2, 3, 4, 5, 6 or 8; unset: unquantized)";
    /// `--q-group-size`: weights sharing one scale and bias.
    mlx_group_size: u32 = 64,
        "mlx-group-size", Count, Mlx,
        "MLX group size", "weights per scale and bias of an MLX quantized model (mlx_lm.convert --q-group-size: 32, 64 or 128)";
    /// `prefill_step_size`: the prompt tokens one forward processes.
    prefill_step_size: u32 = 2048,
        "prefill-step-size", Count, Mlx,
        "Prefill step (MLX)", "prompt tokens mlx-lm processes per forward (--prefill-step-size; 2048 since mlx-lm 0.22, 512 before)";
    /// `--max-kv-size`: a rotating cache of this many tokens.
    max_kv_size: Option<u32> = None,
        "max-kv-size", Optional { inner: Count, none: "unbounded" }, Mlx,
        "Max KV size (MLX)", "tokens mlx-lm's rotating KV cache keeps (--max-kv-size; unset: the cache grows with the sequence)";
    /// `--kv-bits`: the KV cache quantized from `quantized-kv-start` on.
    kv_bits: Option<u32> = None,
        "kv-bits", Optional { inner: Count, none: "the model's float format" }, Mlx,
        "KV bits (MLX)", "bits of mlx-lm's quantized KV cache (--kv-bits: 2, 3, 4, 5, 6 or 8; unset: not quantized)";
    kv_group_size: u32 = 64,
        "kv-group-size", Count, Mlx,
        "KV group size (MLX)", "values per scale and bias of the quantized KV cache (--kv-group-size)";
    /// `--quantized-kv-start`: the cache's tokens from which it is quantized.
    quantized_kv_start: u32 = 5000,
        "quantized-kv-start", Whole, Mlx,
        "Quantized KV start (MLX)", "tokens in the cache from which mlx-lm quantizes it (--quantized-kv-start; 5000 in mlx_lm.generate, 0 in the Python generate_step)";
    /// What the speed model reads offloaded layers at; unset, a desktop's dual-channel DDR5.
    host_bandwidth: Option<f64> = None,
        "host-bandwidth", Optional { inner: BANDWIDTH_GB_S, none: "89.6 GB/s (dual-channel DDR5-5600)" }, Budget in Inference,
        "System RAM bandwidth (GB/s)", "bandwidth of the system RAM that offloaded layers are read from, for the speed estimate";
    /// Each node's network to the others, which a training exchange past one node crosses.
    network: Option<f64> = None,
        "network", Optional { inner: NETWORK_GBIT_S, none: "3200 Gb/s" }, Budget in Training,
        "Node network (Gb/s)", "each node's link to the others, for training past 8 GPUs";
    /// Unset means the mode's default: 16-bit, or NF4 for QLoRA.
    weights: Option<Dtype> = None,
        "weights", Optional { inner: pick::<Dtype>(), none: "auto" }, Precision,
        "Weights", "weight format (auto: the checkpoint's for inference, bf16 to train, nf4 for qlora)";
    /// Which linear layers a quantized weight format covers; unset means the preset checkpoint's.
    quantized: Option<QuantScope> = None,
        "quantized", Optional { inner: pick::<QuantScope>(), none: "auto" }, MorePrecision,
        "Quantized layers", "which linear layers a quantized format covers (auto: the checkpoint's, else all)";
    grads: Option<Dtype> = None,
        "grads", Optional { inner: pick::<Dtype>(), none: "auto" }, MorePrecision in Training,
        "Gradients", "gradient format (auto: that of the trained parameters)";
    /// Unset: fp32 in the detailed method, as peft keeps adapters (`autocast_adapter_dtype`);
    /// the lesson's formula and LitGPT/torchtune keep them in the weights' format.
    adapter_dtype: Option<Dtype> = None,
        "adapter-dtype", Optional { inner: pick::<Dtype>(), none: "auto" }, MorePrecision in Adapters,
        "Adapters", "adapter format (auto: fp32, as peft; LitGPT: the weights')";
    act_dtype: Option<Dtype> = None,
        "act-dtype", Optional { inner: pick::<Dtype>(), none: "auto" }, MorePrecision,
        "Activations", "activation format (auto: the weights', or bf16 for quantized weights)";
    kv_dtype: Option<Dtype> = None,
        "kv-dtype", Optional { inner: pick::<Dtype>(), none: "auto" }, MorePrecision in Inference,
        "KV cache", "KV-cache format (auto: the weights', or the activations' for quantized weights)";
    optimizer: Optimizer = Optimizer::Adamw,
        "optimizer", pick::<Optimizer>(), Precision in Training,
        "Optimizer", "optimizer";
    optimizer_step: OptimizerStep = OptimizerStep::Foreach,
        "optimizer-step", pick::<OptimizerStep>(), MorePrecision in Training,
        "Optimizer step", "how torch applies the update (AdamW's foreach or fused argument)";
    /// bitsandbytes' paged optimizers (`PagedAdamW`, `PagedAdamW8bit`, `PagedLion`) keep each
    /// moment buffer of 1e5 values or more in CUDA managed memory, outside PyTorch's allocator.
    paged_optimizer: bool = false,
        "paged-optimizer", Flag, MorePrecision in Training,
        "Paged optimizer", "bnb paged state (CUDA managed)";
    /// torchao float8 training (torchtitan's `quantize.linear.float8` converter).
    float8: Float8 = Float8::Off,
        "float8", pick::<Float8>(), MorePrecision in Training,
        "Float8", "torchao float8 linears";
    /// Unset means on for full fine-tuning of 16-bit weights in the detailed method (the 2+2+12
    /// bytes of mixed-precision training, Rajbhandari et al. 2020), off otherwise.
    master_weights: Option<bool> = None,
        "master-weights", Optional { inner: Flag, none: "auto" }, MorePrecision in Training,
        "fp32 master weights", "fp32 master copy (auto: on for 16-bit full fine-tuning)";
    batch: u32 = 1,
        "batch", Count, Batch,
        "Micro-batch", "micro-batch per GPU";
    /// Requests decoding at once, for the speed estimate (`vllm bench serve --max-concurrency`);
    /// unset, the batch.
    concurrency: Option<u32> = None,
        "concurrency", Optional { inner: Count, none: "batch" }, Batch in Inference,
        "Concurrency", "requests decoding at once, for the speed estimate (vllm bench serve --max-concurrency)";
    seq: u32 = 2048,
        "seq", Count, Batch,
        "Sequence length", "sequence length in tokens";
    /// Inference under transformers: the tokens one forward processes (the prompt, or a prefill
    /// chunk); `seq` is what the cache holds (prompt + new tokens).
    prompt: Option<u32> = None,
        "prompt", Optional { inner: Count, none: "seq" }, Batch in Inference,
        "Prompt / chunk", "tokens one forward processes (the prompt or a prefill chunk); seq is prompt + new tokens, what the cache holds; the speed estimate's prompt";
    /// transformers' cache class; serving runtimes have their own.
    cache: KvCache = KvCache::Dynamic,
        "cache", pick::<KvCache>(), Batch in Inference,
        "Cache class", "transformers' KV cache class (cache_implementation)";
    /// A static cache's length; unset, `seq`.
    max_cache_len: Option<u32> = None,
        "max-cache-len", Optional { inner: Count, none: "seq" }, Batch in Inference,
        "Max cache length", "tokens a static cache is allocated for (max_cache_len)";
    /// What transformers' or gpt-fast's `generate` keeps of each new token's distribution.
    kept_scores: KeptScores = KeptScores::None,
        "kept-scores", pick::<KeptScores>(), Batch in Inference,
        "Kept scores", "what generate keeps of each new token's distribution over the vocabulary until it returns";
    grad_accum: u32 = 1,
        "grad-accum", Count, Batch in Training,
        "Gradient accumulation", "gradient accumulation steps (no memory cost)";
    /// Images in each sequence, which the vision tower encodes; their tokens count in `seq`.
    images: u32 = 0,
        "images", Whole, Batch,
        "Images per sequence", "images each sequence carries (their tokens count in the sequence length)";
    checkpointing: Checkpointing = Checkpointing::None,
        "checkpointing", pick::<Checkpointing>(), Batch in Training,
        "Checkpointing", "activation checkpointing";
    /// torchtitan's `selective_ac_option = k`: the policy wraps only every k-th block.
    checkpoint_every: u32 = 1,
        "checkpoint-every", Count, Batch in Training,
        "Checkpoint every k-th layer", "only every k-th layer is checkpointed; the rest keep all";
    /// torch.compile on the layers (torchtune's `compile`): inductor's partitioner recomputes
    /// pointwise ops in the backward pass instead of saving their outputs.
    compile: bool = false,
        "compile", Flag, Batch in Training,
        "torch.compile", "true if the layers are torch.compile'd";
    /// Saved activations copied to CPU memory (torchtune's `enable_activation_offloading`,
    /// axolotl's `activation_offloading`).
    offload_activations: bool = false,
        "offload-activations", Flag, Batch in Training,
        "Activations to CPU", "true if saved activations are offloaded to CPU";
    attention: Attention = Attention::Flash,
        "attention", pick::<Attention>(), Batch,
        "Attention", "attention kernel";
    lora_rank: u32 = 16,
        "lora-rank", Count, Method in Adapters,
        "LoRA rank", "LoRA rank r";
    lora_targets: LoraTargets = LoraTargets::qv(),
        "lora-targets", Targets, Method in Adapters,
        "LoRA targets", "projections LoRA adapts";
    /// A dropout on each adapter's input (PEFT's and LitGPT's `lora_dropout` above 0; PEFT's
    /// default is 0, LitGPT's 0.05): each adapter keeps a one-byte mask and the dropped copy.
    lora_dropout: bool = false,
        "lora-dropout", Flag, Method in Adapters,
        "LoRA dropout", "true if adapters apply dropout to their input (LitGPT 0.05, PEFT default 0)";
    /// QLoRA's double quantization of the quantization constants (Dettmers et al. 2023, §3).
    double_quant: bool = false,
        "double-quant", Flag, MorePrecision,
        "NF4 double quantization", "QLoRA double quantization of the NF4 constants";
    /// What runs int8 and fp8 linears in inference (torchao's `int8_weight_only`,
    /// `float8_weight_only` and their dynamic-activation kinds, as `TorchAoConfig` applies them).
    quant_kernel: QuantKernel = QuantKernel::Auto,
        "quant-kernel", pick::<QuantKernel>(), MorePrecision in Inference,
        "Int8/fp8 kernel", "what runs int8 and fp8 linears";
    /// How int4 weights keep their scales and zero points.
    int4_layout: Int4Layout = Int4Layout::Gptq,
        "int4-layout", pick::<Int4Layout>(), MorePrecision,
        "Int4 layout", "int4 scale/zero format";
    /// Weights per int4 scale: GPTQ's and torchao's default 128 (`group_size`).
    int4_group: u32 = 128,
        "int4-group", Count, MorePrecision,
        "Int4 group", "int4 weights per scale";
    /// The LM head quantized with the blocks: torchao's `quantize_` and Lightning Fabric's
    /// bitsandbytes precision replace every `nn.Linear`, the output layer included.
    quant_head: bool = false,
        "quant-head", Flag, MorePrecision,
        "Quantized head", "LM head quantized too";
    /// What runs QLoRA's frozen NF4 projections: it decides whether each keeps its input.
    nf4_kernel: Nf4Kernel = Nf4Kernel::Bnb,
        "nf4-kernel", pick::<Nf4Kernel>(), MorePrecision in Adapters,
        "NF4 kernel", "what runs NF4 layers";
    /// axolotl's `quantize_moe_experts`: transformers v5 keeps a layer's routed experts as fused
    /// 3-D tensors, which bitsandbytes quantizes through a parametrization, not `Linear4bit`.
    quantize_moe_experts: bool = false,
        "quantize-moe-experts", Flag, MorePrecision in Adapters,
        "Fused NF4 experts", "true if fused expert tensors are NF4 by parametrization (axolotl quantize_moe_experts)";
    loss: Loss = Loss::Whole,
        "loss", pick::<Loss>(), MorePrecision in Training,
        "Loss", "how the cross-entropy is computed from the logits";
    /// The format the loss reads the logits in: transformers upcasts them to fp32 first.
    logits_dtype: LogitsDtype = LogitsDtype::Fp32,
        "logits-dtype", pick::<LogitsDtype>(), MorePrecision in Training,
        "Loss's logits format", "the format the cross-entropy reads the logits in (fp32: transformers' ForCausalLMLoss upcasts them)";
    /// peft's `prepare_model_for_kbit_training`, which QLoRA scripts call before `get_peft_model`
    /// (TRL 1.16's `SFTTrainer` does not).
    kbit_prep: KbitPrep = KbitPrep::None,
        "kbit-prep", pick::<KbitPrep>(), MorePrecision in Adapters,
        "k-bit preparation", "what prepares a bitsandbytes-quantized model for adapters (peft: its unquantized 16-bit parameters to fp32)";
    /// The model applies dropout to its hidden states in training (BERT, GPT-2 and OPT configs ship
    /// 0.1; Llama-family fine-tunes use 0). Each dropout keeps a one-byte mask per element.
    dropout: bool = false,
        "dropout", Flag, Dropout in Training,
        "Hidden-state dropout", "true if hidden-state dropout is on in training (BERT, GPT-2, OPT)";
    /// Dropout on the attention probabilities (BERT's and GPT-2's defaults): with eager attention
    /// it keeps a mask and a dropped copy of every score. Fused kernels draw it from an RNG seed.
    attention_dropout: bool = false,
        "attention-dropout", Flag, Dropout in Training,
        "Attention dropout", "true if attention-probability dropout is on in training";
    method: Method = Method::Detailed,
        "method", pick::<Method>(), Method,
        "Formula", "which formula estimates the memory";
    gpu: String = "rtx-4090".to_string(),
        "gpu", GpuId, Budget,
        "GPU", "catalogue GPU id (see `vramfit list gpus`)";
    /// Unlike GPUs, in device order (`CUDA_VISIBLE_DEVICES`): each gets its own plan against
    /// its own memory. Overrides `gpu`; `gpus` is their count.
    devices: Vec<String> = Vec::new(),
        "devices", GpuList, Budget,
        "Mixed GPUs", "unlike GPUs one by one, in device order, e.g. rtx-4090,rtx-3090 (overrides gpu; each gets its own plan)";
    /// A custom per-GPU size; overrides `gpu`.
    vram: Option<Bytes> = None,
        "vram", Optional { inner: Capacity, none: "the GPU's" }, Budget,
        "Custom VRAM per GPU", "per-GPU memory, instead of the GPU's";
    /// macOS's `iogpu.wired_limit_mb` on a Mac: the GPU's working-set limit instead of Metal's
    /// default share of the memory (the sysctl is in MiB: 114688 is `114688MiB`).
    wired_limit: Option<Bytes> = None,
        "wired-limit", Optional { inner: Capacity, none: "macOS's default" }, Budget,
        "Metal wired limit (Mac)", "iogpu.wired_limit_mb on a Mac, e.g. 114688MiB: the GPU's limit instead of macOS's default share";
    gpus: u32 = 1,
        "gpus", Count, Budget,
        "GPUs", "GPUs the run is spread over";
    /// Context parallelism (torchtitan's `context_parallel_degree`): ring attention over `cp`
    /// GPUs that each hold a slice of every sequence.
    cp: u32 = 1,
        "cp", Count, Budget in Training,
        "Context parallel", "GPUs sharing each sequence; each keeps seq/cp tokens (of gpus)";
    sharding: Sharding = Sharding::None,
        "sharding", pick::<Sharding>(), Budget,
        "Sharding", "how the run is split across GPUs";
    /// 2-D parallelism (torchtitan's `tensor_parallel_degree`, torchtune's `tensor_parallel_dim`):
    /// every layer split over `tp` GPUs, its activations as `sequence-parallel` says, and the
    /// data-parallel `sharding` over the rest. `sharding=tensor` is tensor parallelism over all the GPUs.
    tp: u32 = 1,
        "tp", Count, Budget,
        "Tensor parallel", "GPUs each layer is split over (of gpus; sharding splits the rest)";
    /// How tensor parallelism (`tp`, or `sharding=tensor`) splits the activations it does not
    /// split by heads or the MLP's width.
    sequence_parallel: SequenceParallel = SequenceParallel::Dtensor,
        "sequence-parallel", pick::<SequenceParallel>(), Budget in Training,
        "Sequence parallel", "how tensor parallelism splits norms and dropouts";
    /// Hybrid sharding (FSDP's `HYBRID_SHARD`, torchtitan's `data_parallel_replicate_degree`,
    /// DeepSpeed's MiCS): the sharded state is split within groups of gpus/replicas GPUs and
    /// each group holds a whole copy.
    replicas: u32 = 1,
        "replicas", Count, Budget,
        "Sharded replicas", "HSDP: groups that each hold a whole sharded copy (of gpus)";
    offload: Offload = Offload::None,
        "offload", pick::<Offload>(), Budget,
        "CPU offload", "what is moved to CPU memory";
    /// Memory other processes already hold on each GPU (desktop, browser; the 16 GB OOM budget
    /// guide's inventory).
    reserved: Bytes = Bytes::ZERO,
        "reserved", Size, Budget,
        "In use by others", "memory other processes already hold on each GPU";
    /// Under WSL2, CUDA reports the card's whole memory as its total (`estimate/serving/mod.rs`).
    wsl2: bool = false,
        "wsl2", Flag, Budget in Inference,
        "WSL2 (Windows)", "true under WSL2, where CUDA reports nvidia-smi's whole total, which vLLM's and SGLang's fractions and llama.cpp's free memory come from";
    margin: Bytes = DEFAULT_MARGIN,
        "margin", Size, Budget,
        "Safety margin", "memory kept free on purpose";
    /// The CUDA context this machine's driver and PyTorch take (detailed method). The default is the
    /// lazy-loading figure; eager-loading stacks (CUDA < 11.7) take over 1 GiB.
    context: Bytes = DEFAULT_CUDA_CONTEXT,
        "context", Size, Budget,
        "CUDA context", "driver context and kernel images (measure yours with vramfit probe)";
    /// Percent of usable memory above which the verdict is `tight` (the OOM budget guide's
    /// warning level).
    tight: f64 = 85.0,
        "tight", Percent, Budget,
        "Tight above (% of usable)", "percent of usable memory above which the verdict is tight";
    units: Units = Units::Gb,
        "units", pick::<Units>(), Budget,
        "Units", "units the results are shown in";
    custom: Vec<CustomComponent> = Vec::new(),
        "custom", Customs, Extras,
        "Custom components", "an extra allocation, repeatable";
}
