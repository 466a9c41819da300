//! What-if curves: the scenario's total per GPU as the micro-batch (in inference, the concurrent
//! sequences) and the sequence (in inference, the context) grow, against the GPU's budget, each
//! with its crossing: the largest value that fits, found by the solver's own search, so the curve
//! and `vramfit fit` never disagree. The page draws these; every number on the curves is from here.
//!
//! A serving runtime is not swept: its pool fills its budget whatever
//! the batch, so its question is concurrency against context (`serving_plan`'s curve).

use crate::estimate::{breakdown, Budget, Verdict};
use crate::scenario::{FieldError, Scenario};
use crate::solver::{batch_rule, max_seq, MAX_BATCH_SEARCHED, MAX_SEQ_SEARCHED};
use crate::units::Bytes;

/// The sequence curve's first power of two: shorter sequences differ from it by little, and the
/// solver's ladder stops shortening there too. The scenario's own value and the crossing are
/// always on the curve, however short.
const SEQ_CURVE_START: u32 = 256;

/// One value of the swept field and what the scenario costs there.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: u32,
    pub total: Bytes,
    pub verdict: Verdict,
}

/// The total as one field grows.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The scenario field the sweep sets (`batch` or `seq`), so a point applies as `key=x`.
    pub key: &'static str,
    /// The scenario's own value of the field.
    pub current: u32,
    /// The largest value that fits (`solver::solve`'s `max_batch` / `max_seq`); `None` when even
    /// 1 does not.
    pub crossing: Option<u32>,
    /// Ascending and distinct: powers of two up to the first past the crossing and the current
    /// value (capped where the solver stops searching), plus the crossing and the current value.
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct WhatIf {
    /// Capacity, usable and tight: the lines the curves cross.
    pub budget: Budget,
    pub batch: Sweep,
    pub seq: Sweep,
}

/// Both curves for a scenario that grows per sequence; the scenario's own errors when it cannot
/// be estimated, and a `runtime` error under a serving runtime.
pub fn what_if(s: &Scenario) -> Result<WhatIf, Vec<FieldError>> {
    let here = breakdown(s)?;
    if here.serving.is_some() {
        return Err(vec![FieldError::new(
            "runtime",
            "a serving runtime's pool fills its budget: see its concurrency against context",
        )]);
    }
    let max_batch = batch_rule(s)?.max_batch;
    Ok(WhatIf {
        budget: here.budget,
        batch: sweep(
            s,
            "batch",
            s.batch,
            max_batch,
            1,
            MAX_BATCH_SEARCHED,
            |c, x| c.batch = x,
        ),
        seq: sweep(
            s,
            "seq",
            s.seq,
            max_seq(s),
            SEQ_CURVE_START,
            MAX_SEQ_SEARCHED,
            |c, x| c.seq = x,
        ),
    })
}

/// The points from `start` (a power of two) doubling to the first power of two past both the
/// crossing and the current value, which shows the curve leaving the budget, capped at `cap`.
fn sweep(
    s: &Scenario,
    key: &'static str,
    current: u32,
    crossing: Option<u32>,
    start: u32,
    cap: u32,
    set: fn(&mut Scenario, u32),
) -> Sweep {
    let end = crossing
        .unwrap_or(0)
        .max(current)
        .saturating_add(1)
        .checked_next_power_of_two()
        .map_or(cap, |p| p.min(cap));
    let mut xs: Vec<u32> = std::iter::successors(Some(start.min(end)), |x| x.checked_mul(2))
        .take_while(|&x| x <= end)
        .collect();
    for x in [crossing, Some(current), Some(end)].into_iter().flatten() {
        let at = xs.partition_point(|&v| v < x);
        if xs.get(at) != Some(&x) {
            xs.insert(at, x);
        }
    }
    let points = xs
        .into_iter()
        .filter_map(|x| {
            let mut at = s.clone();
            set(&mut at, x);
            let b = breakdown(&at).ok()?;
            Some(Point {
                x,
                total: b.total,
                verdict: b.verdict(),
            })
        })
        .collect();
    Sweep {
        key,
        current,
        crossing,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate;
    use crate::solver::solve;
    use crate::solver::tests::scenario;

    /// Training and inference, roomy, tight, and out of memory even at batch 1.
    fn scenarios() -> Vec<Scenario> {
        vec![
            Scenario::default(),
            scenario(&[
                ("model", "llama-3.1-8b"),
                ("mode", "qlora"),
                ("seq", "1024"),
                ("checkpointing", "full"),
                ("gpu", "t4"),
            ]),
            scenario(&[
                ("model", "llama-3.1-8b"),
                ("mode", "lora"),
                ("gpu", "h100-80"),
            ]),
            scenario(&[
                ("model", "llama-2-70b"),
                ("mode", "inference"),
                ("weights", "nf4"),
                ("seq", "4096"),
                ("batch", "8"),
                ("gpu", "a100-80"),
            ]),
            scenario(&[
                ("model", "llama-3.1-8b"),
                ("mode", "full"),
                ("gpu", "rtx-4090"),
            ]),
            scenario(&[
                ("params", "135M"),
                ("mode", "full"),
                ("batch", "16"),
                ("seq", "512"),
                ("gpu", "rtx-5080"),
            ]),
        ]
    }

    #[test]
    fn the_crossing_is_the_solvers_answer() {
        for s in scenarios() {
            let curves = what_if(&s).unwrap();
            let sol = solve(&s, None).unwrap();
            assert_eq!(curves.batch.crossing, sol.max_batch, "{s:?}");
            assert_eq!(curves.seq.crossing, sol.max_seq, "{s:?}");
        }
        // Out of memory at batch 1: no crossing on the batch curve, every point OOM.
        let full = &scenarios()[4];
        let curves = what_if(full).unwrap();
        assert_eq!(curves.batch.crossing, None);
        assert!(curves
            .batch
            .points
            .iter()
            .all(|p| p.verdict == Verdict::Oom));
    }

    #[test]
    fn totals_grow_and_the_verdict_turns_at_the_crossing() {
        for s in scenarios() {
            let curves = what_if(&s).unwrap();
            for sweep in [&curves.batch, &curves.seq] {
                assert!(sweep.points.len() >= 2, "{}: {sweep:?}", sweep.key);
                for pair in sweep.points.windows(2) {
                    assert!(pair[0].x < pair[1].x, "{}: ascending, distinct", sweep.key);
                    assert!(pair[0].total <= pair[1].total, "{}: {pair:?}", sweep.key);
                }
                for p in &sweep.points {
                    let fits = sweep.crossing.is_some_and(|c| p.x <= c);
                    assert_eq!(p.verdict.fits(), fits, "{} at {}", sweep.key, p.x);
                    assert_eq!(p.verdict, curves.budget.verdict(p.total));
                }
                let last = sweep.points.last().unwrap().x;
                if let Some(crossing) = sweep.crossing {
                    assert!(sweep.points.iter().any(|p| p.x == crossing));
                    let cap = if sweep.key == "batch" {
                        MAX_BATCH_SEARCHED
                    } else {
                        MAX_SEQ_SEARCHED
                    };
                    assert!(
                        last > crossing || last == cap,
                        "{}: a point past it",
                        sweep.key
                    );
                }
            }
        }
    }

    #[test]
    fn the_scenarios_own_point_is_its_estimate() {
        for s in scenarios() {
            let curves = what_if(&s).unwrap();
            let e = estimate(&s).unwrap();
            assert_eq!(curves.budget.usable, e.usable_bytes);
            assert_eq!(curves.budget.capacity, e.capacity_bytes);
            assert_eq!(curves.budget.tight_threshold, e.tight_threshold_bytes);
            for sweep in [&curves.batch, &curves.seq] {
                let here = sweep.points.iter().find(|p| p.x == sweep.current).unwrap();
                assert_eq!(here.total, e.total_bytes, "{}", sweep.key);
                assert_eq!(here.verdict, e.verdict, "{}", sweep.key);
            }
        }
    }

    #[test]
    fn points_are_powers_of_two_past_the_crossing_and_capped_where_the_solver_stops() {
        let s = Scenario::default();
        let xs = |sweep: Sweep| sweep.points.iter().map(|p| p.x).collect::<Vec<_>>();
        let set: fn(&mut Scenario, u32) = |c, x| c.batch = x;
        // The crossing (6) and the current value (3) join the powers of two up to the first
        // past them both.
        assert_eq!(
            xs(sweep(&s, "batch", 3, Some(6), 1, 1 << 20, set)),
            [1, 2, 3, 4, 6, 8]
        );
        assert_eq!(
            xs(sweep(&s, "batch", 8, Some(8), 1, 1 << 20, set)),
            [1, 2, 4, 8, 16]
        );
        // Nothing fits: up to the first power of two past the current value.
        assert_eq!(
            xs(sweep(&s, "batch", 4, None, 1, 1 << 20, set)),
            [1, 2, 4, 8]
        );
        // Everything the solver searches fits: the curve ends at its cap, not past it.
        assert_eq!(
            xs(sweep(&s, "batch", 1, Some(12), 1, 12, set)),
            [1, 2, 4, 8, 12]
        );
        // The sequence curve starts at its first power of two, unless the scenario is shorter.
        let set: fn(&mut Scenario, u32) = |c, x| c.seq = x;
        assert_eq!(
            xs(sweep(
                &s,
                "seq",
                100,
                Some(700),
                SEQ_CURVE_START,
                MAX_SEQ_SEARCHED,
                set
            )),
            [100, 256, 512, 700, 1024]
        );
    }

    #[test]
    fn serving_runtimes_and_invalid_scenarios_are_typed_errors() {
        let vllm = scenario(&[
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("gpu", "h100-80"),
        ]);
        let errors = what_if(&vllm).unwrap_err();
        assert_eq!(errors[0].field, "runtime");
        // Fields are public: a combination `set` would refuse still answers with errors.
        let broken = Scenario {
            gpu: "no-such-gpu".to_string(),
            ..Scenario::default()
        };
        assert_eq!(what_if(&broken).unwrap_err()[0].field, "gpu");
    }
}
