//! The quick-reference tables, computed by the engine for the current GPU and method, with the
//! current scenario's cell highlighted and Markdown/CSV copy buttons.

use crate::browser::copy_text;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::tables::{all_tables, table_inputs, Cell, Row, Table};

/// The scenario's pairs, which the cell that holds it matches.
type Pairs = Memo<Vec<(&'static str, String)>>;

/// A cell, coloured by its verdict and marked while it is the scenario's own.
fn cell(cell: Cell, current: Pairs) -> impl IntoView {
    let verdict = cell
        .verdict
        .map_or_else(String::new, |v| format!("cell-{}", v.as_str()));
    let text = cell.text.clone();
    let here = Memo::new(move |_| current.with(|c| cell.matches_pairs(c)));
    view! {
        <td class=verdict class:current=here aria-current=move || here.get().then_some("true")>
            {text}
        </td>
    }
}

fn row(row: Row, current: Pairs) -> impl IntoView {
    view! {
        <tr>
            <th scope="row">{row.label}</th>
            {row.cells.into_iter().map(|c| cell(c, current)).collect_view()}
        </tr>
    }
}

/// One table with its note and its copy buttons.
#[component]
fn TableFigure(table: Table, current: Pairs) -> impl IntoView {
    let markdown = table.to_markdown();
    let csv = table.to_csv();
    view! {
        <figure class="table-figure">
            <figcaption>{table.title}</figcaption>
            <table data-testid=format!("table-{}", table.id)>
                <thead>
                    <tr>
                        <th scope="col">{table.corner}</th>
                        {table.columns.into_iter().map(|c| view! { <th scope="col">{c}</th> }).collect_view()}
                    </tr>
                </thead>
                <tbody>{table.rows.into_iter().map(|r| row(r, current)).collect_view()}</tbody>
            </table>
            <p class="note">{table.note}</p>
            <div class="buttons">
                <button type="button" on:click=move |_| copy_text(&markdown)>"Copy Markdown"</button>
                <button type="button" on:click=move |_| copy_text(&csv)>"Copy CSV"</button>
            </div>
        </figure>
    }
}

#[component]
pub fn TablesPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // Tables depend only on method, GPU and budget; editing the batch must not rebuild them.
    let inputs = Memo::new(move |_| state.scenario.with(table_inputs));
    let tables = Memo::new(move |_| inputs.with(all_tables));
    let current = Memo::new(move |_| state.scenario.with(|s| s.all_pairs()));
    view! {
        <section class="panel tables" aria-label="Quick-reference tables">
            <h2>"Quick reference"</h2>
            {move || {
                tables
                    .get()
                    .into_iter()
                    .map(|table| view! { <TableFigure table current/> })
                    .collect_view()
            }}
        </section>
    }
}
