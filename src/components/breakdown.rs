//! The breakdown table: one row per component with its formula and numbers ("show your work").

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::{Estimate, Units};

/// A component's row as shown: the whole row is its key, so an edit redraws only the rows whose
/// figures or formula changed.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Row {
    id: String,
    bytes: u64,
    label: String,
    shown: String,
    formula: String,
}

fn rows(estimate: &Estimate, units: Units) -> Vec<Row> {
    estimate
        .components
        .iter()
        .map(|c| Row {
            id: c.id.id().to_string(),
            bytes: c.bytes.0,
            label: c.label.clone(),
            shown: c.bytes.display(units),
            formula: c.formula.clone(),
        })
        .collect()
}

#[component]
pub fn Breakdown() -> impl IntoView {
    let state = expect_context::<PageState>();
    let rows = move || {
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
                <tbody>
                    // The component id and exact bytes are data- attributes for the tests.
                    <For each=rows key=|row| row.clone() let:row>
                        <tr data-component=row.id data-bytes=row.bytes.to_string()>
                            <th scope="row">{row.label}</th>
                            <td class="num">{row.shown}</td>
                            <td class="formula"><code>{row.formula}</code></td>
                        </tr>
                    </For>
                </tbody>
            </table>
        </section>
    }
}
