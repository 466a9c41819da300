//! `cargo xtask accuracy`: the detailed method against calibration/measured-public.csv and the
//! runtime logs, row by row and per kind of run (median and worst absolute error, the share within
//! ±10%): the figures `vramfit estimate --accuracy` and the page's accuracy panel show. Then the
//! measurement kit's own documents (calibration/measured/), by kind of run, one table per
//! measured figure.

use std::path::Path;
use vramfit_engine::accuracy::{
    compare, compare_measured, compare_runtime_logs, compare_speed, compare_training_speed,
    fit_speed_constants, speed_band_rule, speed_groups, speed_totals, summarize,
    summarize_runtime_logs, summarize_runtime_logs_by_release, summarize_speed, training_total,
    Comparison, Fit, HeldOut, Metric, SpeedComparison, Summary, TrainingComparison,
};

/// Where the measurement kit writes, one document per scenario, and where the kit is.
const MEASURED_DIR: &str = "calibration/measured";
const KIT_README: &str = "calibration/measure/README.md";

pub fn report(root: &Path) -> Result<(), String> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join("calibration").join(name))
            .map_err(|e| format!("cannot read calibration/{name}: {e}"))
    };
    let (rows, skipped) = compare(&read("measured-public.csv")?, &read("scenarios.csv")?);
    print_rows(&rows);
    print_summaries("kind of run", &summarize(&rows));
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
    runtime_report(&read("runtime-logs.csv")?);
    speed_report(&read("speed-measured.csv")?, &read("speed-scenarios.csv")?);
    training_speed_report(&read("training-speed.csv")?);
    for fit in fit_speed_constants(&read("speed-measured.csv")?, &read("speed-scenarios.csv")?) {
        print_fit(&fit);
    }
    measured_report(root)
}

/// Each row; the id column as wide as the longest id.
fn print_rows(rows: &[Comparison]) {
    let id_width = rows.iter().map(|r| r.id.len()).max().unwrap_or(0).max(6);
    println!(
        "{:<id_width$} {:<22} {:<11} {:>10} {:>10} {:>8}",
        "id", "category", "metric", "measured", "predicted", "error"
    );
    for r in rows {
        println!(
            "{:<id_width$} {:<22} {:<11} {:>8.2}GB {:>8.2}GB {:>+7.1}%",
            r.id,
            r.category,
            format!("{:?}", r.metric).to_lowercase(),
            r.measured_bytes / 1e9,
            r.predicted_bytes / 1e9,
            r.error_pct
        );
    }
}

/// The kit's documents: every `*.json` in calibration/measured/ but its `skipped.json` and the
/// `*.failed.json` records. Allocated, reserved and NVML figures are summarized apart, each
/// against its own part of the estimate. With none yet, says so and where the kit is.
fn measured_report(root: &Path) -> Result<(), String> {
    let dir = root.join(MEASURED_DIR);
    let mut documents = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".json") || name == "skipped.json" || name.ends_with(".failed.json")
            {
                continue;
            }
            let text = std::fs::read_to_string(entry.path())
                .map_err(|e| format!("cannot read {MEASURED_DIR}/{name}: {e}"))?;
            documents.push((name, text));
        }
    }
    documents.sort();
    println!("\nMeasured by this project's kit ({MEASURED_DIR}/)");
    if documents.is_empty() {
        println!(
            "the set is empty: no GPU has run the kit yet. {KIT_README} says how to run its matrix."
        );
        return Ok(());
    }
    let (rows, skipped) = compare_measured(&documents);
    let figures = [
        (Metric::Allocated, "torch.cuda.max_memory_allocated against the estimate less the CUDA context and fragmentation"),
        (Metric::Reserved, "torch.cuda.max_memory_reserved against the estimate less the CUDA context"),
        (Metric::NvidiaSmi, "NVML's peak for the process (vramfit run) against the whole estimate"),
    ];
    for (metric, what) in figures {
        let of_metric: Vec<Comparison> = rows
            .iter()
            .filter(|r| r.metric == metric)
            .cloned()
            .collect();
        if of_metric.is_empty() {
            continue;
        }
        println!("\n{what}");
        print_rows(&of_metric);
        print_summaries("kind of run", &summarize(&of_metric));
    }
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
    Ok(())
}

fn print_summaries(group: &str, summaries: &[Summary]) {
    // As wide as the longest group, so the speed kinds' longer names keep the columns aligned.
    let width = summaries
        .iter()
        .map(|s| s.category.chars().count())
        .chain([group.chars().count(), 34])
        .max()
        .unwrap_or(34);
    println!(
        "\n{group:<width$} {:>5} {:>12} {:>12} {:>8}  worst row",
        "rows", "median |err|", "worst |err|", "in ±10%"
    );
    for s in summaries {
        println!(
            "{:<width$} {:>5} {:>11.1}% {:>11.1}% {:>8}  {}",
            s.category,
            s.rows,
            s.median_abs_pct,
            s.worst_abs_pct,
            format!("{}/{}", s.within_10_pct, s.rows),
            s.worst_id
        );
    }
}

/// Bytes as GiB, tokens, requests and layers as they are.
fn figure_value(figure: &str, value: f64) -> String {
    match figure {
        "kv_tokens" | "fit_gpu_layers" | "fit_cpu_moe" => format!("{value:.0}"),
        "max_concurrency" => format!("{value:.2}x"),
        _ => format!("{:.3}GiB", value / (1u64 << 30) as f64),
    }
}

/// Published speeds (calibration/speed-measured.csv, as speed-scenarios.csv maps them) against
/// the speed model, and the share inside its band: the held-out rows first, which no efficiency
/// constant was set from and so are the figure to quote, then the rows each constant was set from.
fn speed_report(measured: &str, scenarios: &str) {
    let (rows, skipped) = compare_speed(measured, scenarios);
    println!(
        "\n{:<10} {:<56} {:>10} {:>10} {:>8} {:>8} {:>15}  fit",
        "speed", "kind", "measured", "predicted", "error", "in band", "band"
    );
    for r in &rows {
        let inside = match r.in_band {
            Some(true) => "yes",
            Some(false) => "no",
            None => "",
        };
        let band = r
            .band
            .map_or(String::new(), |(low, high)| format!("{low:.1}–{high:.1}"));
        println!(
            "{:<10} {:<56} {:>10.1} {:>10.1} {:>+7.1}% {:>8} {:>15}  {}",
            r.id,
            r.kind,
            r.measured,
            r.predicted,
            r.error_pct,
            inside,
            band,
            r.fit.as_deref().unwrap_or("held out")
        );
    }
    let (fit, held_out): (Vec<SpeedComparison>, Vec<SpeedComparison>) =
        rows.into_iter().partition(|r| r.fit.is_some());
    let part = |rows: &[SpeedComparison], moe: bool| -> Vec<SpeedComparison> {
        rows.iter().filter(|r| r.moe == moe).cloned().collect()
    };
    print_summaries(
        "speed, held out (no constant set from them)",
        &summarize_speed(&held_out),
    );
    print_speed_totals("held out", &held_out);
    print_speed_totals("held out, dense", &part(&held_out, false));
    print_speed_totals("held out, MoE", &part(&held_out, true));
    print_summaries(
        "speed, fit (the constants were set from them)",
        &summarize_speed(&fit),
    );
    print_speed_totals("fit", &fit);
    band_report(&fit, &held_out);
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
}

/// The band's rule on the fit rows' residuals (`SPEED_SPREAD`), and the held-out rows it holds.
fn band_report(fit: &[SpeedComparison], held_out: &[SpeedComparison]) {
    // A row's band is its predicted figure times the band's two factors.
    let inside = |(low, high): (f64, f64)| {
        let banded = held_out.iter().filter(|r| r.in_band.is_some());
        let held = banded
            .clone()
            .filter(|r| (low * r.predicted..=high * r.predicted).contains(&r.measured));
        format!(
            "{} of {} held-out rows inside",
            held.count(),
            banded.count()
        )
    };
    if let Some(rule) = speed_band_rule(fit) {
        println!(
            "speed band, fit rows' residuals widened (SPEED_SPREAD's rule): {:.4}–{:.4}, {}",
            rule.0,
            rule.1,
            inside(rule)
        );
    }
}

/// Published training rates (calibration/training-speed.csv) against the training speed model,
/// as the optimizer step's time: each row with the utilisation it implies, then the held-out and
/// fit rows' median |error| and share inside the band.
fn training_speed_report(csv: &str) {
    let (rows, skipped) = compare_training_speed(csv);
    println!(
        "\n{:<10} {:<6} {:<9} {:>10} {:>10} {:>8} {:>8} {:>8}  fit",
        "training", "method", "gpu", "measured", "predicted", "error", "in band", "implied"
    );
    for r in &rows {
        println!(
            "{:<10} {:<6} {:<9} {:>9.3}s {:>9.3}s {:>+7.1}% {:>8} {:>8}  {}",
            r.id,
            r.method,
            r.gpu,
            r.measured_step_s,
            r.predicted_step_s,
            r.error_pct,
            if r.in_band { "yes" } else { "no" },
            r.implied_utilisation
                .map_or("-".to_string(), |u| format!("{:.2}%", u * 100.0)),
            r.fit.as_deref().unwrap_or("held out")
        );
    }
    let (fit, held_out): (Vec<&TrainingComparison>, Vec<&TrainingComparison>) =
        rows.iter().partition(|r| r.fit.is_some());
    let groups: Vec<Summary> = speed_groups(
        &held_out
            .iter()
            .map(|r| HeldOut::of_training(r))
            .collect::<Vec<_>>(),
    )
    .into_iter()
    .map(|g| g.summary)
    .collect();
    print_summaries(
        "training step, held out, by kind (and as `estimate --accuracy` widens it)",
        &groups,
    );
    for (set, rows) in [("held out", held_out), ("fit", fit)] {
        let t = training_total(&rows);
        println!(
            "training step time, {set}: {} rows, median |error| {:.1}%, {} inside the band",
            t.rows, t.median_abs_pct, t.in_band
        );
    }
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
}

/// A decode constant's rule (least squares of the step time's relative error on its fit rows)
/// against its committed value, and what each fit row reaches at the committed value: the share
/// with the committed time taken out, and the time per layer beside its reads at the peak.
fn print_fit(f: &Fit) {
    let pct = |s: Option<f64>| s.map_or("—".into(), |s| format!("{:.2}%", s * 100.0));
    let us = |t: Option<f64>| t.map_or("—".into(), |t| format!("{:.1} µs", t * 1e6));
    let free: Vec<String> = f.free.iter().map(|v| format!("{v:.6e}")).collect();
    println!(
        "\nfit {} ({:?}) on {} rows `{}` (Σ squared relative error {:.4} as committed); \
         free rule {}; held: {}",
        f.name,
        f.form,
        f.rows.len(),
        f.rows_tag,
        f.committed_error,
        free.join(", "),
        f.held.unwrap_or("nothing"),
    );
    for v in &f.values {
        println!(
            "  {:<24} rule {:<14.6e} committed {:<14.6e} within {:.1e}: {}",
            v.name,
            v.rule,
            v.committed,
            v.within,
            if v.agrees() { "agrees" } else { "DIFFERS" }
        );
    }
    println!(
        "  {:<10} {:>10} {:>9} {:>9} {:>9} {:>6} {:>8} {:>12}",
        "row", "step ms", "dense GB", "experts", "cache GB", "layers", "share", "time @peak"
    );
    for r in &f.rows {
        println!(
            "  {:<10} {:>10.3} {:>9.3} {:>9.3} {:>9.3} {:>6} {:>8} {:>12}",
            r.id,
            r.measured_s * 1e3,
            r.dense_bytes / 1e9,
            r.expert_bytes / 1e9,
            r.cache_bytes / 1e9,
            r.layers,
            pct(r.share),
            us(r.time_at_peak),
        );
    }
}

/// Each figure's rows, cards, median |error| and share inside the band over a set of rows.
fn print_speed_totals(set: &str, rows: &[SpeedComparison]) {
    for t in speed_totals(rows) {
        let band = if t.banded > 0 {
            format!(", {} of {} inside the band", t.in_band, t.banded)
        } else {
            String::new()
        };
        println!(
            "{set}: {}: {} rows on {} GPUs, median |error| {:.1}%{band}",
            t.figure, t.rows, t.gpus, t.median_abs_pct
        );
    }
}

/// Serving runtimes' logged figures (calibration/runtime-logs.csv) against the estimate.
fn runtime_report(csv: &str) {
    let (rows, skipped) = compare_runtime_logs(csv);
    println!(
        "\n{:<28} {:<20} {:>14} {:>14} {:>8}",
        "runtime log", "figure", "logged", "predicted", "error"
    );
    for r in &rows {
        println!(
            "{:<28} {:<20} {:>14} {:>14} {:>+7.1}%",
            r.id,
            r.figure,
            figure_value(&r.figure, r.measured),
            figure_value(&r.figure, r.predicted),
            r.error_pct
        );
    }
    print_summaries("runtime figure", &summarize_runtime_logs(&rows));
    print_summaries(
        "runtime figure by release",
        &summarize_runtime_logs_by_release(&rows),
    );
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
}
