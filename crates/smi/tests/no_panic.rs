//! `parse` must never panic: it runs in a browser tab, where a panic takes the page down.
//!
//! Arbitrary text and bytes, text built from the characters and markers the formats use, and
//! real fixtures damaged the way pastes get damaged (lines lost, cut off, characters changed).

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use vramfit_smi::strategies::memory;
use vramfit_smi::{parse, Gpu, MigDevice, Process, Snapshot, SourceFormat};

fn fixtures() -> &'static [String] {
    static FIXTURES: OnceLock<Vec<String>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut names: Vec<PathBuf> = ["nvidia-smi", "amd-smi", "rocm-smi", "macos"]
            .iter()
            .flat_map(|folder| std::fs::read_dir(root.join(folder)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n != "SOURCES.md"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    })
}

/// Format markers, so random text reaches deep into each parser rather than being refused.
const MARKERS: &[&str] = &[
    "| NVIDIA-SMI 610.57.04   KMD Version: 610.57.04   CUDA UMD Version: 13.3 |\n",
    "|   0  NVIDIA H100   On  |   00000000:00:09.0 Off |    0 |\n",
    "|  0%   44C    P8   36W /  450W |     232MiB /  24564MiB |   0%   Default |\n",
    "| MIG devices: |\n|====|\n|  0    2   0   0  |  11091MiB / 40448MiB  |\n",
    "| Processes: |\n|====|\n|    0   N/A  N/A   123   C+G   a b.exe   N/A |\n",
    "==============NVSMI LOG==============\n",
    "GPU 00000000:00:09.0\n    FB Memory Usage\n        Total : 81559 MiB\n",
    "    MIG Device\n        Shared FB Memory Usage\n            Used : 9 MiB\n",
    "    Processes\n        Process ID : 1\n            Used GPU Memory : 2 MiB\n",
    "<nvidia_smi_log><gpu id=\"0:0:0.0\"><fb_memory_usage><total>1 MiB</total>",
    "<mig_devices><mig_device><gpu_instance_id>1</gpu_instance_id>",
    "<processes><process_info><pid>1</pid><used_memory>N/A</used_memory>",
    "index, name, memory.total [MiB], memory.used [MiB], memory.free [MiB]\n",
    "pid, process_name, used_gpu_memory [MiB]\n",
    "0, x, 1 MiB, [N/A], 18446744073709551615 MiB\n",
    "{\"gpus\":[{\"memory.total\":1e308,\"memory.used\":-1,\"processes\":[{\"pid\":99999999999}]}]}",
    "{\"schema\":\"vramfit.snapshot/1\",\"gpus\":[{}]}",
    "[{\"gpu\":0,\"mem_usage\":{\"total_vram\":{\"value\":8176,\"unit\":\"MB\"},\"used_vram\":\"N/A\"}}]",
    "{\"gpu_data\":[{\"gpu\":1,\"asic\":{\"market_name\":\"x\"},\"vram\":{\"size\":{\"value\":-1,\"unit\":\"GB\"}}}]}",
    "GPU: 0\n    MEM_USAGE:\n        TOTAL_VRAM: 18446744073709551615 MB\n        USED_VRAM: N/A\n",
    "GPU: 4294967296\n    ASIC:\n        MARKET_NAME: x\n            :\n    VRAM:\nCPU: 0\n  SIZE: 1 GB\n",
    "gpu,total_vram,used_vram,vram_total,market_name\n0,-1,\"9,9\",18446744073709551615\n\"1\n",
    "| BDF                        GPU-Name | Mem-Uti |\n|===+===|\n| 0000:0c:00.0 ...é | x |\n|   0 | 1/ MB |\n|   1 | /99999999999999999999 GB |\n",
    "GPU[0]\t\t: VRAM Total Memory (B): 18446744073709551616\nGPU[1] : Card Series: N/A\n",
    "device,VRAM Total Memory (B),Card Series\ncard0,-1\ncard99999999999,1,x,y\n",
    "{\"card0\":{\"VRAM Total Memory (B)\":\"1e9\",\"GPU use (%)\":\"NaN\"},\"system\":{}}",
    "GPU 0: NVIDIA X (UUID: GPU-1)\n  MIG 1g.10gb Device 0: (UUID: MIG-1)\n",
    "NVIDIA-SMI version  : 595.71.05\n",
    "PhysicalDevice(index=0, name=\"x\", total_memory=11019MiB)\n",
    "GpuProcess(pid=1, gpu_memory=1MiB, type=C, device=PhysicalDevice(index=",
    "PhysicalDeviceSnapshot(\n    index=1,\n    memory_total=12,\n)\n",
];

fn marked_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(MARKERS).prop_map(str::to_string),
        "[ |+=:./%\\[\\]()<>\"',0-9A-Za-z\n\t-]{0,40}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|parts| parts.concat())
}

#[derive(Debug, Clone)]
enum Damage {
    DropLine(prop::sample::Index),
    Truncate(prop::sample::Index),
    Replace(prop::sample::Index, char),
    Insert(prop::sample::Index, String),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::DropLine),
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        (
            any::<prop::sample::Index>(),
            prop_oneof![
                prop::sample::select(vec![
                    '|', '+', ':', '/', '<', '>', ',', '\n', ' ', '0', 'é', '\u{1b}'
                ]),
                any::<char>(),
            ]
        )
            .prop_map(|(i, c)| Damage::Replace(i, c)),
        (
            any::<prop::sample::Index>(),
            prop::sample::select(MARKERS).prop_map(str::to_string)
        )
            .prop_map(|(i, s)| Damage::Insert(i, s)),
    ]
}

fn apply(text: &str, damage: &Damage) -> String {
    let chars: Vec<char> = text.chars().collect();
    match damage {
        Damage::DropLine(i) => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return String::new();
            }
            let drop = i.index(lines.len());
            lines
                .iter()
                .enumerate()
                .filter(|&(n, _)| n != drop)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        Damage::Truncate(i) => chars[..i.index(chars.len() + 1)].iter().collect(),
        Damage::Replace(i, c) => {
            let mut chars = chars;
            if !chars.is_empty() {
                let at = i.index(chars.len());
                chars[at] = *c;
            }
            chars.into_iter().collect()
        }
        Damage::Insert(i, s) => {
            let at = i.index(chars.len() + 1);
            let mut out: String = chars[..at].iter().collect();
            out.push_str(s);
            out.extend(&chars[at..]);
            out
        }
    }
}

fn text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(any::<String>())
}

fn id() -> impl Strategy<Value = Option<u32>> {
    proptest::option::of(any::<u32>())
}

fn finite() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(prop::num::f64::NORMAL | prop::num::f64::ZERO | prop::num::f64::SUBNORMAL)
}

fn gpu() -> impl Strategy<Value = Gpu> {
    let mig = (id(), id(), id(), text(), text(), memory()).prop_map(
        |(gpu_instance, compute_instance, mig_index, profile, uuid, memory)| MigDevice {
            gpu_instance,
            compute_instance,
            mig_index,
            profile,
            uuid,
            memory,
        },
    );
    let process = (
        id(),
        text(),
        text(),
        proptest::option::of(any::<u64>()),
        id(),
        id(),
    )
        .prop_map(
            |(pid, name, kind, used_bytes, gpu_instance, compute_instance)| Process {
                pid,
                name,
                kind,
                used_bytes,
                gpu_instance,
                compute_instance,
            },
        );
    (
        (id(), text(), text(), text(), memory()),
        (finite(), finite(), text(), prop::option::of(any::<u64>())),
        prop::collection::vec(mig, 0..3),
        prop::collection::vec(process, 0..3),
    )
        .prop_map(
            |(
                (index, name, uuid, pci_bus_id, memory),
                (utilization_pct, temperature_c, mig_mode, peak_used_bytes),
                mig_devices,
                processes,
            )| Gpu {
                index,
                name,
                uuid,
                pci_bus_id,
                memory,
                utilization_pct,
                temperature_c,
                mig_mode,
                mig_devices,
                processes,
                peak_used_bytes,
            },
        )
}

fn snapshot() -> impl Strategy<Value = Snapshot> {
    let source = prop::sample::select(SourceFormat::ALL.to_vec());
    (
        source,
        (text(), text(), text(), text()),
        prop::collection::vec(gpu(), 0..4),
        prop::collection::vec(any::<String>(), 0..3),
    )
        .prop_map(
            |(source, (host, timestamp, driver_version, cuda_version), gpus, warnings)| Snapshot {
                source,
                host,
                timestamp,
                driver_version,
                cuda_version,
                gpus,
                warnings,
                ..Snapshot::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_do_not_panic(s in any::<String>()) {
        let _ = parse(&s);
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn marker_soup_does_not_panic(s in marked_text()) {
        let _ = parse(&s);
    }

    /// amd-smi's text, CSV and default views, assembled line by line from their own pieces so
    /// that indentation, sections, headers and table rows meet in every order.
    #[test]
    fn amd_smi_views_from_their_pieces_do_not_panic(
        lines in prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec![
                    "GPU: 0", "GPU: 1", "CPU: 0", "    MEM_USAGE:", "    VRAM:", "    ASIC:",
                    "        TOTAL_VRAM: 65536 MB", "        USED_VRAM: N/A", "        SIZE: 8 GB",
                    "        MARKET_NAME: AMD Radeon", "gpu,total_vram,used_vram,market_name",
                    "gpu,pid,vram_mem", "0,1,2,\"a,b\"", "|=====+=====|", "+-----+-----+",
                    "| 0000:0c:00.0 AMD X | 1 % |", "|   0   SPX | N/A  1/2 MB |", "| BDF  GPU-Name |",
                    "GPU  VRAM_USED  VRAM_TOTAL", "TIMESTAMP GPU  VRAM_TOTAL", "  0   64908 MB    65501 MB",
                    " 99999999999  1 MB", "  1   °C°C°C°C°C°C°C°C°C°C°C°C°C",
                ]).prop_map(str::to_string),
                ("[ ]{0,12}", "[ :|,0-9A-Z_a-z/.\"é-]{0,24}").prop_map(|(pad, rest)| pad + &rest),
            ],
            0..24,
        )
    ) {
        let _ = parse(&lines.join("\n"));
    }

    #[test]
    fn damaged_fixtures_do_not_panic(
        which in any::<prop::sample::Index>(),
        damages in prop::collection::vec(damage(), 1..6),
    ) {
        let all = fixtures();
        let mut text = all[which.index(all.len())].clone();
        for d in &damages {
            text = apply(&text, d);
        }
        let _ = parse(&text);
    }

    #[test]
    fn every_fixture_survives_every_truncation_point(
        which in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
    ) {
        let all = fixtures();
        let text = &all[which.index(all.len())];
        let cut: String = text.chars().take(at.index(text.chars().count() + 1)).collect();
        let _ = parse(&cut);
    }

    #[test]
    fn snapshot_json_round_trips(snap in snapshot()) {
        let json = serde_json::to_string(&snap).unwrap();
        prop_assert_eq!(parse(&json).unwrap(), snap);
    }
}
