//! `nvidia-smi --query-gpu=… --format=csv` and `--query-compute-apps=… --format=csv`.
//!
//! The header names the fields (in any order, with a unit suffix such as `memory.used [MiB]`),
//! so with a header nothing is guessed. Several CSV blocks may be pasted together; processes from
//! a compute-apps block are attached to the query-gpu GPUs by UUID, then bus id, then name, and
//! a process whose GPU cannot be told apart from another (identical GPUs matched by name alone)
//! is left out with a warning rather than put on the first of them. Rows repeating a GPU (the
//! same UUID, bus id or index: `-l` output, or a paste of two queries) are one GPU, read from its
//! latest row.
//!
//! Without a header (`noheader`) the field order is unknown. The parser then tries the common
//! orders in [`NOHEADER_ORDERS`], keeps the first whose every row has the right shape (numbers
//! where sizes go, `used <= total`, `used + free <= total`), and says which it assumed in a
//! warning. A lone number per line is refused: it could be used, free or total memory.

use std::collections::HashMap;

use crate::snapshot::{self, DriverKey, Gpu, Process, Snapshot, SourceFormat};
use crate::values::{self, MIB};
use crate::ParseError;
use vramfit_units::parse_f64;

/// Header-less field orders tried in turn, as written in `--query-gpu=`.
const NOHEADER_ORDERS: &[&str] = &[
    "memory.used,memory.total",
    "memory.total,memory.used",
    "memory.total,memory.used,memory.free",
    "index,memory.used,memory.total",
    "index,memory.total,memory.used,memory.free",
    "name,memory.total,memory.used,memory.free",
    "name,memory.used,memory.total",
    "index,name,memory.total,memory.used,memory.free",
    "index,name,memory.used,memory.total",
    // telegraf's nvidia_smi input, the most widespread header-less consumer.
    "fan.speed,memory.total,memory.used,memory.free,pstate,temperature.gpu,name,uuid,\
     compute_mode,utilization.gpu,utilization.memory,index",
];

/// Field names without a `.` or `_` that still mark a line as a header.
const PLAIN_FIELDS: &[&str] = &[
    "index",
    "name",
    "uuid",
    "serial",
    "count",
    "pstate",
    "timestamp",
    "pid",
];

pub(crate) fn detect(text: &str) -> bool {
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return false;
    };
    if text.lines().any(|l| header(l.trim()).is_some()) {
        return true;
    }
    // A header-less row must hold something GPU-shaped to be worth trying as CSV.
    first.split(',').map(str::trim).any(|cell| {
        parse_f64(cell).is_some_and(f64::is_finite)
            || values::size(cell, MIB).is_some()
            || cell.starts_with("GPU-")
            || values::is_bus_id(cell)
    })
}

struct Field {
    name: String,
    /// Bytes per unit named in the header (`[MiB]`), for values printed with `nounits`.
    unit: u64,
}

/// The fields of a header line, or `None` when `line` is data.
fn header(line: &str) -> Option<Vec<Field>> {
    let mut fields = Vec::new();
    let mut marked = false;
    for cell in line.split(',').map(str::trim) {
        let (name, unit) = match cell.split_once('[') {
            Some((name, unit)) => {
                marked = true;
                (name.trim(), unit.trim_end_matches(']').trim())
            }
            None => (cell, ""),
        };
        let well_formed = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
        if !well_formed {
            return None;
        }
        let name = name.to_ascii_lowercase();
        marked |= name.contains('.') || name.contains('_') || PLAIN_FIELDS.contains(&name.as_str());
        let unit = values::size(&format!("1 {unit}"), MIB).unwrap_or(MIB);
        fields.push(Field { name, unit });
    }
    marked.then_some(fields)
}

fn is_compute_apps(fields: &[Field]) -> bool {
    fields.iter().any(|f| {
        matches!(
            f.name.as_str(),
            "pid" | "process_name" | "used_gpu_memory" | "used_memory"
        )
    })
}

/// Where a compute-apps row says its process runs.
struct ProcessRow {
    uuid: Option<String>,
    bus: Option<String>,
    gpu_name: Option<String>,
    process: Process,
}

pub(crate) fn parse(text: &str) -> Result<Snapshot, ParseError> {
    let mut sections: Vec<(Option<Vec<Field>>, Vec<&str>)> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(fields) = header(line) {
            sections.push((Some(fields), Vec::new()));
        } else if let Some((_, rows)) = sections.last_mut() {
            rows.push(line);
        } else {
            sections.push((None, vec![line]));
        }
    }
    let mut snap = Snapshot::new(SourceFormat::ComputeAppsCsv);
    let mut processes = Vec::new();
    let mut saw_query_gpu = false;
    for (fields, rows) in sections {
        let fields = match fields {
            Some(fields) => fields,
            None => assume_fields(&rows, &mut snap)?,
        };
        if is_compute_apps(&fields) {
            processes.extend(rows.iter().map(|row| process_row(&fields, row)));
        } else {
            saw_query_gpu = true;
            query_gpu_rows(&fields, &rows, &mut snap);
        }
    }
    if saw_query_gpu {
        snap.source = SourceFormat::QueryGpuCsv;
    } else if processes.is_empty() {
        snap.warn("the compute-apps query lists no processes: nothing is running on the GPUs");
    }
    snap.keep_latest_readings(false, Gpu::overlay);
    if !processes.is_empty() && !saw_query_gpu {
        snap.warn(
            "`--query-compute-apps` lists processes only, so GPU memory totals are unknown; paste \
             `nvidia-smi --query-gpu=index,name,uuid,memory.total,memory.used,memory.free \
             --format=csv` as well",
        );
    }
    attach(processes, &mut snap);
    Ok(snap)
}

fn query_gpu_rows(fields: &[Field], rows: &[&str], snap: &mut Snapshot) {
    if !fields.iter().any(|f| f.name.starts_with("memory.")) {
        snap.warn(
            "the query has no memory fields; add `memory.total,memory.used,memory.free` to \
             --query-gpu",
        );
    }
    for row in rows {
        let cells: Vec<&str> = row.split(',').map(str::trim).collect();
        if cells.len() != fields.len() {
            snap.warn("some CSV rows have a different number of values than the header");
        }
        let mut gpu = Gpu::default();
        for (field, cell) in fields.iter().zip(&cells) {
            let bytes = || values::size(cell, field.unit);
            match field.name.as_str() {
                "index" => gpu.index = values::uint(cell),
                "name" | "gpu_name" => gpu.name = values::text(cell),
                "uuid" | "gpu_uuid" => gpu.uuid = values::text(cell),
                "pci.bus_id" | "gpu_bus_id" => gpu.pci_bus_id = values::text(cell),
                "memory.total" => gpu.memory.total_bytes = bytes(),
                "memory.used" => gpu.memory.used_bytes = bytes(),
                "memory.free" => gpu.memory.free_bytes = bytes(),
                "memory.reserved" => gpu.memory.reserved_bytes = bytes(),
                "utilization.gpu" => gpu.utilization_pct = values::number(cell),
                "temperature.gpu" => gpu.temperature_c = values::number(cell),
                "mig.mode.current" => gpu.mig_mode = values::text(cell),
                "timestamp" => snap.timestamp = values::text(cell),
                "driver_version" => snap.offer_driver_version(DriverKey::Driver, cell),
                "kmd_version" => snap.offer_driver_version(DriverKey::Kmd, cell),
                _ => {}
            }
        }
        snap.gpus.push(gpu);
    }
}

fn process_row(fields: &[Field], row: &str) -> ProcessRow {
    let raw: Vec<&str> = row.split(',').collect();
    // Process names are not quoted, so surplus commas belong to the name: take the fields after
    // it from the right and join what is left over back into it.
    let extra = raw.len().saturating_sub(fields.len());
    let name_at = fields.iter().position(|f| f.name == "process_name");
    let mut cells: Vec<String> = Vec::with_capacity(fields.len());
    for (i, _) in fields.iter().enumerate() {
        let cell = match name_at {
            Some(n) if i == n => raw.get(i..=i + extra).map(|parts| parts.join(",")),
            Some(n) if i > n => raw.get(i + extra).map(|s| s.to_string()),
            _ => raw.get(i).map(|s| s.to_string()),
        };
        cells.push(cell.unwrap_or_default());
    }
    let mut out = ProcessRow {
        uuid: None,
        bus: None,
        gpu_name: None,
        process: Process::default(),
    };
    for (field, cell) in fields.iter().zip(&cells) {
        match field.name.as_str() {
            "pid" => out.process.pid = values::uint(cell),
            "process_name" | "name" => out.process.name = values::text(cell),
            "used_gpu_memory" | "used_memory" => {
                out.process.used_bytes = values::size(cell, field.unit)
            }
            "gpu_uuid" | "uuid" => out.uuid = values::text(cell),
            "gpu_bus_id" | "pci.bus_id" => out.bus = values::text(cell),
            "gpu_name" => out.gpu_name = values::text(cell),
            _ => {}
        }
    }
    out
}

/// Where a compute-apps row's process belongs.
enum Home {
    /// The GPU at this position.
    Gpu(usize),
    /// Several listed GPUs fit what the row says, and nothing tells them apart.
    Ambiguous,
    /// No listed GPU fits: the row's GPU gets an entry of its own.
    Unlisted,
}

/// How many GPUs one identifier is looked up among. No machine has this many of one model, and
/// the bound keeps hostile input with thousands of same-named GPUs linear.
const MAX_SAME_ID: usize = 64;

/// The GPUs listed so far, by UUID, bus id and name, and by which of those they carry.
#[derive(Default)]
struct Lookup {
    uuid: HashMap<String, Vec<usize>>,
    bus: HashMap<String, Vec<usize>>,
    name: HashMap<String, Vec<usize>>,
    /// For each set of identifiers a GPU carries (bit 0 UUID, 1 bus id, 2 name): how many GPUs
    /// carry just that set, and the first of them.
    by_kinds: [(usize, usize); 8],
}

fn kinds(uuid: &Option<String>, bus: &Option<String>, name: &Option<String>) -> usize {
    usize::from(uuid.is_some()) | usize::from(bus.is_some()) << 1 | usize::from(name.is_some()) << 2
}

impl Lookup {
    fn add(&mut self, pos: usize, gpu: &Gpu) {
        for (map, key) in [
            (&mut self.uuid, &gpu.uuid),
            (&mut self.bus, &gpu.pci_bus_id),
            (&mut self.name, &gpu.name),
        ] {
            if let Some(key) = key {
                let list = map.entry(key.clone()).or_default();
                if list.len() < MAX_SAME_ID {
                    list.push(pos);
                }
            }
        }
        if let Some((count, first)) =
            self.by_kinds
                .get_mut(kinds(&gpu.uuid, &gpu.pci_bus_id, &gpu.name))
        {
            if *count == 0 {
                *first = pos;
            }
            *count += 1;
        }
    }

    /// The GPU `row` runs on: the only one with its UUID, else with its bus id, else with its
    /// GPU name, among GPUs whose UUID and bus id do not contradict the row's. Failing that, a
    /// GPU that has none of the identifiers the row has could still be it, so it is chosen only
    /// when it is the only GPU listed that could be.
    fn home(&self, row: &ProcessRow, gpus: &[Gpu]) -> Home {
        let differs =
            |a: &Option<String>, b: &Option<String>| matches!((a, b), (Some(a), Some(b)) if a != b);
        let fits = |g: &Gpu| !differs(&g.uuid, &row.uuid) && !differs(&g.pci_bus_id, &row.bus);
        let mut ambiguous = false;
        for (map, key) in [
            (&self.uuid, &row.uuid),
            (&self.bus, &row.bus),
            (&self.name, &row.gpu_name),
        ] {
            let Some(key) = key else { continue };
            let mut found = map
                .get(key)
                .into_iter()
                .flatten()
                .copied()
                .filter(|&pos| gpus.get(pos).is_some_and(fits));
            match (found.next(), found.next()) {
                (Some(pos), None) => return Home::Gpu(pos),
                (Some(_), Some(_)) => ambiguous = true,
                _ => {}
            }
        }
        if ambiguous {
            return Home::Ambiguous;
        }
        let row_kinds = kinds(&row.uuid, &row.bus, &row.gpu_name);
        let mut unknowable = self
            .by_kinds
            .iter()
            .enumerate()
            .filter(|&(k, &(count, _))| k & row_kinds == 0 && count > 0)
            .map(|(_, &entry)| entry);
        match (unknowable.next(), unknowable.next()) {
            (Some((1, pos)), None) => Home::Gpu(pos),
            (Some(_), _) => Home::Ambiguous,
            (None, _) => Home::Unlisted,
        }
    }
}

fn attach(rows: Vec<ProcessRow>, snap: &mut Snapshot) {
    let listed = snap.gpus.len();
    let mut lookup = Lookup::default();
    for (pos, gpu) in snap.gpus.iter().enumerate() {
        lookup.add(pos, gpu);
    }
    // How often each GPU's process has been read, and where its entry is.
    let mut seen: HashMap<(usize, u32), (usize, usize)> = HashMap::new();
    let mut most_readings = 1;
    let mut left_out = 0usize;
    for row in rows {
        if row.process.used_bytes.is_none() {
            snap.warn(values::NO_PROCESS_MEMORY);
        }
        let pos = match lookup.home(&row, &snap.gpus) {
            Home::Gpu(pos) => pos,
            Home::Ambiguous => {
                left_out += 1;
                continue;
            }
            Home::Unlisted => {
                if listed > 0 {
                    snap.warn(
                        "some processes run on a GPU that the --query-gpu rows do not list; it is \
                         listed on its own, without memory figures",
                    );
                }
                let gpu = Gpu {
                    name: row.gpu_name.clone(),
                    uuid: row.uuid.clone(),
                    pci_bus_id: row.bus.clone(),
                    ..Gpu::default()
                };
                let Some(pos) = snap.push_referenced_gpu(gpu) else {
                    continue;
                };
                if let Some(gpu) = snap.gpus.get(pos) {
                    lookup.add(pos, gpu);
                }
                pos
            }
        };
        let Some(gpu) = snap.gpus.get_mut(pos) else {
            continue;
        };
        let Some(pid) = row.process.pid else {
            gpu.processes.push(row.process);
            continue;
        };
        // The same process on the same GPU again is a later reading of it (`-l`, a second paste).
        match seen.get_mut(&(pos, pid)) {
            Some((readings, at)) => {
                *readings += 1;
                most_readings = most_readings.max(*readings);
                if let Some(earlier) = gpu.processes.get_mut(*at) {
                    *earlier = row.process;
                }
            }
            None => {
                seen.insert((pos, pid), (1, gpu.processes.len()));
                gpu.processes.push(row.process);
            }
        }
    }
    if most_readings > 1 {
        snap.warn(snapshot::repeated_readings(most_readings, "process"));
    }
    if left_out > 0 {
        snap.warn(format!(
            "{left_out} processes were left out: their rows do not say which of several GPUs \
             they run on (identical GPUs named only by model, or no GPU column); add `gpu_uuid` \
             to --query-compute-apps and `uuid` to --query-gpu"
        ));
    }
}

/// Picks the first of [`NOHEADER_ORDERS`] that every header-less row fits.
fn assume_fields(rows: &[&str], snap: &mut Snapshot) -> Result<Vec<Field>, ParseError> {
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| r.split(',').map(str::trim).collect())
        .collect();
    let width = rows.first().map_or(0, Vec::len);
    if width == 1 {
        return Err(ParseError::AmbiguousCsv {
            reason: "a single value per line without a CSV header could be used, free or total \
                     memory"
                .to_string(),
        });
    }
    for order in NOHEADER_ORDERS {
        let names: Vec<&str> = order.split(',').collect();
        if rows
            .iter()
            .all(|row| row.len() == names.len() && fits(&names, row))
        {
            let message = format!(
                "the CSV has no header, so its columns were assumed to be `{order}` (the common \
                 order that fits the values); run the query without `noheader` to be sure"
            );
            snap.warn(message);
            return Ok(names
                .into_iter()
                .map(|name| Field {
                    name: name.to_string(),
                    unit: MIB,
                })
                .collect());
        }
    }
    Err(ParseError::AmbiguousCsv {
        reason: format!(
            "{width} values per line match none of the field orders tried without a header ({})",
            NOHEADER_ORDERS.join(" | ")
        ),
    })
}

fn fits(names: &[&str], row: &[&str]) -> bool {
    let get = |field: &str| {
        names
            .iter()
            .position(|n| *n == field)
            .and_then(|i| row.get(i))
            .and_then(|c| values::size(c, MIB))
    };
    let shapes_fit = names.iter().zip(row).all(|(name, cell)| {
        let placeholder = values::is_placeholder(cell);
        match *name {
            n if n.starts_with("memory.") => placeholder || values::size(cell, MIB).is_some(),
            "index" => values::uint(cell).is_some_and(|i| i < 1024),
            "name" | "compute_mode" => {
                !placeholder
                    && values::number(cell).is_none()
                    && !cell.starts_with("GPU-")
                    && cell.chars().any(char::is_alphabetic)
            }
            "uuid" => cell.starts_with("GPU-") || cell.starts_with("MIG-"),
            "pstate" => {
                placeholder
                    || cell
                        .strip_prefix('P')
                        .is_some_and(|n| values::uint(n).is_some())
            }
            _ => placeholder || values::number(cell).is_some(),
        }
    });
    let (total, used, free) = (get("memory.total"), get("memory.used"), get("memory.free"));
    let consistent = match (total, used, free) {
        // nvidia-smi rounds each figure to MiB, so used + free may exceed total by a little.
        (Some(t), Some(u), Some(f)) => {
            u <= t && f <= t && u.saturating_add(f) <= t.saturating_add(2 * MIB)
        }
        (Some(t), Some(u), None) => u <= t,
        _ => true,
    };
    shapes_fit && consistent
}
