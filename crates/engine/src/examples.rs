//! Named scenarios the page offers in one click: the first screen's starting points, chapter 62's
//! worked examples and the 16 GB OOM budget guide's list of what a desktop already holds on the
//! GPU.

use crate::units::Bytes;

/// One of chapter 62's worked examples, as scenario `key=value` pairs on top of the defaults.
pub struct LessonExample {
    /// The page's `?lesson=<id>`.
    pub id: &'static str,
    pub title: &'static str,
    pub pairs: &'static [(&'static str, &'static str)],
}

const LLAMA_8B: [(&str, &str); 5] = [
    ("method", "lesson"),
    ("params", "8B"),
    ("layers", "32"),
    ("hidden", "4096"),
    ("seq", "2048"),
];

macro_rules! lesson_pairs {
    ($($k:literal = $v:literal),*) => {
        &[LLAMA_8B[0], LLAMA_8B[1], LLAMA_8B[2], LLAMA_8B[3], LLAMA_8B[4], $(($k, $v)),*]
    };
}

pub const LESSON_EXAMPLES: &[LessonExample] = &[
    LessonExample {
        id: "full-ft-8b",
        title: "Full fine-tune, Llama-8B FP16 (97.5 GB: an A100 80GB… times two)",
        pairs: lesson_pairs!("mode" = "full", "weights" = "fp16", "gpu" = "a100-80"),
    },
    LessonExample {
        id: "fp16-weights-t4",
        title: "Second attempt: FP16 weights alone on a T4 (16 GB > 15 GB)",
        pairs: lesson_pairs!("mode" = "inference", "weights" = "fp16", "gpu" = "t4"),
    },
    LessonExample {
        id: "qlora-8b-t4",
        title: "QLoRA, Llama-8B NF4 on a T4, with checkpointing",
        pairs: lesson_pairs!(
            "mode" = "qlora",
            "weights" = "nf4",
            "checkpointing" = "full",
            "gpu" = "t4"
        ),
    },
    LessonExample {
        id: "inference-nf4",
        title: "Inference, Llama-8B NF4 (4.5 GB)",
        pairs: lesson_pairs!("mode" = "inference", "weights" = "nf4", "gpu" = "t4"),
    },
    LessonExample {
        id: "t4-batch4-seq1024",
        title: "T4 with 9.4 GB headroom → batch 4, seq 1024, accumulation 4",
        pairs: lesson_pairs!(
            "mode" = "qlora",
            "weights" = "nf4",
            "checkpointing" = "full",
            "gpu" = "t4",
            "batch" = "4",
            "seq" = "1024",
            "grad-accum" = "4"
        ),
    },
];

pub fn lesson_example(id: &str) -> Option<&'static LessonExample> {
    LESSON_EXAMPLES.iter().find(|e| e.id == id.trim())
}

/// The lesson's three attempts at fitting Llama-8B on a T4, in order.
pub const LESSON_ATTEMPTS: [&str; 3] = ["full-ft-8b", "fp16-weights-t4", "qlora-8b-t4"];

/// A starting point the first screen offers: a scenario, as pairs on top of the defaults.
pub struct StartingPoint {
    pub id: &'static str,
    pub title: &'static str,
    pub pairs: &'static [(&'static str, &'static str)],
}

/// Fine-tuning and serving an 8B model on a 24 GB desktop card, each set up to fit: QLoRA with
/// checkpointing at batch 2, and vLLM at an 8k context (chapter 62's examples are the third).
pub const STARTING_POINTS: [StartingPoint; 2] = [
    StartingPoint {
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
    StartingPoint {
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
