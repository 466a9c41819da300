//! Why the GPUs could not be read, said in one line a user can act on, and the exit code that
//! goes with it.
//!
//! Every NVML failure a user can meet on a misconfigured machine (no library, no driver, a
//! driver/library mismatch, no permission, a driver too old for a call) ends here, so none of
//! them surfaces as a panic or a raw NVML code.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

use nvml_wrapper::error::NvmlError;

/// The exit code for "the GPUs cannot be read on this machine".
pub const EXIT_GPU_UNAVAILABLE: u8 = 3;

/// The exit code for a command line that names something that is not there (`--gpu 7`).
pub const EXIT_USAGE: u8 = 2;

/// What to do instead when NVML cannot be used.
pub const FALLBACK_HINT: &str = "hint: vramfit can read nvidia-smi's output instead: \
`nvidia-smi | vramfit parse-smi` (or paste it into the web page)";

/// A failure to read the GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// `libnvidia-ml.so.1` could not be loaded; the detail is the loader's message.
    NoLibrary(String),
    DriverNotLoaded,
    /// The kernel driver and the user-space library are different versions.
    VersionMismatch,
    /// The user may not query this; the string says what was being read.
    NoPermission(String),
    /// The driver lacks this call or the device does not support it; says what was being read.
    Unsupported(String),
    /// The GPU fell off the bus or needs a reset; says which.
    GpuLost(String),
    /// NVML works but lists no GPU.
    NoGpu,
    /// `--gpu` named an index the machine does not have.
    NoSuchGpu {
        index: u32,
        count: usize,
    },
    /// A `--replay` file could not be read.
    Replay(String),
    /// Any other NVML failure: what was being read, and NVML's words.
    Other(String),
    /// `amd-smi` is installed but did not give readable output: what went wrong.
    AmdSmi(String),
    /// On a Mac, `sysctl` or `system_profiler` did not give readable output: what went wrong.
    MacOs(String),
}

impl GpuError {
    /// Classifies an NVML failure met while reading `what` (e.g. "GPU 0's memory").
    pub fn from_nvml(err: NvmlError, what: &str) -> GpuError {
        match err {
            NvmlError::LibloadingError(e) => GpuError::NoLibrary(e.to_string()),
            NvmlError::LibraryNotFound => {
                GpuError::NoLibrary("NVML reported its shared library missing".to_string())
            }
            NvmlError::DriverNotLoaded => GpuError::DriverNotLoaded,
            NvmlError::LibRmVersionMismatch => GpuError::VersionMismatch,
            NvmlError::NoPermission | NvmlError::OperatingSystem => {
                GpuError::NoPermission(what.to_string())
            }
            NvmlError::FunctionNotFound
            | NvmlError::FailedToLoadSymbol(_)
            | NvmlError::NotSupported => GpuError::Unsupported(what.to_string()),
            NvmlError::GpuLost | NvmlError::ResetRequired => GpuError::GpuLost(what.to_string()),
            other => GpuError::Other(format!("{what}: {other}")),
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            GpuError::NoSuchGpu { .. } | GpuError::Replay(_) => EXIT_USAGE,
            _ => EXIT_GPU_UNAVAILABLE,
        }
    }

    /// Whether reading nvidia-smi's text is a way round this failure.
    fn parse_smi_helps(&self) -> bool {
        !matches!(self, GpuError::NoSuchGpu { .. } | GpuError::Replay(_))
    }

    /// The cause, and on a line of its own the fallback where it helps: what the CLI prints and
    /// the Python package raises.
    pub fn explain(&self) -> String {
        match self.parse_smi_helps() {
            true => format!("{self}\n{FALLBACK_HINT}"),
            false => self.to_string(),
        }
    }

    /// Prints the cause (and the fallback where it helps) to `err` and gives the exit code.
    pub fn report(&self, err: &mut dyn Write) -> ExitCode {
        // A closed stderr leaves nothing better to do than exit with the code.
        let _ = writeln!(err, "vramfit: {}", self.explain());
        ExitCode::from(self.exit_code())
    }
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoLibrary(detail) => write!(
                f,
                "no NVML library: libnvidia-ml.so.1 could not be loaded ({detail}); is the NVIDIA \
                 driver installed, and in a container, is the GPU passed through?"
            ),
            GpuError::DriverNotLoaded => write!(
                f,
                "the NVIDIA kernel driver is not loaded; check `lsmod | grep nvidia` and the \
                 driver installation"
            ),
            GpuError::VersionMismatch => write!(
                f,
                "the NVIDIA driver and libnvidia-ml.so are different versions (usually a driver \
                 update without a reboot); reboot or reload the nvidia kernel modules"
            ),
            GpuError::NoPermission(what) => write!(
                f,
                "no permission to read {what}; run as a user who may open /dev/nvidia*"
            ),
            GpuError::Unsupported(what) => write!(
                f,
                "the driver cannot report {what}: the call is missing or not supported (the \
                 driver may be too old)"
            ),
            GpuError::GpuLost(what) => {
                write!(f, "{what}: the GPU has fallen off the bus or needs a reset")
            }
            GpuError::NoGpu => write!(
                f,
                "NVML lists no GPU on this machine; is the GPU visible here (CUDA_VISIBLE_DEVICES \
                 does not apply to NVML, but a container's device list does)?"
            ),
            GpuError::NoSuchGpu { index, count } => write!(
                f,
                "there is no GPU {index}: this machine has {count} (indices 0 to {})",
                count.saturating_sub(1)
            ),
            GpuError::Replay(detail) => write!(f, "cannot replay: {detail}"),
            GpuError::Other(detail) => write!(f, "NVML failed: {detail}"),
            GpuError::AmdSmi(detail) => write!(f, "amd-smi failed: {detail}"),
            GpuError::MacOs(detail) => write!(f, "reading the Mac's GPU failed: {detail}"),
        }
    }
}

impl std::error::Error for GpuError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(err: &GpuError) -> (String, u8) {
        let mut out = Vec::new();
        let code = err.report(&mut out);
        assert_eq!(code, ExitCode::from(err.exit_code()));
        (String::from_utf8_lossy(&out).into_owned(), err.exit_code())
    }

    #[test]
    fn nvml_failures_map_to_causes() {
        let what = "GPU 0's memory";
        let cases = [
            (NvmlError::LibraryNotFound, "no NVML library"),
            (NvmlError::DriverNotLoaded, "kernel driver is not loaded"),
            (NvmlError::LibRmVersionMismatch, "different versions"),
            (
                NvmlError::NoPermission,
                "no permission to read GPU 0's memory",
            ),
            (NvmlError::OperatingSystem, "no permission"),
            (NvmlError::FunctionNotFound, "too old"),
            (
                NvmlError::FailedToLoadSymbol("nvmlDeviceGetMemoryInfo_v2".into()),
                "too old",
            ),
            (NvmlError::NotSupported, "cannot report GPU 0's memory"),
            (NvmlError::GpuLost, "fallen off the bus"),
            (NvmlError::ResetRequired, "needs a reset"),
            (
                NvmlError::Unknown,
                "NVML failed: GPU 0's memory: an internal driver error",
            ),
        ];
        for (nvml, expected) in cases {
            let err = GpuError::from_nvml(nvml, what);
            let (text, code) = message(&err);
            assert!(text.contains(expected), "{text:?} lacks {expected:?}");
            assert_eq!(code, EXIT_GPU_UNAVAILABLE);
            assert!(text.contains("nvidia-smi | vramfit parse-smi"), "{text}");
            // One line of cause, one of hint: nothing that looks like a backtrace.
            assert_eq!(text.lines().count(), 2, "{text}");
        }
    }

    #[test]
    fn usage_errors_have_no_fallback_hint() {
        let (text, code) = message(&GpuError::NoSuchGpu { index: 3, count: 2 });
        assert_eq!(
            text,
            "vramfit: there is no GPU 3: this machine has 2 (indices 0 to 1)\n"
        );
        assert_eq!(code, EXIT_USAGE);
        let (text, code) = message(&GpuError::NoGpu);
        assert!(text.starts_with("vramfit: NVML lists no GPU"), "{text}");
        assert_eq!(code, EXIT_GPU_UNAVAILABLE);
    }
}
