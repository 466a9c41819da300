//! Format quirks, checked one by one on real fixtures and on small hand-made variations of them.

use std::path::PathBuf;

use vramfit_smi::{parse, Gpu, MigDevice, ParseError, Snapshot, SourceFormat, SCHEMA};

const MIB: u64 = 1_048_576;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nvidia-smi")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parsed(name: &str) -> Snapshot {
    parse(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn table_610_reads_kmd_and_cuda_umd_versions() {
    let snap = parsed("table__geforce-rtx-2080-super__610.57.04__linux.txt");
    assert_eq!(snap.driver_version.as_deref(), Some("610.57.04"));
    assert_eq!(snap.cuda_version.as_deref(), Some("13.3"));
    assert_eq!(snap.timestamp.as_deref(), Some("Wed Aug 12 21:54:00 2026"));
}

#[test]
fn table_cuda_na_is_none_and_old_headers_have_no_cuda() {
    let partial = parsed(
        "table-partial__a100-80gb-pcie-mig-enabled__550.54.14__cuda-NA-driver-container.txt",
    );
    assert_eq!(partial.cuda_version, None);
    assert_eq!(partial.driver_version.as_deref(), Some("550.54.14"));
    assert_eq!(partial.gpus[0].mig_mode.as_deref(), Some("Enabled"));
    let old = parsed("table__tesla-v100-pcie-truncated__410.48__linux.txt");
    assert_eq!(old.cuda_version, None);
    assert_eq!(old.driver_version.as_deref(), Some("410.48"));
}

#[test]
fn table_keeps_truncated_names_and_warns() {
    let snap = parsed("table__geforce-rtx-2080-super__595.71.05__linux.txt");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.name.as_deref(), Some("NVIDIA GeForce RTX 2080 ..."));
    assert_eq!(gpu.index, Some(0));
    assert_eq!(gpu.pci_bus_id.as_deref(), Some("00000000:0C:00.0"));
    assert_eq!(gpu.temperature_c, Some(45.0));
    assert_eq!(gpu.utilization_pct, Some(8.0));
    assert!(snap.warnings.iter().any(|w| w.contains("truncated")));
    assert!(snap.warnings.iter().any(|w| w.contains("not free memory")));
    let old = parsed("table__geforce-rtx-2070-laptop__440.100__linux-pre-mig-layout.txt");
    assert_eq!(old.gpus[0].name.as_deref(), Some("GeForce RTX 207..."));
}

#[test]
fn table_process_names_keep_spaces_and_left_truncation() {
    let snap = parsed("table__geforce-rtx-2080-super__591.86__windows.txt");
    let procs = &snap.gpus[0].processes;
    let nzxt = procs.iter().find(|p| p.pid == Some(20372)).unwrap();
    assert_eq!(
        nzxt.name.as_deref(),
        Some(r"...m Files\NZXT CAM\NZXT CAM.exe")
    );
    assert_eq!(nzxt.kind.as_deref(), Some("C+G"));
    // WDDM cannot attribute memory: `N/A` must stay unknown, not become 0.
    assert!(procs.iter().all(|p| p.used_bytes.is_none()));
    assert_eq!(snap.gpus[0].used_by_processes(), None);
    let ffmpeg = procs.iter().find(|p| p.pid == Some(25704)).unwrap();
    assert_eq!(
        ffmpeg.name.as_deref(),
        Some(r"...1.1-full_build\bin\ffmpeg.exe")
    );
    assert_eq!(ffmpeg.kind.as_deref(), Some("C"));
}

#[test]
fn table_pre_450_processes_have_no_instance_ids() {
    let snap = parsed("table__geforce-rtx-2070-laptop__440.100__linux-pre-mig-layout.txt");
    let p = &snap.gpus[0].processes[0];
    assert_eq!(p.pid, Some(1357));
    assert_eq!(p.name.as_deref(), Some("/usr/lib/xorg/Xorg"));
    assert_eq!(p.used_bytes, Some(18 * MIB));
    assert_eq!((p.gpu_instance, p.compute_instance), (None, None));
}

#[test]
fn table_seven_digit_pids_and_process_sums() {
    let snap = parsed("table__geforce-rtx-4090__580.65.06__linux.txt");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.processes[0].pid, Some(3_230_642));
    assert_eq!(gpu.used_by_processes(), Some((167 + 12) * MIB));
    assert_eq!(gpu.memory.free_or_derived(), Some((24564 - 232) * MIB));
}

#[test]
fn table_mig_devices_and_processes_carry_instance_ids() {
    let snap = parsed("table__h100-mig__590.48.01__linux.txt");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.utilization_pct, None);
    assert_eq!(
        gpu.mig_devices[0],
        MigDevice {
            gpu_instance: Some(2),
            compute_instance: Some(0),
            mig_index: Some(0),
            memory: vramfit_smi::Memory {
                total_bytes: Some(40448 * MIB),
                used_bytes: Some(11091 * MIB),
                ..Default::default()
            },
            ..Default::default()
        }
    );
    let p = &gpu.processes[2];
    assert_eq!(p.name.as_deref(), Some("./gpu_burn"));
    assert_eq!((p.gpu_instance, p.compute_instance), (Some(2), Some(0)));
}

/// H200-MIG's GI 2 has two compute instances that both print GI 2's memory line.
#[test]
fn table_mig_compute_instances_are_not_double_counted() {
    let text = fixture("table__h100-mig__590.48.01__linux.txt").replace(
        "|  0    3   0   1  |              17MiB / 20096MiB    |",
        "|  0    2   1   1  |           11091MiB / 40448MiB    |",
    );
    let snap = parse(&text).unwrap();
    let migs = &snap.gpus[0].mig_devices;
    assert_eq!(migs.len(), 3);
    let total: u64 = migs.iter().filter_map(|m| m.memory.total_bytes).sum();
    assert_eq!(total, (40448 + 9984 + 9984) * MIB);
    assert!(snap
        .warnings
        .iter()
        .any(|w| w.contains("compute instances")));
}

#[test]
fn table_unified_memory_not_supported_is_none() {
    let text = fixture("table__geforce-rtx-4090__580.65.06__linux.txt")
        .replace("|     232MiB /  24564MiB |", "|          Not Supported |");
    let snap = parse(&text).unwrap();
    assert_eq!(snap.gpus[0].memory, vramfit_smi::Memory::default());
}

#[test]
fn table_with_crlf_indentation_and_fences_still_parses() {
    let raw = fixture("table__l40s__595.80__linux.txt");
    let mangled = format!(
        "```\r\n$ nvidia-smi\r\n{}\r\n```\r\n",
        raw.lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\r\n")
    );
    assert_eq!(parse(&mangled).unwrap().gpus, parse(&raw).unwrap().gpus);
}

#[test]
fn table_repeated_by_watch_keeps_the_last() {
    let a = fixture("table__geforce-rtx-2080-super__595.71.05__linux.txt");
    let b = fixture("table__geforce-rtx-2080-super__610.57.04__linux.txt");
    let snap = parse(&format!("{a}\n{b}")).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(815 * MIB));
}

#[test]
fn processes_box_alone_creates_placeholder_gpus() {
    let text = fixture("table__l40s__595.80__linux.txt");
    let box_only: String = text.lines().skip(12).collect::<Vec<_>>().join("\n");
    let snap = parse(&box_only).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].memory.total_bytes, None);
    assert_eq!(snap.gpus[0].processes.len(), 2);
}

#[test]
fn query_text_reads_reserved_and_610_versions() {
    let snap = parsed("q__geforce-rtx-2080-super__610.57.04__linux.txt");
    assert_eq!(snap.driver_version.as_deref(), Some("610.57.04"));
    assert_eq!(snap.cuda_version.as_deref(), Some("13.3"));
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.memory.reserved_bytes, Some(400 * MIB));
    assert_eq!(gpu.name.as_deref(), Some("NVIDIA GeForce RTX 2080 SUPER"));
    assert_eq!(
        gpu.uuid.as_deref(),
        Some("GPU-00000000-0000-0000-0000-000000000000")
    );
    assert_eq!(gpu.mig_mode, None);
    let p = &gpu.processes[0];
    assert_eq!(
        (p.pid, p.kind.as_deref(), p.name.as_deref(), p.used_bytes),
        (
            Some(1720),
            Some("G"),
            Some("/usr/bin/gnome-shell"),
            Some(173 * MIB)
        )
    );
}

#[test]
fn query_text_mig_devices_and_windows_processes() {
    let snap = parsed("q__h100-mig__590.48.01__linux.txt");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.mig_mode.as_deref(), Some("Enabled"));
    let mig = &gpu.mig_devices[3];
    assert_eq!(
        (mig.gpu_instance, mig.compute_instance, mig.mig_index),
        (Some(10), Some(0), Some(3))
    );
    assert_eq!(mig.memory.free_bytes, Some(9976 * MIB));
    assert_eq!(mig.memory.reserved_bytes, Some(0));
    assert_eq!(gpu.processes[0].gpu_instance, Some(2));

    let win = parsed("q__geforce-rtx-2080-super__610.62__windows.txt");
    let procs = &win.gpus[0].processes;
    assert!(procs
        .iter()
        .all(|p| p.used_bytes.is_none() && p.pid.is_some()));
    assert_eq!(
        procs.last().unwrap().name.as_deref(),
        Some(r"C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe")
    );
}

#[test]
fn xml_reads_every_field_and_windows_na_memory() {
    let snap = parsed("xml__tesla-t4__512.78.xml");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.name.as_deref(), Some("Tesla T4"));
    assert_eq!(gpu.memory.reserved_bytes, Some(201 * MIB));
    assert!(gpu.processes.iter().all(|p| p.used_bytes.is_none()));
    // Empty `<process_name></process_name>` elements are unknown names, not empty strings.
    assert_eq!(
        gpu.processes.iter().filter(|p| p.name.is_none()).count(),
        13
    );
    let a100 = parsed("xml__a100-sxm4-80gb-x4__535.54.03.xml");
    assert_eq!(a100.gpus[0].mig_devices[1].gpu_instance, Some(4));
    assert_eq!(
        a100.gpus[0].mig_devices[1].memory.free_bytes,
        Some(19955 * MIB)
    );
    assert!(a100
        .warnings
        .iter()
        .any(|w| w.contains("4 GPUs are attached")));
}

#[test]
fn xml_cut_short_keeps_what_came_before() {
    let text = fixture("xml__rtx-a5000-x2__590.44.01.xml");
    let cut = text
        .get(..text.find("<gpu id=\"00000000:C1:00.0\">").unwrap() + 200)
        .unwrap();
    let snap = parse(cut).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(22437 * MIB));
}

#[test]
fn csv_header_units_and_reserved() {
    let snap = parsed("csv-query-gpu-full__h100-mig__590.48.01__linux.csv");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.memory.reserved_bytes, Some(479 * MIB));
    assert_eq!(gpu.mig_mode.as_deref(), Some("Enabled"));
    assert_eq!(gpu.utilization_pct, None);
    assert_eq!(snap.driver_version.as_deref(), Some("590.48.01"));
}

#[test]
fn csv_any_field_order_with_nounits() {
    let text = "memory.free [MiB], name, index, memory.total [MiB], memory.used [MiB]\n\
                15000, Tesla T4, 0, 15360, 360\n\
                [N/A], Tesla T4, 1, 15360, [N/A]";
    let snap = parse(text).unwrap();
    assert_eq!(snap.source, SourceFormat::QueryGpuCsv);
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(15000 * MIB));
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(360 * MIB));
    assert_eq!(snap.gpus[1].index, Some(1));
    assert_eq!(snap.gpus[1].memory.used_bytes, None);
    assert!(snap.warnings.is_empty(), "{:?}", snap.warnings);
}

#[test]
fn csv_without_header_assumes_documented_orders() {
    let snap = parse("800, 16384\n").unwrap();
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(800 * MIB));
    assert_eq!(snap.gpus[0].memory.total_bytes, Some(16384 * MIB));
    assert!(snap.warnings[0].contains("memory.used,memory.total"));

    let snap = parse("16384 MiB, 800 MiB, 15200 MiB\n16384 MiB, 0 MiB, 16000 MiB").unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(15200 * MIB));

    let snap = parse("0, NVIDIA H100 80GB HBM3, 81559, 1, 81007").unwrap();
    assert_eq!(snap.gpus[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(81007 * MIB));

    assert!(matches!(
        parse("800\n"),
        Err(ParseError::AmbiguousCsv { .. })
    ));
    assert!(matches!(
        parse("800, 16384, 15200"),
        Err(ParseError::AmbiguousCsv { .. })
    ));
}

#[test]
fn compute_apps_attach_to_query_gpu_rows_by_uuid() {
    let gpus = fixture("csv-query-gpu-full__h100-mig__590.48.01__linux.csv");
    let apps = fixture("csv-compute-apps__h100-mig__590.48.01__linux.csv");
    let snap = parse(&format!("{gpus}\n{apps}")).unwrap();
    assert_eq!(snap.source, SourceFormat::QueryGpuCsv);
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].processes.len(), 3);
    assert_eq!(
        snap.gpus[0].used_by_processes(),
        Some((2296 + 1272 + 7484) * MIB)
    );
}

#[test]
fn compute_apps_names_with_commas_and_idle_output() {
    let text = "pid, process_name, used_gpu_memory [MiB]\n42, python train.py --a=1,2, 100 MiB";
    let snap = parse(text).unwrap();
    let p = &snap.gpus[0].processes[0];
    assert_eq!(p.name.as_deref(), Some("python train.py --a=1,2"));
    assert_eq!(p.used_bytes, Some(100 * MIB));

    let idle = parse("pid, process_name, used_gpu_memory [MiB]\n").unwrap();
    assert_eq!(idle.source, SourceFormat::ComputeAppsCsv);
    assert!(idle.gpus.is_empty());
}

#[test]
fn list_names_gpus_in_full_with_mig_profiles() {
    let snap = parsed("list-L__h200-mig__590.48.01__linux.txt");
    assert_eq!(snap.gpus[0].name.as_deref(), Some("NVIDIA H200"));
    let mig = &snap.gpus[0].mig_devices[1];
    assert_eq!(mig.profile.as_deref(), Some("2c.3g.71gb"));
    assert_eq!(mig.mig_index, Some(1));
    assert_eq!(
        mig.uuid.as_deref(),
        Some("MIG-00000001-0000-0000-0000-000000000001")
    );
}

#[test]
fn version_output_gives_versions_and_no_gpus() {
    let snap = parsed("version__geforce-rtx-2080-super__610.57.04__linux.txt");
    assert_eq!(snap.driver_version.as_deref(), Some("610.57.04"));
    assert_eq!(snap.cuda_version.as_deref(), Some("13.3"));
    assert!(snap.gpus.is_empty());
    assert!(!snap.warnings.is_empty());
}

#[test]
fn gpustat_reads_mib_numbers_and_processes() {
    let snap = parsed("gpustat-json__gtx-1080-ti-x4__gpustat-0.6-era.json");
    assert_eq!(snap.host.as_deref(), Some("roo-21"));
    let p = &snap.gpus[0].processes[2];
    assert_eq!(
        (p.pid, p.name.as_deref(), p.used_bytes),
        (Some(2205), Some("Xorg"), Some(231 * MIB))
    );
}

#[test]
fn nvitop_snapshot_bytes_win_over_rounded_repr() {
    let snap = parsed("nvitop-api-snapshot__rtx-2080-ti-x10__readme-example.txt");
    let gpu = &snap.gpus[1];
    assert_eq!(
        gpu.uuid.as_deref(),
        Some("GPU-01234567-89ab-cdef-0123-456789abcdef")
    );
    assert_eq!(gpu.memory.used_bytes, Some(1_092_485_120));
    let p = &snap.gpus[0].processes[0];
    assert_eq!(
        (p.pid, p.name.as_deref(), p.used_bytes),
        (Some(52059), Some("ipython3"), Some(7885 * MIB))
    );
}

#[test]
fn probe_json_round_trips_and_partial_json_loads() {
    for name in [
        "q__h100-mig__590.48.01__linux.txt",
        "table__geforce-rtx-2080-super__591.86__windows.txt",
        "version__geforce-rtx-2080-super__610.62__windows.txt",
    ] {
        let snap = parsed(name);
        let json = serde_json::to_string_pretty(&snap).unwrap();
        assert_eq!(parse(&json).unwrap(), snap, "{name}");
    }
    // The snapshot reader is written by hand; every fixture's snapshot, as the derived writer
    // writes it, reads back equal, and so does serde's derived reader.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let entries = ["nvidia-smi", "amd-smi", "rocm-smi", "macos"]
        .iter()
        .flat_map(|folder| std::fs::read_dir(root.join(folder)).unwrap());
    for entry in entries {
        let path = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(snap) = parse(&text) else { continue };
        let json = serde_json::to_string(&snap).unwrap();
        assert_eq!(parse(&json).unwrap(), snap, "{}", path.display());
        assert_eq!(
            serde_json::from_str::<Snapshot>(&json).unwrap(),
            snap,
            "{}",
            path.display()
        );
    }
    for (bad, field) in [
        (
            r#"{"schema":"vramfit.snapshot/1","gpus":[{"memory":{"total_bytes":"lots"}}]}"#,
            "gpus[0].memory.total_bytes",
        ),
        (
            r#"{"schema":"vramfit.snapshot/1","gpus":[{"processes":[{"pid":-1}]}]}"#,
            "gpus[0].processes[0].pid",
        ),
        (
            r#"{"schema":"vramfit.snapshot/1","source":"telepathy"}"#,
            "telepathy",
        ),
        (
            r#"{"schema":"vramfit.snapshot/1","gpus":{}}"#,
            "the snapshot.gpus",
        ),
    ] {
        let error = parse(bad).unwrap_err().to_string();
        assert!(error.contains(field), "{bad}: {error}");
    }
    let partial =
        parse(r#"{"schema":"vramfit.snapshot/1","gpus":[{"memory":{"total_bytes":1024}}]}"#)
            .unwrap();
    assert_eq!(partial.schema, SCHEMA);
    assert_eq!(partial.source, SourceFormat::VramfitProbe);
    assert_eq!(partial.gpus[0].memory.total_bytes, Some(1024));
    assert_eq!(partial.gpus[0].memory.used_bytes, None);
    let empty_probe = parse(r#"{"schema":"vramfit.snapshot/1"}"#).unwrap();
    assert!(empty_probe.gpus.is_empty());
}

#[test]
fn snapshot_json_uses_snake_case_and_nulls() {
    let snap = parsed("table__l4__550.90.07__linux-simreplay.txt");
    let json: serde_json::Value = serde_json::to_value(&snap).unwrap();
    assert_eq!(json["schema"], "vramfit.snapshot/1");
    assert_eq!(json["source"], "table");
    assert_eq!(
        json["gpus"][0]["memory"]["free_bytes"],
        serde_json::Value::Null
    );
    assert_eq!(json["gpus"][0]["memory"]["total_bytes"], 23034 * MIB);
    assert_eq!(json["gpus"][0]["pci_bus_id"], "00000000:01:00.0");
}

#[test]
fn clear_errors() {
    assert!(matches!(
        parse(r#"{"schema":"vramfit.snapshot/2"}"#),
        Err(ParseError::UnsupportedSchema { .. })
    ));
    assert!(matches!(
        parse("{\"gpus\": [1,"),
        Err(ParseError::InvalidJson { .. })
    ));
    assert!(matches!(
        parse("{\"gpus\": []}"),
        Err(ParseError::NoGpus { .. })
    ));
    assert!(matches!(
        parse("Failed to initialize NVML: Driver/library version mismatch"),
        Err(ParseError::NvidiaSmiFailed { .. })
    ));
    let err = parse("<nvidia_smi_log></nvidia_smi_log>").unwrap_err();
    assert!(matches!(
        err,
        ParseError::NoGpus {
            format: SourceFormat::Xml
        }
    ));
    assert!(err.to_string().contains("nvidia-smi -q -x"));
    let unknown = parse("lorem ipsum dolor").unwrap_err().to_string();
    assert!(unknown.contains("--query-gpu=name,memory.total,memory.used,memory.free --format=csv"));
    let err: Box<dyn std::error::Error> = Box::new(ParseError::Empty);
    assert!(err.to_string().contains("empty"));
}

#[test]
fn detect_names_the_format_without_parsing() {
    assert_eq!(
        vramfit_smi::detect(&fixture("q__l4__550.90.07__linux-simreplay.txt")),
        Some(SourceFormat::QueryText)
    );
    assert_eq!(vramfit_smi::detect("lorem ipsum"), None);
}

#[test]
fn table_wsl_version_mismatch_is_flagged() {
    let text = fixture("table__geforce-rtx-2080-super__595.71.05__linux.txt")
        .replace("NVIDIA-SMI 595.71.05 ", "NVIDIA-SMI 530.47     ");
    let snap = parse(&text).unwrap();
    assert_eq!(snap.driver_version.as_deref(), Some("595.71.05"));
    assert!(snap.warnings.iter().any(|w| w.contains("WSL2")));
}

/// The 535-era layout nests `MIG Device` blocks under `MIG Devices`, with a plain
/// `FB Memory Usage` section inside each; it must not overwrite the GPU's own figures.
#[test]
fn query_text_nested_mig_devices_keep_their_own_memory() {
    let text = "==============NVSMI LOG==============

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    MIG Devices
        MIG Device
            Index                         : 0
            GPU Instance ID               : 1
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 19968 MiB
                Reserved                  : 0 MiB
                Used                      : 12 MiB
                Free                      : 19955 MiB
        MIG Device
            Index                         : 1
            GPU Instance ID               : 1
            Compute Instance ID           : 1
            FB Memory Usage
                Total                     : 19968 MiB
                Reserved                  : 0 MiB
                Used                      : 12 MiB
                Free                      : 19955 MiB
    FB Memory Usage
        Total                             : 81920 MiB
        Reserved                          : 869 MiB
        Used                              : 50 MiB
        Free                              : 80999 MiB
    Processes                             : None
";
    let snap = parse(text).unwrap();
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.memory.total_bytes, Some(81920 * MIB));
    assert_eq!(gpu.memory.reserved_bytes, Some(869 * MIB));
    assert_eq!(gpu.mig_devices.len(), 1);
    assert_eq!(gpu.mig_devices[0].memory.used_bytes, Some(12 * MIB));
    assert!(snap
        .warnings
        .iter()
        .any(|w| w.contains("compute instances")));
    assert!(gpu.processes.is_empty());
}

/// telegraf's header-less field order starts with `fan.speed`, which passively cooled data-centre
/// GPUs print as `[N/A]`; the leading bracket must not make the paste look like JSON.
#[test]
fn headerless_csv_starting_with_na_is_csv_not_json() {
    let text = "[N/A], 81920, 4, 81049, P0, 34, NVIDIA A100 80GB PCIe, \
                GPU-3f1e0c1a-5b2d-4c8e-9a7f-0d6b1e2c3a4b, Default, 0, 0, 0\n\
                [N/A], 81920, 30547, 50506, P0, 41, NVIDIA A100 80GB PCIe, \
                GPU-7a9c2e4f-1b3d-4e5f-8a6b-2c4d6e8f0a1b, Default, 97, 63, 1";
    assert_eq!(vramfit_smi::detect(text), Some(SourceFormat::QueryGpuCsv));
    let snap = parse(text).unwrap();
    assert_eq!(snap.source, SourceFormat::QueryGpuCsv);
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[1].index, Some(1));
    assert_eq!(snap.gpus[1].name.as_deref(), Some("NVIDIA A100 80GB PCIe"));
    assert_eq!(snap.gpus[1].memory.used_bytes, Some(30547 * MIB));
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(81049 * MIB));
    assert!(snap.warnings.iter().any(|w| w.contains("fan.speed")));

    // The same with nvidia-smi's own fixture, fan speed and all.
    let fixture = fixture("csv-query-gpu-noheader-nounits__gtx-1070-ti__telegraf-2018.csv");
    let passive = fixture.replacen("85,", "[N/A],", 1);
    assert!(passive.starts_with("[N/A],"));
    assert_eq!(parse(&passive).unwrap().gpus, parse(&fixture).unwrap().gpus);
}

#[test]
fn json_is_told_by_what_follows_the_bracket() {
    for json in [
        "{\"gpus\": []}",
        "  {\n  \"schema\": \"vramfit.snapshot/2\"\n}",
        "{}",
        "[]",
        "[{\"gpus\": []}]",
    ] {
        assert_eq!(
            vramfit_smi::detect(json),
            Some(SourceFormat::VramfitProbe),
            "{json}"
        );
    }
    assert!(matches!(parse("{}"), Err(ParseError::InvalidJson { .. })));
    for not_json in ["[N/A], 1, 2", "[Not Supported], 8114", "{x}", "[1, 2]"] {
        assert_ne!(
            vramfit_smi::detect(not_json),
            Some(SourceFormat::VramfitProbe),
            "{not_json}"
        );
    }
}

/// Text that starts like JSON but does not parse as JSON is tried as the other formats.
#[test]
fn text_that_only_starts_like_json_falls_back_to_other_formats() {
    let table = fixture("table__l40s__595.80__linux.txt");
    let snap = parse(&format!("[\"nvidia-smi\"]\n{table}")).unwrap();
    assert_eq!(snap.source, SourceFormat::Table);
    assert_eq!(snap.gpus, parse(&table).unwrap().gpus);
    // Broken JSON with no other format in it still says what is wrong with the JSON.
    assert!(matches!(
        parse("{\"gpus\": [1,"),
        Err(ParseError::InvalidJson { .. })
    ));
}

/// A sum of only the processes that report memory would understate what they use.
#[test]
fn used_by_processes_is_none_when_any_process_figure_is_unknown() {
    let text = "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n\
                GPU-1, 1, python train.py, 1000 MiB\n\
                GPU-1, 2, dwm.exe, [N/A]";
    let gpu = &parse(text).unwrap().gpus[0];
    assert_eq!(gpu.processes[0].used_bytes, Some(1000 * MIB));
    assert_eq!(gpu.used_by_processes(), None);

    let mut gpu = gpu.clone();
    gpu.processes.retain(|p| p.used_bytes.is_some());
    assert_eq!(gpu.used_by_processes(), Some(1000 * MIB));
    gpu.processes.clear();
    assert_eq!(gpu.used_by_processes(), None);
}

/// Two identical GPUs: `--query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used`.
const TWO_A100S: &str = "index, name, uuid, pci.bus_id, memory.total [MiB], memory.used [MiB]
0, NVIDIA A100-SXM4-80GB, GPU-aaaaaaaa-0000-0000-0000-000000000000, 00000000:07:00.0, 81920, 4
1, NVIDIA A100-SXM4-80GB, GPU-bbbbbbbb-0000-0000-0000-000000000000, 00000000:0F:00.0, 81920, 30547";

#[test]
fn compute_apps_find_identical_gpus_by_uuid_or_bus_id() {
    let by_uuid = "gpu_name, gpu_uuid, pid, process_name, used_gpu_memory [MiB]
NVIDIA A100-SXM4-80GB, GPU-bbbbbbbb-0000-0000-0000-000000000000, 4242, python train.py, 30000 MiB";
    let snap = parse(&format!("{TWO_A100S}\n{by_uuid}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert!(snap.gpus[0].processes.is_empty());
    assert_eq!(snap.gpus[1].processes[0].pid, Some(4242));

    let by_bus = "gpu_name, gpu_bus_id, pid, process_name, used_gpu_memory [MiB]
NVIDIA A100-SXM4-80GB, 00000000:0F:00.0, 4242, python train.py, 30000 MiB";
    let snap = parse(&format!("{TWO_A100S}\n{by_bus}")).unwrap();
    assert!(snap.gpus[0].processes.is_empty());
    assert_eq!(snap.gpus[1].processes.len(), 1);

    // Masked captures print one all-zero UUID for every GPU; the bus id still tells them apart.
    let masked = TWO_A100S
        .replace("GPU-aaaaaaaa", "GPU-00000000")
        .replace("GPU-bbbbbbbb", "GPU-00000000");
    let apps = by_bus
        .replace("gpu_bus_id,", "gpu_bus_id, gpu_uuid,")
        .replace(
            "00000000:0F:00.0,",
            "00000000:0F:00.0, GPU-00000000-0000-0000-0000-000000000000,",
        );
    let snap = parse(&format!("{masked}\n{apps}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert!(snap.gpus[0].processes.is_empty());
    assert_eq!(snap.gpus[1].processes.len(), 1);
}

#[test]
fn compute_apps_matched_by_an_ambiguous_name_are_left_out_with_a_warning() {
    let by_name = "gpu_name, pid, process_name, used_gpu_memory [MiB]
NVIDIA A100-SXM4-80GB, 4242, python train.py, 30000 MiB
NVIDIA A100-SXM4-80GB, 4343, python eval.py, 2000 MiB";
    let snap = parse(&format!("{TWO_A100S}\n{by_name}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert!(snap.gpus.iter().all(|g| g.processes.is_empty()));
    assert!(
        snap.warnings
            .iter()
            .any(|w| w.contains("2 processes were left out")),
        "{:?}",
        snap.warnings
    );

    // Masked UUIDs and no bus id: the UUID is as ambiguous as the name.
    let masked = TWO_A100S
        .replace("GPU-aaaaaaaa", "GPU-00000000")
        .replace("GPU-bbbbbbbb", "GPU-00000000");
    let apps = "gpu_uuid, gpu_name, pid, used_gpu_memory [MiB]
GPU-00000000-0000-0000-0000-000000000000, NVIDIA A100-SXM4-80GB, 4242, 30000 MiB";
    let snap = parse(&format!("{masked}\n{apps}")).unwrap();
    assert!(snap.gpus.iter().all(|g| g.processes.is_empty()));
    assert!(snap.warnings.iter().any(|w| w.contains("left out")));

    // A name that only one listed GPU has is enough.
    let mixed = TWO_A100S.replacen("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", 1);
    let apps = by_name.replacen("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", 1);
    let snap = parse(&format!("{mixed}\n{apps}")).unwrap();
    assert_eq!(snap.gpus[0].processes[0].pid, Some(4242));
    assert_eq!(snap.gpus[1].processes[0].pid, Some(4343));
    assert!(!snap.warnings.iter().any(|w| w.contains("left out")));
}

#[test]
fn compute_apps_without_a_gpu_column_attach_only_to_a_lone_gpu() {
    let apps = "pid, process_name, used_gpu_memory [MiB]\n1, a, 10 MiB\n2, b, 20 MiB";
    // No GPUs listed: the processes share one GPU of unknown memory.
    let snap = parse(apps).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].processes.len(), 2);
    // One GPU listed: it is theirs, whatever identifiers it has.
    let one = "memory.used [MiB], memory.total [MiB]\n800, 16384";
    let snap = parse(&format!("{one}\n{apps}")).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].used_by_processes(), Some(30 * MIB));
    let uuid_apps = "gpu_uuid, pid, used_gpu_memory [MiB]\nGPU-1, 1, 10 MiB";
    let snap = parse(&format!("{one}\n{uuid_apps}")).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].processes.len(), 1);
    // Two listed: nothing says which.
    let snap = parse(&format!("{TWO_A100S}\n{apps}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert!(snap.gpus.iter().all(|g| g.processes.is_empty()));
    assert!(snap
        .warnings
        .iter()
        .any(|w| w.contains("2 processes were left out")));
}

#[test]
fn compute_apps_on_a_gpu_the_query_does_not_list_get_their_own_entry() {
    let apps =
        "gpu_uuid, pid, used_gpu_memory [MiB]\nGPU-cccccccc-0000-0000-0000-000000000000, 1, 10 MiB";
    let snap = parse(&format!("{TWO_A100S}\n{apps}")).unwrap();
    assert_eq!(snap.gpus.len(), 3);
    assert_eq!(snap.gpus[2].processes.len(), 1);
    assert_eq!(snap.gpus[2].memory.total_bytes, None);
    assert!(snap.warnings.iter().any(|w| w.contains("do not list")));
}

/// `--query-gpu … -l 1`: the header once, then the same GPUs again and again.
#[test]
fn csv_repeated_by_loop_keeps_the_last_reading_of_each_gpu() {
    let mut looped = String::from("index, uuid, memory.total [MiB], memory.used [MiB]\n");
    for used in [100, 200, 300] {
        looped.push_str(&format!(
            "0, GPU-aaaaaaaa-0000-0000-0000-000000000000, 81920, {used}\n\
             1, GPU-bbbbbbbb-0000-0000-0000-000000000000, 81920, {}\n",
            used + 1
        ));
    }
    let snap = parse(&looped).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].index, Some(0));
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(300 * MIB));
    assert_eq!(snap.gpus[1].memory.used_bytes, Some(301 * MIB));
    assert_eq!(snap.gpus[1].peak_used_bytes, Some(301 * MIB));
    assert!(
        snap.warnings
            .iter()
            .any(|w| w.contains("holds 3 readings") && w.contains("using the last")),
        "{:?}",
        snap.warnings
    );

    // Without UUIDs the index identifies the GPU; a real fixture pasted twice, header and all.
    let text = "index, memory.used [MiB], memory.total [MiB]\n0, 800, 16384\n1, 900, 16384";
    let later = text.replace("800", "1800");
    let snap = parse(&format!("{text}\n{later}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(1800 * MIB));
    let fixture = fixture("csv-query-gpu-full__l40s__595.80__linux.csv");
    let once = parse(&fixture).unwrap();
    let twice = parse(&format!("{fixture}\n{fixture}")).unwrap();
    assert_eq!(without_peaks(twice.gpus), once.gpus);
    assert!(twice.warnings.iter().any(|w| w.contains("2 readings")));
}

/// Masked captures give every GPU the same UUID; rows that differ in bus id or index are still
/// different GPUs, not readings of one.
#[test]
fn csv_gpus_sharing_a_masked_uuid_are_not_folded() {
    let masked = TWO_A100S
        .replace("GPU-aaaaaaaa", "GPU-00000000")
        .replace("GPU-bbbbbbbb", "GPU-00000000");
    let snap = parse(&masked).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert!(!snap.warnings.iter().any(|w| w.contains("readings")));
    let snap = parse(&format!("{masked}\n{masked}")).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[1].memory.used_bytes, Some(30547 * MIB));
}

/// Two different `--query-gpu` commands pasted together describe the same GPUs once.
#[test]
fn csv_queries_with_different_fields_combine_per_gpu() {
    let text = "index, name, memory.total [MiB], memory.used [MiB]\n\
                0, Tesla T4, 15360, 360\n\
                1, Tesla T4, 15360, 0\n\
                index, utilization.gpu [%], memory.free [MiB]\n\
                0, 37 %, 14700\n\
                1, 0 %, 15000";
    let snap = parse(text).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].name.as_deref(), Some("Tesla T4"));
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(360 * MIB));
    assert_eq!(snap.gpus[0].memory.free_bytes, Some(14700 * MIB));
    assert_eq!(snap.gpus[0].utilization_pct, Some(37.0));
}

#[test]
fn compute_apps_repeated_by_loop_list_each_process_once() {
    let apps = fixture("csv-compute-apps__h100-mig__590.48.01__linux.csv");
    let later = apps.replace("2296 MiB", "2400 MiB");
    let gpus = fixture("csv-query-gpu-full__h100-mig__590.48.01__linux.csv");
    let snap = parse(&format!("{gpus}\n{apps}\n{later}")).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    let procs = &snap.gpus[0].processes;
    assert_eq!(procs.len(), 3);
    assert_eq!(procs[0].used_bytes, Some(2400 * MIB));
    assert_eq!(
        snap.gpus[0].used_by_processes(),
        Some((2400 + 1272 + 7484) * MIB)
    );
    assert!(snap.warnings.iter().any(|w| w.contains("2 readings")));
}

/// The GPUs as a single reading would give them: repeated readings add only their peak.
fn without_peaks(gpus: Vec<Gpu>) -> Vec<Gpu> {
    gpus.into_iter()
        .map(|g| Gpu {
            peak_used_bytes: None,
            ..g
        })
        .collect()
}

/// `nvidia-smi -q -l 1` on an 8-GPU node: the whole log again each time.
#[test]
fn query_text_repeated_by_loop_keeps_the_last_reading() {
    let first = fixture("q__rtx-4090-x8__535.154.05__linux.txt");
    let second = first.replacen("20328 MiB", "20999 MiB", 1);
    let third = second.replacen(
        "Used                              : 21356 MiB",
        "Used                              : 1 MiB",
        1,
    );
    let snap = parse(&format!("{first}\n{second}\n{third}")).unwrap();
    let once = parse(&first).unwrap();
    assert_eq!(snap.gpus.len(), 8);
    let indices: Vec<_> = snap.gpus.iter().map(|g| g.index).collect();
    assert_eq!(indices, (0..8).map(Some).collect::<Vec<_>>());
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(20999 * MIB));
    assert_eq!(snap.gpus[1].memory.used_bytes, Some(MIB));
    // The log's peak stays, for comparing with a predicted peak.
    assert_eq!(snap.gpus[0].peak_used_bytes, Some(20999 * MIB));
    assert_eq!(snap.gpus[1].peak_used_bytes, Some(21356 * MIB));
    assert_eq!(without_peaks(snap.gpus)[2..], once.gpus[2..]);
    assert!(snap.warnings.iter().any(|w| w.contains("3 readings")));
    assert!(
        !snap.warnings.iter().any(|w| w.contains("attached")),
        "{:?}",
        snap.warnings
    );
}

/// `nvidia-smi -q -x -l 1`: whole XML documents one after the other.
#[test]
fn xml_repeated_by_loop_keeps_the_last_reading() {
    let first = fixture("xml__rtx-a5000-x2__590.44.01.xml");
    let second = first.replacen("<used>22437 MiB</used>", "<used>100 MiB</used>", 1);
    let snap = parse(&format!("{first}\n{second}")).unwrap();
    let once = parse(&first).unwrap();
    assert_eq!(snap.gpus.len(), 2);
    assert_eq!(snap.gpus[0].index, Some(0));
    assert_eq!(snap.gpus[1].index, Some(1));
    assert_eq!(snap.gpus[0].memory.used_bytes, Some(100 * MIB));
    assert_eq!(snap.gpus[0].peak_used_bytes, Some(22437 * MIB));
    assert_eq!(without_peaks(snap.gpus.clone())[1], once.gpus[1]);
    assert_eq!(snap.gpus[0].processes, once.gpus[0].processes);
    assert!(snap.warnings.iter().any(|w| w.contains("2 readings")));
    assert!(
        !snap.warnings.iter().any(|w| w.contains("attached")),
        "{:?}",
        snap.warnings
    );
}

#[test]
fn gb10_table_says_what_nvidia_smi_does_not_give() {
    let snap = parsed("table__gb10-dgx-spark__580.95.05__linux-unified.txt");
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.name.as_deref(), Some("NVIDIA GB10"));
    assert_eq!(gpu.memory, vramfit_smi::Memory::default());
    // What it does give: the processes' own memory, 84 + 125 + 273 MiB.
    assert_eq!(gpu.used_by_processes(), Some(482 * MIB));
    assert!(
        snap.warnings
            .iter()
            .any(|w| w.contains("no memory total, used or free") && w.contains("MemTotal")),
        "{:?}",
        snap.warnings
    );
}
