//! `vramfit parse-bench`: llama-bench's output (any format) against the speed model for the
//! scenario the flags describe: each test measured and predicted, and the correction to apply.

use crate::columns::{grid, Column};
use crate::parse_smi::read_input;
use crate::scenario_args::ScenarioArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use vramfit_engine::bench::{parse, Bench, MAX_INPUT_BYTES};
use vramfit_engine::bench_check::{check_bench, BenchReport};

#[derive(Args)]
pub struct ParseBenchArgs {
    /// The file to read; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// The model, GPU and runtime the benchmark ran (`--gguf FILE` or `--model`, `--gpu`).
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
    // llama-bench measures llama.cpp's inference; the flags say the rest.
    let base = [("mode", "inference"), ("runtime", "llama.cpp")];
    let scenario = match args.scenario.scenario_over(&base) {
        Ok(s) => s,
        Err(errors) => return crate::invalid(&errors),
    };
    let report = check_bench(&scenario, &bench.rows);
    if args.json {
        return crate::print_json(&serde_json::json!({ "bench": bench, "check": report }));
    }
    crate::emit(&table(&bench, &report))
}

fn table(bench: &Bench, report: &BenchReport) -> String {
    let rows = bench
        .rows
        .iter()
        .zip(&report.checks)
        .map(|(row, check)| {
            vec![
                row.model.clone(),
                check.test.clone(),
                format!("{:.1}", check.measured_tokens_per_s),
                check
                    .predicted_tokens_per_s
                    .map_or("—".into(), |p| format!("{p:.1}")),
                check.error_pct.map_or("—".into(), |e| format!("{e:+.1}%")),
                check.note.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut out = grid(
        &[
            Column::left("model"),
            Column::left("test"),
            Column::right("measured t/s"),
            Column::right("predicted t/s"),
            Column::right("error"),
            Column::left("note"),
        ],
        rows,
    );
    if let Some(build) = &bench.build {
        out += &format!("build          {build}\n");
    }
    if let Some(factor) = report.correction {
        out += &format!(
            "correction     ×{factor:.3}: this machine runs at {:.0}% of the estimate (the median over its tests)\n",
            factor * 100.0
        );
    }
    for warning in &bench.warnings {
        out += &format!("note: {warning}\n");
    }
    out
}
