//! `vramfit.measurement/1`: what `vramfit run` measured while a command ran. The CLI writes it
//! as [`Measurement`]; a comparison with an estimate (the page's "Measured vs predicted") reads
//! only its peaks, as [`MeasuredPeaks`]. The measurement kit (calibration/measure) adds a
//! `workload` object to the document of each scenario it ran: the scenario, torch's own peaks
//! and where it ran, read as [`WorkloadMeasurement`].
//!
//! A figure that could not be known is `null`, never 0: a GPU unreadable in a sample, a process
//! list that could not be read, a run that ended before its first sample. Older documents that
//! wrote numbers in these fields read the same as before. Fields added later (`actions`, each
//! GPU's `growth`) read as empty in documents written before them.

use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::growth::Growth;

/// The schema id carried in every measurement's `schema` field.
pub const MEASUREMENT_SCHEMA: &str = "vramfit.measurement/1";

/// What `vramfit run` measured. Field names are a stable interface: the web page reads them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Always [`MEASUREMENT_SCHEMA`].
    pub schema: String,
    pub command: Vec<String>,
    pub host: Option<String>,
    pub driver_version: Option<String>,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub ended_at: String,
    pub duration_ms: u64,
    pub interval_ms: u64,
    /// How `used_bytes` figures were obtained.
    pub accounting: Accounting,
    pub gpus: Vec<MeasuredGpu>,
    /// The largest total over the measured GPUs in any one sample in which every measured GPU's
    /// figure was known; `None` when no sample had them all.
    pub peak_used_bytes: Option<u64>,
    pub peak_at: Option<String>,
    /// Each of the command's processes seen on a GPU, with its own peak (per-process
    /// accounting only).
    pub processes: Vec<ProcessPeak>,
    pub samples_taken: u64,
    /// Every `sample_stride`-th sample is kept in `samples`; long runs are thinned so the
    /// document stays small, while the peaks above still cover every sample.
    pub sample_stride: u64,
    pub samples: Vec<MeasurementSample>,
    pub exit: ExitInfo,
    pub warnings: Vec<String>,
    /// Every action taken when a memory level was reached, in order.
    #[serde(default)]
    pub actions: Vec<ActionTaken>,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Accounting {
    /// The sum of NVML's per-process figures over the command's process tree.
    PerProcess,
    /// The device's used memory minus its use before the command started; includes anything
    /// else that allocated on the GPU meanwhile.
    DeviceDelta,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MeasuredGpu {
    pub index: u32,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub total_bytes: Option<u64>,
    /// The device's used memory just before the command started.
    pub baseline_used_bytes: Option<u64>,
    /// The command's peak on this GPU, by [`Measurement::accounting`]; `None` when no sample gave
    /// a figure for it.
    pub peak_used_bytes: Option<u64>,
    pub peak_at: Option<String>,
    /// The device's own peak used memory, whoever held it.
    pub peak_device_used_bytes: Option<u64>,
    /// Steady growth of the device's used memory over the run's last readings, if there was any
    /// (the rule is [`crate::growth`]'s).
    #[serde(default)]
    pub growth: Option<Growth>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ProcessPeak {
    pub pid: u32,
    pub name: Option<String>,
    pub gpu: u32,
    pub peak_used_bytes: u64,
    pub peak_at: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct MeasurementSample {
    pub elapsed_ms: u64,
    pub gpus: Vec<SampleGpu>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SampleGpu {
    pub index: u32,
    /// The command's use, by [`Measurement::accounting`]; `None` where it is unknown (the GPU
    /// could not be read, its process list could not, or there was no baseline to subtract).
    pub used_bytes: Option<u64>,
    pub device_used_bytes: Option<u64>,
    /// The sum of NVML's figures for the command's processes: 0 when none of them was listed,
    /// `None` when no figure for them was available (the list could not be read, a process had
    /// no figure, or no sample of the run had any: device-delta accounting).
    pub process_tree_bytes: Option<u64>,
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// The command's exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// What `vramfit run` exits with: the code, or 128 + the signal.
    pub exit_code: i32,
}

/// The memory levels `vramfit watch` and `run` act at.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Warn,
    Critical,
}

impl Level {
    pub const ALL: [Level; 2] = [Level::Warn, Level::Critical];

    /// `warn` or `critical`, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Level::Warn => "warn",
            Level::Critical => "critical",
        }
    }
}

/// An action taken because a memory level was reached: when, on which GPU's reading, what was
/// done, and whether it could be.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ActionTaken {
    pub level: Level,
    /// RFC 3339 UTC.
    pub timestamp: String,
    pub elapsed_ms: u64,
    /// The GPU whose reading reached the level, that reading, and the level on that GPU.
    pub gpu: u32,
    pub used_bytes: u64,
    pub limit_bytes: u64,
    #[serde(flatten)]
    pub action: ActionDone,
    /// Why the action could not be carried out; `None` when it was.
    pub error: Option<String>,
}

/// What was done, tagged `"action": "signal"` or `"exec"` in JSON.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ActionDone {
    /// A signal (`SIGUSR1`) sent to the measured command's process.
    Signal { signal: String, pid: u32 },
    /// A shell command started (`sh -c`), with its process id when it started.
    Exec { command: String, pid: Option<u32> },
}

/// The part of a [`Measurement`] a comparison with an estimate reads: each GPU's peak, the
/// overall peak and the warnings. Every other field is skipped, so a reader carries no code for
/// samples, processes or exit codes, and documents with fields added later still read.
/// `Deserialize` is for [`WorkloadMeasurement`]; the page reads peaks with [`Self::from_json`].
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct MeasuredPeaks {
    pub gpus: Vec<GpuPeak>,
    pub peak_used_bytes: Option<u64>,
    pub warnings: Vec<String>,
}

/// One GPU's peak within [`MeasuredPeaks`].
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct GpuPeak {
    pub index: u32,
    pub peak_used_bytes: Option<u64>,
}

impl MeasuredPeaks {
    /// Reads the peaks from a parsed measurement, walking the JSON rather than through derived
    /// readers (which would put a reader per type into the page's wasm beside the `Value` one).
    /// A missing or mistyped field is named; `null` or a missing peak is an unknown one.
    pub fn from_json(json: &Value) -> Result<MeasuredPeaks, String> {
        let gpus = list(json, "gpus")?
            .iter()
            .map(|gpu| {
                let index = field(gpu, "index")?
                    .as_u64()
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or("a GPU's `index` is not a whole number")?;
                Ok(GpuPeak {
                    index,
                    peak_used_bytes: peak(gpu)?,
                })
            })
            .collect::<Result<_, String>>()?;
        let warnings = list(json, "warnings")?
            .iter()
            .map(|w| {
                w.as_str()
                    .map(str::to_string)
                    .ok_or("a warning is not text")
            })
            .collect::<Result<_, _>>()?;
        Ok(MeasuredPeaks {
            gpus,
            peak_used_bytes: peak(json)?,
            warnings,
        })
    }

    /// The GPU with the highest known peak: the one that runs out first, and the one a per-GPU
    /// estimate describes. `None` for a document that lists no GPU with a known peak.
    pub fn fullest_gpu(&self) -> Option<&GpuPeak> {
        self.gpus
            .iter()
            .filter(|g| g.peak_used_bytes.is_some())
            .max_by_key(|g| g.peak_used_bytes)
    }
}

/// A measurement kit document as a comparison reads it: `vramfit run`'s peaks (NVML) and the
/// kit's `workload`.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct WorkloadMeasurement {
    #[serde(flatten)]
    pub peaks: MeasuredPeaks,
    pub workload: Workload,
}

/// What the kit ran and what torch saw. The kit writes more (the model's config, the step, the
/// package versions); a comparison needs only this.
#[derive(Deserialize, Debug, Clone, PartialEq)]
pub struct Workload {
    /// The matrix row's id, also the document's file name.
    pub id: String,
    /// The scenario exactly as `vramfit estimate` read it from the model's config.json.
    pub scenario: Scenario,
    /// `cuda`; `cpu` for a test run, whose torch peaks are `None`.
    pub device: String,
    pub torch_peaks: TorchPeaks,
    /// Set when the NVML part was replayed from recorded snapshots (the kit's own tests), so its
    /// peak was not read from a GPU.
    #[serde(default)]
    pub nvml_replay: Option<String>,
}

/// `torch.cuda.max_memory_allocated()` and `max_memory_reserved()` over the measured step,
/// `None` where there was no CUDA device.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct TorchPeaks {
    pub max_memory_allocated_bytes: Option<u64>,
    pub max_memory_reserved_bytes: Option<u64>,
    /// `memory_stats()["num_alloc_retries"]`: allocations that failed, freed the cache and were
    /// tried again. With any, the reserved peak is the GPU's limit, not the step's.
    #[serde(default)]
    pub num_alloc_retries: Option<u64>,
}

impl TorchPeaks {
    /// The allocation retries behind a measured reserved peak, when there were any.
    pub fn reserved_capped_by(&self) -> Option<u64> {
        self.num_alloc_retries
            .filter(|&n| n > 0 && self.max_memory_reserved_bytes.is_some())
    }
}

fn field<'a>(object: &'a Value, key: &str) -> Result<&'a Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("missing field `{key}`"))
}

fn list<'a>(object: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    field(object, key)?
        .as_array()
        .ok_or_else(|| format!("`{key}` is not a list"))
}

/// `peak_used_bytes`: bytes, or unknown where `null` or absent.
fn peak(object: &Value) -> Result<Option<u64>, String> {
    match object.get("peak_used_bytes") {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| "`peak_used_bytes` is not a whole number of bytes".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_from_before_actions_and_growth_still_read() {
        // A vramfit.measurement/1 document as `vramfit run` wrote it before those fields.
        let old = r#"{"schema":"vramfit.measurement/1","command":["true"],"host":null,
            "driver_version":null,"started_at":"t0","ended_at":"t1","duration_ms":5,
            "interval_ms":200,"accounting":"device_delta","gpus":[{"index":0,"name":null,
            "uuid":null,"total_bytes":null,"baseline_used_bytes":null,"peak_used_bytes":null,
            "peak_at":null,"peak_device_used_bytes":null}],"peak_used_bytes":null,"peak_at":null,
            "processes":[],"samples_taken":0,"sample_stride":1,"samples":[],
            "exit":{"code":0,"signal":null,"exit_code":0},"warnings":[]}"#;
        let m: Measurement = serde_json::from_str(old).expect("reads");
        assert!(m.actions.is_empty());
        assert_eq!(m.gpus[0].growth, None);
    }

    #[test]
    fn actions_say_what_was_done_in_json() {
        let taken = ActionTaken {
            level: Level::Critical,
            timestamp: "t".into(),
            elapsed_ms: 1500,
            gpu: 1,
            used_bytes: 7,
            limit_bytes: 6,
            action: ActionDone::Signal {
                signal: "SIGUSR1".into(),
                pid: 42,
            },
            error: None,
        };
        let json = serde_json::to_value(&taken).expect("JSON");
        assert_eq!(json["level"], "critical");
        assert_eq!(json["action"], "signal");
        assert_eq!(json["signal"], "SIGUSR1");
        assert_eq!(json["pid"], 42);
        assert!(json["error"].is_null());
        let back: ActionTaken = serde_json::from_value(json).expect("reads back");
        assert_eq!(back, taken);
        let exec = ActionDone::Exec {
            command: "notify-send full".into(),
            pid: None,
        };
        let json = serde_json::to_value(&exec).expect("JSON");
        assert_eq!(json["action"], "exec");
        assert!(json["pid"].is_null());
    }
}
