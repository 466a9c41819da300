//! Named scenarios the page offers in one click: the first screen's starting points, chapter 62's
//! worked examples and the 16 GB OOM budget guide's list of what a desktop already holds on the
//! GPU.

use crate::units::Bytes;

/// A scenario the page offers by name: `key=value` pairs on top of the defaults.
pub struct NamedScenario {
    /// The page's `?lesson=<id>` for chapter 62's examples.
    pub id: &'static str,
    pub title: &'static str,
    pub pairs: &'static [(&'static str, &'static str)],
}

/// Chapter 62's examples, each on top of the lesson's Llama-8B by the numbers (its method and
/// shape), which every worked example starts from.
macro_rules! lesson_examples {
    ($($id:literal, $title:literal: $($k:literal = $v:literal),*;)*) => {
        &[$(NamedScenario {
            id: $id,
            title: $title,
            pairs: &[
                ("method", "lesson"),
                ("params", "8B"),
                ("layers", "32"),
                ("hidden", "4096"),
                ("seq", "2048"),
                $(($k, $v)),*
            ],
        },)*]
    };
}

/// Chapter 62's worked examples.
pub const LESSON_EXAMPLES: &[NamedScenario] = lesson_examples! {
    "full-ft-8b", "Full fine-tune, Llama-8B FP16 (97.5 GB: an A100 80GB… times two)":
        "mode" = "full", "weights" = "fp16", "gpu" = "a100-80";
    "fp16-weights-t4", "Second attempt: FP16 weights alone on a T4 (16 GB > 15 GB)":
        "mode" = "inference", "weights" = "fp16", "gpu" = "t4";
    "qlora-8b-t4", "QLoRA, Llama-8B NF4 on a T4, with checkpointing":
        "mode" = "qlora", "weights" = "nf4", "checkpointing" = "full", "gpu" = "t4";
    "inference-nf4", "Inference, Llama-8B NF4 (4.5 GB)":
        "mode" = "inference", "weights" = "nf4", "gpu" = "t4";
    "t4-batch4-seq1024", "T4 with 9.4 GB headroom → batch 4, seq 1024, accumulation 4":
        "mode" = "qlora", "weights" = "nf4", "checkpointing" = "full", "gpu" = "t4",
        "batch" = "4", "seq" = "1024", "grad-accum" = "4";
};

pub fn lesson_example(id: &str) -> Option<&'static NamedScenario> {
    LESSON_EXAMPLES.iter().find(|e| e.id == id.trim())
}

/// The lesson's three attempts at fitting Llama-8B on a T4, in order.
pub const LESSON_ATTEMPTS: [&str; 3] = ["full-ft-8b", "fp16-weights-t4", "qlora-8b-t4"];

/// Fine-tuning and serving an 8B model on a 24 GB desktop card, each set up to fit: QLoRA with
/// checkpointing at batch 2, and vLLM at an 8k context (chapter 62's examples are the third).
pub const STARTING_POINTS: [NamedScenario; 2] = [
    NamedScenario {
        id: "fine-tune",
        title: "Fine-tune a model on my GPU",
        pairs: &[
            ("model", "llama-3.1-8b"),
            ("mode", "qlora"),
            ("batch", "2"),
            ("checkpointing", "full"),
            ("gpu", "rtx-4090"),
        ],
    },
    NamedScenario {
        id: "serve",
        title: "Serve a model",
        pairs: &[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("max-model-len", "8192"),
            ("gpu", "rtx-4090"),
        ],
    },
];

/// The 16 GB OOM budget guide's inventory of what a desktop holds on the GPU before training
/// starts (RTX 5080, MB).
pub const DESKTOP_USAGE: &[(&str, Bytes)] = &[
    ("Operating system + drivers", Bytes(800 * 1_000_000)),
    ("Desktop environment", Bytes(400 * 1_000_000)),
    ("Browser with tabs", Bytes(300 * 1_000_000)),
    ("VS Code", Bytes(150 * 1_000_000)),
    ("Terminals", Bytes(50 * 1_000_000)),
    ("Background services", Bytes(200 * 1_000_000)),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{estimate, Scenario};

    fn run(id: &str) -> crate::Estimate {
        let example = lesson_example(id).unwrap();
        let (s, errors) = Scenario::from_pairs(example.pairs.iter().copied());
        assert!(errors.is_empty(), "{errors:?}");
        estimate(&s).unwrap()
    }

    #[test]
    fn every_example_is_a_valid_scenario_with_the_lessons_numbers() {
        assert_eq!(run("full-ft-8b").total_bytes, Bytes(97_573_741_824));
        assert_eq!(run("inference-nf4").total_bytes, Bytes(4_500_000_000));
        assert_eq!(run("qlora-8b-t4").total_bytes, Bytes(5_013_382_810));
        assert_eq!(run("fp16-weights-t4").verdict, crate::Verdict::Oom);
        assert_eq!(run("t4-batch4-seq1024").verdict, crate::Verdict::Fits);
        for id in LESSON_ATTEMPTS {
            assert!(lesson_example(id).is_some(), "{id}");
        }
    }

    #[test]
    fn each_starting_point_fits_its_gpu() {
        for start in &STARTING_POINTS {
            let (s, errors) = Scenario::from_pairs(start.pairs.iter().copied());
            assert!(errors.is_empty(), "{}: {errors:?}", start.id);
            let e = estimate(&s).unwrap();
            assert_eq!(e.verdict, crate::Verdict::Fits, "{}", start.id);
        }
        let serving = estimate(&Scenario::from_pairs(STARTING_POINTS[1].pairs.iter().copied()).0);
        assert!(serving.unwrap().serving.unwrap().starts);
    }

    #[test]
    fn the_budget_guides_desktop_adds_up_to_its_1900_mb() {
        let total: Bytes = DESKTOP_USAGE.iter().map(|(_, b)| *b).sum();
        assert_eq!(total, Bytes(1_900_000_000));
    }
}
