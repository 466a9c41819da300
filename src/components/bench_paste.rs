//! "Your llama-bench or vllm bench serve run": llama-bench's output, pasted or dropped in any
//! format it prints, or `vllm bench serve`'s result block or JSON (`vramfit_engine::bench`), each
//! test or run set beside the speed model at its lengths (`bench_check::check_bench`, as `vramfit
//! parse-bench` does), with the correction: the median of measured ÷ predicted token rates.

use crate::components::paste_area::PasteArea;
use crate::components::speed_panel::{duration, rate};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::bench::{parse, Bench};
use vramfit_engine::bench_check::{check_bench, BenchCheck, BenchReport, Quantity};

/// A figure with its unit: "1,234 t/s", "148 ms".
fn figure(quantity: Quantity, value: f64) -> String {
    match quantity {
        Quantity::TokensPerS => format!("{} t/s", rate(value)),
        Quantity::TtftS => duration(value),
    }
}

/// One figure measured and predicted, the error, and why it has no prediction or what it leaves
/// out. The exact figures (tokens/s, or seconds for a TTFT) are in data- attributes for the tests.
fn check_row(c: BenchCheck) -> impl IntoView {
    let (quantity, predicted) = (c.quantity, c.predicted);
    let what = match quantity {
        Quantity::TokensPerS => "tokens_per_s",
        Quantity::TtftS => "ttft_s",
    };
    let test = c.test.clone();
    view! {
        <tr data-test=test data-quantity=what data-measured=c.measured.to_string()
            data-predicted=predicted.map_or_else(String::new, |p| p.to_string())>
            <td>
                {c.test}
                {c.note.map(|n| view! { <small class="bench-note">{n}</small> })}
            </td>
            <td class="num">{figure(quantity, c.measured)}</td>
            <td class="num">{predicted.map_or_else(|| "—".to_string(), |p| figure(quantity, p))}</td>
            <td class="num">{c.error_pct.map_or_else(|| "—".to_string(), |e| format!("{e:+.1}%"))}</td>
        </tr>
    }
}

/// What the benchmark ran, the figures, the correction and the reader's warnings.
fn result(bench: Bench, report: BenchReport) -> impl IntoView {
    let tool = bench.tool();
    let models = bench.models();
    let ran = if models.is_empty() {
        String::new()
    } else {
        format!(" ran {}", models.join(", "))
    };
    let build = bench
        .build
        .map_or_else(String::new, |b| format!(", build {b}"));
    let correction = report.correction.map(|factor| {
        view! {
            <p data-testid="bench-correction" data-value=factor.to_string()>
                "Correction "<strong>{format!("×{factor:.3}")}</strong>
                {format!(": this machine runs at {:.0}% of the estimate (the median of measured ÷ predicted over its token rates)", factor * 100.0)}
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
        <p class="note">{tool}{ran}{build}</p>
        <table data-testid="bench-check">
            <thead>
                <tr>
                    <th scope="col">"Test"</th>
                    <th scope="col" class="num">"Measured"</th>
                    <th scope="col" class="num">"Predicted"</th>
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
                let report = state.scenario.with(|s| check_bench(s, bench));
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
            <summary>"Compare with your llama-bench or vllm bench serve run"</summary>
            <label for="bench-paste">"llama-bench's output as it prints it (its table, or -o csv, json or jsonl), or vllm bench serve's result block or --save-result JSON: each test or run is set beside this scenario at its lengths (a vLLM run at its --max-concurrency, its mean prompt and output). llama-bench runs llama.cpp and vllm bench serve vLLM, so choose that runtime to compare like with like."</label>
            <PasteArea id="bench-paste" testid="bench-paste" rows=4 text=text/>
            <div>{shown}</div>
        </details>
    }
}
