//! `vramfit probe`: what is on this machine's GPUs right now, as a table, as a
//! `vramfit.snapshot/1` document (`--json`) or in gpustat's `--json` shape (`--gpustat`).

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};
use vramfit_smi::Snapshot;

use super::procfs;
use super::units::{mib_number, MIB};

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
    // Usernames come from this machine's /proc, which only describes live NVML PIDs.
    let users: &dyn Fn(u32) -> Option<String> = if args.replay.is_some() {
        &|_| None
    } else {
        &procfs::process_user
    };
    let output = match source.snapshot() {
        Ok(snap) => render(&snap, args, users),
        Err(e) => return e.report(&mut io::stderr()),
    };
    crate::emit(&output)
}

fn render(snap: &Snapshot, args: &ProbeArgs, users: &dyn Fn(u32) -> Option<String>) -> String {
    let json = if args.json {
        serde_json::to_string_pretty(snap)
    } else if args.gpustat {
        serde_json::to_string_pretty(&gpustat(snap, users))
    } else {
        return table(snap);
    };
    // Serialising plain structs and `Value`s into a String cannot fail.
    let mut text = json.unwrap_or_default();
    text.push('\n');
    text
}

/// The snapshot in gpustat's `--json` shape: sizes in whole MiB, dotted keys.
pub fn gpustat(snap: &Snapshot, users: &dyn Fn(u32) -> Option<String>) -> Value {
    let gpus: Vec<Value> = snap
        .gpus
        .iter()
        .map(|g| {
            let processes: Vec<Value> = g
                .processes
                .iter()
                .map(|p| {
                    let mut entry = json!({
                        "pid": p.pid,
                        "command": p.name,
                        "gpu_memory_usage": p.used_bytes.map(|b| b / MIB),
                    });
                    if let Some(user) = p.pid.and_then(users) {
                        entry["username"] = Value::from(user);
                    }
                    entry
                })
                .collect();
            json!({
                "index": g.index,
                "uuid": g.uuid,
                "name": g.name,
                "temperature.gpu": g.temperature_c.map(|t| t.round() as i64),
                "utilization.gpu": g.utilization_pct.map(|u| u.round() as i64),
                // gpustat floors to MiB.
                "memory.used": g.memory.used_bytes.map(|b| b / MIB),
                "memory.total": g.memory.total_bytes.map(|b| b / MIB),
                "processes": processes,
            })
        })
        .collect();
    json!({
        "hostname": snap.host,
        "query_time": snap.timestamp,
        "gpus": gpus,
    })
}

/// The human view: machine line, one row per GPU, MIG devices and processes when there are any.
pub fn table(snap: &Snapshot) -> String {
    let dash = || "-".to_string();
    let text = |v: &Option<String>| v.clone().unwrap_or_else(dash);
    let num = |v: Option<u64>| v.map(|b| mib_number(b).to_string()).unwrap_or_else(dash);
    let mut out = String::new();
    let facts = [
        snap.host.as_ref().map(|h| format!("host {h}")),
        snap.timestamp.clone(),
        snap.driver_version.as_ref().map(|d| format!("driver {d}")),
        snap.cuda_version.as_ref().map(|c| format!("CUDA {c}")),
    ];
    let facts: Vec<String> = facts.into_iter().flatten().collect();
    if !facts.is_empty() {
        out.push_str(&facts.join("  "));
        out.push_str("\n\n");
    }
    if snap.gpus.is_empty() {
        out.push_str("no GPU found\n");
    } else {
        let rows = snap
            .gpus
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
                    g.index.map(|i| i.to_string()).unwrap_or_else(dash),
                    text(&g.name),
                    text(&g.pci_bus_id),
                    num(m.used_bytes),
                    num(m.total_bytes),
                    pct,
                    num(m.free_bytes),
                    num(m.reserved_bytes),
                    g.utilization_pct
                        .map(|u| format!("{u:.0}%"))
                        .unwrap_or_else(dash),
                    g.temperature_c
                        .map(|t| format!("{t:.0}C"))
                        .unwrap_or_else(dash),
                    text(&g.mig_mode),
                ]
            })
            .collect();
        out.push_str(&grid(
            &[
                ("GPU", true),
                ("Name", false),
                ("Bus ID", false),
                ("Used MiB", true),
                ("Total MiB", true),
                ("Used", true),
                ("Free MiB", true),
                ("Reserved MiB", true),
                ("Util", true),
                ("Temp", true),
                ("MIG", false),
            ],
            rows,
        ));
    }
    let id = |v: Option<u32>| v.map(|i| i.to_string()).unwrap_or_else(dash);
    let mig_rows: Vec<Vec<String>> = snap
        .gpus
        .iter()
        .flat_map(|g| g.mig_devices.iter().map(move |d| (g.index, d)))
        .map(|(gpu, d)| {
            vec![
                id(gpu),
                id(d.gpu_instance),
                id(d.compute_instance),
                id(d.mig_index),
                text(&d.profile),
                num(d.memory.used_bytes),
                num(d.memory.total_bytes),
            ]
        })
        .collect();
    if !mig_rows.is_empty() {
        out.push_str("\nMIG devices:\n");
        out.push_str(&grid(
            &[
                ("GPU", true),
                ("GI", true),
                ("CI", true),
                ("Dev", true),
                ("Profile", false),
                ("Used MiB", true),
                ("Total MiB", true),
            ],
            mig_rows,
        ));
    }
    let process_rows: Vec<Vec<String>> = snap
        .gpus
        .iter()
        .flat_map(|g| g.processes.iter().map(move |p| (g.index, p)))
        .map(|(gpu, p)| {
            vec![
                id(gpu),
                id(p.gpu_instance),
                id(p.compute_instance),
                id(p.pid),
                text(&p.kind),
                text(&p.name),
                num(p.used_bytes),
            ]
        })
        .collect();
    if !process_rows.is_empty() {
        out.push_str("\nProcesses:\n");
        out.push_str(&grid(
            &[
                ("GPU", true),
                ("GI", true),
                ("CI", true),
                ("PID", true),
                ("Type", false),
                ("Name", false),
                ("Used MiB", true),
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

/// Columns padded to their widest cell; `true` right-aligns (numbers).
fn grid(headers: &[(&str, bool)], rows: Vec<Vec<String>>) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, (h, _))| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let header_row: Vec<String> = headers.iter().map(|(h, _)| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(header_row).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(headers)
            .zip(&widths)
            .map(|((cell, (_, right)), &w)| match right {
                true => format!("{cell:>w$}"),
                false => format!("{cell:<w$}"),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
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

    #[test]
    fn json_round_trips_through_the_smi_parser() {
        for fixture in [H100, MIG] {
            let original = snap(fixture);
            let written = render(&original, &args(true, false), &|_| None);
            assert_eq!(vramfit_smi::parse(&written), Ok(original));
        }
    }

    #[test]
    fn table_shows_every_figure() {
        let text = table(&snap(H100));
        let expected = "\
host replay-host  2026-07-14T08:12:53.000Z  driver 590.48.01  CUDA 13.1

GPU  Name                   Bus ID            Used MiB  Total MiB  Used  Free MiB  Reserved MiB  Util  Temp  MIG
  0  NVIDIA H100 80GB HBM3  00000000:00:09.0     19818      81559   24%     61262           479  100%   59C  Disabled

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
        assert!(text.contains("3g.40gb     11091      40448"), "{text}");
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
        let users = |pid: u32| (pid == 11345).then(|| "alice".to_string());
        let value = gpustat(&snap(H100), &users);
        assert_eq!(value["hostname"], "replay-host");
        let gpu = &value["gpus"][0];
        assert_eq!(gpu["memory.used"], 19818);
        assert_eq!(gpu["memory.total"], 81559);
        assert_eq!(gpu["temperature.gpu"], 59);
        assert_eq!(gpu["utilization.gpu"], 100);
        assert_eq!(gpu["processes"][2]["gpu_memory_usage"], 15690);
        assert_eq!(gpu["processes"][2]["username"], "alice");
        assert!(gpu["processes"][0].get("username").is_none());
        // And gpustat readers, ours included, can read it back.
        let text = render(&snap(H100), &args(false, true), &users);
        let back = vramfit_smi::parse(&text).expect("parses as gpustat JSON");
        assert_eq!(back.source, vramfit_smi::SourceFormat::GpustatJson);
        assert_eq!(back.gpus[0].memory.used_bytes, Some(19818 * MIB));
        assert_eq!(back.gpus[0].processes.len(), 3);
    }

    #[test]
    fn gpustat_keeps_unknowns_null() {
        let value = gpustat(&snap(MIG), &|_| None);
        assert!(value["gpus"][0]["utilization.gpu"].is_null());
    }
}
