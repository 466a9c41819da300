//! "Your GPU right now": paste nvidia-smi output (any format the smi parser reads), see the cards,
//! and plan against a card's real total and what is already taken on it (`card::plan_on_card`,
//! the same rule the CLI's `--from-probe` uses).

use crate::components::gpu_card::gpu_card;
use crate::components::paste_area::PasteArea;
use crate::html::{escape, target_attribute};
use crate::state::PageState;
use leptos::prelude::*;
use std::sync::Arc;
use vramfit_engine::card::{plan_on_card, CardTarget};
use vramfit_engine::smi::{parse, Snapshot};
use vramfit_engine::Units;

#[component]
pub fn GpuNow() -> impl IntoView {
    let state = expect_context::<PageState>();
    let pasted = RwSignal::new(String::new());
    let parsed = Memo::new(move |_| {
        pasted.with(|text| {
            (!text.trim().is_empty()).then(|| parse(text).map(Arc::new).map_err(|e| e.to_string()))
        })
    });
    // What the last "Use" click said: the plan's notes, or why nothing could be planned.
    let outcome = RwSignal::new(Vec::<String>::new());
    let plan_on = move |target: CardTarget| {
        let result = parsed.with_untracked(|p| match p {
            Some(Ok(snapshot)) => Some(
                state
                    .scenario
                    .with_untracked(|s| plan_on_card(snapshot, target, s)),
            ),
            _ => None,
        });
        match result {
            Some(Ok(plan)) => {
                let changes: Vec<(String, String)> = plan
                    .changes
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                state.apply(&changes);
                outcome.set(plan.notes);
            }
            Some(Err(message)) => outcome.set(vec![message.to_string()]),
            None => {}
        }
    };
    let on_click = move |ev: web_sys::MouseEvent| {
        let number = |attribute| target_attribute(&ev, attribute).and_then(|n| n.parse().ok());
        if target_attribute(&ev, "data-all").is_some() {
            plan_on(CardTarget::AllGpus);
        } else if let Some(gpu) = number("data-gpu") {
            plan_on(match number("data-mig") {
                Some(mig) => CardTarget::Mig { gpu, mig },
                None => CardTarget::Gpu(gpu),
            });
        }
    };
    let cards = move || {
        let units = state.units.get();
        parsed.with(|p| match p {
            Some(Ok(snapshot)) => cards(snapshot, units),
            _ => String::new(),
        })
    };
    view! {
        <section class="panel gpu-now" aria-label="Your GPU right now">
            <h2>"Your GPU right now"</h2>
            <label for="smi-paste">"Paste (or drop a file with) the output of " <code>"nvidia-smi"</code> " (table, CSV, -q, -q -x, -L, gpustat --json or vramfit probe --json)"</label>
            <PasteArea id="smi-paste" testid="smi-paste" rows=6 text=pasted/>
            {move || parsed.with(|p| match p {
                Some(Err(message)) => Some(message.clone()),
                _ => None,
            }).map(|message| view! { <p class="field-error" role="alert" data-testid="smi-error">{message}</p> })}
            <div inner_html=cards on:click=on_click></div>
            <div inner_html=move || outcome.with(|notes| notes_list(notes))></div>
        </section>
    }
}

/// The snapshot's warnings, a card per GPU, and "Use all" when there are several.
fn cards(snapshot: &Snapshot, units: Units) -> String {
    let mut html = String::new();
    if !snapshot.warnings.is_empty() {
        html += "<ul class=\"smi-warnings note\" data-testid=\"smi-warnings\">";
        for w in &snapshot.warnings {
            html += &format!("<li>{}</li>", escape(w));
        }
        html += "</ul>";
    }
    html += "<div class=\"gpu-cards\">";
    for (position, gpu) in snapshot.gpus.iter().enumerate() {
        html += &gpu_card(gpu, position, units);
    }
    html += "</div>";
    let count = snapshot.gpus.len();
    if count > 1 {
        html += &format!(
            "<button type=\"button\" data-testid=\"use-all-gpus\" data-all=\"\">Use all {count} (sharded)</button>"
        );
    }
    html
}

/// What the last "Use" click said.
fn notes_list(notes: &[String]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let items: String = notes
        .iter()
        .map(|n| format!("<li>{}</li>", escape(n)))
        .collect();
    format!("<ul class=\"note\" role=\"status\" data-testid=\"card-plan-notes\">{items}</ul>")
}
