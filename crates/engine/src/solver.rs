//! Answers to "what fits?": the largest micro-batch and sequence, the gradient accumulation for a
//! target effective batch, the smallest catalogue GPU, and the ordered fix-it ladder for a scenario
//! that does not fit (the OOM budget guides' recovery order, the VRAM auto-config guide's
//! search, and the 8B memory guide's safe-batch rule).

use crate::dtype::Dtype;
use crate::estimate::{breakdown, total_bytes, Budget, Verdict};
use crate::gpu_catalogue::GPUS;
use crate::optimizer::Optimizer;
use crate::scenario::{FieldError, Scenario};
use crate::sharding::Offload;
use crate::units::Bytes;
use crate::workload::{Checkpointing, Mode};
use serde::{Deserialize, Serialize};

/// The longest sequence the solver searches.
pub const MAX_SEQ_SEARCHED: u32 = 1 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LadderStep {
    /// What changes, in words ("Halve the batch: 8 → 4").
    pub action: String,
    /// The `key=value` changes that apply this step, cumulative with the steps before it.
    pub changes: Vec<(String, String)>,
    pub total_bytes: Bytes,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Solution {
    pub schema: String,
    pub usable_bytes: Bytes,
    /// The 8B memory guide's rule: safe batch = (usable − fixed) / per-sample. Everything in the
    /// detailed and lesson methods is affine in the micro-batch, so the rule is exact here.
    pub fixed_bytes: Bytes,
    pub per_sample_bytes: Bytes,
    pub max_batch: Option<u32>,
    pub max_seq: Option<u32>,
    pub target_batch: Option<u32>,
    /// Micro-batch and accumulation that reach `target_batch` (micro × accumulation × data-parallel GPUs).
    pub micro_batch: Option<u32>,
    pub grad_accum: Option<u32>,
    pub smallest_gpu: Option<String>,
    pub ladder: Vec<LadderStep>,
}

/// The total when the scenario fits (tight or not), by the estimate's own verdict.
fn fits(s: &Scenario) -> Option<Bytes> {
    let b = breakdown(s).ok()?;
    b.verdict().fits().then_some(b.total)
}

fn usable(s: &Scenario) -> Option<Bytes> {
    let resolved = s.resolve().ok()?;
    Some(Budget::new(s, &resolved).usable)
}

fn with<T>(s: &Scenario, change: impl FnOnce(&mut Scenario) -> T) -> Scenario {
    let mut copy = s.clone();
    change(&mut copy);
    copy
}

/// The largest `value` in `1..=hi` for which `ok(value)` holds, given `ok` is monotone (true then false).
pub(crate) fn largest(hi: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    if !ok(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u32, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// The longest micro-batch the solver searches: the largest count a field takes.
pub const MAX_BATCH_SEARCHED: u32 = crate::scenario::MAX_COUNT as u32;

/// The 8B memory guide's batch rule, its terms, and the largest micro-batch that fits.
pub(crate) struct BatchRule {
    pub usable: Bytes,
    pub fixed: Bytes,
    pub per_sample: Bytes,
    pub max_batch: Option<u32>,
}

/// The largest micro-batch: the rule's answer, checked against the estimate's own verdict.
pub(crate) fn batch_rule(s: &Scenario) -> Result<BatchRule, Vec<FieldError>> {
    let at = |batch: u32| total_bytes(&with(s, |c| c.batch = batch));
    let one = at(1)?;
    let two = at(2)?;
    let per_sample = two.saturating_sub(one);
    let fixed = one.saturating_sub(per_sample);
    let usable = usable(s).unwrap_or(Bytes::ZERO);
    let max_batch = if one > usable {
        None
    } else {
        let cap = MAX_BATCH_SEARCHED;
        let rule = usable
            .saturating_sub(fixed)
            .0
            .checked_div(per_sample.0)
            .unwrap_or(u64::from(cap));
        let candidate = u32::try_from(rule).unwrap_or(u32::MAX).clamp(1, cap);
        // Guard the rule against rounding at the boundary. `fixed` and `per_sample` are
        // differences of rounded totals, so the rule can also land below the boundary (the
        // property tests found max_batch + 1 still fitting): when the next batch fits, search
        // the whole range instead of stopping at the rule.
        let fits_at = |b: u32| fits(&with(s, |c| c.batch = b)).is_some();
        let hi = if candidate < cap && fits_at(candidate + 1) {
            cap
        } else {
            candidate
        };
        largest(hi, fits_at)
    };
    Ok(BatchRule {
        usable,
        fixed,
        per_sample,
        max_batch,
    })
}

/// The longest sequence that fits, up to [`MAX_SEQ_SEARCHED`].
pub(crate) fn max_seq(s: &Scenario) -> Option<u32> {
    largest(MAX_SEQ_SEARCHED, |seq| {
        fits(&with(s, |c| c.seq = seq)).is_some()
    })
}

pub fn solve(s: &Scenario, target_batch: Option<u32>) -> Result<Solution, Vec<FieldError>> {
    let BatchRule {
        usable,
        fixed,
        per_sample,
        max_batch,
    } = batch_rule(s)?;
    let max_seq = max_seq(s);
    // Context- and tensor-parallel groups share one batch; replicas and shards each run their own.
    let data_parallel = if s.sharding.is_model_parallel() {
        1
    } else {
        (s.gpus / (s.tp.max(1) * s.cp.max(1))).max(1)
    };
    let (micro_batch, grad_accum) = match (target_batch, max_batch) {
        (Some(target), Some(max)) if target > 0 => {
            let per_step = target.div_ceil(data_parallel);
            let micro = max.min(per_step).max(1);
            (Some(micro), Some(per_step.div_ceil(micro)))
        }
        _ => (None, None),
    };
    let smallest_gpu = GPUS
        .iter()
        .find(|g| {
            fits(&with(s, |c| {
                c.make_alike();
                c.vram = None;
                c.gpu = g.id.to_string();
            }))
            .is_some()
        })
        .map(|g| g.id.to_string());
    Ok(Solution {
        schema: "vramfit.fit/1".to_string(),
        usable_bytes: usable,
        fixed_bytes: fixed,
        per_sample_bytes: per_sample,
        max_batch,
        max_seq,
        target_batch,
        micro_batch,
        grad_accum,
        smallest_gpu,
        ladder: ladder(s),
    })
}

/// One rung of the ladder: what it changes in words, and the `key=value` changes that apply it,
/// or `None` where it does not apply to the scenario as it stands.
type Step = fn(&Scenario) -> Option<(String, Vec<(&'static str, String)>)>;

/// The 16 GB OOM budget guide's recovery order: halve the batch, checkpoint, 16-bit, then the
/// bigger levers.
const STEPS: [Step; 9] = [
    halve_batch,
    checkpoint,
    train_in_16_bit,
    eight_bit_optimizer,
    lora_instead,
    quantize_base,
    shorten_sequence,
    micro_batch_one,
    shard,
];

fn halve_batch(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.batch > 1).then(|| {
        let half = c.batch / 2;
        // Saturating: `set` accepts grad-accum up to 1e7 and the fields are public, so a
        // plain product can overflow u32 (a panic in debug builds). A saturated count is
        // over the limit, so `set` rejects it and the step is skipped.
        let accum = c.grad_accum.saturating_mul(2);
        (
            format!(
                "Halve the batch: {} → {half}, accumulate ×{} to keep the effective batch",
                c.batch, accum
            ),
            vec![
                ("batch", half.to_string()),
                ("grad-accum", accum.to_string()),
            ],
        )
    })
}

fn checkpoint(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    let every_layer = c.checkpointing == Checkpointing::Full && c.checkpoint_every == 1;
    (c.mode.is_training() && !every_layer).then(|| {
        (
            "Turn on gradient checkpointing".to_string(),
            vec![
                ("checkpointing", "full".to_string()),
                ("checkpoint-every", "1".to_string()),
            ],
        )
    })
}

fn train_in_16_bit(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.weights == Some(Dtype::Fp32)).then(|| {
        (
            "Train in 16-bit (bf16)".to_string(),
            vec![("weights", "bf16".to_string())],
        )
    })
}

fn eight_bit_optimizer(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.mode == Mode::Full
        && matches!(
            c.optimizer,
            Optimizer::Adamw | Optimizer::Lamb | Optimizer::AdamwBf16
        ))
    .then(|| {
        (
            "Use an 8-bit optimizer (bitsandbytes AdamW8bit)".to_string(),
            vec![("optimizer", "adamw-8bit".to_string())],
        )
    })
}

fn lora_instead(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.mode == Mode::Full).then(|| {
        (
            "Train LoRA adapters instead of all weights".to_string(),
            vec![("mode", "lora".to_string())],
        )
    })
}

fn quantize_base(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.mode == Mode::Lora).then(|| {
        (
            "Quantize the base model to NF4 (QLoRA)".to_string(),
            vec![
                ("mode", "qlora".to_string()),
                ("weights", "nf4".to_string()),
            ],
        )
    })
}

fn shorten_sequence(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.seq > 256).then(|| {
        (
            format!("Shorten the sequence: {} → {}", c.seq, c.seq / 2),
            vec![("seq", (c.seq / 2).to_string())],
        )
    })
}

fn micro_batch_one(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    (c.batch > 1).then(|| {
        // Saturating, as above: grad-accum and batch may each be 1e7.
        let accum = c.grad_accum.saturating_mul(c.batch);
        (
            format!("Micro-batch 1, accumulate ×{accum}"),
            vec![
                ("batch", "1".to_string()),
                ("grad-accum", accum.to_string()),
            ],
        )
    })
}

/// The most GPUs the ladder proposes: eight 8-GPU nodes.
const MAX_SHARD_GPUS: u32 = 64;

/// Shards over the fewest GPUs, doubling from twice today's count, on which the run fits (or
/// over [`MAX_SHARD_GPUS`] when none does): a 671B model needs more than the next power of two.
fn shard(c: &Scenario) -> Option<(String, Vec<(&'static str, String)>)> {
    // offload=all is only valid with zero3/fsdp, so switching to tensor made the step
    // invalid and it was skipped, leaving an OOM scenario with an empty ladder (found by
    // the property tests): keep the sharding that offloading needs.
    let sharding = if c.offload == Offload::All {
        c.sharding.as_str()
    } else if c.mode == Mode::Inference {
        "tensor"
    } else {
        "zero3"
    };
    let sharded = |gpus: u32| {
        with(c, |s| {
            s.gpus = gpus;
            let _ = s.set("sharding", sharding);
        })
    };
    // Saturating, as above (`gpus` is a public field; JSON can hold any u32).
    let first = c.gpus.saturating_mul(2).max(2);
    let gpus = std::iter::successors(Some(first), |g| g.checked_mul(2))
        .take_while(|g| *g <= MAX_SHARD_GPUS.max(first))
        .find(|g| fits(&sharded(*g)).is_some())
        .unwrap_or(MAX_SHARD_GPUS.max(first));
    Some((
        format!("Shard across {gpus} GPUs ({sharding})"),
        vec![
            ("gpus", gpus.to_string()),
            ("sharding", sharding.to_string()),
        ],
    ))
}

/// The fix-it ladder: each step applied on top of the ones before, until the scenario fits. A
/// step's verdict is the estimate's own, so a step that fits with little room says "tight".
pub fn ladder(s: &Scenario) -> Vec<LadderStep> {
    let mut steps = Vec::new();
    if fits(s).is_some() {
        return steps;
    }
    let mut current = s.clone();
    let mut changes: Vec<(String, String)> = Vec::new();
    for step in STEPS {
        let Some((action, step_changes)) = step(&current) else {
            continue;
        };
        let mut next = current.clone();
        if step_changes.iter().any(|(k, v)| next.set(k, v).is_err()) {
            continue;
        }
        let Ok(b) = breakdown(&next) else {
            continue;
        };
        let (total, verdict) = (b.total, b.verdict());
        for (k, v) in step_changes {
            changes.retain(|(existing, _)| existing != k);
            changes.push((k.to_string(), v));
        }
        steps.push(LadderStep {
            action,
            changes: changes.clone(),
            total_bytes: total,
            verdict,
        });
        current = next;
        if verdict.fits() {
            break;
        }
    }
    steps
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A scenario from `key=value` pairs, each of which must be accepted.
    pub(crate) fn scenario(pairs: &[(&str, &str)]) -> Scenario {
        let mut s = Scenario::default();
        for (k, v) in pairs {
            s.set(k, v).unwrap();
        }
        s
    }

    #[test]
    fn max_batch_is_the_boundary() {
        let s = scenario(&[
            ("model", "llama-3.1-8b"),
            ("mode", "qlora"),
            ("seq", "1024"),
            ("checkpointing", "full"),
            ("gpu", "t4"),
        ]);
        let sol = solve(&s, Some(16)).unwrap();
        let max = sol.max_batch.unwrap();
        assert!(fits(&with(&s, |c| c.batch = max)).is_some());
        assert!(fits(&with(&s, |c| c.batch = max + 1)).is_none());
        assert_eq!(sol.micro_batch, Some(max.min(16)));
        assert!(sol.micro_batch.unwrap() * sol.grad_accum.unwrap() >= 16);
    }

    #[test]
    fn the_safe_batch_rule_falls_out() {
        let s = scenario(&[
            ("model", "llama-3.1-8b"),
            ("mode", "lora"),
            ("gpu", "h100-80"),
        ]);
        let sol = solve(&s, None).unwrap();
        let rule = (sol.usable_bytes.0 - sol.fixed_bytes.0) / sol.per_sample_bytes.0;
        assert_eq!(u64::from(sol.max_batch.unwrap()), rule);
    }

    #[test]
    fn ladder_ends_fitting_for_full_fine_tune_on_a_t4() {
        let s = scenario(&[
            ("params", "8B"),
            ("layers", "32"),
            ("hidden", "4096"),
            ("mode", "full"),
            ("batch", "4"),
            ("gpu", "t4"),
        ]);
        let steps = ladder(&s);
        assert!(steps.len() >= 3, "{steps:?}");
        // The ladder stops at the first step that runs, tight or not.
        assert!(steps.last().unwrap().verdict.fits(), "{steps:?}");
        let mut applied = s.clone();
        for (k, v) in &steps.last().unwrap().changes {
            applied.set(k, v).unwrap();
        }
        assert_eq!(
            total_bytes(&applied).unwrap(),
            steps.last().unwrap().total_bytes
        );
    }

    #[test]
    fn smallest_gpu_fits_and_the_one_before_does_not() {
        let s = scenario(&[("model", "llama-3.1-8b"), ("mode", "lora")]);
        let sol = solve(&s, None).unwrap();
        let id = sol.smallest_gpu.unwrap();
        let index = GPUS.iter().position(|g| g.id == id).unwrap();
        assert!(index > 0);
        assert!(fits(&with(&s, |c| c.gpu = GPUS[index - 1].id.to_string())).is_none());
    }

    #[test]
    fn each_ladder_step_has_the_estimates_own_verdict_tight_included() {
        // A Llama-3.1-8B QLoRA run at batch 16 on a T4 goes OOM; its ladder ends once it fits,
        // and every step's verdict is what `estimate` says of the changes applied.
        let s = scenario(&[
            ("model", "llama-3.1-8b"),
            ("mode", "qlora"),
            ("batch", "16"),
            ("gpu", "t4"),
        ]);
        let steps = ladder(&s);
        assert!(!steps.is_empty());
        for step in &steps {
            let mut applied = s.clone();
            for (k, v) in &step.changes {
                applied.set(k, v).unwrap();
            }
            let e = crate::estimate(&applied).unwrap();
            assert_eq!(step.verdict, e.verdict, "{}", step.action);
            assert_eq!(step.total_bytes, e.total_bytes);
        }
        assert!(steps.last().unwrap().verdict.fits());
    }
}
