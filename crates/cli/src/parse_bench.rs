//! `vramfit parse-bench`: llama-bench's output (any format) or `vllm bench serve`'s against the
//! speed model for the scenario the flags describe: each test or run measured and predicted, and
//! the correction to apply.

use crate::columns::{grid, Column};
use crate::parse_smi::read_input;
use crate::scenario_args::ScenarioArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use vramfit_engine::bench::{parse, Bench, MAX_INPUT_BYTES};
use vramfit_engine::bench_check::{check_bench, BenchCheck, BenchReport, Quantity};

#[derive(Args)]
pub struct ParseBenchArgs {
    /// The file to read; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// The model, GPU and runtime the benchmark ran (`--gguf FILE` or `--model`, `--gpu`; the
    /// runtime is llama.cpp for llama-bench's output and vLLM for vLLM's unless given).
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Print the tests and their check as JSON.
    #[arg(long)]
    json: bool,
}

pub fn parse_bench(args: &ParseBenchArgs) -> ExitCode {
    let bench = read_input(args.file.as_ref(), MAX_INPUT_BYTES)
        .and_then(|text| parse(&text).map_err(|e| e.to_string()));
    let bench = match bench {
        Ok(bench) => bench,
        Err(message) => {
            eprintln!("vramfit: {message}");
            return ExitCode::from(2);
        }
    };
    // The runtime the benchmark measured is the default; the flags say the rest.
    let base = [("mode", "inference"), ("runtime", bench.runtime())];
    let scenario = match args.scenario.scenario_over(&base) {
        Ok(s) => s,
        Err(errors) => return crate::invalid(&errors),
    };
    let report = check_bench(&scenario, &bench);
    if args.json {
        return crate::print_json(&serde_json::json!({ "bench": bench, "check": report }));
    }
    crate::emit(&table(&bench, &report))
}

/// A figure with its unit: `7100.0 t/s`, `148 ms`.
fn figure(quantity: Quantity, value: f64) -> String {
    match quantity {
        Quantity::TokensPerS => format!("{value:.1} t/s"),
        Quantity::TtftS => format!("{:.0} ms TTFT", value * 1e3),
    }
}

fn line(check: &BenchCheck) -> Vec<String> {
    vec![
        check.test.clone(),
        figure(check.quantity, check.measured),
        check
            .predicted
            .map_or("—".into(), |p| figure(check.quantity, p)),
        check.error_pct.map_or("—".into(), |e| format!("{e:+.1}%")),
        check.note.clone().unwrap_or_default(),
    ]
}

fn table(bench: &Bench, report: &BenchReport) -> String {
    let models = bench.models();
    let ran = if models.is_empty() {
        String::new()
    } else {
        format!(": {}", models.join(", "))
    };
    let mut out = format!("ran            {}{ran}\n", bench.tool());
    out += &grid(
        &[
            Column::left("test"),
            Column::right("measured"),
            Column::right("predicted"),
            Column::right("error"),
            Column::left("note"),
        ],
        report.checks.iter().map(line).collect(),
    );
    if let Some(build) = &bench.build {
        out += &format!("build          {build}\n");
    }
    if let Some(factor) = report.correction {
        out += &format!(
            "correction     ×{factor:.3}: this machine runs at {:.0}% of the estimate (the median over its token rates)\n",
            factor * 100.0
        );
    }
    for warning in &bench.warnings {
        out += &format!("note: {warning}\n");
    }
    out
}
