//! `cargo xtask accuracy`: the detailed method against calibration/measured-public.csv and the
//! runtime logs, row by row and per kind of run (median and worst absolute error, the share within
//! ±10%): the figures `vramfit estimate --accuracy` and the page's accuracy panel show.

use std::path::Path;
use vramfit_engine::accuracy::{
    compare, compare_runtime_logs, summarize, summarize_runtime_logs, Summary,
};

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
    print_summaries("kind of run", &summarize(&rows));
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
    runtime_report(&read("runtime-logs.csv")?);
    Ok(())
}

fn print_summaries(group: &str, summaries: &[Summary]) {
    println!(
        "\n{group:<34} {:>5} {:>12} {:>12} {:>8}  worst row",
        "rows", "median |err|", "worst |err|", "in ±10%"
    );
    for s in summaries {
        println!(
            "{:<34} {:>5} {:>11.1}% {:>11.1}% {:>8}  {}",
            s.category,
            s.rows,
            s.median_abs_pct,
            s.worst_abs_pct,
            format!("{}/{}", s.within_10_pct, s.rows),
            s.worst_id
        );
    }
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
    print_summaries("runtime figure", &summarize_runtime_logs(&rows));
    for (id, why) in skipped {
        println!("not compared: {id}: {why}");
    }
}
