//! The answer: total per GPU, the verdict badge and the headroom, in an aria-live region (on a
//! narrow screen it comes before the form and stays in view); then what the model was read as,
//! the method, and the estimate's notes.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::estimate::{LESSON_ACTIVATION_FACTOR, LESSON_OVERHEAD_BYTES};
use vramfit_engine::units::GB;
use vramfit_engine::wire::Wire;
use vramfit_engine::workload::Method;
use vramfit_engine::{Bytes, Estimate, Units, Verdict};

/// "46.70B parameters, 12.88B active per token · mixture of experts · 32 full-attention layers,
/// 32 MoE": what the estimate read the model as.
fn model_line(e: &Estimate) -> String {
    let l = &e.architecture.layers;
    let mut line = format!("{:.2}B parameters", e.params / 1e9);
    if let Some(active) = e.active_params {
        line += &format!(", {:.2}B active per token", active / 1e9);
    }
    line += &format!(" · {}", e.architecture.family.help());
    let kinds = [
        (l.full_attention, "full-attention"),
        (l.sliding_window, "sliding-window"),
        (l.latent_attention, "latent-attention"),
        (l.recurrent, "recurrent"),
        (l.moe, "MoE"),
    ];
    let named: Vec<String> = kinds
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, kind)| format!("{n} {kind}"))
        .collect();
    format!("{line} · layers: {}", named.join(", "))
}

/// The answer: the total, the verdict and the headroom.
fn answer(e: &Estimate, u: Units) -> impl IntoView {
    let verdict = e.verdict;
    let headroom = Bytes(e.headroom_bytes.unsigned_abs()).display(u);
    let headroom = if e.headroom_bytes >= 0 {
        format!("{headroom} headroom")
    } else {
        format!("{headroom} over budget")
    };
    let word = match verdict {
        Verdict::Fits => "Fits",
        Verdict::Tight => "Tight",
        Verdict::Oom => "Out of memory",
    };
    let on = if e.devices.is_empty() {
        format!("{} ×", e.gpus)
    } else {
        format!("the fullest of {} unlike GPUs,", e.gpus)
    };
    let v = verdict.as_str();
    let budget = format!(
        " {headroom} of {} usable ({} capacity)",
        e.usable_bytes.display(u),
        e.capacity_bytes.display(u)
    );
    view! {
        <p class="total-line">
            <span class="total" data-testid="total" data-bytes=e.total_bytes.0.to_string()>
                {e.total_bytes.display(u)}
            </span>
            {format!(" per GPU on {on} {}", e.gpu_name)}
        </p>
        <p class="verdict-line">
            <span class=format!("verdict verdict-{v}") data-testid="verdict" data-verdict=v>{word}</span>
            {budget}
        </p>
        {devices(e, u)}
    }
}

/// Each of unlike GPUs in a line: its layers, total and verdict against its own memory.
fn devices(e: &Estimate, u: Units) -> Option<impl IntoView> {
    let each: Vec<String> = e
        .devices
        .iter()
        .map(|d| {
            let layers = match (d.blocks, d.output_layer) {
                (Some(b), true) => format!("{b} layers + output, "),
                (Some(b), false) => format!("{b} layers, "),
                (None, _) => String::new(),
            };
            format!(
                "{}: {layers}{} of {} usable, {}",
                d.gpu_name,
                d.total_bytes.display(u),
                d.usable_bytes.display(u),
                d.verdict.as_str()
            )
        })
        .collect();
    (!each.is_empty()).then(|| {
        view! { <p class="devices-line" data-testid="devices">{each.join(" · ")}</p> }
    })
}

/// What the model was read as, the method and the estimate's notes.
fn notes(e: &Estimate) -> impl IntoView {
    let method_note = match e.method {
        Method::Lesson => format!("Lesson method: chapter 62's formula exactly (weights + gradients + optimizer + {LESSON_ACTIVATION_FACTOR}·L·B·S·H·Ba + {} GB).", LESSON_OVERHEAD_BYTES / GB as f64),
        Method::Detailed => match e.scenario.runtime.rules().facts() {
            f if f.serves => format!("Detailed method: what {} allocates, part by part, as its own startup log counts it.", f.name),
            _ => "Detailed method: every tensor PyTorch keeps at the peak, plus CUDA context and allocator slack.".to_string(),
        },
    };
    let notes = e
        .notes
        .iter()
        .map(|n| view! { <p class="note">{n.clone()}</p> })
        .collect_view();
    view! {
        <p class="model-line" data-testid="model-line" data-params=e.params.round().to_string()
            data-active=e.active_params.map(|a| a.round().to_string()).unwrap_or_default()>
            {model_line(e)}
        </p>
        <p class="method-note">{method_note}</p>
        {notes}
    }
}

#[component]
pub fn Summary() -> impl IntoView {
    let state = expect_context::<PageState>();
    let estimate = state.estimate;
    let answer = move || {
        let u = state.units.get();
        estimate.with(|e| e.as_ref().map(|e| answer(e, u)))
    };
    let notes = move || estimate.with(|e| e.as_ref().map(notes));
    // Both stay in the page while the estimate changes, so the live region announces the new answer.
    let shown = Memo::new(move |_| estimate.with(Option::is_some));
    move || {
        shown.get().then(|| {
            view! {
                <div class="summary answer" aria-live="polite" data-testid="answer">{answer}</div>
                <div class="summary-notes">{notes}</div>
            }
        })
    }
}
