//! The monitor loop `watch` and `run` share: it samples the chosen GPUs at a steady pace, judges
//! each readable sample against the warn and critical levels (`alarm.rs`), carries out the
//! actions of a level reached (`actions.rs`) and keeps each GPU's last readable samples for the
//! growth check (`vramfit_engine::growth`).
//!
//! What a command adds is its [`Driver`]'s: `watch` prints a status line, writes its log and
//! stops on Ctrl-C or at the end of `--duration`; `run` forwards signals to its command, reads the
//! command's process tree before each sample, accounts for its memory and stops when it exits.

use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime};

use vramfit_engine::growth::{Growth, Reading, Window};
use vramfit_engine::measurement::{ActionTaken, Level};

use super::actions::{summary_lines, Actor, LevelArgs, Signal};
use super::alarm::{Alarms, Crossing};
use super::error::GpuError;
use super::source::{DeviceSample, GpuSource};
use super::units::{millis, rfc3339, Threshold};

/// Each sampled GPU's index with its sample, or why it could not be read.
pub type Results = Vec<(u32, Result<DeviceSample, GpuError>)>;

/// The levels, their actions and the growth windows over the GPUs being sampled.
pub struct Monitor {
    gpus: Vec<u32>,
    alarms: Alarms,
    actor: Actor,
    /// The actions carried out so far, in order.
    taken: Vec<ActionTaken>,
    tracks: Vec<Track>,
}

/// What the monitor keeps of one GPU between samples.
struct Track {
    index: u32,
    /// The GPU's memory as last reported: a sample without the figure keeps the last one.
    total: Option<u64>,
    /// The last readable samples, for the growth check.
    window: Window,
}

/// A level crossed on one GPU, and the actions it set off (none unless it reached the level).
#[derive(Debug, Clone, PartialEq)]
pub struct Crossed {
    pub crossing: Crossing,
    pub actions: Vec<ActionTaken>,
}

/// One sample as the monitor judged it.
#[derive(Debug)]
pub struct Tick {
    /// Since the monitoring began.
    pub elapsed: Duration,
    pub timestamp: String,
    pub results: Results,
    pub crossed: Vec<Crossed>,
    /// Notes about the shell commands of earlier actions that have ended.
    pub reaped: Vec<String>,
}

/// How often the loop samples, and how long it may sleep before asking its driver again.
pub struct Pace {
    /// Elapsed times count from here.
    pub start: Instant,
    pub interval: Duration,
    /// The longest sleep between polls: how soon a stop request or an exit is noticed.
    pub nap: Duration,
}

/// What a command does around the shared loop.
pub trait Driver {
    /// Why the loop ended.
    type End;

    /// Called before every sample and after every nap: the command's own chores, and whether to
    /// stop.
    fn poll(&mut self) -> ControlFlow<Self::End>;

    /// When the loop ends by itself, if ever: naps end there rather than overshoot it.
    fn deadline(&self) -> Option<Instant> {
        None
    }

    /// Called right before each sample is taken.
    fn before_sample(&mut self) {}

    /// Called with each sample once the monitor has judged it and carried out the actions.
    fn sampled(&mut self, tick: &Tick, monitor: &Monitor) -> ControlFlow<Self::End>;
}

impl Monitor {
    /// Monitors `gpus` at `levels`, with the signals to send at each level (under `run`) and the
    /// process shell commands are told about as `VRAMFIT_PID`.
    pub fn new(
        gpus: &[u32],
        levels: &LevelArgs,
        signals: [Option<(Signal, u32)>; 2],
        command_pid: Option<u32>,
    ) -> Monitor {
        Monitor {
            gpus: gpus.to_vec(),
            alarms: Alarms::new(levels.warn, levels.critical),
            actor: Actor::new(levels.plan(signals), command_pid),
            taken: Vec::new(),
            tracks: gpus
                .iter()
                .map(|&index| Track {
                    index,
                    total: None,
                    window: Window::new(levels.growth_window),
                })
                .collect(),
        }
    }

    /// Samples every `pace.interval` until `driver` ends the loop. After a stall (a slow NVML
    /// call, a suspended laptop) the missed ticks are skipped rather than sampled in a burst.
    pub fn sample_until<D: Driver>(
        &mut self,
        source: &mut dyn GpuSource,
        pace: &Pace,
        driver: &mut D,
    ) -> D::End {
        // `None` once the next tick is past what an Instant holds (which the parser's cap on
        // durations rules out): the loop then only polls, never panics.
        let mut next = Some(pace.start);
        loop {
            if let ControlFlow::Break(end) = driver.poll() {
                return end;
            }
            let now = Instant::now();
            if next.is_some_and(|at| now >= at) {
                driver.before_sample();
                let tick = self.sample(source, now - pace.start);
                if let ControlFlow::Break(end) = driver.sampled(&tick, self) {
                    return end;
                }
                next = next
                    .and_then(|at| at.checked_add(pace.interval))
                    .map(|at| at.max(Instant::now()));
            }
            let wake = match (next, driver.deadline()) {
                (Some(next), Some(end)) => Some(next.min(end)),
                (next, end) => next.or(end),
            };
            let nap = wake.map_or(pace.nap, |at| at.saturating_duration_since(Instant::now()));
            std::thread::sleep(nap.min(pace.nap));
        }
    }

    /// Takes and judges one sample, `elapsed` into the monitoring.
    pub fn sample(&mut self, source: &mut dyn GpuSource, elapsed: Duration) -> Tick {
        let timestamp = rfc3339(SystemTime::now());
        let results = source.sample(&self.gpus);
        self.judge(elapsed, timestamp, results)
    }

    /// Judges one sample taken `elapsed` into the monitoring: crossings and their actions, the
    /// growth windows, and the shell commands that have ended since.
    pub fn judge(&mut self, elapsed: Duration, timestamp: String, results: Results) -> Tick {
        let mut crossed = Vec::new();
        for (index, result) in &results {
            let Some(track) = self.tracks.iter_mut().find(|t| t.index == *index) else {
                continue;
            };
            let Ok((used, total)) = reading(*index, result) else {
                continue;
            };
            track.total = total.or(track.total);
            track.window.push(Reading {
                elapsed_ms: millis(elapsed),
                used_bytes: used,
            });
            for crossing in self.alarms.observe(*index, used, track.total) {
                let actions = self.actor.act(&crossing, &timestamp, elapsed);
                self.taken.extend(actions.iter().cloned());
                crossed.push(Crossed { crossing, actions });
            }
        }
        Tick {
            elapsed,
            timestamp,
            results,
            crossed,
            reaped: self.actor.reap(),
        }
    }

    pub fn threshold(&self, level: Level) -> Threshold {
        self.alarms.threshold(level)
    }

    /// `gpu`'s memory as last reported by a sample.
    pub fn total(&self, gpu: u32) -> Option<u64> {
        self.track(gpu).and_then(|t| t.total)
    }

    /// Steady growth of `gpu`'s used memory over its window, timed to the critical level on a GPU
    /// of `total` bytes.
    pub fn growth(&mut self, gpu: u32, total: Option<u64>) -> Option<Growth> {
        let critical = self.threshold(Level::Critical).limit_bytes(total);
        let track = self.tracks.iter_mut().find(|t| t.index == gpu)?;
        track.window.growth(critical)
    }

    /// The actions carried out, in order.
    pub fn taken(&self) -> &[ActionTaken] {
        &self.taken
    }

    /// One line per level with actions: how often each was carried out.
    pub fn action_summary(&self) -> Vec<String> {
        summary_lines(self.actor.plan(), &self.taken)
    }

    fn track(&self, gpu: u32) -> Option<&Track> {
        self.tracks.iter().find(|t| t.index == gpu)
    }
}

/// A sample's used memory and the GPU's total (when known), or why there is no used figure.
pub fn reading(
    index: u32,
    result: &Result<DeviceSample, GpuError>,
) -> Result<(u64, Option<u64>), String> {
    match result {
        Ok(sample) => sample
            .memory
            .used_bytes
            .map(|used| (used, sample.memory.total_bytes))
            .ok_or_else(|| format!("GPU {index} reported no used-memory figure")),
        Err(e) => Err(e.to_string()),
    }
}

/// A peak and when it happened.
pub type Peak = Option<(u64, String)>;

/// Raises `peak` to `value`, seen at `timestamp`, when that is higher; an unknown value leaves it.
pub fn raise(peak: &mut Peak, value: Option<u64>, timestamp: &str) {
    let Some(value) = value else {
        return;
    };
    if peak.as_ref().is_none_or(|(p, _)| value > *p) {
        *peak = Some((value, timestamp.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::super::source::tests::CLIMB;
    use super::super::source::RecordedSource;
    use super::super::units::MIB;
    use super::*;

    fn levels() -> LevelArgs {
        LevelArgs {
            warn: Threshold::Bytes(50_000 * MIB),
            critical: Threshold::Bytes(80_000 * MIB),
            on_warn_exec: Some("true".to_string()),
            on_critical_exec: None,
            growth_window: 16,
        }
    }

    fn used(index: u32, mib: u64) -> (u32, Result<DeviceSample, GpuError>) {
        let memory = vramfit_smi::Memory {
            used_bytes: Some(mib * MIB),
            ..vramfit_smi::Memory::default()
        };
        let sample = DeviceSample {
            index,
            memory,
            processes: Vec::new(),
            process_error: None,
        };
        (index, Ok(sample))
    }

    #[test]
    fn gpus_crossing_together_set_the_actions_off_once() {
        let mut monitor = Monitor::new(&[0, 1], &levels(), [None, None], None);
        let tick = monitor.judge(
            Duration::ZERO,
            "t0".into(),
            vec![used(0, 60_000), used(1, 60_000)],
        );
        let actions: Vec<usize> = tick.crossed.iter().map(|c| c.actions.len()).collect();
        assert_eq!(actions, [1, 0]);
        assert_eq!(monitor.taken().len(), 1);
        assert_eq!(
            monitor.action_summary(),
            ["actions on warn: ran `true` 1 time"]
        );
    }

    /// Stops after `samples` samples, stalling the loop on the second one.
    struct Stalling {
        samples: usize,
        stall: Duration,
        elapsed: Vec<Duration>,
    }

    impl Driver for Stalling {
        type End = usize;

        fn poll(&mut self) -> ControlFlow<usize> {
            match self.elapsed.len() >= self.samples {
                true => ControlFlow::Break(self.elapsed.len()),
                false => ControlFlow::Continue(()),
            }
        }

        fn before_sample(&mut self) {
            if self.elapsed.len() == 1 {
                std::thread::sleep(self.stall);
            }
        }

        fn sampled(&mut self, tick: &Tick, _: &Monitor) -> ControlFlow<usize> {
            self.elapsed.push(tick.elapsed);
            ControlFlow::Continue(())
        }
    }

    #[test]
    fn a_stall_skips_the_missed_ticks_instead_of_sampling_in_a_burst() {
        let mut source = RecordedSource::from_json(CLIMB).expect("fixture");
        let mut monitor = Monitor::new(&[0], &levels(), [None, None], None);
        let interval = Duration::from_millis(20);
        let pace = Pace {
            start: Instant::now(),
            interval,
            nap: Duration::from_millis(5),
        };
        let mut driver = Stalling {
            samples: 4,
            stall: interval * 4,
            elapsed: Vec::new(),
        };
        assert_eq!(monitor.sample_until(&mut source, &pace, &mut driver), 4);
        // The sample after the stall is taken at once, the next a whole interval later.
        let last_gap = driver.elapsed[3] - driver.elapsed[2];
        assert!(last_gap >= interval / 2, "{:?}", driver.elapsed);
    }
}
