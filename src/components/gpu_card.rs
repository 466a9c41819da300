//! One detected GPU: its memory, its processes and MIG devices, and the buttons that plan on it.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::card::CardTarget;
use vramfit_engine::smi::{Gpu, Memory, MigDevice};
use vramfit_engine::{Bytes, Units};

/// The most process rows a card lists before summarising the rest (an 8-GPU box can list hundreds).
const SHOWN_PROCESSES: usize = 8;

fn shown(bytes: Option<u64>, units: Units) -> String {
    bytes
        .map(|v| Bytes(v).display(units))
        .unwrap_or_else(|| "n/a".to_string())
}

fn memory_line(memory: &Memory, units: Units) -> String {
    format!(
        "total {} · used {} · free {}",
        shown(memory.total_bytes, units),
        shown(memory.used_bytes, units),
        shown(memory.free_or_derived(), units)
    )
}

/// The card of the GPU at `position` in the snapshot; its buttons ask `plan_on` to plan on it.
#[component]
pub fn GpuCard(gpu: Gpu, position: usize, plan_on: Callback<CardTarget>) -> impl IntoView {
    let units = expect_context::<PageState>().units;
    let title = format!(
        "GPU {} · {}",
        gpu.index
            .map_or_else(|| position.to_string(), |i| i.to_string()),
        gpu.name.as_deref().unwrap_or("unnamed")
    );
    let memory = gpu.memory;
    let processes = match gpu.processes.len() {
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    let hidden = gpu.processes.len().saturating_sub(SHOWN_PROCESSES);
    let process_rows = gpu
        .processes
        .into_iter()
        .take(SHOWN_PROCESSES)
        .map(|p| {
            let pid = p.pid.map_or_else(|| "?".to_string(), |pid| pid.to_string());
            let name = p.name.unwrap_or_else(|| "unnamed".to_string());
            let used = p.used_bytes;
            view! {
                <li data-testid="gpu-process">
                    {pid}" "{name}" · "{move || shown(used, units.get())}
                </li>
            }
        })
        .collect_view();
    let mig_rows = gpu
        .mig_devices
        .into_iter()
        .enumerate()
        .map(|(mig, device)| mig_row(position, mig, device, plan_on))
        .collect_view();
    // Without the card's total there is nothing to plan against.
    let unplannable = memory.total_bytes.is_none();
    view! {
        <div class="gpu-card" data-testid="gpu-card" data-total=memory.total_bytes.map(|t| t.to_string())>
            <h3>{title}</h3>
            <p>{move || memory_line(&memory, units.get())}</p>
            <p>{processes}</p>
            <ul class="gpu-processes">
                {process_rows}
                {(hidden > 0).then(|| view! { <li>"… and "{hidden}" more"</li> })}
            </ul>
            <ul class="mig-devices">{mig_rows}</ul>
            <button type="button" data-testid="use-gpu" data-gpu=position.to_string()
                disabled=unplannable
                title=unplannable.then_some("this output does not give the card's total memory")
                on:click=move |_| plan_on.run(CardTarget::Gpu(position))>"Use this GPU"</button>
        </div>
    }
}

/// A MIG device of the GPU at `gpu`, with its button where its memory is known.
fn mig_row(
    gpu: usize,
    mig: usize,
    device: MigDevice,
    plan_on: Callback<CardTarget>,
) -> impl IntoView {
    let units = expect_context::<PageState>().units;
    let label = device
        .profile
        .clone()
        .or_else(|| device.gpu_instance.map(|gi| format!("GPU instance {gi}")))
        .unwrap_or_else(|| format!("MIG device {mig}"));
    let memory = device.memory;
    let button = memory.total_bytes.is_some().then(|| {
        view! {
            <button type="button" data-testid="use-mig" data-gpu=gpu.to_string() data-mig=mig.to_string()
                on:click=move |_| plan_on.run(CardTarget::Mig { gpu, mig })>"Use this MIG device"</button>
        }
    });
    view! {
        <li data-testid="mig-device">{label}": "{move || memory_line(&memory, units.get())}{button}</li>
    }
}
