//! Published speed measurements (calibration/speed-measured.csv) against the speed model, each
//! row as the scenario calibration/speed-scenarios.csv gives it, grouped by runtime and backend,
//! figure, what a decode step is bound by, dense or mixture of experts, and class of card. A row the runtime's efficiency
//! constants were set from names that constant in the `fit` column; the others are held out, and
//! only they say how well the model predicts a run it was not tuned on.

use super::speed_kind::SpeedKind;
use super::{median, records, summary, Summary};
use crate::estimate::{estimate, Estimate, Speed};
use crate::gpu_catalogue;
use crate::query::scenario_from_query;
use crate::scenario::Scenario;
use crate::units::parse_f64;
use serde::Serialize;
use std::collections::BTreeSet;

/// The constants a `fit` cell may name: each runtime efficiency calibration/ sets, as
/// crates/engine/src/estimate/serving/llamacpp.rs and mlx.rs name it.
pub const FIT_CONSTANTS: &[&str] = &[
    "LLAMA_CPP_CUDA.bandwidth",
    "LLAMA_CPP_CUDA.compute",
    "LLAMA_CPP_CUDA.experts",
    "LLAMA_CPP_CUDA_PRE_AMPERE.layer_s",
    "LLAMA_CPP_CUDA_2024.bandwidth",
    "LLAMA_CPP_CUDA_2024.compute",
    "LLAMA_CPP_MMQ",
    "LLAMA_CPP_METAL.bandwidth",
    "LLAMA_CPP_METAL.compute",
    "LLAMA_CPP_METAL.experts",
    "LLAMA_CPP_METAL_2024.bandwidth",
    "LLAMA_CPP_ROCM.bandwidth",
    "LLAMA_CPP_ROCM_WAVE64.bandwidth",
    "LLAMA_CPP_VULKAN.bandwidth",
    "MLX_METAL.bandwidth",
    "MLX_METAL.experts",
];

/// One published speed against the estimate's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedComparison {
    pub id: String,
    /// Runtime and backend, figure, bound (decode), dense or MoE, and class of card: "llama.cpp
    /// CUDA decode, memory-bound, dense, consumer".
    pub kind: SpeedKind,
    /// The catalogue card the row ran on.
    pub gpu: String,
    /// A mixture of experts (else dense).
    pub moe: bool,
    /// The efficiency constant set from this row (speed-scenarios.csv's `fit`); `None` for a
    /// held-out row.
    pub fit: Option<String>,
    pub source: String,
    pub figure: String,
    /// Tokens per second.
    pub measured: f64,
    pub predicted: f64,
    pub error_pct: f64,
    /// The estimate's band, low and high tokens/s (decode and output figures).
    pub band: Option<(f64, f64)>,
    /// Whether the measurement lies within the band.
    pub in_band: Option<bool>,
}

/// The figure a row is compared on, and whether the speed's band covers it.
fn figure(speed: &Speed, name: &str) -> Option<(f64, bool)> {
    match name {
        "prefill_tokens_per_s" => speed.prefill_tokens_per_s.map(|p| (p, false)),
        "decode_tokens_per_s" => Some((speed.decode_tokens_per_s, speed.concurrency == 1)),
        "output_tokens_per_s" => Some((speed.output_tokens_per_s, true)),
        _ => None,
    }
}

/// Whether the scenario's device can run past its memory: a unified one (a Mac past Metal's
/// working set, a shared pool) can; a discrete card cannot.
fn can_run_past_its_memory(s: &Scenario) -> bool {
    gpu_catalogue::find(&s.gpu).is_none_or(|g| g.is_unified())
}

/// A row's scenario, its estimate and its published tokens/s, or why it cannot be compared.
fn estimate_row(query: &str, tokens: Option<f64>) -> Result<(Scenario, Estimate, f64), String> {
    let (scenario, errors) = scenario_from_query(query);
    if let Some(error) = errors.first() {
        return Err(format!("scenario does not parse: {error}"));
    }
    let measured = tokens.ok_or("no tokens/s in the row")?;
    let e = estimate(&scenario).map_err(|e| format!("scenario is invalid: {}", e[0]))?;
    // A discrete card cannot hold more than its memory (llama.cpp fails to allocate), so a run
    // that does not fit as written either ran something the row does not state (layers kept
    // off the card) or used less than the memory estimate; a unified device can exceed its
    // working set, and did.
    if !e.verdict.fits() && !can_run_past_its_memory(&scenario) {
        return Err(
            "the scenario does not fit the card (the estimate is out of memory): the run \
                    kept layers off the GPU, which the row does not state, or used less memory \
                    than the estimate"
                .into(),
        );
    }
    Ok((scenario, e, measured))
}

/// Every row speed-scenarios.csv maps, against the estimate, and every row left out with its
/// reason.
pub fn compare_speed(
    measured_csv: &str,
    scenarios_csv: &str,
) -> (Vec<SpeedComparison>, Vec<(String, String)>) {
    let measured = records(measured_csv);
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for row in records(scenarios_csv) {
        let get = |key: &str| row.get(key).map(String::as_str).unwrap_or("");
        let id = get("id").to_string();
        let Some(published) = measured.iter().find(|m| m.get("id") == row.get("id")) else {
            skipped.push((id, "no such row in speed-measured.csv".into()));
            continue;
        };
        let tokens = published.get("tokens_per_s").and_then(|t| parse_f64(t));
        let (scenario, e, measured) = match estimate_row(get("query"), tokens) {
            Ok(row) => row,
            Err(why) => {
                skipped.push((id, why));
                continue;
            }
        };
        let Some((predicted, banded)) = e
            .speed
            .as_ref()
            .and_then(|t| t.inference())
            .and_then(|s| figure(s, get("figure")))
        else {
            let why = e.notes.iter().find(|n| n.contains("speed")).cloned();
            skipped.push((
                id,
                why.unwrap_or_else(|| "the estimate has no speed".into()),
            ));
            continue;
        };
        let speed = e.speed.as_ref().and_then(|t| t.inference());
        let kind = SpeedKind::of(&e, get("figure"));
        let fit = Some(get("fit").to_string()).filter(|f| !f.is_empty());
        let band = speed.filter(|_| banded).map(|s| {
            let scale = predicted / s.output_tokens_per_s;
            (s.low * scale, s.high * scale)
        });
        compared.push(SpeedComparison {
            gpu: scenario.gpu.clone(),
            moe: kind.model == "MoE",
            kind,
            fit,
            source: published.get("source").cloned().unwrap_or_default(),
            figure: get("figure").to_string(),
            error_pct: (predicted - measured) / measured * 100.0,
            in_band: band.map(|(low, high)| (low..=high).contains(&measured)),
            band,
            measured,
            predicted,
            id,
        });
    }
    (compared, skipped)
}

/// One figure over a set of rows: how many, on how many cards, the median |error| and, where the
/// figure has a band, how many rows it holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedTotal {
    /// `decode_tokens_per_s` or `prefill_tokens_per_s`.
    pub figure: String,
    pub rows: usize,
    pub gpus: usize,
    pub median_abs_pct: f64,
    /// Rows inside the estimate's band, of the rows that have one.
    pub in_band: usize,
    pub banded: usize,
}

/// Each figure's total over `rows`, decode first.
pub fn speed_totals(rows: &[SpeedComparison]) -> Vec<SpeedTotal> {
    let figures: BTreeSet<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
    figures
        .into_iter()
        .map(|figure| {
            let of: Vec<&SpeedComparison> = rows.iter().filter(|r| r.figure == figure).collect();
            let mut errors: Vec<f64> = of.iter().map(|r| r.error_pct.abs()).collect();
            SpeedTotal {
                figure: figure.to_string(),
                rows: of.len(),
                gpus: of
                    .iter()
                    .map(|r| r.gpu.as_str())
                    .collect::<BTreeSet<_>>()
                    .len(),
                median_abs_pct: median(&mut errors),
                in_band: of.iter().filter(|r| r.in_band == Some(true)).count(),
                banded: of.iter().filter(|r| r.in_band.is_some()).count(),
            }
        })
        .collect()
}

/// Median and worst absolute error per kind.
pub fn summarize_speed(rows: &[SpeedComparison]) -> Vec<Summary> {
    let mut kinds: Vec<String> = rows.iter().map(|r| r.kind.to_string()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            summary(
                &kind,
                "tokens/s",
                rows.iter()
                    .filter(|r| r.kind.to_string() == kind)
                    .map(|r| (r.id.as_str(), r.error_pct, r.source.as_str())),
            )
        })
        .collect()
}

/// The efficiency constants fitted on decode rows, which the speed band's rule counts as the
/// parameters the fit rows' residuals were fitted with: `LLAMA_CPP_CUDA`'s share, time per layer
/// and experts' share (3), `LLAMA_CPP_CUDA_PRE_AMPERE`'s time per layer (1), `LLAMA_CPP_CUDA_2024`'s
/// cache share, unclocked share and time per layer, and clocked share, dmmv and mmvq ceilings
/// and cycles (7), `LLAMA_CPP_METAL`'s share, time and experts (3), `LLAMA_CPP_METAL_2024`'s
/// share, time and cache share (3), `LLAMA_CPP_ROCM`'s share (1), `LLAMA_CPP_ROCM_WAVE64`'s and
/// `LLAMA_CPP_VULKAN`'s share and time (2 each), `MLX_METAL`'s share, time and experts (3).
pub const DECODE_FITTED_CONSTANTS: usize = 25;

/// The speed band's factors by its rule, set before its held-out coverage was seen: over every
/// banded fit row (each decode row a constant was set from), the log of measured over predicted
/// tokens/s; its 5th and 95th percentiles (linear between order statistics), pooled across
/// backends, scaled by `√((n + p) / (n − p))` for `n` rows and `p` fitted constants
/// ([`DECODE_FITTED_CONSTANTS`]): a least-squares fit's in-sample residuals understate a new
/// row's error by that factor in variance (`σ²(n − p)/n` against `σ²(1 + p/n)`). The low end is
/// held at or below the typical value and the high end at or above it. `None` without rows.
pub fn speed_band_rule(rows: &[SpeedComparison]) -> Option<(f64, f64)> {
    let logs: Vec<f64> = rows
        .iter()
        .filter(|r| r.fit.is_some() && r.in_band.is_some())
        .map(|r| (r.measured / r.predicted).ln())
        .collect();
    let n = logs.len() as f64;
    let p = DECODE_FITTED_CONSTANTS as f64;
    if n <= p {
        return None;
    }
    Some(spread(logs, ((n + p) / (n - p)).sqrt()))
}

/// The 5th and 95th percentiles of `logs` (linear between order statistics) times `k`, as
/// factors of the typical value, the low end at or below 1 and the high end at or above it.
pub(super) fn spread(mut logs: Vec<f64>, k: f64) -> (f64, f64) {
    logs.sort_by(f64::total_cmp);
    let last = logs.len().saturating_sub(1);
    let quantile = |q: f64| {
        let at = q * last as f64;
        let (below, frac) = (at.floor() as usize, at.fract());
        logs[below] + frac * (logs[(below + 1).min(last)] - logs[below])
    };
    (
        (k * quantile(0.05).min(0.0)).exp(),
        (k * quantile(0.95).max(0.0)).exp(),
    )
}
