//! The page's second module: fills the shell's slots with their panels. Its scenario follows the
//! shell's announcements, and its buttons ask the shell for changes (`bridge.rs`), so each panel
//! works as it would inside the shell.

use crate::bridge;
use crate::browser;
use crate::components::{
    accuracy::AccuracyPanel,
    breakdown::Breakdown,
    config_paste::ConfigPaste,
    curves_panel::CurvesPanel,
    examples::{DesktopUsage, LessonExamples},
    gguf_drop::GgufDrop,
    gpu_now::GpuNow,
    hub_read::HubRead,
    measured::MeasuredPanel,
    serving_panel::ServingPanel,
    share::Share,
    solver_panel::SolverPanel,
    speed_panel::SpeedPanel,
    tables_panel::TablesPanel,
};
use crate::slot::{self, Slot};
use crate::state::{Module, PageState};
use leptos::prelude::*;
use vramfit_engine::estimate;
use vramfit_engine::query::scenario_from_query;

/// Mounts a panel in each slot of the document, and marks the page whole after them.
pub fn start() {
    browser::install_panic_banner();
    // The shell wrote its scenario into the URL before it painted, so the URL is the scenario now.
    let state = PageState::new(
        Module::Panels,
        scenario_from_query(&browser::query()).0,
        estimate,
    );
    bridge::on_scenario(move |query| state.scenario.set(scenario_from_query(&query).0));
    for (slot, element) in slot::in_document() {
        fill(slot, element, state);
    }
    // Effects the panels queued run in microtasks; a task queued now runs after them.
    set_timeout(
        || browser::mark("vramfit:page-mounted"),
        std::time::Duration::ZERO,
    );
}

fn fill(slot: Slot, element: web_sys::HtmlElement, state: PageState) {
    fn mount<V: IntoView + 'static>(
        element: web_sys::HtmlElement,
        state: PageState,
        panel: impl FnOnce() -> V + 'static,
    ) {
        let mounted = leptos::mount::mount_to(element, move || {
            provide_context(state);
            panel()
        });
        // A slot's panel lives as long as the page.
        mounted.forget();
    }
    match slot {
        Slot::HubRead => mount(element, state, HubRead),
        Slot::ConfigPaste => mount(element, state, ConfigPaste),
        Slot::GgufDrop => mount(element, state, GgufDrop),
        Slot::DesktopUsage => mount(element, state, DesktopUsage),
        Slot::Share => mount(element, state, Share),
        Slot::LessonExamples => mount(element, state, LessonExamples),
        Slot::Serving => mount(element, state, ServingPanel),
        Slot::Speed => mount(element, state, SpeedPanel),
        Slot::Curves => mount(element, state, CurvesPanel),
        Slot::Breakdown => mount(element, state, Breakdown),
        Slot::Accuracy => mount(element, state, AccuracyPanel),
        Slot::Solver => mount(element, state, SolverPanel),
        Slot::Gpu => mount(element, state, GpuNow),
        Slot::Measured => mount(element, state, MeasuredPanel),
        Slot::Tables => mount(element, state, TablesPanel),
    }
}
