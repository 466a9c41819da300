//! "Measured vs predicted": the peak a person observed (a number, nvidia-smi output from during the
//! run, or `vramfit run`'s JSON) against the estimate, and a one-click correction that folds the
//! difference into this machine's CUDA-context overhead, kept in the URL with everything else.

use crate::browser;
use crate::components::paste_area::PasteArea;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::calibration::{correction, read_observed_peak, Correction};
use vramfit_engine::estimate::LESSON_OVERHEAD_BYTES;
use vramfit_engine::scenario::DEFAULT_CUDA_CONTEXT;
use vramfit_engine::units::format_size_exact;
use vramfit_engine::units::GB;
use vramfit_engine::workload::Method;
use vramfit_engine::Units;

/// Beyond this error the measurement is more likely of another scenario than a machine's overhead.
const FAR_OFF_PCT: f64 = 50.0;

/// The error of the estimate against the observed peak, and a caution when it is far off.
fn reading(c: &Correction, source: String, units: Units) -> impl IntoView {
    let far_off = (c.error_pct.abs() > FAR_OFF_PCT).then(|| view! {
        <p class="note" data-testid="measured-far-off">"That is far from the estimate: check that the measurement is of this scenario (model, method, batch, sequence, GPUs) before applying it."</p>
    });
    view! {
        <p data-testid="measured-error" data-error-pct=format!("{:.2}", c.error_pct)
            data-observed=c.observed.0.to_string()>
            "Predicted "{c.predicted.display(units)}", observed "{c.observed.display(units)}" ("{source}"): "
            <strong>{format!("{:+.1}%", c.error_pct)}</strong>
        </p>
        {far_off}
    }
}

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
        Some((
            correction(&estimate, reserved, context, peak.clone()),
            peak.source,
        ))
    });
    let lesson = move || state.scenario.with(|s| s.method == Method::Lesson);
    view! {
        <section class="panel measured" aria-label="Measured vs predicted">
            <h2>"Measured vs predicted"</h2>
            <label for="measured-peak">"The peak you observed: a size (14.2GB, 13500MiB), nvidia-smi output from during the run, or "
                <code>"vramfit run"</code> "'s measurement JSON"</label>
            <PasteArea id="measured-peak" testid="measured-paste" rows=3 text=text/>
            {move || peak.get().and_then(Result::err).map(|e| view! { <p class="field-error" role="alert">{e.to_string()}</p> })}
            {move || result.get().map(|(c, source)| {
                let units = state.units.get();
                let apply = move |_| {
                    let context = format_size_exact(c.corrected_context);
                    browser::save_correction(Some(&context));
                    state.apply(&[("context".to_string(), context)]);
                };
                view! {
                    <div>{reading(&c, source, units)}</div>
                    <button type="button" data-testid="apply-correction" disabled=lesson on:click=apply>
                        {format!("Apply correction: CUDA context {}", c.corrected_context.display(units))}
                    </button>
                    {move || lesson().then(|| view! { <p class="note">{format!("The lesson method's overhead is fixed at {} GB; switch to detailed to calibrate.", LESSON_OVERHEAD_BYTES / GB as f64)}</p> })}
                }
            })}
            <p class="note">
                "Current correction: CUDA context " {move || format_size_exact(state.scenario.with(|s| s.context))} " "
                <button type="button" data-testid="reset-correction" on:click=move |_| {
                    browser::save_correction(None);
                    state.apply(&[("context".to_string(), format_size_exact(DEFAULT_CUDA_CONTEXT))]);
                }>"Reset"</button>
                " (saved in this browser when not embedded)"
            </p>
        </section>
    }
}
