//! The `vramfit.snapshot/1` schema: what every parser produces and what `vramfit probe --json` writes.
//!
//! Sizes are integer bytes and anything the source did not report is `null`, never `0`, so a
//! consumer can tell "no memory in use" from "the tool could not say".

use serde::{Deserialize, Serialize};

/// The schema id carried in every snapshot's `schema` field.
pub const SCHEMA: &str = "vramfit.snapshot/1";

/// Which kind of text a snapshot was read from.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "snake_case")]
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
    /// The repr/snapshot text that nvitop's Python API prints.
    NvitopSnapshot,
    /// `nvidia-smi --version`: versions only, never any GPU.
    Version,
    /// A `vramfit.snapshot/1` JSON document, as `vramfit probe --json` writes it.
    #[default]
    VramfitProbe,
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

    /// Adds a warning once. Past [`MAX_WARNINGS`] the rest are dropped with a note, which keeps
    /// the duplicate check cheap on hostile input with thousands of distinct problems.
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
}

impl Gpu {
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
