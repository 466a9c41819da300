//! What changed in llama.cpp's memory defaults between builds: each change with its PR and the
//! first build that has it. A build is master's commit count (`version: N (hash)`, release tag
//! `bN`), so build N has every change merged before it. Where no release or log pins the first
//! build, the rule says between which cited builds it lies, and a build in that window gets a note.
//! `latest` has every change.

use crate::runtime::{ContextLength, KqMask, LlamaBuild, LogitRows, OffloadOutput};
use crate::scenario::Scenario;

/// A default that changed between builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// `--fit` on by default (PR #16653, merged 2025-12-15 as b1f3a6e5d, the "first bad commit"
    /// issues #18097 and #18181 name). Build 7437 (ec98e2002) runs it: issue #18111 starts
    /// llama-server with no fit flag and "the new fit algorithm fills up my vram", and #18097 runs
    /// `llama-fit-params` on it; b7445's llama-server log (calibration row llama-029) prints
    /// "fitting params to device memory" unasked. No earlier build was found logged without it,
    /// so the first build is at most 7437 and is taken as 7437.
    FitByDefault,
    /// `-ngl k` offloads the output layer first (PR #18148, merged 2025-12-18 as 57c1e0564).
    /// Not pinned: b7445's log (row llama-029) still prints "offloading 26 repeating layers"
    /// before "offloading output layer", and b8586's (row llama-040) prints the output layer
    /// first. Build 7437 was in use on 2025-12-16, two days before the merge, so the first build
    /// is likely soon after b7445: 7446 is taken, and builds up to 8585 get a note.
    OutputFirst,
    /// llama-server reserves logits for `min(n_batch, n_parallel)` rows rather than the ubatch
    /// (PR #23861, "llama: limit max outputs of `llama_context`", de6f727aa, 2026-06-01): release
    /// b9460 (its notes name the PR); b9442 was the newest build on 2026-05-31, before the merge.
    SlotLogitRows,
    /// Under flash attention the host writes the KQ mask in f16, with no f32 copy cast on the
    /// GPU (PR #23764, "llama: use f16 mask for FA to save VRAM", 031ddb2e0, 2026-05-29):
    /// release b9410, whose notes are that commit's (the f16 mask and its `llama_cast` helper).
    F16KqMask,
    /// Quantized matmuls of a batch run llama.cpp's own int8 tensor-core kernels (MMQ): PR #7676
    /// ("CUDA: use tensor cores for MMQ", legacy quants, opened 2024-05-31), PR #7860 (q4_K,
    /// q5_K, q6_K, opened 2024-06-10) and #7921 (q2_K, q3_K, opened 2024-06-13). Before them a Volta or newer card dequantized
    /// the weights to f16 and ran cuBLAS (PR #3412, and #3776: "FP16 cuBLAS GEMM is used instead
    /// of MMQ for Volta or newer", as PR #4682 restates). Not pinned to a release: b2843 (the
    /// newest build of the GPU-Benchmarks-on-LLM-Inference notebooks, 2024-05) is the last cited
    /// without it, and no cited build lies between it and the 2025 scoreboards, so it is taken as
    /// present from b2844. The same builds mark the decode kernels the notebooks ran:
    /// `LLAMA_CPP_CUDA_2024` and `LLAMA_CPP_METAL_2024`.
    MmqTensorCores,
    /// `-c 0` given keeps the trained context whole under `--fit`: the flag sets
    /// `fit_params_min_ctx = UINT32_MAX` (PR #19070, "llama-fit-params: keep explicit
    /// --ctx-size 0", merged 2026-01-24; common/arg.cpp at llama.cpp@0c1e57098). Before it
    /// `--fit` shrank `-c 0` as it shrinks no `-c`: issue #18376's b7539 takes 4096 for `-c 0`.
    /// Not pinned: b7539 is the last cited without it and b8586 (row llama-040, a Qwen3.5 model
    /// released after the merge) the first cited with it; taken as present from b7540.
    KeepsGivenFullContext,
}

/// The last build cited without [`Rule::KeepsGivenFullContext`] and the first cited with it.
const FULL_CONTEXT_BOUNDS: (u32, u32) = (7539, 8586);

/// The last build cited without [`Rule::MmqTensorCores`].
const MMQ_TENSOR_CORES_LAST_WITHOUT: u32 = 2843;

/// The last build cited without [`Rule::OutputFirst`] and the first cited with it.
const OUTPUT_FIRST_BOUNDS: (u32, u32) = (7445, 8586);

impl Rule {
    /// The first build taken to have it.
    const fn since(self) -> u32 {
        match self {
            Rule::FitByDefault => 7437,
            Rule::OutputFirst => OUTPUT_FIRST_BOUNDS.0 + 1,
            Rule::SlotLogitRows => 9460,
            Rule::F16KqMask => 9410,
            Rule::MmqTensorCores => MMQ_TENSOR_CORES_LAST_WITHOUT + 1,
            Rule::KeepsGivenFullContext => FULL_CONTEXT_BOUNDS.0 + 1,
        }
    }
}

/// The defaults of one build.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rules {
    pub build: LlamaBuild,
}

impl Rules {
    pub fn new(build: LlamaBuild) -> Rules {
        Rules { build }
    }

    pub fn applies(self, rule: Rule) -> bool {
        self.build.at_least(rule.since())
    }

    /// `--fit` when unset, and why.
    pub fn default_fit(self) -> (bool, &'static str) {
        if self.applies(Rule::FitByDefault) {
            (true, "llama.cpp's default since PR #16653, build 7437")
        } else {
            (
                false,
                "off before build 7437, the first cited with PR #16653",
            )
        }
    }

    /// Which part `-ngl` offloads first when unset, and why.
    pub fn default_offload_output(self) -> (OffloadOutput, &'static str) {
        if self.applies(Rule::OutputFirst) {
            (
                OffloadOutput::First,
                "llama.cpp's since PR #18148, after b7445",
            )
        } else {
            (
                OffloadOutput::Last,
                "llama.cpp's before PR #18148, b7445 and older",
            )
        }
    }

    /// The logit rows llama-server reserves when unset, and why.
    pub fn default_logit_rows(self) -> (LogitRows, &'static str) {
        if self.applies(Rule::SlotLogitRows) {
            (LogitRows::Slots, "llama-server's since PR #23861, b9460")
        } else {
            (LogitRows::Ubatch, "llama-server's before PR #23861, b9460")
        }
    }

    /// The KQ mask's type under flash attention when unset, and why.
    pub fn default_kq_mask(self) -> (KqMask, &'static str) {
        if self.applies(Rule::F16KqMask) {
            (KqMask::F16, "llama.cpp's since PR #23764, b9410")
        } else {
            (KqMask::F32, "llama.cpp's before PR #23764, b9410")
        }
    }

    /// Whether `--fit` may shrink the context as set: left out (`auto`), or `-c 0` before
    /// [`Rule::KeepsGivenFullContext`].
    pub fn fit_shrinks(self, ctx: Option<ContextLength>) -> bool {
        match ctx {
            Some(ContextLength::Auto) => true,
            Some(ContextLength::Tokens(0)) => !self.applies(Rule::KeepsGivenFullContext),
            _ => false,
        }
    }

    /// What the estimate says of a `-c 0` at a build between those cited without and with
    /// [`Rule::KeepsGivenFullContext`].
    pub fn full_context_note(self, s: &Scenario) -> Option<String> {
        let LlamaBuild::Number(n) = self.build else {
            return None;
        };
        let (last_without, first_with) = FULL_CONTEXT_BOUNDS;
        let unpinned = n > last_without && n < first_with;
        (s.ctx_size == Some(ContextLength::Tokens(0)) && fit(s) && unpinned).then(|| {
            format!(
                "-c 0 at {}: PR #19070 (--fit keeps -c 0 whole) lies between b{last_without} and b{first_with}, unpinned; taken as present.",
                self.build
            )
        })
    }

    /// What the estimate says of the build it was asked for, when a default it relies on is
    /// unpinned there: `-ngl`'s order matters unless every layer is on the GPU.
    pub fn note(self, s: &Scenario, blocks: u32) -> Option<String> {
        let LlamaBuild::Number(n) = self.build else {
            return None;
        };
        let (last_without, first_with) = OUTPUT_FIRST_BOUNDS;
        let every_layer = s.n_gpu_layers.is_some_and(|ngl| ngl > blocks);
        let unpinned = n > last_without && n < first_with;
        (s.offload_output.is_none() && !every_layer && unpinned).then(|| {
            format!(
                "-ngl's order at {}: PR #18148 (the output layer first) lies between b{last_without} (without it) and b{first_with} (with it), and its first build is not pinned; it is taken as present from b{}. Set offload-output if the log says \"offloading output layer to GPU\" after the repeating layers.",
                self.build,
                last_without + 1
            )
        })
    }
}

/// Whether `--fit` runs: as given, or the build's default.
pub(super) fn fit(s: &Scenario) -> bool {
    s.fit
        .unwrap_or_else(|| Rules::new(s.llama_cpp_build).default_fit().0)
}

/// Which part `-ngl` offloads first: as given, or the build's default.
pub(super) fn offload_output(s: &Scenario) -> OffloadOutput {
    s.offload_output
        .unwrap_or_else(|| Rules::new(s.llama_cpp_build).default_offload_output().0)
}

/// The logit rows the compute buffer reserves: as given, or llama-server's at the build.
pub(super) fn logit_rows(s: &Scenario) -> LogitRows {
    s.logit_rows
        .unwrap_or_else(|| Rules::new(s.llama_cpp_build).default_logit_rows().0)
}

/// The KQ mask's type under flash attention: as given, or the build's.
pub(super) fn kq_mask(s: &Scenario) -> KqMask {
    s.kq_mask
        .unwrap_or_else(|| Rules::new(s.llama_cpp_build).default_kq_mask().0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_default_follows_its_build() {
        let at = |b: &str| Rules::new(LlamaBuild::parse(b).unwrap());
        assert!(!at("b7436").default_fit().0);
        assert!(at("b7437").default_fit().0);
        assert_eq!(at("b7445").default_offload_output().0, OffloadOutput::Last);
        assert_eq!(at("b7446").default_offload_output().0, OffloadOutput::First);
        assert_eq!(at("b9459").default_logit_rows().0, LogitRows::Ubatch);
        assert_eq!(at("b9460").default_logit_rows().0, LogitRows::Slots);
        assert_eq!(at("latest").default_logit_rows().0, LogitRows::Slots);
        assert_eq!(at("b9409").default_kq_mask().0, KqMask::F32);
        assert_eq!(at("b9410").default_kq_mask().0, KqMask::F16);
        assert_eq!(at("latest").default_kq_mask().0, KqMask::F16);
        assert!(at("b7539").fit_shrinks(Some(ContextLength::Tokens(0))));
        assert!(!at("b7540").fit_shrinks(Some(ContextLength::Tokens(0))));
        assert!(at("latest").fit_shrinks(Some(ContextLength::Auto)));
        assert!(!at("latest").fit_shrinks(Some(ContextLength::Tokens(4096))));
        assert!(!at("latest").fit_shrinks(None));
        assert!(!at("b2843").applies(Rule::MmqTensorCores));
        assert!(at("b2844").applies(Rule::MmqTensorCores));
        assert!(at("latest").applies(Rule::MmqTensorCores));
        let mut s = Scenario::default();
        assert!(at("b8000").note(&s, 32).unwrap().contains("not pinned"));
        assert!(at("b8586").note(&s, 32).is_none());
        assert!(at("latest").note(&s, 32).is_none());
        s.n_gpu_layers = Some(33);
        assert!(at("b8000").note(&s, 32).is_none(), "every layer on the GPU");
        s.n_gpu_layers = Some(20);
        s.offload_output = Some(OffloadOutput::Last);
        assert!(at("b8000").note(&s, 32).is_none(), "the order given");
    }
}
