//! `vramfit watch`: a live VRAM status line per GPU, a warning each time use crosses a threshold
//! upward (re-armed by `alarm.rs`'s rule) and the actions given for that level, an optional
//! per-sample log (JSON lines or CSV) written as each sample is taken, with the actions and the
//! growth found as event lines in JSON, and a summary (peak, mean, time above each threshold,
//! steady growth and the time to the critical level, the actions taken) on Ctrl-C or at the end
//! of `--duration`.
//!
//! When it stops: at the end of `--duration`; on Ctrl-C or SIGTERM (a second one exits at once,
//! without the summary, even while a sample or a log write is stuck); when stdout is closed and
//! there is no `--log` (`watch | head -3`); when the log cannot be written (after the summary,
//! with a non-zero exit); and when every watched GPU has failed [`GIVE_UP_AFTER`] samples in a
//! row. One failed read is an error sample in the log and on the status line, not the end.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;

use vramfit_engine::growth::Growth;
use vramfit_engine::measurement::Level;

use super::actions::{self, LevelArgs};
use super::alarm::{growth_sentence, Crossing};
use super::error::{GpuError, EXIT_GPU_UNAVAILABLE, EXIT_USAGE};
use super::monitor::{raise, reading, Driver, Monitor, Pace, Peak, Tick};
use super::signals;
use super::source::{select_gpus, DeviceSample, GpuSource};
use super::units::{self, mib, millis, parse_duration, share};

#[derive(clap::Args, Debug, Clone)]
pub struct WatchArgs {
    /// Time between samples, e.g. 500ms or 2s.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after this long, e.g. 10m; without it, watch until Ctrl-C.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// GPUs to watch, by index: 0,1. All of them by default.
    #[arg(long, value_delimiter = ',')]
    pub gpu: Vec<u32>,
    #[command(flatten)]
    pub levels: LevelArgs,
    /// Write every sample to this file as it is taken (an existing file is replaced); in JSON
    /// lines, each action and the growth found are lines of their own, with an "event" key.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The log's format; by default CSV for a `.csv` file and JSON lines otherwise.
    #[arg(long, value_enum)]
    pub format: Option<LogFormat>,
    /// Read recorded snapshots from this file instead of NVML (tests and demos).
    #[arg(long, hide = true)]
    pub replay: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Jsonl,
    Csv,
}

impl LogFormat {
    fn for_path(path: &Path, chosen: Option<LogFormat>) -> LogFormat {
        chosen.unwrap_or_else(|| match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("csv") => LogFormat::Csv,
            _ => LogFormat::Jsonl,
        })
    }
}

/// Runs `vramfit watch`.
pub fn watch(args: &WatchArgs) -> ExitCode {
    let mut source = match super::open_source(args.replay.as_deref()) {
        Ok(source) => source,
        Err(e) => return e.report(&mut io::stderr()),
    };
    if let Err(e) = signals::install(signals::STOP, true) {
        let _ = writeln!(
            io::stderr(),
            "vramfit: Ctrl-C will end watch without a summary ({e})"
        );
    }
    let mut log = match &args.log {
        Some(path) => {
            let format = LogFormat::for_path(path, args.format);
            match File::create(path).and_then(|f| SampleLog::new(Box::new(f), format)) {
                Ok(log) => Some(log),
                Err(e) => {
                    let _ = writeln!(
                        io::stderr(),
                        "vramfit: cannot create the log {}: {e}",
                        path.display()
                    );
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
        None => None,
    };
    let stdout = io::stdout();
    let mut screen = Screen {
        tty: stdout.is_terminal(),
        out: &mut stdout.lock(),
        err: &mut io::stderr(),
    };
    let result = watch_loop(&mut *source, args, log.as_mut(), &mut screen, &mut || {
        signals::take().is_some()
    });
    match result {
        Ok(Outcome::Finished | Outcome::StdoutClosed) => ExitCode::SUCCESS,
        Ok(Outcome::AllLost) => ExitCode::from(EXIT_GPU_UNAVAILABLE),
        Ok(Outcome::LogFailed(e)) => {
            let path = args.log.as_deref().unwrap_or(Path::new("-"));
            let _ = writeln!(
                io::stderr(),
                "vramfit: cannot write the log {}: {e}",
                path.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => e.report(&mut io::stderr()),
    }
}

/// Where the status line, warnings and summary go.
struct Screen<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Redraw one status line in place rather than printing a line per sample.
    tty: bool,
}

impl Screen<'_> {
    /// Prints `notes` on stderr and then the status `line`; whether the line could be written.
    /// Output to the terminal is best effort: a closed stdout must not stop the log.
    fn show(&mut self, notes: &[String], line: &str) -> io::Result<()> {
        if self.tty && !notes.is_empty() {
            let _ = write!(self.out, "\r\x1b[K");
            let _ = self.out.flush();
        }
        for note in notes {
            let _ = writeln!(self.err, "{note}");
        }
        match self.tty {
            true => write!(self.out, "\r\x1b[K{line}"),
            false => writeln!(self.out, "{line}"),
        }
        .and_then(|()| self.out.flush())
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Finished,
    /// Every watched GPU failed on [`GIVE_UP_AFTER`] samples in a row.
    AllLost,
    /// Nobody reads the status lines any more and there is no log to keep writing.
    StdoutClosed,
    /// Writing the log failed, with why; the summary was still printed.
    LogFailed(String),
}

/// Samples in a row on which every watched GPU must fail before watch gives up: one failed
/// read (a driver hiccup, a timeout) is logged as an error sample and watching goes on, while a
/// GPU that fell off the bus stays off until it is reset, so 5 is enough to be sure (2.5 s at
/// the default interval).
const GIVE_UP_AFTER: u32 = 5;

/// The longest sleep between checks for Ctrl-C and for the end of `--duration`.
const NAP: Duration = Duration::from_millis(50);

fn watch_loop(
    source: &mut dyn GpuSource,
    args: &WatchArgs,
    log: Option<&mut SampleLog>,
    screen: &mut Screen,
    stop: &mut dyn FnMut() -> bool,
) -> Result<Outcome, GpuError> {
    let snapshot = source.snapshot()?;
    let gpus = select_gpus(&snapshot, &args.gpu)?;
    // A replay says so here ("replayed from FILE, not read from a GPU"), as do live warnings.
    for warning in &snapshot.warnings {
        let _ = writeln!(screen.err, "warning: {warning}");
    }
    let mut monitor = Monitor::new(&gpus, &args.levels, [None, None], None);
    let pace = Pace {
        start: Instant::now(),
        interval: args.interval,
        nap: NAP,
    };
    let mut watching = Watching {
        watcher: Watcher::new(&gpus),
        log,
        screen,
        stop,
        // `None`: no end (no --duration, or one past what an Instant holds, which the parser's
        // cap on durations already rules out); never an overflow panic.
        end_at: args.duration.and_then(|d| pace.start.checked_add(d)),
        samples: 0,
        all_failed_in_a_row: 0,
    };
    let outcome = monitor.sample_until(source, &pace, &mut watching);
    let elapsed = match args.duration {
        Some(d) => pace.start.elapsed().min(d),
        None => pace.start.elapsed(),
    };
    Ok(watching.finish(outcome, &mut monitor, elapsed))
}

/// watch's side of the monitor loop: the log, the status line and the notes, the tallies for the
/// summary, and when to stop.
struct Watching<'a, 'b> {
    watcher: Watcher,
    log: Option<&'a mut SampleLog>,
    screen: &'a mut Screen<'b>,
    stop: &'a mut dyn FnMut() -> bool,
    end_at: Option<Instant>,
    samples: u64,
    all_failed_in_a_row: u32,
}

impl Driver for Watching<'_, '_> {
    type End = Outcome;

    fn poll(&mut self) -> ControlFlow<Outcome> {
        if (self.stop)() || self.end_at.is_some_and(|end| Instant::now() >= end) {
            return ControlFlow::Break(Outcome::Finished);
        }
        ControlFlow::Continue(())
    }

    fn deadline(&self) -> Option<Instant> {
        self.end_at
    }

    fn sampled(&mut self, tick: &Tick, monitor: &Monitor) -> ControlFlow<Outcome> {
        self.samples += 1;
        let mut log_failed = self.log_samples(tick).err();
        let events = self.watcher.observe(tick, monitor);
        let mut notes: Vec<String> = events.iter().map(Event::to_string).collect();
        for action in tick.crossed.iter().flat_map(|c| &c.actions) {
            notes.push(actions::action_line(action));
            if let Some(log) = self.log.as_deref_mut() {
                if let Err(e) = log.event("action", action) {
                    log_failed.get_or_insert(e.to_string());
                }
            }
        }
        notes.extend(tick.reaped.iter().cloned());
        let shown = self.screen.show(&notes, &self.watcher.status_line(monitor));
        if let Some(e) = log_failed {
            return ControlFlow::Break(Outcome::LogFailed(e));
        }
        // With a log the status line is a courtesy; without one it is the output.
        if shown.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) && self.log.is_none() {
            return ControlFlow::Break(Outcome::StdoutClosed);
        }
        if self.all_lost(tick) {
            return ControlFlow::Break(Outcome::AllLost);
        }
        ControlFlow::Continue(())
    }
}

impl Watching<'_, '_> {
    /// Writes each GPU's result to the log, stopping at the first failed write.
    fn log_samples(&mut self, tick: &Tick) -> Result<(), String> {
        let Some(log) = self.log.as_deref_mut() else {
            return Ok(());
        };
        for (index, result) in &tick.results {
            let record = LogRecord::new(&tick.timestamp, tick.elapsed, *index, result);
            log.write(&record).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Whether every watched GPU has now failed [`GIVE_UP_AFTER`] samples in a row.
    fn all_lost(&mut self, tick: &Tick) -> bool {
        if tick.results.iter().all(|(_, r)| r.is_err()) {
            self.all_failed_in_a_row += 1;
        } else {
            self.all_failed_in_a_row = 0;
        }
        self.all_failed_in_a_row >= GIVE_UP_AFTER
    }

    /// Closes the log with the growth found and prints the summary, `elapsed` into the watch.
    fn finish(self, outcome: Outcome, monitor: &mut Monitor, elapsed: Duration) -> Outcome {
        let Watching {
            mut watcher,
            log,
            screen,
            samples,
            ..
        } = self;
        watcher.finish(elapsed, monitor);
        // The growth found closes the log, unless writing it has failed already.
        let outcome = match (outcome, log) {
            (Outcome::LogFailed(e), _) => Outcome::LogFailed(e),
            (outcome, Some(log)) => match watcher.log_growth(log) {
                Ok(()) => outcome,
                Err(e) => Outcome::LogFailed(e.to_string()),
            },
            (outcome, None) => outcome,
        };
        if screen.tty {
            let _ = writeln!(screen.out);
        }
        if outcome == Outcome::AllLost {
            let _ = writeln!(
                screen.err,
                "vramfit: no watched GPU could be read on {GIVE_UP_AFTER} samples in a row"
            );
        }
        let mut summary = watcher.summary(monitor, elapsed, samples);
        for line in monitor.action_summary() {
            summary += &format!("  {line}\n");
        }
        let _ = write!(screen.out, "{summary}");
        let _ = screen.out.flush();
        outcome
    }
}

/// watch's tallies of each GPU for the status line and the summary: peak, mean, time above each
/// level, errors and growth.
struct Watcher {
    tracks: Vec<Track>,
}

struct Track {
    index: u32,
    used: Option<u64>,
    peak: Peak,
    sum: u128,
    count: u64,
    errors: u64,
    last_error: Option<String>,
    above: [bool; 2],
    time_above: [Duration; 2],
    /// When the last readable sample was taken; `None` after an error, whose state is unknown.
    last_at: Option<Duration>,
    /// Steady growth over the monitor's window when the watch ended.
    growth: Option<Growth>,
}

impl Track {
    /// Counts the time since the last readable sample towards the levels it was above.
    fn settle(&mut self, at: Duration) {
        if let Some(last) = self.last_at {
            for (level, above) in self.above.iter().enumerate() {
                if *above {
                    self.time_above[level] += at.saturating_sub(last);
                }
            }
        }
    }

    /// Tallies a readable sample of `used` bytes.
    fn tally(&mut self, used: u64, tick: &Tick, monitor: &Monitor) {
        self.used = Some(used);
        self.sum += u128::from(used);
        self.count += 1;
        raise(&mut self.peak, Some(used), &tick.timestamp);
        let total = monitor.total(self.index);
        for level in Level::ALL {
            let limit = monitor.threshold(level).limit_bytes(total);
            self.above[level as usize] = limit.is_some_and(|limit| used >= limit);
        }
        self.last_at = Some(tick.elapsed);
    }

    /// The summary's lines for a GPU read at least once: its peak, mean, time above each level
    /// and growth.
    fn peak_lines(
        &self,
        (peak, at): &(u64, String),
        monitor: &Monitor,
        head: &str,
        pad: &str,
    ) -> String {
        let total = monitor.total(self.index);
        let of_total = total
            .map(|total| format!(" / {}", mib(total)))
            .unwrap_or_default();
        let share = share(*peak, total);
        let mut out = format!("{head}peak {}{of_total}{share} at {at}\n", mib(*peak));
        let mean = (self.sum / u128::from(self.count.max(1))) as u64;
        out += &format!("{pad}mean {}\n", mib(mean));
        for level in Level::ALL {
            let threshold = monitor.threshold(level);
            out += &format!(
                "{pad}above {} {}: {}\n",
                level.name(),
                threshold.describe(threshold.limit_bytes(total)),
                units::human_duration(self.time_above[level as usize])
            );
        }
        if let Some(growth) = &self.growth {
            out += &format!("{pad}{}\n", growth_sentence(growth));
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Crossed {
        crossing: Crossing,
        timestamp: String,
    },
    Failed {
        gpu: u32,
        error: String,
    },
    Recovered {
        gpu: u32,
        timestamp: String,
    },
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Event::Crossed {
                crossing,
                timestamp,
            } => f.write_str(&crossing.message(timestamp)),
            Event::Failed { gpu, error } => write!(
                f,
                "error: GPU {gpu} cannot be read ({error}); watching the others"
            ),
            Event::Recovered { gpu, timestamp } => {
                write!(f, "note: GPU {gpu} can be read again at {timestamp}")
            }
        }
    }
}

impl Watcher {
    fn new(gpus: &[u32]) -> Watcher {
        Watcher {
            tracks: gpus
                .iter()
                .map(|&index| Track {
                    index,
                    used: None,
                    peak: None,
                    sum: 0,
                    count: 0,
                    errors: 0,
                    last_error: None,
                    above: [false; 2],
                    time_above: [Duration::ZERO; 2],
                    last_at: None,
                    growth: None,
                })
                .collect(),
        }
    }

    /// Tallies a sample the monitor has judged; what to tell of it, GPU by GPU: a failure (once
    /// per outage), a recovery, the levels crossed.
    fn observe(&mut self, tick: &Tick, monitor: &Monitor) -> Vec<Event> {
        let mut events = Vec::new();
        for (index, result) in &tick.results {
            let Some(track) = self.tracks.iter_mut().find(|t| t.index == *index) else {
                continue;
            };
            track.settle(tick.elapsed);
            match reading(*index, result) {
                Ok((used, _)) => {
                    if track.errors > 0 && track.last_at.is_none() {
                        events.push(Event::Recovered {
                            gpu: *index,
                            timestamp: tick.timestamp.clone(),
                        });
                    }
                    track.tally(used, tick, monitor);
                    let crossed = tick.crossed.iter().filter(|c| c.crossing.gpu == *index);
                    events.extend(crossed.map(|c| Event::Crossed {
                        crossing: c.crossing.clone(),
                        timestamp: tick.timestamp.clone(),
                    }));
                }
                Err(error) => {
                    // One message per outage, not one per sample.
                    if track.last_at.is_some() || track.count + track.errors == 0 {
                        events.push(Event::Failed {
                            gpu: *index,
                            error: error.clone(),
                        });
                    }
                    track.errors += 1;
                    track.last_error = Some(error);
                    track.used = None;
                    track.last_at = None;
                }
            }
        }
        events
    }

    /// Counts the time from the last sample to the end of the watch, and judges the growth.
    fn finish(&mut self, at: Duration, monitor: &mut Monitor) {
        for track in &mut self.tracks {
            track.settle(at);
            track.last_at = track.last_at.map(|_| at);
            track.growth = monitor.growth(track.index, monitor.total(track.index));
        }
    }

    /// Writes each GPU's growth, judged by [`Watcher::finish`], as an event line of `log`.
    fn log_growth(&self, log: &mut SampleLog) -> io::Result<()> {
        for track in &self.tracks {
            if let Some(growth) = &track.growth {
                let line = GrowthLine {
                    gpu: track.index,
                    growth,
                };
                log.event("growth", &line)?;
            }
        }
        Ok(())
    }

    /// `VRAM: 8192 MiB / 16376 MiB (50%) | peak 9000 MiB`, prefixed `GPU n` when watching several.
    fn status_line(&self, monitor: &Monitor) -> String {
        let several = self.tracks.len() > 1;
        self.tracks
            .iter()
            .map(|t| {
                let label = if several {
                    format!("GPU {} VRAM", t.index)
                } else {
                    "VRAM".to_string()
                };
                let Some(used) = t.used else {
                    return format!("{label}: unreadable");
                };
                let total = monitor.total(t.index);
                let share = share(used, total);
                let total = total.map(mib).unwrap_or_else(|| "? MiB".to_string());
                let peak = t.peak.as_ref().map_or(used, |(p, _)| *p);
                format!(
                    "{label}: {} / {total}{share} | peak {}",
                    mib(used),
                    mib(peak)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn summary(&self, monitor: &Monitor, elapsed: Duration, samples: u64) -> String {
        let mut out = format!(
            "summary: {samples} sample{} over {}\n",
            if samples == 1 { "" } else { "s" },
            units::human_duration(elapsed)
        );
        for t in &self.tracks {
            let head = format!("  GPU {}  ", t.index);
            let pad = " ".repeat(head.len());
            match &t.peak {
                Some(peak) => out += &t.peak_lines(peak, monitor, &head, &pad),
                None => out += &format!("{head}no sample could be read\n"),
            }
            if let Some(error) = &t.last_error {
                out += &format!(
                    "{pad}errors: {} sample{}; last: {error}\n",
                    t.errors,
                    if t.errors == 1 { "" } else { "s" }
                );
            }
        }
        out
    }
}

/// A growth found, as a line of the JSON log.
#[derive(Serialize)]
struct GrowthLine<'a> {
    gpu: u32,
    #[serde(flatten)]
    growth: &'a Growth,
}

/// An event as a line of the JSON log: `{"event": "action", …}`.
#[derive(Serialize)]
struct EventLine<'a, T: Serialize> {
    event: &'static str,
    #[serde(flatten)]
    detail: &'a T,
}

/// One GPU in one sample, as a line of the log.
#[derive(Serialize, Debug, PartialEq)]
struct LogRecord<'a> {
    timestamp: &'a str,
    elapsed_ms: u64,
    gpu: u32,
    used_bytes: Option<u64>,
    total_bytes: Option<u64>,
    free_bytes: Option<u64>,
    reserved_bytes: Option<u64>,
    error: Option<String>,
}

impl<'a> LogRecord<'a> {
    fn new(
        timestamp: &'a str,
        elapsed: Duration,
        gpu: u32,
        result: &Result<DeviceSample, GpuError>,
    ) -> LogRecord<'a> {
        let memory = result.as_ref().map(|s| s.memory).unwrap_or_default();
        LogRecord {
            timestamp,
            elapsed_ms: millis(elapsed),
            gpu,
            used_bytes: memory.used_bytes,
            total_bytes: memory.total_bytes,
            free_bytes: memory.free_bytes,
            reserved_bytes: memory.reserved_bytes,
            error: result.as_ref().err().map(|e| e.to_string()),
        }
    }
}

/// One judged sample as the Python package's monitor returns it: each GPU's reading as a line
/// of watch's log (`samples`), and each level crossed (`crossed`) with whether it was reached
/// (then its actions are due) and the warning watch prints for it.
pub fn tick_json(tick: &Tick) -> serde_json::Value {
    let samples: Vec<LogRecord> = tick
        .results
        .iter()
        .map(|(index, result)| LogRecord::new(&tick.timestamp, tick.elapsed, *index, result))
        .collect();
    let crossed: Vec<serde_json::Value> = tick
        .crossed
        .iter()
        .map(|c| {
            let c = &c.crossing;
            serde_json::json!({
                "gpu": c.gpu,
                "level": c.level.name(),
                "used_bytes": c.used,
                "limit_bytes": c.limit,
                "total_bytes": c.total,
                "reached": c.reached,
                "message": c.message(&tick.timestamp),
            })
        })
        .collect();
    serde_json::json!({ "samples": samples, "crossed": crossed })
}

const CSV_HEADER: &str =
    "timestamp,elapsed_ms,gpu,used_bytes,total_bytes,free_bytes,reserved_bytes,error\n";

/// The per-sample log: every record goes to the OS as it is written, so killing watch (even
/// with SIGKILL) loses at most the sample being taken.
struct SampleLog {
    writer: Box<dyn Write>,
    format: LogFormat,
}

impl SampleLog {
    fn new(mut writer: Box<dyn Write>, format: LogFormat) -> io::Result<SampleLog> {
        if format == LogFormat::Csv {
            writer.write_all(CSV_HEADER.as_bytes())?;
            writer.flush()?;
        }
        Ok(SampleLog { writer, format })
    }

    /// Writes `detail` as an event line to a JSON-lines log; a CSV log holds samples only.
    fn event(&mut self, event: &'static str, detail: &impl Serialize) -> io::Result<()> {
        if self.format == LogFormat::Csv {
            return Ok(());
        }
        let mut line =
            serde_json::to_string(&EventLine { event, detail }).map_err(io::Error::other)?;
        line.push('\n');
        self.writer.write_all(line.as_bytes())?;
        self.writer.flush()
    }

    fn write(&mut self, record: &LogRecord) -> io::Result<()> {
        let line = match self.format {
            LogFormat::Jsonl => {
                let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
                line.push('\n');
                line
            }
            LogFormat::Csv => {
                let number = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
                format!(
                    "{},{},{},{},{},{},{},{}\n",
                    record.timestamp,
                    record.elapsed_ms,
                    record.gpu,
                    number(record.used_bytes),
                    number(record.total_bytes),
                    number(record.free_bytes),
                    number(record.reserved_bytes),
                    record.error.as_deref().map(csv_field).unwrap_or_default()
                )
            }
        };
        // One write per record, so a reader never sees half a line from us.
        self.writer.write_all(line.as_bytes())?;
        self.writer.flush()
    }
}

/// Quotes a CSV field when it holds a separator, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use vramfit_smi::{Memory, Snapshot};

    use super::super::source::tests::CLIMB;
    use super::super::source::RecordedSource;
    use super::super::units::{Threshold, MIB};
    use super::*;

    const TOTAL: u64 = 16376 * MIB;

    fn ok(index: u32, used_mib: u64) -> (u32, Result<DeviceSample, GpuError>) {
        (
            index,
            Ok(DeviceSample {
                index,
                memory: Memory {
                    total_bytes: Some(TOTAL),
                    used_bytes: Some(used_mib * MIB),
                    free_bytes: Some(TOTAL - used_mib * MIB),
                    reserved_bytes: None,
                },
                processes: Vec::new(),
                process_error: None,
            }),
        )
    }

    fn lost(index: u32) -> (u32, Result<DeviceSample, GpuError>) {
        (index, Err(GpuError::GpuLost(format!("GPU {index}"))))
    }

    /// The monitor and watch's tallies, fed made-up samples as the monitor loop feeds them.
    struct Watched {
        monitor: Monitor,
        watcher: Watcher,
    }

    impl Watched {
        fn observe(
            &mut self,
            at: Duration,
            timestamp: &str,
            results: &[(u32, Result<DeviceSample, GpuError>)],
        ) -> Vec<Event> {
            let tick = self
                .monitor
                .judge(at, timestamp.to_string(), results.to_vec());
            self.watcher.observe(&tick, &self.monitor)
        }

        fn finish(&mut self, at: Duration) {
            self.watcher.finish(at, &mut self.monitor);
        }

        fn status_line(&self) -> String {
            self.watcher.status_line(&self.monitor)
        }

        fn summary(&self, elapsed: Duration, samples: u64) -> String {
            self.watcher.summary(&self.monitor, elapsed, samples)
        }
    }

    impl std::ops::Deref for Watched {
        type Target = Watcher;

        fn deref(&self) -> &Watcher {
            &self.watcher
        }
    }

    fn watcher(gpus: &[u32]) -> Watched {
        let levels = LevelArgs {
            critical: Threshold::Bytes(15_000 * MIB),
            growth_window: 120,
            ..args().levels
        };
        Watched {
            monitor: Monitor::new(gpus, &levels, [None, None], None),
            watcher: Watcher::new(gpus),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn crossings(events: &[Event]) -> Vec<(u32, &'static str)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Crossed { crossing, .. } => Some((crossing.gpu, crossing.level.name())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn status_line_matches_the_issue() {
        let mut w = watcher(&[0]);
        w.observe(ms(0), "t0", &[ok(0, 9000)]);
        w.observe(ms(500), "t1", &[ok(0, 8192)]);
        assert_eq!(
            w.status_line(),
            "VRAM: 8192 MiB / 16376 MiB (50%) | peak 9000 MiB"
        );
        let mut two = watcher(&[0, 1]);
        two.observe(ms(0), "t0", &[ok(0, 8192), lost(1)]);
        assert_eq!(
            two.status_line(),
            "GPU 0 VRAM: 8192 MiB / 16376 MiB (50%) | peak 8192 MiB; GPU 1 VRAM: unreadable"
        );
    }

    #[test]
    fn crossings_fire_upward_only_and_rearm() {
        let mut w = watcher(&[0]);
        let warn_at = 13920; // 85% of 16376 MiB, rounded up
        assert!(crossings(&w.observe(ms(0), "a", &[ok(0, 100)])).is_empty());
        assert_eq!(
            crossings(&w.observe(ms(1), "b", &[ok(0, warn_at)])),
            [(0, "warn")]
        );
        assert!(crossings(&w.observe(ms(2), "c", &[ok(0, 14000)])).is_empty());
        assert_eq!(
            crossings(&w.observe(ms(3), "d", &[ok(0, 15000)])),
            [(0, "critical")]
        );
        assert!(crossings(&w.observe(ms(4), "e", &[ok(0, 14999)])).is_empty());
        assert!(crossings(&w.observe(ms(5), "f", &[ok(0, 100)])).is_empty());
        let again = w.observe(ms(6), "g", &[ok(0, 16000)]);
        assert_eq!(crossings(&again), [(0, "warn"), (0, "critical")]);
        assert_eq!(
            again[0].to_string(),
            "warning: GPU 0 VRAM 16000 MiB / 16376 MiB (98%) crossed the warn threshold 85% \
             (13920 MiB) at g"
        );
        assert!(again[1]
            .to_string()
            .starts_with("critical: GPU 0 VRAM 16000 MiB"));
    }

    #[test]
    fn the_summary_tells_steady_growth_and_its_time_to_critical() {
        // A made-up ramp (a test input): 8000 MiB, 20 MiB more every 500 ms, so 2400 MiB/min.
        let mut w = watcher(&[0]);
        for i in 0..130u64 {
            w.observe(ms(i * 500), "t", &[ok(0, 8000 + 20 * i)]);
        }
        w.finish(ms(129 * 500));
        // It ends at 10580 MiB; the critical 15000 MiB is 4420 MiB away: 1.842 min.
        let summary = w.summary(ms(129 * 500), 130);
        assert!(
            summary.contains(
                "\n         used memory grows 2400 MiB/min over the last 120 samples; at this \
                 rate it reaches the critical level (15000 MiB) in 1m 50.5s\n"
            ),
            "{summary}"
        );
        // The same readings level, then flat: nothing to tell.
        let mut flat = watcher(&[0]);
        for i in 0..130u64 {
            flat.observe(ms(i * 500), "t", &[ok(0, 8000 + 20 * i.min(10))]);
        }
        flat.finish(ms(129 * 500));
        assert!(!flat.summary(ms(129 * 500), 130).contains("grows"));
    }

    #[test]
    fn peak_mean_and_time_above() {
        let mut w = watcher(&[0]);
        w.observe(ms(0), "t0", &[ok(0, 1000)]);
        w.observe(ms(500), "t1", &[ok(0, 14000)]);
        w.observe(ms(1000), "t2", &[ok(0, 15500)]);
        w.observe(ms(1500), "t3", &[ok(0, 1500)]);
        w.finish(ms(2000));
        let t = &w.tracks[0];
        assert_eq!(t.peak, Some((15500 * MIB, "t2".to_string())));
        assert_eq!(t.time_above, [ms(1000), ms(500)]);
        let summary = w.summary(ms(2000), 4);
        let expected = "\
summary: 4 samples over 2.0s
  GPU 0  peak 15500 MiB / 16376 MiB (95%) at t2
         mean 8000 MiB
         above warn 85% (13920 MiB): 1.0s
         above critical 15000 MiB: 0.5s
";
        assert_eq!(summary, expected);
    }

    #[test]
    fn time_above_runs_to_the_end() {
        let mut w = watcher(&[0]);
        w.observe(ms(0), "t0", &[ok(0, 16000)]);
        w.finish(ms(750));
        assert_eq!(w.tracks[0].time_above, [ms(750), ms(750)]);
    }

    #[test]
    fn a_lost_gpu_is_reported_once_and_the_rest_go_on() {
        let mut w = watcher(&[0, 1]);
        w.observe(ms(0), "t0", &[ok(0, 10), ok(1, 10)]);
        let events = w.observe(ms(1), "t1", &[ok(0, 20), lost(1)]);
        assert_eq!(events.len(), 1);
        assert_eq!(
            events[0].to_string(),
            "error: GPU 1 cannot be read (GPU 1: the GPU has fallen off the bus or needs a \
             reset); watching the others"
        );
        assert!(w.observe(ms(2), "t2", &[ok(0, 30), lost(1)]).is_empty());
        let back = w.observe(ms(3), "t3", &[ok(0, 30), ok(1, 40)]);
        assert_eq!(
            back,
            [Event::Recovered {
                gpu: 1,
                timestamp: "t3".into()
            }]
        );
        w.finish(ms(4));
        let summary = w.summary(ms(4), 4);
        assert!(summary.contains("  GPU 0  peak 30 MiB"), "{summary}");
        assert!(
            summary.contains("errors: 2 samples; last: GPU 1: the GPU"),
            "{summary}"
        );
    }

    #[test]
    fn a_gpu_never_read_says_so() {
        let mut w = watcher(&[3]);
        let events = w.observe(ms(0), "t0", &[lost(3)]);
        assert_eq!(events.len(), 1);
        assert!(w
            .summary(ms(0), 1)
            .contains("GPU 3  no sample could be read"));
    }

    fn temp_path(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("vramfit-gpu-{}-{name}", std::process::id()))
    }

    #[test]
    fn jsonl_log_is_on_disk_after_each_sample() {
        let path = temp_path("log.jsonl");
        let file = File::create(&path).expect("temp file");
        let mut log = SampleLog::new(Box::new(file), LogFormat::Jsonl).expect("log");
        let (index, result) = ok(0, 8192);
        log.write(&LogRecord::new("t0", ms(1500), index, &result))
            .expect("written");
        // Read while the log is still open, as after a kill -9.
        let text = std::fs::read_to_string(&path).expect("readable");
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).expect("one JSON line");
        assert_eq!(line["used_bytes"], 8192 * MIB);
        assert_eq!(line["elapsed_ms"], 1500);
        assert!(line["error"].is_null());
        let (index, result) = lost(1);
        log.write(&LogRecord::new("t1", ms(2000), index, &result))
            .expect("written");
        let text = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(text.lines().count(), 2);
        let line: serde_json::Value =
            serde_json::from_str(text.lines().nth(1).unwrap_or_default()).expect("JSON");
        assert!(line["used_bytes"].is_null());
        assert!(line["error"]
            .as_str()
            .is_some_and(|e| e.contains("fallen off the bus")));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn csv_log_has_a_header_and_quotes_errors() {
        let path = temp_path("log.csv");
        assert_eq!(LogFormat::for_path(&path, None), LogFormat::Csv);
        assert_eq!(
            LogFormat::for_path(Path::new("x.log"), None),
            LogFormat::Jsonl
        );
        assert_eq!(
            LogFormat::for_path(&path, Some(LogFormat::Jsonl)),
            LogFormat::Jsonl
        );
        let file = File::create(&path).expect("temp file");
        let mut log = SampleLog::new(Box::new(file), LogFormat::Csv).expect("log");
        let (index, result) = ok(0, 1);
        log.write(&LogRecord::new("t0", ms(0), index, &result))
            .expect("written");
        let (index, _) = lost(1);
        let odd = Err(GpuError::Other("a, \"quoted\" failure".into()));
        log.write(&LogRecord::new("t0", ms(0), index, &odd))
            .expect("written");
        let text = std::fs::read_to_string(&path).expect("readable");
        let expected = format!(
            "{CSV_HEADER}t0,0,0,{MIB},{TOTAL},{},,\n\
             t0,0,1,,,,,\"NVML failed: a, \"\"quoted\"\" failure\"\n",
            TOTAL - MIB
        );
        assert_eq!(text, expected);
        let _ = std::fs::remove_file(&path);
    }

    /// Replays, and says when a given number of samples has been taken.
    struct Counted {
        inner: RecordedSource,
        left: Rc<Cell<u32>>,
    }

    impl GpuSource for Counted {
        fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
            self.inner.snapshot()
        }

        fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
            self.left.set(self.left.get().saturating_sub(1));
            self.inner.sample(gpus)
        }
    }

    fn args() -> WatchArgs {
        WatchArgs {
            interval: ms(1),
            duration: None,
            gpu: Vec::new(),
            levels: LevelArgs {
                warn: Threshold::Percent(85.0),
                critical: Threshold::Percent(95.0),
                on_warn_exec: None,
                on_critical_exec: None,
                growth_window: 120,
            },
            log: None,
            format: None,
            replay: None,
        }
    }

    fn run_watch(
        source: &mut dyn GpuSource,
        args: &WatchArgs,
        log: Option<&mut SampleLog>,
        stop: &mut dyn FnMut() -> bool,
    ) -> (Result<Outcome, GpuError>, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = {
            let mut screen = Screen {
                out: &mut out,
                err: &mut err,
                tty: false,
            };
            watch_loop(source, args, log, &mut screen, stop)
        };
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (result, text(out), text(err))
    }

    #[test]
    fn watching_a_replay_end_to_end() {
        let left = Rc::new(Cell::new(7));
        let mut source = Counted {
            inner: RecordedSource::from_json(CLIMB).expect("fixture"),
            left: Rc::clone(&left),
        };
        let path = temp_path("e2e.jsonl");
        let file = File::create(&path).expect("temp file");
        let mut log = SampleLog::new(Box::new(file), LogFormat::Jsonl).expect("log");
        let (result, out, err) = run_watch(&mut source, &args(), Some(&mut log), &mut || {
            left.get() == 0
        });
        assert_eq!(result.ok(), Some(Outcome::Finished));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "GPU 0 VRAM: 1 MiB / 81559 MiB (0%) | peak 1 MiB; GPU 1 VRAM: 1 MiB / 81559 MiB (0%) \
             | peak 1 MiB"
        );
        assert_eq!(
            lines[4],
            "GPU 0 VRAM: 60000 MiB / 81559 MiB (74%) | peak 78000 MiB; GPU 1 VRAM: unreadable"
        );
        assert!(out.contains("summary: 7 samples over"), "{out}");
        // Live timestamps: the replay's own are not used for samples taken now.
        assert!(
            out.contains("  GPU 0  peak 78000 MiB / 81559 MiB (96%) at 20"),
            "{out}"
        );
        assert!(
            out.contains("errors: 3 samples; last: GPU 1: the GPU has fallen"),
            "{out}"
        );
        let warnings: Vec<&str> = err.lines().collect();
        assert_eq!(warnings.len(), 4, "{err}");
        assert!(
            warnings[0].starts_with("warning: GPU 0 VRAM 70000 MiB"),
            "{err}"
        );
        assert!(
            warnings[1].starts_with("critical: GPU 0 VRAM 78000 MiB"),
            "{err}"
        );
        assert!(
            warnings[2].starts_with("error: GPU 1 cannot be read"),
            "{err}"
        );
        assert!(
            warnings[3].starts_with("warning: GPU 0 VRAM 72000 MiB"),
            "{err}"
        );
        let logged = std::fs::read_to_string(&path).expect("log");
        assert_eq!(logged.lines().count(), 14);
        assert_eq!(
            logged
                .lines()
                .filter(|l| l.contains("\"error\":null"))
                .count(),
            11
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_duration_ends_the_watch() {
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let args = WatchArgs {
            interval: ms(10),
            duration: Some(ms(60)),
            gpu: vec![0],
            ..args()
        };
        let started = Instant::now();
        let (result, out, _) = run_watch(&mut source, &args, None, &mut || false);
        assert_eq!(result.ok(), Some(Outcome::Finished));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            out.lines()
                .next()
                .is_some_and(|l| l.starts_with("VRAM: 1 MiB")),
            "{out}"
        );
        assert!(
            out.contains("over 0.1s") || out.contains("over 0.0s"),
            "{out}"
        );
    }

    #[test]
    fn losing_every_gpu_ends_the_watch() {
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let args = WatchArgs {
            gpu: vec![1],
            ..args()
        };
        let (result, out, err) = run_watch(&mut source, &args, None, &mut || false);
        assert_eq!(result.ok(), Some(Outcome::AllLost));
        assert!(
            err.ends_with("vramfit: no watched GPU could be read on 5 samples in a row\n"),
            "{err}"
        );
        assert!(out.contains("  GPU 1  peak 21000 MiB"), "{out}");
        // Four readable frames, then the GPU is gone for good: five failures end the watch.
        assert!(out.contains("summary: 9 samples over"), "{out}");
        assert!(out.contains("errors: 5 samples; last: GPU 1"), "{out}");
    }

    /// Replays, failing every GPU on the samples numbered in `fail_on` (1-based), as a driver
    /// hiccup or a timed-out call would.
    struct Flaky {
        inner: RecordedSource,
        taken: Rc<Cell<u32>>,
        fail_on: Vec<u32>,
    }

    impl GpuSource for Flaky {
        fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
            self.inner.snapshot()
        }

        fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
            self.taken.set(self.taken.get() + 1);
            let results = self.inner.sample(gpus);
            if !self.fail_on.contains(&self.taken.get()) {
                return results;
            }
            let timeout = |i| GpuError::Other(format!("GPU {i}'s memory: timed out"));
            results
                .into_iter()
                .map(|(i, _)| (i, Err(timeout(i))))
                .collect()
        }
    }

    #[test]
    fn one_failed_read_does_not_end_a_single_gpu_watch() {
        let taken = Rc::new(Cell::new(0));
        let mut source = Flaky {
            inner: RecordedSource::from_json(CLIMB).expect("fixture"),
            taken: Rc::clone(&taken),
            fail_on: vec![2, 4, 5, 6, 7],
        };
        let args = WatchArgs {
            gpu: vec![0],
            ..args()
        };
        // Four failures in a row (samples 4 to 7) are one short of giving up.
        let (result, out, err) = run_watch(&mut source, &args, None, &mut || taken.get() >= 10);
        assert_eq!(result.ok(), Some(Outcome::Finished), "{err}");
        assert!(
            out.lines().nth(1).is_some_and(|l| l == "VRAM: unreadable"),
            "{out}"
        );
        assert!(out.contains("errors: 5 samples; last: NVML failed: GPU 0's memory: timed out"));
        assert!(err.contains("note: GPU 0 can be read again"), "{err}");
        assert!(!err.contains("no watched GPU could be read"), "{err}");
    }

    #[test]
    fn the_summary_is_printed_even_when_the_log_cannot_be_written() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let mut log = SampleLog::new(Box::new(Full), LogFormat::Jsonl).expect("no header");
        let (result, out, _) = run_watch(&mut source, &args(), Some(&mut log), &mut || false);
        match result {
            Ok(Outcome::LogFailed(e)) => assert!(e.contains("No space left"), "{e}"),
            other => panic!("expected a log failure, got {other:?}"),
        }
        assert!(out.contains("summary: 1 sample over"), "{out}");
        assert!(out.contains("  GPU 0  peak 1 MiB"), "{out}");
    }

    #[test]
    fn a_closed_stdout_ends_a_watch_without_a_log_only() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let mut err = Vec::new();
        let mut screen = Screen {
            out: &mut Closed,
            err: &mut err,
            tty: false,
        };
        let outcome = watch_loop(&mut source, &args(), None, &mut screen, &mut || false);
        assert_eq!(outcome.ok(), Some(Outcome::StdoutClosed));
        // With a log, the log is the output: watching goes on until stopped.
        let path = temp_path("closed-stdout.jsonl");
        let file = File::create(&path).expect("temp file");
        let mut log = SampleLog::new(Box::new(file), LogFormat::Jsonl).expect("log");
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let mut polls = 0;
        let outcome = watch_loop(
            &mut source,
            &args(),
            Some(&mut log),
            &mut screen,
            &mut || {
                polls += 1;
                polls > 200
            },
        );
        assert_eq!(outcome.ok(), Some(Outcome::Finished));
        assert!(std::fs::read_to_string(&path).expect("log").lines().count() > 2);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn unknown_gpus_are_refused_before_watching() {
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let args = WatchArgs {
            gpu: vec![0, 5],
            ..args()
        };
        let (result, out, _) = run_watch(&mut source, &args, None, &mut || false);
        assert!(matches!(
            result,
            Err(GpuError::NoSuchGpu { index: 5, count: 2 })
        ));
        assert!(out.is_empty());
    }
}
