//! The commands that read the GPUs themselves, through NVML: `probe` (what is on them now),
//! `watch` (VRAM over time, with thresholds) and `run` (the measured peak of one command).
//!
//! Where NVML's library is missing and `amd-smi` is installed, AMD GPUs are read through it
//! (`amd_smi.rs`) into the same snapshot; on macOS, the Mac's GPU through `sysctl` and
//! `system_profiler` (`macos.rs`), whose total is Metal's working set and which give no used
//! memory. `watch` and `run` then see no processes.
//!
//! NVML is reached only through the `GpuSource` trait; the commands above it are tested with
//! recorded snapshots, and the hidden `--replay FILE` option lets the binary do the same on
//! machines without a GPU. Linux only: process names and trees come from `/proc`.
//!
//! `watch` and `run` drive the same monitor loop (`monitor.rs`: sampling, levels, actions,
//! growth); each adds only what it does around it.

mod actions;
mod alarm;
mod amd_smi;
mod error;
mod macos;
mod monitor;
mod nvml;
mod probe;
mod procfs;
mod run;
mod signals;
mod source;
mod units;
mod watch;

use std::path::Path;

pub use actions::LevelArgs;
pub use error::{GpuError, EXIT_USAGE};
pub use monitor::Monitor;
pub use probe::{probe, table as snapshot_table, ProbeArgs};
pub use run::{run, RunArgs};
pub use source::{select_gpus, GpuSource};
pub use units::Threshold;
pub use watch::{tick_json, watch, WatchArgs};

use source::RecordedSource;

/// NVML; where its library cannot be loaded, `amd-smi` if installed, else on a Mac `sysctl` and
/// `system_profiler`; or the recorded snapshots in `replay` when given. With none of them,
/// NVML's own reason is the error.
pub fn open_source(replay: Option<&Path>) -> Result<Box<dyn GpuSource>, GpuError> {
    if let Some(path) = replay {
        return Ok(Box::new(RecordedSource::load(path)?));
    }
    match nvml::NvmlSource::new() {
        Ok(nvml) => Ok(Box::new(nvml)),
        Err(e @ GpuError::NoLibrary(_)) => {
            if let Some(amd) = amd_smi::AmdSmiSource::find(amd_smi::SystemRunner) {
                return Ok(Box::new(amd));
            }
            match cfg!(target_os = "macos") {
                true => macos::MacSource::find(amd_smi::SystemRunner)
                    .map(|mac| Box::new(mac) as Box<dyn GpuSource>)
                    .ok_or(e),
                false => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
