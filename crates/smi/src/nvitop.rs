//! What nvitop's Python API prints in a REPL: `PhysicalDevice(...)` and `GpuProcess(...)` reprs
//! and `PhysicalDeviceSnapshot(...)` blocks of `key=value,` lines.
//!
//! nvitop has no JSON output, so this reads the reprs as text. A snapshot block's byte counts
//! override the rounded `total_memory=…MiB` of a repr of the same device.

use crate::snapshot::{Gpu, Process, Snapshot, SourceFormat};
use crate::values::{self, MIB};

const DEVICE: &str = "PhysicalDevice(";
const PROCESS: &str = "GpuProcess(";
/// How far past a repr's opening parenthesis its arguments are looked for. Real reprs are a few
/// hundred bytes; the bound keeps hostile input with thousands of unclosed reprs linear.
const REPR_WINDOW: usize = 1024;

pub(crate) fn detect(text: &str) -> bool {
    text.contains(DEVICE) || text.contains("DeviceSnapshot(")
}

pub(crate) fn parse(text: &str) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::NvitopSnapshot);
    for (at, _) in text.match_indices(DEVICE) {
        let args = window(text, at + DEVICE.len());
        let Some(index) = arg(args, "index").and_then(values::uint) else {
            continue;
        };
        let Some(gpu) = gpu_mut(&mut snap, index) else {
            continue;
        };
        if gpu.name.is_none() {
            gpu.name = arg(args, "name").and_then(values::text);
        }
        if gpu.memory.total_bytes.is_none() {
            gpu.memory.total_bytes = arg(args, "total_memory").and_then(|v| values::size(v, MIB));
        }
    }
    for (at, _) in text.match_indices(PROCESS) {
        let args = window(text, at + PROCESS.len());
        let Some(device) = args.find(DEVICE).and_then(|d| args.get(d + DEVICE.len()..)) else {
            continue;
        };
        let Some(index) = arg(device, "index").and_then(values::uint) else {
            continue;
        };
        let pid = arg(args, "pid").and_then(values::uint);
        let host_name = args
            .find("HostProcess(")
            .and_then(|h| args.get(h..))
            .and_then(|host| arg(host, "name"))
            .and_then(values::text);
        let process = Process {
            pid,
            name: host_name,
            kind: arg(args, "type").and_then(values::text),
            used_bytes: arg(args, "gpu_memory").and_then(|v| values::size(v, MIB)),
            ..Process::default()
        };
        let Some(gpu) = gpu_mut(&mut snap, index) else {
            continue;
        };
        if pid.is_none() || !gpu.processes.iter().any(|p| p.pid == pid) {
            gpu.processes.push(process);
        }
    }
    memory_used_cells(text, &mut snap);
    snapshot_blocks(text, &mut snap);
    // By index, in the order seen among equals: each GPU goes in after those with an index no
    // larger. There are at most MAX_LOOKUP_GPUS, and the standard library's stable sort would bring
    // its merge machinery into the page's wasm.
    for gpu in std::mem::take(&mut snap.gpus) {
        let at = snap.gpus.partition_point(|g| g.index <= gpu.index);
        snap.gpus.insert(at, gpu);
    }
    snap.warn(
        "read from nvitop's Python REPL output; only devices and processes shown in it are \
         included, and devices without a snapshot or a memory_used() reading have no used or \
         free memory",
    );
    snap
}

/// `name.memory_used()` cells, whose `Out[N]:` is the device's used bytes, for a name bound to a
/// device earlier in the session: `name = Device(0)`, `Device(index=0)`, or
/// `a, b = Device.from_indices([0, 1])`. A name bound to anything else (`Device(uuid=…)`) is
/// forgotten, so a stale binding never attributes a reading to the wrong device.
fn memory_used_cells(text: &str, snap: &mut Snapshot) {
    let mut bound: Vec<(&str, u32)> = Vec::new();
    let mut asked: Option<u32> = None;
    for line in text.lines() {
        let line = line.trim_start();
        if let Some(out) = line.strip_prefix("Out[") {
            let value = out.split_once("]:").map(|(_, v)| v.trim());
            if let (Some(index), Some(bytes)) = (asked.take(), value.and_then(|v| v.parse().ok())) {
                if let Some(gpu) = gpu_mut(snap, index) {
                    gpu.memory.used_bytes = Some(bytes);
                }
            }
            continue;
        }
        // The code after an `In [N]:` or `...:` prompt, without its comment.
        let Some((_, code)) = line.split_once("]:").or_else(|| line.split_once("...:")) else {
            continue;
        };
        let code = code.split('#').next().unwrap_or("").trim();
        if let Some(name) = code.strip_suffix(".memory_used()") {
            asked = bound
                .iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|&(_, i)| i);
        } else if let Some((names, value)) = code.split_once('=') {
            let names: Vec<&str> = names.split(',').map(str::trim).collect();
            bound.retain(|(n, _)| !names.contains(n));
            let indices = device_indices(value.trim());
            if indices.len() == names.len() {
                bound.extend(names.into_iter().zip(indices));
            }
        }
    }
}

/// The physical indices a `Device(…)` or `Device.from_indices([…])` call names; empty for any
/// other value.
fn device_indices(value: &str) -> Vec<u32> {
    let call = |prefix: &str| value.strip_prefix(prefix).and_then(|v| v.strip_suffix(')'));
    if let Some(list) = call("Device.from_indices(") {
        let list = list.trim().trim_start_matches('[').trim_end_matches(']');
        let indices: Option<Vec<u32>> = list.split(',').map(values::uint).collect();
        return indices.unwrap_or_default();
    }
    match call("Device(") {
        Some(args) => values::uint(args.strip_prefix("index=").unwrap_or(args))
            .into_iter()
            .collect(),
        None => Vec::new(),
    }
}

/// `PhysicalDeviceSnapshot(` … `)` blocks: one `key=value,` per line, `# comments` allowed.
fn snapshot_blocks(text: &str, snap: &mut Snapshot) {
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.contains("DeviceSnapshot(") {
            continue;
        }
        let mut fields: Vec<(&str, &str)> = Vec::new();
        for body in lines.by_ref() {
            let body = body.trim();
            if body.starts_with(')') {
                break;
            }
            let body = body.split(" #").next().unwrap_or("").trim();
            if let Some((key, value)) = body.split_once('=') {
                let value = value.trim().trim_end_matches(',').trim();
                fields.push((key.trim(), unquote(value)));
            }
        }
        let field = |name: &str| fields.iter().find(|(k, _)| *k == name).map(|&(_, v)| v);
        let Some(index) = field("index").and_then(values::uint) else {
            continue;
        };
        let Some(gpu) = gpu_mut(snap, index) else {
            continue;
        };
        let bytes = |name: &str| field(name).and_then(|v| values::size(v, 1));
        gpu.memory.total_bytes = bytes("memory_total").or(gpu.memory.total_bytes);
        gpu.memory.used_bytes = bytes("memory_used").or(gpu.memory.used_bytes);
        gpu.memory.free_bytes = bytes("memory_free").or(gpu.memory.free_bytes);
        if let Some(name) = field("name").and_then(values::text) {
            gpu.name = Some(name);
        }
        gpu.uuid = field("uuid").and_then(values::text).or(gpu.uuid.take());
        gpu.pci_bus_id = field("bus_id")
            .and_then(values::text)
            .or(gpu.pci_bus_id.take());
        gpu.utilization_pct = field("gpu_utilization").and_then(values::number);
        gpu.temperature_c = field("temperature").and_then(values::number);
        gpu.mig_mode = field("mig_mode").and_then(values::text);
    }
}

/// `text` from byte `start` for at most [`REPR_WINDOW`] bytes, cut at a char boundary.
fn window(text: &str, start: usize) -> &str {
    let rest = text.get(start..).unwrap_or("");
    let mut end = rest.len().min(REPR_WINDOW);
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    rest.get(..end).unwrap_or("")
}

fn gpu_mut(snap: &mut Snapshot, index: u32) -> Option<&mut Gpu> {
    let make = || Gpu {
        index: Some(index),
        ..Gpu::default()
    };
    let (pos, _) = snap.gpu_entry(|g| g.index == Some(index), make)?;
    snap.gpus.get_mut(pos)
}

/// The value of `key=` in a repr's argument list: up to the next `,` or `)`, or the closing
/// quote. `key` must start a word, so `index` does not match `cuda_index`.
fn arg<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    let end_of_repr = args.find(')').unwrap_or(args.len());
    let scope = args.get(..end_of_repr)?;
    let mut from = 0;
    while let Some(found) = scope.get(from..)?.find(key) {
        let start = from + found;
        let after = start + key.len();
        let word_start = scope
            .get(..start)?
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if word_start && scope.get(after..)?.starts_with('=') {
            let value = args.get(after + 1..)?;
            let value = match value.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let inner = value.get(1..)?;
                    inner.get(..inner.find(q)?)?
                }
                _ => value.get(..value.find([',', ')']).unwrap_or(value.len()))?,
            };
            return Some(value.trim());
        }
        from = after;
    }
    None
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
        .unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::{arg, parse};

    #[test]
    fn a_memory_used_reading_goes_to_the_device_its_name_is_bound_to() {
        let text = "In [1]: a, b = Device.from_indices([0, 3])  # two devices\n\
                    In [2]: b.memory_used()\nOut[2]: 1000\n\
                    In [3]: a = Device(uuid='GPU-0')\n\
                    In [4]: a.memory_used()\nOut[4]: 2000\n\
                    In [5]: c = Device(index=5)\n   ...: c.memory_used()\nOut[5]: 3000\n";
        let used: Vec<(Option<u32>, Option<u64>)> = parse(text)
            .gpus
            .iter()
            .map(|g| (g.index, g.memory.used_bytes))
            .collect();
        // `a` was rebound to a device by UUID, so its reading is not GPU 0's.
        assert_eq!(used, [(Some(3), Some(1000)), (Some(5), Some(3000))]);
    }

    #[test]
    fn arg_matches_whole_keys_only() {
        let a = r#"cuda_index=0, nvml_index=9, name="NVIDIA GeForce RTX 2080 Ti", total_memory=11019MiB)"#;
        assert_eq!(arg(a, "index"), None);
        assert_eq!(arg(a, "nvml_index"), Some("9"));
        assert_eq!(arg(a, "name"), Some("NVIDIA GeForce RTX 2080 Ti"));
        assert_eq!(arg(a, "total_memory"), Some("11019MiB"));
    }
}
