//! vramfit's page: a Leptos client-side app in two wasm modules built from this library. The
//! shell (`src/main.rs`, `shell.rs`) is the first download: it turns the form and the URL into a
//! `Scenario` and shows the answer (summary, chart). The panels (`src/bin/vramfit-panels.rs`,
//! `panels.rs`) load once that answer is painted and fill the slots the shell left for them: the
//! readers (Hub, config.json, GGUF, nvidia-smi), speed, curves, breakdown, solver and tables.
//! They share no memory; `bridge.rs` carries the scenario between them as its URL query.

mod bridge;
mod browser;
mod chart;
mod components;
mod html;
mod layout;
mod palette;
pub mod panels;
pub mod shell;
mod slot;
mod stack_chart;
mod state;
