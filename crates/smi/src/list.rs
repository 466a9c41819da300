//! `nvidia-smi -L`: one line per GPU, with indented MIG device lines under MIG-enabled GPUs.
//!
//! It names GPUs in full (the table truncates them) but carries no memory figures.

use crate::snapshot::{Gpu, MigDevice, Snapshot, SourceFormat};
use crate::values;

pub(crate) fn detect(text: &str) -> bool {
    text.lines().any(|l| gpu_line(l.trim()).is_some())
}

/// `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)` → (index, name, uuid).
fn gpu_line(line: &str) -> Option<(u32, Option<String>, Option<String>)> {
    let rest = line.strip_prefix("GPU ")?;
    let (index, rest) = rest.split_once(':')?;
    let index = values::uint(index)?;
    let (name, uuid) = name_and_uuid(rest)?;
    Some((index, values::text(name), uuid))
}

fn name_and_uuid(rest: &str) -> Option<(&str, Option<String>)> {
    let (name, tail) = rest.split_once("(UUID:")?;
    let uuid = tail.split(')').next().and_then(values::text);
    Some((name, uuid))
}

pub(crate) fn parse(text: &str) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::List);
    for line in text.lines().map(str::trim) {
        if let Some((index, name, uuid)) = gpu_line(line) {
            snap.gpus.push(Gpu {
                index: Some(index),
                name,
                uuid,
                ..Gpu::default()
            });
        } else if let Some(rest) = line.strip_prefix("MIG ") {
            // `MIG 1c.3g.71gb  Device  0: (UUID: MIG-…)`
            let Some((head, tail)) = rest.split_once(':') else {
                continue;
            };
            let mut words = head.split_whitespace();
            let profile = words.next().and_then(values::text);
            let mig_index = match (words.next(), words.next()) {
                (Some("Device"), Some(n)) => values::uint(n),
                _ => None,
            };
            let uuid = name_and_uuid(tail).and_then(|(_, uuid)| uuid);
            if let Some(gpu) = snap.gpus.last_mut() {
                gpu.mig_devices.push(MigDevice {
                    mig_index,
                    profile,
                    uuid,
                    ..MigDevice::default()
                });
            }
        }
    }
    snap.warn(
        "`nvidia-smi -L` names GPUs but reports no memory; paste `nvidia-smi` or \
         `nvidia-smi --query-gpu=index,name,memory.total,memory.used,memory.free --format=csv` \
         for memory figures",
    );
    snap
}
