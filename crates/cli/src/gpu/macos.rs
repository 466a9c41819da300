//! A Mac's GPU through `sysctl` and `system_profiler`, on macOS where there is no NVML: the smi
//! crate's reader turns their output into the same `vramfit.snapshot/1`, whose total is Metal's
//! working set (the `iogpu.wired_limit_mb` override where set, else macOS's share of
//! `hw.memsize`).
//!
//! Running the commands is the only IO here, behind [`CommandRunner`], so the tests feed the
//! reader published `sysctl` output through the same path a real run takes.

use vramfit_smi::Snapshot;

use super::amd_smi::CommandRunner;
use super::error::GpuError;
use super::source::{sample_snapshot, DeviceSample, GpuSource};

const SYSCTL: &str = "sysctl";
/// `-i` skips names this macOS lacks (`iogpu.` before macOS 14, on Intel Macs) instead of failing.
const SYSCTL_ARGS: [&str; 4] = [
    "-i",
    "hw.memsize",
    "iogpu.wired_limit_mb",
    "machdep.cpu.brand_string",
];
const PROFILER: &str = "system_profiler";
const PROFILER_ARGS: [&str; 2] = ["SPDisplaysDataType", "-json"];

/// The Mac's GPU as `sysctl` and `system_profiler` describe it.
pub struct MacSource<R: CommandRunner> {
    runner: R,
}

impl<R: CommandRunner> MacSource<R> {
    /// The source, if `sysctl` knows `hw.memsize` (a Mac): `None` otherwise, so the caller keeps
    /// its own reason for having no GPU.
    pub fn find(runner: R) -> Option<MacSource<R>> {
        let memsize = runner.output(SYSCTL, &["-n", "hw.memsize"]).ok()?;
        memsize
            .trim()
            .parse::<u64>()
            .is_ok()
            .then_some(MacSource { runner })
    }
}

impl<R: CommandRunner> GpuSource for MacSource<R> {
    fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
        let sysctl = self
            .runner
            .output(SYSCTL, &SYSCTL_ARGS)
            .map_err(|e| GpuError::MacOs(e.to_string()))?;
        // The chip's name is in `machdep.cpu.brand_string` too, so a failed system_profiler
        // loses nothing the total needs.
        let mut documents = vec![sysctl];
        if let Ok(profile) = self.runner.output(PROFILER, &PROFILER_ARGS) {
            documents.push(profile);
        }
        let texts: Vec<&str> = documents.iter().map(String::as_str).collect();
        vramfit_smi::parse_macos(&texts)
            .map_err(|e| GpuError::MacOs(format!("its output could not be read: {e}")))
    }

    fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
        sample_snapshot(
            self.snapshot(),
            gpus,
            "macOS's commands give no GPU memory per process",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use vramfit_smi::SourceFormat;

    const GIB: u64 = 1 << 30;

    /// Answers as the Mac of a published capture did; `sysctl -i` with names prints only those
    /// lines, which the capture's `hw.` excerpt holds among others.
    struct Captured {
        sysctl: &'static str,
        wired: Option<&'static str>,
    }

    impl CommandRunner for Captured {
        fn output(&self, program: &str, args: &[&str]) -> io::Result<String> {
            let line = |key: &str| {
                self.sysctl
                    .lines()
                    .find(|l| l.starts_with(&format!("{key}: ")))
                    .map(str::to_string)
            };
            match (program, args) {
                (SYSCTL, ["-n", "hw.memsize"]) => Ok(line("hw.memsize")
                    .and_then(|l| l.split_once(": ").map(|(_, v)| v.to_string()))
                    .unwrap_or_default()),
                (SYSCTL, a) if a == SYSCTL_ARGS => {
                    let keys = ["hw.memsize", "machdep.cpu.brand_string"];
                    let mut lines: Vec<String> = keys.iter().filter_map(|k| line(k)).collect();
                    lines.extend(self.wired.map(str::to_string));
                    Ok(lines.join("\n"))
                }
                (PROFILER, _) => Err(io::ErrorKind::NotFound.into()),
                other => Err(io::Error::other(format!("unexpected {other:?}"))),
            }
        }
    }

    struct NotAMac;

    impl CommandRunner for NotAMac {
        fn output(&self, _: &str, _: &[&str]) -> io::Result<String> {
            Err(io::ErrorKind::NotFound.into())
        }
    }

    const M4_MAX: &str = include_str!(
        "../../../smi/tests/fixtures/macos/sysctl-a-excerpt__apple-m4-max-64gb__macos-15.txt"
    );
    const WIRED: &str = include_str!(
        "../../../smi/tests/fixtures/macos/sysctl-set-wired-limit__apple-m1-max-32gb.txt"
    );

    #[test]
    fn a_published_mac_probes_to_its_working_set() {
        let mac = Captured {
            sysctl: M4_MAX,
            wired: None,
        };
        let mut source = MacSource::find(mac).expect("sysctl answers");
        let snap = source.snapshot().unwrap();
        assert_eq!(snap.source, SourceFormat::MacOs);
        assert_eq!(snap.gpus[0].name.as_deref(), Some("Apple M4 Max"));
        assert_eq!(snap.gpus[0].memory.total_bytes, Some(48 * GIB));
        let samples = source.sample(&[0, 1]);
        let first = samples[0].1.as_ref().unwrap();
        assert_eq!(first.memory.used_bytes, None);
        assert!(matches!(
            samples[1].1,
            Err(GpuError::NoSuchGpu { index: 1, count: 1 })
        ));
    }

    #[test]
    fn the_wired_limit_replaces_the_share() {
        let mac = Captured {
            sysctl: M4_MAX,
            wired: Some(WIRED.trim()),
        };
        let snap = MacSource::find(mac).unwrap().snapshot().unwrap();
        assert_eq!(snap.gpus[0].memory.total_bytes, Some(26000 << 20));
    }

    #[test]
    fn elsewhere_there_is_no_mac_source() {
        assert!(MacSource::find(NotAMac).is_none());
    }
}
