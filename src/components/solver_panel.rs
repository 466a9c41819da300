//! The solver panel: largest batch and sequence, accumulation for a target effective batch, the
//! smallest GPU, and the fix-it ladder whose steps are buttons that apply them. A serving
//! runtime (vLLM, SGLang) fills a preallocated pool instead of growing per sequence, so its
//! questions are the serving panel's, and this panel steps aside.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::solver::solve;

#[component]
pub fn SolverPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let target = RwSignal::new(16u32);
    let pooled = Memo::new(move |_| state.serving_runtime());
    let solution = Memo::new(move |_| {
        let t = target.get();
        state.scenario.with(|s| solve(s, Some(t)).ok())
    });
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
            {move || solution.get().map(|sol| {
                let units = state.units.get();
                let none = |v: Option<u32>| v.map(|n| n.to_string()).unwrap_or_else(|| "does not fit".to_string());
                view! {
                    <dl class="solution" data-testid="solution">
                        <dt>"Largest micro-batch"</dt><dd data-testid="max-batch">{none(sol.max_batch)}
                            <small>" = (usable " {sol.usable_bytes.display(units)} " − fixed " {sol.fixed_bytes.display(units)} ") ÷ " {sol.per_sample_bytes.display(units)} " per sample"</small></dd>
                        <dt>"Longest sequence"</dt><dd data-testid="max-seq">{none(sol.max_seq)}</dd>
                        <dt>"Effective batch"</dt><dd>{match (sol.micro_batch, sol.grad_accum) {
                            (Some(m), Some(a)) => format!("micro-batch {m} × accumulation {a}"),
                            _ => "—".to_string(),
                        }}</dd>
                        <dt>"Smallest GPU that fits"</dt><dd data-testid="smallest-gpu">{sol.smallest_gpu.clone().unwrap_or_else(|| "none in the catalogue".to_string())}</dd>
                    </dl>
                    {(!sol.ladder.is_empty()).then(|| view! {
                        <h3>"Fix-it ladder"</h3>
                        <ol class="ladder" data-testid="ladder">
                            {sol.ladder.into_iter().map(|step| {
                                let changes = step.changes.clone();
                                view! {
                                    <li>
                                        <button type="button" on:click=move |_| state.apply(&changes)>{step.action}</button>
                                        " → " {step.total_bytes.display(units)} " "
                                        <span class=format!("verdict verdict-{}", step.verdict.as_str())>{step.verdict.as_str()}</span>
                                    </li>
                                }
                            }).collect_view()}
                        </ol>
                    })}
                }
            })}
        </section>
    })
    }
}
