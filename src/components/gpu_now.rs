//! "Your GPU right now": paste nvidia-smi output (any format the smi parser reads), see the cards,
//! and plan against that card's real total and what is already in use.

use crate::app::PageState;
use crate::components::paste_area::PasteArea;
use leptos::prelude::*;
use vramfit_engine::smi::{parse, Snapshot};
use vramfit_engine::units::format_size_exact;
use vramfit_engine::Bytes;

#[component]
pub fn GpuNow() -> impl IntoView {
    let state = expect_context::<PageState>();
    let pasted = RwSignal::new(String::new());
    let parsed = Memo::new(move |_| {
        pasted
            .with(|text| (!text.trim().is_empty()).then(|| parse(text).map_err(|e| e.to_string())))
    });
    let use_gpus = move |snapshot: &Snapshot, index: usize, count: usize| {
        let Some(gpu) = snapshot.gpus.get(index) else {
            return;
        };
        let Some(total) = gpu.memory.total_bytes else {
            return;
        };
        let used = gpu.memory.used_bytes.unwrap_or(0);
        let mut changes = vec![
            ("vram".to_string(), format_size_exact(Bytes(total))),
            ("reserved".to_string(), format_size_exact(Bytes(used))),
        ];
        if count > 1 {
            changes.push(("gpus".to_string(), count.to_string()));
        }
        state.apply(&changes);
    };
    view! {
        <section class="panel gpu-now" aria-label="Your GPU right now">
            <h2>"Your GPU right now"</h2>
            <label for="smi-paste">"Paste (or drop a file with) the output of " <code>"nvidia-smi"</code> " (table, CSV, -q, -q -x, -L, gpustat --json or vramfit probe --json)"</label>
            <PasteArea id="smi-paste" testid="smi-paste" rows=6 text=pasted/>
            {move || parsed.get().map(|result| match result {
                Err(message) => view! { <p class="field-error" role="alert" data-testid="smi-error">{message}</p> }.into_any(),
                Ok(snapshot) => {
                    let units = state.scenario.with_untracked(|s| s.units);
                    let shown = |b: Option<u64>| b.map(|v| Bytes(v).display(units)).unwrap_or_else(|| "n/a".to_string());
                    let count = snapshot.gpus.len();
                    view! {
                        <div class="gpu-cards">
                            {snapshot.gpus.iter().enumerate().map(|(i, gpu)| {
                                let snap = snapshot.clone();
                                view! {
                                    <div class="gpu-card" data-testid="gpu-card" data-total=gpu.memory.total_bytes.unwrap_or(0).to_string()>
                                        <h3>{format!("GPU {} · {}", gpu.index.unwrap_or(i as u32), gpu.name.clone().unwrap_or_else(|| "unnamed".to_string()))}</h3>
                                        <p>"total " {shown(gpu.memory.total_bytes)} " · used " {shown(gpu.memory.used_bytes)} " · free " {shown(gpu.memory.free_or_derived())}</p>
                                        <p>{format!("{} processes", gpu.processes.len())}</p>
                                        <button type="button" data-testid="use-gpu" on:click=move |_| use_gpus(&snap, i, 1)>"Use this GPU"</button>
                                    </div>
                                }
                            }).collect_view()}
                            {(count > 1).then(|| {
                                let snap = snapshot.clone();
                                view! { <button type="button" data-testid="use-all-gpus" on:click=move |_| use_gpus(&snap, 0, count)>{format!("Use all {count} (sharded)")}</button> }
                            })}
                        </div>
                    }.into_any()
                }
            })}
        </section>
    }
}
