//! The kind of run a scenario is, as its user would name it ("QLoRA on one GPU", "vLLM serving"):
//! what the published measurements are grouped by, so the accuracy a user is shown is the accuracy
//! measured on runs like theirs. Every row's kind comes from its own scenario, never from a label
//! written beside it.

use crate::dtype::Dtype;
use crate::runtime::Runtime;
use crate::scenario::{Resolved, Scenario};
use crate::workload::Mode;

/// How the weights of an unquantized-or-not inference run are stored: what moves its error most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightClass {
    /// fp32, fp16 or bf16.
    Float,
    Fp8,
    Int8,
    /// GPTQ/AWQ int4, bitsandbytes NF4, MXFP4.
    FourBit,
}

impl WeightClass {
    fn of(weights: Dtype) -> WeightClass {
        match weights {
            Dtype::Fp32 | Dtype::Fp16 | Dtype::Bf16 => WeightClass::Float,
            Dtype::Fp8 => WeightClass::Fp8,
            Dtype::Int8 => WeightClass::Int8,
            Dtype::Int4 | Dtype::Nf4 | Dtype::Mxfp4 => WeightClass::FourBit,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    /// transformers' `generate` on a dense model.
    Inference {
        weights: WeightClass,
        multi_gpu: bool,
    },
    /// transformers' `generate` on a mixture of experts, any precision.
    MoeInference,
    /// Full fine-tuning, LoRA or QLoRA of a dense model.
    Training { mode: Mode, multi_gpu: bool },
    /// Any training of a mixture of experts.
    MoeTraining,
    /// A serving runtime: its logged figures, not a peak, are what is compared.
    Serving(Runtime),
}

/// The kinds of run under transformers, in the order tables list them.
const TRANSFORMERS_KINDS: [RunKind; 16] = [
    RunKind::Inference {
        weights: WeightClass::Float,
        multi_gpu: false,
    },
    RunKind::Inference {
        weights: WeightClass::Float,
        multi_gpu: true,
    },
    RunKind::Inference {
        weights: WeightClass::Fp8,
        multi_gpu: false,
    },
    RunKind::Inference {
        weights: WeightClass::Fp8,
        multi_gpu: true,
    },
    RunKind::Inference {
        weights: WeightClass::Int8,
        multi_gpu: false,
    },
    RunKind::Inference {
        weights: WeightClass::Int8,
        multi_gpu: true,
    },
    RunKind::Inference {
        weights: WeightClass::FourBit,
        multi_gpu: false,
    },
    RunKind::Inference {
        weights: WeightClass::FourBit,
        multi_gpu: true,
    },
    RunKind::MoeInference,
    RunKind::Training {
        mode: Mode::Full,
        multi_gpu: false,
    },
    RunKind::Training {
        mode: Mode::Full,
        multi_gpu: true,
    },
    RunKind::Training {
        mode: Mode::Lora,
        multi_gpu: false,
    },
    RunKind::Training {
        mode: Mode::Lora,
        multi_gpu: true,
    },
    RunKind::Training {
        mode: Mode::Qlora,
        multi_gpu: false,
    },
    RunKind::Training {
        mode: Mode::Qlora,
        multi_gpu: true,
    },
    RunKind::MoeTraining,
];

impl RunKind {
    /// Every kind, so a table of figures can say something for each, rows or none: the
    /// transformers kinds, then one per serving runtime.
    pub fn all() -> Vec<RunKind> {
        let serving = Runtime::ALL
            .iter()
            .filter(|r| r.rules().facts().serves)
            .map(|&r| RunKind::Serving(r));
        TRANSFORMERS_KINDS.iter().copied().chain(serving).collect()
    }

    /// The kind of a valid scenario; `None` when it does not resolve.
    pub fn of(scenario: &Scenario) -> Option<RunKind> {
        scenario
            .resolve()
            .ok()
            .map(|resolved| RunKind::of_resolved(scenario, &resolved))
    }

    pub fn of_resolved(scenario: &Scenario, resolved: &Resolved) -> RunKind {
        let moe = resolved.arch.moe.is_moe();
        let multi_gpu = scenario.gpus > 1;
        match scenario.mode {
            Mode::Inference if scenario.runtime.rules().facts().serves => {
                RunKind::Serving(scenario.runtime)
            }
            Mode::Inference if moe => RunKind::MoeInference,
            Mode::Inference => RunKind::Inference {
                weights: WeightClass::of(resolved.weights),
                multi_gpu,
            },
            _ if moe => RunKind::MoeTraining,
            mode => RunKind::Training { mode, multi_gpu },
        }
    }

    /// The kind's name in calibration/ and in `cargo xtask accuracy`'s tables.
    pub fn key(self) -> &'static str {
        self.names().0
    }

    /// The kind as a person would say it.
    pub fn label(self) -> &'static str {
        self.names().1
    }

    /// The key and the label, side by side so they cannot drift apart.
    fn names(self) -> (&'static str, &'static str) {
        use WeightClass::*;
        match self {
            RunKind::Inference { weights, multi_gpu } => match (weights, multi_gpu) {
                (Float, false) => (
                    "inference",
                    "transformers inference, 16- or 32-bit weights, one GPU",
                ),
                (Float, true) => (
                    "inference_multi",
                    "transformers inference, 16- or 32-bit weights, several GPUs",
                ),
                (Fp8, false) => (
                    "inference_fp8",
                    "transformers inference, fp8 weights, one GPU",
                ),
                (Fp8, true) => (
                    "inference_fp8_multi",
                    "transformers inference, fp8 weights, several GPUs",
                ),
                (Int8, false) => (
                    "inference_int8",
                    "transformers inference, int8 weights, one GPU",
                ),
                (Int8, true) => (
                    "inference_int8_multi",
                    "transformers inference, int8 weights, several GPUs",
                ),
                (FourBit, false) => (
                    "inference_int4",
                    "transformers inference, 4-bit weights, one GPU",
                ),
                (FourBit, true) => (
                    "inference_int4_multi",
                    "transformers inference, 4-bit weights, several GPUs",
                ),
            },
            RunKind::MoeInference => (
                "moe_inference",
                "transformers inference of a mixture of experts",
            ),
            RunKind::Training { mode, multi_gpu } => match (mode, multi_gpu) {
                (Mode::Lora, false) => ("lora", "LoRA on one GPU"),
                (Mode::Lora, true) => ("lora_multi", "LoRA on several GPUs"),
                (Mode::Qlora, false) => ("qlora", "QLoRA on one GPU"),
                (Mode::Qlora, true) => ("qlora_multi", "QLoRA on several GPUs"),
                (_, false) => ("full", "full fine-tuning on one GPU"),
                (_, true) => ("full_multi", "full fine-tuning on several GPUs"),
            },
            RunKind::MoeTraining => ("moe_training", "training a mixture of experts"),
            RunKind::Serving(runtime) => (runtime.as_str(), runtime.rules().facts().accuracy_label),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::scenario_from_query;

    fn kind(query: &str) -> &'static str {
        let (scenario, errors) = scenario_from_query(query);
        assert!(errors.is_empty(), "{query}: {errors:?}");
        RunKind::of(&scenario).expect("a valid scenario").key()
    }

    #[test]
    fn every_kind_is_listed_once() {
        let keys: Vec<&str> = RunKind::all().iter().map(|k| k.key()).collect();
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        let labels: std::collections::BTreeSet<&str> =
            RunKind::all().iter().map(|k| k.label()).collect();
        assert_eq!(labels.len(), keys.len());
    }

    #[test]
    fn the_kind_follows_what_the_user_runs() {
        assert_eq!(kind("model=llama-3.1-8b&mode=qlora"), "qlora");
        assert_eq!(kind("model=llama-3.1-8b&mode=lora&gpus=2"), "lora_multi");
        assert_eq!(kind("model=llama-3.1-8b&mode=full"), "full");
        assert_eq!(kind("model=llama-3.1-8b&mode=inference"), "inference");
        // The weights the preset's checkpoint resolves to, not only the ones typed.
        assert_eq!(
            kind("model=llama-3.1-8b&mode=inference&weights=int4"),
            "inference_int4"
        );
        assert_eq!(kind("model=gpt-oss-20b&mode=inference"), "moe_inference");
        assert_eq!(kind("model=qwen3-30b-a3b&mode=lora"), "moe_training");
        assert_eq!(
            kind("model=qwen3-30b-a3b&mode=inference&runtime=vllm"),
            "vllm"
        );
        assert_eq!(
            kind("model=llama-3.1-8b&mode=inference&runtime=llama.cpp"),
            "llama.cpp"
        );
        let (training_on_vllm, _) =
            scenario_from_query("model=llama-3.1-8b&mode=full&runtime=vllm");
        assert_eq!(RunKind::of(&training_on_vllm), None, "invalid: no kind");
    }
}
