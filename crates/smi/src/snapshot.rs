//! The `vramfit.snapshot/1` schema: what every parser produces and what `vramfit probe --json` writes.
//!
//! Sizes are integer bytes and anything the source did not report is `null`, never `0`, so a
//! consumer can tell "no memory in use" from "the tool could not say".

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The schema id carried in every snapshot's `schema` field.
pub const SCHEMA: &str = "vramfit.snapshot/1";

/// Which kind of text a snapshot was read from. In JSON it is [`SourceFormat::wire_name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SourceFormat {
    /// The default `nvidia-smi` table view.
    Table,
    /// `nvidia-smi --query-gpu=… --format=csv`.
    QueryGpuCsv,
    /// `nvidia-smi --query-compute-apps=… --format=csv`.
    ComputeAppsCsv,
    /// `nvidia-smi -q`.
    QueryText,
    /// `nvidia-smi -q -x`.
    Xml,
    /// `nvidia-smi -L`.
    List,
    /// `gpustat --json`.
    GpustatJson,
    /// `amd-smi static --json` and `amd-smi metric --json`.
    AmdSmiJson,
    /// amd-smi's text (`static`, `metric`, `list`), `--csv`, `monitor` and default (no command)
    /// views.
    AmdSmi,
    /// `rocm-smi --showmeminfo vram`, as text, `--csv` or `--json`.
    RocmSmi,
    /// macOS's `sysctl hw.memsize iogpu.wired_limit_mb` and `system_profiler
    /// SPDisplaysDataType` (text or `-json`).
    MacOs,
    /// llama.cpp's `--list-devices`.
    LlamaDevices,
    /// The repr/snapshot text that nvitop's Python API prints.
    NvitopSnapshot,
    /// `nvidia-smi --version`: versions only, never any GPU.
    Version,
    /// A `vramfit.snapshot/1` JSON document, as `vramfit probe --json` writes it.
    #[default]
    VramfitProbe,
}

impl SourceFormat {
    pub const ALL: [SourceFormat; 15] = [
        SourceFormat::Table,
        SourceFormat::QueryGpuCsv,
        SourceFormat::ComputeAppsCsv,
        SourceFormat::QueryText,
        SourceFormat::Xml,
        SourceFormat::List,
        SourceFormat::GpustatJson,
        SourceFormat::AmdSmiJson,
        SourceFormat::AmdSmi,
        SourceFormat::RocmSmi,
        SourceFormat::MacOs,
        SourceFormat::LlamaDevices,
        SourceFormat::NvitopSnapshot,
        SourceFormat::Version,
        SourceFormat::VramfitProbe,
    ];

    /// The names a snapshot's `source` field holds, in [`SourceFormat::ALL`]'s order.
    pub const WIRE_NAMES: [&'static str; 15] = [
        "table",
        "query_gpu_csv",
        "compute_apps_csv",
        "query_text",
        "xml",
        "list",
        "gpustat_json",
        "amd_smi_json",
        "amd_smi",
        "rocm_smi",
        "macos",
        "llama_devices",
        "nvitop_snapshot",
        "version",
        "vramfit_probe",
    ];

    /// The name a snapshot's `source` field holds.
    pub fn wire_name(self) -> &'static str {
        SourceFormat::WIRE_NAMES[self as usize]
    }

    pub fn from_wire(name: &str) -> Option<SourceFormat> {
        SourceFormat::ALL
            .into_iter()
            .find(|f| f.wire_name() == name)
    }
}

impl Serialize for SourceFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for SourceFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        SourceFormat::from_wire(&name)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, &SourceFormat::WIRE_NAMES))
    }
}

impl std::fmt::Display for SourceFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SourceFormat::Table => "the nvidia-smi table view",
            SourceFormat::QueryGpuCsv => "nvidia-smi --query-gpu CSV",
            SourceFormat::ComputeAppsCsv => "nvidia-smi --query-compute-apps CSV",
            SourceFormat::QueryText => "nvidia-smi -q",
            SourceFormat::Xml => "nvidia-smi -q -x",
            SourceFormat::List => "nvidia-smi -L",
            SourceFormat::GpustatJson => "gpustat --json",
            SourceFormat::AmdSmiJson => "amd-smi --json",
            SourceFormat::AmdSmi => "amd-smi (text, --csv, monitor or its default view)",
            SourceFormat::RocmSmi => "rocm-smi",
            SourceFormat::MacOs => "macOS sysctl or system_profiler",
            SourceFormat::LlamaDevices => "llama.cpp --list-devices",
            SourceFormat::NvitopSnapshot => "nvitop snapshot",
            SourceFormat::Version => "nvidia-smi --version",
            SourceFormat::VramfitProbe => "vramfit probe --json",
        })
    }
}

/// Everything one paste or one probe said about the machine's GPUs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(default)]
pub struct Snapshot {
    /// Always [`SCHEMA`].
    pub schema: String,
    pub source: SourceFormat,
    pub host: Option<String>,
    /// As the source printed it; formats differ and none carries a time zone.
    pub timestamp: Option<String>,
    /// The kernel-mode driver version (`KMD Version` from 610 on).
    pub driver_version: Option<String>,
    /// The highest CUDA version the driver supports (`CUDA UMD Version` from 610 on).
    pub cuda_version: Option<String>,
    pub gpus: Vec<Gpu>,
    /// What the parser had to guess or could not read, in words a user can act on.
    pub warnings: Vec<String>,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot::new(SourceFormat::default())
    }
}

/// The key a driver version was printed under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DriverKey {
    /// `Driver Version`, `driver_version`: the only key before 610, deprecated from 610 on.
    Driver,
    /// `KMD Version`, `kmd_version`: the kernel-mode driver, from 610 on.
    Kmd,
}

impl Snapshot {
    /// An empty snapshot for `source`.
    pub fn new(source: SourceFormat) -> Self {
        Snapshot {
            schema: SCHEMA.to_string(),
            source,
            host: None,
            timestamp: None,
            driver_version: None,
            cuda_version: None,
            gpus: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// `-q` and XML state how many GPUs are attached; a paste that lists fewer was cut short or
    /// narrowed with `-i`, so the GPU indices may not be the driver's.
    pub(crate) fn check_attached(&mut self, attached: Option<u32>, what: &str) {
        if let Some(attached) = attached {
            if attached as usize != self.gpus.len() {
                let message = format!(
                    "the {what} says {attached} GPUs are attached but lists {}; was it cut short or \
                     narrowed with `-i`?",
                    self.gpus.len()
                );
                self.warn(message);
            }
        }
    }

    /// Records a driver version read under `key`: the one rule for every format. From driver 610
    /// on, nvidia-smi prints the kernel-mode driver's version as `KMD Version` and keeps `Driver
    /// Version` only as a deprecated duplicate or a note, so a KMD version beats a driver version
    /// whichever comes first, and text that is not a version (610's notes) is never one.
    pub(crate) fn offer_driver_version(&mut self, key: DriverKey, text: &str) {
        let Some(version) = crate::values::version(text) else {
            return;
        };
        match key {
            DriverKey::Kmd => self.driver_version = Some(version),
            DriverKey::Driver if self.driver_version.is_none() => {
                self.driver_version = Some(version)
            }
            DriverKey::Driver => {}
        }
    }

    /// Adds a warning once. Past [`MAX_WARNINGS`] the rest are dropped with a note, which keeps
    /// the duplicate check cheap on hostile input with thousands of distinct problems.
    pub(crate) fn warn(&mut self, message: impl Into<String>) {
        const OMITTED: &str = "further warnings were omitted";
        if self.warnings.len() >= MAX_WARNINGS {
            if self.warnings.last().map(String::as_str) != Some(OMITTED) {
                self.warnings.push(OMITTED.to_string());
            }
            return;
        }
        let message = message.into();
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }

    /// The position of the first GPU that `matches`, else of a new one from `make`, with whether
    /// it is new. Past [`MAX_LOOKUP_GPUS`] no GPU is added and `None` comes back: each lookup
    /// scans the list, and no real machine comes near that many, so only hostile input is cut
    /// short.
    pub(crate) fn gpu_entry(
        &mut self,
        matches: impl Fn(&Gpu) -> bool,
        make: impl FnOnce() -> Gpu,
    ) -> Option<(usize, bool)> {
        if let Some(pos) = self.gpus.iter().position(matches) {
            return Some((pos, false));
        }
        self.push_referenced_gpu(make()).map(|pos| (pos, true))
    }

    /// Appends a GPU that a process or MIG row refers to, and returns its position; past
    /// [`MAX_LOOKUP_GPUS`] it is dropped with a warning and `None` comes back.
    pub(crate) fn push_referenced_gpu(&mut self, gpu: Gpu) -> Option<usize> {
        if self.gpus.len() >= MAX_LOOKUP_GPUS {
            self.warn(format!(
                "more than {MAX_LOOKUP_GPUS} GPUs are referenced; the rest were ignored"
            ));
            return None;
        }
        self.gpus.push(gpu);
        Some(self.gpus.len() - 1)
    }

    /// Folds repeated readings of the same GPU into one entry, for output printed again and again
    /// (`nvidia-smi -l`, `-q -l`, `--query-gpu … -l`) or pasted twice. `update` brings a kept
    /// entry up to date with a later reading of its GPU; entries keep the place of their first
    /// reading. Where `positional_index` is set the parser numbered GPUs in the order listed
    /// (`-q`, XML), so the index says nothing about identity, and the GPUs are renumbered after a
    /// fold.
    ///
    /// Two entries are the same GPU when every identifier both have (UUID, PCI bus id, and the
    /// index unless positional) agrees and there is at least one: masked captures print the same
    /// all-zero UUID for every GPU, and their bus ids still tell them apart.
    pub(crate) fn keep_latest_readings(
        &mut self,
        positional_index: bool,
        update: impl Fn(&mut Gpu, Gpu),
    ) {
        if self.gpus.len() < 2 {
            return;
        }
        let compare_index = !positional_index;
        let mut kept: Vec<Gpu> = Vec::with_capacity(self.gpus.len());
        let mut readings: Vec<usize> = Vec::with_capacity(self.gpus.len());
        // The first kept entry with each identifier, so the fold stays linear on hostile input.
        let mut by_uuid: HashMap<String, usize> = HashMap::new();
        let mut by_bus: HashMap<String, usize> = HashMap::new();
        let mut by_index: HashMap<u32, usize> = HashMap::new();
        for gpu in std::mem::take(&mut self.gpus) {
            let candidates = [
                gpu.uuid.as_ref().and_then(|u| by_uuid.get(u)),
                gpu.pci_bus_id.as_ref().and_then(|b| by_bus.get(b)),
                gpu.index
                    .filter(|_| compare_index)
                    .and_then(|i| by_index.get(&i)),
            ];
            let same = candidates.into_iter().flatten().copied().find(|&pos| {
                kept.get(pos)
                    .is_some_and(|k| same_gpu(k, &gpu, compare_index))
            });
            let pos = same.unwrap_or(kept.len());
            if let Some(uuid) = &gpu.uuid {
                by_uuid.entry(uuid.clone()).or_insert(pos);
            }
            if let Some(bus) = &gpu.pci_bus_id {
                by_bus.entry(bus.clone()).or_insert(pos);
            }
            if let Some(index) = gpu.index.filter(|_| compare_index) {
                by_index.entry(index).or_insert(pos);
            }
            match (kept.get_mut(pos), readings.get_mut(pos)) {
                (Some(earlier), Some(count)) => {
                    let before = earlier.clone();
                    update(earlier, gpu);
                    earlier.remember_peak(&before);
                    *count += 1;
                }
                _ => {
                    kept.push(gpu);
                    readings.push(1);
                }
            }
        }
        self.gpus = kept;
        let most = readings.iter().copied().max().unwrap_or(0);
        if most > 1 {
            if positional_index {
                for (pos, gpu) in self.gpus.iter_mut().enumerate() {
                    gpu.index = u32::try_from(pos).ok();
                }
            }
            self.warn(repeated_readings(most, "GPU"));
        }
    }
}

/// The warning for a paste that holds `readings` readings of the same GPUs or processes.
pub(crate) fn repeated_readings(readings: usize, what: &str) -> String {
    format!(
        "the paste holds {readings} readings of the same {what}s (nvidia-smi `-l`, or output \
         pasted more than once); using the last reading of each {what}"
    )
}

/// Whether `a` and `b` are readings of one GPU: every identifier both carry agrees, and they
/// share at least one.
pub(crate) fn same_gpu(a: &Gpu, b: &Gpu, compare_index: bool) -> bool {
    fn agree<T: PartialEq>(x: &Option<T>, y: &Option<T>) -> Option<bool> {
        x.as_ref().zip(y.as_ref()).map(|(x, y)| x == y)
    }
    let index = if compare_index {
        agree(&a.index, &b.index)
    } else {
        None
    };
    let verdicts = [
        agree(&a.uuid, &b.uuid),
        agree(&a.pci_bus_id, &b.pci_bus_id),
        index,
    ];
    let shared = verdicts.iter().flatten().count();
    shared > 0 && verdicts.iter().flatten().all(|&same| same)
}

/// The most warnings a snapshot collects.
const MAX_WARNINGS: usize = 64;

/// The most GPUs that process or MIG rows can create by naming them.
const MAX_LOOKUP_GPUS: usize = 256;

/// One physical GPU.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(default)]
pub struct Gpu {
    pub index: Option<u32>,
    /// As printed; the table view truncates long names with `...` and they stay that way.
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub memory: Memory,
    pub utilization_pct: Option<f64>,
    pub temperature_c: Option<f64>,
    /// `Enabled`, `Disabled`, or with a trailing `*` when a change is pending a reset.
    pub mig_mode: Option<String>,
    pub mig_devices: Vec<MigDevice>,
    pub processes: Vec<Process>,
    /// The highest `used` among several readings of this GPU in one paste (`nvidia-smi -l`
    /// during a run): the figure to compare a predicted peak with. `None` with a single reading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_used_bytes: Option<u64>,
}

impl Gpu {
    /// Folds an earlier reading of this same GPU into [`Gpu::peak_used_bytes`].
    pub(crate) fn remember_peak(&mut self, earlier: &Gpu) {
        self.peak_used_bytes = [
            earlier.peak_used_bytes,
            earlier.memory.used_bytes,
            self.peak_used_bytes,
            self.memory.used_bytes,
        ]
        .into_iter()
        .flatten()
        .max();
    }

    /// The memory that the listed processes account for: `None` when no process is listed, or
    /// when any listed process has no memory figure (Windows WDDM, WSL, a `[N/A]` cell), because
    /// a sum of the known figures alone would understate it without saying so.
    ///
    /// Even when complete this is usually less than [`Memory::used_bytes`]: driver contexts and
    /// compositors are not attributed to a process.
    pub fn used_by_processes(&self) -> Option<u64> {
        if self.processes.is_empty() {
            return None;
        }
        self.processes
            .iter()
            .try_fold(0u64, |sum, p| Some(sum.saturating_add(p.used_bytes?)))
    }

    /// Takes every value `later` has, keeping this entry's where `later` has none: the fold for
    /// CSV rows, where two `--query-gpu` commands with different fields may be pasted together.
    /// So a figure that a later reading of the same query prints as `[N/A]` keeps its earlier
    /// value.
    pub(crate) fn overlay(&mut self, later: Gpu) {
        fn take<T>(into: &mut Option<T>, value: Option<T>) {
            if value.is_some() {
                *into = value;
            }
        }
        take(&mut self.index, later.index);
        take(&mut self.name, later.name);
        take(&mut self.uuid, later.uuid);
        take(&mut self.pci_bus_id, later.pci_bus_id);
        take(&mut self.memory.total_bytes, later.memory.total_bytes);
        take(&mut self.memory.used_bytes, later.memory.used_bytes);
        take(&mut self.memory.free_bytes, later.memory.free_bytes);
        take(&mut self.memory.reserved_bytes, later.memory.reserved_bytes);
        take(&mut self.utilization_pct, later.utilization_pct);
        take(&mut self.temperature_c, later.temperature_c);
        take(&mut self.mig_mode, later.mig_mode);
        if !later.mig_devices.is_empty() {
            self.mig_devices = later.mig_devices;
        }
        if !later.processes.is_empty() {
            self.processes = later.processes;
        }
    }

    /// Appends a MIG entry unless its GPU instance is already listed: compute instances of one
    /// GPU instance repeat the same memory line, and counting each would double the memory.
    /// Returns the warning to give when an entry was folded or dropped.
    pub(crate) fn add_mig_device(&mut self, mig: MigDevice) -> Option<String> {
        // A GPU has at most 7 GPU instances; the bound keeps the duplicate scan cheap on junk.
        const MAX_MIG_DEVICES: usize = 64;
        let gpu = self
            .index
            .map_or_else(|| "?".to_string(), |i| i.to_string());
        if self.mig_devices.len() >= MAX_MIG_DEVICES {
            return Some(format!(
                "GPU {gpu} lists more than {MAX_MIG_DEVICES} MIG devices; the rest were ignored"
            ));
        }
        let repeated = mig.gpu_instance.is_some()
            && self
                .mig_devices
                .iter()
                .any(|m| m.gpu_instance == mig.gpu_instance);
        if !repeated {
            self.mig_devices.push(mig);
            return None;
        }
        Some(format!(
            "GPU {gpu} MIG GPU instance {} has several compute instances sharing one memory \
             pool; it is listed once",
            mig.gpu_instance.unwrap_or_default()
        ))
    }
}

/// Frame-buffer memory of a GPU or MIG instance, in bytes.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(default)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// The driver's own reserve, where the source reports it (`-q`, XML, CSV `memory.reserved`).
    pub reserved_bytes: Option<u64>,
}

impl Memory {
    /// Free memory: the reported value when there is one, else total − used.
    ///
    /// The fallback overstates what an allocation can get by the driver's reserve (350–870 MiB
    /// on current drivers), which is why an explicit value always wins.
    pub fn free_or_derived(&self) -> Option<u64> {
        self.free_bytes.or_else(|| {
            self.total_bytes
                .zip(self.used_bytes)
                .map(|(total, used)| total.saturating_sub(used))
        })
    }
}

/// One MIG GPU instance.
///
/// Compute instances inside one GPU instance share its memory, and nvidia-smi repeats the same
/// memory line for each of them; the parsers keep one entry per GPU instance (the first compute
/// instance's ids) so that summing entries never counts memory twice. `nvidia-smi -L` has no
/// instance ids, so there every listed MIG device is its own entry, without memory.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[serde(default)]
pub struct MigDevice {
    pub gpu_instance: Option<u32>,
    pub compute_instance: Option<u32>,
    /// The MIG device index nvidia-smi shows (`MIG Dev`, `Device N`).
    pub mig_index: Option<u32>,
    /// The profile, e.g. `3g.40gb` or `1c.3g.71gb`, where the source names it.
    pub profile: Option<String>,
    pub uuid: Option<String>,
    pub memory: Memory,
}

/// One process holding GPU memory.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[serde(default)]
pub struct Process {
    pub pid: Option<u32>,
    /// As printed; the table view left-truncates long paths with `...`.
    pub name: Option<String>,
    /// `C` (compute), `G` (graphics), `C+G`, or the MPS kinds `M`/`M+C`.
    pub kind: Option<String>,
    /// `None` where the driver cannot attribute memory (Windows WDDM, WSL).
    pub used_bytes: Option<u64>,
    pub gpu_instance: Option<u32>,
    pub compute_instance: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_format_has_its_own_wire_name() {
        for (i, format) in SourceFormat::ALL.into_iter().enumerate() {
            assert_eq!(format as usize, i);
            assert_eq!(SourceFormat::from_wire(format.wire_name()), Some(format));
        }
        assert_eq!(SourceFormat::QueryGpuCsv.wire_name(), "query_gpu_csv");
    }

    #[test]
    fn a_kmd_version_beats_a_driver_version_in_either_order() {
        for keys in [
            [
                (DriverKey::Driver, "595.71.05"),
                (DriverKey::Kmd, "610.57.04"),
            ],
            [
                (DriverKey::Kmd, "610.57.04"),
                (DriverKey::Driver, "595.71.05"),
            ],
        ] {
            let mut snap = Snapshot::new(SourceFormat::QueryText);
            for (key, text) in keys {
                snap.offer_driver_version(key, text);
            }
            assert_eq!(snap.driver_version.as_deref(), Some("610.57.04"));
        }
        let mut snap = Snapshot::new(SourceFormat::QueryText);
        snap.offer_driver_version(DriverKey::Driver, "Deprecated, see \"KMD version\" instead");
        assert_eq!(snap.driver_version, None);
        snap.offer_driver_version(DriverKey::Driver, "610.57.04 [Deprecated; will be removed]");
        assert_eq!(snap.driver_version.as_deref(), Some("610.57.04"));
    }
}
