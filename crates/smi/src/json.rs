//! JSON inputs: `vramfit.snapshot/1` documents (what `vramfit probe --json` writes) and
//! `gpustat --json`.
//!
//! A vramfit snapshot is returned exactly as written, so probe output round-trips. gpustat prints
//! sizes as bare MiB numbers under dotted keys that mirror `--query-gpu` names.

use serde_json::Value;

use crate::snapshot::{DriverKey, Gpu, Memory, MigDevice, Process, Snapshot, SourceFormat, SCHEMA};
use crate::values::MIB;
use crate::ParseError;

/// Whether `text` starts like a JSON object or array.
///
/// A bracket alone is not enough: header-less CSV from telegraf's field order starts with
/// `fan.speed`, which passively cooled GPUs (A100, H100) print as `[N/A]`. So an object must open
/// with a key or close at once, and an array with an object, a string or its end.
pub(crate) fn detect(text: &str) -> bool {
    let t = text.trim_start();
    let (open, rest) = match t.chars().next() {
        Some(c @ ('{' | '[')) => (c, t.get(1..).unwrap_or("").trim_start()),
        _ => return false,
    };
    matches!(
        (open, rest.chars().next()),
        ('{', Some('"' | '}')) | ('[', Some('{' | '"' | ']'))
    )
}

/// A JSON value as an error message shows it: a scalar as written, in backticks, and a list or
/// an object by its kind. (`Value`'s `Display` would link two more copies of serde_json's writer
/// into the page's wasm.)
pub fn shown_in_message(value: &Value) -> String {
    match value {
        Value::Null => "`null`".to_string(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("`\"{s}\"`"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// `text` read as JSON, or the syntax error that stopped it.
pub(crate) fn read(text: &str) -> Result<Value, ParseError> {
    serde_json::from_str(text).map_err(|e| ParseError::InvalidJson {
        message: e.to_string(),
    })
}

/// A snapshot, gpustat or amd-smi document, already read by [`read`].
pub(crate) fn parse(value: Value) -> Result<Snapshot, ParseError> {
    if let Some(schema) = value.get("schema") {
        let found = schema.as_str().unwrap_or_default();
        if found != SCHEMA {
            return Err(ParseError::UnsupportedSchema {
                found: found.to_string(),
            });
        }
        return snapshot(&value).map_err(|message| ParseError::InvalidJson { message });
    }
    if crate::amd_smi::detect(&value) {
        return Ok(crate::amd_smi::parse(
            std::slice::from_ref(&value),
            SourceFormat::AmdSmiJson,
        ));
    }
    if crate::rocm_smi::detect_json(&value) {
        return Ok(crate::rocm_smi::parse_json(&value));
    }
    if crate::macos::detect_json(&value) {
        return Ok(crate::macos::parse_json(&value));
    }
    match value.get("gpus").and_then(Value::as_array) {
        Some(gpus) if gpus.is_empty() => Err(ParseError::NoGpus {
            format: SourceFormat::GpustatJson,
        }),
        Some(gpus) => Ok(gpustat(&value, gpus)),
        None => Err(ParseError::InvalidJson {
            message: format!(
                "this JSON is neither a `{SCHEMA}` snapshot, `gpustat --json`, `amd-smi \
                 --json` nor `rocm-smi --json` output (no \"schema\", \"gpus\", \"gpu\" or \
                 \"card0\" key)"
            ),
        }),
    }
}

/// Reads a `vramfit.snapshot/1` document. As the schema promises, a missing key keeps its
/// default and an unknown one is skipped; a key holding the wrong kind of value is an error that
/// names it. Written over the `Value` already read rather than derived: serde's derived readers
/// for the five snapshot types would each enter the page's wasm. A test reads back what the derived
/// writer writes for every fixture, so the two cannot drift apart.
fn snapshot(root: &Value) -> Result<Snapshot, String> {
    let doc = Object::of(root, "the snapshot")?;
    let mut snap = Snapshot::new(match doc.text("source")? {
        Some(name) => SourceFormat::from_wire(&name)
            .ok_or_else(|| format!("`{name}` is not a source format"))?,
        None => SourceFormat::default(),
    });
    snap.host = doc.text("host")?;
    snap.timestamp = doc.text("timestamp")?;
    snap.driver_version = doc.text("driver_version")?;
    snap.cuda_version = doc.text("cuda_version")?;
    snap.warnings = doc
        .list("warnings")?
        .iter()
        .map(|w| {
            w.as_str()
                .map(str::to_string)
                .ok_or("warnings must be text")
        })
        .collect::<Result<_, _>>()?;
    for (i, g) in doc.list("gpus")?.iter().enumerate() {
        let g = Object::of(g, &format!("gpus[{i}]"))?;
        let mut gpu = Gpu {
            index: g.count("index")?,
            name: g.text("name")?,
            uuid: g.text("uuid")?,
            pci_bus_id: g.text("pci_bus_id")?,
            memory: g.memory()?,
            utilization_pct: g.real("utilization_pct")?,
            temperature_c: g.real("temperature_c")?,
            mig_mode: g.text("mig_mode")?,
            peak_used_bytes: g.bytes("peak_used_bytes")?,
            ..Gpu::default()
        };
        for (j, m) in g.list("mig_devices")?.iter().enumerate() {
            let m = Object::of(m, &format!("{}.mig_devices[{j}]", g.path))?;
            gpu.mig_devices.push(MigDevice {
                gpu_instance: m.count("gpu_instance")?,
                compute_instance: m.count("compute_instance")?,
                mig_index: m.count("mig_index")?,
                profile: m.text("profile")?,
                uuid: m.text("uuid")?,
                memory: m.memory()?,
            });
        }
        for (j, p) in g.list("processes")?.iter().enumerate() {
            let p = Object::of(p, &format!("{}.processes[{j}]", g.path))?;
            gpu.processes.push(Process {
                pid: p.count("pid")?,
                name: p.text("name")?,
                kind: p.text("kind")?,
                used_bytes: p.bytes("used_bytes")?,
                gpu_instance: p.count("gpu_instance")?,
                compute_instance: p.count("compute_instance")?,
            });
        }
        snap.gpus.push(gpu);
    }
    Ok(snap)
}

/// One JSON object of a snapshot, with where it sits for error messages.
struct Object<'a> {
    map: &'a serde_json::Map<String, Value>,
    path: String,
}

impl<'a> Object<'a> {
    fn of(value: &'a Value, path: &str) -> Result<Object<'a>, String> {
        value
            .as_object()
            .map(|map| Object {
                map,
                path: path.to_string(),
            })
            .ok_or_else(|| format!("{path} is not an object"))
    }

    /// The value of `key`, `None` when absent or null, or an error when `read` refuses it.
    fn get<T>(
        &self,
        key: &str,
        read: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => read(value).map(Some).ok_or_else(|| {
                format!(
                    "{}.{key} is {}, not a value it takes",
                    self.path,
                    shown_in_message(value)
                )
            }),
        }
    }

    fn text(&self, key: &str) -> Result<Option<String>, String> {
        self.get(key, |v| v.as_str().map(str::to_string))
    }

    fn count(&self, key: &str) -> Result<Option<u32>, String> {
        self.get(key, |v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
    }

    fn bytes(&self, key: &str) -> Result<Option<u64>, String> {
        self.get(key, Value::as_u64)
    }

    fn real(&self, key: &str) -> Result<Option<f64>, String> {
        self.get(key, Value::as_f64)
    }

    fn list(&self, key: &str) -> Result<&'a [Value], String> {
        Ok(self
            .get(key, |v| v.as_array().map(Vec::as_slice))?
            .unwrap_or_default())
    }

    fn memory(&self) -> Result<Memory, String> {
        match self.map.get("memory") {
            None | Some(Value::Null) => Ok(Memory::default()),
            Some(value) => {
                let m = Object::of(value, &format!("{}.memory", self.path))?;
                Ok(Memory {
                    total_bytes: m.bytes("total_bytes")?,
                    used_bytes: m.bytes("used_bytes")?,
                    free_bytes: m.bytes("free_bytes")?,
                    reserved_bytes: m.bytes("reserved_bytes")?,
                })
            }
        }
    }
}

fn gpustat(root: &Value, gpus: &[Value]) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::GpustatJson);
    snap.host = string(root.get("hostname"));
    snap.timestamp = string(root.get("query_time"));
    if let Some(text) = root.get("driver_version").and_then(Value::as_str) {
        snap.offer_driver_version(DriverKey::Driver, text);
    }
    for g in gpus {
        let mut gpu = Gpu {
            index: uint(g.get("index")),
            name: string(g.get("name")),
            uuid: string(g.get("uuid")),
            utilization_pct: float(g.get("utilization.gpu")),
            temperature_c: float(g.get("temperature.gpu")),
            ..Gpu::default()
        };
        gpu.memory.total_bytes = mib(g.get("memory.total"));
        gpu.memory.used_bytes = mib(g.get("memory.used"));
        gpu.memory.free_bytes = mib(g.get("memory.free"));
        for p in g
            .get("processes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            gpu.processes.push(Process {
                pid: uint(p.get("pid")),
                name: string(p.get("command")),
                used_bytes: mib(p.get("gpu_memory_usage")),
                ..Process::default()
            });
        }
        snap.gpus.push(gpu);
    }
    if snap.gpus.iter().any(|g| g.memory.total_bytes.is_some()) {
        snap.warn(
            "gpustat reports used and total memory but not free memory; total − used overstates \
             what can be allocated by the driver's reserve (about 350–870 MiB)",
        );
    }
    snap
}

pub(crate) fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(crate) fn uint(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

pub(crate) fn float(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|f| f.is_finite())
}

/// gpustat labels these "MB" but divides by 1024², so they are MiB.
fn mib(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    match v.as_u64() {
        Some(n) => n.checked_mul(MIB),
        None => v
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f * MIB as f64)
            .filter(|b| *b < u64::MAX as f64)
            .map(|b| b.round() as u64),
    }
}
