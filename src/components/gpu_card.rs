//! One detected GPU: its memory, its processes and MIG devices, and the buttons that plan on it.
//! Written as HTML; the buttons name what they plan on (`data-gpu`, `data-mig`) for the one click
//! handler of "Your GPU right now".

use crate::html::escape;
use vramfit_engine::smi::{Gpu, Memory};
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

/// The card of the GPU at `position` in the snapshot.
pub fn gpu_card(gpu: &Gpu, position: usize, units: Units) -> String {
    let title = format!(
        "GPU {} · {}",
        gpu.index
            .map_or_else(|| position.to_string(), |i| i.to_string()),
        gpu.name.as_deref().unwrap_or("unnamed")
    );
    let memory = gpu.memory;
    let total = memory
        .total_bytes
        .map_or_else(String::new, |t| format!(" data-total=\"{t}\""));
    let processes = match gpu.processes.len() {
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    let mut html = format!(
        "<div class=\"gpu-card\" data-testid=\"gpu-card\"{total}><h3>{}</h3><p>{}</p><p>{processes}</p><ul class=\"gpu-processes\">",
        escape(&title),
        memory_line(&memory, units)
    );
    for p in gpu.processes.iter().take(SHOWN_PROCESSES) {
        let pid = p.pid.map_or_else(|| "?".to_string(), |pid| pid.to_string());
        html += &format!(
            "<li data-testid=\"gpu-process\">{pid} {} · {}</li>",
            escape(p.name.as_deref().unwrap_or("unnamed")),
            shown(p.used_bytes, units)
        );
    }
    let hidden = gpu.processes.len().saturating_sub(SHOWN_PROCESSES);
    if hidden > 0 {
        html += &format!("<li>… and {hidden} more</li>");
    }
    html += "</ul><ul class=\"mig-devices\">";
    for (mig, device) in gpu.mig_devices.iter().enumerate() {
        let label = device
            .profile
            .clone()
            .or_else(|| device.gpu_instance.map(|gi| format!("GPU instance {gi}")))
            .unwrap_or_else(|| format!("MIG device {mig}"));
        let button = if device.memory.total_bytes.is_some() {
            format!("<button type=\"button\" data-testid=\"use-mig\" data-gpu=\"{position}\" data-mig=\"{mig}\">Use this MIG device</button>")
        } else {
            String::new()
        };
        html += &format!(
            "<li data-testid=\"mig-device\">{}: {}{button}</li>",
            escape(&label),
            memory_line(&device.memory, units)
        );
    }
    let unplannable = if memory.total_bytes.is_some() {
        ""
    } else {
        " disabled title=\"this output does not give the card's total memory\""
    };
    html + &format!(
        "</ul><button type=\"button\" data-testid=\"use-gpu\" data-gpu=\"{position}\"{unplannable}>Use this GPU</button></div>"
    )
}
