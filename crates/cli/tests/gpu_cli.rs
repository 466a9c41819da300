//! The GPU commands through the real binary: replayed snapshots stand in for NVML, and on a
//! machine without an NVIDIA driver the real NVML path must fail cleanly with exit code 3.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
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

/// `vramfit watch` over the recorded climb in which GPU 1 is lost (a hand-made replay).
fn watch_climb() -> Command {
    let mut command = vramfit();
    command.args([
        "watch",
        "--replay",
        &fixture("replay-watch-climb-gpu1-lost.json"),
    ]);
    command
}

/// `vramfit run` over the recorded H100, writing its measurement to `out`; the caller adds any
/// other options, then `--` and the command.
fn run_on_h100(out: &Path) -> Command {
    let mut command = vramfit();
    command.args([
        "run",
        "--replay",
        &fixture("replay-h100-probe.json"),
        "--out",
        &out.display().to_string(),
    ]);
    command
}

/// The measurement `vramfit run` wrote to `path`.
fn measurement(path: &Path) -> serde_json::Value {
    let written = std::fs::read_to_string(path).expect("measurement written");
    serde_json::from_str(&written).expect("JSON")
}

fn run(command: &mut Command) -> Output {
    command.output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether this machine can load NVML at all; the no-driver tests only mean something without.
/// Runs a command that must be refused as bad input (exit 2) with `needle` in its message.
fn refused(args: &[&str], needle: &str) {
    let out = run(vramfit().args(args));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

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
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        sleep(Duration::from_millis(20));
    }
}

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Starts [`watch_climb`] logging to `log` every 10 ms, once its first samples are logged.
fn watch_logging(log: &Path) -> Child {
    let child =
        spawn(watch_climb().args(["--interval", "10ms", "--log", &log.display().to_string()]));
    wait_for("the first samples", || lines_in(log) >= 4);
    child
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
    let mut recorded: vramfit_smi::Snapshot = serde_json::from_str(&recorded).expect("snapshot");
    // Everything but the mark that it was replayed, not read from a GPU.
    recorded
        .warnings
        .insert(0, replayed("replay-h100-probe.json"));
    assert_eq!(parsed, recorded);
}

fn replayed(name: &str) -> String {
    format!("replayed from {}, not read from a GPU", fixture(name))
}

#[test]
fn replayed_output_says_so_everywhere() {
    let replay = fixture("replay-h100-probe.json");
    let table = run(vramfit().args(["probe", "--replay", &replay]));
    let expected = format!("warning: {}", replayed("replay-h100-probe.json"));
    assert!(
        text(&table.stdout).contains(&expected),
        "{}",
        text(&table.stdout)
    );
    let json = run(vramfit().args(["probe", "--json", "--replay", &replay]));
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["warnings"][0], replayed("replay-h100-probe.json"));
    // The page and --from-probe still import it as a card.
    assert_eq!(value["gpus"][0]["memory"]["total_bytes"], 85_520_809_984u64);
    let out_file = temp("replayed-measurement.json");
    let measured = run(run_on_h100(&out_file).args(["--", "true"]));
    assert_eq!(
        measured.status.code(),
        Some(0),
        "{}",
        text(&measured.stderr)
    );
    let value = measurement(&out_file);
    assert_eq!(value["warnings"][0], replayed("replay-h100-probe.json"));
    let _ = std::fs::remove_file(&out_file);
    let gpustat = run(vramfit().args(["probe", "--gpustat", "--replay", &replay]));
    assert!(
        text(&gpustat.stderr).contains(&expected),
        "{}",
        text(&gpustat.stderr)
    );
    let watched = run(vramfit().args(["watch", "--replay", &replay, "--duration", "50ms"]));
    assert!(
        text(&watched.stderr).contains(&expected),
        "{}",
        text(&watched.stderr)
    );
}

#[test]
fn probe_gpustat_and_table() {
    let replay = fixture("replay-h100-mig.json");
    let out = run(vramfit().args(["probe", "--gpustat", "--replay", &replay]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value["gpus"][0]["memory.total"], 81559);
    assert_eq!(value["gpus"][0]["processes"][2]["command"], "gpu_burn");
    // The keys gpustat's own --json writes, null where a replay cannot know them.
    assert!(value["driver_version"].is_string());
    let gpu = &value["gpus"][0];
    for key in [
        "fan.speed",
        "power.draw",
        "enforced.power.limit",
        "utilization.enc",
        "utilization.dec",
    ] {
        assert!(gpu.get(key).is_some_and(|v| v.is_null()), "{key}: {gpu}");
    }
    let process = &gpu["processes"][0];
    for key in [
        "full_command",
        "cpu_percent",
        "cpu_memory_usage",
        "username",
    ] {
        assert!(
            process.get(key).is_some_and(|v| v.is_null()),
            "{key}: {process}"
        );
    }
    let out = run(vramfit().args(["probe", "--replay", &replay]));
    let table = text(&out.stdout);
    assert!(table.contains("NVIDIA H100 80GB HBM3"), "{table}");
    assert!(table.contains("MIG devices:"), "{table}");
    assert!(
        table.contains("NVIDIA H100 80GB HBM3  GPU-00000000  00000000:00:09.0"),
        "{table}"
    );
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
    let out = run(watch_climb().args([
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
    refused(
        &["watch", "--replay", &replay, "--warn", "85"],
        "percentage",
    );
    refused(&["watch", "--replay", &replay, "--interval", "500"], "");
    refused(
        &["watch", "--replay", &replay, "--gpu", "0,7"],
        "there is no GPU 7",
    );
}

#[test]
fn sigterm_ends_watch_with_a_summary_and_sigkill_keeps_the_log() {
    let log = temp("terminated.jsonl");
    let child = watch_logging(&log);
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
    let child = watch_logging(&log);
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
    let out = run(run_on_h100(&out_file).args(["--", "sh", "-c", "echo from-child; exit 7"]));
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from-child\n");
    let value = measurement(&out_file);
    assert_eq!(value["schema"], "vramfit.measurement/1");
    assert_eq!(value["exit"]["code"], 7);
    assert_eq!(value["command"][0], "sh");
    let _ = std::fs::remove_file(&out_file);

    let missing = run(run_on_h100(&out_file).args(["--", "/nonexistent/vramfit-test"]));
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
    let child = spawn(run_on_h100(&out_file).args(["--", "sh", "-c", &script]));
    wait_for("the command's trap", || trapped.exists());
    signal(&child, "-TERM");
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(42), "{}", text(&out.stderr));
    let _ = std::fs::remove_file(&out_file);
    let _ = std::fs::remove_file(&trapped);
}

#[test]
fn absurd_durations_are_refused_without_a_panic() {
    let replay = fixture("replay-watch-climb-gpu1-lost.json");
    let huge = "10000000000000000000s";
    let cases: [&[&str]; 4] = [
        &["watch", "--replay", &replay, "--duration", huge],
        &["watch", "--replay", &replay, "--interval", huge],
        &["watch", "--replay", &replay, "--duration", "8785h"],
        &["run", "--replay", &replay, "--interval", huge, "--", "true"],
    ];
    for args in cases {
        let out = run(vramfit().args(args));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is too long: at most 8784h"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // The longest accepted interval still samples once and ends with the duration.
    let out = run(vramfit().args([
        "watch",
        "--replay",
        &replay,
        "--interval",
        "8784h",
        "--duration",
        "100ms",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("summary: 1 sample over"));
}

#[test]
fn watch_piped_into_head_exits_cleanly() {
    use std::io::{BufRead, BufReader};
    let mut child = spawn(watch_climb().args(["--interval", "10ms"]));
    let stdout = child.stdout.take().expect("piped");
    // `head -3`: read three lines, then close the pipe.
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(3)
        .map(|l| l.expect("a line"))
        .collect();
    assert_eq!(lines.len(), 3);
    wait_for("watch to notice the closed pipe", || {
        child.try_wait().expect("waitable").is_some()
    });
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"));
}

#[test]
fn watch_prints_its_summary_when_the_log_fails_then_exits_1() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let out = run(watch_climb().args([
        "--interval",
        "10ms",
        "--log",
        "/dev/full",
        "--format",
        "jsonl",
    ]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("summary: 1 sample over"), "{stdout}");
    assert!(
        stderr.contains("vramfit: cannot write the log /dev/full: No space left on device"),
        "{stderr}"
    );
}

/// Whether `pid` has a handler for `signal` (the SigCgt mask in /proc/PID/status).
fn catches(pid: u32, signal: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

#[test]
fn a_second_ctrl_c_ends_a_stuck_watch_at_once() {
    let fifo = temp("stuck-log.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    // Opening a FIFO for writing blocks until a reader comes, which none will: watch is stuck
    // before its first sample, as on a hung NVML call or a dead network file system.
    let child = spawn(watch_climb().args(["--log", &fifo.display().to_string()]));
    wait_for("watch's Ctrl-C handler", || catches(child.id(), 2));
    signal(&child, "-INT");
    sleep(Duration::from_millis(200));
    signal(&child, "-INT");
    let started = Instant::now();
    let pid = child.id();
    let mut child = child;
    while child.try_wait().expect("waitable").is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("watch {pid} ignored a second Ctrl-C");
        }
        sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(130));
    let _ = std::fs::remove_file(&fifo);
}

/// A shell cannot trap a signal that was ignored when it started (POSIX `trap`), and a test run
/// started in the background by a script (`cmd &`, nohup) has SIGINT, SIGQUIT and perhaps SIGHUP
/// ignored, which every child inherits. These give vramfit, and so its command, their default
/// action back, so the traps take wherever the tests run.
trait DefaultSignals {
    fn default_signals(&mut self) -> &mut Self;
}

impl DefaultSignals for Command {
    fn default_signals(&mut self) -> &mut Self {
        // SAFETY: signal(2) is async-signal-safe, so it may run between fork and exec.
        unsafe {
            self.pre_exec(|| {
                for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT] {
                    libc::signal(signal, libc::SIG_DFL);
                }
                Ok(())
            })
        }
    }
}

#[test]
fn run_forwards_hup_quit_usr1_usr2_once_each_and_still_writes_the_measurement() {
    let dir = temp("forwarding");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let got = dir.join("got");
    let ready = dir.join("ready");
    let out_file = dir.join("measurement.json");
    let script = format!(
        "ulimit -c 0; for s in HUP QUIT USR1 USR2; do trap \"echo $s >> '{got}'\" $s; done; \
         trap 'exit 42' TERM; touch '{ready}'; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    // In its own process group, as a job of an interactive shell or a batch script is: then
    // `kill -SIG -PGID` (or the shell's `kill %1`) reaches vramfit and not the command.
    let child = spawn(
        run_on_h100(&out_file)
            .args(["--interval", "20ms", "--", "sh", "-c", &script])
            .process_group(0)
            .default_signals(),
    );
    wait_for("the command's traps", || ready.exists());
    let group = format!("-{}", child.id());
    let lines = || std::fs::read_to_string(&got).map_or(0, |t| t.lines().count());
    for (n, name) in ["HUP", "QUIT", "USR1", "USR2"].into_iter().enumerate() {
        // Sent to vramfit's whole process group, as a terminal or `kill %1` would.
        let status = Command::new("kill")
            .args([&format!("-{name}"), "--", &group])
            .status()
            .expect("kill runs");
        assert!(status.success());
        wait_for(name, || lines() > n);
    }
    // Any second delivery would have been trapped by now.
    sleep(Duration::from_millis(300));
    signal(&child, "-TERM");
    let out = child.wait_with_output().expect("exits");
    assert_eq!(out.status.code(), Some(42), "{}", text(&out.stderr));
    let trapped = std::fs::read_to_string(&got).expect("trapped");
    assert_eq!(trapped, "HUP\nQUIT\nUSR1\nUSR2\n");
    let value = measurement(&out_file);
    assert_eq!(value["exit"]["code"], 42);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The state letter in /proc/PID/stat (`Z` for a zombie), or `None` once the process is gone.
fn state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

#[test]
fn a_command_out_of_vramfits_group_dies_with_vramfit() {
    let dir = temp("orphan");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pid_file = dir.join("pid");
    let script = format!(
        "echo $$ > '{}'; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let child = spawn(
        run_on_h100(&dir.join("m.json"))
            .args(["--", "sh", "-c", &script])
            .process_group(0),
    );
    wait_for("the command", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    let command = std::fs::read_to_string(&pid_file).expect("pid");
    let command = command.trim();
    // What a CI runner does on cancel: SIGKILL to the job's process group, which the command,
    // in a group of its own, is not in.
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let _ = child.wait_with_output();
    wait_for("the command to die with vramfit", || {
        matches!(state(command), None | Some('Z'))
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a made-up replay (a test input, not a measurement) to `path`: one frame per entry of
/// `frames`, each GPU in it an 81559 MiB card (an H100's total) using the given MiB.
fn synthetic_replay(path: &Path, frames: impl Iterator<Item = Vec<u64>>) {
    const MIB: u64 = 1 << 20;
    let frames: Vec<serde_json::Value> = frames
        .map(|used| {
            let gpus: Vec<serde_json::Value> = used
                .iter()
                .enumerate()
                .map(|(index, mib)| {
                    serde_json::json!({
                        "index": index,
                        "name": "made-up test GPU",
                        "memory": {"total_bytes": 81_559 * MIB, "used_bytes": mib * MIB},
                    })
                })
                .collect();
            serde_json::json!({
                "schema": "vramfit.snapshot/1",
                "host": "replay-host",
                "gpus": gpus,
                "warnings": [],
            })
        })
        .collect();
    let text = serde_json::to_string(&frames).expect("JSON");
    std::fs::write(path, text).expect("replay written");
}

/// The least-squares slope of `(milliseconds, bytes)` points in bytes per minute: the test's own
/// fit, to check vramfit's against.
fn slope_per_minute(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    sxy / sxx * 60_000.0
}

/// Checks a growth record against the test's own fit of `points` (its window) and its timing of
/// the critical level.
fn check_growth(growth: &serde_json::Value, points: &[(f64, f64)], critical_mib: u64) {
    let rate = growth["bytes_per_minute"].as_f64().expect("a rate");
    let expected = slope_per_minute(points);
    assert!(
        (rate - expected).abs() <= expected * 1e-9,
        "{rate} vs {expected}"
    );
    assert_eq!(growth["critical_bytes"], critical_mib << 20);
    let fitted = growth["fitted_used_bytes"].as_f64().expect("fitted");
    let minutes = ((critical_mib << 20) as f64 - fitted) / rate;
    let time = growth["time_to_critical_ms"].as_f64().expect("a time");
    assert!(
        (time - minutes * 60_000.0).abs() <= 1.0,
        "{time} ms vs {minutes} min"
    );
    assert!(time > 0.0);
}

/// Waits (up to 90 s: the command below runs for about 13 s) for `child` to exit.
fn wait_long(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("waitable").is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("vramfit did not finish");
        }
        sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("exits")
}

/// Two warn crossings, two signals (GPU 1's warn crossing came while GPU 0 was above warn), and
/// the critical hook once per GPU, each recorded in the measurement and said on stderr.
fn check_run_actions(
    measured: &serde_json::Value,
    stderr: &str,
    hook: &str,
    got: &std::path::Path,
    hooks: &std::path::Path,
) {
    assert_eq!(
        std::fs::read_to_string(got).expect("trapped"),
        "USR1\nUSR1\n"
    );
    let pid = measured["actions"][0]["pid"]
        .as_u64()
        .expect("the command's pid");
    assert_eq!(
        std::fs::read_to_string(hooks).expect("hooks ran"),
        format!("critical 0 {pid}\ncritical 1 {pid}\n")
    );
    let actions: Vec<(&str, &str, u64, u64)> = measured["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            assert!(a["error"].is_null(), "{a}");
            (
                a["level"].as_str().unwrap_or_default(),
                a["action"].as_str().unwrap_or_default(),
                a["gpu"].as_u64().unwrap_or(9),
                a["used_bytes"].as_u64().unwrap_or_default() >> 20,
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("warn", "signal", 0, 45_000),
            ("critical", "exec", 0, 61_000),
            ("warn", "signal", 0, 42_000),
            ("critical", "exec", 1, 61_000),
        ]
    );
    for line in [
        format!("action: warn reached on GPU 0 (45000 MiB): sent SIGUSR1 to process {pid}"),
        format!("action: warn reached on GPU 0 (42000 MiB): sent SIGUSR1 to process {pid}"),
        "action: critical reached on GPU 1 (61000 MiB): started `echo".to_string(),
        "vramfit: actions on warn: sent SIGUSR1 2 times\n".to_string(),
        format!("vramfit: actions on critical: ran `{hook}` 2 times\n"),
    ] {
        assert!(stderr.contains(&line), "{line} in {stderr}");
    }
}

/// GPU 0's growth over the last 110 samples, all on the ramp.
fn check_run_growth(measured: &serde_json::Value, stderr: &str) {
    assert_eq!(measured["sample_stride"], 1);
    let samples = measured["samples"].as_array().expect("samples");
    let points: Vec<(f64, f64)> = samples[samples.len() - 110..]
        .iter()
        .map(|s| {
            let used = s["gpus"][0]["device_used_bytes"].as_f64().expect("used");
            (s["elapsed_ms"].as_f64().expect("ms"), used)
        })
        .collect();
    let growth = &measured["gpus"][0]["growth"];
    assert_eq!(growth["samples"], 110);
    check_growth(growth, &points, 60_000);
    // 50 MiB a frame every 100 ms is 30000 MiB/min if sampling keeps time, less if it lags.
    let rate = growth["bytes_per_minute"].as_f64().unwrap_or_default() / (1 << 20) as f64;
    assert!((15_000.0..30_300.0).contains(&rate), "{rate} MiB/min");
    assert!(
        stderr.contains(&format!(
            "vramfit: GPU 0 used memory grows {} MiB/min over the last 110 samples; at this rate \
             it reaches the critical level (60000 MiB) in ",
            rate.round()
        )),
        "{stderr}"
    );
}

#[test]
fn run_signals_and_execs_once_per_crossing_and_reports_growth() {
    let dir = temp("run-actions");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (replay, got, hooks, out_file) = (
        dir.join("replay.json"),
        dir.join("got"),
        dir.join("hooks"),
        dir.join("measurement.json"),
    );
    // GPU 0: ten quiet frames (while the command sets its trap), warn, critical, back down (both
    // re-armed), then a steady ramp of 50 MiB a frame from 42000 MiB that crosses warn again.
    // GPU 1: quiet until frame 130, then at critical, whose action ends the command. Frame 0 is
    // run's baseline.
    let gpu0 = |f: u64| match f {
        0..=10 => 10_000,
        11 => 45_000,
        12 => 61_000,
        13 | 14 => 20_000,
        _ => 42_000 + 50 * (f - 15),
    };
    let gpu1 = |f: u64| if f < 130 { 1_000 } else { 61_000 };
    synthetic_replay(&replay, (0..400).map(|f| vec![gpu0(f), gpu1(f)]));
    let script = format!(
        "trap \"echo USR1 >> '{got}'\" USR1; \
         until [ \"$(cat '{hooks}' 2>/dev/null | wc -l)\" -ge 2 ]; do sleep 0.05; done",
        got = got.display(),
        hooks = hooks.display()
    );
    let hook = format!(
        "echo \"$VRAMFIT_LEVEL $VRAMFIT_GPU $VRAMFIT_PID\" >> '{}'",
        hooks.display()
    );
    let child = spawn(vramfit().args([
        "run",
        "--replay",
        &replay.display().to_string(),
        "--interval",
        "100ms",
        "--warn",
        "40000MiB",
        "--critical",
        "60000MiB",
        "--growth-window",
        "110",
        "--on-warn-signal",
        "USR1",
        "--on-critical-exec",
        &hook,
        "--out",
        &out_file.display().to_string(),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    let out = wait_long(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let measured = measurement(&out_file);
    check_run_actions(&measured, &stderr, &hook, &got, &hooks);
    check_run_growth(&measured, &stderr);
    // GPU 1 stepped once: no growth.
    assert!(measured["gpus"][1]["growth"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The log's events: the warn and critical hooks once each, then GPU 0's growth (returned).
fn check_watch_events<'a>(lines: &'a [serde_json::Value], hook: &str) -> &'a serde_json::Value {
    let events: Vec<&serde_json::Value> = lines.iter().filter(|l| l["event"].is_string()).collect();
    assert_eq!(events.len(), 3, "{events:?}");
    for (event, level, mib) in [
        (events[0], "warn", 66_000u64),
        (events[1], "critical", 76_000),
    ] {
        assert_eq!(event["event"], "action");
        assert_eq!(event["level"], level);
        assert_eq!(event["action"], "exec");
        assert_eq!(event["command"], hook);
        assert_eq!(event["used_bytes"], mib << 20);
        assert!(event["pid"].is_u64() && event["error"].is_null(), "{event}");
    }
    let growth = events[2];
    assert_eq!(growth["event"], "growth");
    assert_eq!(growth["gpu"], 0);
    assert_eq!(growth["samples"], 42);
    growth
}

/// The growth event against the log's last 42 samples; its rate in MiB a minute.
fn watch_growth_mib_per_minute(lines: &[serde_json::Value], growth: &serde_json::Value) -> f64 {
    let samples: Vec<(f64, f64)> = lines
        .iter()
        .filter(|l| l["event"].is_null())
        .map(|l| {
            let ms = l["elapsed_ms"].as_f64().expect("ms");
            (ms, l["used_bytes"].as_f64().expect("used"))
        })
        .collect();
    check_growth(growth, &samples[samples.len() - 42..], 75_000);
    growth["bytes_per_minute"].as_f64().unwrap_or_default() / (1 << 20) as f64
}

#[test]
fn watch_execs_once_per_crossing_logs_the_events_and_reports_growth() {
    let dir = temp("watch-actions");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (replay, hooks, log) = (
        dir.join("replay.json"),
        dir.join("hooks"),
        dir.join("log.jsonl"),
    );
    // Warn, critical, back down (both re-armed), then a steady ramp of 100 MiB a frame from
    // 40000 MiB that stays under warn.
    let used = |f: u64| match f {
        0 => 20_000,
        1 => 66_000,
        2 => 76_000,
        3 | 4 => 30_000,
        _ => 40_000 + 100 * (f - 5),
    };
    synthetic_replay(&replay, (0..200).map(|f| vec![used(f)]));
    let hook = format!("echo $VRAMFIT_LEVEL >> '{}'", hooks.display());
    let child = spawn(vramfit().args([
        "watch",
        "--replay",
        &replay.display().to_string(),
        "--interval",
        "250ms",
        "--warn",
        "65000MiB",
        "--critical",
        "75000MiB",
        "--growth-window",
        "42",
        "--on-warn-exec",
        &hook,
        "--on-critical-exec",
        &hook,
        "--log",
        &log.display().to_string(),
    ]));
    let sample_lines = || {
        std::fs::read_to_string(&log).map_or(0, |t| {
            t.lines().filter(|l| !l.contains("\"event\"")).count()
        })
    };
    let start = Instant::now();
    while sample_lines() < 50 {
        assert!(start.elapsed() < Duration::from_secs(90), "watch stalled");
        sleep(Duration::from_millis(50));
    }
    signal(&child, "-TERM");
    let out = wait_long(child);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&hooks).expect("hooks ran"),
        "warn\ncritical\n"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let growth = check_watch_events(&lines, &hook);
    let rate = watch_growth_mib_per_minute(&lines, growth);
    // 100 MiB a frame every 250 ms is 24000 MiB/min if sampling keeps time.
    assert!((12_000.0..24_300.0).contains(&rate), "{rate} MiB/min");
    for line in [
        format!(
            "         used memory grows {} MiB/min over the last 42 samples; at this rate it \
             reaches the critical level (75000 MiB) in ",
            rate.round()
        ),
        format!("  actions on warn: ran `{hook}` 1 time\n"),
        format!("  actions on critical: ran `{hook}` 1 time\n"),
    ] {
        assert!(stdout.contains(&line), "{line} in {stdout}");
    }
    assert!(
        stderr.contains("action: warn reached on GPU 0 (66000 MiB): started `echo"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_action_flags_are_refused_with_a_reason() {
    let replay = fixture("replay-h100-probe.json");
    refused(
        &[
            "run",
            "--replay",
            &replay,
            "--on-warn-signal",
            "USR3",
            "--",
            "true",
        ],
        "`USR3` is not a signal vramfit sends; use one of HUP, INT",
    );
    // watch runs no command, so it has nothing to signal.
    refused(
        &["watch", "--replay", &replay, "--on-critical-signal", "USR1"],
        "",
    );
    refused(
        &["watch", "--replay", &replay, "--growth-window", "8"],
        "outside 16 to 86400 samples",
    );
    let help = run(vramfit().args(["run", "--help"]));
    for flag in [
        "--on-warn-signal",
        "--on-critical-exec",
        "--growth-window",
        "re-arms",
    ] {
        assert!(text(&help.stdout).contains(flag), "{flag}");
    }
}
