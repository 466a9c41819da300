//! `rocm-smi`, ROCm's GPU tool before amd-smi: the `--showmeminfo vram` text view, and the same
//! readings with `--csv` or `--json` (often with `--showproductname` and `--showuse`).
//!
//! All three print one set of `key: value` readings per GPU, under the same keys:
//! `GPU[0]\t\t: VRAM Total Memory (B): 4278190080` in text, a `device,…` header over `card0,…`
//! rows in CSV, and `{"card0": {"VRAM Total Memory (B)": "…"}}` in JSON, where every value is a
//! string. Sizes are exact bytes, the `(B)` in the key. rocm-smi prints no free figure, so free
//! stays unknown, with a warning; consumers take total − used.

use serde_json::Value;

use crate::snapshot::{Gpu, Snapshot, SourceFormat};
use crate::values;

/// The keys read, exactly as rocm-smi prints them. `VIS_VRAM …` and `GTT …` (from
/// `--showmeminfo all`) are other memory pools and must not match.
const TOTAL: &str = "VRAM Total Memory (B)";
const USED: &str = "VRAM Total Used Memory (B)";
const NAME: &str = "Card Series";
const USE: &str = "GPU use (%)";

/// One GPU's readings, in the order printed.
type Readings<'a> = (u32, Vec<(&'a str, &'a str)>);

/// Whether `text` holds a `GPU[N] : key: value` line of the text view.
pub(crate) fn detect_text(text: &str) -> bool {
    text.lines().any(|line| text_reading(line).is_some())
}

/// Whether `text` is rocm-smi CSV: its first line is a header whose first field is `device`.
/// nvidia-smi has no `device` field, so its `--query-gpu` CSV never starts so.
pub(crate) fn detect_csv(text: &str) -> bool {
    first_line(text).is_some_and(|l| l.starts_with("device,"))
}

/// Whether `value` is rocm-smi JSON: an object whose keys are `cardN` (and `system`, where the
/// driver version goes), with at least one card.
pub(crate) fn detect_json(value: &Value) -> bool {
    let Some(map) = value.as_object() else {
        return false;
    };
    map.keys().any(|k| card_index(k).is_some())
        && map
            .iter()
            .all(|(k, v)| v.is_object() && (k == "system" || card_index(k).is_some()))
}

pub(crate) fn parse_text(text: &str) -> Snapshot {
    let mut gpus: Vec<Readings> = Vec::new();
    for (index, key, value) in text.lines().filter_map(text_reading) {
        match gpus.iter_mut().find(|(i, _)| *i == index) {
            Some((_, readings)) => readings.push((key, value)),
            None => gpus.push((index, vec![(key, value)])),
        }
    }
    build(SourceFormat::RocmSmi, &gpus)
}

pub(crate) fn parse_csv(text: &str) -> Snapshot {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let mut gpus: Vec<Readings> = Vec::new();
    let mut ragged = false;
    for row in lines {
        let cells: Vec<&str> = row.split(',').collect();
        ragged |= cells.len() != header.len();
        let Some(index) = cells.first().and_then(|c| card_index(c)) else {
            continue;
        };
        let readings = header.iter().copied().zip(cells).skip(1).collect();
        gpus.push((index, readings));
    }
    let mut snap = build(SourceFormat::RocmSmi, &gpus);
    if ragged {
        snap.warn(
            "some rocm-smi CSV rows have more or fewer cells than the header; each was read up to \
             the shorter of the two",
        );
    }
    snap
}

pub(crate) fn parse_json(value: &Value) -> Snapshot {
    let cards = value.as_object().into_iter().flatten();
    let gpus: Vec<Readings> = cards
        .filter_map(|(key, readings)| {
            let readings = readings.as_object()?;
            let pairs = readings
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
                .collect();
            Some((card_index(key)?, pairs))
        })
        .collect();
    build(SourceFormat::RocmSmi, &gpus)
}

/// The GPU index, key and value of a text-view line such as
/// `GPU[0]\t\t: VRAM Total Memory (B): 4278190080`.
fn text_reading(line: &str) -> Option<(u32, &str, &str)> {
    let rest = line.trim().strip_prefix("GPU[")?;
    let (index, rest) = rest.split_once(']')?;
    let rest = rest.trim_start().strip_prefix(':')?;
    let (key, value) = rest.trim().split_once(": ")?;
    Some((values::uint(index)?, key.trim(), value.trim()))
}

/// `N` of `cardN`.
fn card_index(key: &str) -> Option<u32> {
    let digits = key.strip_prefix("card")?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| values::uint(digits))
        .flatten()
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// The snapshot of every GPU's readings; a GPU read twice (`-l`, or a paste of two commands)
/// takes each key's latest value.
fn build(source: SourceFormat, gpus: &[Readings]) -> Snapshot {
    let mut snap = Snapshot::new(source);
    for (index, readings) in gpus {
        let make = || Gpu {
            index: Some(*index),
            ..Gpu::default()
        };
        let Some((pos, _)) = snap.gpu_entry(|g| g.index == Some(*index), make) else {
            continue;
        };
        let Some(gpu) = snap.gpus.get_mut(pos) else {
            continue;
        };
        for &(key, value) in readings {
            read(gpu, key, value);
        }
    }
    warn_about_gaps(&mut snap);
    snap
}

/// Takes one reading into `gpu`; keys vramfit does not use are skipped.
fn read(gpu: &mut Gpu, key: &str, value: &str) {
    let bytes = || value.trim().parse::<u64>().ok();
    match key {
        TOTAL => gpu.memory.total_bytes = bytes().or(gpu.memory.total_bytes),
        USED => gpu.memory.used_bytes = bytes().or(gpu.memory.used_bytes),
        NAME => gpu.name = values::text(value).or(gpu.name.take()),
        USE => gpu.utilization_pct = values::number(value).or(gpu.utilization_pct),
        _ => {}
    }
}

/// What rocm-smi did not print, said once for the whole paste.
fn warn_about_gaps(snap: &mut Snapshot) {
    let gpus = &snap.gpus;
    let no_memory = gpus.iter().any(|g| g.memory.total_bytes.is_none());
    let no_name = gpus.iter().any(|g| g.name.is_none());
    let some_memory = gpus.iter().any(|g| g.memory.total_bytes.is_some());
    if no_memory {
        snap.warn(format!(
            "some GPUs have no \"{TOTAL}\"; rerun rocm-smi with `--showmeminfo vram`"
        ));
    }
    if no_name {
        snap.warn(
            "rocm-smi names a GPU only with `--showproductname`; rerun as `rocm-smi \
             --showproductname --showmeminfo vram --csv` for the names",
        );
    }
    if some_memory {
        snap.warn(
            "rocm-smi reports total and used VRAM but not free; total − used overstates what \
             can be allocated by what the driver keeps back",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_read_with_tabs_or_spaces() {
        for line in [
            "GPU[0]\t\t: VRAM Total Memory (B): 4278190080",
            "GPU[0] \t\t: VRAM Total Memory (B): 4278190080",
            "GPU[0]          : VRAM Total Memory (B): 4278190080",
        ] {
            assert_eq!(text_reading(line), Some((0, TOTAL, "4278190080")), "{line}");
        }
        assert_eq!(text_reading("GPU[x]\t\t: a: b"), None);
        assert_eq!(
            text_reading("GPU[0]\t\t: Unable to get voltage curve"),
            None
        );
    }

    #[test]
    fn only_vram_keys_are_vram() {
        let mut gpu = Gpu::default();
        read(&mut gpu, "VIS_VRAM Total Memory (B)", "268435456");
        read(&mut gpu, "GTT Total Memory (B)", "33554432000");
        read(&mut gpu, TOTAL, "N/A");
        assert_eq!(gpu.memory.total_bytes, None);
        read(&mut gpu, TOTAL, "4278190080");
        assert_eq!(gpu.memory.total_bytes, Some(4_278_190_080));
    }

    #[test]
    fn card_keys_are_card_and_digits() {
        assert_eq!(card_index("card12"), Some(12));
        assert_eq!(card_index("card"), None);
        assert_eq!(card_index("card+1"), None);
        assert_eq!(card_index("gpu0"), None);
    }
}
