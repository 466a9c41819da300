//! Published training throughput (calibration/training-speed.csv) against the training speed
//! model, compared as the optimizer step's time: the tokens one GPU runs per step over the
//! published tokens/s per GPU. A row a utilisation constant was set from names it in `fit`;
//! the others are held out.

use super::median;
use super::records;
use super::speed_kind::SpeedKind;
use crate::estimate::{estimate, implied_utilisation};
use crate::query::scenario_from_query;
use crate::units::parse_f64;
use serde::Serialize;

/// One published training rate against the estimate's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingComparison {
    pub id: String,
    /// `full`, `lora` or `qlora`.
    pub method: String,
    /// Method, dense or MoE, and class of card: "full training, dense, data-centre".
    pub kind: SpeedKind,
    pub gpu: String,
    /// The utilisation constant set from this row; `None` for a held-out row.
    pub fit: Option<String>,
    pub source: String,
    pub measured_step_s: f64,
    pub predicted_step_s: f64,
    pub error_pct: f64,
    /// Whether the published rate lies within the estimate's band.
    pub in_band: bool,
    /// The utilisation at which the model's step takes the measured time.
    pub implied_utilisation: Option<f64>,
}

/// One row against the estimate, or why it cannot be compared.
fn compare_row(
    row: &std::collections::HashMap<String, String>,
) -> Result<TrainingComparison, String> {
    let get = |key: &str| row.get(key).map(String::as_str).unwrap_or("");
    let (scenario, errors) = scenario_from_query(get("query"));
    if let Some(error) = errors.first() {
        return Err(format!("scenario does not parse: {error}"));
    }
    let rate = parse_f64(get("tokens_per_s_per_gpu")).ok_or("no tokens/s in the row")?;
    let e = estimate(&scenario).map_err(|e| format!("scenario is invalid: {}", e[0]))?;
    let Some(speed) = e.speed.as_ref().and_then(|t| t.training()) else {
        let why = e.notes.iter().find(|n| n.contains("speed")).cloned();
        return Err(why.unwrap_or_else(|| "the estimate has no training speed".into()));
    };
    let tokens =
        f64::from(scenario.batch) * f64::from(scenario.seq) * f64::from(scenario.grad_accum);
    let measured_step_s = tokens / rate;
    let gpus = f64::from(scenario.gpus.max(1));
    let (low, high) = (
        speed.train_tokens_per_s_low / gpus,
        speed.train_tokens_per_s_high / gpus,
    );
    Ok(TrainingComparison {
        id: get("id").to_string(),
        method: scenario.mode.to_string(),
        kind: SpeedKind::of_training(&e),
        gpu: scenario.gpu.clone(),
        fit: Some(get("fit").to_string()).filter(|f| !f.is_empty()),
        source: get("source").to_string(),
        measured_step_s,
        predicted_step_s: speed.train_step_s,
        error_pct: (speed.train_step_s - measured_step_s) / measured_step_s * 100.0,
        in_band: (low..=high).contains(&rate),
        implied_utilisation: implied_utilisation(&scenario, measured_step_s),
    })
}

/// Every row against the estimate, and every row left out with its reason.
pub fn compare_training_speed(csv: &str) -> (Vec<TrainingComparison>, Vec<(String, String)>) {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for row in records(csv) {
        match compare_row(&row) {
            Ok(c) => compared.push(c),
            Err(why) => skipped.push((row.get("id").cloned().unwrap_or_default(), why)),
        }
    }
    (compared, skipped)
}

/// Rows, median |error| of the step time, and rows inside the band.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainingTotal {
    pub rows: usize,
    pub median_abs_pct: f64,
    pub in_band: usize,
}

pub fn training_total(rows: &[&TrainingComparison]) -> TrainingTotal {
    let mut errors: Vec<f64> = rows.iter().map(|r| r.error_pct.abs()).collect();
    TrainingTotal {
        rows: rows.len(),
        median_abs_pct: median(&mut errors),
        in_band: rows.iter().filter(|r| r.in_band).count(),
    }
}

/// Each utilisation constant's rule: the median implied utilisation of the rows that name it.
pub fn fitted_utilisation(rows: &[TrainingComparison], constant: &str) -> f64 {
    let mut implied: Vec<f64> = rows
        .iter()
        .filter(|r| r.fit.as_deref() == Some(constant))
        .filter_map(|r| r.implied_utilisation)
        .collect();
    median(&mut implied)
}
