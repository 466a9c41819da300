//! The seam between the GPU commands and the GPU: the [`GpuSource`] trait they read through, and
//! [`RecordedSource`], which replays `vramfit.snapshot/1` documents so that everything above
//! NVML (formatting, thresholds, peaks, logs, `run`'s accounting) is tested without a GPU.

use std::path::Path;

use vramfit_smi::{Memory, Snapshot, SCHEMA};

use super::error::GpuError;

/// One GPU's memory at one instant, with the per-process figures `run` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSample {
    pub index: u32,
    pub memory: Memory,
    pub processes: Vec<ProcessUsage>,
    /// Why the process list (or part of it, with MIG) could not be read: `processes` is then
    /// incomplete, and a sum over it is not the command's use.
    pub process_error: Option<String>,
}

/// A process holding memory on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUsage {
    pub pid: u32,
    /// `None` where the driver cannot attribute memory to processes (WDDM, some vGPU setups).
    pub used_bytes: Option<u64>,
}

/// What gpustat's JSON has that a `vramfit.snapshot/1` document does not carry, in gpustat's
/// units (whole watts, percent). Read live only: a replay has none of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpustatExtras {
    pub power_draw_w: Option<u32>,
    pub power_limit_w: Option<u32>,
    pub fan_speed_pct: Option<u32>,
    pub encoder_pct: Option<u32>,
    pub decoder_pct: Option<u32>,
}

/// Where the GPU commands get their figures.
pub trait GpuSource {
    /// Everything about every GPU, for `probe` and to learn the GPU list before sampling.
    fn snapshot(&mut self) -> Result<Snapshot, GpuError>;

    /// The memory of each GPU in `gpus`, in that order; a GPU that cannot be read gives an error
    /// without stopping the others.
    fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)>;

    /// Power, fan and codec figures for `probe --gpustat`; unknown (`None`) unless read live.
    fn gpustat_extras(&mut self, _index: u32) -> GpustatExtras {
        GpustatExtras::default()
    }
}

/// Replays recorded snapshots: `snapshot` shows the current frame, each `sample` reads the
/// current frame and moves to the next, and the last frame repeats for ever.
///
/// A GPU present in one frame and missing from a later one reads as lost, which is how the
/// tests exercise a GPU falling off the bus mid-watch.
#[derive(Debug, Clone)]
pub struct RecordedSource {
    frames: Vec<Snapshot>,
    next: usize,
}

impl RecordedSource {
    pub fn new(frames: Vec<Snapshot>) -> Result<RecordedSource, GpuError> {
        if frames.is_empty() {
            return Err(GpuError::Replay(
                "the replay has no snapshot in it".to_string(),
            ));
        }
        if let Some(other) = frames.iter().find(|f| f.schema != SCHEMA) {
            return Err(GpuError::Replay(format!(
                "a frame has schema \"{}\", expected \"{SCHEMA}\"",
                other.schema
            )));
        }
        Ok(RecordedSource { frames, next: 0 })
    }

    /// Reads one snapshot document, or a JSON array of them played in order.
    pub fn from_json(text: &str) -> Result<RecordedSource, GpuError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| GpuError::Replay(format!("the replay is not JSON: {e}")))?;
        let frames = match value {
            serde_json::Value::Array(items) => items
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<Vec<Snapshot>, _>>(),
            single => serde_json::from_value(single).map(|s| vec![s]),
        }
        .map_err(|e| GpuError::Replay(format!("a frame is not a {SCHEMA} snapshot: {e}")))?;
        RecordedSource::new(frames)
    }

    /// Reads a replay file. Every frame gets the warning [`replay_warning`] first in its list, so
    /// nothing printed or written from it (probe's table and JSON, run's measurement, watch's
    /// stderr) passes for a reading of a real GPU.
    pub fn load(path: &Path) -> Result<RecordedSource, GpuError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| GpuError::Replay(format!("{}: {e}", path.display())))?;
        let mut source = RecordedSource::from_json(&text)?;
        let warning = replay_warning(path);
        for frame in &mut source.frames {
            frame.warnings.retain(|w| *w != warning);
            frame.warnings.insert(0, warning.clone());
        }
        Ok(source)
    }

    fn current(&self) -> &Snapshot {
        &self.frames[self.next.min(self.frames.len() - 1)]
    }
}

impl GpuSource for RecordedSource {
    fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
        Ok(self.current().clone())
    }

    fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
        let frame = self.current();
        let results = gpus
            .iter()
            .map(|&index| {
                let sample = frame
                    .gpus
                    .iter()
                    .find(|g| g.index == Some(index))
                    .map(|g| DeviceSample {
                        index,
                        memory: g.memory,
                        processes: g
                            .processes
                            .iter()
                            .filter_map(|p| {
                                Some(ProcessUsage {
                                    pid: p.pid?,
                                    used_bytes: p.used_bytes,
                                })
                            })
                            .collect(),
                        process_error: None,
                    })
                    .ok_or_else(|| GpuError::GpuLost(format!("GPU {index}")));
                (index, sample)
            })
            .collect();
        self.next = (self.next + 1).min(self.frames.len() - 1);
        results
    }
}

/// The samples of a source that reads memory only as a whole snapshot, from a command that
/// reports no memory per process (`no_processes` says so): each GPU's memory from one `snapshot`
/// read, or that read's error for every GPU.
pub fn sample_snapshot(
    snapshot: Result<Snapshot, GpuError>,
    gpus: &[u32],
    no_processes: &str,
) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
    gpus.iter()
        .map(|&index| {
            let sample = snapshot.as_ref().map_err(Clone::clone).and_then(|snap| {
                let gpu = snap.gpus.iter().find(|g| g.index == Some(index));
                let gpu = gpu.ok_or(GpuError::NoSuchGpu {
                    index,
                    count: snap.gpus.len(),
                })?;
                Ok(DeviceSample {
                    index,
                    memory: gpu.memory,
                    processes: Vec::new(),
                    process_error: Some(no_processes.to_string()),
                })
            });
            (index, sample)
        })
        .collect()
}

/// `replayed from FILE, not read from a GPU`.
pub fn replay_warning(path: &Path) -> String {
    format!("replayed from {}, not read from a GPU", path.display())
}

/// The GPU indices a snapshot lists, in order.
pub fn indices(snapshot: &Snapshot) -> Vec<u32> {
    snapshot.gpus.iter().filter_map(|g| g.index).collect()
}

/// `requested` checked against the GPUs that exist, or every GPU when nothing was requested.
pub fn select_gpus(snapshot: &Snapshot, requested: &[u32]) -> Result<Vec<u32>, GpuError> {
    let present = indices(snapshot);
    if present.is_empty() {
        return Err(GpuError::NoGpu);
    }
    if requested.is_empty() {
        return Ok(present);
    }
    let mut chosen = Vec::new();
    for &index in requested {
        if !present.contains(&index) {
            return Err(GpuError::NoSuchGpu {
                index,
                count: present.len(),
            });
        }
        if !chosen.contains(&index) {
            chosen.push(index);
        }
    }
    Ok(chosen)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const H100: &str = include_str!("../../tests/fixtures/gpu/replay-h100-probe.json");
    pub(crate) const MIG: &str = include_str!("../../tests/fixtures/gpu/replay-h100-mig.json");
    pub(crate) const CLIMB: &str =
        include_str!("../../tests/fixtures/gpu/replay-watch-climb-gpu1-lost.json");

    #[test]
    fn fixtures_load() {
        for text in [H100, MIG, CLIMB] {
            let mut source = RecordedSource::from_json(text).expect("fixture loads");
            let snap = source.snapshot().expect("a frame");
            assert!(!snap.gpus.is_empty());
            // The fixtures are also valid input for the smi parser, as a probe's output is.
            let first = serde_json::to_string(&snap).expect("serialises");
            assert_eq!(vramfit_smi::parse(&first), Ok(snap));
        }
    }

    #[test]
    fn replayed_frames_say_so() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gpu/replay-watch-climb-gpu1-lost.json"
        ));
        let mut source = RecordedSource::load(path).expect("fixture loads");
        let expected = format!("replayed from {}, not read from a GPU", path.display());
        for _ in 0..source.frames.len() + 1 {
            assert_eq!(
                source.snapshot().expect("frame").warnings,
                std::slice::from_ref(&expected)
            );
            source.sample(&[0]);
        }
        // The hand-made fixtures claim no tool wrote them.
        for text in [H100, MIG, CLIMB] {
            assert!(!text.contains("\"source\""), "a fixture names a source");
        }
    }

    #[test]
    fn frames_advance_and_the_last_repeats() {
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture loads");
        let frames = source.frames.len();
        let mut gpu1 = Vec::new();
        for _ in 0..frames + 2 {
            let results = source.sample(&[0, 1]);
            assert_eq!(results[0].0, 0);
            assert!(results[0].1.is_ok());
            gpu1.push(results[1].1.is_ok());
        }
        assert!(gpu1[0], "GPU 1 starts present");
        assert!(!gpu1[frames + 1], "GPU 1 ends lost");
        let lost = source.sample(&[1]).remove(0).1;
        assert_eq!(lost, Err(GpuError::GpuLost("GPU 1".into())));
    }

    #[test]
    fn samples_carry_processes() {
        let mut source = RecordedSource::from_json(H100).expect("fixture loads");
        let sample = source.sample(&[0]).remove(0).1.expect("GPU 0");
        assert_eq!(sample.processes.len(), 3);
        assert!(sample.processes.iter().all(|p| p.used_bytes.is_some()));
        assert_eq!(
            sample.memory.total_bytes,
            Some(81559 * super::super::units::MIB)
        );
    }

    #[test]
    fn bad_replays_are_refused() {
        assert!(matches!(
            RecordedSource::from_json("[]"),
            Err(GpuError::Replay(_))
        ));
        assert!(matches!(
            RecordedSource::from_json("nope"),
            Err(GpuError::Replay(_))
        ));
        let other = r#"{"schema": "vramfit.snapshot/9"}"#;
        let err = RecordedSource::from_json(other).unwrap_err();
        assert!(err.to_string().contains("vramfit.snapshot/9"), "{err}");
        let missing = RecordedSource::load(Path::new("/nonexistent/replay.json")).unwrap_err();
        assert_eq!(missing.exit_code(), super::super::error::EXIT_USAGE);
    }

    #[test]
    fn gpu_selection() {
        let snap = RecordedSource::from_json(CLIMB)
            .and_then(|mut s| s.snapshot())
            .expect("frame");
        assert_eq!(select_gpus(&snap, &[]), Ok(vec![0, 1]));
        assert_eq!(select_gpus(&snap, &[1, 1, 0]), Ok(vec![1, 0]));
        assert_eq!(
            select_gpus(&snap, &[4]),
            Err(GpuError::NoSuchGpu { index: 4, count: 2 })
        );
        let empty = Snapshot::default();
        assert_eq!(select_gpus(&empty, &[]), Err(GpuError::NoGpu));
        assert_eq!(select_gpus(&empty, &[0]), Err(GpuError::NoGpu));
    }
}
