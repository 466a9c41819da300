//! The user's own calibration: read the peak they observed (a size, nvidia-smi output, or the
//! JSON `vramfit run` writes), compare it with the estimate, and turn the difference into the
//! scenario's CUDA-context setting, so the correction travels in the URL like everything else.

use crate::estimate::Estimate;
use crate::measurement::{MeasuredPeaks, MEASUREMENT_SCHEMA};
use crate::smi::ParseError;
use crate::units::{parse_size, Bytes};
use std::fmt;

/// Why an observed peak could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeakError {
    Empty,
    /// A size of 0 was entered.
    ZeroEntered,
    /// Neither a size, nor a measurement, nor nvidia-smi output.
    NotNvidiaSmi(ParseError),
    /// nvidia-smi output without a used-memory figure (`-L`, say).
    NoUsedFigure,
    /// nvidia-smi output of an idle GPU.
    NothingInUse,
    /// A `vramfit.measurement/1` document that does not deserialize.
    AlteredMeasurement(String),
    /// A measurement in which no sample gave a figure; `why` is its first warning.
    NoMeasuredPeak {
        why: String,
    },
    /// A measurement whose command used no GPU memory.
    ZeroMeasuredPeak {
        why: String,
    },
}

impl fmt::Display for PeakError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeakError::Empty => f.write_str(
                "enter the peak you measured, or paste nvidia-smi output or vramfit run's JSON",
            ),
            PeakError::ZeroEntered => f.write_str(
                "a peak of 0 bytes cannot be compared; enter the most memory the run used",
            ),
            PeakError::NotNvidiaSmi(e) => write!(f, "{e}"),
            PeakError::NoUsedFigure => {
                f.write_str("that nvidia-smi output does not say how much memory is used")
            }
            PeakError::NothingInUse => f.write_str(
                "that nvidia-smi output shows no memory in use; paste output taken while the run was going",
            ),
            PeakError::AlteredMeasurement(e) => write!(
                f,
                "this vramfit.measurement/1 document is incomplete or altered ({e}); paste the file `vramfit run` wrote"
            ),
            PeakError::NoMeasuredPeak { why } => write!(
                f,
                "this measurement has no known peak: no sample gave a figure for the command ({why}); run it again where vramfit can read the GPU"
            ),
            PeakError::ZeroMeasuredPeak { why } => write!(
                f,
                "this measurement's peak is 0 bytes: the command used no GPU memory that vramfit saw ({why}), so there is nothing to compare the estimate with"
            ),
        }
    }
}

impl std::error::Error for PeakError {}

/// A peak someone observed for the scenario on their own machine, on one GPU: the estimate is
/// per GPU, so a multi-GPU figure is read from its fullest GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedPeak {
    pub bytes: Bytes,
    /// True when the figure is the whole device's use (nvidia-smi output), which also counts what
    /// other processes hold; false for one process's peak.
    pub includes_others: bool,
    /// Where the figure came from, for the reader: "entered", "vramfit run, GPU 1 (the fullest of 4)".
    pub source: String,
}

/// Reads an observed peak: a size (`14.2GB`, `13500MiB`, a bare number in GiB), the JSON that
/// `vramfit run` writes (`vramfit.measurement/1`), or nvidia-smi output taken during training.
pub fn read_observed_peak(text: &str) -> Result<ObservedPeak, PeakError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(PeakError::Empty);
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(trimmed) {
        if value.get("schema").and_then(|s| s.as_str()) == Some(MEASUREMENT_SCHEMA) {
            return observed_in_measurement(&value);
        }
    }
    if let Ok(bytes) = parse_size(trimmed) {
        if bytes.0 == 0 {
            return Err(PeakError::ZeroEntered);
        }
        return Ok(ObservedPeak {
            bytes,
            includes_others: false,
            source: "entered".to_string(),
        });
    }
    let snapshot = crate::smi::parse(trimmed).map_err(PeakError::NotNvidiaSmi)?;
    let gpu_count = snapshot.gpus.len();
    let (index, used) = snapshot
        .gpus
        .iter()
        .enumerate()
        .filter_map(|(position, g)| {
            let used = g.peak_used_bytes.or(g.memory.used_bytes)?;
            Some((g.index.unwrap_or(position as u32), used))
        })
        .max_by_key(|&(_, used)| used)
        .ok_or(PeakError::NoUsedFigure)?;
    if used == 0 {
        return Err(PeakError::NothingInUse);
    }
    Ok(ObservedPeak {
        bytes: Bytes(used),
        includes_others: true,
        source: if snapshot.gpus.iter().any(|g| g.peak_used_bytes.is_some()) {
            format!(
                "nvidia-smi, the highest of several readings, {}",
                which_gpu(index, gpu_count)
            )
        } else {
            format!("nvidia-smi, {}", which_gpu(index, gpu_count))
        },
    })
}

fn observed_in_measurement(json: &serde_json::Value) -> Result<ObservedPeak, PeakError> {
    let measurement = MeasuredPeaks::from_json(json).map_err(PeakError::AlteredMeasurement)?;
    let (bytes, gpu) = match measurement.fullest_gpu() {
        Some(g) => (
            g.peak_used_bytes,
            which_gpu(g.index, measurement.gpus.len()),
        ),
        None if measurement.gpus.is_empty() => {
            (measurement.peak_used_bytes, "no GPU listed".to_string())
        }
        None => (None, String::new()),
    };
    let why = || {
        measurement
            .warnings
            .first()
            .cloned()
            .unwrap_or_else(|| "it lists no warning".to_string())
    };
    let bytes = match bytes {
        None => return Err(PeakError::NoMeasuredPeak { why: why() }),
        Some(0) => return Err(PeakError::ZeroMeasuredPeak { why: why() }),
        Some(bytes) => bytes,
    };
    Ok(ObservedPeak {
        bytes: Bytes(bytes),
        includes_others: false,
        source: format!("vramfit run, {gpu}"),
    })
}

fn which_gpu(index: u32, count: usize) -> String {
    if count > 1 {
        format!("GPU {index}, the fullest of {count}")
    } else {
        format!("GPU {index}")
    }
}

/// How far the estimate is from an observed peak, and the CUDA-context setting that would make
/// this user's later estimates match their machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Correction {
    /// The estimate on the observed figure's footing (plus in-use memory for device-wide figures).
    pub predicted: Bytes,
    pub observed: Bytes,
    /// (predicted − observed) / observed × 100.
    pub error_pct: f64,
    pub corrected_context: Bytes,
}

pub fn correction(
    estimate: &Estimate,
    reserved: Bytes,
    context: Bytes,
    peak: ObservedPeak,
) -> Correction {
    let predicted = if peak.includes_others {
        estimate.total_bytes.saturating_add(reserved)
    } else {
        estimate.total_bytes
    };
    let observed = peak.bytes;
    let difference = observed.as_f64() - predicted.as_f64();
    Correction {
        predicted,
        observed,
        error_pct: if observed.0 == 0 {
            f64::NAN
        } else {
            -difference / observed.as_f64() * 100.0
        },
        corrected_context: Bytes::from_f64(context.as_f64() + difference),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::estimate;
    use crate::measurement::{Accounting, ExitInfo, MeasuredGpu, Measurement};

    #[test]
    fn observed_peaks_read_sizes_measurements_and_nvidia_smi() {
        assert_eq!(
            read_observed_peak("14.2GB").unwrap().bytes,
            Bytes(14_200_000_000)
        );
        let smi = "memory.used [MiB], memory.total [MiB]\n8192 MiB, 16376 MiB\n";
        let peak = read_observed_peak(smi).unwrap();
        assert_eq!(peak.bytes, Bytes(8192 * 1_048_576));
        assert!(peak.includes_others);
        assert_eq!(peak.source, "nvidia-smi, GPU 0");
        assert!(read_observed_peak("no idea").is_err());
        assert!(read_observed_peak("").is_err());
    }

    fn two_gpu_measurement() -> Measurement {
        let gpu = |index, peak_used_bytes| MeasuredGpu {
            index,
            name: Some("NVIDIA H100 80GB HBM3".to_string()),
            uuid: None,
            total_bytes: Some(85_520_809_984),
            baseline_used_bytes: Some(1_048_576),
            peak_used_bytes: Some(peak_used_bytes),
            peak_at: None,
            peak_device_used_bytes: None,
            growth: None,
        };
        Measurement {
            schema: MEASUREMENT_SCHEMA.to_string(),
            command: vec!["python3".to_string(), "train.py".to_string()],
            host: None,
            driver_version: None,
            started_at: "2026-11-22T07:00:00.000Z".to_string(),
            ended_at: "2026-11-22T07:01:00.000Z".to_string(),
            duration_ms: 60_000,
            interval_ms: 200,
            accounting: Accounting::PerProcess,
            gpus: vec![gpu(0, 30_000_000_000), gpu(1, 41_000_000_000)],
            peak_used_bytes: Some(71_000_000_000),
            peak_at: None,
            processes: Vec::new(),
            samples_taken: 300,
            sample_stride: 1,
            samples: Vec::new(),
            exit: ExitInfo {
                code: Some(0),
                signal: None,
                exit_code: 0,
            },
            warnings: Vec::new(),
            actions: Vec::new(),
        }
    }

    #[test]
    fn a_multi_gpu_measurement_is_read_from_its_fullest_gpu_like_the_per_gpu_estimate() {
        let json = serde_json::to_string(&two_gpu_measurement()).unwrap();
        let peak = read_observed_peak(&json).unwrap();
        assert_eq!(peak.bytes, Bytes(41_000_000_000));
        assert!(!peak.includes_others);
        assert_eq!(peak.source, "vramfit run, GPU 1, the fullest of 2");
    }

    #[test]
    fn a_measurement_without_a_known_peak_is_refused_not_read_as_0() {
        let mut m = two_gpu_measurement();
        for g in &mut m.gpus {
            g.peak_used_bytes = None;
        }
        m.peak_used_bytes = None;
        m.warnings = vec!["GPU 0: the GPU has fallen off the bus".to_string()];
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains(r#""peak_used_bytes":null"#), "{json}");
        let message = read_observed_peak(&json).unwrap_err().to_string();
        assert!(
            message.starts_with("this measurement has no known peak: "),
            "{message}"
        );
        assert!(message.contains("fallen off the bus"), "{message}");
        // With no GPU listed, the overall peak is the one read.
        m.gpus.clear();
        let json = serde_json::to_string(&m).unwrap();
        assert!(read_observed_peak(&json)
            .unwrap_err()
            .to_string()
            .contains("no known peak"));
        // One GPU unknown, another known: the known one is read.
        let mut partly = two_gpu_measurement();
        partly.gpus[1].peak_used_bytes = None;
        let peak = read_observed_peak(&serde_json::to_string(&partly).unwrap()).unwrap();
        assert_eq!(peak.bytes, Bytes(30_000_000_000));
    }

    #[test]
    fn a_measured_peak_of_0_is_refused_rather_than_giving_nan() {
        let mut m = two_gpu_measurement();
        for g in &mut m.gpus {
            g.peak_used_bytes = Some(0);
        }
        let message = read_observed_peak(&serde_json::to_string(&m).unwrap())
            .unwrap_err()
            .to_string();
        assert!(message.contains("peak is 0 bytes"), "{message}");
    }

    #[test]
    fn older_measurements_with_numbers_still_read() {
        let mut value = serde_json::to_value(two_gpu_measurement()).unwrap();
        // As written before the fields could be null: plain numbers everywhere.
        value["gpus"][0]["peak_used_bytes"] = serde_json::json!(30_000_000_000u64);
        value["gpus"][1]["peak_used_bytes"] = serde_json::json!(41_000_000_000u64);
        value["peak_used_bytes"] = serde_json::json!(71_000_000_000u64);
        let peak = read_observed_peak(&value.to_string()).unwrap();
        assert_eq!(peak.bytes, Bytes(41_000_000_000));
    }

    #[test]
    fn an_altered_measurement_is_refused_with_a_reason() {
        let json = r#"{"schema":"vramfit.measurement/1","peak_used_bytes":12345678901}"#;
        let message = read_observed_peak(json).unwrap_err().to_string();
        assert!(message.contains("incomplete or altered"), "{message}");
        for (json, names) in [
            (
                r#""gpus":[],"peak_used_bytes":null"#,
                "missing field `warnings`",
            ),
            (r#""gpus":{},"warnings":[]"#, "`gpus` is not a list"),
            (r#""gpus":[{"index":-1}],"warnings":[]"#, "`index`"),
            (
                r#""gpus":[{"index":0,"peak_used_bytes":"9GB"}],"warnings":[]"#,
                "`peak_used_bytes`",
            ),
            (r#""gpus":[],"warnings":[3]"#, "a warning is not text"),
        ] {
            let text = format!(r#"{{"schema":"vramfit.measurement/1",{json}}}"#);
            let message = read_observed_peak(&text).unwrap_err().to_string();
            assert!(message.contains(names), "{json}: {message}");
        }
    }

    #[test]
    fn multi_gpu_nvidia_smi_is_read_from_its_fullest_gpu() {
        let smi = "index, memory.used [MiB], memory.total [MiB]\n0, 1000 MiB, 16376 MiB\n1, 9000 MiB, 16376 MiB\n2, 4000 MiB, 16376 MiB\n";
        let peak = read_observed_peak(smi).unwrap();
        assert_eq!(peak.bytes, Bytes(9000 * 1_048_576));
        assert_eq!(peak.source, "nvidia-smi, GPU 1, the fullest of 3");
    }

    #[test]
    fn an_observed_peak_of_0_is_refused_in_every_form() {
        for zero in ["0", "0GB", "index, memory.used [MiB]\n0, 0 MiB\n"] {
            let message = read_observed_peak(zero).unwrap_err().to_string();
            assert!(
                message.contains("0 bytes") || message.contains("no memory in use"),
                "{zero:?}: {message}"
            );
        }
    }

    #[test]
    fn a_logged_run_is_read_at_its_peak_not_its_last_reading() {
        // `nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv -l 1` during a run
        // that climbed to 14 GiB and fell back as it finished.
        let header = "index, memory.used [MiB], memory.total [MiB]\n";
        let log = [3000, 14336, 9000]
            .map(|used| format!("{header}0, {used} MiB, 16376 MiB\n"))
            .concat();
        let peak = read_observed_peak(&log).unwrap();
        assert_eq!(peak.bytes, Bytes(14336 * 1_048_576));
        assert!(
            peak.source.contains("highest of several readings"),
            "{}",
            peak.source
        );
        // The same with `watch nvidia-smi`'s repeated tables.
        let table = include_str!(
            "../../smi/tests/fixtures/nvidia-smi/table__geforce-rtx-4090__580.65.06__linux.txt"
        );
        let busy = table.replace("   232MiB /", " 20000MiB /");
        let watched = read_observed_peak(&format!("{busy}\n{table}")).unwrap();
        assert_eq!(watched.bytes, Bytes(20000 * 1_048_576));
    }

    #[test]
    fn applying_the_correction_makes_the_estimate_match() {
        let s = crate::Scenario::default();
        let e = estimate(&s).unwrap();
        let observed = ObservedPeak {
            bytes: Bytes(e.total_bytes.0 + 1_000_000_000),
            includes_others: false,
            source: "entered".to_string(),
        };
        let c = correction(&e, s.reserved, s.context, observed.clone());
        assert!(c.error_pct < 0.0, "the estimate was low");
        let mut corrected = s.clone();
        corrected.context = c.corrected_context;
        assert_eq!(estimate(&corrected).unwrap().total_bytes, observed.bytes);
    }
}
