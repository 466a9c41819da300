//! `cargo xtask accuracy`: the detailed method against calibration/measured-public.csv, row by row
//! and as median / worst absolute error per category.

use std::path::Path;
use vramfit_engine::accuracy::{compare, compare_runtime_logs, summarize, summarize_runtime_logs};

pub fn report(root: &Path) -> Result<(), String> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join("calibration").join(name))
            .map_err(|e| format!("cannot read calibration/{name}: {e}"))
    };
    let (rows, skipped) = compare(&read("measured-public.csv")?, &read("scenarios.csv")?);
    println!(
        "{:<6} {:<22} {:<11} {:>10} {:>10} {:>8}",
        "id", "category", "metric", "measured", "predicted", "error"
    );
    for r in &rows {
        println!(
            "{:<6} {:<22} {:<11} {:>8.2}GB {:>8.2}GB {:>+7.1}%",
            r.id,
            r.category,
            format!("{:?}", r.metric).to_lowercase(),
            r.measured_bytes / 1e9,
            r.predicted_bytes / 1e9,
            r.error_pct
        );
    }
    println!(
        "\n{:<22} {:>5} {:>12} {:>12}  worst row",
        "category", "rows", "median |err|", "worst |err|"
    );
    for s in summarize(&rows) {
        println!(
            "{:<22} {:>5} {:>11.1}% {:>11.1}%  {}",
            s.category, s.rows, s.median_abs_pct, s.worst_abs_pct, s.worst_id
        );
    }
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
    runtime_report(&read("runtime-logs.csv")?);
    Ok(())
}

/// Bytes as GiB, tokens and requests as they are.
fn figure_value(figure: &str, value: f64) -> String {
    match figure {
        "kv_tokens" => format!("{value:.0}"),
        "max_concurrency" => format!("{value:.2}x"),
        _ => format!("{:.3}GiB", value / (1u64 << 30) as f64),
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
    println!(
        "\n{:<34} {:>5} {:>12} {:>12}  worst row",
        "runtime figure", "rows", "median |err|", "worst |err|"
    );
    for s in summarize_runtime_logs(&rows) {
        println!(
            "{:<34} {:>5} {:>11.1}% {:>11.1}%  {}",
            s.category, s.rows, s.median_abs_pct, s.worst_abs_pct, s.worst_id
        );
    }
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
}
