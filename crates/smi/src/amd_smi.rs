//! `amd-smi static --json` and `amd-smi metric --json`: AMD's GPU tool, in the list shape of
//! ROCm 6 (`[{"gpu": 0, …}]`) or the `{"gpu_data": […]}` shape of later releases. Its text, CSV
//! and default-table views (`amd_smi_text`) are rebuilt into this shape and read here too.
//!
//! `static` names each GPU and gives its VRAM size; `metric` gives total, used and free VRAM but
//! no name; `list` gives the bus ID. Any alone is read; `vramfit probe` runs `static` and `metric`
//! and reads them as one ([`parse_documents`]). Sizes are `{"value": N, "unit": "MB"}`, where
//! amd-smi's "MB" is bytes divided by 1024² and rounded down: MiB, each figure up to 1 MiB under
//! the driver's.

use serde_json::Value;

use crate::json::{float, string, uint};
use crate::snapshot::{Gpu, Snapshot, SourceFormat};
use crate::values::{self, MIB};
use crate::ParseError;

/// The keys amd-smi prints under `mem_usage` (`amdsmi_cli/amdsmi_commands.py`, ROCm/amdsmi
/// `0ceca28f`, lines 2027–2035) and under `static`'s `vram` (lines 743–746, and `max_bandwidth`
/// from ROCm 7). Any other key there is memory vramfit does not know, and a warning names it.
const MEM_USAGE_KEYS: [&str; 9] = [
    "total_vram",
    "used_vram",
    "free_vram",
    "total_visible_vram",
    "used_visible_vram",
    "free_visible_vram",
    "total_gtt",
    "used_gtt",
    "free_gtt",
];
const VRAM_KEYS: [&str; 5] = ["type", "vendor", "size", "bit_width", "max_bandwidth"];

/// Whether `value` is amd-smi output: a list of objects carrying `"gpu"`, or `{"gpu_data": …}`.
pub(crate) fn detect(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.first().is_some_and(|g| g.get("gpu").is_some()),
        Value::Object(map) => map.get("gpu_data").is_some_and(Value::is_array),
        _ => false,
    }
}

/// Reads several amd-smi JSON documents about the same machine (`static` and `metric`) as one
/// snapshot, each GPU's figures joined by its `gpu` index.
pub fn parse_documents(documents: &[&str]) -> Result<Snapshot, ParseError> {
    let mut values = Vec::with_capacity(documents.len());
    for text in documents {
        let value = crate::json::read(text)?;
        if !detect(&value) {
            return Err(ParseError::InvalidJson {
                message: "this JSON is not `amd-smi static --json` or `amd-smi metric --json` \
                          output (no list of objects with a \"gpu\" key)"
                    .to_string(),
            });
        }
        values.push(value);
    }
    Ok(parse(&values, SourceFormat::AmdSmiJson))
}

/// The snapshot the amd-smi documents in `values` describe together, read from `source`.
pub(crate) fn parse(values: &[Value], source: SourceFormat) -> Snapshot {
    let mut snap = Snapshot::new(source);
    let mut reported_memory_use = false;
    let mut unknown_keys: Vec<String> = Vec::new();
    for entry in values.iter().flat_map(entries) {
        let Some(index) = uint(entry.get("gpu")) else {
            continue;
        };
        let make = || Gpu {
            index: Some(index),
            ..Gpu::default()
        };
        let Some((pos, _)) = snap.gpu_entry(|g| g.index == Some(index), make) else {
            continue;
        };
        let Some(gpu) = snap.gpus.get_mut(pos) else {
            continue;
        };
        let usage = entry.get("mem_usage");
        reported_memory_use |= usage.is_some();
        read_entry(gpu, entry, usage);
        collect_unknown_keys(usage, &MEM_USAGE_KEYS, &mut unknown_keys);
        collect_unknown_keys(entry.get("vram"), &VRAM_KEYS, &mut unknown_keys);
    }
    warn_about_gaps(&mut snap, reported_memory_use);
    if !unknown_keys.is_empty() {
        snap.warn(format!(
            "amd-smi printed memory fields vramfit does not know, which were not read: {}",
            unknown_keys.join(", ")
        ));
    }
    snap
}

/// Adds the keys of `section` that are not in `known` to `unknown`, once each.
fn collect_unknown_keys(section: Option<&Value>, known: &[&str], unknown: &mut Vec<String>) {
    const MAX_NAMED: usize = 16;
    let keys = section.and_then(Value::as_object).into_iter().flatten();
    for (key, _) in keys {
        let new = !known.contains(&key.as_str()) && !unknown.contains(key);
        if new && unknown.len() < MAX_NAMED {
            unknown.push(key.clone());
        }
    }
}

/// The per-GPU objects of one document.
fn entries(value: &Value) -> &[Value] {
    value
        .get("gpu_data")
        .unwrap_or(value)
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// Takes what `entry` gives about `gpu`, keeping what an earlier document gave where it is silent.
fn read_entry(gpu: &mut Gpu, entry: &Value, usage: Option<&Value>) {
    let at = |path: &[&str]| path.iter().try_fold(entry, |v, key| v.get(key));
    let size = |path: &[&str]| at(path).and_then(bytes);
    if let Some(name) = string(at(&["asic", "market_name"])).and_then(|n| values::text(&n)) {
        gpu.name = Some(name);
    }
    // `static` puts the bus ID under `bus`; `list` and the default view at the top.
    let bdf = string(at(&["bus", "bdf"])).or_else(|| string(at(&["bdf"])));
    if let Some(bdf) = bdf.and_then(|b| values::text(&b)) {
        gpu.pci_bus_id = Some(bdf);
    }
    if let Some(uuid) = string(at(&["uuid"])).and_then(|u| values::text(&u)) {
        gpu.uuid = Some(uuid);
    }
    let usage_size = |key: &str| usage.and_then(|u| u.get(key)).and_then(bytes);
    // `metric`'s total is what the driver manages now; `static`'s size is the board's, and the
    // two agree on every capture read. The live figure wins when both are given.
    let total = usage_size("total_vram").or_else(|| size(&["vram", "size"]));
    if total.is_some() {
        gpu.memory.total_bytes = total;
    }
    if let Some(used) = usage_size("used_vram") {
        gpu.memory.used_bytes = Some(used);
    }
    if let Some(free) = usage_size("free_vram") {
        gpu.memory.free_bytes = Some(free);
    }
    if let Some(busy) = at(&["usage", "gfx_activity"]).and_then(measure) {
        gpu.utilization_pct = Some(busy);
    }
    if let Some(edge) = at(&["temperature", "edge"]).and_then(measure) {
        gpu.temperature_c = Some(edge);
    }
}

/// What the documents did not give, said once for the whole paste.
fn warn_about_gaps(snap: &mut Snapshot, reported_memory_use: bool) {
    if snap.gpus.iter().any(|g| g.name.is_none()) {
        snap.warn(
            "amd-smi gives no name for some GPUs (`amd-smi metric` and `list` print none); \
             `amd-smi static` gives the names (vramfit probe reads both)",
        );
    }
    if !reported_memory_use {
        snap.warn(
            "this amd-smi output gives no memory in use (`static` gives only the VRAM size); \
             paste `amd-smi metric` for used and free memory",
        );
    }
    if snap.gpus.iter().any(|g| g.memory.total_bytes.is_some()) {
        snap.warn(
            "amd-smi prints VRAM in whole MiB, rounded down (it labels them MB), so each figure \
             may be up to 1 MiB under the driver's",
        );
    }
}

/// A `{"value": N, "unit": U}` size in bytes. `"N/A"` and units amd-smi does not print for sizes
/// give `None`.
fn bytes(v: &Value) -> Option<u64> {
    let unit = match v.get("unit").and_then(Value::as_str)? {
        "B" => 1,
        "KB" => 1 << 10,
        // amd-smi's "MB" and "GB" are powers of 1024: it divides bytes by 1024² for "MB".
        "MB" => MIB,
        "GB" => MIB << 10,
        _ => return None,
    };
    v.get("value")?.as_u64()?.checked_mul(unit)
}

/// A `{"value": N, "unit": …}` reading as a number, or `None` for `"N/A"`.
fn measure(v: &Value) -> Option<f64> {
    float(v.get("value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_metric_join_by_gpu_index() {
        let fixture = |name: &str| {
            let path = format!(
                "{}/tests/fixtures/amd-smi/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read_to_string(path).unwrap()
        };
        let metric = fixture("metric-json__radeon-rx-6600__rocm-6.x-pve.json");
        let stat = fixture("static-json__radeon-rx-6600__rocm-6.x-pve.json");
        let snap = parse_documents(&[&stat, &metric]).unwrap();
        let gpu = &snap.gpus[0];
        assert_eq!(gpu.name.as_deref(), Some("Navi 23 [Radeon RX 6600/6600 XT"));
        assert_eq!(gpu.pci_bus_id.as_deref(), Some("0000:0b:00.0"));
        assert_eq!(
            (
                gpu.memory.total_bytes,
                gpu.memory.used_bytes,
                gpu.memory.free_bytes
            ),
            (Some(8176 * MIB), Some(202 * MIB), Some(7974 * MIB))
        );
        assert!(snap.warnings.iter().all(|w| !w.contains("no name")));
        assert!(parse_documents(&["{\"gpus\": []}"]).is_err());
    }

    #[test]
    fn sizes_in_unknown_units_or_na_are_unknown() {
        let v: Value = serde_json::from_str(r#"{"value": "N/A", "unit": "MB"}"#).unwrap();
        assert_eq!(bytes(&v), None);
        let v: Value = serde_json::from_str(r#"{"value": 3, "unit": "parsecs"}"#).unwrap();
        assert_eq!(bytes(&v), None);
        let v: Value =
            serde_json::from_str(r#"{"value": 18446744073709551615, "unit": "MB"}"#).unwrap();
        assert_eq!(bytes(&v), None);
    }
}
