//! What `watch` and `run` do when a memory level is reached: the flags both take for the levels,
//! their actions and the growth check ([`LevelArgs`]; `run` adds the signal flags), and the
//! [`Actor`] that carries the actions out — a signal to `run`'s command, a shell command — and
//! says what it did. When a level counts as reached is decided, without IO, in `alarm.rs`.

use std::io;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use vramfit_engine::growth::{DEFAULT_WINDOW, MAX_WINDOW, MIN_SAMPLES};
use vramfit_engine::measurement::{ActionDone, ActionTaken, Level};

use super::alarm::Crossing;
use super::units::{mib, millis, Threshold};

/// The levels, what to do at each, and the growth check: flags of both `watch` and `run`.
#[derive(clap::Args, Debug, Clone)]
pub struct LevelArgs {
    /// Warn when used memory reaches this share of the GPU's total (85%) or this size (14000MiB).
    ///
    /// A level fires once per upward crossing and re-arms when used memory falls 2% of the GPU's
    /// memory below it. Its actions fire when the first watched GPU crosses it.
    #[arg(long, default_value = "85%", value_parser = Threshold::parse)]
    pub warn: Threshold,
    /// Like --warn, for the second, critical level; the growth check times how long until it.
    #[arg(long, default_value = "95%", value_parser = Threshold::parse)]
    pub critical: Threshold,
    /// Run this shell command (sh -c CMD) each time the warn level is reached.
    ///
    /// It starts in the background with VRAMFIT_LEVEL, VRAMFIT_GPU, VRAMFIT_USED_BYTES,
    /// VRAMFIT_LIMIT_BYTES, VRAMFIT_TOTAL_BYTES (when known) and, under `run`, VRAMFIT_PID (the
    /// command's process) set; its output goes to stderr.
    #[arg(long, value_name = "CMD")]
    pub on_warn_exec: Option<String>,
    /// Like --on-warn-exec, at the critical level.
    #[arg(long, value_name = "CMD")]
    pub on_critical_exec: Option<String>,
    /// How many of each GPU's last readable samples the growth check fits (16 to 86400).
    ///
    /// Used memory grows steadily (a leak) when, over at least 10 s, each half of these samples
    /// grows by at least three standard errors of its least-squares slope; the summary then gives
    /// the rate in MiB/min and the time to the critical level at that rate.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WINDOW, value_parser = parse_window)]
    pub growth_window: usize,
}

impl LevelArgs {
    /// The actions at each level, in [`Level::ALL`]'s order: the signal and the process it goes
    /// to (under `run`) first, then the shell command.
    pub fn plan(&self, signals: [Option<(Signal, u32)>; 2]) -> [Vec<Action>; 2] {
        let execs = [&self.on_warn_exec, &self.on_critical_exec];
        Level::ALL.map(|level| {
            let i = level as usize;
            signals[i]
                .map(|(signal, pid)| Action::Signal(signal, pid))
                .into_iter()
                .chain(execs[i].clone().map(Action::Exec))
                .collect()
        })
    }
}

/// Reads `--growth-window`: a whole number of samples, from the fewest the check judges to
/// [`MAX_WINDOW`].
fn parse_window(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of samples"))?;
    if (MIN_SAMPLES..=MAX_WINDOW).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "`{text}` is outside {MIN_SAMPLES} to {MAX_WINDOW} samples (each half of the window \
             needs 8 to fit a slope)"
        ))
    }
}

/// A signal an action may send, by its name without `SIG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal {
    pub number: i32,
    pub name: &'static str,
}

/// The signals an action may send: what a program is commonly asked to handle or is stopped
/// with. Empty where there are no signals, so that every name is refused there.
#[cfg(unix)]
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
];
#[cfg(not(unix))]
const SIGNALS: &[(&str, i32)] = &[];

/// Reads `USR1`, `SIGUSR1` or `usr1`. A number is refused: signal numbers differ between systems.
pub fn parse_signal(text: &str) -> Result<Signal, String> {
    if SIGNALS.is_empty() {
        return Err("signal actions need a Unix system; use --on-warn-exec or \
                    --on-critical-exec here"
            .to_string());
    }
    let upper = text.trim().to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(name, _)| *name == bare)
        .map(|&(name, number)| Signal { number, name })
        .ok_or_else(|| {
            let names: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
            format!(
                "`{text}` is not a signal vramfit sends; use one of {} (SIG prefix optional)",
                names.join(", ")
            )
        })
}

/// One thing to do when a level is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this signal to this process (`run`'s command).
    Signal(Signal, u32),
    /// Start this shell command.
    Exec(String),
}

/// Carries out the actions of each level as the levels are reached, and reaps the shell commands
/// it started.
pub struct Actor {
    plan: [Vec<Action>; 2],
    /// `run`'s command, given to shell commands as `VRAMFIT_PID`.
    command_pid: Option<u32>,
    /// Shell commands started and not yet seen to end, with their command lines.
    running: Vec<(Child, String)>,
}

impl Actor {
    pub fn new(plan: [Vec<Action>; 2], command_pid: Option<u32>) -> Actor {
        Actor {
            plan,
            command_pid,
            running: Vec::new(),
        }
    }

    pub fn plan(&self) -> &[Vec<Action>; 2] {
        &self.plan
    }

    /// Carries out `crossing`'s level's actions if it reached the level, `elapsed` into the run.
    pub fn act(
        &mut self,
        crossing: &Crossing,
        timestamp: &str,
        elapsed: Duration,
    ) -> Vec<ActionTaken> {
        if !crossing.reached {
            return Vec::new();
        }
        let actions = self.plan[crossing.level as usize].clone();
        actions
            .iter()
            .map(|action| {
                let (action, error) = match action {
                    Action::Signal(signal, pid) => signal_process(*signal, *pid),
                    Action::Exec(command) => self.exec(command, crossing),
                };
                ActionTaken {
                    level: crossing.level,
                    timestamp: timestamp.to_string(),
                    elapsed_ms: millis(elapsed),
                    gpu: crossing.gpu,
                    used_bytes: crossing.used,
                    limit_bytes: crossing.limit,
                    action,
                    error,
                }
            })
            .collect()
    }

    fn exec(&mut self, command: &str, crossing: &Crossing) -> (ActionDone, Option<String>) {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .env("VRAMFIT_LEVEL", crossing.level.name())
            .env("VRAMFIT_GPU", crossing.gpu.to_string())
            .env("VRAMFIT_USED_BYTES", crossing.used.to_string())
            .env("VRAMFIT_LIMIT_BYTES", crossing.limit.to_string())
            .stdin(Stdio::null());
        if let Some(total) = crossing.total {
            shell.env("VRAMFIT_TOTAL_BYTES", total.to_string());
        }
        if let Some(pid) = self.command_pid {
            shell.env("VRAMFIT_PID", pid.to_string());
        }
        // watch's stdout carries the status lines and the summary; the command's output goes
        // beside vramfit's own messages instead.
        if let Ok(stderr) = io::stderr().as_fd().try_clone_to_owned() {
            shell.stdout(Stdio::from(stderr));
        }
        let started = shell.spawn();
        let done = |pid| ActionDone::Exec {
            command: command.to_string(),
            pid,
        };
        match started {
            Ok(child) => {
                let pid = child.id();
                self.running.push((child, command.to_string()));
                (done(Some(pid)), None)
            }
            Err(e) => (done(None), Some(format!("cannot start sh: {e}"))),
        }
    }

    /// Reaps the shell commands that have ended; a note for each that failed. Those still
    /// running when vramfit ends are left to finish on their own.
    pub fn reap(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        self.running
            .retain_mut(|(child, command)| match child.try_wait() {
                Ok(None) => true,
                Ok(Some(status)) => {
                    if !status.success() {
                        notes.push(format!("note: `{command}` ended with {status}"));
                    }
                    false
                }
                Err(e) => {
                    notes.push(format!("note: lost track of `{command}`: {e}"));
                    false
                }
            });
        notes
    }
}

/// Sends `signal` to `pid` alone, not its process group: a training script's DataLoader workers
/// share its group and would die of a SIGUSR1 they do not handle.
fn signal_process(signal: Signal, pid: u32) -> (ActionDone, Option<String>) {
    let error = match libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on `run`'s own child, which is not reaped until the loop that acts
        // ends, so its PID cannot have been reused.
        Ok(target) => match unsafe { libc::kill(target, signal.number) } {
            0 => None,
            _ => Some(io::Error::last_os_error().to_string()),
        },
        Err(_) => Some(format!("process id {pid} is out of range")),
    };
    let name = format!("SIG{}", signal.name);
    (ActionDone::Signal { signal: name, pid }, error)
}

/// `action: warn reached on GPU 0 (70000 MiB): sent SIGUSR1 to process 4242`, or what failed.
pub fn action_line(taken: &ActionTaken) -> String {
    let head = format!(
        "action: {} reached on GPU {} ({})",
        taken.level.name(),
        taken.gpu,
        mib(taken.used_bytes)
    );
    match (&taken.action, &taken.error) {
        (ActionDone::Signal { signal, pid }, None) => {
            format!("{head}: sent {signal} to process {pid}")
        }
        (ActionDone::Signal { signal, pid }, Some(e)) => {
            format!("{head}: could not send {signal} to process {pid}: {e}")
        }
        (ActionDone::Exec { command, pid }, None) => {
            let pid = pid.map(|p| format!(" (process {p})")).unwrap_or_default();
            format!("{head}: started `{command}`{pid}")
        }
        (ActionDone::Exec { command, .. }, Some(e)) => {
            format!("{head}: could not start `{command}`: {e}")
        }
    }
}

/// One line per level that has actions: how often each was carried out, and how often it could
/// not be (a signal not delivered, `sh` not started; a shell command that ran and failed is noted
/// when reaped). `actions on warn: sent SIGUSR1 2 times; ran `touch w` 2 times (1 failed)`.
pub fn summary_lines(plan: &[Vec<Action>; 2], taken: &[ActionTaken]) -> Vec<String> {
    Level::ALL
        .iter()
        .filter(|level| !plan[**level as usize].is_empty())
        .map(|&level| {
            let parts: Vec<String> = plan[level as usize]
                .iter()
                .map(|action| {
                    let done: Vec<&ActionTaken> = taken
                        .iter()
                        .filter(|t| t.level == level && is(action, &t.action))
                        .collect();
                    let failed = done.iter().filter(|t| t.error.is_some()).count();
                    let what = match action {
                        Action::Signal(s, _) => format!("sent SIG{}", s.name),
                        Action::Exec(command) => format!("ran `{command}`"),
                    };
                    let times = match done.len() {
                        1 => "1 time".to_string(),
                        n => format!("{n} times"),
                    };
                    let failed = match failed {
                        0 => String::new(),
                        n => format!(" ({n} failed)"),
                    };
                    format!("{what} {times}{failed}")
                })
                .collect();
            format!("actions on {}: {}", level.name(), parts.join("; "))
        })
        .collect()
}

/// Whether `done` was the carrying out of `action`.
fn is(action: &Action, done: &ActionDone) -> bool {
    match (action, done) {
        (Action::Signal(s, p), ActionDone::Signal { signal, pid }) => {
            signal.strip_prefix("SIG") == Some(s.name) && p == pid
        }
        (Action::Exec(c), ActionDone::Exec { command, .. }) => c == command,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::units::MIB;
    use super::*;

    #[test]
    fn signals_by_name_with_or_without_sig() {
        let usr1 = Signal {
            number: libc::SIGUSR1,
            name: "USR1",
        };
        assert_eq!(parse_signal("USR1"), Ok(usr1));
        assert_eq!(parse_signal("SIGUSR1"), Ok(usr1));
        assert_eq!(parse_signal(" sigusr1 "), Ok(usr1));
        assert_eq!(parse_signal("term").map(|s| s.number), Ok(libc::SIGTERM));
        for bad in ["USR3", "10", "", "SIG", "SIGSEGV"] {
            let err = parse_signal(bad).unwrap_err();
            assert!(err.contains("use one of HUP, INT"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn windows_within_what_the_check_can_judge() {
        assert_eq!(parse_window("120"), Ok(120));
        assert_eq!(parse_window("16"), Ok(16));
        for bad in ["15", "0", "86401", "-1", "1e3", "many"] {
            assert!(parse_window(bad).is_err(), "{bad:?}");
        }
    }

    fn crossing(level: Level, reached: bool) -> Crossing {
        Crossing {
            gpu: 1,
            level,
            threshold: Threshold::Percent(85.0),
            limit: 69_326 * MIB,
            used: 70_000 * MIB,
            total: Some(81_559 * MIB),
            reached,
        }
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vramfit-actions-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// Waits up to 10 s for `path` to hold a line.
    fn read_when_written(path: &std::path::Path) -> String {
        let start = std::time::Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(path) {
                if text.ends_with('\n') {
                    return text;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "nothing in {path:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn an_exec_action_runs_with_the_crossing_in_its_environment() {
        let dir = temp_dir("exec");
        let out = dir.join("env");
        let command = format!(
            "echo \"$VRAMFIT_LEVEL $VRAMFIT_GPU $VRAMFIT_USED_BYTES $VRAMFIT_LIMIT_BYTES \
             $VRAMFIT_TOTAL_BYTES ${{VRAMFIT_PID:-none}}\" > '{}'",
            out.display()
        );
        let plan = [vec![Action::Exec(command.clone())], Vec::new()];
        let mut actor = Actor::new(plan, None);
        assert!(actor
            .act(&crossing(Level::Warn, false), "t", Duration::ZERO)
            .is_empty());
        assert!(actor
            .act(&crossing(Level::Critical, true), "t", Duration::ZERO)
            .is_empty());
        let taken = actor.act(
            &crossing(Level::Warn, true),
            "t1",
            Duration::from_millis(1500),
        );
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].error, None);
        assert_eq!(taken[0].elapsed_ms, 1500);
        let text = read_when_written(&out);
        assert_eq!(
            text,
            format!(
                "warn 1 {} {} {} none\n",
                70_000 * MIB,
                69_326 * MIB,
                81_559 * MIB
            )
        );
        let start = std::time::Instant::now();
        while !actor.running.is_empty() && start.elapsed() < Duration::from_secs(10) {
            assert!(actor.reap().is_empty());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(actor.running.is_empty(), "the finished command is reaped");
        assert!(action_line(&taken[0])
            .starts_with("action: warn reached on GPU 1 (70000 MiB): started `echo"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failing_exec_action_is_noted_when_reaped() {
        let plan = [Vec::new(), vec![Action::Exec("exit 3".to_string())]];
        let mut actor = Actor::new(plan, None);
        let taken = actor.act(&crossing(Level::Critical, true), "t", Duration::ZERO);
        assert_eq!(taken[0].error, None, "it started");
        let start = std::time::Instant::now();
        let mut notes = Vec::new();
        while notes.is_empty() && start.elapsed() < Duration::from_secs(10) {
            notes = actor.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(notes, ["note: `exit 3` ended with exit status: 3"]);
    }

    #[test]
    fn a_signal_goes_to_the_command() {
        let dir = temp_dir("signal");
        let got = dir.join("got");
        let ready = dir.join("ready");
        let script = format!(
            "trap \"echo USR1 >> '{}'\" USR1; touch '{}'; while :; do sleep 0.05; done",
            got.display(),
            ready.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .expect("sh starts");
        let start = std::time::Instant::now();
        while !ready.exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "no trap set");
            std::thread::sleep(Duration::from_millis(10));
        }
        let usr1 = parse_signal("USR1").expect("a signal");
        let plan = [vec![Action::Signal(usr1, child.id())], Vec::new()];
        let mut actor = Actor::new(plan, Some(child.id()));
        let taken = actor.act(&crossing(Level::Warn, true), "t", Duration::ZERO);
        assert_eq!(read_when_written(&got), "USR1\n");
        assert_eq!(
            taken[0].action,
            ActionDone::Signal {
                signal: "SIGUSR1".to_string(),
                pid: child.id()
            }
        );
        assert_eq!(
            action_line(&taken[0]),
            format!(
                "action: warn reached on GPU 1 (70000 MiB): sent SIGUSR1 to process {}",
                child.id()
            )
        );
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_summary_counts_each_action_and_its_failures() {
        let usr1 = parse_signal("USR1").expect("a signal");
        let plan = [
            vec![Action::Signal(usr1, 7), Action::Exec("touch w".to_string())],
            Vec::new(),
        ];
        let record = |action, error: Option<&str>| ActionTaken {
            level: Level::Warn,
            timestamp: "t".to_string(),
            elapsed_ms: 0,
            gpu: 0,
            used_bytes: 0,
            limit_bytes: 0,
            action,
            error: error.map(String::from),
        };
        let signal = || ActionDone::Signal {
            signal: "SIGUSR1".to_string(),
            pid: 7,
        };
        let exec = || ActionDone::Exec {
            command: "touch w".to_string(),
            pid: Some(8),
        };
        let taken = [
            record(signal(), None),
            record(exec(), None),
            record(signal(), Some("No such process")),
            record(exec(), None),
        ];
        assert_eq!(
            summary_lines(&plan, &taken),
            ["actions on warn: sent SIGUSR1 2 times (1 failed); ran `touch w` 2 times"]
        );
        let critical_only = [Vec::new(), vec![Action::Exec("x".to_string())]];
        assert_eq!(
            summary_lines(&critical_only, &[]),
            ["actions on critical: ran `x` 0 times"]
        );
        assert!(summary_lines(&[Vec::new(), Vec::new()], &taken).is_empty());
    }
}
