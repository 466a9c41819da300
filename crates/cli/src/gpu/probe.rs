//! `vramfit probe`: what is on this machine's GPUs right now, as a table, as a
//! `vramfit.snapshot/1` document (`--json`) or in gpustat's `--json` shape (`--gpustat`).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};
use vramfit_smi::Snapshot;

use super::procfs;
use super::source::GpustatExtras;
use super::units::{mib_number, MIB};
use crate::columns::{grid, Column};

#[derive(clap::Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Write a `vramfit.snapshot/1` JSON document (readable by `vramfit parse-smi` and the page).
    #[arg(long, conflicts_with = "gpustat")]
    pub json: bool,
    /// Write JSON in the shape of `gpustat --json`, for tools that read gpustat.
    #[arg(long)]
    pub gpustat: bool,
    /// Read recorded snapshots from this file instead of NVML (tests and demos).
    #[arg(long, hide = true)]
    pub replay: Option<PathBuf>,
}

/// Runs `vramfit probe`.
pub fn probe(args: &ProbeArgs) -> ExitCode {
    let mut source = match super::open_source(args.replay.as_deref()) {
        Ok(source) => source,
        Err(e) => return e.report(&mut io::stderr()),
    };
    // Users and command lines come from this machine's /proc, which only describes live NVML
    // PIDs: a replay's PIDs are someone else's, so they get none.
    let processes: &dyn Fn(u32) -> ProcessInfo = if args.replay.is_some() {
        &|_| ProcessInfo::default()
    } else {
        &|pid| ProcessInfo {
            user: procfs::process_user(pid),
            full_command: procfs::command_line(pid),
            cpu_memory_bytes: procfs::resident_bytes(pid),
        }
    };
    let snap = match source.snapshot() {
        Ok(snap) => snap,
        Err(e) => return e.report(&mut io::stderr()),
    };
    let extras: HashMap<u32, GpustatExtras> = match args.gpustat {
        true => snap
            .gpus
            .iter()
            .filter_map(|g| g.index)
            .map(|index| (index, source.gpustat_extras(index)))
            .collect(),
        false => HashMap::new(),
    };
    if args.gpustat {
        // gpustat's shape has no place for warnings (a replay's mark among them): stderr has.
        let mut err = io::stderr();
        for warning in &snap.warnings {
            let _ = writeln!(err, "warning: {warning}");
        }
    }
    let gpu_extras = |index: u32| extras.get(&index).copied().unwrap_or_default();
    crate::emit(&render(&snap, args, &gpu_extras, processes))
}

/// What gpustat says about a process beyond NVML's figures, from `/proc`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    pub user: Option<String>,
    pub full_command: Option<Vec<String>>,
    /// Resident memory in bytes.
    pub cpu_memory_bytes: Option<u64>,
}

fn render(
    snap: &Snapshot,
    args: &ProbeArgs,
    gpu_extras: &dyn Fn(u32) -> GpustatExtras,
    processes: &dyn Fn(u32) -> ProcessInfo,
) -> String {
    let json = if args.json {
        serde_json::to_string_pretty(snap)
    } else if args.gpustat {
        serde_json::to_string_pretty(&gpustat(snap, gpu_extras, processes))
    } else {
        return table(snap);
    };
    // Serialising plain structs and `Value`s into a String cannot fail.
    let mut text = json.unwrap_or_default();
    text.push('\n');
    text
}

/// The snapshot in gpustat's `--json` shape: every key gpustat 1.x writes (`GPUStat.entry`,
/// its processes and the collection's `hostname`, `driver_version`, `query_time`), with its
/// units (whole MiB, floored; whole watts; percent; resident memory in bytes) and `null` for
/// what is unknown. `cpu_percent` is always `null`: gpustat measures it over a 0.1 s pause that
/// probe does not take.
pub fn gpustat(
    snap: &Snapshot,
    gpu_extras: &dyn Fn(u32) -> GpustatExtras,
    process_info: &dyn Fn(u32) -> ProcessInfo,
) -> Value {
    let gpus: Vec<Value> = snap
        .gpus
        .iter()
        .map(|g| {
            let processes: Vec<Value> = g
                .processes
                .iter()
                .map(|p| {
                    let info = p.pid.map(process_info).unwrap_or_default();
                    json!({
                        "username": info.user,
                        "command": p.name,
                        "full_command": info.full_command,
                        "gpu_memory_usage": p.used_bytes.map(|b| b / MIB),
                        "cpu_percent": Value::Null,
                        "cpu_memory_usage": info.cpu_memory_bytes,
                        "pid": p.pid,
                    })
                })
                .collect();
            let extras = g.index.map(gpu_extras).unwrap_or_default();
            json!({
                "index": g.index,
                "uuid": g.uuid,
                "name": g.name,
                "temperature.gpu": g.temperature_c.map(|t| t.round() as i64),
                "fan.speed": extras.fan_speed_pct,
                "utilization.gpu": g.utilization_pct.map(|u| u.round() as i64),
                "utilization.enc": extras.encoder_pct,
                "utilization.dec": extras.decoder_pct,
                "power.draw": extras.power_draw_w,
                "enforced.power.limit": extras.power_limit_w,
                // gpustat floors to MiB.
                "memory.used": g.memory.used_bytes.map(|b| b / MIB),
                "memory.total": g.memory.total_bytes.map(|b| b / MIB),
                "processes": processes,
            })
        })
        .collect();
    json!({
        "hostname": snap.host,
        "driver_version": snap.driver_version,
        "query_time": snap.timestamp,
        "gpus": gpus,
    })
}

/// `GPU-4f085884`: the prefix and the first 8 hex digits, enough to tell a machine's GPUs apart
/// (`nvidia-smi -L` and `probe --json` give the whole UUID).
fn short_uuid(uuid: &str) -> String {
    let (prefix, rest) = match uuid.split_once('-') {
        Some((p, rest)) if p.chars().all(|c| c.is_ascii_alphabetic()) => (p, rest),
        _ => ("", uuid),
    };
    let head: String = rest.chars().take(8).collect();
    match prefix {
        "" => head,
        p => format!("{p}-{head}"),
    }
}

/// The human view: machine line, one row per GPU, MIG devices and processes when there are any.
pub fn table(snap: &Snapshot) -> String {
    let mut out = String::new();
    let facts = facts_line(snap);
    if !facts.is_empty() {
        out.push_str(&facts);
        out.push_str("\n\n");
    }
    if snap.gpus.is_empty() {
        out.push_str("no GPU found\n");
    } else {
        out.push_str(&grid(
            &[
                Column::right("GPU"),
                Column::left("Name"),
                Column::left("UUID"),
                Column::left("Bus ID"),
                Column::right("Used MiB"),
                Column::right("Total MiB"),
                Column::right("Used"),
                Column::right("Free MiB"),
                Column::right("Reserved MiB"),
                Column::right("Util"),
                Column::right("Temp"),
                Column::left("MIG"),
            ],
            gpu_rows(snap),
        ));
    }
    let mig_rows = mig_rows(snap);
    if !mig_rows.is_empty() {
        out.push_str("\nMIG devices:\n");
        out.push_str(&grid(
            &[
                Column::right("GPU"),
                Column::right("GI"),
                Column::right("CI"),
                Column::right("Dev"),
                Column::left("Profile"),
                Column::left("UUID"),
                Column::right("Used MiB"),
                Column::right("Total MiB"),
            ],
            mig_rows,
        ));
    }
    let process_rows = process_rows(snap);
    if !process_rows.is_empty() {
        out.push_str("\nProcesses:\n");
        out.push_str(&grid(
            &[
                Column::right("GPU"),
                Column::right("GI"),
                Column::right("CI"),
                Column::right("PID"),
                Column::left("Type"),
                Column::left("Name"),
                Column::right("Used MiB"),
            ],
            process_rows,
        ));
    }
    for warning in &snap.warnings {
        out.push_str(&format!("\nwarning: {warning}"));
    }
    if !snap.warnings.is_empty() {
        out.push('\n');
    }
    out
}

/// A table cell for a figure that is not known.
fn dash() -> String {
    "-".to_string()
}

fn text_cell(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(dash)
}

fn mib_cell(bytes: Option<u64>) -> String {
    bytes
        .map(|b| mib_number(b).to_string())
        .unwrap_or_else(dash)
}

fn id_cell(id: Option<u32>) -> String {
    id.map(|i| i.to_string()).unwrap_or_else(dash)
}

fn uuid_cell(uuid: Option<&str>) -> String {
    uuid.map(short_uuid).unwrap_or_else(dash)
}

/// `host h  2026-…Z  driver 550.54  CUDA 12.4`, with whichever of them the snapshot has.
fn facts_line(snap: &Snapshot) -> String {
    let facts = [
        snap.host.as_ref().map(|h| format!("host {h}")),
        snap.timestamp.clone(),
        snap.driver_version.as_ref().map(|d| format!("driver {d}")),
        snap.cuda_version.as_ref().map(|c| format!("CUDA {c}")),
    ];
    let facts: Vec<String> = facts.into_iter().flatten().collect();
    facts.join("  ")
}

/// One row per GPU: identity, memory, utilisation, temperature and MIG mode.
fn gpu_rows(snap: &Snapshot) -> Vec<Vec<String>> {
    snap.gpus
        .iter()
        .map(|g| {
            let m = &g.memory;
            let pct = m
                .used_bytes
                .zip(m.total_bytes)
                .and_then(|(u, t)| super::units::percent(u, t))
                .map(|p| format!("{p}%"))
                .unwrap_or_else(dash);
            vec![
                id_cell(g.index),
                text_cell(&g.name),
                uuid_cell(g.uuid.as_deref()),
                text_cell(&g.pci_bus_id),
                mib_cell(m.used_bytes),
                mib_cell(m.total_bytes),
                pct,
                mib_cell(m.free_bytes),
                mib_cell(m.reserved_bytes),
                g.utilization_pct
                    .map(|u| format!("{u:.0}%"))
                    .unwrap_or_else(dash),
                g.temperature_c
                    .map(|t| format!("{t:.0}C"))
                    .unwrap_or_else(dash),
                text_cell(&g.mig_mode),
            ]
        })
        .collect()
}

fn mig_rows(snap: &Snapshot) -> Vec<Vec<String>> {
    snap.gpus
        .iter()
        .flat_map(|g| g.mig_devices.iter().map(move |d| (g.index, d)))
        .map(|(gpu, d)| {
            vec![
                id_cell(gpu),
                id_cell(d.gpu_instance),
                id_cell(d.compute_instance),
                id_cell(d.mig_index),
                text_cell(&d.profile),
                uuid_cell(d.uuid.as_deref()),
                mib_cell(d.memory.used_bytes),
                mib_cell(d.memory.total_bytes),
            ]
        })
        .collect()
}

fn process_rows(snap: &Snapshot) -> Vec<Vec<String>> {
    snap.gpus
        .iter()
        .flat_map(|g| g.processes.iter().map(move |p| (g.index, p)))
        .map(|(gpu, p)| {
            vec![
                id_cell(gpu),
                id_cell(p.gpu_instance),
                id_cell(p.compute_instance),
                id_cell(p.pid),
                text_cell(&p.kind),
                text_cell(&p.name),
                mib_cell(p.used_bytes),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::source::tests::{H100, MIG};
    use super::super::source::{GpuSource, RecordedSource};
    use super::*;

    fn snap(text: &str) -> Snapshot {
        RecordedSource::from_json(text)
            .and_then(|mut s| s.snapshot())
            .expect("fixture")
    }

    fn args(json: bool, gpustat: bool) -> ProbeArgs {
        ProbeArgs {
            json,
            gpustat,
            replay: None,
        }
    }

    fn no_extras(_: u32) -> GpustatExtras {
        GpustatExtras::default()
    }

    fn no_info(_: u32) -> ProcessInfo {
        ProcessInfo::default()
    }

    #[test]
    fn json_round_trips_through_the_smi_parser() {
        for fixture in [H100, MIG] {
            let original = snap(fixture);
            let written = render(&original, &args(true, false), &no_extras, &no_info);
            assert_eq!(vramfit_smi::parse(&written), Ok(original));
        }
    }

    #[test]
    fn table_shows_every_figure() {
        let text = table(&snap(H100));
        let expected = "\
host replay-host  2026-07-14T08:12:53.000Z  driver 590.48.01  CUDA 13.1

GPU  Name                   UUID          Bus ID            Used MiB  Total MiB  Used  Free MiB  Reserved MiB  Util  Temp  MIG
  0  NVIDIA H100 80GB HBM3  GPU-00000000  00000000:00:09.0     19818      81559   24%     61262           479  100%   59C  Disabled

Processes:
GPU  GI  CI    PID  Type  Name      Used MiB
  0   -   -  11327  C     memhog        2566
  0   -   -  11328  C     memhog        1542
  0   -   -  11345  C     gpu_burn     15690
";
        assert_eq!(text, expected);
    }

    #[test]
    fn table_lists_mig_devices_and_marks_unknowns() {
        let text = table(&snap(MIG));
        assert!(text.contains("MIG devices:"), "{text}");
        assert!(
            text.contains("3g.40gb  MIG-00000000     11091      40448"),
            "{text}"
        );
        // Utilisation is N/A with MIG on: shown as a dash, never 0%.
        let gpu_row = text.lines().nth(3).unwrap_or_default();
        assert!(gpu_row.contains("   -   52C  Enabled"), "{gpu_row}");
    }

    #[test]
    fn empty_machines_and_warnings() {
        let mut s = Snapshot::default();
        s.warnings
            .push("GPU 1: the GPU has fallen off the bus".into());
        assert_eq!(
            table(&s),
            "no GPU found\n\nwarning: GPU 1: the GPU has fallen off the bus\n"
        );
    }

    #[test]
    fn gpustat_shape() {
        let users = |pid: u32| ProcessInfo {
            user: (pid == 11345).then(|| "alice".to_string()),
            ..ProcessInfo::default()
        };
        let value = gpustat(&snap(H100), &no_extras, &users);
        assert_eq!(value["hostname"], "replay-host");
        let gpu = &value["gpus"][0];
        assert_eq!(gpu["memory.used"], 19818);
        assert_eq!(gpu["memory.total"], 81559);
        assert_eq!(gpu["temperature.gpu"], 59);
        assert_eq!(gpu["utilization.gpu"], 100);
        assert_eq!(gpu["processes"][2]["gpu_memory_usage"], 15690);
        assert_eq!(gpu["processes"][2]["username"], "alice");
        assert!(gpu["processes"][0]["username"].is_null());
        // And gpustat readers, ours included, can read it back.
        let text = render(&snap(H100), &args(false, true), &no_extras, &users);
        let back = vramfit_smi::parse(&text).expect("parses as gpustat JSON");
        assert_eq!(back.source, vramfit_smi::SourceFormat::GpustatJson);
        assert_eq!(back.gpus[0].memory.used_bytes, Some(19818 * MIB));
        assert_eq!(back.gpus[0].processes.len(), 3);
    }

    #[test]
    fn gpustat_keeps_unknowns_null() {
        let value = gpustat(&snap(MIG), &no_extras, &no_info);
        assert!(value["gpus"][0]["utilization.gpu"].is_null());
    }

    /// The key names of the real `gpustat --json` capture in the smi fixtures (gpustat 0.6),
    /// plus those gpustat 1.x added (`GPUStat.entry` in its core.py): every one is written,
    /// `null` where unknown.
    #[test]
    fn gpustat_writes_every_key_gpustat_writes() {
        let real: Value = serde_json::from_str(include_str!(
            "../../../smi/tests/fixtures/nvidia-smi/gpustat-json__gtx-1080-ti-x4__gpustat-0.6-era.json"
        ))
        .expect("fixture");
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
            k.sort();
            k
        };
        let ours = gpustat(&snap(H100), &no_extras, &no_info);
        let has_all = |ours: &Value, theirs: &Value, added: &[&str]| {
            let ours = keys(ours);
            for key in keys(theirs)
                .iter()
                .map(String::as_str)
                .chain(added.iter().copied())
            {
                assert!(ours.iter().any(|k| k == key), "missing {key:?} in {ours:?}");
            }
        };
        has_all(&ours, &real, &["driver_version"]);
        has_all(
            &ours["gpus"][0],
            &real["gpus"][0],
            &["fan.speed", "utilization.enc", "utilization.dec"],
        );
        has_all(
            &ours["gpus"][0]["processes"][0],
            &real["gpus"][0]["processes"][0],
            &["full_command", "cpu_percent", "cpu_memory_usage"],
        );
        let gpu = &ours["gpus"][0];
        assert_eq!(ours["driver_version"], "590.48.01");
        for unknown in [
            "fan.speed",
            "power.draw",
            "enforced.power.limit",
            "utilization.enc",
        ] {
            assert!(
                gpu[unknown].is_null(),
                "{unknown} should be null in a replay"
            );
        }
        let process = &gpu["processes"][0];
        for unknown in [
            "full_command",
            "cpu_percent",
            "cpu_memory_usage",
            "username",
        ] {
            assert!(
                process[unknown].is_null(),
                "{unknown} should be null in a replay"
            );
        }
        // What a live source gives is written in gpustat's units.
        let live = |_: u32| GpustatExtras {
            power_draw_w: Some(250),
            power_limit_w: Some(700),
            fan_speed_pct: None,
            encoder_pct: Some(0),
            decoder_pct: Some(3),
        };
        let info = |pid: u32| ProcessInfo {
            user: Some("alice".into()),
            full_command: Some(vec!["memhog".into(), pid.to_string()]),
            cpu_memory_bytes: Some(4096),
        };
        let value = gpustat(&snap(H100), &live, &info);
        let gpu = &value["gpus"][0];
        assert_eq!(gpu["power.draw"], 250);
        assert_eq!(gpu["enforced.power.limit"], 700);
        assert!(gpu["fan.speed"].is_null());
        assert_eq!(gpu["utilization.dec"], 3);
        assert_eq!(
            gpu["processes"][0]["full_command"],
            json!(["memhog", "11327"])
        );
        assert_eq!(gpu["processes"][0]["cpu_memory_usage"], 4096);
    }

    #[test]
    fn table_shows_short_uuids() {
        assert_eq!(
            short_uuid("GPU-4f085884-4260-a21e-25b1-2fa2e6f72f8c"),
            "GPU-4f085884"
        );
        assert_eq!(
            short_uuid("MIG-1d4b9ed8-4f05-5b2a-8b0c-0e0e8e0f0a11"),
            "MIG-1d4b9ed8"
        );
        assert_eq!(short_uuid("abcdef0123456789"), "abcdef01");
        assert_eq!(short_uuid(""), "");
        let text = table(&snap(MIG));
        let header = text.lines().nth(2).unwrap_or_default();
        assert!(
            header.contains("Name  ") && header.contains("UUID"),
            "{header}"
        );
        assert!(text.contains("  GPU-"), "{text}");
        assert!(text.contains("  MIG-"), "{text}");
    }
}
