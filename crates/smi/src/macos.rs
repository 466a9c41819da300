//! macOS: `sysctl hw.memsize iogpu.wired_limit_mb` (or an excerpt of `sysctl -a`) and
//! `system_profiler SPDisplaysDataType`, as text or `-json`, alone or pasted together; the text of
//! `system_profiler SPHardwareDataType` gives the chip and the memory where `sysctl` is missing.
//!
//! On Apple silicon the GPU shares the machine's memory, and Metal lets it keep only a share
//! wired: `recommendedMaxWorkingSetSize`, which llama.cpp and MLX budget against. A snapshot
//! gives that limit as the GPU's total: `iogpu.wired_limit_mb` where it is set (macOS then
//! reports it as the working set), else [`apple_working_set`] of `hw.memsize`. Neither command
//! says what the GPU holds now, so `used` and `free` stay unknown. On other Macs
//! `system_profiler`'s `VRAM (Total)` is the card's own memory.

use serde_json::Value;
use vramfit_units::{Bytes, GIB, KIB, MIB};

use crate::snapshot::{Gpu, Memory, Snapshot, SourceFormat};
use crate::ParseError;

/// Metal's `recommendedMaxWorkingSetSize` for a Mac with `ram` bytes under macOS 13 to 15, as
/// llama.cpp's Metal init logs it (docs/hardware.md lists each log): two thirds of the memory
/// rounded up to the next 16 KiB page at 32 GB and below (the 8, 16, 24 and 32 GB logs), three
/// quarters from 36 GB on (the 36, 48, 64, 96 and 128 GB logs). macOS 26 reports more on a 128 GB Mac
/// (107.52 GiB where this gives 96); `wired-limit` takes a figure read on the machine. It lives
/// here, not in the engine's catalogue, so that a pasted `sysctl` and a catalogue Mac share it.
pub fn apple_working_set(ram: Bytes) -> Bytes {
    const PAGE: u64 = 16 * KIB;
    if ram.0 <= 32 * GIB {
        Bytes((ram.0 / 3 * 2 / PAGE + 1) * PAGE)
    } else {
        Bytes(ram.0 / 4 * 3)
    }
}

/// What the pasted outputs said about the machine.
#[derive(Default, Debug)]
struct Facts {
    /// `hw.memsize`: the machine's memory in bytes.
    memsize: Option<u64>,
    /// `system_profiler SPHardwareDataType`'s `Memory:`, used where `hw.memsize` is not given.
    profiled_memsize: Option<u64>,
    /// `iogpu.wired_limit_mb`, in MiB; 0 means macOS's own limit.
    wired_limit_mib: Option<u64>,
    /// `machdep.cpu.brand_string`: on Apple silicon the chip, which is also the GPU's name.
    chip: Option<String>,
    /// Each GPU `system_profiler` lists.
    gpus: Vec<ProfiledGpu>,
}

#[derive(Default, Debug)]
struct ProfiledGpu {
    name: Option<String>,
    /// `VRAM (Total)`: a card's own memory (Intel Macs); Apple silicon prints none.
    vram_bytes: Option<u64>,
}

/// Whether `text` is `sysctl` or `system_profiler` (`SPDisplaysDataType`, `SPHardwareDataType`) text.
pub(crate) fn detect_text(text: &str) -> bool {
    text.lines().any(|line| {
        sysctl_pair(line).is_some_and(|(key, _)| is_memory_key(key))
            || matches!(line.trim(), "Graphics/Displays:" | "Hardware Overview:")
            || line.trim_start().starts_with("Chipset Model:")
    })
}

/// Whether `value` is `system_profiler SPDisplaysDataType -json` output.
pub(crate) fn detect_json(value: &Value) -> bool {
    value.get("SPDisplaysDataType").is_some_and(Value::is_array)
}

/// Reads `sysctl` and `system_profiler` text.
pub(crate) fn parse_text(text: &str) -> Snapshot {
    let mut facts = Facts::default();
    read_text(text, &mut facts);
    snapshot(facts)
}

/// Reads the outputs of one Mac's `sysctl` and `system_profiler` (text or `-json`) as one
/// snapshot: what `vramfit probe` runs on macOS.
pub fn parse_documents(documents: &[&str]) -> Result<Snapshot, ParseError> {
    let mut facts = Facts::default();
    for text in documents {
        if crate::json::detect(text) {
            let value = crate::json::read(text)?;
            if !detect_json(&value) {
                return Err(ParseError::InvalidJson {
                    message: "this JSON is not `system_profiler SPDisplaysDataType -json` output \
                              (no \"SPDisplaysDataType\" list)"
                        .to_string(),
                });
            }
            read_json(&value, &mut facts);
        } else {
            read_text(text, &mut facts);
        }
    }
    Ok(snapshot(facts))
}

/// Reads `system_profiler SPDisplaysDataType -json`.
pub(crate) fn parse_json(value: &Value) -> Snapshot {
    let mut facts = Facts::default();
    read_json(value, &mut facts);
    snapshot(facts)
}

fn read_text(text: &str, facts: &mut Facts) {
    // `SPHardwareDataType`'s `Memory:` is the machine's; under `Graphics/Displays:` no such key is
    // a card's, so it counts only inside `Hardware Overview:`.
    let mut in_hardware = false;
    for line in text.lines() {
        if let Some((key, value)) = sysctl_pair(line) {
            read_sysctl(key, value, facts);
            continue;
        }
        match line.trim() {
            "Hardware Overview:" => in_hardware = true,
            "Graphics/Displays:" => in_hardware = false,
            _ => {}
        }
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Chipset Model" => facts.gpus.push(ProfiledGpu {
                name: Some(value.to_string()).filter(|v| !v.is_empty()),
                vram_bytes: None,
            }),
            "VRAM (Total)" | "VRAM (Dynamic, Max)" => {
                if let Some(gpu) = facts.gpus.last_mut() {
                    gpu.vram_bytes = profiler_size(value);
                }
            }
            "Chip" if in_hardware && facts.chip.is_none() && !value.is_empty() => {
                facts.chip = Some(value.to_string())
            }
            "Memory" if in_hardware => facts.profiled_memsize = profiler_size(value),
            _ => {}
        }
    }
}

fn read_sysctl(key: &str, value: &str, facts: &mut Facts) {
    // `sudo sysctl iogpu.wired_limit_mb=N` prints `old -> new`; the new value holds.
    let value = value.rsplit("->").next().unwrap_or(value).trim();
    match key {
        // A machine without memory is a damaged paste, not a size.
        "hw.memsize" => facts.memsize = value.parse().ok().filter(|&bytes: &u64| bytes > 0),
        "iogpu.wired_limit_mb" | "debug.iogpu.wired_limit" => {
            facts.wired_limit_mib = value.parse().ok()
        }
        "machdep.cpu.brand_string" if !value.is_empty() => facts.chip = Some(value.to_string()),
        _ => {}
    }
}

fn read_json(value: &Value, facts: &mut Facts) {
    let items = value.get("SPDisplaysDataType").and_then(Value::as_array);
    for item in items.map_or(&[][..], Vec::as_slice) {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let name = text("sppci_model").or_else(|| text("_name"));
        let vram = text("spdisplays_vram").or_else(|| text("spdisplays_vram_shared"));
        facts.gpus.push(ProfiledGpu {
            name: name.map(str::to_string),
            vram_bytes: vram.and_then(profiler_size),
        });
    }
}

/// A top-level `key: value` (or the older `key = value`) line of `sysctl`, whose key is dotted
/// lower-case words; `system_profiler`'s indented `Key: Value` lines are not.
fn sysctl_pair(line: &str) -> Option<(&str, &str)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (key, value) = line.split_once(": ").or_else(|| line.split_once(" = "))?;
    let word = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.';
    (key.contains('.') && key.chars().all(word)).then_some((key, value))
}

fn is_memory_key(key: &str) -> bool {
    matches!(key, "hw.memsize" | "iogpu.wired_limit_mb")
}

/// `system_profiler`'s `8 GB` or `1536 MB`: powers of 1024, as Finder's VRAM figures are.
fn profiler_size(text: &str) -> Option<u64> {
    let (number, unit) = text.trim().split_once(' ')?;
    let unit = match unit {
        "MB" => MIB,
        "GB" => GIB,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(unit)
}

/// The snapshot the facts give, with what they leave unsaid.
fn snapshot(mut facts: Facts) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::MacOs);
    facts.memsize = facts
        .memsize
        .or(facts.profiled_memsize.filter(|&bytes| bytes > 0));
    let said_anything =
        facts.chip.is_some() || facts.memsize.is_some() || facts.wired_limit_mib.is_some();
    if facts.gpus.is_empty() && said_anything {
        facts.gpus.push(ProfiledGpu::default());
    }
    let chip = facts.chip.clone();
    for (index, profiled) in facts.gpus.iter().enumerate() {
        let name = profiled.name.clone().or_else(|| chip.clone());
        let apple = name.as_deref().is_some_and(|n| n.starts_with("Apple"));
        if name.is_none() {
            snap.warn(
                "the paste names no chip, so the GPU is taken to be Apple silicon; paste \
                 `sysctl machdep.cpu.brand_string` or `system_profiler SPDisplaysDataType` too",
            );
        }
        let total = match profiled.vram_bytes {
            Some(vram) if !apple => Some(vram),
            _ if apple || name.is_none() => apple_limit(&facts, &mut snap),
            _ => None,
        };
        snap.gpus.push(Gpu {
            index: u32::try_from(index).ok(),
            name,
            memory: Memory {
                total_bytes: total,
                ..Memory::default()
            },
            ..Gpu::default()
        });
    }
    snap.warn(
        "sysctl and system_profiler do not say what the GPU holds now, so used and free are \
         unknown",
    );
    snap
}

/// The GPU's limit on Apple silicon, with a warning that says where it came from.
fn apple_limit(facts: &Facts, snap: &mut Snapshot) -> Option<u64> {
    match (facts.wired_limit_mib, facts.memsize) {
        (Some(mib), _) if mib > 0 => {
            snap.warn(format!(
                "iogpu.wired_limit_mb is {mib}: Metal's working set is {mib} MiB, the total \
                 given here"
            ));
            mib.checked_mul(MIB)
        }
        (wired, Some(memsize)) => {
            let limit = apple_working_set(Bytes(memsize));
            snap.warn(format!(
                "the total is Metal's working set for {:.0} GiB under macOS 13-15 ({:.2} GiB: \
                 {} of the memory){}; macOS 26 reports more, so set wired-limit to the \
                 recommendedMaxWorkingSetSize llama.cpp logs there",
                memsize as f64 / GIB as f64,
                limit.0 as f64 / GIB as f64,
                if memsize <= 32 * GIB {
                    "two thirds"
                } else {
                    "three quarters"
                },
                if wired.is_some() {
                    ""
                } else {
                    ", assuming iogpu.wired_limit_mb is 0 (paste `sysctl iogpu.wired_limit_mb` \
                     to be sure)"
                },
            ));
            Some(limit.0)
        }
        _ => {
            snap.warn(
                "no hw.memsize: paste `sysctl hw.memsize iogpu.wired_limit_mb` for the GPU's \
                 limit",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/macos/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_published_sysctl_excerpt_gives_the_working_set() {
        // archspec-json's M4 Max capture (64 GiB): three quarters, 48 GiB.
        let snap = parse_text(&fixture(
            "sysctl-a-excerpt__apple-m4-max-64gb__macos-15.txt",
        ));
        assert_eq!(snap.source, SourceFormat::MacOs);
        let gpu = &snap.gpus[0];
        assert_eq!(gpu.name.as_deref(), Some("Apple M4 Max"));
        assert_eq!(gpu.memory.total_bytes, Some(48 * GIB));
        assert_eq!((gpu.memory.used_bytes, gpu.memory.free_bytes), (None, None));
        assert!(snap.warnings.iter().any(|w| w.contains("assuming iogpu")));
    }

    #[test]
    fn a_set_wired_limit_is_the_total() {
        // AlexsJones/llmfit#570: llama-server then lists `MTL0: Apple M1 Max (26000 MiB, …)`.
        let snap = parse_text(&fixture("sysctl-set-wired-limit__apple-m1-max-32gb.txt"));
        assert_eq!(snap.gpus[0].memory.total_bytes, Some(26000 * MIB));
        let m4 = fixture("sysctl-a-excerpt__apple-m4-max-64gb__macos-15.txt");
        let both = parse_documents(&[&m4, "iogpu.wired_limit_mb: 57344"]).unwrap();
        assert_eq!(both.gpus[0].memory.total_bytes, Some(57344 * MIB));
        let default = parse_documents(&[&m4, "iogpu.wired_limit_mb: 0"]).unwrap();
        assert_eq!(default.gpus[0].memory.total_bytes, Some(48 * GIB));
        assert!(default.warnings.iter().all(|w| !w.contains("assuming")));
    }

    #[test]
    fn system_profiler_names_the_chip_and_no_memory() {
        // mpmdw/JouleWise's live `-json` capture of an M3 Max: no VRAM on Apple silicon.
        let text = fixture("system-profiler-json__apple-m3-max-40-core-gpu.json");
        let snap = crate::parse(&text).unwrap();
        assert_eq!(snap.source, SourceFormat::MacOs);
        assert_eq!(snap.gpus[0].name.as_deref(), Some("Apple M3 Max"));
        assert_eq!(snap.gpus[0].memory.total_bytes, None);
        assert!(snap.warnings.iter().any(|w| w.contains("no hw.memsize")));
        // zeam-vm/cpu_info#17's iMac Pro: an Intel Mac's card has memory of its own, its total.
        let text =
            fixture("system-profiler-displays__imac-pro-radeon-pro-vega-64-16gb__cpu-info-17.txt");
        assert!(detect_text(&text));
        let snap = parse_text(&text);
        assert_eq!(snap.gpus[0].name.as_deref(), Some("Radeon Pro Vega 64"));
        assert_eq!(snap.gpus[0].memory.total_bytes, Some(16 * GIB));
    }

    #[test]
    fn a_published_text_capture_names_the_chip_and_its_memory_gives_the_limit() {
        // aabhinavg1/FixIt's M1 Pro (16 GB): the displays view and the Hardware Overview, pasted
        // together as one document.
        let displays = fixture("system-profiler-displays__apple-m1-pro-16-core-gpu__fixit.txt");
        let hardware = fixture("system-profiler-hardware-excerpt__apple-m1-pro-16gb__fixit.txt");
        assert!(detect_text(&displays) && detect_text(&hardware));
        let alone = parse_text(&displays);
        assert_eq!(alone.gpus.len(), 1);
        assert_eq!(alone.gpus[0].name.as_deref(), Some("Apple M1 Pro"));
        assert_eq!(alone.gpus[0].memory.total_bytes, None);
        let both = parse_text(&format!("{displays}\n{hardware}"));
        assert_eq!(both.gpus.len(), 1);
        assert_eq!(both.gpus[0].name.as_deref(), Some("Apple M1 Pro"));
        let limit = apple_working_set(Bytes(16 * GIB)).0;
        assert_eq!(both.gpus[0].memory.total_bytes, Some(limit));
    }

    #[test]
    fn the_hardware_overview_gives_the_memory() {
        // jafingerhut's System Report of a 32 GB M2 Pro: two thirds, rounded up to a page.
        let snap = parse_text(&fixture(
            "system-profiler-hardware__apple-m2-pro-32gb__macos-13.txt",
        ));
        assert_eq!(snap.gpus[0].name.as_deref(), Some("Apple M2 Pro"));
        let limit = apple_working_set(Bytes(32 * GIB)).0;
        assert_eq!(snap.gpus[0].memory.total_bytes, Some(limit));
        assert_eq!(format!("{:.2}", limit as f64 / MIB as f64), "21845.34");
    }

    #[test]
    fn sysctl_pairs_are_top_level_dotted_keys() {
        assert_eq!(
            sysctl_pair("hw.memsize: 17179869184"),
            Some(("hw.memsize", "17179869184"))
        );
        assert_eq!(sysctl_pair("hw.memsize = 8"), Some(("hw.memsize", "8")));
        assert_eq!(sysctl_pair("      Chipset Model: Apple M1"), None);
        assert_eq!(sysctl_pair("Memory Used: 3 GiB"), None);
        assert_eq!(profiler_size("8 GB"), Some(8 * GIB));
        assert_eq!(profiler_size("1536 MB"), Some(1536 * MIB));
        assert_eq!(profiler_size("lots"), None);
        assert_eq!(profiler_size("99999999999999999 GB"), None);
        let zero = parse_text("hw.memsize: 0\nmachdep.cpu.brand_string: Apple M1");
        assert_eq!(zero.gpus[0].memory.total_bytes, None);
    }
}
