//! The breakdown table: one row per component with its formula and numbers ("show your work").
//! Its rows are written as HTML (a typed view of them cost more wasm).

use crate::html::escape;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::{Estimate, Units};

/// One `<tr>` per component, its id and exact bytes in data- attributes for the tests.
fn rows(estimate: &Estimate, units: Units) -> String {
    let mut html = String::new();
    for c in &estimate.components {
        html += &format!(
            "<tr data-component=\"{}\" data-bytes=\"{}\"><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"formula\"><code>{}</code></td></tr>",
            escape(c.id.id()),
            c.bytes.0,
            escape(&c.label),
            c.bytes.display(units),
            escape(&c.formula)
        );
    }
    html
}

#[component]
pub fn Breakdown() -> impl IntoView {
    let state = expect_context::<PageState>();
    let html = move || {
        let units = state.units.get();
        state
            .estimate
            .with(|e| e.as_ref().map(|e| rows(e, units)))
            .unwrap_or_default()
    };
    view! {
        <section class="panel breakdown" aria-label="Breakdown">
            <h2>"Memory stack"</h2>
            <table>
                <thead><tr><th scope="col">"Component"</th><th scope="col" class="num">"Memory"</th><th scope="col">"Formula"</th></tr></thead>
                <tbody inner_html=html></tbody>
            </table>
        </section>
    }
}
