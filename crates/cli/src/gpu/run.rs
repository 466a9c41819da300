//! `vramfit run -- CMD ARGS…`: runs a command, samples the GPU memory of its process tree while
//! it runs, and writes a `vramfit.measurement/1` document — the measured counterpart of the
//! planner's estimate.
//!
//! Memory is attributed per process where NVML can (the command's tree from `/proc` ppid
//! links, matched against NVML's per-process figures). Where it cannot — Windows' WDDM, or a
//! container whose PID namespace hides NVML's host PIDs — the figure is the device's used
//! memory minus what was in use before the command started, and the document says so. A figure
//! that could not be known (a GPU unreadable in a sample, no process figure, no baseline) is
//! `null` in the document, never 0.
//!
//! Signals: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to vramfit are passed on to
//! the command, and vramfit keeps sampling until the command exits, then writes the measurement.
//! Each signal reaches the command once; the rule is [`ChildGroup`]'s.
//!
//! Levels: like `watch`, `run` warns when a measured GPU's used memory (the device's, whoever
//! holds it: that is what runs out) crosses `--warn` or `--critical`, and then carries out that
//! level's actions (`--on-warn-signal USR1` for an emergency checkpoint, `--on-warn-exec CMD`),
//! each recorded in the measurement's `actions`. Each GPU's `growth` is the steady growth of its
//! used memory over the last `--growth-window` samples, if any.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::time::{Duration, Instant, SystemTime};

use vramfit_engine::measurement::{
    Accounting, ExitInfo, MeasuredGpu, Measurement, MeasurementSample, ProcessPeak, SampleGpu,
    MEASUREMENT_SCHEMA,
};

use super::actions::{action_line, parse_signal, LevelArgs, Signal};
use super::alarm::growth_sentence;
use super::error::GpuError;
use super::monitor::{raise, Driver, Monitor, Pace, Peak, Tick};
use super::nvml::host_name;
use super::procfs;
use super::signals::{self, Received};
use super::source::{select_gpus, DeviceSample, GpuSource, ProcessUsage};
use super::units::{human_duration, mib, millis, parse_duration, rfc3339};

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Time between samples, e.g. 200ms or 1s.
    #[arg(long, default_value = "200ms", value_parser = parse_duration)]
    pub interval: Duration,
    /// GPUs to measure, by index: 0,1. All of them by default.
    #[arg(long, value_delimiter = ',')]
    pub gpu: Vec<u32>,
    /// Where to write the `vramfit.measurement/1` JSON.
    #[arg(long, default_value = "measurement.json")]
    pub out: PathBuf,
    #[command(flatten)]
    pub levels: LevelArgs,
    /// Send this signal (USR1, SIGUSR1, …) to the command each time the warn level is reached,
    /// e.g. so a training loop saves an emergency checkpoint.
    ///
    /// It goes to the command's own process, not to its children: a DataLoader's workers do not
    /// handle SIGUSR1 and would die of it. Run the training script itself, or have a launcher
    /// pass the signal on.
    #[arg(long, value_name = "SIGNAL", value_parser = parse_signal)]
    pub on_warn_signal: Option<Signal>,
    /// Like --on-warn-signal, at the critical level.
    #[arg(long, value_name = "SIGNAL", value_parser = parse_signal)]
    pub on_critical_signal: Option<Signal>,
    /// Read recorded snapshots from this file instead of NVML (tests and demos).
    #[arg(long, hide = true)]
    pub replay: Option<PathBuf>,
    /// The command to run, after `--`: `vramfit run -- python train.py`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Runs `vramfit run`.
pub fn run(args: &RunArgs) -> ExitCode {
    let mut source = match super::open_source(args.replay.as_deref()) {
        Ok(source) => source,
        Err(e) => return e.report(&mut io::stderr()),
    };
    if let Err(e) = signals::install(signals::FORWARDED, false) {
        let _ = writeln!(
            io::stderr(),
            "vramfit: signals to vramfit will not reach the command ({e})"
        );
    }
    let group = ChildGroup::choose();
    let mut err = io::stderr();
    let measured = measure(&mut *source, args, group, &mut signals::take, &mut err);
    let (measurement, exit_code) = match measured {
        Ok(done) => done,
        Err(RunError::Gpu(e)) => return e.report(&mut io::stderr()),
        Err(RunError::Spawn { program, error }) => {
            let _ = writeln!(io::stderr(), "vramfit: cannot run `{program}`: {error}");
            // The shell's conventions: 127 not found, 126 found but not runnable.
            let code = if error.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return ExitCode::from(code);
        }
        Err(RunError::Wait(error)) => {
            let _ = writeln!(io::stderr(), "vramfit: lost track of the command: {error}");
            return ExitCode::FAILURE;
        }
    };
    let _ = writeln!(err, "{}", report_line(&measurement));
    for gpu in &measurement.gpus {
        if let Some(growth) = &gpu.growth {
            let _ = writeln!(
                err,
                "vramfit: GPU {} {}",
                gpu.index,
                growth_sentence(growth)
            );
        }
    }
    // The measurement failing to save must not hide the command's own exit code.
    if let Err(e) = write_measurement(&measurement, args) {
        let _ = writeln!(
            err,
            "vramfit: cannot write the measurement to {}: {e}",
            args.out.display()
        );
    } else {
        let _ = writeln!(
            err,
            "vramfit: measurement written to {}",
            args.out.display()
        );
    }
    // Exit codes are 0–255; 128 + signal always fits.
    ExitCode::from(u8::try_from(exit_code & 0xff).unwrap_or(1))
}

fn write_measurement(measurement: &Measurement, args: &RunArgs) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(measurement).map_err(io::Error::other)?;
    text.push('\n');
    std::fs::write(&args.out, text)
}

/// `vramfit: peak 9000 MiB (GPU 0 9000 MiB), per-process accounting, over 12.3s; exit 0`.
fn report_line(m: &Measurement) -> String {
    let per_gpu: Vec<String> = m
        .gpus
        .iter()
        .map(|g| format!("GPU {} {}", g.index, known_mib(g.peak_used_bytes)))
        .collect();
    let accounting = match m.accounting {
        Accounting::PerProcess => "per-process accounting",
        Accounting::DeviceDelta => "device used minus baseline",
    };
    format!(
        "vramfit: peak {} ({}), {accounting}, over {}; exit {}",
        known_mib(m.peak_used_bytes),
        per_gpu.join(", "),
        human_duration(Duration::from_millis(m.duration_ms)),
        m.exit.exit_code
    )
}

fn known_mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "unknown".to_string(), mib)
}

/// Where the command runs relative to vramfit's process group, which decides what vramfit
/// forwards so that each signal reaches the command exactly once.
///
/// `kill(2)` does not tell its target whether it was aimed at the process or at its whole group,
/// so the command is kept out of vramfit's group whenever that costs nothing, and where it does
/// cost something (the terminal), only what cannot have reached it is forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildGroup {
    /// vramfit is the terminal's foreground job: the command shares its process group, so it can
    /// read the terminal and Ctrl-C, Ctrl-\ and Ctrl-Z (and a hangup) reach it directly from the
    /// terminal. Those kernel-generated signals are not forwarded; signals sent with `kill` are,
    /// to the command alone. (A `kill` aimed at the whole foreground group from another terminal
    /// would reach the command twice; nothing in the signal tells the two apart.)
    Shared,
    /// No terminal foreground to share (no terminal, a background job, a batch or service job):
    /// the command gets a process group of its own, which nothing aimed at vramfit or its group
    /// (`kill %1`, `kill -- -PGID`) reaches, so every signal is forwarded, to the command's whole
    /// group, as a terminal would deliver it. SIGKILL cannot be forwarded, so the command is set
    /// to be killed when vramfit dies (`PR_SET_PDEATHSIG`).
    Own,
}

impl ChildGroup {
    /// `Shared` when vramfit's process group is its controlling terminal's foreground group.
    fn choose() -> ChildGroup {
        // SAFETY: open(2) with a NUL-terminated literal path; the descriptor is closed below and
        // tcgetpgrp/getpgrp only read process state.
        let foreground = unsafe {
            let fd = libc::open(
                c"/dev/tty".as_ptr(),
                libc::O_RDONLY | libc::O_NOCTTY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                false
            } else {
                let owner = libc::tcgetpgrp(fd);
                libc::close(fd);
                owner > 0 && owner == libc::getpgrp()
            }
        };
        if foreground {
            ChildGroup::Shared
        } else {
            ChildGroup::Own
        }
    }

    /// Where `received` must go, as a `kill(2)` target, or `None` when the command has it already.
    fn forward_to(self, received: Received, child: u32) -> Option<libc::pid_t> {
        let pid = libc::pid_t::try_from(child).ok()?;
        match self {
            ChildGroup::Shared if received.from_terminal => None,
            ChildGroup::Shared => Some(pid),
            ChildGroup::Own => Some(-pid),
        }
    }
}

#[derive(Debug)]
enum RunError {
    Gpu(GpuError),
    Spawn { program: String, error: io::Error },
    Wait(io::Error),
}

/// How often the child's exit and pending signals are checked between samples.
const POLL: Duration = Duration::from_millis(20);

/// Runs the command and samples until it exits; crossings, actions and their notes go to `err`
/// as they happen.
fn measure(
    source: &mut dyn GpuSource,
    args: &RunArgs,
    group: ChildGroup,
    interrupts: &mut dyn FnMut() -> Option<Received>,
    err: &mut dyn Write,
) -> Result<(Measurement, i32), RunError> {
    let snapshot = source.snapshot().map_err(RunError::Gpu)?;
    let gpus = select_gpus(&snapshot, &args.gpu).map_err(RunError::Gpu)?;
    let baseline = baseline(source, &gpus);
    let started_at = rfc3339(SystemTime::now());
    let start = Instant::now();
    let child = spawn(&args.command, group)?;
    let root = child.id();
    let signals = [args.on_warn_signal, args.on_critical_signal].map(|s| s.map(|s| (s, root)));
    let mut monitor = Monitor::new(&gpus, &args.levels, signals, Some(root));
    let pace = Pace {
        start,
        interval: args.interval,
        nap: POLL,
    };
    let mut measuring = Measuring {
        child,
        group,
        interrupts,
        tree: HashSet::new(),
        recorder: Recorder::new(baseline),
        err,
    };
    let status = monitor
        .sample_until(source, &pace, &mut measuring)
        .map_err(RunError::Wait)?;
    let exit = exit_info(status);
    let context = Context {
        command: args.command.clone(),
        host: snapshot.host.clone().or_else(host_name),
        driver_version: snapshot.driver_version.clone(),
        started_at,
        ended_at: rfc3339(SystemTime::now()),
        duration: start.elapsed(),
        interval: args.interval,
        exit,
    };
    for line in monitor.action_summary() {
        let _ = writeln!(measuring.err, "vramfit: {line}");
    }
    let measurement = measuring
        .recorder
        .finish(&snapshot, &gpus, context, &mut monitor);
    Ok((measurement, exit.exit_code))
}

/// Each GPU's used memory before the command starts, for the device-delta accounting.
fn baseline(source: &mut dyn GpuSource, gpus: &[u32]) -> HashMap<u32, Option<u64>> {
    source
        .sample(gpus)
        .into_iter()
        .map(|(index, r)| (index, r.ok().and_then(|s| s.memory.used_bytes)))
        .collect()
}

/// Starts `command` (a program and its arguments) where `group` says.
fn spawn(command: &[String], group: ChildGroup) -> Result<Child, RunError> {
    let (program, rest) = command.split_first().ok_or_else(|| RunError::Spawn {
        program: String::new(),
        error: io::Error::new(io::ErrorKind::InvalidInput, "no command given"),
    })?;
    let mut command = Command::new(program);
    command.args(rest);
    if group == ChildGroup::Own {
        command.process_group(0);
        // Out of vramfit's group, a SIGKILL to that group (a CI runner cancelling, `timeout -k`)
        // no longer reaches the command: the kernel kills it when vramfit dies instead.
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: the closure runs between fork and exec and calls only prctl(2), getppid(2)
        // and raise(3), which are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // vramfit died before the request took effect.
                if libc::getppid() != parent {
                    libc::raise(libc::SIGKILL);
                }
                Ok(())
            });
        }
    }
    command.spawn().map_err(|error| RunError::Spawn {
        program: program.clone(),
        error,
    })
}

/// How the command ended, with the exit code vramfit passes on: 128 + the signal that killed it.
fn exit_info(status: ExitStatus) -> ExitInfo {
    ExitInfo {
        code: status.code(),
        signal: status.signal(),
        exit_code: status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(1),
    }
}

/// run's side of the monitor loop: the command, the signals passed on to it, and the accounting
/// of its memory.
struct Measuring<'a> {
    child: Child,
    group: ChildGroup,
    interrupts: &'a mut dyn FnMut() -> Option<Received>,
    /// The command's process tree, read right before each sample.
    tree: HashSet<u32>,
    recorder: Recorder,
    err: &'a mut dyn Write,
}

impl Driver for Measuring<'_> {
    /// How the command ended, or why waiting for it failed.
    type End = io::Result<ExitStatus>;

    fn poll(&mut self) -> ControlFlow<Self::End> {
        match self.child.try_wait() {
            Ok(Some(status)) => return ControlFlow::Break(Ok(status)),
            Err(e) => return ControlFlow::Break(Err(e)),
            Ok(None) => {}
        }
        while let Some(received) = (self.interrupts)() {
            if let Some(target) = self.group.forward_to(received, self.child.id()) {
                // SAFETY: kill(2) on the PID (or process group) of a child we spawned and have
                // not reaped yet, so the ID cannot have been reused.
                unsafe { libc::kill(target, received.signal) };
            }
        }
        ControlFlow::Continue(())
    }

    fn before_sample(&mut self) {
        self.tree = procfs::descendants(self.child.id(), &procfs::parent_map());
    }

    fn sampled(&mut self, tick: &Tick, _: &Monitor) -> ControlFlow<Self::End> {
        self.recorder.observe(tick, &self.tree);
        for crossed in &tick.crossed {
            let _ = writeln!(self.err, "{}", crossed.crossing.message(&tick.timestamp));
            for action in &crossed.actions {
                let _ = writeln!(self.err, "{}", action_line(action));
            }
        }
        for note in &tick.reaped {
            let _ = writeln!(self.err, "{note}");
        }
        ControlFlow::Continue(())
    }
}

/// What the command's tree holds on one GPU in one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeUsage {
    /// The sum of the figures NVML gives for processes in the tree; `None` when a process of the
    /// tree is listed without a figure, since the sum would then be short. (No process of the
    /// tree listed at all is a known 0.)
    pub bytes: Option<u64>,
    /// Whether NVML gave a figure for any process in the tree: the evidence that per-process
    /// accounting works here.
    pub seen: bool,
    pub per_process: Vec<(u32, u64)>,
}

impl Default for TreeUsage {
    fn default() -> Self {
        TreeUsage {
            bytes: Some(0),
            seen: false,
            per_process: Vec::new(),
        }
    }
}

pub(crate) fn tree_usage(tree: &HashSet<u32>, processes: &[ProcessUsage]) -> TreeUsage {
    let mut usage = TreeUsage::default();
    for p in processes.iter().filter(|p| tree.contains(&p.pid)) {
        match p.used_bytes {
            Some(bytes) => {
                usage.bytes = usage.bytes.map(|b| b.saturating_add(bytes));
                usage.seen = true;
                usage.per_process.push((p.pid, bytes));
            }
            None => usage.bytes = None,
        }
    }
    usage
}

/// Keeps every `stride`-th item, doubling the stride whenever more than `cap` are kept, so a
/// run of any length yields at most `cap` evenly spaced items.
#[derive(Debug)]
struct Thinned<T> {
    items: Vec<T>,
    stride: u64,
    seen: u64,
    cap: usize,
}

impl<T> Thinned<T> {
    /// `cap` is rounded up to even: halving an odd count would break the even spacing.
    fn new(cap: usize) -> Thinned<T> {
        Thinned {
            items: Vec::new(),
            stride: 1,
            seen: 0,
            cap: cap.max(2).next_multiple_of(2),
        }
    }

    fn push(&mut self, item: T) {
        if self.seen.is_multiple_of(self.stride) {
            self.items.push(item);
            if self.items.len() > self.cap {
                let mut position = 0;
                self.items.retain(|_| {
                    position += 1;
                    position % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }
}

/// At 200 ms this keeps every sample of the first 13 minutes.
const MAX_SAMPLES: usize = 4000;

/// One GPU in one sample, with both accountings until the run ends and one is chosen.
#[derive(Debug, Clone)]
struct RawGpu {
    index: u32,
    device_used: Option<u64>,
    tree: Option<u64>,
    delta: Option<u64>,
    error: Option<String>,
}

/// The sum of one sample's per-GPU figures, known only if every GPU's figure is.
fn known_sum(figures: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    figures
        .into_iter()
        .try_fold(0u64, |sum, f| f.map(|f| sum.saturating_add(f)))
}

#[derive(Debug, Default)]
struct GpuPeaks {
    tree: Peak,
    delta: Peak,
    device: Option<u64>,
}

/// The command's memory, sample by sample, in both accountings until the run ends and one is
/// chosen.
#[derive(Debug)]
struct Recorder {
    baseline: HashMap<u32, Option<u64>>,
    samples: Thinned<(u64, Vec<RawGpu>)>,
    seen_per_process: bool,
    /// The first reason a process list could not be read, for the accounting warning.
    process_error: Option<String>,
    peaks: BTreeMap<u32, GpuPeaks>,
    total_tree: Peak,
    total_delta: Peak,
    processes: BTreeMap<(u32, u32), ProcessPeak>,
    warnings: Vec<String>,
    /// What each warning is about (an error's text), so a lasting failure is said once.
    warned: HashSet<String>,
}

/// The facts about the run that the samples do not carry.
struct Context {
    command: Vec<String>,
    host: Option<String>,
    driver_version: Option<String>,
    started_at: String,
    ended_at: String,
    duration: Duration,
    interval: Duration,
    exit: ExitInfo,
}

impl Recorder {
    fn new(baseline: HashMap<u32, Option<u64>>) -> Recorder {
        Recorder {
            baseline,
            samples: Thinned::new(MAX_SAMPLES),
            seen_per_process: false,
            process_error: None,
            peaks: BTreeMap::new(),
            total_tree: None,
            total_delta: None,
            processes: BTreeMap::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
        }
    }

    fn warn(&mut self, message: String) {
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }

    /// Warns once about `about`, however many samples it lasts.
    fn warn_once(&mut self, about: &str, message: String) {
        if self.warned.insert(about.to_string()) {
            self.warn(message);
        }
    }

    /// Accounts for one sample, as the monitor judged it.
    fn observe(&mut self, tick: &Tick, tree: &HashSet<u32>) {
        let timestamp = tick.timestamp.as_str();
        let mut gpus = Vec::new();
        for (index, result) in &tick.results {
            gpus.push(match result {
                Ok(sample) => self.readable(*index, sample, timestamp, tree),
                Err(e) => self.unreadable(*index, e, timestamp),
            });
        }
        raise(
            &mut self.total_tree,
            known_sum(gpus.iter().map(|g| g.tree)),
            timestamp,
        );
        raise(
            &mut self.total_delta,
            known_sum(gpus.iter().map(|g| g.delta)),
            timestamp,
        );
        self.samples.push((millis(tick.elapsed), gpus));
    }

    fn unreadable(&mut self, index: u32, error: &GpuError, timestamp: &str) -> RawGpu {
        let error = error.to_string();
        self.warn_once(&error, format!("{error} (first seen at {timestamp})"));
        RawGpu {
            index,
            device_used: None,
            tree: None,
            delta: None,
            error: Some(error),
        }
    }

    /// Both accountings of one GPU's sample, and the peaks they raise.
    fn readable(
        &mut self,
        index: u32,
        sample: &DeviceSample,
        timestamp: &str,
        tree: &HashSet<u32>,
    ) -> RawGpu {
        let mut usage = tree_usage(tree, &sample.processes);
        if let Some(cause) = &sample.process_error {
            // A list that could not be read is not an empty one: the tree's use is unknown.
            usage.bytes = None;
            self.process_error.get_or_insert_with(|| cause.clone());
            self.warn_once(
                cause,
                format!("the process list could not be read: {cause} (first seen at {timestamp})"),
            );
        }
        self.seen_per_process |= usage.seen;
        let device_used = sample.memory.used_bytes;
        let baseline = self.baseline.get(&index).copied().flatten();
        let delta = device_used.zip(baseline).map(|(u, b)| u.saturating_sub(b));
        let peaks = self.peaks.entry(index).or_default();
        raise(&mut peaks.tree, usage.bytes, timestamp);
        raise(&mut peaks.delta, delta, timestamp);
        peaks.device = peaks.device.max(device_used);
        self.raise_processes(index, &usage.per_process, timestamp);
        RawGpu {
            index,
            device_used,
            tree: usage.bytes,
            delta,
            error: None,
        }
    }

    /// Raises the peak of each of the tree's processes on `gpu`.
    fn raise_processes(&mut self, gpu: u32, per_process: &[(u32, u64)], timestamp: &str) {
        for &(pid, bytes) in per_process {
            let entry = self
                .processes
                .entry((pid, gpu))
                .or_insert_with(|| ProcessPeak {
                    pid,
                    name: procfs::process_name(pid),
                    gpu,
                    peak_used_bytes: 0,
                    peak_at: timestamp.to_string(),
                });
            if bytes > entry.peak_used_bytes {
                entry.peak_used_bytes = bytes;
                entry.peak_at = timestamp.to_string();
            }
        }
    }

    /// Per process where NVML gave a figure for any of the tree's processes; the device's use
    /// minus its baseline otherwise.
    fn accounting(&self) -> Accounting {
        if self.seen_per_process {
            Accounting::PerProcess
        } else {
            Accounting::DeviceDelta
        }
    }

    /// Says why the figures are what they are when they are not the tree's own.
    fn warn_about_accounting(&mut self, accounting: Accounting) {
        if accounting == Accounting::DeviceDelta && self.samples.seen > 0 {
            let why = match &self.process_error {
                Some(cause) => format!("NVML's process list could not be read ({cause})"),
                None => "NVML listed none of the command's processes with a memory figure (a \
                         container with its own PID namespace, Windows WDDM, or no GPU use at \
                         all)"
                    .to_string(),
            };
            self.warn(format!(
                "{why}, so used_bytes is the device's used memory minus its baseline and \
                 includes any other process's allocations"
            ));
        }
        if self.samples.seen == 0 {
            self.warn("the command ended before the first sample".to_string());
        }
    }

    /// GPU `index` in the measurement: what the snapshot says of it, its peak in `accounting`,
    /// and its growth as the monitor judged it.
    fn measured_gpu(
        &self,
        index: u32,
        snapshot: &vramfit_smi::Snapshot,
        accounting: Accounting,
        monitor: &mut Monitor,
    ) -> MeasuredGpu {
        let info = snapshot.gpus.iter().find(|g| g.index == Some(index));
        let peaks = self.peaks.get(&index);
        let peak = peaks.and_then(|peaks| match accounting {
            Accounting::PerProcess => peaks.tree.clone(),
            Accounting::DeviceDelta => peaks.delta.clone(),
        });
        let total_bytes = info.and_then(|g| g.memory.total_bytes);
        MeasuredGpu {
            index,
            name: info.and_then(|g| g.name.clone()),
            uuid: info.and_then(|g| g.uuid.clone()),
            total_bytes,
            baseline_used_bytes: self.baseline.get(&index).copied().flatten(),
            peak_used_bytes: peak.as_ref().map(|(b, _)| *b),
            peak_at: peak.map(|(_, at)| at),
            peak_device_used_bytes: peaks.and_then(|p| p.device),
            growth: monitor.growth(index, total_bytes),
        }
    }

    fn finish(
        mut self,
        snapshot: &vramfit_smi::Snapshot,
        gpus: &[u32],
        context: Context,
        monitor: &mut Monitor,
    ) -> Measurement {
        let accounting = self.accounting();
        self.warn_about_accounting(accounting);
        let measured_gpus = gpus
            .iter()
            .map(|&index| self.measured_gpu(index, snapshot, accounting, monitor))
            .collect();
        let total = match accounting {
            Accounting::PerProcess => self.total_tree,
            Accounting::DeviceDelta => self.total_delta,
        };
        // What the snapshot warned of (a replay, an unreadable field) stays with the figures.
        let mut warnings = snapshot.warnings.clone();
        for w in self.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        Measurement {
            schema: MEASUREMENT_SCHEMA.to_string(),
            command: context.command,
            host: context.host,
            driver_version: context.driver_version,
            started_at: context.started_at,
            ended_at: context.ended_at,
            duration_ms: millis(context.duration),
            interval_ms: millis(context.interval),
            accounting,
            gpus: measured_gpus,
            peak_used_bytes: total.as_ref().map(|(b, _)| *b),
            peak_at: total.map(|(_, at)| at),
            processes: match accounting {
                Accounting::PerProcess => self.processes.into_values().collect(),
                Accounting::DeviceDelta => Vec::new(),
            },
            samples_taken: self.samples.seen,
            sample_stride: self.samples.stride,
            samples: kept_samples(self.samples.items, accounting),
            exit: context.exit,
            warnings,
            actions: monitor.taken().to_vec(),
        }
    }
}

/// The samples kept, with each GPU's figure in `accounting`.
fn kept_samples(kept: Vec<(u64, Vec<RawGpu>)>, accounting: Accounting) -> Vec<MeasurementSample> {
    kept.into_iter()
        .map(|(elapsed_ms, raw)| MeasurementSample {
            elapsed_ms,
            gpus: raw
                .into_iter()
                .map(|g| SampleGpu {
                    index: g.index,
                    used_bytes: match accounting {
                        Accounting::PerProcess => g.tree,
                        Accounting::DeviceDelta => g.delta,
                    },
                    device_used_bytes: g.device_used,
                    // Without a single process figure there is no tree figure to give.
                    process_tree_bytes: match accounting {
                        Accounting::PerProcess => g.tree,
                        Accounting::DeviceDelta => None,
                    },
                    error: g.error,
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use vramfit_smi::{Memory, Snapshot};

    use super::super::source::tests::{CLIMB, H100};
    use super::super::source::RecordedSource;
    use vramfit_engine::growth::DEFAULT_WINDOW;

    use super::super::units::{Threshold, MIB};
    use super::*;

    const CRITICAL: Threshold = Threshold::Percent(95.0);

    /// [`measure`] of `command` over the recorded H100, in vramfit's process group, with no
    /// signal arriving and the notes thrown away.
    fn measure_h100(command: &[&str]) -> Result<(Measurement, i32), RunError> {
        measure(
            &mut replay(H100),
            &args(command),
            ChildGroup::Shared,
            &mut || None,
            &mut io::sink(),
        )
    }

    /// Runs `sh -c script` and checks that it ended as `exit` says and vramfit exits with its code.
    fn exits(script: &str, exit: ExitInfo) -> Measurement {
        let (m, code) = measure_h100(&["sh", "-c", script]).expect("ran");
        assert_eq!(code, exit.exit_code);
        assert_eq!(m.exit, exit);
        m
    }

    fn args(command: &[&str]) -> RunArgs {
        RunArgs {
            interval: Duration::from_millis(10),
            gpu: Vec::new(),
            out: PathBuf::from("unused.json"),
            levels: LevelArgs {
                warn: Threshold::Percent(85.0),
                critical: CRITICAL,
                on_warn_exec: None,
                on_critical_exec: None,
                growth_window: DEFAULT_WINDOW,
            },
            on_warn_signal: None,
            on_critical_signal: None,
            replay: None,
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn replay(text: &str) -> RecordedSource {
        RecordedSource::from_json(text).expect("fixture")
    }

    /// The monitor and run's recorder, fed made-up samples as the monitor loop feeds them.
    struct Recorded {
        monitor: Monitor,
        recorder: Recorder,
    }

    impl Recorded {
        /// Records the GPUs in `baseline`, with the growth check over `growth_window` samples.
        fn new(baseline: HashMap<u32, Option<u64>>, growth_window: usize) -> Recorded {
            let gpus: Vec<u32> = baseline.keys().copied().collect();
            let levels = LevelArgs {
                growth_window,
                ..args(&[]).levels
            };
            Recorded {
                monitor: Monitor::new(&gpus, &levels, [None, None], None),
                recorder: Recorder::new(baseline),
            }
        }

        fn observe(
            &mut self,
            elapsed: Duration,
            timestamp: &str,
            results: &[(u32, Result<DeviceSample, GpuError>)],
            tree: &HashSet<u32>,
        ) {
            let tick = self
                .monitor
                .judge(elapsed, timestamp.to_string(), results.to_vec());
            self.recorder.observe(&tick, tree);
        }

        fn finish(mut self, snapshot: &Snapshot, gpus: &[u32], context: Context) -> Measurement {
            self.recorder
                .finish(snapshot, gpus, context, &mut self.monitor)
        }
    }

    #[test]
    fn tree_usage_counts_only_the_tree() {
        let tree = HashSet::from([10, 11, 12]);
        let processes = [
            ProcessUsage {
                pid: 10,
                used_bytes: Some(5),
            },
            ProcessUsage {
                pid: 11,
                used_bytes: None,
            },
            ProcessUsage {
                pid: 12,
                used_bytes: Some(7),
            },
            ProcessUsage {
                pid: 99,
                used_bytes: Some(1000),
            },
        ];
        // Process 11 is listed without a figure: the tree's sum would be short, so it is unknown.
        let usage = tree_usage(&tree, &processes);
        assert_eq!(
            usage,
            TreeUsage {
                bytes: None,
                seen: true,
                per_process: vec![(10, 5), (12, 7)]
            }
        );
        let known = tree_usage(&tree, &[processes[0], processes[2], processes[3]]);
        assert_eq!(known.bytes, Some(12));
        let unavailable = [ProcessUsage {
            pid: 11,
            used_bytes: None,
        }];
        assert!(!tree_usage(&tree, &unavailable).seen);
        assert_eq!(tree_usage(&tree, &unavailable).bytes, None);
        // None of the tree listed: a known 0.
        assert_eq!(tree_usage(&tree, &processes[3..]).bytes, Some(0));
        assert_eq!(
            tree_usage(&HashSet::new(), &processes),
            TreeUsage::default()
        );
    }

    #[test]
    fn thinning_keeps_evenly_spaced_samples() {
        let mut thinned = Thinned::new(4);
        for i in 0..20u64 {
            thinned.push(i);
        }
        assert_eq!(thinned.seen, 20);
        assert_eq!(thinned.stride, 8);
        assert_eq!(thinned.items, [0, 8, 16]);
        assert!(thinned.items.iter().all(|i| i % thinned.stride == 0));
        let mut odd = Thinned::new(3);
        for i in 0..100u64 {
            odd.push(i);
        }
        assert!(odd.items.len() <= 4);
        assert!(odd.items.iter().all(|i| i % odd.stride == 0));
    }

    #[test]
    fn recorder_accounts_per_process_when_nvml_knows_the_tree() {
        let mut recorder = Recorded::new(HashMap::from([(0, Some(100 * MIB))]), DEFAULT_WINDOW);
        let tree = HashSet::from([std::process::id()]);
        let sample = |used: u64, mine: u64| {
            (
                0,
                Ok(DeviceSample {
                    index: 0,
                    memory: Memory {
                        used_bytes: Some(used * MIB),
                        ..Memory::default()
                    },
                    processes: vec![
                        ProcessUsage {
                            pid: std::process::id(),
                            used_bytes: Some(mine * MIB),
                        },
                        ProcessUsage {
                            pid: 1,
                            used_bytes: Some(50 * MIB),
                        },
                    ],
                    process_error: None,
                }),
            )
        };
        recorder.observe(Duration::ZERO, "t0", &[sample(200, 40)], &tree);
        recorder.observe(Duration::from_millis(200), "t1", &[sample(900, 700)], &tree);
        recorder.observe(Duration::from_millis(400), "t2", &[sample(600, 450)], &tree);
        let snap = replay(H100).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0], context(0));
        assert_eq!(m.accounting, Accounting::PerProcess);
        assert_eq!(m.peak_used_bytes, Some(700 * MIB));
        assert_eq!(m.peak_at.as_deref(), Some("t1"));
        assert_eq!(m.gpus[0].peak_device_used_bytes, Some(900 * MIB));
        assert_eq!(m.gpus[0].baseline_used_bytes, Some(100 * MIB));
        assert_eq!(m.gpus[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(m.processes.len(), 1);
        assert_eq!(m.processes[0].peak_used_bytes, 700 * MIB);
        assert!(m.processes[0].name.is_some());
        assert_eq!(m.samples[2].gpus[0].used_bytes, Some(450 * MIB));
        assert_eq!(m.samples[2].gpus[0].device_used_bytes, Some(600 * MIB));
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    }

    fn context(exit_code: i32) -> Context {
        Context {
            command: vec!["true".into()],
            host: None,
            driver_version: None,
            started_at: "s".into(),
            ended_at: "e".into(),
            duration: Duration::from_secs(1),
            interval: Duration::from_millis(200),
            exit: ExitInfo {
                code: Some(exit_code),
                signal: None,
                exit_code,
            },
        }
    }

    #[test]
    fn recorder_falls_back_to_device_delta_and_records_errors() {
        let mut recorder = Recorded::new(
            HashMap::from([(0, Some(MIB)), (1, Some(MIB))]),
            DEFAULT_WINDOW,
        );
        let mut source = replay(CLIMB);
        let tree = HashSet::from([1]);
        for step in 0..6u64 {
            let results = source.sample(&[0, 1]);
            recorder.observe(
                Duration::from_millis(step * 500),
                &format!("t{step}"),
                &results,
                &tree,
            );
        }
        let snap = replay(CLIMB).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0, 1], context(0));
        assert_eq!(m.accounting, Accounting::DeviceDelta);
        assert_eq!(m.gpus[0].peak_used_bytes, Some(77999 * MIB));
        assert_eq!(m.gpus[1].peak_used_bytes, Some(20999 * MIB));
        assert_eq!(m.gpus[0].peak_at.as_deref(), Some("t3"));
        // The total peak is the largest single-sample sum, not the sum of per-GPU peaks.
        assert_eq!(m.peak_used_bytes, Some((77999 + 20999) * MIB));
        assert!(m.processes.is_empty());
        assert_eq!(m.samples[4].gpus[1].used_bytes, None);
        assert!(m.samples[4].gpus[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("fallen off")));
        assert!(m
            .warnings
            .iter()
            .any(|w| w.contains("GPU 1") && w.contains("first seen at t4")));
        assert!(m.warnings.iter().any(|w| w.contains("minus its baseline")));
    }

    fn gpu_sample(index: u32, used: Option<u64>, error: Option<&str>) -> DeviceSample {
        DeviceSample {
            index,
            memory: Memory {
                used_bytes: used,
                ..Memory::default()
            },
            processes: Vec::new(),
            process_error: error.map(String::from),
        }
    }

    #[test]
    fn unknown_figures_are_null_not_0() {
        // GPU 0 has no baseline, GPU 1 cannot be read at all: no figure is known.
        let mut recorder =
            Recorded::new(HashMap::from([(0, None), (1, Some(MIB))]), DEFAULT_WINDOW);
        let tree = HashSet::from([1]);
        for step in 0..3u64 {
            let results = [
                (0, Ok(gpu_sample(0, Some(500 * MIB), None))),
                (1, Err(GpuError::GpuLost("GPU 1".into()))),
            ];
            let at = format!("t{step}");
            recorder.observe(Duration::from_millis(step * 10), &at, &results, &tree);
        }
        let snap = replay(CLIMB).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0, 1], context(0));
        assert_eq!(m.accounting, Accounting::DeviceDelta);
        assert_eq!(m.peak_used_bytes, None);
        assert_eq!(m.peak_at, None);
        assert_eq!(m.gpus[0].peak_used_bytes, None);
        assert_eq!(m.gpus[1].peak_used_bytes, None);
        assert_eq!(m.gpus[0].peak_device_used_bytes, Some(500 * MIB));
        let first = &m.samples[0].gpus;
        assert_eq!(first[0].used_bytes, None, "no baseline, no delta");
        assert_eq!(
            first[0].process_tree_bytes, None,
            "no process figure at all"
        );
        assert_eq!(first[1].used_bytes, None);
        // A lasting failure is one warning, not one per sample.
        let lost = m.warnings.iter().filter(|w| w.contains("GPU 1")).count();
        assert_eq!(lost, 1, "{:?}", m.warnings);
        let json = serde_json::to_value(&m).expect("JSON");
        assert!(json["peak_used_bytes"].is_null());
        assert!(json["gpus"][0]["peak_used_bytes"].is_null());
        assert!(report_line(&m).starts_with("vramfit: peak unknown (GPU 0 unknown, GPU 1 unknown)"));

        // A command that ends before the first sample has no peak either.
        let none = Recorded::new(HashMap::new(), DEFAULT_WINDOW).finish(&snap, &[0], context(0));
        assert_eq!(none.peak_used_bytes, None);
        assert_eq!(none.gpus[0].peak_used_bytes, None);
    }

    #[test]
    fn a_failed_process_list_is_reported_with_its_cause() {
        let cause = GpuError::NoPermission("GPU 0's processes".into()).to_string();
        let mut recorder = Recorded::new(HashMap::from([(0, Some(100 * MIB))]), DEFAULT_WINDOW);
        let tree = HashSet::from([std::process::id()]);
        for step in 0..3u64 {
            let results = [(0, Ok(gpu_sample(0, Some(300 * MIB), Some(&cause))))];
            let at = format!("t{step}");
            recorder.observe(Duration::from_millis(step * 10), &at, &results, &tree);
        }
        let snap = replay(H100).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0], context(0));
        assert_eq!(m.accounting, Accounting::DeviceDelta);
        assert_eq!(m.peak_used_bytes, Some(200 * MIB));
        assert_eq!(
            m.warnings[0],
            "the process list could not be read: no permission to read GPU 0's processes; run \
             as a user who may open /dev/nvidia* (first seen at t0)"
        );
        assert!(
            m.warnings[1].starts_with(
                "NVML's process list could not be read (no permission to read GPU 0's processes"
            ),
            "{:?}",
            m.warnings
        );
        assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
        assert_eq!(m.samples[0].gpus[0].process_tree_bytes, None);
    }

    #[test]
    fn the_device_figures_growth_is_measured_per_gpu() {
        // Made-up readings (a test input): GPU 0 grows 10 MiB every 500 ms (1200 MiB/min), GPU 1
        // stays flat but for one step.
        let mut recorder = Recorded::new(HashMap::from([(0, Some(0)), (1, Some(0))]), 30);
        for i in 0..40u64 {
            let step = if i < 25 { 1000 } else { 3000 };
            let results = [
                (0, Ok(gpu_sample(0, Some((1000 + 10 * i) * MIB), None))),
                (1, Ok(gpu_sample(1, Some(step * MIB), None))),
            ];
            let at = Duration::from_millis(i * 500);
            recorder.observe(at, "t", &results, &HashSet::new());
        }
        let snap = replay(CLIMB).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0, 1], context(0));
        let growth = m.gpus[0].growth.as_ref().expect("GPU 0 grows");
        assert_eq!(growth.samples, 30);
        assert!(
            (growth.bytes_per_minute - 1200.0 * MIB as f64).abs() < 1e-3,
            "{growth:?}"
        );
        // 95% of the replay's 81559 MiB.
        let critical = (85_520_809_984f64 * 0.95).ceil() as u64;
        assert_eq!(growth.critical_bytes, Some(critical));
        assert_eq!(m.gpus[1].growth, None, "one step is not growth");
    }

    #[test]
    fn a_failed_list_on_one_sample_is_unknown_there_not_0() {
        let me = std::process::id();
        let mut recorder = Recorded::new(HashMap::from([(0, Some(0))]), DEFAULT_WINDOW);
        let tree = HashSet::from([me]);
        let mine = |used: u64| {
            let mut s = gpu_sample(0, Some(used), None);
            s.processes.push(ProcessUsage {
                pid: me,
                used_bytes: Some(used),
            });
            s
        };
        recorder.observe(Duration::ZERO, "t0", &[(0, Ok(mine(10 * MIB)))], &tree);
        let failed = gpu_sample(0, Some(20 * MIB), Some("no permission"));
        recorder.observe(Duration::from_millis(10), "t1", &[(0, Ok(failed))], &tree);
        let snap = replay(H100).snapshot().expect("frame");
        let m = recorder.finish(&snap, &[0], context(0));
        assert_eq!(m.accounting, Accounting::PerProcess);
        assert_eq!(m.samples[1].gpus[0].used_bytes, None);
        assert_eq!(m.samples[1].gpus[0].process_tree_bytes, None);
        assert_eq!(m.peak_used_bytes, Some(10 * MIB));
    }

    #[test]
    fn each_signal_is_forwarded_once() {
        let kill = |signal| Received {
            signal,
            from_terminal: false,
        };
        let key = |signal| Received {
            signal,
            from_terminal: true,
        };
        // Sharing the terminal's foreground group, the child has the terminal's signals already.
        assert_eq!(ChildGroup::Shared.forward_to(key(libc::SIGINT), 42), None);
        assert_eq!(ChildGroup::Shared.forward_to(key(libc::SIGHUP), 42), None);
        assert_eq!(
            ChildGroup::Shared.forward_to(kill(libc::SIGUSR1), 42),
            Some(42)
        );
        // In its own group nothing reaches it but what vramfit sends, to the whole group.
        assert_eq!(ChildGroup::Own.forward_to(key(libc::SIGINT), 42), Some(-42));
        assert_eq!(
            ChildGroup::Own.forward_to(kill(libc::SIGTERM), 42),
            Some(-42)
        );
    }

    /// A shell cannot trap a signal that was ignored when it started (POSIX `trap`), and a test
    /// binary started in the background by a script (`cmd &`, nohup) has SIGINT and SIGQUIT
    /// ignored, which the command inherits. Where they were ignored, this test process takes
    /// their default action back, so the command's traps take wherever the tests run.
    fn stop_ignoring(signals: &[i32]) {
        for &signal in signals {
            // SAFETY: swapping a signal's disposition; only an ignored one is left changed.
            unsafe {
                let previous = libc::signal(signal, libc::SIG_DFL);
                if previous != libc::SIG_IGN {
                    libc::signal(signal, previous);
                }
            }
        }
    }

    #[test]
    fn a_child_in_its_own_group_gets_every_forwarded_signal() {
        stop_ignoring(&[libc::SIGHUP, libc::SIGINT, libc::SIGQUIT]);
        let dir = std::env::temp_dir().join(format!("vramfit-run-own-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let log = dir.join("got");
        let ready = dir.join("ready");
        let script = format!(
            "ulimit -c 0; for s in HUP QUIT USR1 USR2 INT; do trap \"echo $s >> '{log}'\" $s; done; \
             trap 'exit 42' TERM; touch '{ready}'; while :; do sleep 0.05; done",
            log = log.display(),
            ready = ready.display()
        );
        let mut queue = vec![
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGINT,
            libc::SIGTERM,
        ];
        let mut interrupts = || {
            if !ready.exists() || queue.is_empty() {
                return None;
            }
            let got = std::fs::read_to_string(&log).unwrap_or_default();
            // One signal at a time, each once the last has been trapped; TERM ends it.
            if got.lines().count() + queue.len() < 6 {
                return None;
            }
            Some(Received {
                signal: queue.remove(0),
                from_terminal: true,
            })
        };
        let (m, code) = measure(
            &mut replay(H100),
            &args(&["sh", "-c", &script]),
            ChildGroup::Own,
            &mut interrupts,
            &mut io::sink(),
        )
        .expect("ran");
        assert_eq!(code, 42);
        assert_eq!(m.exit.code, Some(42));
        let got = std::fs::read_to_string(&log).expect("trapped");
        assert_eq!(got, "HUP\nQUIT\nUSR1\nUSR2\nINT\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn exit_codes_pass_through() {
        let m = exits(
            "sleep 0.1; exit 7",
            ExitInfo {
                code: Some(7),
                signal: None,
                exit_code: 7,
            },
        );
        assert_eq!(m.command, ["sh", "-c", "sleep 0.1; exit 7"]);
        assert_eq!(m.accounting, Accounting::DeviceDelta);
        // The replayed device never changes, so nothing is attributed to the command.
        assert_eq!(m.peak_used_bytes, Some(0));
        assert_eq!(m.gpus[0].baseline_used_bytes, Some(19818 * MIB));
        assert_eq!(m.host.as_deref(), Some("replay-host"));
    }

    #[test]
    fn a_killed_command_exits_128_plus_the_signal() {
        exits(
            "kill -KILL $$",
            ExitInfo {
                code: None,
                signal: Some(9),
                exit_code: 137,
            },
        );
    }

    #[test]
    fn signals_sent_to_vramfit_are_forwarded() {
        let start = Instant::now();
        let mut sent = false;
        // Wait until the shell has set its trap before signalling.
        let mut interrupts = || {
            if !sent && start.elapsed() > Duration::from_millis(300) {
                sent = true;
                return Some(Received {
                    signal: libc::SIGTERM,
                    from_terminal: false,
                });
            }
            None
        };
        let script = "trap 'exit 42' TERM; while :; do sleep 0.05; done";
        let (_, code) = measure(
            &mut replay(H100),
            &args(&["sh", "-c", script]),
            ChildGroup::Shared,
            &mut interrupts,
            &mut io::sink(),
        )
        .expect("ran");
        assert_eq!(code, 42);
    }

    #[test]
    fn terminal_signals_are_not_sent_twice() {
        let mut once = Some(Received {
            signal: libc::SIGTERM,
            from_terminal: true,
        });
        let (_, code) = measure(
            &mut replay(H100),
            &args(&["sleep", "0.2"]),
            ChildGroup::Shared,
            &mut || once.take(),
            &mut io::sink(),
        )
        .expect("ran");
        assert_eq!(code, 0);
    }

    #[test]
    fn a_missing_program_is_reported() {
        let result = measure_h100(&["/nonexistent/vramfit-test"]);
        match result {
            Err(RunError::Spawn { program, error }) => {
                assert_eq!(program, "/nonexistent/vramfit-test");
                assert_eq!(error.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("expected a spawn error, got {other:?}"),
        }
    }

    #[test]
    fn unknown_gpus_stop_the_run_before_it_starts() {
        let run = RunArgs {
            gpu: vec![3],
            ..args(&["true"])
        };
        assert!(matches!(
            measure(
                &mut replay(H100),
                &run,
                ChildGroup::Shared,
                &mut || None,
                &mut io::sink()
            ),
            Err(RunError::Gpu(GpuError::NoSuchGpu { index: 3, count: 1 }))
        ));
    }

    /// Reports every child of this test process as holding 1 GiB, as NVML would for a CUDA
    /// program started by `run`.
    struct ChildrenOnGpu;

    impl GpuSource for ChildrenOnGpu {
        fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
            replay(H100).snapshot()
        }

        fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
            let me = std::process::id();
            let processes: Vec<ProcessUsage> = procfs::parent_map()
                .into_iter()
                .filter(|&(_, parent)| parent == me)
                .map(|(pid, _)| ProcessUsage {
                    pid,
                    used_bytes: Some(1 << 30),
                })
                .collect();
            let used = processes.len() as u64 * (1 << 30);
            gpus.iter()
                .map(|&index| {
                    let memory = Memory {
                        used_bytes: Some(used),
                        ..Memory::default()
                    };
                    (
                        index,
                        Ok(DeviceSample {
                            index,
                            memory,
                            processes: processes.clone(),
                            process_error: None,
                        }),
                    )
                })
                .collect()
        }
    }

    #[test]
    fn a_real_child_is_accounted_per_process() {
        let (m, code) = measure(
            &mut ChildrenOnGpu,
            &args(&["sleep", "0.3"]),
            ChildGroup::Shared,
            &mut || None,
            &mut io::sink(),
        )
        .expect("ran");
        assert_eq!(code, 0);
        assert_eq!(m.accounting, Accounting::PerProcess);
        assert_eq!(m.peak_used_bytes, Some(1 << 30));
        assert_eq!(m.processes.len(), 1);
        assert_eq!(m.processes[0].name.as_deref(), Some("sleep"));
        assert!(m.samples_taken >= 2, "{}", m.samples_taken);
    }

    #[test]
    fn measurements_round_trip_with_stable_names() {
        let (m, _) = measure_h100(&["sleep", "0.1"]).expect("ran");
        let text = serde_json::to_string(&m).expect("serialises");
        let back: Measurement = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, m);
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(value["schema"], MEASUREMENT_SCHEMA);
        assert_eq!(value["accounting"], "device_delta");
        for key in [
            "started_at",
            "ended_at",
            "peak_used_bytes",
            "samples",
            "exit",
            "gpus",
        ] {
            assert!(value.get(key).is_some(), "missing {key}");
        }
        assert_eq!(value["exit"]["exit_code"], 0);
        let line = report_line(&m);
        assert!(
            line.starts_with("vramfit: peak 0 MiB (GPU 0 0 MiB), device used minus baseline"),
            "{line}"
        );
    }
}
