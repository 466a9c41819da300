//! vramfit's command line as a library: the `vramfit` binary (`main.rs`) is its clap front-end,
//! and the Python package (`crates/python`) calls the same functions, so both give the same
//! answers, read GPUs through the same NVML code and fail with the same messages.

pub mod answer;
mod columns;
pub mod gpu;
mod model_source;
pub mod parse_bench;
pub mod parse_smi;
pub mod render;
pub mod scenario_args;

use std::process::ExitCode;
use vramfit_engine::FieldError;

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
