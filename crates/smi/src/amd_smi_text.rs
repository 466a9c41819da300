//! amd-smi's views other than `--json`: the text of `amd-smi static`, `metric` and `list`, their
//! `--csv`, the default view that `amd-smi` alone prints (ROCm 7), and `amd-smi monitor`'s table
//! where it has VRAM columns (`-v`, or its default columns).
//!
//! Each is rebuilt into the JSON shape and read by [`crate::amd_smi`], so every view gives the
//! snapshot `--json` gives. amd-smi's text is its JSON with the keys upper-cased and each
//! `{"value": N, "unit": U}` printed `N U` (`amdsmi_cli/amdsmi_logger.py`, ROCm/amdsmi
//! `0ceca28f`, `_convert_json_to_human_readable`); its CSV flattens each GPU's sections into one
//! row of bare values in the same units, headed by `gpu` (`flatten_dict`); the default view prints
//! each GPU as two table rows, the second ending in `used/total MB`; `monitor` right-aligns each
//! value under the end of its column's name (`_convert_json_to_tabular`).

use serde_json::{Map, Value};
use vramfit_units::csv_fields;

use crate::snapshot::{Snapshot, SourceFormat};
use crate::values;

/// How deep the text's sections may nest; amd-smi's go four deep.
const MAX_DEPTH: usize = 8;

/// The unit of every memory column of amd-smi's CSV: MiB, printed as bare numbers.
const CSV_UNIT: &str = "MB";

/// Whether `text` is amd-smi's text view: a `GPU: N` line at the margin over an indented
/// `KEY: value` or `SECTION:` line. nvidia-smi writes `GPU 0:` (`-L`) or `GPU 0000:…` (`-q`).
pub(crate) fn detect_text(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    while let Some(line) = lines.next() {
        if device_index(line, "GPU").is_some() {
            let next = lines.next().unwrap_or("");
            return next.starts_with(' ') && next.trim_end().contains(':');
        }
    }
    false
}

/// Whether `text` is amd-smi CSV: a header whose first field is `gpu` (or `timestamp,gpu` under
/// `--watch`). nvidia-smi has no field named `gpu`, and rocm-smi's CSV starts `device`.
pub(crate) fn detect_csv(text: &str) -> bool {
    let Some(header) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let header = header.trim();
    header.starts_with("gpu,") || header.starts_with("timestamp,gpu,")
}

/// Whether `text` is amd-smi's default view: its title row or its column-header row.
pub(crate) fn detect_table(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        l.starts_with("| AMD-SMI ") || (l.starts_with("| BDF ") && l.contains("GPU-Name |"))
    })
}

pub(crate) fn parse_text(text: &str) -> Snapshot {
    crate::amd_smi::parse(&[Value::Array(text_entries(text))], SourceFormat::AmdSmi)
}

/// `N` of a `GPU: N` line at the margin, for `kind` `GPU` (or `CPU`, `CORE` on APUs).
fn device_index(line: &str, kind: &str) -> Option<u32> {
    let rest = line.strip_prefix(kind)?.strip_prefix(':')?;
    values::uint(rest)
}

/// Each `GPU: N` block of the text as a JSON object, keys lower-cased. Blocks of CPUs and cores
/// (`CPU: N`, `CORE: N`, on APUs) end the GPU before them and are not read.
fn text_entries(text: &str) -> Vec<Value> {
    let mut entries: Vec<Value> = Vec::new();
    let mut in_gpu = false;
    // The sections open above the current line: their indentation and lower-cased keys.
    let mut open: Vec<(usize, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(index) = device_index(line, "GPU") {
            entries.push(Value::Object(Map::from_iter([(
                "gpu".into(),
                index.into(),
            )])));
            in_gpu = true;
            open.clear();
            continue;
        }
        if !line.starts_with(' ') {
            in_gpu = false;
            continue;
        }
        let Some(Value::Object(entry)) = entries.last_mut().filter(|_| in_gpu) else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        while open.last().is_some_and(|(depth, _)| *depth >= indent) {
            open.pop();
        }
        let (key, value) = match line.trim().split_once(": ") {
            Some((key, value)) => (key, Some(value)),
            None => match line.trim().strip_suffix(':') {
                Some(key) => (key, None),
                // A list wrapped onto more lines: nothing vramfit reads.
                None => continue,
            },
        };
        let key = key.trim().to_ascii_lowercase();
        let Some(section) = section_at(entry, &open) else {
            continue;
        };
        match value {
            Some(value) => {
                section.insert(key, text_value(value));
            }
            None if open.len() < MAX_DEPTH => {
                section.insert(key.clone(), Value::Object(Map::new()));
                open.push((indent, key));
            }
            None => {}
        }
    }
    entries
}

/// The object at the path of `open` inside `entry`, or `None` where a key on it holds a value.
fn section_at<'a>(
    entry: &'a mut Map<String, Value>,
    open: &[(usize, String)],
) -> Option<&'a mut Map<String, Value>> {
    open.iter().try_fold(entry, |map, (_, key)| {
        map.get_mut(key).and_then(Value::as_object_mut)
    })
}

/// A text value as amd-smi's JSON holds it: `65536 MB` is `{"value": 65536, "unit": "MB"}`, a
/// bare whole number is a number, anything else (`N/A` included) the text.
fn text_value(value: &str) -> Value {
    let value = value.trim();
    if let Ok(n) = value.parse::<u64>() {
        return n.into();
    }
    match value.split_once(' ') {
        Some((n, unit)) if !unit.contains(' ') => match n.parse::<u64>() {
            Ok(n) => Value::Object(Map::from_iter([
                ("value".into(), n.into()),
                ("unit".into(), unit.into()),
            ])),
            Err(_) => value.into(),
        },
        _ => value.into(),
    }
}

pub(crate) fn parse_csv(text: &str) -> Snapshot {
    let mut entries = Vec::new();
    let mut header: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cells = csv_fields(line);
        if cells.iter().any(|c| c == "gpu") {
            header = cells;
            continue;
        }
        // `metric --csv` with processes prints a second table, one row per process.
        if header.iter().any(|h| h == "pid") {
            continue;
        }
        if let Some(entry) = csv_entry(&header, &cells) {
            entries.push(entry);
        }
    }
    crate::amd_smi::parse(&[Value::Array(entries)], SourceFormat::AmdSmi)
}

/// One CSV row as amd-smi's JSON holds it. Memory columns go under `mem_usage` in MiB (the
/// monitor's `vram_used` and `vram_total` under `metric`'s names), so a memory column vramfit
/// does not know is named in a warning; the name and bus ID go where `static` puts them.
fn csv_entry(header: &[String], cells: &[String]) -> Option<Value> {
    let index = header.iter().position(|h| h == "gpu")?;
    let gpu = values::uint(cells.get(index)?)?;
    let mut usage = Map::new();
    let mut entry = Map::from_iter([("gpu".into(), gpu.into())]);
    for (name, cell) in header.iter().zip(cells) {
        let memory_name = match name.as_str() {
            "vram_total" => "total_vram",
            "vram_used" => "used_vram",
            other => other,
        };
        if memory_name.contains("vram") || memory_name.contains("gtt") {
            let value = match cell.trim().parse::<u64>() {
                Ok(n) => Value::Object(Map::from_iter([
                    ("value".into(), n.into()),
                    ("unit".into(), CSV_UNIT.into()),
                ])),
                Err(_) => cell.as_str().into(),
            };
            usage.insert(memory_name.to_string(), value);
        } else if name == "market_name" {
            let asic = Map::from_iter([("market_name".into(), cell.as_str().into())]);
            entry.insert("asic".into(), Value::Object(asic));
        } else if name == "bdf" || name == "gpu_bdf" {
            entry.insert("bdf".into(), cell.as_str().into());
        }
    }
    if !usage.is_empty() {
        entry.insert("mem_usage".into(), Value::Object(usage));
    }
    Some(Value::Object(entry))
}

pub(crate) fn parse_table(text: &str) -> Snapshot {
    let (entries, truncated) = table_entries(text);
    let mut snap = crate::amd_smi::parse(&[Value::Array(entries)], SourceFormat::AmdSmi);
    if truncated {
        snap.warn(
            "the default view cuts a GPU name too long for its column (it starts with `...`); \
             `amd-smi static` prints it whole",
        );
    }
    if snap.gpus.iter().any(|g| g.memory.used_bytes.is_some()) {
        snap.warn(
            "amd-smi's default view prints used/total VRAM but not free; total − used overstates \
             what can be allocated by what the driver keeps back",
        );
    }
    snap
}

/// The GPUs of the default view's first box, as amd-smi's JSON holds them, and whether a name
/// was cut short. Each GPU is two rows: `| BDF  NAME | … |` then `| GPU HIP-ID … | … used/total
/// MB |`; the box ends at its `+---` border, before the processes box.
fn table_entries(text: &str) -> (Vec<Value>, bool) {
    let mut entries = Vec::new();
    let mut truncated = false;
    let mut in_box = false;
    let mut bdf_and_name: Option<(String, String)> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("|=") {
            in_box = true;
            continue;
        }
        if line.starts_with('+') && in_box {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(left), Some(right)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        if !in_box {
            continue;
        }
        let mut words = left.split_whitespace();
        let first = words.next().unwrap_or("");
        if values::is_bus_id(first) {
            let name = left.get(first.len()..).unwrap_or("").trim().to_string();
            truncated |= name.starts_with("...");
            bdf_and_name = Some((first.to_string(), name));
        } else if let Some(index) = values::uint(first) {
            entries.push(table_entry(index, bdf_and_name.take(), right));
        }
    }
    (entries, truncated)
}

/// One GPU of the default view. A name that is only a PCI device ID (`0x1586`, where amd-smi
/// knows no market name) is no name.
fn table_entry(index: u32, bdf_and_name: Option<(String, String)>, right: &str) -> Value {
    let mut entry = Map::from_iter([("gpu".into(), index.into())]);
    if let Some((bdf, name)) = bdf_and_name {
        entry.insert("bdf".into(), bdf.into());
        if !name.starts_with("0x") {
            let asic = Map::from_iter([("market_name".into(), name.into())]);
            entry.insert("asic".into(), Value::Object(asic));
        }
    }
    let mut words = right.split_whitespace().rev();
    let (unit, figures) = (words.next(), words.next());
    if let (Some(unit), Some((used, total))) = (unit, figures.and_then(|f| f.split_once('/'))) {
        let size = |n: &str| match n.parse::<u64>() {
            Ok(n) => Value::Object(Map::from_iter([
                ("value".into(), n.into()),
                ("unit".into(), unit.into()),
            ])),
            Err(_) => n.into(),
        };
        let usage = Map::from_iter([
            ("total_vram".into(), size(total)),
            ("used_vram".into(), size(used)),
        ]);
        entry.insert("mem_usage".into(), Value::Object(usage));
    }
    Value::Object(entry)
}

/// Whether `text` is `amd-smi monitor`'s table with a VRAM column.
pub(crate) fn detect_monitor(text: &str) -> bool {
    text.lines().any(|l| monitor_header(l).is_some())
}

/// The column names of a `monitor` header line and the character position each ends at, if
/// `line` is one: upper-case names starting `GPU` (or `TIMESTAMP GPU` under `--watch`), one of
/// them `VRAM_USED` or `VRAM_TOTAL`.
fn monitor_header(line: &str) -> Option<Vec<(&str, usize)>> {
    let mut columns = Vec::new();
    let mut start = None;
    for (at, c) in line
        .char_indices()
        .chain(std::iter::once((line.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(at),
            (true, Some(from)) => {
                let name = line.get(from..at)?;
                columns.push((name, line.get(..at)?.chars().count()));
                start = None;
            }
            _ => {}
        }
    }
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let starts_right = matches!(names.as_slice(), ["GPU", ..] | ["TIMESTAMP", "GPU", ..]);
    let has_vram = names
        .iter()
        .any(|n| matches!(*n, "VRAM_USED" | "VRAM_TOTAL"));
    let all_names = names.iter().all(|n| {
        n.chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c == '%')
    });
    (starts_right && has_vram && all_names).then_some(columns)
}

pub(crate) fn parse_monitor(text: &str) -> Snapshot {
    let mut entries = Vec::new();
    let mut header: Option<Vec<(&str, usize)>> = None;
    for line in text.lines() {
        if let Some(columns) = monitor_header(line) {
            header = Some(columns);
            continue;
        }
        if let Some(entry) = header.as_deref().and_then(|h| monitor_entry(h, line)) {
            entries.push(entry);
        }
    }
    crate::amd_smi::parse(&[Value::Array(entries)], SourceFormat::AmdSmi)
}

/// One `monitor` row as amd-smi's JSON holds it: each cell is the text between the end of the
/// column before and the end of its own column's name.
fn monitor_entry(header: &[(&str, usize)], line: &str) -> Option<Value> {
    let chars: Vec<char> = line.chars().collect();
    let cell = |name: &str| -> Option<String> {
        let at = header.iter().position(|(n, _)| *n == name)?;
        let start = at
            .checked_sub(1)
            .and_then(|i| header.get(i))
            .map_or(0, |c| c.1);
        let end = header.get(at)?.1.min(chars.len());
        Some(
            chars
                .get(start..end)?
                .iter()
                .collect::<String>()
                .trim()
                .to_string(),
        )
    };
    let gpu = values::uint(&cell("GPU")?)?;
    let mut usage = Map::new();
    for (column, key) in [("VRAM_USED", "used_vram"), ("VRAM_TOTAL", "total_vram")] {
        if let Some(value) = cell(column) {
            usage.insert(key.into(), text_value(&value));
        }
    }
    let entry = Map::from_iter([
        ("gpu".into(), gpu.into()),
        ("mem_usage".into(), Value::Object(usage)),
    ]);
    Some(Value::Object(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_values_are_read_as_amd_smi_json_holds_them() {
        assert_eq!(
            text_value("1512 MB"),
            serde_json::json!({"value": 1512, "unit": "MB"})
        );
        assert_eq!(text_value("128"), serde_json::json!(128));
        assert_eq!(text_value("N/A"), serde_json::json!("N/A"));
        assert_eq!(
            text_value("Navi 23 [Radeon RX 6600]"),
            serde_json::json!("Navi 23 [Radeon RX 6600]")
        );
        assert_eq!(text_value("-1 MB"), serde_json::json!("-1 MB"));
    }

    #[test]
    fn sections_nest_by_indentation_and_cpu_blocks_are_not_gpus() {
        let text = "GPU: 1\n    VRAM:\n        SIZE: 8 GB\n    BUS:\n        BDF: 0000:03:00.0\n\
                    CPU: 0\n    VRAM:\n        SIZE: 1 GB\n";
        let entries = text_entries(text);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0]["vram"]["size"]["value"], 8);
        assert_eq!(entries[0]["bus"]["bdf"], "0000:03:00.0");
    }
}
