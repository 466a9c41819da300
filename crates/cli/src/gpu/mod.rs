//! The commands that read the GPUs themselves, through NVML: `probe` (what is on them now),
//! `watch` (VRAM over time, with thresholds) and `run` (the measured peak of one command).
//!
//! NVML is reached only through the `GpuSource` trait; the commands above it are tested with
//! recorded snapshots, and the hidden `--replay FILE` option lets the binary do the same on
//! machines without a GPU. Linux only: process names and trees come from `/proc`.
//!
//! `watch` and `run` drive the same monitor loop (`monitor.rs`: sampling, levels, actions,
//! growth); each adds only what it does around it.

mod actions;
mod alarm;
mod error;
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

pub use probe::{probe, table as snapshot_table, ProbeArgs};
pub use run::{run, RunArgs};
pub use watch::{watch, WatchArgs};

use error::GpuError;
use source::{GpuSource, RecordedSource};

/// NVML, or the recorded snapshots in `replay` when given.
fn open_source(replay: Option<&Path>) -> Result<Box<dyn GpuSource>, GpuError> {
    match replay {
        Some(path) => Ok(Box::new(RecordedSource::load(path)?)),
        None => Ok(Box::new(nvml::NvmlSource::new()?)),
    }
}
