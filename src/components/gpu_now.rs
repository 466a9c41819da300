//! "Your GPU right now": paste nvidia-smi output (any format the smi parser reads), see the cards,
//! and plan against a card's real total and what is already taken on it (`card::plan_on_card`,
//! the same rule the CLI's `--from-probe` uses).

use crate::components::gpu_card::GpuCard;
use crate::components::paste_area::PasteArea;
use crate::state::PageState;
use leptos::prelude::*;
use std::sync::Arc;
use vramfit_engine::card::{plan_on_card, CardTarget};
use vramfit_engine::smi::{parse, Snapshot};

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
    let plan_on = Callback::new(plan_on);
    let snapshot = Memo::new(move |_| {
        parsed.with(|p| match p {
            Some(Ok(snapshot)) => Some(snapshot.clone()),
            _ => None,
        })
    });
    view! {
        <section class="panel gpu-now" aria-label="Your GPU right now">
            <h2>"Your GPU right now"</h2>
            <label for="smi-paste">"Paste (or drop a file with) the output of " <code>"nvidia-smi"</code> " (table, CSV, -q, -q -x, -L, gpustat --json or vramfit probe --json), " <code>"amd-smi"</code> " (text, --csv or --json), " <code>"rocm-smi"</code> " or a Mac's " <code>"sysctl"</code> " and " <code>"system_profiler"</code></label>
            <PasteArea id="smi-paste" testid="smi-paste" rows=6 text=pasted/>
            {move || parsed.with(|p| match p {
                Some(Err(message)) => Some(message.clone()),
                _ => None,
            }).map(|message| view! { <p class="field-error" role="alert" data-testid="smi-error">{message}</p> })}
            <div>{move || snapshot.get().map(|snapshot| cards(&snapshot, plan_on))}</div>
            <div>
                {move || outcome.with(|notes| (!notes.is_empty()).then(|| view! {
                    <ul class="note" role="status" data-testid="card-plan-notes">
                        {notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}
                    </ul>
                }))}
            </div>
        </section>
    }
}

/// The snapshot's warnings, a card per GPU, and "Use all" when there are several.
fn cards(snapshot: &Snapshot, plan_on: Callback<CardTarget>) -> impl IntoView {
    let warnings = (!snapshot.warnings.is_empty()).then(|| {
        view! {
            <ul class="smi-warnings note" data-testid="smi-warnings">
                {snapshot.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()}
            </ul>
        }
    });
    let cards = snapshot
        .gpus
        .iter()
        .enumerate()
        .map(|(position, gpu)| view! { <GpuCard gpu=gpu.clone() position plan_on/> })
        .collect_view();
    let count = snapshot.gpus.len();
    let use_all = (count > 1).then(|| {
        view! {
            <button type="button" data-testid="use-all-gpus" data-all=""
                on:click=move |_| plan_on.run(CardTarget::AllGpus)>
                {format!("Use all {count} (sharded)")}
            </button>
        }
    });
    view! {
        {warnings}
        <div class="gpu-cards">{cards}</div>
        {use_all}
    }
}
