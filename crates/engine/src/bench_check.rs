//! A benchmark's measured speeds against the speed model: each llama-bench test as the scenario
//! it measures (`-p N` is prompt N and seq N, `-n N` is prompt 1 and seq N, docs/speed.md), the
//! error, and the correction a user can apply (the median of measured ÷ predicted).

use crate::estimate::{estimate, Speed};
use crate::scenario::Scenario;
use serde::Serialize;
use vramfit_bench::Row;

/// One test against the estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchCheck {
    /// As llama-bench names it: `pp512`, `tg128`.
    pub test: String,
    pub measured_tokens_per_s: f64,
    pub predicted_tokens_per_s: Option<f64>,
    pub error_pct: Option<f64>,
    /// Why there is no prediction, where there is none.
    pub note: Option<String>,
}

/// Every test, and the factor that brings the estimate to the measurements.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    pub checks: Vec<BenchCheck>,
    /// The median of measured ÷ predicted over the tests with a prediction.
    pub correction: Option<f64>,
}

/// The tokens/s the estimate gives for a test of `prompt` and `gen` tokens; `None` for a test
/// with a prompt on a card without a published throughput.
fn predicted(speed: &Speed, prompt: u32, gen: u32) -> Option<f64> {
    match (prompt, gen) {
        (_, 0) => speed.prefill_tokens_per_s,
        (0, _) => Some(speed.decode_tokens_per_s),
        // llama-bench times both together: the prompt, then each token.
        (p, g) => {
            let seconds = speed.ttft_s? + f64::from(g) / speed.decode_tokens_per_s;
            Some(f64::from(p + g) / seconds)
        }
    }
}

/// The scenario a test measures, on top of `base` (its model, GPU and runtime).
fn scenario_of(base: &Scenario, row: &Row) -> Scenario {
    let mut s = base.clone();
    let (prompt, seq) = match (row.n_prompt, row.n_gen) {
        (p, 0) => (p, p),
        (0, g) => (1, g),
        (p, g) => (p, p + g),
    };
    s.prompt = Some(prompt);
    s.seq = seq;
    s.batch = 1;
    s.concurrency = None;
    if let Some(ngl) = row.n_gpu_layers {
        // llama-bench prints -1 for "every layer" in some builds.
        s.n_gpu_layers = (ngl < 999).then_some(ngl);
    }
    if let Some(fa) = row.flash_attn {
        s.flash_attn = fa;
    }
    s
}

fn check(base: &Scenario, row: &Row) -> BenchCheck {
    let mut out = BenchCheck {
        test: row.test(),
        measured_tokens_per_s: row.tokens_per_s,
        predicted_tokens_per_s: None,
        error_pct: None,
        note: None,
    };
    if row.n_depth > 0 {
        out.note = Some("a test after a cached context is not modelled yet".into());
        return out;
    }
    match estimate(&scenario_of(base, row)) {
        Ok(e) => match e.speed.as_ref().and_then(|t| t.inference()) {
            Some(speed) => match predicted(speed, row.n_prompt, row.n_gen) {
                Some(p) => {
                    out.predicted_tokens_per_s = Some(p);
                    out.error_pct = Some((p - row.tokens_per_s) / row.tokens_per_s * 100.0);
                }
                None => {
                    out.note = Some("the card's maker publishes no tensor throughput, so prefill is not predicted".into());
                }
            },
            None => out.note = e.notes.iter().find(|n| n.contains("speed")).cloned(),
        },
        Err(errors) => out.note = errors.first().map(|e| e.to_string()),
    }
    out.note = out.note.or_else(|| {
        out.predicted_tokens_per_s
            .is_none()
            .then(|| "no speed estimate: name a catalogue GPU (--gpu)".to_string())
    });
    out
}

/// Every row of a benchmark against the estimate of `base` at that test's lengths.
pub fn check_bench(base: &Scenario, rows: &[Row]) -> BenchReport {
    let checks: Vec<BenchCheck> = rows.iter().map(|row| check(base, row)).collect();
    let mut ratios: Vec<f64> = checks
        .iter()
        .filter_map(|c| Some(c.measured_tokens_per_s / c.predicted_tokens_per_s?))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let correction = match ratios.len() {
        0 => None,
        n if n % 2 == 1 => Some(ratios[n / 2]),
        n => Some((ratios[n / 2 - 1] + ratios[n / 2]) / 2.0),
    };
    BenchReport { checks, correction }
}
