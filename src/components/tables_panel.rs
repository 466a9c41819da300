//! The quick-reference tables, computed by the engine for the current GPU and method, with the
//! current scenario's cell highlighted and Markdown/CSV copy buttons.
//!
//! Written as HTML, with one click handler on the section for every copy button: the typed view
//! (a reactive class per cell) made the page's wasm markedly larger.

use crate::browser::copy_text;
use crate::html::{escape, target_attribute};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::tables::{all_tables, table_inputs, Table};

/// The section's content: each table with its cells, the scenario's own (`current`) marked, and
/// its copy buttons, which name their table by position and what they copy (`md` or `csv`).
fn markup(tables: &[Table], current: &[(&str, String)]) -> String {
    let mut html = String::from("<h2>Quick reference</h2>");
    for (i, t) in tables.iter().enumerate() {
        html += &format!(
            "<figure class=\"table-figure\"><figcaption>{}</figcaption><table data-testid=\"table-{}\"><thead><tr><th scope=\"col\">{}</th>",
            escape(&t.title),
            escape(&t.id),
            escape(&t.corner)
        );
        for c in &t.columns {
            html += &format!("<th scope=\"col\">{}</th>", escape(c));
        }
        html += "</tr></thead><tbody>";
        for row in &t.rows {
            html += &format!("<tr><th scope=\"row\">{}</th>", escape(&row.label));
            for cell in &row.cells {
                let verdict = cell
                    .verdict
                    .map_or_else(String::new, |v| format!("cell-{}", v.as_str()));
                let here = if cell.matches_pairs(current) {
                    " current\" aria-current=\"true"
                } else {
                    ""
                };
                html += &format!("<td class=\"{verdict}{here}\">{}</td>", escape(&cell.text));
            }
            html += "</tr>";
        }
        html += &format!(
            "</tbody></table><p class=\"note\">{}</p><div class=\"buttons\">\
             <button type=\"button\" data-table=\"{i}\" data-copy=\"md\">Copy Markdown</button>\
             <button type=\"button\" data-table=\"{i}\" data-copy=\"csv\">Copy CSV</button></div></figure>",
            escape(&t.note)
        );
    }
    html
}

#[component]
pub fn TablesPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // Tables depend only on method, GPU and budget; editing the batch must not rebuild them.
    let inputs = Memo::new(move |_| state.scenario.with(table_inputs));
    let tables = Memo::new(move |_| inputs.with(all_tables));
    let current = Memo::new(move |_| state.scenario.with(|s| s.all_pairs()));
    let on_click = move |ev: web_sys::MouseEvent| {
        let index = target_attribute(&ev, "data-table").and_then(|i| i.parse::<usize>().ok());
        let markdown = target_attribute(&ev, "data-copy").as_deref() == Some("md");
        tables.with_untracked(|all| {
            if let Some(t) = index.and_then(|i| all.get(i)) {
                copy_text(&if markdown {
                    t.to_markdown()
                } else {
                    t.to_csv()
                });
            }
        });
    };
    view! {
        <section class="panel tables" aria-label="Quick-reference tables" on:click=on_click
            inner_html=move || tables.with(|t| current.with(|c| markup(t, c)))></section>
    }
}
