//! "Your llama-bench run": llama-bench's output, pasted or dropped in any format it prints
//! (`vramfit_engine::bench`), each test set beside the speed model at that test's lengths
//! (`bench_check::check_bench`, as `vramfit parse-bench` does), with the correction: the median of
//! measured ÷ predicted.

use crate::components::paste_area::PasteArea;
use crate::components::speed_panel::rate;
use crate::html::escape;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::bench::{parse, Bench};
use vramfit_engine::bench_check::{check_bench, BenchReport};

/// Each test measured and predicted, the error, and why a test has no prediction. The exact
/// figures are in data- attributes for the tests.
fn checks(report: &BenchReport) -> String {
    let mut rows = String::new();
    for c in &report.checks {
        let predicted = c.predicted_tokens_per_s;
        let note = c.note.as_deref().map_or_else(String::new, |n| {
            format!("<small class=\"bench-note\">{}</small>", escape(n))
        });
        rows += &format!(
            "<tr data-test=\"{}\" data-measured=\"{}\" data-predicted=\"{}\"><td>{}{note}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&c.test),
            c.measured_tokens_per_s,
            predicted.map_or_else(String::new, |p| p.to_string()),
            escape(&c.test),
            rate(c.measured_tokens_per_s),
            predicted.map_or_else(|| "—".to_string(), rate),
            c.error_pct
                .map_or_else(|| "—".to_string(), |e| format!("{e:+.1}%"))
        );
    }
    format!(
        "<table data-testid=\"bench-check\"><thead><tr><th scope=\"col\">Test</th>\
         <th scope=\"col\" class=\"num\">Measured t/s</th><th scope=\"col\" class=\"num\">Predicted t/s</th>\
         <th scope=\"col\" class=\"num\">Error</th></tr></thead><tbody>{rows}</tbody></table>"
    )
}

/// What llama-bench ran, the tests, the correction and the reader's warnings.
fn result(bench: &Bench, report: &BenchReport) -> String {
    let mut models: Vec<&str> = bench.rows.iter().map(|r| r.model.as_str()).collect();
    models.dedup();
    let build = bench
        .build
        .as_deref()
        .map_or_else(String::new, |b| format!(", build {}", escape(b)));
    let mut html = format!(
        "<p class=\"note\">llama-bench ran {}{build}</p>{}",
        escape(&models.join(", ")),
        checks(report)
    );
    if let Some(factor) = report.correction {
        html += &format!(
            "<p data-testid=\"bench-correction\" data-value=\"{factor}\">Correction <strong>×{factor:.3}</strong>: \
             this machine runs at {:.0}% of the estimate (the median of measured ÷ predicted over its tests)</p>",
            factor * 100.0
        );
    }
    if !bench.warnings.is_empty() {
        html += "<ul class=\"smi-warnings\">";
        for warning in &bench.warnings {
            html += &format!("<li>{}</li>", escape(warning));
        }
        html += "</ul>";
    }
    html
}

#[component]
pub fn BenchPaste() -> impl IntoView {
    let state = expect_context::<PageState>();
    let text = RwSignal::new(String::new());
    // Read again when the text or the scenario changes; no memo, whose new type would cost more
    // wasm than reading a pasted benchmark again.
    let html = move || {
        text.with(|t| match (!t.trim().is_empty()).then(|| parse(t)) {
            None => String::new(),
            Some(Ok(bench)) => state
                .scenario
                .with(|s| result(&bench, &check_bench(s, &bench.rows))),
            Some(Err(e)) => format!(
                "<p class=\"field-error\" role=\"alert\" data-testid=\"bench-error\">{}</p>",
                escape(&e.to_string())
            ),
        })
    };
    view! {
        <details class="bench-paste">
            <summary>"Compare with your llama-bench run"</summary>
            <label for="bench-paste">"llama-bench's output as it prints it (its table, or -o csv, json or jsonl): each test is set beside this scenario at that test's lengths. llama-bench runs llama.cpp, so choose that runtime to compare like with like."</label>
            <PasteArea id="bench-paste" testid="bench-paste" rows=4 text=text/>
            <div inner_html=html></div>
        </details>
    }
}
