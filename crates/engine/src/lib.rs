//! vramfit's formula engine: pure functions from a [`Scenario`] to a memory breakdown, a verdict,
//! solver answers and the quick-reference tables. No IO, no clock, no global state; it builds for
//! wasm32 and native alike, and nothing in it panics on any input.

pub mod accuracy;
pub mod bench_check;
pub mod calibration;
pub mod card;
pub mod dtype;
pub mod estimate;
pub mod examples;
pub mod gpu_catalogue;
pub mod growth;
pub mod lora;
pub mod measurement;
pub mod model;
pub mod optimizer;
pub mod query;
pub mod runtime;
pub mod scenario;
pub mod serving_plan;
pub mod sharding;
pub mod solver;
pub mod tables;
pub mod what_if;
pub mod wire;
pub mod workload;

pub use estimate::{estimate, estimate_memory, Budget, Component, Estimate, Verdict};
pub use scenario::{FieldError, Scenario};
pub use units::{Bytes, Units};
/// The llama-bench output reader, shared with the page and the CLI.
pub use vramfit_bench as bench;
/// The nvidia-smi / snapshot parsers, shared with the page and the CLI.
pub use vramfit_smi as smi;
/// Byte counts, the unit constants and the size parser, shared with the smi parsers and the CLI.
pub use vramfit_units as units;
