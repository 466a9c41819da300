//! The page's panels, one component per file.

pub mod accuracy;
pub mod bench_paste;
pub mod breakdown;
pub mod chart_panel;
pub mod command;
pub mod config_paste;
pub mod controls;
pub mod curves_panel;
pub mod examples;
pub mod gguf_drop;
pub mod gpu_card;
pub mod gpu_now;
pub mod hub_read;
pub mod legend;
pub mod measured;
pub mod model_picker;
pub mod paste_area;
pub mod serving_panel;
pub mod share;
pub mod solver_panel;
pub mod speed_panel;
pub mod start;
pub mod summary;
pub mod tables_panel;
