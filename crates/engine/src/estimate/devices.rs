//! Unlike GPUs (`devices`): a plan for each against its own memory, and the worst of them as the
//! estimate's summary.
//!
//! llama.cpp splits the offloaded layers between them (`tensor-split`, else by free memory), so
//! each device's buffers are its own layers' ([`super::serving`]'s `device_slots`). Every other
//! run puts the same share on each GPU, and the smallest decides: vLLM cuts every worker's KV
//! blocks to the fewest any worker can hold (`get_kv_cache_configs`,
//! vllm/v1/core/kv_cache_utils.py: "Change the num_blocks of each rank to the smallest among all
//! ranks"), so the run is planned on the smallest GPU and the others' extra memory stays unused.
//! SGLang budgets every rank by the group's smallest free memory, and refuses a group whose free
//! memory differs by more than a tenth (each runtime's `unlike_gpus` cites its source).

use super::{build_stack, verdict, Budget, ComponentId, Verdict};
use crate::scenario::{FieldError, Resolved, Scenario};
use crate::units::Bytes;
use crate::workload::Mode;
use serde::{Deserialize, Serialize};

/// One GPU's plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DevicePlan {
    /// Its place in `devices` (device order).
    pub device: u32,
    pub gpu: String,
    pub gpu_name: String,
    /// llama.cpp's blocks on it, and whether the output layer is; `None` elsewhere.
    pub blocks: Option<u32>,
    pub output_layer: bool,
    pub weights_bytes: Bytes,
    pub kv_cache_bytes: Bytes,
    pub compute_bytes: Bytes,
    pub total_bytes: Bytes,
    pub capacity_bytes: Bytes,
    pub usable_bytes: Bytes,
    pub headroom_bytes: i64,
    pub verdict: Verdict,
}

/// What the estimate is built on: the worst device's resolution, every device's plan, and a note
/// on how unlike GPUs were planned.
pub(super) struct Planned {
    pub resolved: Resolved,
    pub devices: Vec<DevicePlan>,
    pub note: Option<String>,
}

/// The plan of `s`: for one kind of GPU, its resolution alone.
pub(super) fn plan(s: &Scenario) -> Result<Planned, Vec<FieldError>> {
    if s.devices.len() < 2 {
        return Ok(Planned {
            resolved: s.resolve()?,
            devices: Vec::new(),
            note: None,
        });
    }
    let resolved: Vec<Resolved> = (0..s.devices.len())
        .map(|i| s.resolve_device(i))
        .collect::<Result<_, _>>()?;
    let splits_layers = s.runtime.rules().facts().places_layers && s.mode == Mode::Inference;
    let smallest = (0..resolved.len())
        .min_by_key(|&i| resolved[i].capacity)
        .unwrap_or(0);
    // Alike shares are sized once, on the smallest GPU.
    let shared = (!splits_layers).then(|| held(s, &resolved[smallest], false));
    let devices: Vec<DevicePlan> = resolved
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let own;
            let held = match &shared {
                Some(held) => held,
                None => {
                    own = held(s, r, true);
                    &own
                }
            };
            device_plan(s, i, held, r)
        })
        .collect();
    let worst = (0..devices.len())
        .max_by_key(|&i| (severity(devices[i].verdict), -devices[i].headroom_bytes))
        .unwrap_or(0);
    let largest = resolved
        .iter()
        .map(|r| r.capacity)
        .max()
        .unwrap_or_default();
    let note = note(s, &resolved[smallest], largest, splits_layers);
    let worst = if splits_layers { worst } else { smallest };
    let resolved = resolved.into_iter().nth(worst).ok_or_else(Vec::new)?;
    Ok(Planned {
        resolved,
        devices,
        note: Some(note),
    })
}

/// What one GPU holds: its stack without text, a serving runtime's pool, and llama.cpp's blocks
/// and output layer on it.
struct Held {
    stack: super::Stack,
    serving: Option<super::Serving>,
    slots: Option<(u32, bool)>,
}

fn held(s: &Scenario, r: &Resolved, splits_layers: bool) -> Held {
    let mut notes = Vec::new();
    let (stack, _, serving) = build_stack(s, r, super::Text::None, &mut notes);
    Held {
        stack,
        serving,
        slots: splits_layers.then(|| super::serving::device_blocks(s, r)),
    }
}

/// Device `i`'s plan: what it holds, judged against its own budget.
fn device_plan(s: &Scenario, i: usize, held: &Held, own: &Resolved) -> DevicePlan {
    let total = held.stack.total();
    let budget = Budget::new(s, own);
    let bytes = |ids: &[ComponentId]| -> Bytes {
        held.stack
            .components
            .iter()
            .filter(|c| ids.contains(&c.id))
            .map(|c| c.bytes)
            .sum()
    };
    let slots = held.slots;
    DevicePlan {
        device: u32::try_from(i).unwrap_or(u32::MAX),
        gpu: s.devices.get(i).cloned().unwrap_or_default(),
        gpu_name: own.gpu_name(),
        blocks: slots.map(|(blocks, _)| blocks),
        output_layer: slots.is_some_and(|(_, output)| output),
        weights_bytes: bytes(&[ComponentId::Weights]),
        kv_cache_bytes: bytes(&[
            ComponentId::KvCache,
            ComponentId::KvCacheSliding,
            ComponentId::RecurrentState,
        ]),
        compute_bytes: bytes(&[ComponentId::ComputeBuffer]),
        total_bytes: total,
        capacity_bytes: budget.capacity,
        usable_bytes: budget.usable,
        headroom_bytes: budget.headroom(total),
        verdict: verdict(&budget, total, held.serving.as_ref()),
    }
}

fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Fits => 0,
        Verdict::Tight => 1,
        Verdict::Oom => 2,
    }
}

/// How unlike GPUs were planned, naming the GPU that decides where one does.
fn note(s: &Scenario, smallest: &Resolved, largest: Bytes, splits_layers: bool) -> String {
    let name = smallest.gpu_name();
    let capacity = smallest.capacity.display(s.units);
    if splits_layers {
        let by = match &s.tensor_split {
            Some(_) => "tensor-split",
            None => "each GPU's free memory (llama.cpp's default)",
        };
        return format!("Unlike GPUs: llama.cpp splits the offloaded layers by {by}; each GPU is planned with its own layers, and the summary is the fullest.");
    }
    let rules = s.runtime.rules();
    if let Some(rule) = rules.unlike_gpus(smallest.capacity, largest) {
        return format!(
            "Unlike GPUs: {} sizes every rank by the smallest GPU, {name} ({capacity}): {rule}",
            rules.facts().name
        );
    }
    if rules.facts().pools_kv() {
        return format!("Unlike GPUs: {} is planned as vLLM sizes its ranks, on the smallest GPU, {name} ({capacity}); {}'s own rule for unlike GPUs was not read, so keep the margin.", rules.facts().name, rules.facts().name);
    }
    format!("Unlike GPUs: every GPU holds the same share of this run, so the smallest, {name} ({capacity}), decides.")
}
