//! The solver panel: largest batch and sequence, accumulation for a target effective batch, the
//! smallest GPU, and the fix-it ladder whose steps are buttons that apply them. A serving
//! runtime sizes its cache at start instead of growing it per sequence, so its questions are the
//! serving panel's, and this panel steps aside.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::solver::{solve, LadderStep, Solution};
use vramfit_engine::Units;

/// The solver's answers, each figure read from the solution in the page's units.
#[component]
fn Answers(solution: Memo<Option<Solution>>) -> impl IntoView {
    let units = expect_context::<PageState>().units;
    let show = move |f: fn(&Solution, Units) -> String| {
        move || solution.with(|s| s.as_ref().map(|s| f(s, units.get())))
    };
    fn none(v: Option<u32>) -> String {
        v.map_or_else(|| "does not fit".to_string(), |n| n.to_string())
    }
    view! {
        <dl class="solution" data-testid="solution">
            <dt>"Largest micro-batch"</dt>
            <dd data-testid="max-batch">
                {show(|s, _| none(s.max_batch))}
                <small>
                    " = (usable "{show(|s, u| s.usable_bytes.display(u))}
                    " − fixed "{show(|s, u| s.fixed_bytes.display(u))}
                    ") ÷ "{show(|s, u| s.per_sample_bytes.display(u))}" per sample"
                </small>
            </dd>
            <dt>"Longest sequence"</dt>
            <dd data-testid="max-seq">{show(|s, _| none(s.max_seq))}</dd>
            <dt>"Effective batch"</dt>
            <dd>
                {show(|s, _| match (s.micro_batch, s.grad_accum) {
                    (Some(m), Some(a)) => format!("micro-batch {m} × accumulation {a}"),
                    _ => "—".to_string(),
                })}
            </dd>
            <dt>"Smallest GPU that fits"</dt>
            <dd data-testid="smallest-gpu">
                {show(|s, _| s.smallest_gpu.clone().unwrap_or_else(|| "none in the catalogue".to_string()))}
            </dd>
        </dl>
    }
}

/// The fix-it ladder: each step a button that applies its changes, with the total it reaches.
#[component]
fn Ladder(solution: Memo<Option<Solution>>) -> impl IntoView {
    let state = expect_context::<PageState>();
    let steps = Memo::new(move |_| {
        solution.with(|s| s.as_ref().map(|s| s.ladder.clone()).unwrap_or_default())
    });
    let step = move |(i, step): (usize, LadderStep)| {
        let verdict = step.verdict.as_str();
        let total = step.total_bytes;
        let changes = step.changes;
        view! {
            <li>
                <button type="button" data-step=i.to_string()
                    on:click=move |_| state.apply(&changes)>{step.action}</button>
                " → "{move || total.display(state.units.get())}" "
                <span class=format!("verdict verdict-{verdict}")>{verdict}</span>
            </li>
        }
    };
    move || {
        (!steps.with(Vec::is_empty)).then(|| {
            view! {
                <h3>"Fix-it ladder"</h3>
                <ol class="ladder" data-testid="ladder">
                    <For each=move || steps.get().into_iter().enumerate()
                        key=|(i, s)| (*i, s.action.clone(), s.total_bytes, s.verdict.as_str())
                        children=step/>
                </ol>
            }
        })
    }
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
    let solved = Memo::new(move |_| solution.with(Option::is_some));
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
            <div>
                {move || solved.get().then(|| view! { <Answers solution/><Ladder solution/> })}
            </div>
        </section>
    })
    }
}
