//! "How accurate is this?": for the scenario's kind of run, how close the engine came to the
//! published measurements and runtime logs of runs like it. build.rs computes each kind's panel
//! with the engine functions `cargo xtask accuracy` and `vramfit estimate --accuracy` use; the page
//! picks the one for the result on screen.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::accuracy::RunKind;

/// Each kind of run's key and its panel, as build.rs writes them.
const PANELS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/accuracy.rs"));

#[component]
pub fn AccuracyPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // The kind of the result on screen: the last good estimate's scenario.
    let panel = Memo::new(move |_| {
        let kind = state
            .estimate
            .with(|e| e.as_ref().and_then(|e| RunKind::of(&e.scenario)))?;
        PANELS
            .iter()
            .find(|(key, _)| *key == kind.key())
            .map(|p| p.1)
    });
    view! {
        <section class="panel accuracy" aria-label="How accurate is this?">
            <h2>"How accurate is this?"</h2>
            <div inner_html=move || panel.get().unwrap_or_default()></div>
        </section>
    }
}
