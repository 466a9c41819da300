//! The default `nvidia-smi` table view, in every layout since driver ~390.
//!
//! Column widths changed at 450, 530, 550, 580 and 610, so nothing here relies on offsets: rows
//! are split on `|`, each box is recognised by its header, and a GPU's 2 or 3 rows are told apart
//! by what their cells contain.

use crate::snapshot::{same_gpu, DriverKey, Gpu, MigDevice, Process, Snapshot, SourceFormat};
use crate::values::{self, MIB};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Preamble,
    GpuHeader,
    Gpus,
    MigHeader,
    Mig,
    ProcessHeader,
    Processes,
}

/// Whether `text` holds an nvidia-smi table (any box of it).
pub(crate) fn detect(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('|')
            && (l.contains("NVIDIA-SMI ")
                || l.contains("Memory-Usage")
                || l.contains("Processes:")
                || l.contains("MIG devices:"))
    })
}

pub(crate) fn parse(text: &str) -> Snapshot {
    let mut p = Parser {
        snap: Snapshot::new(SourceFormat::Table),
        section: Section::Preamble,
        block: Vec::new(),
        seen_box: false,
        previous: Vec::new(),
    };
    for line in text.lines() {
        p.line(line.trim());
    }
    p.flush();
    p.finish()
}

struct Parser<'a> {
    snap: Snapshot,
    section: Section,
    /// Rows (as cells) of the GPU or MIG entry being read, up to the next separator.
    block: Vec<Vec<&'a str>>,
    seen_box: bool,
    /// The GPUs of the table before the current one, carrying the peaks of all earlier tables.
    previous: Vec<Gpu>,
}

impl<'a> Parser<'a> {
    fn line(&mut self, line: &'a str) {
        if line.is_empty() {
            self.flush();
            return;
        }
        if !line.starts_with('|') && !line.starts_with('+') {
            if !self.seen_box && self.snap.timestamp.is_none() && looks_like_date(line) {
                self.snap.timestamp = Some(line.to_string());
            }
            return;
        }
        self.seen_box = true;
        if is_separator(line) {
            self.flush();
            if line.contains('=') {
                self.section = match self.section {
                    Section::GpuHeader => Section::Gpus,
                    Section::MigHeader => Section::Mig,
                    Section::ProcessHeader => Section::Processes,
                    other => other,
                };
            }
            return;
        }
        if line.contains("NVIDIA-SMI ") && line.contains("Version") {
            self.flush();
            self.version_line(line);
            self.section = Section::GpuHeader;
            return;
        }
        if line.contains("MIG devices:") {
            self.flush();
            self.section = Section::MigHeader;
            return;
        }
        if line.contains("Processes:") {
            self.flush();
            self.section = Section::ProcessHeader;
            return;
        }
        if line.contains("Bus-Id") && line.contains("Disp") {
            self.flush();
            self.section = Section::GpuHeader;
            return;
        }
        match self.section {
            Section::Gpus | Section::Mig => self.block.push(cells(line)),
            Section::Processes => self.process_row(line),
            _ => {}
        }
    }

    fn version_line(&mut self, line: &str) {
        if !self.snap.gpus.is_empty() {
            // `watch nvidia-smi` pastes repeat the whole table; the last one is the latest, and
            // the earlier ones still count towards each GPU's peak.
            let mut table = std::mem::take(&mut self.snap.gpus);
            carry_peaks(&mut table, &self.previous);
            self.previous = table;
            self.snap
                .warn("the paste holds more than one nvidia-smi table; only the last one was read");
        }
        let body = line.trim_matches('|');
        let tokens: Vec<&str> = body.split_whitespace().collect();
        let smi = tokens
            .iter()
            .position(|t| *t == "NVIDIA-SMI")
            .and_then(|i| tokens.get(i + 1))
            .copied();
        for (i, tok) in tokens.iter().enumerate() {
            if *tok != "Version:" {
                continue;
            }
            let text = tokens.get(i + 1).copied().unwrap_or_default();
            let before = i.checked_sub(1).and_then(|j| tokens.get(j)).copied();
            match before {
                Some("Driver") => self.snap.offer_driver_version(DriverKey::Driver, text),
                Some("KMD") => self.snap.offer_driver_version(DriverKey::Kmd, text),
                Some("CUDA") | Some("UMD") => self.snap.cuda_version = values::text(text),
                _ => {}
            }
        }
        if let (Some(smi), Some(driver)) = (smi, self.snap.driver_version.as_deref()) {
            if smi != driver {
                let message = format!(
                    "nvidia-smi {smi} reports driver {driver}; a mismatch like this usually means \
                     WSL2 or a container with its own nvidia-smi"
                );
                self.snap.warn(message);
            }
        }
    }

    fn flush(&mut self) {
        let block = std::mem::take(&mut self.block);
        if block.is_empty() {
            return;
        }
        match self.section {
            Section::Gpus => self.gpu_block(&block),
            Section::Mig => self.mig_block(&block),
            _ => {}
        }
    }

    fn gpu_block(&mut self, block: &[Vec<&str>]) {
        let mut gpu = Gpu::default();
        let mut found = false;
        for row in block {
            let c0 = row.first().copied().unwrap_or("");
            let c1 = row.get(1).copied().unwrap_or("");
            let c2 = row.get(2).copied().unwrap_or("");
            let first_c1 = c1.split_whitespace().next().unwrap_or("");
            if !found && values::is_bus_id(first_c1) {
                let tokens: Vec<&str> = c0.split_whitespace().collect();
                let Some(index) = tokens.first().and_then(|t| values::uint(t)) else {
                    continue;
                };
                found = true;
                gpu.index = Some(index);
                gpu.pci_bus_id = Some(first_c1.to_string());
                let name_end = match tokens.last() {
                    Some(last) if tokens.len() >= 3 && is_persistence(last) => tokens.len() - 1,
                    _ => tokens.len(),
                };
                gpu.name = tokens
                    .get(1..name_end)
                    .map(|t| t.join(" "))
                    .filter(|n| !n.is_empty());
            } else if c1.contains('/') || c1.contains("MiB") || c1.contains("Not Supported") {
                let (used, total) = usage_pair(c1);
                gpu.memory.used_bytes = used;
                gpu.memory.total_bytes = total;
                gpu.temperature_c = c0
                    .split_whitespace()
                    .find(|t| t.ends_with('C') && values::number(t).is_some())
                    .and_then(values::number);
                gpu.utilization_pct = c2
                    .split_whitespace()
                    .find(|t| t.ends_with('%'))
                    .and_then(values::number);
            } else if found && c0.trim().is_empty() && c1.trim().is_empty() {
                gpu.mig_mode = values::text(c2);
            }
        }
        if !found {
            return;
        }
        if let Some(name) = gpu.name.as_deref().filter(|n| n.ends_with("...")) {
            let message = format!(
                "GPU {} name \"{name}\" is truncated by the table; `nvidia-smi -L` prints it in full",
                gpu.index.unwrap_or_default()
            );
            self.snap.warn(message);
        }
        if gpu.memory.total_bytes.is_none() {
            let message = format!(
                "GPU {} reports no memory total, used or free: unified-memory GPUs (GB10, Jetson) \
                 print `Not Supported` there, their memory being the machine's (MemTotal in \
                 /proc/meminfo); any per-process figures below are still read",
                gpu.index.unwrap_or_default()
            );
            self.snap.warn(message);
        }
        self.snap.gpus.push(gpu);
    }

    fn mig_block(&mut self, block: &[Vec<&str>]) {
        let Some(row) = block.iter().find(|r| {
            let ids = r.first().map_or(0, |c| {
                c.split_whitespace()
                    .filter(|t| values::uint(t).is_some())
                    .count()
            });
            ids >= 3
        }) else {
            return;
        };
        let ids: Vec<Option<u32>> = row
            .first()
            .copied()
            .unwrap_or("")
            .split_whitespace()
            .map(values::uint)
            .collect();
        let gpu_index = ids.first().copied().flatten();
        let (used, total) = usage_pair(row.get(1).copied().unwrap_or(""));
        let mut mig = MigDevice {
            gpu_instance: ids.get(1).copied().flatten(),
            compute_instance: ids.get(2).copied().flatten(),
            mig_index: ids.get(3).copied().flatten(),
            ..MigDevice::default()
        };
        mig.memory.used_bytes = used;
        mig.memory.total_bytes = total;
        let Some(gpu) = gpu_for(&mut self.snap, gpu_index) else {
            return;
        };
        if let Some(message) = gpu.add_mig_device(mig) {
            self.snap.warn(message);
        }
    }

    fn process_row(&mut self, line: &str) {
        let Some(row) = line.get(1..) else { return };
        let row = row.strip_suffix('|').unwrap_or(row);
        let spans = token_strs(row);
        let Some(gpu_index) = spans.first().and_then(|&(_, _, t)| values::uint(t)) else {
            return;
        };
        let Some(type_at) = spans
            .iter()
            .enumerate()
            .skip(2)
            .find(|(_, &(_, _, t))| is_process_type(t))
            .map(|(i, _)| i)
        else {
            return;
        };
        let token = |i: usize| spans.get(i).map(|&(_, _, t)| t);
        let pid = token(type_at - 1).and_then(values::uint);
        let (gpu_instance, compute_instance) = if type_at >= 4 {
            (
                token(1).and_then(values::uint),
                token(2).and_then(values::uint),
            )
        } else {
            (None, None)
        };
        let name_start = spans.get(type_at).map_or(row.len(), |&(_, end, _)| end);
        let last = spans.last().filter(|_| spans.len() > type_at + 1);
        let (name_end, used_bytes) = match last {
            Some(&(start, _, t)) if t.ends_with("MiB") || values::is_placeholder(t) => {
                (start, values::size(t, MIB))
            }
            _ => (row.len(), None),
        };
        let name = row
            .get(name_start..name_end.max(name_start))
            .and_then(values::text);
        if used_bytes.is_none() {
            self.snap.warn(values::NO_PROCESS_MEMORY);
        }
        let process = Process {
            pid,
            name,
            kind: token(type_at).map(str::to_string),
            used_bytes,
            gpu_instance,
            compute_instance,
        };
        if let Some(gpu) = gpu_for(&mut self.snap, Some(gpu_index)) {
            gpu.processes.push(process);
        }
    }

    fn finish(mut self) -> Snapshot {
        carry_peaks(&mut self.snap.gpus, &self.previous);
        if self
            .snap
            .gpus
            .iter()
            .any(|g| g.memory.total_bytes.is_some())
        {
            self.snap.warn(
                "the table view shows used and total memory but not free memory; total − used \
                 overstates what can be allocated by the driver's reserve (about 350–870 MiB). \
                 For exact free memory paste `nvidia-smi --query-gpu=index,name,memory.total,\
                 memory.used,memory.free --format=csv` or `nvidia-smi -q`",
            );
        }
        self.snap
    }
}

/// Folds the previous table's readings into the same GPUs of this one (found by index, which the
/// table view prints), so `watch nvidia-smi` pastes keep each GPU's peak.
fn carry_peaks(table: &mut [Gpu], previous: &[Gpu]) {
    let by_index: HashMap<u32, &Gpu> = previous
        .iter()
        .filter_map(|g| Some((g.index?, g)))
        .collect();
    for gpu in table {
        let earlier = gpu.index.and_then(|i| by_index.get(&i));
        if let Some(earlier) = earlier.filter(|e| same_gpu(e, gpu, true)) {
            gpu.remember_peak(earlier);
        }
    }
}

/// The GPU with `index`, created when a MIG or process row names a GPU whose row was not pasted.
fn gpu_for(snap: &mut Snapshot, index: Option<u32>) -> Option<&mut Gpu> {
    let make = || Gpu {
        index,
        ..Gpu::default()
    };
    let (pos, created) = snap.gpu_entry(|g| g.index == index, make)?;
    if created {
        let message = format!(
            "the paste lists MIG devices or processes for GPU {} but not its row; its memory is \
             unknown",
            index.map_or_else(|| "?".to_string(), |i| i.to_string())
        );
        snap.warn(message);
    }
    snap.gpus.get_mut(pos)
}

/// `"  797MiB /   8192MiB "` → (used, total).
fn usage_pair(cell: &str) -> (Option<u64>, Option<u64>) {
    let mut parts = cell.split('/');
    let used = parts.next().and_then(|p| values::size(p, MIB));
    let total = parts.next().and_then(|p| values::size(p, MIB));
    (used, total)
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').collect()
}

fn token_strs(s: &str) -> Vec<(usize, usize, &str)> {
    values::token_spans(s)
        .into_iter()
        .filter_map(|(a, b)| s.get(a..b).map(|t| (a, b, t)))
        .collect()
}

fn is_separator(line: &str) -> bool {
    line.chars().all(|c| matches!(c, '+' | '-' | '=' | '|'))
}

fn is_persistence(token: &str) -> bool {
    matches!(token, "On" | "Off" | "WDDM" | "TCC" | "MCDM" | "N/A")
}

fn is_process_type(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 5
        && !token.starts_with('+')
        && !token.ends_with('+')
        && token.chars().all(|c| matches!(c, 'C' | 'G' | 'M' | '+'))
}

fn looks_like_date(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    matches!(first, "Mon" | "Tue" | "Wed" | "Thu" | "Fri" | "Sat" | "Sun") && line.contains(':')
}
