//! `vramfit parse-smi`: the fallback when NVML is unavailable. Reads whatever nvidia-smi (or
//! gpustat, or `vramfit probe --json`) printed, and writes the `vramfit.snapshot/1` JSON or a table.

use crate::gpu::snapshot_table;
use clap::Args;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use vramfit_engine::smi::{parse, Snapshot, MAX_INPUT_BYTES};

#[derive(Args)]
pub struct ParseSmiArgs {
    /// The file to read; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// Print the vramfit.snapshot/1 JSON the page imports.
    #[arg(long)]
    json: bool,
}

/// Reads at most one byte past a parser's limit, so an endless pipe cannot exhaust memory and
/// an over-long input still gets the parser's own "too large" message.
pub fn read_input(file: Option<&PathBuf>, max_bytes: usize) -> Result<String, String> {
    let limit = (max_bytes + 1) as u64;
    let mut bytes = Vec::new();
    let result = match file.filter(|p| p.as_os_str() != "-") {
        Some(path) => std::fs::File::open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?
            .take(limit)
            .read_to_end(&mut bytes),
        None => std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
    };
    result.map_err(|e| format!("cannot read input: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads a snapshot file for `--from-probe`.
pub fn read_snapshot(path: &PathBuf) -> Result<Snapshot, String> {
    let text = read_input(Some(path), MAX_INPUT_BYTES)?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse_smi(args: &ParseSmiArgs) -> ExitCode {
    let snapshot = read_input(args.file.as_ref(), MAX_INPUT_BYTES)
        .and_then(|text| parse(&text).map_err(|e| e.to_string()));
    match snapshot {
        Ok(snap) if args.json => crate::print_json(&snap),
        // The table ends with the parser's warnings, each on its own line.
        Ok(snap) => crate::emit(&snapshot_table(&snap)),
        Err(message) => {
            eprintln!("vramfit: {message}");
            ExitCode::from(2)
        }
    }
}
