//! amd-smi's text, CSV and default views, read from the published captures in
//! `tests/fixtures/amd-smi` (SOURCES.md there cites each). Figures are the MiB amd-smi printed.

use std::path::PathBuf;

use vramfit_smi::{detect, parse, SourceFormat};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/amd-smi")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const METRIC: &str = "metric__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt";
const STATIC: &str = "static__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt";
const LIST: &str = "list__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt";

/// ojitha's Radeon 890M: `metric` gives total, used and free, `static` the name and size, and the
/// two pasted together give all of it, as `--json` would.
#[test]
fn text_views_give_what_json_gives() {
    let metric = parse(&fixture(METRIC)).unwrap();
    assert_eq!(metric.source, SourceFormat::AmdSmi);
    let memory = &metric.gpus[0].memory;
    assert_eq!(
        (memory.total_bytes, memory.used_bytes, memory.free_bytes),
        (Some(65536 * MIB), Some(1512 * MIB), Some(64024 * MIB))
    );
    assert_eq!(metric.gpus[0].temperature_c, Some(28.0));
    assert!(metric.warnings.iter().all(|w| !w.contains("does not know")));

    let board = parse(&fixture(STATIC)).unwrap();
    let gpu = &board.gpus[0];
    assert_eq!(gpu.name.as_deref(), Some("AMD Radeon Graphics"));
    assert_eq!(gpu.pci_bus_id.as_deref(), Some("0000:c5:00.0"));
    assert_eq!(gpu.memory.total_bytes, Some(65536 * MIB));
    assert_eq!(gpu.memory.used_bytes, None);

    let both = parse(&format!("{}\n{}", fixture(STATIC), fixture(METRIC))).unwrap();
    assert_eq!(both.gpus.len(), 1);
    assert_eq!(both.gpus[0].name.as_deref(), Some("AMD Radeon Graphics"));
    assert_eq!(both.gpus[0].memory.used_bytes, Some(1512 * MIB));
    assert!(both.warnings.iter().all(|w| !w.contains("no name")));
}

/// `amd-smi list` names the bus and the UUID, and says nothing of memory.
#[test]
fn list_gives_the_bus_id_and_no_memory() {
    let snap = parse(&fixture(LIST)).unwrap();
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.index, Some(0));
    assert_eq!(gpu.pci_bus_id.as_deref(), Some("0000:c5:00.0"));
    assert_eq!(gpu.memory.total_bytes, None);
    assert!(snap.warnings.iter().any(|w| w.contains("no memory in use")));
}

/// The `metric -m --csv` example in rocBLAS's getspecs.py: a 16 GiB card, 905 MiB used.
#[test]
fn csv_gives_total_used_and_free() {
    let text = fixture("csv-metric-mem-usage__16-gib-card__rocblas-getspecs-docstring.csv");
    let snap = parse(&text).unwrap();
    assert_eq!(snap.source, SourceFormat::AmdSmi);
    let memory = &snap.gpus[0].memory;
    assert_eq!(
        (memory.total_bytes, memory.used_bytes, memory.free_bytes),
        (Some(16368 * MIB), Some(905 * MIB), Some(15463 * MIB))
    );
}

/// amd-smi CSV starts `gpu,`, rocm-smi's `device,`, nvidia-smi's never either; each is read as
/// its own tool's.
#[test]
fn amd_smi_csv_is_told_from_rocm_smi_and_nvidia_smi_csv() {
    let amd = "gpu,total_vram,used_vram,free_vram\n0,24560,30,24530";
    let rocm = "device,VRAM Total Memory (B),VRAM Total Used Memory (B)\ncard0,100,1";
    let nvidia =
        "index, name, memory.total [MiB], memory.used [MiB]\n0, NVIDIA L4, 23034 MiB, 0 MiB";
    assert_eq!(detect(amd), Some(SourceFormat::AmdSmi));
    assert_eq!(detect(rocm), Some(SourceFormat::RocmSmi));
    assert_eq!(detect(nvidia), Some(SourceFormat::QueryGpuCsv));
    assert_eq!(
        parse(amd).unwrap().gpus[0].memory.used_bytes,
        Some(30 * MIB)
    );
    // `gpu_name` is an nvidia-smi field, not amd-smi's `gpu` column.
    let nvidia_gpu_name = "gpu_name, memory.total [MiB]\nNVIDIA L4, 23034 MiB";
    assert_ne!(detect(nvidia_gpu_name), Some(SourceFormat::AmdSmi));
}

/// A memory column or key amd-smi may add later is named, not silently skipped.
#[test]
fn unknown_memory_fields_are_named() {
    let snap = parse("gpu,total_vram,used_vram,reserved_vram\n0,100,1,7").unwrap();
    assert!(
        snap.warnings.iter().any(|w| w.contains("reserved_vram")),
        "{:?}",
        snap.warnings
    );
    let text = "GPU: 0\n    MEM_USAGE:\n        TOTAL_VRAM: 100 MB\n        SHARED_VRAM: 3 MB\n";
    let snap = parse(text).unwrap();
    assert!(snap.warnings.iter().any(|w| w.contains("shared_vram")));
}

/// AMD's own example of the default view (ROCm 7.0 changelog): eight MI300X, 4976 of 196592 MiB
/// used on each, names and bus IDs from the first row of each pair.
#[test]
fn the_default_view_gives_names_used_and_total() {
    let snap = parse(&fixture(
        "default__mi300x-x8__amd-smi-26.0.0-rocm-7.0-changelog.txt",
    ))
    .unwrap();
    assert_eq!(snap.source, SourceFormat::AmdSmi);
    assert_eq!(snap.gpus.len(), 8);
    for (i, gpu) in snap.gpus.iter().enumerate() {
        assert_eq!(gpu.index, Some(i as u32));
        assert_eq!(gpu.name.as_deref(), Some("AMD Instinct MI300X"));
        assert_eq!(gpu.memory.total_bytes, Some(196592 * MIB));
        assert_eq!(gpu.memory.used_bytes, Some(4976 * MIB));
        assert_eq!(gpu.memory.free_bytes, None);
    }
    assert_eq!(snap.gpus[7].pci_bus_id.as_deref(), Some("0000:df:00.0"));
    assert!(snap.warnings.iter().any(|w| w.contains("but not free")));
}

/// ROCm/ROCm#6074: two RX 7900 XTX, one busy (7608 MiB) and one idle (30 MiB); the processes box
/// below is not taken for GPUs.
#[test]
fn the_default_view_reads_each_gpu_of_a_pair() {
    let snap = parse(&fixture(
        "default__radeon-rx-7900-xtx-x2__amd-smi-26.2.2.txt",
    ))
    .unwrap();
    let read: Vec<_> = snap
        .gpus
        .iter()
        .map(|g| (g.name.as_deref(), g.memory.total_bytes, g.memory.used_bytes))
        .collect();
    let card = Some("AMD Radeon RX 7900 XTX");
    assert_eq!(
        read,
        [
            (card, Some(24560 * MIB), Some(7608 * MIB)),
            (card, Some(24560 * MIB), Some(30 * MIB))
        ]
    );
}

/// A name the default view cut short is kept as printed, with a warning; a bare PCI device ID
/// is no name.
#[test]
fn cut_names_are_flagged_and_device_ids_are_not_names() {
    let text = "| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |\n\
                |=====================================+========================================|\n\
                | 0000:1b:00.0 ...Instinct MI300X OAM | N/A        N/A   0           N/A/750 W |\n\
                |   0       0       1        SPX/NPS1 | N/A        N/A        149820/196592 MB |\n\
                | 0000:c2:00.0                 0x1586 | N/A        N/A   0             N/A/0 W |\n\
                |   1       0     N/A             N/A | N/A        N/A           1013/65536 MB |\n\
                +-------------------------------------+----------------------------------------+";
    let snap = parse(text).unwrap();
    assert_eq!(snap.gpus[0].name.as_deref(), Some("...Instinct MI300X OAM"));
    assert!(snap
        .warnings
        .iter()
        .any(|w| w.contains("too long for its column")));
    assert_eq!(snap.gpus[1].name, None);
    assert_eq!(snap.gpus[1].memory.total_bytes, Some(65536 * MIB));
}

/// `amd-smi monitor -p -t -v` in AMD's ROCm 6.3 changelog: 32 logical GPUs of a CPX-partitioned
/// MI300X node, each cell read under the end of its column's name (`°C` is two bytes, one
/// character).
#[test]
fn the_monitor_table_gives_used_and_total_per_gpu() {
    let snap = parse(&fixture(
        "monitor-p-t-v__mi300x-cpx-x32__rocm-6.3-changelog.txt",
    ))
    .unwrap();
    assert_eq!(snap.source, SourceFormat::AmdSmi);
    assert_eq!(snap.gpus.len(), 32);
    assert_eq!(snap.gpus[31].index, Some(31));
    assert_eq!(snap.gpus[31].memory.total_bytes, Some(196300 * MIB));
    assert_eq!(snap.gpus[31].memory.used_bytes, Some(283 * MIB));
    // The wider view's later columns, a blank line, and a value printed as N/A.
    let wide = "GPU  POWER  GPU_TEMP  VRAM_USED  VRAM_TOTAL   PCIE_BW\n\n  \
                0   11 W     43 °C     227 MB    25476 MB  N/A Mb/s\n  1   N/A       N/A        N/A    25476 MB  N/A Mb/s";
    let snap = parse(wide).unwrap();
    let read: Vec<_> = snap
        .gpus
        .iter()
        .map(|g| (g.memory.used_bytes, g.memory.total_bytes))
        .collect();
    assert_eq!(
        read,
        [
            (Some(227 * MIB), Some(25476 * MIB)),
            (None, Some(25476 * MIB))
        ]
    );
}
