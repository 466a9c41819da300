//! "Your llama-bench run": llama-bench's output, pasted or dropped in any format it prints
//! (`vramfit_engine::bench`), each test set beside the speed model at that test's lengths
//! (`bench_check::check_bench`, as `vramfit parse-bench` does), with the correction: the median of
//! measured ÷ predicted.

use crate::components::paste_area::PasteArea;
use crate::components::speed_panel::rate;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::bench::{parse, Bench};
use vramfit_engine::bench_check::{check_bench, BenchCheck, BenchReport};

/// One test measured and predicted, the error, and why it has no prediction. The exact figures
/// are in data- attributes for the tests.
fn check_row(c: BenchCheck) -> impl IntoView {
    let predicted = c.predicted_tokens_per_s;
    let test = c.test.clone();
    view! {
        <tr data-test=test data-measured=c.measured_tokens_per_s.to_string()
            data-predicted=predicted.map_or_else(String::new, |p| p.to_string())>
            <td>
                {c.test}
                {c.note.map(|n| view! { <small class="bench-note">{n}</small> })}
            </td>
            <td class="num">{rate(c.measured_tokens_per_s)}</td>
            <td class="num">{predicted.map_or_else(|| "—".to_string(), rate)}</td>
            <td class="num">{c.error_pct.map_or_else(|| "—".to_string(), |e| format!("{e:+.1}%"))}</td>
        </tr>
    }
}

/// What llama-bench ran, the tests, the correction and the reader's warnings.
fn result(bench: Bench, report: BenchReport) -> impl IntoView {
    let mut models: Vec<&str> = bench.rows.iter().map(|r| r.model.as_str()).collect();
    models.dedup();
    let ran = models.join(", ");
    let build = bench
        .build
        .map_or_else(String::new, |b| format!(", build {b}"));
    let correction = report.correction.map(|factor| {
        view! {
            <p data-testid="bench-correction" data-value=factor.to_string()>
                "Correction "<strong>{format!("×{factor:.3}")}</strong>
                {format!(": this machine runs at {:.0}% of the estimate (the median of measured ÷ predicted over its tests)", factor * 100.0)}
            </p>
        }
    });
    let warnings = (!bench.warnings.is_empty()).then(|| {
        view! {
            <ul class="smi-warnings">
                {bench.warnings.into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}
            </ul>
        }
    });
    view! {
        <p class="note">"llama-bench ran "{ran}{build}</p>
        <table data-testid="bench-check">
            <thead>
                <tr>
                    <th scope="col">"Test"</th>
                    <th scope="col" class="num">"Measured t/s"</th>
                    <th scope="col" class="num">"Predicted t/s"</th>
                    <th scope="col" class="num">"Error"</th>
                </tr>
            </thead>
            <tbody>{report.checks.into_iter().map(check_row).collect_view()}</tbody>
        </table>
        {correction}
        {warnings}
    }
}

#[component]
pub fn BenchPaste() -> impl IntoView {
    let state = expect_context::<PageState>();
    let text = RwSignal::new(String::new());
    let bench = Memo::new(move |_| text.with(|t| (!t.trim().is_empty()).then(|| parse(t))));
    // Set beside the scenario again when either changes.
    let shown = move || {
        bench.with(|b| match b.as_ref()? {
            Ok(bench) => {
                let report = state.scenario.with(|s| check_bench(s, &bench.rows));
                Some(result(bench.clone(), report).into_any())
            }
            Err(e) => Some(
                view! { <p class="field-error" role="alert" data-testid="bench-error">{e.to_string()}</p> }
                    .into_any(),
            ),
        })
    };
    view! {
        <details class="bench-paste">
            <summary>"Compare with your llama-bench run"</summary>
            <label for="bench-paste">"llama-bench's output as it prints it (its table, or -o csv, json or jsonl): each test is set beside this scenario at that test's lengths. llama-bench runs llama.cpp, so choose that runtime to compare like with like."</label>
            <PasteArea id="bench-paste" testid="bench-paste" rows=4 text=text/>
            <div>{shown}</div>
        </details>
    }
}
