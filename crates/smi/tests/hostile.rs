//! Inputs built to hit the worst case of each parser stay fast: every parser is linear or bounded,
//! so a 1 MiB paste cannot hang the browser tab it runs in.

use std::time::{Duration, Instant};

/// Repeats `unit` after `prefix` up to just under the 1 MiB input limit.
fn fill(prefix: &str, unit: impl Fn(usize) -> String) -> String {
    let mut text = String::from(prefix);
    for i in 0.. {
        let next = unit(i);
        if text.len() + next.len() > vramfit_smi::MAX_INPUT_BYTES {
            break;
        }
        text.push_str(&next);
    }
    text
}

/// Half the input limit of `first` rows after `first_prefix`, then `second` rows after
/// `second_prefix` up to the limit.
fn half_and_half(
    first_prefix: &str,
    first: impl Fn(usize) -> String,
    second_prefix: &str,
    second: impl Fn(usize) -> String,
) -> String {
    let mut text = String::from(first_prefix);
    for i in 0.. {
        if text.len() > vramfit_smi::MAX_INPUT_BYTES / 2 {
            break;
        }
        text.push_str(&first(i));
    }
    text.push_str(second_prefix);
    for i in 0.. {
        let next = second(i);
        if text.len() + next.len() > vramfit_smi::MAX_INPUT_BYTES {
            break;
        }
        text.push_str(&next);
    }
    text
}

#[expect(
    clippy::too_many_lines,
    reason = "a data table: one entry per hostile input"
)]
fn hostile_inputs() -> Vec<(&'static str, String)> {
    vec![
        (
            "unclosed nvitop reprs",
            fill("", |_| "PhysicalDevice(index=1, name=\"x".into()),
        ),
        (
            "nvitop processes on distinct GPUs",
            fill("", |i| {
                format!("GpuProcess(pid={i}, gpu_memory=1MiB, type=C, device=PhysicalDevice(index={i}))\n")
            }),
        ),
        (
            "table processes on distinct GPUs",
            fill("| Processes: |\n|===|\n", |i| {
                format!("| {i} N/A N/A 1 C x 1MiB |\n")
            }),
        ),
        (
            "table GPUs with truncated names",
            fill("| NVIDIA-SMI 1 Driver Version: 1 |\n|===|\n", |i| {
                format!("| {i} A... On | 0000:01:00.0 Off | 0 |\n| 0% 1C P0 1W / 1W | 1MiB / 2MiB | 0% D |\n+-+\n")
            }),
        ),
        (
            "table MIG rows",
            fill("| MIG devices: |\n|===|\n", |i| {
                format!("| 0 {i} 0 0 | 1MiB / 2MiB |\n+-+\n")
            }),
        ),
        (
            "compute apps on distinct GPUs",
            fill(
                "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n",
                |i| format!("GPU-{i}, 1, x, 1 MiB\n"),
            ),
        ),
        (
            "a process name of commas",
            fill("pid, process_name, used_gpu_memory [MiB]\n1, ", |_| {
                ",".into()
            }),
        ),
        ("header-less CSV rows", fill("", |_| "800, 16384\n".into())),
        (
            "deeply nested XML",
            fill("<nvidia_smi_log><gpu id=\"0:0:0.0\">", |_| "<a>x".into()),
        ),
        (
            "many XML GPUs",
            fill("<nvidia_smi_log>", |_| {
                "<gpu id=\"0:0:0.0\"><fb_memory_usage><total>1 MiB</total></fb_memory_usage></gpu>"
                    .into()
            }),
        ),
        (
            "ever deeper -q indentation",
            fill("==============NVSMI LOG==============\n", |i| {
                format!("{}Section\n", " ".repeat(i))
            }),
        ),
        (
            "-q MIG devices",
            fill(
                "==============NVSMI LOG==============\nGPU 00000000:01:00.0\n",
                |_| "    MIG Device\n        GPU Instance ID : 1\n".into(),
            ),
        ),
        (
            "many XML GPUs with distinct bus ids",
            fill("<nvidia_smi_log>", |i| {
                format!("<gpu id=\"0:0:{i}.0\"><fb_memory_usage><total>1 MiB</total></fb_memory_usage></gpu>")
            }),
        ),
        (
            "CSV GPUs read again and again",
            fill("index, uuid, memory.used [MiB]\n", |i| {
                format!("{}, GPU-{}, {i}\n", i % 512, i % 512)
            }),
        ),
        (
            "same-named CSV GPUs, then processes naming them",
            half_and_half(
                "uuid, name, memory.total [MiB]\n",
                |i| format!("GPU-{i}, x, 1\n"),
                "gpu_name, pid, used_gpu_memory [MiB]\n",
                |i| format!("x, {i}, 1 MiB\n"),
            ),
        ),
        (
            "CSV GPUs, then processes on GPUs not listed",
            half_and_half(
                "uuid, memory.total [MiB]\n",
                |i| format!("GPU-{i}, 1\n"),
                "gpu_uuid, pid, used_gpu_memory [MiB]\n",
                |i| format!("GPU-x{i}, {i}, 1 MiB\n"),
            ),
        ),
        (
            "one process read again and again",
            fill("gpu_uuid, pid, used_gpu_memory [MiB]\n", |i| {
                format!("GPU-1, {}, 1 MiB\n", i % 4096)
            }),
        ),
        ("deeply nested JSON", fill("", |_| "[".into())),
        ("unterminated ANSI escapes", fill("", |_| "\u{1b}[".into())),
    ]
}

#[test]
fn hostile_inputs_parse_quickly() {
    // Debug builds on a slow machine take well under a second each; the quadratic versions these
    // guard against took minutes.
    let limit = Duration::from_secs(20);
    for (name, text) in hostile_inputs() {
        assert!(text.len() <= vramfit_smi::MAX_INPUT_BYTES, "{name}");
        let start = Instant::now();
        let result = vramfit_smi::parse(&text);
        let took = start.elapsed();
        println!(
            "{name}: {took:?} {:?}",
            result.as_ref().map(|s| s.gpus.len())
        );
        assert!(took < limit, "{name} took {took:?}");
        if let Ok(snapshot) = result {
            assert!(snapshot.warnings.len() <= 65, "{name}");
        }
    }
}
