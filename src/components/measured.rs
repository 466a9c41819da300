//! "Measured vs predicted": the peak a person observed (a number, nvidia-smi output from during the
//! run, or `vramfit run`'s JSON) against the estimate, and a one-click correction that folds the
//! difference into this machine's CUDA-context overhead, kept in the URL with everything else.

use crate::app::PageState;
use leptos::prelude::*;
use vramfit_engine::calibration::{correction, read_observed_peak};
use vramfit_engine::precision::Method;
use vramfit_engine::units::format_size_exact;

#[component]
pub fn MeasuredPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let text = RwSignal::new(String::new());
    let peak =
        Memo::new(move |_| text.with(|t| (!t.trim().is_empty()).then(|| read_observed_peak(t))));
    let result = Memo::new(move |_| {
        let peak = peak.get()?.ok()?;
        let estimate = state.estimate.get()?;
        let (reserved, context) = state.scenario.with(|s| (s.reserved, s.context));
        Some(correction(&estimate, reserved, context, peak))
    });
    let lesson = move || state.scenario.with(|s| s.method == Method::Lesson);
    view! {
        <section class="panel measured" aria-label="Measured vs predicted">
            <h2>"Measured vs predicted"</h2>
            <label for="measured-peak">"The peak you observed: a size (14.2GB, 13500MiB), nvidia-smi output from during the run, or "
                <code>"vramfit run"</code> "'s measurement JSON"</label>
            <textarea id="measured-peak" data-testid="measured-paste" rows="3" spellcheck="false"
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            {move || peak.get().and_then(Result::err).map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
            {move || result.get().map(|c| {
                let units = state.scenario.with_untracked(|s| s.units);
                let apply = move |_| state.apply(&[("context".to_string(), format_size_exact(c.corrected_context))]);
                view! {
                    <p data-testid="measured-error" data-error-pct=format!("{:.2}", c.error_pct)>
                        "Predicted " {c.predicted.display(units)} ", observed " {c.observed.display(units)} ": "
                        <strong>{format!("{:+.1}%", c.error_pct)}</strong>
                    </p>
                    <button type="button" data-testid="apply-correction" disabled=lesson on:click=apply>
                        {format!("Apply correction: CUDA context {}", c.corrected_context.display(units))}
                    </button>
                    {move || lesson().then(|| view! { <p class="note">"The lesson method's overhead is fixed at 0.5 GB; switch to detailed to calibrate."</p> })}
                }
            })}
            <p class="note">"The correction is the CUDA-context field; reset it there (512MiB is the default)."</p>
        </section>
    }
}
