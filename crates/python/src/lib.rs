//! `vramfit._native`: the Python package's Rust half. Each function calls the CLI's library
//! (`vramfit_cli`) and hands back the object its `--json` prints, as Python's `json.loads` of the
//! same text, so the two cannot differ. The Python half (`python/vramfit/`) adds the keyword
//! arguments, the docstrings and the guard for training loops.

use std::ffi::CString;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use vramfit_cli::answer::{self, FitGoals};
use vramfit_cli::gpu::{self, GpuError, GpuSource, LevelArgs, Threshold, EXIT_USAGE};
use vramfit_cli::scenario_args::{ProbedCard, ScenarioArgs};
use vramfit_engine::growth::DEFAULT_WINDOW;
use vramfit_engine::scenario::FieldError;
use vramfit_engine::Scenario;

create_exception!(
    _native,
    GpuUnavailableError,
    PyRuntimeError,
    "The GPUs cannot be read here (no NVML library, no driver, no permission, a GPU lost): \
     the message is the CLI's, with its fallback where there is one."
);

/// `value` as Python objects: `json.loads` of the text the CLI prints.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// A Python keyword as the key the CLI's flags and the URL use: `lora_rank` is `lora-rank`.
fn key_of(name: &str) -> String {
    name.replace('_', "-")
}

/// Every bad field in one `ValueError`, a line each, named as a Python keyword.
fn invalid(errors: &[FieldError]) -> PyErr {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| format!("invalid {}: {}", e.field.replace('-', "_"), e.message))
        .collect();
    PyValueError::new_err(lines.join("\n"))
}

/// A usage mistake (a GPU index that is not there, an unreadable replay) is a `ValueError`; the
/// rest, as the CLI's exit code 3, [`GpuUnavailableError`].
fn gpu_error(e: GpuError) -> PyErr {
    match e.exit_code() == EXIT_USAGE {
        true => PyValueError::new_err(e.explain()),
        false => GpuUnavailableError::new_err(e.explain()),
    }
}

/// A `UserWarning` pointing at the caller of the package's function.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let text = CString::new(message.replace('\0', "")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<PyUserWarning>(), &text, 2)
}

/// One value as the text a `key=value` pair takes.
fn scalar(value: &Bound<'_, PyAny>) -> Result<String, String> {
    if value.is_instance_of::<PyBool>() {
        return Ok(value.is_truthy().map_err(|e| e.to_string())?.to_string());
    }
    if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyString>() {
        return Ok(value.str().map_err(|e| e.to_string())?.to_string());
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(value
            .extract::<f64>()
            .map_err(|e| e.to_string())?
            .to_string());
    }
    let kind = value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    Err(format!(
        "takes a number, a text or True/False, not a {kind}"
    ))
}

/// A keyword's values: a list only for `custom`, which the CLI's flag and the URL repeat.
fn texts(key: &str, value: &Bound<'_, PyAny>) -> Result<Vec<String>, String> {
    let items = match (value.cast::<PyList>(), value.cast::<PyTuple>()) {
        (Ok(list), _) => list.iter().collect::<Vec<_>>(),
        (_, Ok(tuple)) => tuple.iter().collect(),
        _ => return scalar(value).map(|text| vec![text]),
    };
    if key != "custom" {
        return Err("takes one value, not a list".to_string());
    }
    items.iter().map(scalar).collect()
}

/// Whether `gpu` asks for the card read through NVML.
fn is_auto(value: &Bound<'_, PyAny>) -> bool {
    value.extract::<String>().is_ok_and(|v| v == "auto")
}

/// What the keywords say, as the CLI's flags would; whether `gpu="auto"` asks for the card.
fn read_keywords(scenario: &Bound<'_, PyDict>) -> Result<(ScenarioArgs, bool), Vec<FieldError>> {
    let mut args = ScenarioArgs::default();
    let mut errors = Vec::new();
    let mut auto = false;
    for (name, value) in scenario.iter() {
        if value.is_none() {
            continue;
        }
        let key = key_of(&name.to_string());
        let path = || {
            value
                .extract::<PathBuf>()
                .map_err(|_| "takes a path".to_string())
        };
        let index = || {
            value
                .extract::<usize>()
                .map_err(|_| "takes an index".to_string())
        };
        let read = match key.as_str() {
            "gpu" if is_auto(&value) => {
                auto = true;
                Ok(())
            }
            "config" => path().map(|p| args.config = Some(p)),
            "gguf" => path().map(|p| args.gguf = Some(p)),
            "model-dir" => path().map(|p| args.model_dir = Some(p)),
            "from-probe" => path().map(|p| args.from_probe = Some(ProbedCard::File(p))),
            "hf" => scalar(&value).map(|repo| args.hf = Some(repo)),
            "probe-gpu" => index().map(|i| args.probe_gpu = i),
            "probe-mig" => index().map(|i| args.probe_mig = Some(i)),
            _ => texts(&key, &value).map(|values| {
                args.pairs
                    .extend(values.into_iter().map(|v| (key.clone(), v)));
            }),
        };
        if let Err(message) = read {
            errors.push(FieldError::new(&key, message));
        }
    }
    match errors.is_empty() {
        true => Ok((args, auto)),
        false => Err(errors),
    }
}

/// The scenario the keywords describe, with `gpu="auto"` planned on the card NVML reads (or the
/// snapshots in `replay`, for tests and demos), and the arguments that name its sources. What
/// the files and the card did not say becomes a warning.
fn scenario_of(
    py: Python<'_>,
    keywords: &Bound<'_, PyDict>,
    replay: Option<PathBuf>,
) -> PyResult<(ScenarioArgs, Scenario)> {
    let (mut args, auto) = read_keywords(keywords).map_err(|e| invalid(&e))?;
    match (auto, &args.from_probe, &replay) {
        (true, Some(_), _) => {
            let message = "gpu=\"auto\" reads the card itself; give it or from_probe, not both";
            return Err(invalid(&[FieldError::new("gpu", message)]));
        }
        (false, _, Some(_)) => {
            let message = "replays a card for gpu=\"auto\", which is not given";
            return Err(invalid(&[FieldError::new("replay", message)]));
        }
        _ => {}
    }
    if auto {
        let mut source = gpu::open_source(replay.as_deref()).map_err(gpu_error)?;
        let snapshot = source.snapshot().map_err(gpu_error)?;
        for warning in &snapshot.warnings {
            warn(py, warning)?;
        }
        args.from_probe = Some(ProbedCard::Snapshot(Box::new(snapshot)));
    }
    let (scenario, notes) = args.noted_scenario_over(&[]);
    for note in notes {
        warn(py, &note)?;
    }
    Ok((args, scenario.map_err(|e| invalid(&e))?))
}

/// `vramfit estimate --json`: the memory stack of the scenario the keywords describe.
#[pyfunction]
#[pyo3(signature = (scenario, accuracy = false, replay = None))]
fn estimate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    accuracy: bool,
    replay: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let (args, scenario) = scenario_of(py, scenario, replay)?;
    let e = answer::estimated(&args, &scenario).map_err(|e| invalid(&e))?;
    let summaries = accuracy.then(answer::validation);
    let figures = match &summaries {
        Some(summaries) => Some(answer::accuracy_of(summaries, &e).ok_or_else(|| {
            PyRuntimeError::new_err("an estimated scenario that does not resolve: a bug")
        })?),
        None => None,
    };
    to_python(py, &answer::estimate_json(&e, figures.as_ref()))
}

/// A goal of `fit` (`target_batch`, `users`, `tokens_per_s`), `what` it must be.
fn goal<T: std::str::FromStr>(
    name: &str,
    what: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<T>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let text = scalar(value).map_err(|m| invalid(&[FieldError::new(name, m)]))?;
    text.parse().map(Some).map_err(|_| {
        let message = format!("`{text}` is not {what}");
        invalid(&[FieldError::new(name, message)])
    })
}

/// `vramfit fit --json`: what fits the scenario the keywords describe.
#[pyfunction]
#[pyo3(signature = (scenario, target_batch = None, users = None, tokens_per_s = None, replay = None))]
fn fit<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    target_batch: Option<&Bound<'py, PyAny>>,
    users: Option<&Bound<'py, PyAny>>,
    tokens_per_s: Option<&Bound<'py, PyAny>>,
    replay: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let goals = FitGoals {
        target_batch: goal("target_batch", "a whole number", target_batch)?,
        users: goal("users", "a whole number", users)?,
        tokens_per_s: goal("tokens_per_s", "a number", tokens_per_s)?,
    };
    let (args, scenario) = scenario_of(py, scenario, replay)?;
    let fit = answer::fit(&args, scenario, &goals).map_err(|e| invalid(&e))?;
    to_python(py, &fit.to_json())
}

/// `vramfit probe --json`: every GPU's memory, processes and MIG devices, read through NVML (or
/// the snapshots in `replay`).
#[pyfunction]
#[pyo3(signature = (replay = None))]
fn probe(py: Python<'_>, replay: Option<PathBuf>) -> PyResult<Bound<'_, PyAny>> {
    let mut source = gpu::open_source(replay.as_deref()).map_err(gpu_error)?;
    let snapshot = source.snapshot().map_err(gpu_error)?;
    let value =
        serde_json::to_value(&snapshot).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    to_python(py, &value)
}

/// Each scenario flag of the CLI with its help, as `--help` gives it: the docstrings' table.
#[pyfunction]
fn keywords() -> Vec<(String, String)> {
    let flags = ScenarioArgs::augment_args(clap::Command::new("vramfit"));
    flags
        .get_arguments()
        .map(|arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            (arg.get_id().to_string(), help)
        })
        .collect()
}

/// `watch`'s monitor over the chosen GPUs: each `sample()` reads them once and judges the
/// reading against the warn and critical levels, with `watch`'s re-arming rule.
#[pyclass(unsendable, module = "vramfit._native")]
struct Monitor {
    source: Box<dyn GpuSource>,
    monitor: gpu::Monitor,
    gpus: Vec<u32>,
    start: Instant,
}

#[pymethods]
impl Monitor {
    #[new]
    #[pyo3(signature = (gpus = None, warn = "85%", critical = "95%", replay = None))]
    fn new(
        py: Python<'_>,
        gpus: Option<Vec<u32>>,
        warn: &str,
        critical: &str,
        replay: Option<PathBuf>,
    ) -> PyResult<Monitor> {
        let level = |name: &str, text: &str| {
            Threshold::parse(text).map_err(|m| invalid(&[FieldError::new(name, m)]))
        };
        let levels = LevelArgs {
            warn: level("warn", warn)?,
            critical: level("critical", critical)?,
            on_warn_exec: None,
            on_critical_exec: None,
            growth_window: DEFAULT_WINDOW,
        };
        let mut source = gpu::open_source(replay.as_deref()).map_err(gpu_error)?;
        let snapshot = source.snapshot().map_err(gpu_error)?;
        let gpus = gpu::select_gpus(&snapshot, &gpus.unwrap_or_default()).map_err(gpu_error)?;
        for warning in &snapshot.warnings {
            self::warn(py, warning)?;
        }
        Ok(Monitor {
            monitor: gpu::Monitor::new(&gpus, &levels, [None, None], None),
            source,
            gpus,
            start: Instant::now(),
        })
    }

    /// The GPUs sampled, by index.
    #[getter]
    fn gpus(&self) -> Vec<u32> {
        self.gpus.clone()
    }

    /// Reads the GPUs once: `{"samples": [...], "crossed": [...]}`, each sample a line of
    /// `watch --log`'s JSON, each crossing with `reached` true when its level's actions are due.
    fn sample<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tick = self.monitor.sample(&mut *self.source, self.start.elapsed());
        to_python(py, &gpu::tick_json(&tick))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(probe, m)?)?;
    m.add_function(wrap_pyfunction!(keywords, m)?)?;
    m.add_class::<Monitor>()?;
    m.add(
        "GpuUnavailableError",
        m.py().get_type::<GpuUnavailableError>(),
    )?;
    Ok(())
}
