//! The solver panel: largest batch and sequence, accumulation for a target effective batch, the
//! smallest GPU, and the fix-it ladder whose steps are buttons that apply them. A serving
//! runtime (vLLM, SGLang) fills a preallocated pool instead of growing per sequence, so its
//! questions are the serving panel's, and this panel steps aside.
//!
//! The answers are written as HTML, with one click handler for every ladder step (a typed view
//! of them cost more wasm).

use crate::html::{escape, target_attribute};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::solver::{solve, Solution};
use vramfit_engine::Units;

/// The answers and the ladder; each step's button names its position (`data-step`).
fn markup(sol: &Solution, units: Units) -> String {
    let none = |v: Option<u32>| v.map_or_else(|| "does not fit".to_string(), |n| n.to_string());
    let effective = match (sol.micro_batch, sol.grad_accum) {
        (Some(m), Some(a)) => format!("micro-batch {m} × accumulation {a}"),
        _ => "—".to_string(),
    };
    let smallest = sol
        .smallest_gpu
        .as_deref()
        .unwrap_or("none in the catalogue");
    let mut html = format!(
        "<dl class=\"solution\" data-testid=\"solution\">\
         <dt>Largest micro-batch</dt><dd data-testid=\"max-batch\">{}<small> = (usable {} − fixed {}) ÷ {} per sample</small></dd>\
         <dt>Longest sequence</dt><dd data-testid=\"max-seq\">{}</dd>\
         <dt>Effective batch</dt><dd>{effective}</dd>\
         <dt>Smallest GPU that fits</dt><dd data-testid=\"smallest-gpu\">{}</dd></dl>",
        none(sol.max_batch),
        sol.usable_bytes.display(units),
        sol.fixed_bytes.display(units),
        sol.per_sample_bytes.display(units),
        none(sol.max_seq),
        escape(smallest)
    );
    if !sol.ladder.is_empty() {
        html += "<h3>Fix-it ladder</h3><ol class=\"ladder\" data-testid=\"ladder\">";
        for (i, step) in sol.ladder.iter().enumerate() {
            let verdict = step.verdict.as_str();
            html += &format!(
                "<li><button type=\"button\" data-step=\"{i}\">{}</button> → {} <span class=\"verdict verdict-{verdict}\">{verdict}</span></li>",
                escape(&step.action),
                step.total_bytes.display(units)
            );
        }
        html += "</ol>";
    }
    html
}

#[component]
pub fn SolverPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let target = RwSignal::new(16u32);
    let pooled = Memo::new(move |_| state.serving_runtime());
    let solution = Memo::new(move |_| {
        let t = target.get();
        state.scenario.with(|s| solve(s, Some(t)).ok())
    });
    let answers = move || {
        let units = state.units.get();
        solution
            .with(|sol| sol.as_ref().map(|sol| markup(sol, units)))
            .unwrap_or_default()
    };
    let on_click = move |ev: web_sys::MouseEvent| {
        let step = target_attribute(&ev, "data-step").and_then(|i| i.parse::<usize>().ok());
        let changes = solution.with_untracked(|sol| {
            sol.as_ref()
                .and_then(|sol| sol.ladder.get(step?))
                .map(|step| step.changes.clone())
        });
        if let Some(changes) = changes {
            state.apply(&changes);
        }
    };
    move || {
        (!pooled.get()).then(|| view! {
        <section class="panel solver" aria-label="Solver">
            <h2>"What fits"</h2>
            <div class="field">
                <label for="f-target-batch">"Target effective batch"</label>
                <input type="text" id="f-target-batch" inputmode="numeric" value=target.get_untracked().to_string()
                    on:input=move |ev| {
                        if let Ok(n) = event_target_value(&ev).trim().parse::<u32>() {
                            target.set(n.max(1));
                        }
                    }/>
            </div>
            <div inner_html=answers on:click=on_click></div>
        </section>
    })
    }
}
