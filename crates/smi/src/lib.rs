//! Sans-IO parsers for what `nvidia-smi` (every format), `gpustat --json` and `vramfit probe --json` print,
//! and the `vramfit.snapshot/1` schema they all produce.
//!
//! [`parse`] takes pasted text, works out which format it is, and returns a [`Snapshot`]. It does
//! no IO, reads no clock and never panics, because it also runs as WASM in a browser tab where a
//! panic would take the page down.
//!
//! Supported inputs:
//! - the default `nvidia-smi` table, every layout since driver ~390 (79, 89 and 91 columns, the
//!   MIG devices box, the processes box);
//! - `nvidia-smi --query-gpu=… --format=csv` (any field order, with or without `noheader` and
//!   `nounits`) and `--query-compute-apps=… --format=csv`;
//! - `nvidia-smi -q`, `nvidia-smi -q -x`, `nvidia-smi -L` and `nvidia-smi --version` (versions
//!   only: an empty GPU list and a warning);
//! - `gpustat --json`, nvitop's Python REPL output, and `vramfit.snapshot/1` JSON;
//! - AMD's `amd-smi static`, `metric` and `list`, as text, `--csv` or `--json`, the default
//!   view `amd-smi` alone prints, and `amd-smi monitor`'s table where it has VRAM columns;
//! - AMD's older `rocm-smi --showmeminfo vram`, as text, `--csv` or `--json`;
//! - macOS's `sysctl hw.memsize iogpu.wired_limit_mb` (or `sysctl -a`) and `system_profiler
//!   SPDisplaysDataType` (text or `-json`): the GPU's total is Metal's working set;
//! - llama.cpp's `--list-devices` (on a Mac, the working set Metal reports).
//!
//! Values a tool prints as `N/A`, `[Not Supported]` and the like become `None`, never `0`.
//! Output repeated by `-l` (or pasted twice) is read as its last reading of each GPU, with a
//! warning.

mod amd_smi;
mod amd_smi_text;
mod csv;
mod json;
mod list;
mod llama_devices;
mod macos;
mod nvitop;
mod query_text;
mod rocm_smi;
pub mod snapshot;
#[cfg(feature = "proptest")]
pub mod strategies;
mod table;
mod values;
mod version;
mod xml;

use std::borrow::Cow;

pub use amd_smi::parse_documents as parse_amd_smi;
pub use json::shown_in_message;
pub use macos::{apple_working_set, parse_documents as parse_macos};
pub use snapshot::{Gpu, Memory, MigDevice, Process, Snapshot, SourceFormat, SCHEMA};

/// The largest input [`parse`] accepts, in bytes. The biggest real outputs (`-q -x` on an 8-GPU
/// node) are a few hundred KiB; anything larger is not a paste of one of them.
pub const MAX_INPUT_BYTES: usize = 1_048_576;

/// The commands whose output [`parse`] reads, for messages that ask the user for a paste.
const WHAT_TO_PASTE: &str = "paste the output of `nvidia-smi` or `nvidia-smi \
--query-gpu=name,memory.total,memory.used,memory.free --format=csv` (also read: `nvidia-smi -q`, \
`nvidia-smi -q -x`, `nvidia-smi -L`, `--query-compute-apps` CSV, `gpustat --json`, nvitop \
snapshots, `amd-smi metric` (text, `--csv` or `--json`), `rocm-smi --showproductname --showmeminfo vram --csv`, \
`sysctl hw.memsize iogpu.wired_limit_mb` on a Mac, `llama-server --list-devices` and `vramfit \
probe --json`)";

/// Why a paste could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// Nothing but whitespace.
    Empty,
    /// More than [`MAX_INPUT_BYTES`].
    TooLarge { bytes: usize, limit: usize },
    /// Not any supported format.
    Unrecognized,
    /// nvidia-smi printed an error instead of a report (no driver, NVML mismatch, no devices).
    NvidiaSmiFailed { message: String },
    /// A recognised format in which no GPU could be found.
    NoGpus { format: SourceFormat },
    /// Header-less CSV whose field order cannot be told from its values.
    AmbiguousCsv { reason: String },
    /// JSON that does not parse, or is neither a snapshot nor gpustat output.
    InvalidJson { message: String },
    /// A snapshot document with another `schema` than [`SCHEMA`].
    UnsupportedSchema { found: String },
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Empty => write!(f, "the input is empty; {WHAT_TO_PASTE}"),
            ParseError::TooLarge { bytes, limit } => write!(
                f,
                "the input is {bytes} bytes, more than the {limit}-byte limit; paste the output \
                 of a single nvidia-smi command"
            ),
            ParseError::Unrecognized => {
                write!(
                    f,
                    "the input is not a format vramfit reads; {WHAT_TO_PASTE}"
                )
            }
            ParseError::NvidiaSmiFailed { message } => write!(
                f,
                "nvidia-smi reported an error instead of GPU data: \"{message}\"; fix the driver \
                 or container setup, then {WHAT_TO_PASTE}"
            ),
            ParseError::NoGpus { format } => write!(
                f,
                "this looks like {format} output but no GPU could be read from it; was it cut \
                 short? {WHAT_TO_PASTE}"
            ),
            ParseError::AmbiguousCsv { reason } => write!(
                f,
                "cannot tell which column is which: {reason}; rerun the query without \
                 `noheader`, e.g. `nvidia-smi --query-gpu=name,memory.total,memory.used,\
                 memory.free --format=csv`"
            ),
            ParseError::InvalidJson { message } => {
                write!(f, "the JSON could not be read ({message}); {WHAT_TO_PASTE}")
            }
            ParseError::UnsupportedSchema { found } => write!(
                f,
                "the snapshot's schema is \"{found}\", but this version of vramfit reads \
                 \"{SCHEMA}\""
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Works out the format of `text` and reads it.
///
/// Warnings about guesses and missing values (truncated names, no free memory in the table view,
/// an assumed CSV column order, …) are in [`Snapshot::warnings`].
pub fn parse(text: &str) -> Result<Snapshot, ParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(ParseError::TooLarge {
            bytes: text.len(),
            limit: MAX_INPUT_BYTES,
        });
    }
    let text = normalize(text);
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let format = detect_normalized(&text).ok_or_else(|| match smi_failure(&text) {
        Some(message) => ParseError::NvidiaSmiFailed { message },
        None => ParseError::Unrecognized,
    })?;
    let snap = match format {
        SourceFormat::GpustatJson | SourceFormat::AmdSmiJson | SourceFormat::VramfitProbe => {
            match json::read(&text) {
                Ok(value) => json::parse(value)?,
                // Text that only starts like JSON may still be another format.
                Err(error) => match detect_not_json(&text) {
                    Some(other) => parse_as(other, &text)?,
                    None => return Err(error),
                },
            }
        }
        other => parse_as(other, &text)?,
    };
    // Empty is a valid answer only where the format can legitimately list nothing: a probe of
    // a machine without GPUs, `--version`, and an idle compute-apps query.
    let may_be_empty = format == SourceFormat::VramfitProbe
        || matches!(
            snap.source,
            SourceFormat::Version | SourceFormat::ComputeAppsCsv
        );
    if snap.gpus.is_empty() && !may_be_empty {
        return Err(ParseError::NoGpus {
            format: snap.source,
        });
    }
    Ok(snap)
}

/// Which format `text` looks like, without reading it; `None` when it is none of them.
///
/// JSON is reported as [`SourceFormat::VramfitProbe`] and CSV as [`SourceFormat::QueryGpuCsv`]
/// until [`parse`] has looked inside.
pub fn detect(text: &str) -> Option<SourceFormat> {
    detect_normalized(&normalize(text.get(..MAX_INPUT_BYTES).unwrap_or(text)))
}

/// Reads `text` as `format`, which is not JSON.
fn parse_as(format: SourceFormat, text: &str) -> Result<Snapshot, ParseError> {
    Ok(match format {
        SourceFormat::Table => table::parse(text),
        SourceFormat::QueryGpuCsv | SourceFormat::ComputeAppsCsv => csv::parse(text)?,
        SourceFormat::QueryText => query_text::parse(text),
        SourceFormat::Xml => xml::parse(text),
        SourceFormat::List => list::parse(text),
        SourceFormat::NvitopSnapshot => nvitop::parse(text),
        SourceFormat::Version => version::parse(text),
        SourceFormat::AmdSmi if amd_smi_text::detect_table(text) => amd_smi_text::parse_table(text),
        SourceFormat::AmdSmi if amd_smi_text::detect_monitor(text) => {
            amd_smi_text::parse_monitor(text)
        }
        SourceFormat::AmdSmi if amd_smi_text::detect_csv(text) => amd_smi_text::parse_csv(text),
        SourceFormat::AmdSmi => amd_smi_text::parse_text(text),
        SourceFormat::RocmSmi if rocm_smi::detect_csv(text) => rocm_smi::parse_csv(text),
        SourceFormat::RocmSmi => rocm_smi::parse_text(text),
        SourceFormat::MacOs => macos::parse_text(text),
        SourceFormat::LlamaDevices => llama_devices::parse(text),
        SourceFormat::GpustatJson | SourceFormat::AmdSmiJson | SourceFormat::VramfitProbe => {
            json::parse(json::read(text)?)?
        }
    })
}

fn detect_normalized(text: &str) -> Option<SourceFormat> {
    if json::detect(text) {
        Some(SourceFormat::VramfitProbe)
    } else {
        detect_not_json(text)
    }
}

/// The format of `text` among those that are not JSON.
fn detect_not_json(text: &str) -> Option<SourceFormat> {
    // Most specific first: a table or -q log can contain lines that look like CSV or `-L`.
    if xml::detect(text) {
        Some(SourceFormat::Xml)
    } else if rocm_smi::detect_text(text) || rocm_smi::detect_csv(text) {
        Some(SourceFormat::RocmSmi)
    } else if amd_smi_text::detect_table(text)
        || amd_smi_text::detect_monitor(text)
        || amd_smi_text::detect_csv(text)
        || amd_smi_text::detect_text(text)
    {
        Some(SourceFormat::AmdSmi)
    } else if macos::detect_text(text) {
        Some(SourceFormat::MacOs)
    } else if llama_devices::detect(text) {
        Some(SourceFormat::LlamaDevices)
    } else if query_text::detect(text) {
        Some(SourceFormat::QueryText)
    } else if table::detect(text) {
        Some(SourceFormat::Table)
    } else if version::detect(text) {
        Some(SourceFormat::Version)
    } else if nvitop::detect(text) {
        Some(SourceFormat::NvitopSnapshot)
    } else if list::detect(text) {
        Some(SourceFormat::List)
    } else if smi_failure(text).is_none() && csv::detect(text) {
        Some(SourceFormat::QueryGpuCsv)
    } else {
        None
    }
}

/// The error line nvidia-smi prints when it cannot report, if `text` has one.
fn smi_failure(text: &str) -> Option<String> {
    const FAILURES: &[&str] = &[
        "NVIDIA-SMI has failed",
        "Failed to initialize NVML",
        "No devices were found",
        "nvidia-smi: command not found",
        "'nvidia-smi' is not recognized",
        "Unable to determine the device handle",
    ];
    text.lines()
        .map(str::trim)
        .find(|l| FAILURES.iter().any(|f| l.contains(f)))
        .map(str::to_string)
}

/// Undoes what copying through terminals, chat apps and Markdown does to a paste: a byte-order
/// mark, CRLF line ends, ANSI colour codes, code fences, and shell prompt lines. The final line
/// end goes too.
///
/// A clean paste (the usual case) is returned borrowed: this runs on every paste and every fuzz
/// input, and copying was most of the parse time.
fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    let text = if bytes.contains(&b'\r') || bytes.contains(&0x1b) {
        Cow::Owned(strip_carriage_returns_and_ansi(text))
    } else {
        Cow::Borrowed(text)
    };
    // Every kind of noise line has one of these; checking the whole text at once is far cheaper
    // than looking at each line.
    let may_have_noise = ["``", "$ ", ":\\"].iter().any(|mark| text.contains(mark));
    if may_have_noise && text.lines().any(is_paste_noise) {
        let kept: Vec<&str> = text.lines().filter(|l| !is_paste_noise(l)).collect();
        return Cow::Owned(kept.join("\n"));
    }
    match text {
        Cow::Borrowed(t) => Cow::Borrowed(t.strip_suffix('\n').unwrap_or(t)),
        Cow::Owned(mut t) => {
            if t.ends_with('\n') {
                t.pop();
            }
            Cow::Owned(t)
        }
    }
}

/// Turns CRLF and lone CR into LF and drops ANSI CSI sequences (`ESC [ parameters… final`).
fn strip_carriage_returns_and_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\u{1b}' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// A Markdown code fence or a shell prompt line such as `user@host:~$ nvidia-smi`,
/// `(env) ~$ gpustat --json` or `PS C:\\> nvidia-smi`. The prompt must be one word without
/// quotes, spaces or markup, so no line of JSON, XML, CSV or a table is taken for one.
fn is_paste_noise(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("```") || t.starts_with("$ ") {
        return true;
    }
    let t = match t.strip_prefix('(').and_then(|rest| rest.split_once(") ")) {
        Some((env, rest)) if !env.contains(char::is_whitespace) => rest,
        _ => t,
    };
    let plain =
        |w: &str| !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || "\"'<>|".contains(c));
    let unix = t
        .split_once("$ ")
        .is_some_and(|(user, _)| plain(user) && user.contains(['@', '~', ':']));
    let windows = t.split_once("> ").is_some_and(|(dir, _)| {
        let dir = dir.strip_prefix("PS ").unwrap_or(dir);
        let mut chars = dir.chars();
        matches!(
            (chars.next(), chars.next(), chars.next()),
            (Some(drive), Some(':'), Some('\\')) if drive.is_ascii_alphabetic()
        ) && !dir.contains(['"', '<', '|'])
    });
    unix || windows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_and_fences_are_noise_but_data_is_not() {
        for noise in [
            "```text",
            "$ nvidia-smi",
            "user@gpu-box:~$ nvidia-smi -q",
            "(base) ~$ gpustat --json",
            "PS C:\\Users\\me> nvidia-smi",
            "C:\\Users\\me> nvidia-smi -L",
        ] {
            assert!(is_paste_noise(noise), "{noise}");
        }
        for data in [
            r#"  "name": "a$ nvidia-smi","#,
            r#"{"schema":"vramfit.snapshot/1","host":"x@y:~$ z"}"#,
            "|    0   N/A  N/A   123   C   /bin/a$ b   1MiB |",
            "<process_name>a@b:~$ c</process_name>",
            "2026/06/24 10:17:57.038, NVIDIA GeForce RTX 2080 SUPER, x$ y",
            "    Name                          : C:\\a> b.exe",
        ] {
            assert!(!is_paste_noise(data), "{data}");
        }
    }

    #[test]
    fn normalize_strips_paste_noise() {
        let raw =
            "\u{feff}```\r\n$ nvidia-smi -L\r\n\u{1b}[1mGPU 0: X (UUID: GPU-1)\u{1b}[0m\r\n```";
        assert_eq!(normalize(raw), "GPU 0: X (UUID: GPU-1)");
    }

    proptest::proptest! {
        /// The borrowing fast path must give what filtering every line always gave.
        #[test]
        fn normalize_equals_filtering_every_line(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    "[ -~]{0,30}",
                    proptest::strategy::Just("```".to_string()),
                    proptest::strategy::Just("me@box:~$ nvidia-smi".to_string()),
                    proptest::strategy::Just("C:\\Users\\me> nvidia-smi".to_string()),
                    proptest::strategy::Just("| 0 a$ b |".to_string()),
                ],
                0..8,
            ),
            end in proptest::prop_oneof!["", "\n", "\n\n", "\r\n"],
        ) {
            let text = lines.join("\n") + &end;
            let clean = text.replace("\r\n", "\n");
            let expected = clean.lines().filter(|l| !is_paste_noise(l)).collect::<Vec<_>>().join("\n");
            let normalized = normalize(&text);
            proptest::prop_assert_eq!(normalized.as_ref(), expected.as_str());
        }
    }

    #[test]
    fn errors_name_what_to_paste() {
        let message = parse("hello there").unwrap_err().to_string();
        assert!(message.contains("nvidia-smi --query-gpu="), "{message}");
        assert!(matches!(parse(" \n\t"), Err(ParseError::Empty)));
        let big = "a".repeat(MAX_INPUT_BYTES + 1);
        assert!(matches!(parse(&big), Err(ParseError::TooLarge { .. })));
    }

    #[test]
    fn nvidia_smi_failures_are_reported_as_such() {
        let text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                    Make sure that the latest NVIDIA driver is installed and running.";
        assert!(matches!(
            parse(text),
            Err(ParseError::NvidiaSmiFailed { .. })
        ));
    }
}
