//! From what a person described to what the formulas read: every unset field filled in (the
//! preset's shape, the mode's formats, the GPU's capacity) and every combination checked.

use super::{FieldError, Scenario};
use crate::dtype::{Dtype, QuantScope};
use crate::gpu_catalogue::{self, Gpu, Unified};
use crate::model::{self, Architecture, Block, Preset};
use crate::runtime::Runtime;
use crate::sharding::{Offload, Sharding};
use crate::units::{format_size_exact, Bytes};
use crate::workload::{Float8, KvCache, Method, Mode};

/// A scenario with every default filled in and every field known to be valid.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub arch: Architecture,
    /// The preset the shape's unset fields came from.
    pub shape_from: &'static Preset,
    /// True when no preset was named, so the shape is an assumption to show the user.
    pub shape_assumed: bool,
    pub params: f64,
    /// The parameters the shape implies, and of those the blocks' linear layers: counted once
    /// here, read by every component that splits `params` by kind.
    pub shape_params: f64,
    pub linear_params: f64,
    /// Of those, the routed experts' (0 for a dense model): what expert parallelism splits.
    pub routed_params: f64,
    pub weights: Dtype,
    /// The linear layers a quantized `weights` covers.
    pub quantized: QuantScope,
    pub act_dtype: Dtype,
    /// The format the model's float parameters live in (a quantized model's take the compute
    /// dtype): what full fine-tuning trains and what FSDP gathers.
    pub param_dtype: Dtype,
    /// The format trained parameters live in: LoRA's adapters, or `param_dtype` in full
    /// fine-tuning. Gradients default to it.
    pub trained_dtype: Dtype,
    pub grads: Dtype,
    pub kv_dtype: Dtype,
    /// The recurrent layers' state format: `ssm-dtype`, else the runtime's default.
    pub state_dtype: Dtype,
    pub master_weights: bool,
    pub gpu: Option<&'static Gpu>,
    pub custom_vram: Option<Bytes>,
    /// Per-GPU memory the card reports.
    pub capacity: Bytes,
    /// Which of `devices` this is, when they list unlike GPUs.
    pub device: Option<usize>,
}

impl Resolved {
    pub fn gpu_name(&self) -> String {
        match (self.custom_vram, self.gpu) {
            (Some(v), _) => format!("custom {}", format_size_exact(v)),
            (None, Some(g)) => g.name.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// A wired limit the Mac cannot grant: above its memory.
fn check_wired_limit(s: &Scenario, gpu: Option<&Gpu>, errors: &mut Vec<FieldError>) {
    let (Some(limit), Some(gpu)) = (s.wired_limit, gpu) else {
        return;
    };
    if gpu.unified == Some(Unified::AppleWorkingSet) && limit > gpu.machine_memory() {
        errors.push(FieldError::new(
            "wired-limit",
            format!(
                "{} is more than the {} GB this Mac has",
                format_size_exact(limit),
                gpu.advertised_gib
            ),
        ));
    }
}

/// The formats each kind of tensor is kept in, with the mode's defaults filled in.
struct Formats {
    weights: Dtype,
    act_dtype: Dtype,
    param_dtype: Dtype,
    trained_dtype: Dtype,
    grads: Dtype,
    kv_dtype: Dtype,
}

impl Scenario {
    /// Fills every unset field and checks the whole scenario, returning each invalid field. With
    /// `devices`, the GPU is the first of them ([`Scenario::resolve_device`] picks another).
    pub fn resolve(&self) -> Result<Resolved, Vec<FieldError>> {
        self.resolve_on(None)
    }

    /// [`Scenario::resolve`] on the `device`-th of `devices`.
    pub fn resolve_device(&self, device: usize) -> Result<Resolved, Vec<FieldError>> {
        self.resolve_on(Some(device))
    }

    fn resolve_on(&self, device: Option<usize>) -> Result<Resolved, Vec<FieldError>> {
        let mut errors = Vec::new();
        self.check_devices(&mut errors);
        let (arch, shape_from, shape_assumed) = self.resolve_arch();
        let linear_params = arch.linear_params();
        let shape_params =
            linear_params + arch.embedding_params() + arch.norm_params() + arch.vision_params();
        let params = self.params.unwrap_or(shape_params);
        check_shape(self, &arch, params, &mut errors);
        let formats = self.resolve_formats(shape_from, &mut errors);
        let quantized = self.quantized.unwrap_or(if self.weights.is_none() {
            shape_from.checkpoint.1
        } else {
            QuantScope::AllLinear
        });
        if quantized == QuantScope::Experts && !arch.moe.is_moe() {
            errors.push(FieldError::new(
                "quantized",
                "only a mixture of experts has experts to quantize",
            ));
        }
        self.check_method(&arch, formats.weights, &mut errors);
        // SGLang's `mamba2_state_dtype` defaults to float32; transformers' gated-DeltaNet
        // kernels return fp32 final states; llama.cpp keeps R and S in f32; vLLM's is its own.
        let state_dtype = arch
            .recurrent
            .state_dtype
            .unwrap_or(self.runtime.rules().default_state_dtype(formats.act_dtype));
        if !state_dtype.is_float() {
            errors.push(FieldError::new(
                "ssm-dtype",
                "the recurrent state is kept in fp32, fp16 or bf16",
            ));
        }
        let (gpu, capacity) = self.resolve_gpu(device, &mut errors);
        let master_weights = self.master_weights.unwrap_or(
            self.method == Method::Detailed
                && self.mode == Mode::Full
                && formats.weights != Dtype::Fp32,
        );
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Resolved {
            arch,
            shape_from,
            shape_assumed,
            params,
            shape_params,
            linear_params,
            routed_params: if arch.moe.is_moe() {
                arch.params_in(&[Block::RoutedExpert])
            } else {
                0.0
            },
            weights: formats.weights,
            quantized,
            act_dtype: formats.act_dtype,
            param_dtype: formats.param_dtype,
            trained_dtype: formats.trained_dtype,
            grads: formats.grads,
            kv_dtype: formats.kv_dtype,
            state_dtype,
            master_weights,
            gpu,
            custom_vram: self.vram,
            capacity,
            device: device.filter(|_| self.devices.len() > 1),
        })
    }

    /// The GPU (`device` of `devices`, else the first, else `gpu`) and its memory.
    fn resolve_gpu(
        &self,
        device: Option<usize>,
        errors: &mut Vec<FieldError>,
    ) -> (Option<&'static Gpu>, Bytes) {
        let id = self.devices.get(device.unwrap_or(0)).unwrap_or(&self.gpu);
        let gpu = gpu_catalogue::find(id);
        if gpu.is_none() {
            let field = if self.devices.is_empty() {
                "gpu"
            } else {
                "devices"
            };
            errors.push(FieldError::new(field, format!("unknown GPU `{id}`")));
        }
        check_wired_limit(self, gpu, errors);
        let capacity = self
            .vram
            .or(gpu.map(|g| g.capacity_under(self.wired_limit)))
            .unwrap_or(Bytes::ZERO);
        (gpu, capacity)
    }

    /// Alike GPUs in place of unlike ones: the smallest of `devices`, for the searches that ask
    /// "which GPU" or "how many", whose answers name one kind of GPU.
    pub fn make_alike(&mut self) {
        let smallest = self
            .devices
            .iter()
            .filter_map(|id| gpu_catalogue::find(id))
            .min_by_key(|g| g.capacity_under(self.wired_limit));
        if let Some(g) = smallest {
            self.gpu = g.id.to_string();
        }
        self.devices.clear();
        self.tensor_split = None;
    }

    /// Unlike GPUs: `gpus` counts them, `vram` (one size for all) does not apply, and a
    /// `tensor-split` has a proportion for each GPU.
    fn check_devices(&self, errors: &mut Vec<FieldError>) {
        let listed = u32::try_from(self.devices.len()).unwrap_or(u32::MAX);
        if listed > 1 && self.gpus != listed {
            errors.push(FieldError::new(
                "gpus",
                format!(
                    "devices lists {listed} GPUs but gpus is {}; set gpus={listed}",
                    self.gpus
                ),
            ));
        }
        if listed > 1 && self.vram.is_some() {
            errors.push(FieldError::new(
                "vram",
                "vram sets one size for every GPU; with devices each GPU has its own (leave vram unset)",
            ));
        }
        // Only llama.cpp reads a split; elsewhere it is one of its hidden settings.
        let split = self
            .tensor_split
            .as_ref()
            .filter(|_| self.runtime.rules().facts().places_layers);
        if let Some(split) = split {
            if listed < 2 {
                errors.push(FieldError::new(
                    "tensor-split",
                    "tensor-split divides the layers among the GPUs listed in devices; list them, e.g. devices=rtx-4090,rtx-3090",
                ));
            } else if split.len() != self.gpus as usize {
                errors.push(FieldError::new(
                    "tensor-split",
                    format!(
                        "{} proportions for {} GPUs; give one per GPU, in device order",
                        split.len(),
                        self.gpus
                    ),
                ));
            }
        }
    }

    /// Every invalid field with its reason; empty when the scenario can be estimated.
    pub fn validate(&self) -> Vec<FieldError> {
        self.resolve().err().unwrap_or_default()
    }

    /// The shape: the named preset's, or (for a bare parameter count) the nearest preset's, or
    /// Llama-3.1-8B's, with every architecture field given overriding it. Also says which preset
    /// the unset fields came from and whether that was an assumption.
    fn resolve_arch(&self) -> (Architecture, &'static Preset, bool) {
        let named = self.model.as_deref().and_then(model::preset);
        let (base_preset, assumed) = match (named, self.params) {
            (Some(p), _) => (p, false),
            (None, Some(params)) => (model::nearest_preset(params), true),
            (None, None) => (
                model::preset("llama-3.1-8b").unwrap_or(&model::PRESETS[0]),
                true,
            ),
        };
        let base = base_preset.arch;
        let hidden = self.hidden.unwrap_or(base.hidden);
        let heads = self.heads.unwrap_or(base.heads);
        let explicit_shape = self.hidden.is_some() || self.heads.is_some();
        let head_dim = self.head_dim.unwrap_or(if explicit_shape {
            hidden / heads.max(1)
        } else {
            base.head_dim
        });
        // A shape typed by hand starts dense with full attention; a named preset keeps its own.
        let from_preset = self.model.is_some() || !explicit_shape;
        let arch = Architecture {
            layers: self.layers.unwrap_or(base.layers),
            hidden,
            heads,
            kv_heads: self.kv_heads.unwrap_or(if self.heads.is_some() {
                heads
            } else {
                base.kv_heads.min(heads)
            }),
            head_dim,
            ffn: self
                .ffn
                .unwrap_or(if self.hidden.is_some() && self.model.is_none() {
                    hidden.saturating_mul(base.ffn) / base.hidden.max(1)
                } else {
                    base.ffn
                }),
            vocab: self.vocab.unwrap_or(base.vocab),
            tied: self.tied.unwrap_or(base.tied),
            gated: self.gated.unwrap_or(base.gated),
            ..self.shape_parts(&base, from_preset)
        };
        (arch, base_preset, assumed)
    }

    /// The formats, with inference defaulting to the format the preset's checkpoint ships in.
    fn resolve_formats(&self, preset: &Preset, errors: &mut Vec<FieldError>) -> Formats {
        let weights = self.weights.unwrap_or(match self.mode {
            Mode::Inference if self.model.is_some() => preset.checkpoint.0,
            mode => mode.default_weights(),
        });
        let float_or = |fallback: Dtype| {
            if weights.is_float() {
                weights
            } else {
                fallback
            }
        };
        let act_dtype = self.act_dtype.unwrap_or(float_or(Dtype::Bf16));
        if !act_dtype.is_float() {
            errors.push(FieldError::new(
                "act-dtype",
                "activations are stored as fp32, fp16 or bf16",
            ));
        }
        let param_dtype = float_or(act_dtype);
        // peft upcasts fp16/bf16 adapters to fp32 (`autocast_adapter_dtype=True`, its default
        // since v0.12: `cast_adapter_dtype` in huggingface/peft@5d602fdb
        // src/peft/tuners/tuners_utils.py), and a quantized base's adapters are made in fp32.
        let adapter_dtype = self
            .adapter_dtype
            .unwrap_or(if self.method == Method::Detailed {
                Dtype::Fp32
            } else {
                param_dtype
            });
        if !adapter_dtype.is_float() {
            errors.push(FieldError::new(
                "adapter-dtype",
                "adapters are stored as fp32, fp16 or bf16",
            ));
        }
        let trained_dtype = if self.mode.is_adapter() {
            adapter_dtype
        } else {
            param_dtype
        };
        let grads = self.grads.unwrap_or(trained_dtype);
        if !grads.is_float() {
            errors.push(FieldError::new(
                "grads",
                "gradients are stored as fp32, fp16 or bf16",
            ));
        }
        Formats {
            weights,
            act_dtype,
            param_dtype,
            trained_dtype,
            grads,
            kv_dtype: self.kv_dtype.unwrap_or(float_or(act_dtype)),
        }
    }

    /// Combinations the training method rules out.
    /// A serving runtime runs inference with the detailed method, split by tensor, pipeline or
    /// expert parallelism.
    fn check_runtime(&self, errors: &mut Vec<FieldError>) {
        let runtime = self.runtime;
        if !runtime.rules().facts().serves {
            return;
        }
        if self.mode.is_training() {
            errors.push(FieldError::new(
                "runtime",
                format!("{runtime} serves inference; set mode to inference, or runtime to transformers to train"),
            ));
        }
        runtime.rules().check(self, errors);
        let on_a_mac = crate::gpu_catalogue::find(&self.gpu).is_some_and(|g| g.is_mac());
        if on_a_mac && !runtime.rules().facts().runs_on_metal {
            errors.push(FieldError::new(
                "runtime",
                format!(
                    "{runtime} runs on CUDA and ROCm GPUs, not on a Mac's Metal GPU; plan a Mac with {}",
                    Runtime::names_where(|f| f.runs_on_metal)
                ),
            ));
        }
        if self.method == Method::Lesson {
            errors.push(FieldError::new(
                "runtime",
                format!("chapter 62's formula has no {runtime} rules; use the detailed method"),
            ));
        }
        if self.gpus > 1
            && !matches!(
                self.sharding,
                Sharding::Tensor | Sharding::Pipeline | Sharding::Expert
            )
        {
            errors.push(FieldError::new(
                "sharding",
                format!(
                    "{runtime} splits a model over GPUs by tensor, pipeline or expert parallelism"
                ),
            ));
        }
    }

    /// Tensor, context and replica groups tile the GPUs: torchtitan's mesh is
    /// `dp_replicate × dp_shard × cp × tp`, and each degree must divide the world.
    fn check_parallel_layout(&self, errors: &mut Vec<FieldError>) {
        let tp = self.tp.max(1);
        let replicas = self.replicas.max(1);
        let cp = if self.mode.is_training() {
            self.cp.max(1)
        } else {
            1
        };
        if tp > 1 && !self.sharding.is_data_parallel() {
            errors.push(FieldError::new(
                "tp",
                format!(
                    "tp puts tensor parallelism beside a data-parallel sharding (ddp, zero1–3, fsdp); with {}, set tp=1{}",
                    self.sharding,
                    if self.sharding == Sharding::None {
                        " or sharding=tensor for tensor parallelism alone"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if replicas > 1 && !(self.sharding.is_data_parallel() && self.sharding.shards_optimizer()) {
            errors.push(FieldError::new(
                "replicas",
                format!(
                    "replicas splits a ZeRO or FSDP sharding into groups that each hold a whole copy; {} shards no data-parallel state",
                    self.sharding
                ),
            ));
        }
        let mut tiled = 1u32;
        for (field, degree, what) in [
            ("cp", cp, "context parallelism splits each sequence over cp"),
            ("tp", tp, "tensor parallelism splits each layer over tp"),
            (
                "replicas",
                replicas,
                "hybrid sharding copies the state to replicas groups",
            ),
        ] {
            tiled = tiled.saturating_mul(degree);
            if degree > 1 && !self.gpus.is_multiple_of(tiled) {
                errors.push(FieldError::new(
                    field,
                    format!(
                        "{what} of the gpus, so cp × tp × replicas must divide them; {tiled} does not divide {}",
                        self.gpus
                    ),
                ));
                break;
            }
        }
    }

    /// The prompt is part of the sequence, and a static cache must hold the whole sequence
    /// (transformers raises once `max_cache_len` is passed).
    fn check_cache(&self, errors: &mut Vec<FieldError>) {
        if self.mode.is_training() {
            return;
        }
        if let Some(prompt) = self.prompt.filter(|&p| p > self.seq) {
            errors.push(FieldError::new(
                "prompt",
                format!("the prompt ({prompt}) is part of the sequence; seq ({}) is prompt + new tokens", self.seq),
            ));
        }
        if let Some(len) = self.max_cache_len.filter(|&l| l < self.seq) {
            if self.cache == KvCache::Static {
                errors.push(FieldError::new(
                    "max-cache-len",
                    format!("a static cache of {len} tokens cannot hold the {}-token sequence; raise max-cache-len or lower seq", self.seq),
                ));
            }
        }
    }

    fn check_method(&self, arch: &Architecture, weights: Dtype, errors: &mut Vec<FieldError>) {
        self.check_weights_for_mode(weights, errors);
        self.check_runtime(errors);
        self.check_cache(errors);
        self.check_model_features(arch, weights, errors);
        self.check_parallel_layout(errors);
        self.check_training_memory_features(errors);
    }

    /// Full fine-tuning and LoRA train float weights; QLoRA keeps quantized ones.
    fn check_weights_for_mode(&self, weights: Dtype, errors: &mut Vec<FieldError>) {
        match self.mode {
            Mode::Full | Mode::Lora if weights.is_quantized() => errors.push(FieldError::new(
                "weights",
                format!("{weights} weights cannot be trained directly; use mode qlora for quantized weights"),
            )),
            Mode::Qlora if !weights.is_quantized() => errors.push(FieldError::new(
                "weights",
                format!("QLoRA keeps the base model quantized; choose nf4, int4, int8 or fp8, not {weights}"),
            )),
            _ => {}
        }
    }

    /// Settings that need a part of the model: a GGUF file of its layers, a LoRA rank within
    /// its width, NF4 weights, a vision tower, MTP modules, routed experts.
    fn check_model_features(
        &self,
        arch: &Architecture,
        weights: Dtype,
        errors: &mut Vec<FieldError>,
    ) {
        // Tensors read from a file fill the layers of the shape read with them.
        let files = [
            (
                "gguf-weights",
                self.gguf_weights.as_ref().map(|f| f.blocks.len()),
            ),
            (
                "checkpoint-weights",
                self.checkpoint_weights.as_ref().map(|c| c.blocks.len()),
            ),
        ];
        for (key, filled) in files {
            if let Some(filled) = filled.filter(|&n| n != arch.layers as usize) {
                errors.push(FieldError::new(
                    key,
                    format!(
                        "the tensors read fill {filled} layers but layers is {}; read the file again or clear {key}",
                        arch.layers
                    ),
                ));
            }
        }
        if self.mode.is_adapter() && self.lora_rank > arch.hidden {
            errors.push(FieldError::new(
                "lora-rank",
                format!(
                    "rank {} is larger than hidden {}",
                    self.lora_rank, arch.hidden
                ),
            ));
        }
        if self.double_quant && weights != Dtype::Nf4 {
            errors.push(FieldError::new(
                "double-quant",
                "double quantization applies to nf4 weights only",
            ));
        }
        if self.images > 0 && arch.vision.patches_per_image() == 0.0 {
            errors.push(FieldError::new(
                "images",
                "this model has no vision tower with a patch and image size (vision-patch, vision-image)",
            ));
        }
        if self.mtp && arch.mtp_layers == 0 {
            errors.push(FieldError::new(
                "mtp",
                "this model has no multi-token-prediction modules (set mtp-layers)",
            ));
        }
        if self.sharding == Sharding::Expert && !arch.moe.is_moe() {
            errors.push(FieldError::new(
                "sharding",
                "expert parallelism splits routed experts; this model has none",
            ));
        }
    }

    /// float8 training and parameter offloading, each with what it needs.
    fn check_training_memory_features(&self, errors: &mut Vec<FieldError>) {
        if self.float8.is_on() && self.mode.is_adapter() {
            errors.push(FieldError::new(
                "float8",
                "float8 training (torchao Float8Linear) applies to full training",
            ));
        }
        if self.mode == Mode::Full
            && self.float8 == Float8::Gather
            && self.sharding != Sharding::Fsdp
        {
            errors.push(FieldError::new(
                "float8",
                "fp8-gather is FSDP's float8 all-gather; set sharding fsdp",
            ));
        }
        if self.offload == Offload::All && !self.sharding.is_fully_sharded() {
            errors.push(FieldError::new(
                "offload",
                "offloading parameters needs sharding zero3 or fsdp",
            ));
        }
    }
}

/// Every shape field is positive, heads divide into the hidden size where head-dim is derived
/// from them (a hidden size or head count typed without head-dim; a preset's head-dim is its
/// own, as Qwen3.5-27B's 24 heads of 256 beside a 5120 hidden size) and into the KV heads, and the
/// parameter count is at least 1.
fn check_shape(s: &Scenario, arch: &Architecture, params: f64, errors: &mut Vec<FieldError>) {
    for (field, value) in arch.fields() {
        if value == 0 {
            errors.push(FieldError::new(field, "must be at least 1"));
        }
    }
    let derived_head_dim = s.head_dim.is_none() && (s.hidden.is_some() || s.heads.is_some());
    if derived_head_dim && arch.heads > 0 && !arch.hidden.is_multiple_of(arch.heads) {
        errors.push(FieldError::new(
            "heads",
            format!(
                "{} heads do not divide hidden {}; set head-dim explicitly",
                arch.heads, arch.hidden
            ),
        ));
    }
    if arch.kv_heads > arch.heads
        || (arch.kv_heads > 0 && !arch.heads.is_multiple_of(arch.kv_heads))
    {
        errors.push(FieldError::new(
            "kv-heads",
            format!(
                "{} kv-heads must divide the {} query heads",
                arch.kv_heads, arch.heads
            ),
        ));
    }
    if let Some((field, message)) = arch.contradiction() {
        errors.push(FieldError::new(field, message));
    }
    if !(params.is_finite() && params >= 1.0) {
        errors.push(FieldError::new("params", "must be at least 1"));
    }
}
