//! AMD GPUs through the `amd-smi` command, where NVML cannot be loaded: `amd-smi static --json`
//! (names, VRAM size) and `amd-smi metric --json` (total, used, free), read by the smi crate's
//! parser into the same `vramfit.snapshot/1` as NVML gives.
//!
//! Running the command is the only IO here, behind [`CommandRunner`], so the tests feed the
//! parser published amd-smi output through the same path a real run takes.

use std::io;
use std::process::Command;

use vramfit_smi::Snapshot;

use super::error::GpuError;
use super::source::{sample_snapshot, DeviceSample, GpuSource};

/// Runs a program and gives its standard output.
pub trait CommandRunner {
    /// `Err` with [`io::ErrorKind::NotFound`] when the program is not installed.
    fn output(&self, program: &str, args: &[&str]) -> io::Result<String>;
}

/// Runs programs on this machine.
pub struct SystemRunner;

impl CommandRunner for SystemRunner {
    fn output(&self, program: &str, args: &[&str]) -> io::Result<String> {
        let out = Command::new(program).args(args).output()?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(io::Error::other(format!(
                "`{program} {}` exited with {}: {}",
                args.join(" "),
                out.status,
                stderr.trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

const AMD_SMI: &str = "amd-smi";
const STATIC: [&str; 2] = ["static", "--json"];
const METRIC: [&str; 2] = ["metric", "--json"];

/// The GPUs as amd-smi reports them.
pub struct AmdSmiSource<R: CommandRunner> {
    runner: R,
}

impl<R: CommandRunner> AmdSmiSource<R> {
    /// The source, if amd-smi is installed: `None` when the program is not found, so the caller
    /// keeps its own reason for having no GPU.
    pub fn find(runner: R) -> Option<AmdSmiSource<R>> {
        match runner.output(AMD_SMI, &["version"]) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            _ => Some(AmdSmiSource { runner }),
        }
    }

    fn run(&self, args: &[&str]) -> Result<String, GpuError> {
        self.runner
            .output(AMD_SMI, args)
            .map_err(|e| GpuError::AmdSmi(e.to_string()))
    }
}

impl<R: CommandRunner> GpuSource for AmdSmiSource<R> {
    fn snapshot(&mut self) -> Result<Snapshot, GpuError> {
        let board = self.run(&STATIC)?;
        let usage = self.run(&METRIC)?;
        vramfit_smi::parse_amd_smi(&[&board, &usage])
            .map_err(|e| GpuError::AmdSmi(format!("its JSON could not be read: {e}")))
    }

    fn sample(&mut self, gpus: &[u32]) -> Vec<(u32, Result<DeviceSample, GpuError>)> {
        sample_snapshot(
            self.snapshot(),
            gpus,
            "amd-smi's per-process memory is not read by vramfit",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers as amd-smi did on the machine of a published capture.
    struct Captured {
        board: &'static str,
        usage: &'static str,
    }

    impl CommandRunner for Captured {
        fn output(&self, program: &str, args: &[&str]) -> io::Result<String> {
            assert_eq!(program, AMD_SMI);
            match args {
                ["version"] => Ok("AMDSMI Tool: 24.6.2+2b02a07".to_string()),
                a if a == STATIC => Ok(self.board.to_string()),
                a if a == METRIC => Ok(self.usage.to_string()),
                other => Err(io::Error::other(format!("unexpected {other:?}"))),
            }
        }
    }

    struct NotInstalled;

    impl CommandRunner for NotInstalled {
        fn output(&self, _: &str, _: &[&str]) -> io::Result<String> {
            Err(io::ErrorKind::NotFound.into())
        }
    }

    const RX_6600: Captured = Captured {
        board: include_str!(
            "../../../smi/tests/fixtures/amd-smi/static-json__radeon-rx-6600__rocm-6.x-pve.json"
        ),
        usage: include_str!(
            "../../../smi/tests/fixtures/amd-smi/metric-json__radeon-rx-6600__rocm-6.x-pve.json"
        ),
    };

    #[test]
    fn a_published_amd_smi_capture_probes_like_nvml() {
        let mut source = AmdSmiSource::find(RX_6600).expect("amd-smi answers");
        let snap = source.snapshot().unwrap();
        assert_eq!(snap.schema, vramfit_smi::SCHEMA);
        let gpu = &snap.gpus[0];
        assert_eq!(gpu.name.as_deref(), Some("Navi 23 [Radeon RX 6600/6600 XT"));
        assert_eq!(gpu.memory.total_bytes, Some(8176 << 20));
        let samples = source.sample(&[0, 3]);
        let first = samples[0].1.as_ref().unwrap();
        assert_eq!(
            (first.memory.used_bytes, first.memory.free_bytes),
            (Some(202 << 20), Some(7974 << 20))
        );
        assert!(matches!(
            samples[1].1,
            Err(GpuError::NoSuchGpu { index: 3, count: 1 })
        ));
    }

    #[test]
    fn without_amd_smi_there_is_no_source_and_bad_output_is_named() {
        assert!(AmdSmiSource::find(NotInstalled).is_none());
        let garbled = Captured {
            board: "WARNING: not in render group",
            usage: "[]",
        };
        let err = AmdSmiSource::find(garbled).unwrap().snapshot().unwrap_err();
        assert!(err.to_string().starts_with("amd-smi failed"), "{err}");
    }
}
