//! The GPU commands through the real binary: replayed snapshots stand in for NVML, and on a
//! machine without an NVIDIA driver the real NVML path must fail cleanly with exit code 3.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

fn vramfit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/gpu/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("vramfit-gpu-cli-{}-{name}", std::process::id()))
}

fn run(command: &mut Command) -> Output {
    command.output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether this machine can load NVML at all; the no-driver tests only mean something without.
fn nvml_loads() -> bool {
    let probe = run(vramfit().args(["probe", "--json"]));
    probe.status.success()
}

fn spawn(command: &mut Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits (up to 20 s, for loaded CI machines) until `ready` holds.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        sleep(Duration::from_millis(20));
    }
}

fn lines_in(path: &PathBuf) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[test]
fn probe_json_round_trips_through_parse() {
    let out = run(vramfit().args([
        "probe",
        "--json",
        "--replay",
        &fixture("replay-h100-probe.json"),
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let parsed = vramfit_smi::parse(&text(&out.stdout)).expect("parses");
    let recorded = std::fs::read_to_string(fixture("replay-h100-probe.json")).expect("fixture");
    let recorded: vramfit_smi::Snapshot = serde_json::from_str(&recorded).expect("snapshot");
    assert_eq!(parsed, recorded);
}

#[test]
fn probe_gpustat_and_table() {
    let replay = fixture("replay-h100-mig.json");
    let out = run(vramfit().args(["probe", "--gpustat", "--replay", &replay]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value["gpus"][0]["memory.total"], 81559);
    assert_eq!(value["gpus"][0]["processes"][2]["command"], "gpu_burn");
    let out = run(vramfit().args(["probe", "--replay", &replay]));
    let table = text(&out.stdout);
    assert!(table.contains("NVIDIA H100 80GB HBM3"), "{table}");
    assert!(table.contains("MIG devices:"), "{table}");
    let both = run(vramfit().args(["probe", "--json", "--gpustat", "--replay", &replay]));
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn without_a_driver_every_command_exits_3_with_the_fallback() {
    if nvml_loads() {
        return;
    }
    let marker = temp("must-not-exist");
    let marker_arg = marker.display().to_string();
    let commands: [&[&str]; 4] = [
        &["probe"],
        &["probe", "--gpustat"],
        &["watch", "--duration", "1s"],
        &["run", "--", "touch", &marker_arg],
    ];
    for args in commands {
        let out = run(vramfit().args(args));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        let mut lines = err.lines();
        assert!(
            lines
                .next()
                .is_some_and(|l| l.starts_with("vramfit: no NVML library: ")),
            "{args:?}: {err}"
        );
        assert!(lines
            .next()
            .is_some_and(|l| l.contains("nvidia-smi | vramfit parse-smi")));
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    assert!(
        !marker.exists(),
        "run must not start the command without NVML"
    );
}

#[test]
fn watch_logs_warns_and_summarises() {
    let log = temp("watch.csv");
    let out = run(vramfit().args([
        "watch",
        "--replay",
        &fixture("replay-watch-climb-gpu1-lost.json"),
        "--interval",
        "20ms",
        "--duration",
        "400ms",
        "--warn",
        "69000MiB",
        "--log",
        &log.display().to_string(),
    ]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: GPU 0 VRAM 70000 MiB"), "{stderr}");
    assert!(stderr.contains("threshold 69000 MiB"), "{stderr}");
    assert!(
        stderr.contains("critical: GPU 0 VRAM 78000 MiB"),
        "{stderr}"
    );
    assert!(stderr.contains("error: GPU 1 cannot be read"), "{stderr}");
    assert!(stdout.contains("summary: "), "{stdout}");
    assert!(stdout.contains("GPU 0  peak 78000 MiB"), "{stdout}");
    let logged = std::fs::read_to_string(&log).expect("log written");
    assert!(
        logged.starts_with("timestamp,elapsed_ms,gpu,used_bytes,"),
        "{logged}"
    );
    assert!(logged.lines().count() > 8, "{logged}");
    let _ = std::fs::remove_file(&log);
}

#[test]
fn watch_rejects_bad_thresholds_and_gpus() {
    let replay = fixture("replay-watch-climb-gpu1-lost.json");
    let out = run(vramfit().args(["watch", "--replay", &replay, "--warn", "85"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("percentage"),
        "{}",
        text(&out.stderr)
    );
    let out = run(vramfit().args(["watch", "--replay", &replay, "--interval", "500"]));
    assert_eq!(out.status.code(), Some(2));
    let out = run(vramfit().args(["watch", "--replay", &replay, "--gpu", "0,7"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("there is no GPU 7"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn sigterm_ends_watch_with_a_summary_and_sigkill_keeps_the_log() {
    let replay = fixture("replay-watch-climb-gpu1-lost.json");
    let log = temp("terminated.jsonl");
    let log_arg = log.display().to_string();
    let child = spawn(vramfit().args([
        "watch",
        "--replay",
        &replay,
        "--interval",
        "10ms",
        "--log",
        &log_arg,
    ]));
    wait_for("the first samples", || lines_in(&log) >= 4);
    signal(&child, "-TERM");
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("summary: "),
        "{}",
        text(&out.stdout)
    );
    let _ = std::fs::remove_file(&log);

    let log = temp("killed.jsonl");
    let child = spawn(vramfit().args([
        "watch",
        "--replay",
        &replay,
        "--interval",
        "10ms",
        "--log",
        &log.display().to_string(),
    ]));
    wait_for("the first samples", || lines_in(&log) >= 4);
    signal(&child, "-KILL");
    let _ = child.wait_with_output();
    let logged = std::fs::read_to_string(&log).expect("log written");
    let lines: Vec<&str> = logged.lines().collect();
    assert!(lines.len() >= 4, "{logged}");
    // Every record but possibly the one in flight is whole.
    for line in &lines[..lines.len() - 1] {
        serde_json::from_str::<serde_json::Value>(line).expect("a whole JSON record");
    }
    let _ = std::fs::remove_file(&log);
}

#[test]
fn run_passes_the_exit_code_through_and_writes_the_measurement() {
    let out_file = temp("measurement.json");
    let out = run(vramfit().args([
        "run",
        "--replay",
        &fixture("replay-h100-probe.json"),
        "--out",
        &out_file.display().to_string(),
        "--",
        "sh",
        "-c",
        "echo from-child; exit 7",
    ]));
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from-child\n");
    let written = std::fs::read_to_string(&out_file).expect("measurement written");
    let value: serde_json::Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(value["schema"], "vramfit.measurement/1");
    assert_eq!(value["exit"]["code"], 7);
    assert_eq!(value["command"][0], "sh");
    let _ = std::fs::remove_file(&out_file);

    let missing = run(vramfit().args([
        "run",
        "--replay",
        &fixture("replay-h100-probe.json"),
        "--out",
        &out_file.display().to_string(),
        "--",
        "/nonexistent/vramfit-test",
    ]));
    assert_eq!(missing.status.code(), Some(127));
    let usage = run(vramfit().args(["run", "--replay", &fixture("replay-h100-probe.json")]));
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn run_forwards_sigterm_to_the_command() {
    let out_file = temp("forwarded.json");
    let trapped = temp("trapped");
    let script = format!(
        "trap 'exit 42' TERM; touch '{}'; while :; do sleep 0.05; done",
        trapped.display()
    );
    let child = spawn(vramfit().args([
        "run",
        "--replay",
        &fixture("replay-h100-probe.json"),
        "--out",
        &out_file.display().to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    wait_for("the command's trap", || trapped.exists());
    signal(&child, "-TERM");
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(42), "{}", text(&out.stderr));
    let _ = std::fs::remove_file(&out_file);
    let _ = std::fs::remove_file(&trapped);
}
