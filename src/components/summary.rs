//! The answer: total per GPU, the verdict badge and the headroom, in an aria-live region (on a
//! narrow screen it comes before the form and stays in view); then what the model was read as,
//! the method, and the estimate's notes.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::estimate::{LESSON_ACTIVATION_FACTOR, LESSON_OVERHEAD_BYTES};
use vramfit_engine::units::GB;
use vramfit_engine::wire::Wire;
use vramfit_engine::workload::Method;
use vramfit_engine::{Bytes, Estimate, Verdict};

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

#[component]
pub fn Summary() -> impl IntoView {
    let state = expect_context::<PageState>();
    let estimate = state.estimate;
    let units = move || state.units.get();
    view! {
        {move || estimate.get().map(|e| {
            let u = units();
            let verdict = e.verdict;
            let headroom = if e.headroom_bytes >= 0 {
                format!("{} headroom", Bytes(e.headroom_bytes.unsigned_abs()).display(u))
            } else {
                format!("{} over budget", Bytes(e.headroom_bytes.unsigned_abs()).display(u))
            };
            let method_note = match e.method {
                Method::Lesson => format!("Lesson method: chapter 62's formula exactly (weights + gradients + optimizer + {LESSON_ACTIVATION_FACTOR}·L·B·S·H·Ba + {} GB).", LESSON_OVERHEAD_BYTES / GB as f64),
                Method::Detailed => "Detailed method: every tensor PyTorch keeps at the peak, plus CUDA context and allocator slack.".to_string(),
            };
            view! {
                <div class="summary answer" aria-live="polite" data-testid="answer">
                    <p class="total-line">
                        <span class="total" data-testid="total" data-bytes=e.total_bytes.0.to_string()>{e.total_bytes.display(u)}</span>
                        " per GPU on " {format!("{} × {}", e.gpus, e.gpu_name)}
                    </p>
                    <p class="verdict-line">
                        <span class=format!("verdict verdict-{}", verdict.as_str()) data-testid="verdict" data-verdict=verdict.as_str()>
                            {match verdict { Verdict::Fits => "Fits", Verdict::Tight => "Tight", Verdict::Oom => "Out of memory" }}
                        </span>
                        " " {headroom} " of " {e.usable_bytes.display(u)} " usable (" {e.capacity_bytes.display(u)} " capacity)"
                    </p>
                </div>
                <div class="summary-notes">
                    <p class="model-line" data-testid="model-line" data-params=format!("{}", e.params.round())
                        data-active=e.active_params.map(|a| format!("{}", a.round())).unwrap_or_default()>
                        {model_line(&e)}
                    </p>
                    <p class="method-note">{method_note}</p>
                    {e.notes.iter().map(|n| view! { <p class="note">{n.clone()}</p> }).collect_view()}
                </div>
            }
        })}
    }
}
