//! The vocabulary a scenario is written in: number formats, training methods, optimizers,
//! checkpointing, attention kernels, sharding. Each enum knows its own wire name (the same in the
//! URL query, JSON and CLI flags) and the per-element facts the formulas need.

use serde::{Deserialize, Serialize};

/// Declares a kebab-case wire enum with `as_str`, `ALL`, and a `parse` that lists the valid names
/// in its error, so every field's message says what would have been accepted.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn parse(text: &str) -> Result<$name, String> {
                let wanted = text.trim().to_ascii_lowercase();
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == wanted)
                    .ok_or_else(|| {
                        let names: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                        format!("`{}` is not one of {}", text.trim(), names.join(", "))
                    })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// A number format for weights, gradients, optimizer math, activations or the KV cache.
    Dtype {
        Fp32 = "fp32",
        Fp16 = "fp16",
        Bf16 = "bf16",
        Fp8 = "fp8",
        Int8 = "int8",
        Int4 = "int4",
        Nf4 = "nf4",
    }
}

impl Dtype {
    /// Storage per element. 4-bit formats pack two values per byte.
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => 4.0,
            Dtype::Fp16 | Dtype::Bf16 => 2.0,
            Dtype::Fp8 | Dtype::Int8 => 1.0,
            Dtype::Int4 | Dtype::Nf4 => 0.5,
        }
    }

    /// Quantized formats apply to the transformer's linear layers only; embeddings, the LM head and
    /// norms stay in the compute dtype (bitsandbytes, GPTQ and torchao all skip them by default).
    pub fn is_quantized(self) -> bool {
        matches!(self, Dtype::Fp8 | Dtype::Int8 | Dtype::Int4 | Dtype::Nf4)
    }

    /// Formats autograd can store activations and gradients in.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::Fp32 | Dtype::Fp16 | Dtype::Bf16)
    }
}

wire_enum! {
    /// What the GPU is asked to do.
    Mode {
        Inference = "inference",
        Full = "full",
        Lora = "lora",
        Qlora = "qlora",
    }
}

impl Mode {
    pub fn is_training(self) -> bool {
        self != Mode::Inference
    }

    pub fn is_adapter(self) -> bool {
        matches!(self, Mode::Lora | Mode::Qlora)
    }

    /// The weight format each mode starts from when the scenario leaves `weights` unset.
    pub fn default_weights(self) -> Dtype {
        match self {
            Mode::Qlora => Dtype::Nf4,
            _ => Dtype::Bf16,
        }
    }
}

wire_enum! {
    /// Which formula family produces the estimate.
    Method {
        /// Chapter 62's formula, reproduced exactly (seed 003).
        Lesson = "lesson",
        /// Per-tensor accounting calibrated against published measurements.
        Detailed = "detailed",
    }
}

wire_enum! {
    /// The optimizer, which sets how many bytes of state each trainable parameter carries.
    Optimizer {
        Adamw = "adamw",
        AdamwBf16 = "adamw-bf16",
        Adamw8bit = "adamw-8bit",
        Adafactor = "adafactor",
        Sgd = "sgd",
        SgdMomentum = "sgd-momentum",
        Lion = "lion",
        Lamb = "lamb",
        None = "none",
    }
}

impl Optimizer {
    /// State bytes per trainable parameter for unfactored optimizers.
    /// AdamW/LAMB keep two moments (Loshchilov & Hutter 2019; You et al. 2020), Lion and SGD with
    /// momentum one (Chen et al. 2023), bitsandbytes' 8-bit AdamW two 1-byte moments (Dettmers et al.
    /// 2022, "8-bit Optimizers via Block-wise Quantization"). Adafactor is factored and is counted from
    /// matrix shapes instead; `None` here means "not per-parameter".
    pub fn state_bytes_per_param(self) -> Option<f64> {
        match self {
            Optimizer::Adamw | Optimizer::Lamb => Some(8.0),
            Optimizer::AdamwBf16 => Some(4.0),
            Optimizer::Adamw8bit => Some(2.0),
            Optimizer::Lion | Optimizer::SgdMomentum => Some(4.0),
            Optimizer::Sgd | Optimizer::None => Some(0.0),
            Optimizer::Adafactor => None,
        }
    }
}

wire_enum! {
    /// Activation checkpointing (Chen et al. 2016; selective as in Korthikanti et al. 2022).
    Checkpointing {
        None = "none",
        Selective = "selective",
        Full = "full",
    }
}

wire_enum! {
    /// The attention kernel: eager materialises the s×s score matrix, flash/SDPA does not (Dao et al. 2022).
    Attention {
        Eager = "eager",
        Flash = "flash",
    }
}

wire_enum! {
    /// How the model state is split across GPUs (Rajbhandari et al. 2020, "ZeRO"), plus the two
    /// model-parallel layouts inference commonly uses.
    Sharding {
        None = "none",
        Ddp = "ddp",
        Zero1 = "zero1",
        Zero2 = "zero2",
        Zero3 = "zero3",
        Fsdp = "fsdp",
        /// Tensor parallel (Megatron-style): weights, KV cache and activations split N ways.
        Tensor = "tensor",
        /// Pipeline / `device_map="auto"`: whole layers placed on successive GPUs.
        Pipeline = "pipeline",
    }
}

impl Sharding {
    pub fn shards_optimizer(self) -> bool {
        matches!(
            self,
            Sharding::Zero1
                | Sharding::Zero2
                | Sharding::Zero3
                | Sharding::Fsdp
                | Sharding::Tensor
                | Sharding::Pipeline
        )
    }

    pub fn shards_gradients(self) -> bool {
        matches!(
            self,
            Sharding::Zero2
                | Sharding::Zero3
                | Sharding::Fsdp
                | Sharding::Tensor
                | Sharding::Pipeline
        )
    }

    pub fn shards_weights(self) -> bool {
        matches!(
            self,
            Sharding::Zero3 | Sharding::Fsdp | Sharding::Tensor | Sharding::Pipeline
        )
    }

    /// Model parallelism also splits activations and the KV cache; data parallelism does not.
    pub fn is_model_parallel(self) -> bool {
        matches!(self, Sharding::Tensor | Sharding::Pipeline)
    }
}

wire_enum! {
    /// What is moved to CPU memory (ZeRO-Offload, Ren et al. 2021).
    Offload {
        None = "none",
        Optimizer = "optimizer",
        All = "all",
    }
}

wire_enum! {
    /// What sits on top of the last hidden state.
    Head {
        /// A language-model head over the vocabulary: logits and cross-entropy scale with b·s·vocab.
        Lm = "lm",
        /// A small classification head (BERT-style fine-tunes): its logits are negligible.
        Classifier = "classifier",
    }
}

/// The LoRA target modules, by their Llama names (Hu et al. 2021 adapt q and v).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoraTarget {
    Q,
    K,
    V,
    O,
    Gate,
    Up,
    Down,
}

impl LoraTarget {
    pub const ALL: [LoraTarget; 7] = [
        LoraTarget::Q,
        LoraTarget::K,
        LoraTarget::V,
        LoraTarget::O,
        LoraTarget::Gate,
        LoraTarget::Up,
        LoraTarget::Down,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LoraTarget::Q => "q",
            LoraTarget::K => "k",
            LoraTarget::V => "v",
            LoraTarget::O => "o",
            LoraTarget::Gate => "gate",
            LoraTarget::Up => "up",
            LoraTarget::Down => "down",
        }
    }
}

/// A set of LoRA targets, written `q,v` or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct LoraTargets(u8);

impl LoraTargets {
    pub fn qv() -> LoraTargets {
        LoraTargets::from_iter([LoraTarget::Q, LoraTarget::V])
    }

    pub fn all() -> LoraTargets {
        LoraTargets::from_iter(LoraTarget::ALL)
    }

    pub fn contains(self, target: LoraTarget) -> bool {
        self.0 & (1 << target as u8) != 0
    }

    pub fn iter(self) -> impl Iterator<Item = LoraTarget> {
        LoraTarget::ALL
            .into_iter()
            .filter(move |t| self.contains(t.to_owned()))
    }

    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn parse(text: &str) -> Result<LoraTargets, String> {
        let trimmed = text.trim().to_ascii_lowercase();
        if trimmed == "all" {
            return Ok(LoraTargets::all());
        }
        let mut targets = LoraTargets(0);
        for part in trimmed.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let name = part.trim_end_matches("_proj");
            let target = LoraTarget::ALL
                .into_iter()
                .find(|t| t.as_str() == name)
                .ok_or_else(|| {
                    format!("`{part}` is not a LoRA target; use q,k,v,o,gate,up,down or all")
                })?;
            targets.0 |= 1 << target as u8;
        }
        if targets.is_empty() {
            return Err("no LoRA targets given; use e.g. q,v or all".to_string());
        }
        Ok(targets)
    }

    pub fn to_wire(self) -> String {
        if self == LoraTargets::all() {
            "all".to_string()
        } else {
            self.iter()
                .map(LoraTarget::as_str)
                .collect::<Vec<_>>()
                .join(",")
        }
    }
}

impl FromIterator<LoraTarget> for LoraTargets {
    fn from_iter<I: IntoIterator<Item = LoraTarget>>(iter: I) -> LoraTargets {
        LoraTargets(iter.into_iter().fold(0, |bits, t| bits | 1 << t as u8))
    }
}

impl Serialize for LoraTargets {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}

impl<'de> Deserialize<'de> for LoraTargets {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<LoraTargets, D::Error> {
        let text = String::deserialize(deserializer)?;
        LoraTargets::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_errors_list_the_choices() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::parse(d.as_str()).unwrap(), *d);
        }
        let err = Optimizer::parse("adam-ish").unwrap_err();
        assert!(err.contains("adamw-8bit"), "{err}");
        assert_eq!(Sharding::parse(" ZeRO3 ").unwrap(), Sharding::Zero3);
    }

    #[test]
    fn lora_targets_parse_hf_names_and_all() {
        let qv = LoraTargets::parse("q_proj, v_proj").unwrap();
        assert_eq!(qv, LoraTargets::qv());
        assert_eq!(qv.to_wire(), "q,v");
        assert_eq!(LoraTargets::parse("all").unwrap().len(), 7);
        assert!(LoraTargets::parse("q,x").is_err());
        assert!(LoraTargets::parse(",").is_err());
    }
}
