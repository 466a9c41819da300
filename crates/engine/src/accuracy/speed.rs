//! Published speed measurements (calibration/speed-measured.csv) against the speed model, each
//! row as the scenario calibration/speed-scenarios.csv gives it, grouped by runtime, figure and
//! class of card.

use super::{records, summary, Summary};
use crate::estimate::{estimate, Speed};
use crate::query::scenario_from_query;
use serde::Serialize;

/// One published speed against the estimate's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedComparison {
    pub id: String,
    /// Runtime, figure and class of card: "llama.cpp decode, consumer".
    pub kind: String,
    pub source: String,
    pub figure: String,
    /// Tokens per second.
    pub measured: f64,
    pub predicted: f64,
    pub error_pct: f64,
    /// Whether the measurement lies within the estimate's band (decode and output figures).
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

/// GeForce cards, Apple silicon (unified memory, Metal), and the rest (data-centre and
/// workstation).
fn card_class(gpu_name: &str) -> &'static str {
    if gpu_name.contains("GeForce") {
        "consumer"
    } else if gpu_name.starts_with("Apple") {
        "apple"
    } else {
        "data-centre"
    }
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
        let tokens: Option<f64> = published.get("tokens_per_s").and_then(|t| t.parse().ok());
        let (scenario, errors) = scenario_from_query(get("query"));
        let e = match (errors.first(), tokens) {
            (Some(error), _) => Err(format!("scenario does not parse: {error}")),
            (_, None) => Err("no tokens/s in the row".into()),
            _ => estimate(&scenario).map_err(|e| format!("scenario is invalid: {}", e[0])),
        };
        let e = match e {
            Ok(e) => e,
            Err(why) => {
                skipped.push((id, why));
                continue;
            }
        };
        let Some((predicted, banded)) = e.speed.as_ref().and_then(|s| figure(s, get("figure")))
        else {
            let why = e.notes.iter().find(|n| n.contains("speed")).cloned();
            skipped.push((
                id,
                why.unwrap_or_else(|| "the estimate has no speed".into()),
            ));
            continue;
        };
        let measured = tokens.unwrap_or_default();
        let speed = e.speed.as_ref();
        let (figure, _) = get("figure")
            .split_once("_tokens")
            .unwrap_or((get("figure"), ""));
        compared.push(SpeedComparison {
            kind: format!("{} {figure}, {}", scenario.runtime, card_class(&e.gpu_name)),
            source: published.get("source").cloned().unwrap_or_default(),
            figure: get("figure").to_string(),
            error_pct: (predicted - measured) / measured * 100.0,
            in_band: banded.then(|| {
                let s = speed.expect("a figure comes from a speed");
                let scale = predicted / s.output_tokens_per_s;
                (s.low * scale..=s.high * scale).contains(&measured)
            }),
            measured,
            predicted,
            id,
        });
    }
    (compared, skipped)
}

/// Median and worst absolute error per kind.
pub fn summarize_speed(rows: &[SpeedComparison]) -> Vec<Summary> {
    let mut kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            summary(
                kind,
                "tokens/s",
                rows.iter()
                    .filter(|r| r.kind == kind)
                    .map(|r| (r.id.as_str(), r.error_pct, r.source.as_str())),
            )
        })
        .collect()
}
