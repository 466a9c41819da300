//! Compares the detailed method with published measurements, like with like: a row that measured
//! `max_memory_allocated` is compared with the estimate less CUDA context and fragmentation, a
//! `max_memory_reserved` row with the estimate less the context, an nvidia-smi row with the total.
//! Pure text in, numbers out: `cargo xtask accuracy` prints them, `vramfit estimate --accuracy` and
//! the page's accuracy panel show the figures for the scenario's kind of run, and a test holds the
//! line.
//!
//! The measurement kit's documents (calibration/measured/) are their own set, compared the same
//! way figure by figure: torch's allocated and reserved peaks and NVML's peak, each against the
//! estimate of the scenario the kit ran.

mod fit;
mod kind;
mod speed;
mod speed_kind;
mod train_speed;

pub use fit::{fit_speed_constants, Fit, FitConstant, Form, RowReach, Value, FITTED};
pub use kind::{RunKind, WeightClass};
pub use speed::{
    compare_speed, speed_band_rule, speed_totals, summarize_speed, SpeedComparison, SpeedTotal,
    DECODE_FITTED_CONSTANTS, FIT_CONSTANTS,
};
pub use speed_kind::{
    speed_groups, speed_picks, speed_validation, Breadth, HeldOut, SpeedAccuracy, SpeedFigure,
    SpeedGroup, SpeedKind, SpeedPick, TRAIN_STEP,
};
pub use train_speed::{
    compare_training_speed, fitted_utilisation, training_total, TrainingComparison, TrainingTotal,
};

use crate::estimate::{estimate, Component, Estimate, LogFigure, Reads};
use crate::measurement::WorkloadMeasurement;
use crate::query::scenario_from_query;
use crate::runtime::Release;
use crate::scenario::Scenario;
use crate::units::{parse_f64, GIB, MIB};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    Allocated,
    Reserved,
    NvidiaSmi,
}

impl Metric {
    /// Reads the measured-figure column of measured-public.csv.
    fn from_description(text: &str) -> Option<Metric> {
        let lower = text.to_ascii_lowercase();
        if lower.contains("nvidia-smi") || lower.contains("nvml") {
            Some(Metric::NvidiaSmi)
        } else if lower.contains("reserved") {
            Some(Metric::Reserved)
        } else if lower.contains("allocated") {
            Some(Metric::Allocated)
        } else {
            None
        }
    }

    pub fn predicted(self, e: &Estimate) -> f64 {
        match self {
            Metric::Allocated => e.allocated_bytes().as_f64(),
            Metric::Reserved => e.reserved_bytes().as_f64(),
            Metric::NvidiaSmi => e.total_bytes.as_f64(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub id: String,
    /// The row's kind of run (`RunKind::key`), from its scenario.
    pub category: String,
    /// Where the measurement was published.
    pub source: String,
    pub metric: Metric,
    pub measured_bytes: f64,
    pub predicted_bytes: f64,
    /// (predicted − measured) / measured × 100.
    pub error_pct: f64,
}

/// The error over one group of rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The group as the tables print it: the kind for the public set, "kind figure" for logs.
    pub category: String,
    /// `RunKind::key`, or `all` for every public row.
    pub kind: String,
    /// `peak` (each row's own metric: allocated, reserved or nvidia-smi) or a runtime's figure.
    pub figure: String,
    pub rows: usize,
    pub median_abs_pct: f64,
    pub worst_abs_pct: f64,
    pub worst_id: String,
    /// Rows whose error is within ±10%.
    pub within_10_pct: usize,
    /// Every place the group's rows were published, each once, in the order first met.
    pub sources: Vec<String>,
}

/// The figure public rows are compared on: the peak, each row in its own metric.
pub const PEAK: &str = "peak";

/// Splits one CSV line, honouring double quotes (RFC 4180, without embedded newlines): the
/// bench reader's, the one CSV splitter.
pub use vramfit_units::csv_fields;

pub(crate) fn records(csv: &str) -> Vec<std::collections::HashMap<String, String>> {
    // `#` lines are a file's notes on its columns and sources.
    let mut lines = csv
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let header = lines.next().map(csv_fields).unwrap_or_default();
    lines
        .map(|line| header.iter().cloned().zip(csv_fields(line)).collect())
        .collect()
}

fn unit_bytes(unit: &str) -> Option<f64> {
    match unit.trim() {
        "GB(1e9)" => Some(1e9),
        "MB(1e6)" => Some(1e6),
        "GiB" => Some(GIB as f64),
        "MiB" => Some(MIB as f64),
        _ => None,
    }
}

/// Every comparable row, and every row left out with its reason.
pub fn compare(
    measurements_csv: &str,
    scenarios_csv: &str,
) -> (Vec<Comparison>, Vec<(String, String)>) {
    let scenarios = records(scenarios_csv);
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for row in records(measurements_csv) {
        let id = row.get("id").cloned().unwrap_or_default();
        let Some(mapping) = scenarios.iter().find(|s| s.get("id") == Some(&id)) else {
            skipped.push((id, "no scenario written for this row".to_string()));
            continue;
        };
        let excluded = mapping.get("excluded_because").cloned().unwrap_or_default();
        if !excluded.is_empty() {
            skipped.push((id, excluded));
            continue;
        }
        let measured = row
            .get("value")
            .and_then(|v| parse_f64(v.trim()))
            .zip(row.get("unit").and_then(|u| unit_bytes(u)))
            .map(|(v, scale)| v * scale);
        let metric = row
            .get("measured_metric")
            .and_then(|m| Metric::from_description(m));
        let (Some(measured), Some(metric)) = (measured, metric) else {
            skipped.push((
                id,
                "value, unit or measured figure not readable".to_string(),
            ));
            continue;
        };
        let (scenario, errors) =
            scenario_from_query(mapping.get("query").map(String::as_str).unwrap_or(""));
        if !errors.is_empty() {
            skipped.push((id, format!("scenario does not parse: {}", errors[0])));
            continue;
        }
        let Some(kind) = RunKind::of(&scenario) else {
            skipped.push((id, "scenario is invalid".to_string()));
            continue;
        };
        match estimate(&scenario) {
            Ok(e) => {
                let predicted = metric.predicted(&e);
                compared.push(Comparison {
                    id,
                    category: kind.key().to_string(),
                    source: row.get("source").cloned().unwrap_or_default(),
                    metric,
                    measured_bytes: measured,
                    predicted_bytes: predicted,
                    error_pct: (predicted - measured) / measured * 100.0,
                });
            }
            Err(errors) => skipped.push((id, format!("scenario is invalid: {}", errors[0]))),
        }
    }
    (compared, skipped)
}

/// Where the kit's rows come from, as a public row names its source.
pub const KIT_SOURCE: &str = "this project's measurement kit (calibration/measured/)";

/// Every figure the measurement kit's documents hold, each `(name, text)`, against the estimate
/// of the document's own scenario; and every document or figure left out with its reason. A
/// figure that is `None` was not measured and is left out silently; a run on the CPU (the kit's
/// tests) and a replayed NVML peak are left out with their reason.
pub fn compare_measured(
    documents: &[(String, String)],
) -> (Vec<Comparison>, Vec<(String, String)>) {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for (name, text) in documents {
        let document: WorkloadMeasurement = match serde_json::from_str(text) {
            Ok(document) => document,
            Err(e) => {
                skipped.push((name.clone(), format!("not a kit measurement: {e}")));
                continue;
            }
        };
        let w = &document.workload;
        if w.device != "cuda" {
            skipped.push((
                w.id.clone(),
                format!("ran on {}: nothing measured", w.device),
            ));
            continue;
        }
        let e = match estimate(&w.scenario) {
            Ok(e) => e,
            Err(errors) => {
                skipped.push((w.id.clone(), format!("scenario is invalid: {}", errors[0])));
                continue;
            }
        };
        let Some(kind) = RunKind::of(&w.scenario) else {
            skipped.push((w.id.clone(), "scenario is invalid".to_string()));
            continue;
        };
        let nvml = document.peaks.fullest_gpu().and_then(|g| g.peak_used_bytes);
        if let (Some(_), Some(replay)) = (nvml, &w.nvml_replay) {
            skipped.push((w.id.clone(), format!("NVML peak replayed from {replay}")));
        }
        let capped_by = w.torch_peaks.reserved_capped_by();
        if let Some(retries) = capped_by {
            skipped.push((
                w.id.clone(),
                format!(
                    "reserved peak not compared: {retries} allocation retries, so the GPU capped it"
                ),
            ));
        }
        let figures = [
            (Metric::Allocated, w.torch_peaks.max_memory_allocated_bytes),
            (
                Metric::Reserved,
                w.torch_peaks
                    .max_memory_reserved_bytes
                    .filter(|_| capped_by.is_none()),
            ),
            (Metric::NvidiaSmi, nvml.filter(|_| w.nvml_replay.is_none())),
        ];
        for (metric, measured) in figures {
            let Some(measured) = measured.filter(|&m| m > 0) else {
                continue;
            };
            let measured = measured as f64;
            let predicted = metric.predicted(&e);
            compared.push(Comparison {
                id: w.id.clone(),
                category: kind.key().to_string(),
                source: KIT_SOURCE.to_string(),
                metric,
                measured_bytes: measured,
                predicted_bytes: predicted,
                error_pct: (predicted - measured) / measured * 100.0,
            });
        }
    }
    (compared, skipped)
}

/// One figure a serving runtime logged, against the estimate's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuntimeComparison {
    pub id: String,
    /// The scenario's kind of run: its runtime's name.
    pub runtime: String,
    pub source: String,
    /// What was logged: `weights`, `kv_pool`, `kv_tokens`, `max_concurrency`, `activation_peak`,
    /// `non_torch`, `cuda_graphs`, or one of llama.cpp's buffers.
    pub figure: String,
    /// The runtime's release the scenario names, as major.minor (`0.19`), or `latest`; empty
    /// for a runtime without release rules.
    pub release: String,
    /// Bytes, tokens or requests, as the figure is.
    pub measured: f64,
    pub predicted: f64,
    pub error_pct: f64,
}

/// The estimate's value of a figure its runtime logs: a component's bytes, the serving pool's
/// tokens and concurrency, or a count the runtime chose. `None` for a figure the runtime does not
/// log.
fn runtime_figure(e: &Estimate, figure: &str) -> Option<f64> {
    let serving = e.serving.as_ref()?;
    let logged_figure = e.scenario.runtime.rules().facts().logged(figure)?;
    let gpu = |figure| logged(&e.components, figure);
    let host = |figure| logged(&serving.host.components, figure);
    match logged_figure.reads {
        Reads::Gpu(figure) => gpu(figure),
        Reads::Host(figure) => host(figure),
        Reads::GpuAndHost(figure) => Some(gpu(figure).unwrap_or(0.0) + host(figure).unwrap_or(0.0)),
        Reads::Total => Some(e.components.iter().map(|c| c.bytes.as_f64()).sum()),
        Reads::PoolBytes => Some(serving.kv_pool_bytes.as_f64()),
        Reads::PoolTokens => Some(serving.kv_tokens as f64),
        Reads::Concurrency => Some(serving.max_concurrency),
        Reads::Setting(key) => serving
            .settings
            .iter()
            .find(|s| s.key == key)
            .and_then(|s| parse_f64(&s.value)),
    }
}

/// The bytes of the components a log figure holds; `None` when there are none.
fn logged(components: &[Component], figure: LogFigure) -> Option<f64> {
    let mut found = components
        .iter()
        .filter(|c| c.id.logged_in() == Some(figure))
        .peekable();
    found.peek()?;
    Some(found.map(|c| c.bytes.as_f64()).sum())
}

fn logged_value(value: &str, unit: &str) -> Option<f64> {
    let number = parse_f64(&value.trim().replace(',', ""))?;
    match unit.trim() {
        "tokens" | "x" | "layers" => Some(number),
        unit => unit_bytes(unit).map(|scale| number * scale),
    }
}

/// Every figure of calibration/runtime-logs.csv the estimate produces, and every row left out
/// with its reason.
pub fn compare_runtime_logs(csv: &str) -> (Vec<RuntimeComparison>, Vec<(String, String)>) {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for row in records(csv) {
        let get = |key: &str| row.get(key).map(String::as_str).unwrap_or("");
        let id = get("id").to_string();
        let Some(measured) = logged_value(get("value"), get("unit")) else {
            skipped.push((id, "value or unit not readable".to_string()));
            continue;
        };
        let (scenario, errors) = scenario_from_query(get("query"));
        if let Some(error) = errors.first() {
            skipped.push((id, format!("scenario does not parse: {error}")));
            continue;
        }
        let Some(kind) = RunKind::of(&scenario) else {
            skipped.push((id, "scenario is invalid".to_string()));
            continue;
        };
        let e = match estimate(&scenario) {
            Ok(e) => e,
            Err(errors) => {
                skipped.push((id, format!("scenario is invalid: {}", errors[0])));
                continue;
            }
        };
        let Some(predicted) = runtime_figure(&e, get("figure")) else {
            skipped.push((id, format!("the estimate has no `{}`", get("figure"))));
            continue;
        };
        compared.push(RuntimeComparison {
            runtime: kind.key().to_string(),
            release: release_class(&scenario),
            source: get("source").to_string(),
            figure: get("figure").to_string(),
            measured,
            predicted,
            error_pct: (predicted - measured) / measured.abs().max(f64::MIN_POSITIVE) * 100.0,
            id,
        });
    }
    (compared, skipped)
}

/// The release a runtime log's scenario names, by its minor version: rules change at most once
/// a minor release.
fn release_class(s: &Scenario) -> String {
    match s.runtime.rules().release(s) {
        Some(Release::Version([major, minor, _])) => format!("{major}.{minor}"),
        Some(Release::Latest) => "latest".to_string(),
        None => String::new(),
    }
}

/// Median and worst absolute error per runtime, release and figure: how each release's rules
/// read their logs.
pub fn summarize_runtime_logs_by_release(comparisons: &[RuntimeComparison]) -> Vec<Summary> {
    let mut groups: Vec<(&str, &str, &str)> = comparisons
        .iter()
        .filter(|c| !c.release.is_empty())
        .map(|c| (c.runtime.as_str(), c.release.as_str(), c.figure.as_str()))
        .collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|(runtime, release, figure)| {
            summary(
                &format!("{runtime} {release}"),
                figure,
                comparisons
                    .iter()
                    .filter(|c| c.runtime == runtime && c.release == release && c.figure == figure)
                    .map(|c| (c.id.as_str(), c.error_pct, c.source.as_str())),
            )
        })
        .collect()
}

/// Median and worst absolute error per runtime and figure.
pub fn summarize_runtime_logs(comparisons: &[RuntimeComparison]) -> Vec<Summary> {
    let mut groups: Vec<(&str, &str)> = comparisons
        .iter()
        .map(|c| (c.runtime.as_str(), c.figure.as_str()))
        .collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|(runtime, figure)| {
            summary(
                runtime,
                figure,
                comparisons
                    .iter()
                    .filter(|c| c.runtime == runtime && c.figure == figure)
                    .map(|c| (c.id.as_str(), c.error_pct, c.source.as_str())),
            )
        })
        .collect()
}

/// The error figures of one group of rows, each an id, a signed error and its source.
pub(crate) fn summary<'a>(
    kind: &str,
    figure: &str,
    rows: impl Iterator<Item = (&'a str, f64, &'a str)>,
) -> Summary {
    let rows: Vec<(&str, f64, &str)> = rows.collect();
    let mut errors: Vec<f64> = rows.iter().map(|r| r.1.abs()).collect();
    let worst = rows.iter().max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()));
    let mut sources: Vec<String> = Vec::new();
    for (_, _, source) in &rows {
        if !sources.iter().any(|s| s == source) {
            sources.push(source.to_string());
        }
    }
    Summary {
        category: if figure == PEAK {
            kind.to_string()
        } else {
            format!("{kind} {figure}")
        },
        kind: kind.to_string(),
        figure: figure.to_string(),
        rows: rows.len(),
        within_10_pct: errors.iter().filter(|e| **e <= 10.0).count(),
        median_abs_pct: median(&mut errors),
        worst_abs_pct: worst.map(|w| w.1.abs()).unwrap_or(f64::NAN),
        worst_id: worst.map(|w| w.0.to_string()).unwrap_or_default(),
        sources,
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The group of every public row.
pub const ALL: &str = "all";

/// Median and worst absolute error per kind of run, then one row for all of them.
pub fn summarize(comparisons: &[Comparison]) -> Vec<Summary> {
    let mut kinds: Vec<&str> = comparisons.iter().map(|c| c.category.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    kinds.push(ALL);
    kinds
        .into_iter()
        .map(|kind| {
            let rows = comparisons
                .iter()
                .filter(|c| kind == ALL || c.category == kind)
                .map(|c| (c.id.as_str(), c.error_pct, c.source.as_str()));
            summary(kind, PEAK, rows)
        })
        .collect()
}

/// Every group's figures from the three calibration files: the public peaks by kind of run, then
/// the runtime logs by runtime and figure. What `cargo xtask accuracy` prints, and what the CLI
/// and the page show for a scenario's kind ([`for_kind`]).
pub fn validation(measured_csv: &str, scenarios_csv: &str, runtime_logs_csv: &str) -> Vec<Summary> {
    let mut all = summarize(&compare(measured_csv, scenarios_csv).0);
    all.extend(summarize_runtime_logs(
        &compare_runtime_logs(runtime_logs_csv).0,
    ));
    all
}

/// The groups that validate runs of this kind (none when no published run is like it).
pub fn for_kind(summaries: &[Summary], kind: RunKind) -> impl Iterator<Item = &Summary> {
    summaries.iter().filter(move |s| s.kind == kind.key())
}

/// Fewer rows than this and a kind of run is said to be barely validated.
pub const FEW_ROWS: usize = 5;

/// What the published measurements say about one kind of run: `vramfit estimate --accuracy`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindAccuracy<'a> {
    pub kind: &'static str,
    pub label: &'static str,
    pub figures: Vec<&'a Summary>,
    /// Said when fewer than [`FEW_ROWS`] rows validate the kind.
    pub note: Option<String>,
}

impl<'a> KindAccuracy<'a> {
    pub fn of(summaries: &'a [Summary], kind: RunKind) -> KindAccuracy<'a> {
        let figures: Vec<&Summary> = for_kind(summaries, kind).collect();
        let rows = figures.iter().map(|f| f.rows).max().unwrap_or(0);
        KindAccuracy {
            kind: kind.key(),
            label: kind.label(),
            figures,
            note: coverage_note(rows),
        }
    }
}

/// The plain statement for a kind of run that too few published measurements validate.
pub fn coverage_note(rows: usize) -> Option<String> {
    match rows {
        0 => Some(
            "No published measurement validates this kind of run yet: its accuracy is unknown."
                .to_string(),
        ),
        n if n < FEW_ROWS => Some(format!(
            "Only {n} published measurement{} validate{} this kind of run: too few to state its accuracy.",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kit document for `scenario` with the given peaks, as the runner writes it.
    fn kit_document(
        scenario: &crate::Scenario,
        device: &str,
        torch: (Option<u64>, Option<u64>),
        nvml: Option<u64>,
        replay: Option<&str>,
    ) -> String {
        serde_json::json!({
            "schema": "vramfit.measurement/1",
            "gpus": [{"index": 0, "peak_used_bytes": nvml}],
            "peak_used_bytes": nvml,
            "warnings": [],
            "workload": {
                "id": "kit-row",
                "scenario": scenario,
                "device": device,
                "torch_peaks": {
                    "max_memory_allocated_bytes": torch.0,
                    "max_memory_reserved_bytes": torch.1,
                    "allocated_after_build_bytes": null
                },
                "nvml_replay": replay,
                "provenance": {"packages": {"torch": "2.11.0"}}
            }
        })
        .to_string()
    }

    /// Kit documents for `scenario`: on the GPU with both peaks equal to the estimate's own
    /// figures but the reserved one a quarter above it; on the CPU; with NVML's peak replayed; not
    /// a kit document; and with the reserved peak capped by allocation retries.
    fn kit_documents_of(scenario: &crate::Scenario) -> Vec<(String, String)> {
        let e = estimate(scenario).unwrap();
        let allocated = e.allocated_bytes().as_f64() as u64;
        let reserved = (e.reserved_bytes().as_f64() * 1.25) as u64;
        let total = e.total_bytes.as_f64() as u64;
        let gpu = |reserved, total, replay| {
            kit_document(scenario, "cuda", (Some(allocated), reserved), total, replay)
        };
        let mut capped: serde_json::Value =
            serde_json::from_str(&gpu(Some(reserved), None, None)).unwrap();
        capped["workload"]["torch_peaks"]["num_alloc_retries"] = 3.into();
        [
            gpu(Some(reserved), Some(total), None),
            kit_document(scenario, "cpu", (None, None), Some(total), None),
            gpu(None, Some(total), Some("replay.json")),
            "{\"schema\": \"vramfit.measurement/1\"}".to_string(),
            capped.to_string(),
        ]
        .into_iter()
        .zip(["a", "b", "c", "d", "e"])
        .map(|(document, name)| (format!("{name}.json"), document))
        .collect()
    }

    #[test]
    fn kit_documents_compare_each_figure_like_with_like() {
        let (scenario, errors) =
            crate::Scenario::from_pairs([("model", "qwen3-8b"), ("mode", "lora")]);
        assert!(errors.is_empty(), "{errors:?}");
        // The errors show which estimate figure each measured figure is held against.
        let documents = kit_documents_of(&scenario);
        let (rows, skipped) = compare_measured(&documents);
        let figures: Vec<(Metric, i64)> = rows
            .iter()
            .map(|r| (r.metric, (r.error_pct * 10.0).round() as i64))
            .collect();
        assert_eq!(
            figures,
            [
                (Metric::Allocated, 0),
                (Metric::Reserved, -200),
                (Metric::NvidiaSmi, 0),
                (Metric::Allocated, 0),
                (Metric::Allocated, 0)
            ]
        );
        let kind = RunKind::of(&scenario).unwrap().key();
        assert!(rows
            .iter()
            .all(|r| r.category == kind && r.source == KIT_SOURCE));
        let reasons: Vec<&str> = skipped.iter().map(|s| s.1.as_str()).collect();
        assert!(
            matches!(
                reasons[..],
                [
                    "ran on cpu: nothing measured",
                    "NVML peak replayed from replay.json",
                    not_kit,
                    "reserved peak not compared: 3 allocation retries, so the GPU capped it",
                ] if not_kit.starts_with("not a kit measurement")
            ),
            "{reasons:?}"
        );
    }

    #[test]
    fn csv_fields_honour_quotes() {
        assert_eq!(
            csv_fields(r#"a,"b, c","d ""e""",,"#),
            ["a", "b, c", "d \"e\"", "", ""]
        );
    }

    const MEASURED: &str = include_str!("../../../../calibration/measured-public.csv");
    const SCENARIOS: &str = include_str!("../../../../calibration/scenarios.csv");
    const LOGS: &str = include_str!("../../../../calibration/runtime-logs.csv");

    #[test]
    fn a_kind_gets_its_own_rows_figures() {
        let all = validation(MEASURED, SCENARIOS, LOGS);
        let qlora = KindAccuracy::of(
            &all,
            RunKind::Training {
                mode: crate::workload::Mode::Qlora,
                multi_gpu: false,
            },
        );
        assert_eq!(qlora.kind, "qlora");
        let [peak] = qlora.figures[..] else {
            panic!("{:?}", qlora.figures)
        };
        let (compared, _) = compare(MEASURED, SCENARIOS);
        let rows: Vec<&Comparison> = compared.iter().filter(|c| c.category == "qlora").collect();
        assert_eq!(peak.rows, rows.len());
        assert_eq!(
            peak.within_10_pct,
            rows.iter().filter(|c| c.error_pct.abs() <= 10.0).count()
        );
        assert!(
            peak.within_10_pct < peak.rows,
            "some QLoRA rows miss by more than 10%"
        );
        assert!(
            peak.sources.iter().any(|s| s.contains("litgpt")),
            "{:?}",
            peak.sources
        );
        assert_eq!(qlora.note, None);

        for s in &all {
            assert!(
                s.kind == ALL || RunKind::all().iter().any(|k| k.key() == s.kind),
                "{} is no kind in RunKind::all()",
                s.kind
            );
        }
        let vllm = KindAccuracy::of(&all, RunKind::Serving(crate::runtime::Runtime::Vllm));
        assert!(vllm
            .figures
            .iter()
            .any(|f| f.figure == "kv_pool" && f.rows >= 25));
        assert!(vllm.figures.iter().all(|f| f.kind == "vllm"));
    }

    #[test]
    fn few_or_no_rows_are_said_plainly() {
        let all = validation(MEASURED, SCENARIOS, LOGS);
        let fp8_sharded = KindAccuracy::of(
            &all,
            RunKind::Inference {
                weights: WeightClass::Fp8,
                multi_gpu: true,
            },
        );
        assert!(fp8_sharded.figures.is_empty());
        assert!(fp8_sharded
            .note
            .unwrap()
            .starts_with("No published measurement"));
        let qlora_multi = KindAccuracy::of(
            &all,
            RunKind::Training {
                mode: crate::workload::Mode::Qlora,
                multi_gpu: true,
            },
        );
        assert_eq!(
            qlora_multi.note.as_deref(),
            Some("Only 2 published measurements validate this kind of run: too few to state its accuracy.")
        );
        assert_eq!(coverage_note(FEW_ROWS), None);
    }

    #[test]
    fn metric_reads_the_source_descriptions() {
        assert_eq!(
            Metric::from_description("torch.cuda.max_memory_allocated()/1e9 ('Memory used')"),
            Some(Metric::Allocated)
        );
        assert_eq!(
            Metric::from_description("torch.cuda.max_memory_reserved()/1e9"),
            Some(Metric::Reserved)
        );
        assert_eq!(
            Metric::from_description("peak of nvidia-smi memory.used polled"),
            Some(Metric::NvidiaSmi)
        );
    }
}
