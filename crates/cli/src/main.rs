//! `vramfit`: the planner's command line. A thin front-end: it turns flags into a `Scenario`, asks
//! the engine, and prints text or JSON. Exit codes: 0 ok, 2 bad input, 3 no usable GPU library.

mod columns;
mod gpu;
mod model_source;
mod parse_bench;
mod parse_smi;
mod render;
mod scenario_args;

use clap::{Parser, Subcommand, ValueEnum};
use scenario_args::ScenarioArgs;
use std::process::ExitCode;
use vramfit_engine::accuracy::{self, KindAccuracy, RunKind};
use vramfit_engine::{estimate, serving_plan, solver, tables, FieldError};

/// The published measurements and runtime logs the engine is checked against, built in so
/// `estimate --accuracy` needs no checkout.
const MEASURED: &str = include_str!("../../../calibration/measured-public.csv");
const SCENARIOS: &str = include_str!("../../../calibration/scenarios.csv");
const RUNTIME_LOGS: &str = include_str!("../../../calibration/runtime-logs.csv");

#[derive(Parser)]
#[command(
    name = "vramfit",
    version,
    about = "Plan GPU memory for LLM training and inference",
    // Wide enough that the longest flag, vLLM's `--max-cudagraph-capture-size`, keeps every
    // flag's help on its own line.
    term_width = 120
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Estimate the memory stack of one scenario.
    Estimate {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Print one JSON object (schema vramfit.estimate/3).
        #[arg(long)]
        json: bool,
        /// Also show how close estimates of this kind of run came to published measurements
        /// (calibration/; the same figures as `cargo xtask accuracy` and the page's panel).
        #[arg(long)]
        accuracy: bool,
    },
    /// Solve for what fits: max batch and sequence, accumulation, smallest GPU, fix-it ladder; for
    /// vLLM and SGLang, the concurrency, the longest context for --users, and the GPUs they need.
    Fit {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// The effective batch to reach with gradient accumulation.
        #[arg(long, value_name = "N")]
        target_batch: Option<u32>,
        /// Serving: concurrent requests to plan for (each of max-model-len tokens).
        #[arg(long, value_name = "N")]
        users: Option<u32>,
        /// Serving: each request's decode speed to plan for, in tokens/s: the smallest GPU that
        /// serves --users requests at it, and the most requests served at it.
        #[arg(long, value_name = "TOKENS")]
        tokens_per_s: Option<f64>,
        #[arg(long)]
        json: bool,
    },
    /// The quick-reference tables (chapter 62's and the OOM budget guide's), computed for a scenario's GPU and method.
    Tables {
        #[command(flatten)]
        scenario: ScenarioArgs,
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        #[arg(long)]
        markdown: bool,
    },
    /// Read nvidia-smi output in any format (table, CSV, -q, -q -x, -L, gpustat --json), amd-smi static/metric --json, or rocm-smi --showmeminfo vram (text, --csv, --json), from FILE or stdin.
    ParseSmi(parse_smi::ParseSmiArgs),
    /// Read llama-bench output (its table, -o csv, -o json or -o jsonl) from FILE or stdin and
    /// compare each test with the speed estimate of the scenario the flags describe.
    ParseBench(parse_bench::ParseBenchArgs),
    /// Show each GPU's memory, processes and MIG devices, read live through NVML.
    Probe(gpu::ProbeArgs),
    /// Watch VRAM use live, warning at thresholds; Ctrl-C prints a summary.
    Watch(gpu::WatchArgs),
    /// Run a command and measure the GPU memory of its processes: vramfit run -- CMD ARGS…
    Run(gpu::RunArgs),
    /// List the model presets or the GPU catalogue.
    List {
        what: ListWhat,
        #[arg(long)]
        json: bool,
        /// Only the models whose name, id or family has every word ("qwen3 30", "llama 70", "moe").
        #[arg(long, default_value = "")]
        search: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ListWhat {
    Models,
    Gpus,
}

pub fn invalid(errors: &[FieldError]) -> ExitCode {
    for e in errors {
        eprintln!("vramfit: invalid {}: {}", e.field, e.message);
    }
    ExitCode::from(2)
}

/// Writes the whole output at once. A closed pipe (`vramfit estimate | head -1`) is not an error;
/// `println!` would panic on it.
pub fn emit(text: &str) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vramfit: cannot write the output: {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn print_json(value: &impl serde::Serialize) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(text) => emit(&(text + "\n")),
        Err(e) => {
            eprintln!("vramfit: cannot write JSON: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Estimate {
            scenario,
            json,
            accuracy,
        } => estimate_command(&scenario, json, accuracy),
        Command::Fit {
            scenario,
            target_batch,
            users,
            tokens_per_s,
            json,
        } => fit_command(&scenario, target_batch, (users, tokens_per_s), json),
        Command::Tables {
            scenario,
            json,
            markdown,
        } => tables_command(&scenario, json, markdown),
        Command::ParseSmi(args) => parse_smi::parse_smi(&args),
        Command::ParseBench(args) => parse_bench::parse_bench(&args),
        Command::Probe(args) => gpu::probe(&args),
        Command::Watch(args) => gpu::watch(&args),
        Command::Run(args) => gpu::run(&args),
        Command::List { what, json, search } => match (what, json) {
            (ListWhat::Models, true) => print_json(&render::models(&search)),
            (ListWhat::Gpus, true) => print_json(&render::gpus()),
            (ListWhat::Models, false) => emit(&render::models_table(&search)),
            (ListWhat::Gpus, false) => emit(&render::gpus_table()),
        },
    }
}

/// `vramfit estimate`: the memory stack, with `--accuracy` the published figures for its kind.
fn estimate_command(scenario: &ScenarioArgs, json: bool, accuracy: bool) -> ExitCode {
    let estimated = scenario.scenario().and_then(|s| estimate(&s)).map(|mut e| {
        name_the_model(scenario, &mut e);
        e
    });
    match estimated {
        Ok(e) if accuracy => {
            let summaries = accuracy::validation(MEASURED, SCENARIOS, RUNTIME_LOGS);
            let Some(kind) = RunKind::of(&e.scenario) else {
                eprintln!("vramfit: an estimated scenario that does not resolve: a bug");
                return ExitCode::FAILURE;
            };
            let figures = KindAccuracy::of(&summaries, kind);
            if json {
                print_json(&render::with_accuracy(&e, &figures))
            } else {
                emit(&(render::estimate(&e) + "\n" + &render::accuracy(&figures)))
            }
        }
        Ok(e) if json => print_json(&e),
        Ok(e) => emit(&render::estimate(&e)),
        Err(errors) => invalid(&errors),
    }
}

/// Writes the launch command again with the weights the command line names (`--hf`, `--gguf`,
/// `--model-dir`), which the scenario does not hold.
fn name_the_model(scenario: &ScenarioArgs, e: &mut vramfit_engine::Estimate) {
    if let (Some(source), Some(serving)) = (scenario.model_source(), e.serving.as_mut()) {
        serving.command = serving.launch_command(&e.scenario, &source);
    }
}

/// The launch command of the scenario's own deployment, for `fit`'s serving plan.
fn launch_command(scenario: &ScenarioArgs, s: &vramfit_engine::Scenario) -> Option<String> {
    let mut e = estimate(s).ok()?;
    name_the_model(scenario, &mut e);
    e.serving?.command
}

/// `vramfit fit`: the serving plan for vLLM and SGLang, the solver's answer for training and
/// Transformers inference. A scenario that does not resolve goes to the solver, which reports it.
fn fit_command(
    scenario: &ScenarioArgs,
    target_batch: Option<u32>,
    (users, tokens_per_s): (Option<u32>, Option<f64>),
    json: bool,
) -> ExitCode {
    let serving = scenario
        .scenario()
        .is_ok_and(|s| s.runtime.rules().serves());
    if serving {
        match scenario
            .scenario()
            .and_then(|s| Ok((serving_plan::plan_serving(&s, users, tokens_per_s)?, s)))
        {
            Ok((plan, s)) if json => {
                let mut value = serde_json::to_value(&plan).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    object.insert("command".into(), launch_command(scenario, &s).into());
                }
                print_json(&value)
            }
            Ok((plan, s)) => emit(
                &(render::serving_plan(&plan, &s)
                    + &render::launch_line(launch_command(scenario, &s).as_deref())),
            ),
            Err(errors) => invalid(&errors),
        }
    } else {
        let result = scenario
            .scenario()
            .and_then(|s| Ok((solver::solve(&s, target_batch)?, s)));
        match result {
            Ok((solution, _)) if json => print_json(&solution),
            Ok((solution, s)) => emit(&render::solution(&solution, s.units)),
            Err(errors) => invalid(&errors),
        }
    }
}

/// `vramfit tables`: every quick-reference table for the scenario, as text, Markdown or JSON.
fn tables_command(scenario: &ScenarioArgs, json: bool, markdown: bool) -> ExitCode {
    let s = match scenario.scenario() {
        Ok(s) => s,
        Err(errors) => return invalid(&errors),
    };
    let all = tables::all_tables(&s);
    if json {
        return print_json(&all);
    }
    let text: String = all
        .iter()
        .map(|t| {
            if markdown {
                format!("### {}\n\n{}\n{}\n\n", t.title, t.to_markdown(), t.note)
            } else {
                format!("{}\n{}\n", t.title, render::table(t))
            }
        })
        .collect();
    emit(&text)
}
