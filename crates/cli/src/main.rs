//! `vramfit`: the planner's command line. A thin front-end: it turns flags into a `Scenario`, asks
//! the engine, and prints text or JSON. Exit codes: 0 ok, 2 bad input, 3 no usable GPU library.

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;
use vramfit_cli::answer::{self, Fit, FitGoals};
use vramfit_cli::scenario_args::ScenarioArgs;
use vramfit_cli::{emit, gpu, invalid, parse_bench, parse_smi, print_json, render};
use vramfit_engine::tables;

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
        /// Also show how close estimates of this kind of run came to published measurements of
        /// memory and speed (calibration/; the same figures as `cargo xtask accuracy` and the
        /// page's panel).
        #[arg(long)]
        accuracy: bool,
    },
    /// Solve for what fits: max batch and sequence, accumulation, smallest GPU, fix-it ladder; for
    /// a serving runtime, the concurrency, the longest context for --users, and the GPUs it needs.
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
    /// Read nvidia-smi output in any format (table, CSV, -q, -q -x, -L, gpustat --json), amd-smi (static, metric, list as text, --csv or --json; monitor; its default view), rocm-smi --showmeminfo vram (text, --csv, --json), or a Mac's sysctl and system_profiler, from FILE or stdin.
    ParseSmi(parse_smi::ParseSmiArgs),
    /// Read llama-bench output (its table, -o csv, -o json or -o jsonl) or vllm bench serve's (its
    /// result block or --save-result JSON) from FILE or stdin and compare each test or run with the
    /// speed estimate of the scenario the flags describe.
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
        } => {
            let goals = FitGoals {
                target_batch,
                users,
                tokens_per_s,
            };
            fit_command(&scenario, &goals, json)
        }
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
    let e = match scenario
        .scenario()
        .and_then(|s| answer::estimated(scenario, &s))
    {
        Ok(e) => e,
        Err(errors) => return invalid(&errors),
    };
    if !accuracy {
        return match json {
            true => print_json(&e),
            false => emit(&render::estimate(&e)),
        };
    }
    let summaries = answer::validation();
    let Some(figures) = answer::accuracy_of(&summaries, &e) else {
        eprintln!("vramfit: an estimated scenario that does not resolve: a bug");
        return ExitCode::FAILURE;
    };
    if json {
        print_json(&answer::estimate_json(&e, Some(&figures)))
    } else {
        emit(
            &(render::estimate(&e)
                + "\n"
                + &render::accuracy(&figures.memory)
                + "\n"
                + &render::speed_accuracy(&figures.speed)),
        )
    }
}

/// `vramfit fit`: the serving plan for a serving runtime, the solver's answer for training and
/// Transformers inference.
fn fit_command(scenario: &ScenarioArgs, goals: &FitGoals, json: bool) -> ExitCode {
    match scenario
        .scenario()
        .and_then(|s| answer::fit(scenario, s, goals))
    {
        Ok(fit) if json => print_json(&fit.to_json()),
        Ok(Fit::Serving {
            plan,
            scenario,
            command,
        }) => emit(
            &(render::serving_plan(&plan, &scenario) + &render::launch_line(command.as_deref())),
        ),
        Ok(Fit::Training { solution, scenario }) => {
            emit(&render::solution(&solution, scenario.units))
        }
        Err(errors) => invalid(&errors),
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
