//! The LM head's logits and the cross-entropy chain, which dominates activations for 128k-token
//! vocabularies: 16-bit logits, their log-softmax (fp32, or 16-bit with no upcast) and its
//! gradient; chunked, compiled, in place (Megatron-LM), or never built (Cut Cross-Entropy).

use super::formula::{Formula, Fx, Lazy};
use super::parallel::Split;
use super::stack::{num, Stack};
use crate::dtype::{Dtype, FP32_BYTES};
use crate::estimate::ComponentId;
use crate::scenario::{Resolved, Scenario};
use crate::workload::{Head, KeptScores, LogitsDtype, Loss};

/// The chunk of tokens a chunked cross-entropy keeps in fp32 at once.
pub const LOSS_CHUNK_TOKENS: f64 = 1024.0;
/// Per logit, cross-entropy keeps the log-probabilities and, in the backward pass, their
/// gradient: two tensors in the loss's format.
const LOG_PROBS_AND_GRAD: f64 = 2.0;

/// Training: the logits and the loss's tensors, whole or one chunk at a time.
pub(super) fn push_training(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    split: &Split,
    notes: &mut Vec<String>,
) {
    if s.head != Head::Lm {
        return;
    }
    if s.compile && s.loss == Loss::Whole && stack.explain {
        notes.push(
            "compile: the whole-sequence loss is counted eager, as torchtune's and torchtitan's \
             (December 2024) recipes run it; a compiled whole loss keeps less."
                .to_string(),
        );
    }
    if s.loss == Loss::InPlace && s.logits_dtype == LogitsDtype::Activations {
        notes.push(
            "logits-dtype=activations: Megatron-LM's vocab-parallel loss upcasts the logits \
             itself (VocabParallelCrossEntropy.calculate_logits_max), so its softmax is counted \
             in fp32."
                .to_string(),
        );
    }
    let logits = TrainingLogits {
        fx: stack.fx(),
        tokens: split.tokens(s),
        vocab: r.arch.vocab,
        e: r.act_dtype.bytes(),
        loss: match s.logits_dtype {
            LogitsDtype::Fp32 => Dtype::Fp32,
            LogitsDtype::Activations => r.act_dtype,
        },
        // One loss chunk's logits: the chunked loss's unit of work.
        chunk: f64::from(s.batch)
            * LOSS_CHUNK_TOKENS.min(split.sequence(s))
            * f64::from(r.arch.vocab),
    };
    let bytes = match (s.loss, s.compile) {
        (Loss::Cce, _) => logits.cut_cross_entropy(),
        (Loss::Chunked, true) => logits.chunked_compiled(),
        (Loss::Chunked, false) => logits.chunked(),
        (Loss::InPlace, _) => logits.in_place(),
        (Loss::Whole, _) => logits.whole(),
    };
    let ways = split.ways(stack.fx(), split.vocab());
    stack.push(ComponentId::Logits, "Logits & cross-entropy", bytes / ways);
}

/// The logits a training step's loss reads: `tokens` (b·s) rows of `vocab` values at `e` bytes,
/// and the `chunk` of them a chunked loss works on at once, which an eager loss reads in the
/// `loss` format (`logits-dtype`). Each loss returns its bytes.
struct TrainingLogits {
    fx: Fx,
    tokens: f64,
    vocab: u32,
    e: f64,
    loss: Dtype,
    chunk: f64,
}

impl TrainingLogits {
    /// b·s·V.
    fn elements(&self) -> Formula {
        self.fx.sym("b·s", self.tokens) * self.fx.sym("V", f64::from(self.vocab))
    }

    /// One chunk's logits, of `LOSS_CHUNK_TOKENS` tokens a sequence.
    fn chunk(&self, what: &str) -> Formula {
        self.fx.num(self.chunk).words(format_args!(
            "one {}-token chunk{what}",
            Lazy(|| num(LOSS_CHUNK_TOKENS))
        ))
    }

    /// Apple's Cut Cross-Entropy (apple/ml-cross-entropy, cut_cross_entropy/cce.py,
    /// `LinearCrossEntropyFunction`): the forward kernel computes each token's log-sum-exp from
    /// the hidden states and the classifier block by block, saves only that fp32 value per token,
    /// and the backward kernel recomputes the logit blocks it needs.
    fn cut_cross_entropy(&self) -> Formula {
        self.fx.sym("b·s", self.tokens)
            * self
                .fx
                .num(FP32_BYTES)
                .unit("B (fp32 log-sum-exp; no logits kept)")
    }

    /// torchtune compiles the chunked loss's `compute_cross_entropy` (the fp32 upcast and the
    /// cross-entropy, torchtune/training/_compile.py `compile_loss`) in place; a whole loss module
    /// stays eager, as the recipes drop `compile_loss`'s result. The partitioner saves the 16-bit
    /// chunk and recomputes the upcast and log-softmax in one backward kernel, whose only output
    /// is the chunk's 16-bit gradient.
    fn chunked_compiled(&self) -> Formula {
        (self.elements() + self.chunk("'s gradient"))
            * self.fx.num(self.e).unit("B (compiled: no fp32 copy)")
    }

    /// Eager chunks: the whole logits, and one chunk's log-probabilities and gradient.
    fn chunked(&self) -> Formula {
        let d = self.loss;
        self.elements() * self.fx.num(self.e).unit("B")
            + self.chunk("")
                * self
                    .fx
                    .num(LOG_PROBS_AND_GRAD * d.bytes())
                    .unit(format_args!("B ({d} log-probs + grad)"))
    }

    /// Megatron-LM's `_VocabParallelCrossEntropy` (megatron/core/tensor_parallel/
    /// cross_entropy.py): the forward upcasts the logits to fp32 and runs the max subtraction,
    /// `exp` and division in place on that copy, saves it as the softmax, and the backward
    /// subtracts the one-hot target and scales it in place, returning it as the gradient, which
    /// autograd casts back to the logits' dtype. At either peak one 16-bit and one fp32 tensor of
    /// the logits' size exist; `calculate_logits_max` upcasts whatever `logits-dtype` says.
    fn in_place(&self) -> Formula {
        let fx = self.fx;
        self.elements()
            * (fx.num(self.e).unit("B logits")
                + fx.num(FP32_BYTES)
                    .unit("B fp32 softmax, in place its own grad"))
    }

    /// `F.cross_entropy` on the whole logits: their log-softmax and its gradient.
    fn whole(&self) -> Formula {
        let (fx, d) = (self.fx, self.loss);
        self.elements()
            * (fx.num(self.e).unit("B logits")
                + fx.num(LOG_PROBS_AND_GRAD * d.bytes())
                    .unit(format_args!("B {d} log-probs and their grad")))
    }
}

/// Inference: the next token's logits for each sequence. transformers' `generate` asks the model
/// for the last position's logits only (`logits_to_keep = 1`, since 4.45) and copies them to fp32
/// for sampling (`outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)`); serving engines
/// likewise compute logits only at the positions they sample. Qwen3-30B-A3B's published
/// `generate` peaks grow by 2.8 GiB from a 1-token to a 30,720-token prompt, its KV cache's growth:
/// whole-prompt logits would add 9 GB more.
pub(super) fn push_prompt(s: &Scenario, r: &Resolved, stack: &mut Stack) {
    if s.head != Head::Lm {
        return;
    }
    let fx = stack.fx();
    let e = r.act_dtype.bytes();
    let logits = fx.sym("b", f64::from(s.batch))
        * fx.sym("V", f64::from(r.arch.vocab))
        * (fx.num(e).unit("B") + fx.num(FP32_BYTES).unit("B fp32 copy"));
    stack.push(ComponentId::Logits, "Next-token logits", logits);
}

/// Inference: what `generate` keeps of each new token's distribution until it returns
/// ([`KeptScores`]), `b × V` values a token: transformers' tuples hold one fp32 tensor per new
/// token for each of `output_scores` and `output_logits`; gpt-fast's list holds the
/// probabilities of every decode step, the tokens after the one prefill samples. torchao's
/// `generate.py` Llama-3.1-8B table (pytorch/ao PR #2276) grows by 10.7 GB from batch 1 to 128,
/// bf16 and fp8 alike: the 208-token cache's 3.5 GB and 199 steps × 128 × 128256 × 2 B = 6.5 GB
/// of kept probabilities.
pub(super) fn push_kept_scores(
    s: &Scenario,
    r: &Resolved,
    stack: &mut Stack,
    notes: &mut Vec<String>,
) {
    let (tensors_per_token, bytes, steps_skipped) = match s.kept_scores {
        KeptScores::None => return,
        KeptScores::Scores => (1.0, FP32_BYTES, 0),
        KeptScores::ScoresAndLogits => (2.0, FP32_BYTES, 0),
        KeptScores::Probs => (1.0, r.act_dtype.bytes(), 1),
    };
    let Some(prompt) = s.prompt else {
        notes.push(format!(
            "kept-scores={} counts one distribution per new token, seq − prompt; prompt is unset, \
             so there are none: set prompt.",
            s.kept_scores
        ));
        return;
    };
    let steps = s.seq.saturating_sub(prompt).saturating_sub(steps_skipped);
    let fx = stack.fx();
    let per_step = fx.sym("b", f64::from(s.batch))
        * fx.sym("V", f64::from(r.arch.vocab))
        * fx.num(tensors_per_token).unit("tensors")
        * fx.num(bytes).unit("B");
    let steps = fx
        .sym("steps", f64::from(steps))
        .unit(if steps_skipped > 0 {
            "decode steps"
        } else {
            "new-token steps"
        });
    stack.push(
        ComponentId::KeptScores,
        "Kept scores (generate's per-token distributions)",
        steps * per_step,
    );
}
