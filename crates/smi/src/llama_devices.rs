//! `llama-server --list-devices` (also `llama-cli`, `llama-bench`): llama.cpp's own view of each
//! GPU, one line per device, printed by `common/arg.cpp` (ggml-org/llama.cpp `145b6280`) as
//! `  NAME: DESCRIPTION (TOTAL MiB, FREE MiB free)`, each figure bytes / 1024² rounded down.
//!
//! On a Mac the total is Metal's `recommendedMaxWorkingSetSize`, so this is the one paste that
//! gives the working set macOS really grants, the `iogpu.wired_limit_mb` override and macOS 26
//! included. CPU devices are not listed; used memory is not printed.

use crate::snapshot::{Gpu, Memory, Snapshot, SourceFormat};
use crate::values::MIB;

/// Whether `text` holds a `--list-devices` line.
pub(crate) fn detect(text: &str) -> bool {
    text.lines().any(|line| device(line).is_some())
}

/// Reads every device line, in the order llama.cpp numbers them.
pub(crate) fn parse(text: &str) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::LlamaDevices);
    for (name, total, free) in text.lines().filter_map(device) {
        let index = u32::try_from(snap.gpus.len()).ok();
        if snap.push_referenced_gpu(Gpu::default()).is_none() {
            break;
        }
        if let Some(gpu) = snap.gpus.last_mut() {
            gpu.index = index;
            gpu.name = Some(name.to_string());
            gpu.memory = Memory {
                total_bytes: total.checked_mul(MIB),
                free_bytes: free.checked_mul(MIB),
                ..Memory::default()
            };
        }
    }
    snap.warn(
        "llama.cpp prints whole MiB, rounded down, and no used memory; \"in use\" is total less \
         free. On a Mac the total is Metal's working set (iogpu.wired_limit_mb where set)",
    );
    snap
}

/// One device line: its description, total and free MiB.
fn device(line: &str) -> Option<(&str, u64, u64)> {
    let rest = line.trim().strip_suffix(" MiB free)")?;
    let (rest, free) = rest.rsplit_once(" MiB, ")?;
    let (head, total) = rest.rsplit_once(" (")?;
    let (id, name) = head.split_once(": ")?;
    // The id is the backend's device name (`MTL0`, `CUDA0`, `Vulkan1`, `RPC[host:port]`); a
    // server log's `device_info:` list prints it as `- MTL0    : …`.
    let id = id.trim();
    let id = id.strip_prefix("- ").map_or(id, str::trim);
    let plain_id = !id.is_empty() && !id.contains(char::is_whitespace);
    plain_id.then_some(())?;
    Some((
        name.trim(),
        total.trim().parse().ok()?,
        free.trim().parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_macs_device_line_gives_its_working_set() {
        // AlexsJones/llmfit#570: a 32 GB M1 Max with iogpu.wired_limit_mb=26000.
        let path = format!(
            "{}/tests/fixtures/macos/llama-list-devices__apple-m1-max-32gb__wired-26000.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        let snap = crate::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(snap.source, SourceFormat::LlamaDevices);
        let gpu = &snap.gpus[0];
        assert_eq!(gpu.name.as_deref(), Some("Apple M1 Max"));
        assert_eq!(
            (
                gpu.memory.total_bytes,
                gpu.memory.free_bytes,
                gpu.memory.used_bytes
            ),
            (Some(26000 * MIB), Some(25999 * MIB), None)
        );
    }

    #[test]
    fn only_whole_device_lines_count() {
        assert!(device("  (none)").is_none());
        assert!(device("Available devices:").is_none());
        assert!(device("  a b: X (1 MiB, 1 MiB free)").is_none());
        assert!(device("  CUDA0: X (99999999999999999999 MiB, 1 MiB free)").is_none());
        assert_eq!(
            device("  - MTL0    : Apple M4 (12124 MiB, 12123 MiB free)"),
            Some(("Apple M4", 12124, 12123))
        );
        assert_eq!(
            device("  RPC[10.0.0.2:50052]: RPC (8176 MiB, 8000 MiB free)"),
            Some(("RPC", 8176, 8000))
        );
    }
}
