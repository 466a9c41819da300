//! rocm-smi's three outputs, read from the published captures in `tests/fixtures/rocm-smi`
//! (SOURCES.md there cites each). Figures are the bytes rocm-smi printed.

use std::path::PathBuf;

use vramfit_smi::{detect, parse, Snapshot, SourceFormat};

fn parsed(name: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/rocm-smi")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn has_warning(snap: &Snapshot, part: &str) -> bool {
    snap.warnings.iter().any(|w| w.contains(part))
}

/// marimo issue #9237: the same RX 7900 XT as CSV and as JSON reads the same.
#[test]
fn csv_and_json_of_one_card_agree() {
    let csv = parsed("csv-productname-use-meminfo-vram__radeon-rx-7900-xt.csv");
    let json = parsed("json-productname-use-meminfo-vram__radeon-rx-7900-xt.json");
    assert_eq!(csv.gpus, json.gpus);
    let gpu = &csv.gpus[0];
    assert_eq!(gpu.index, Some(0));
    assert_eq!(gpu.name.as_deref(), Some("Radeon RX 7900 XT"));
    assert_eq!(gpu.memory.total_bytes, Some(21_458_059_264));
    assert_eq!(gpu.memory.used_bytes, Some(27_856_896));
    assert_eq!(gpu.memory.free_bytes, None);
    assert_eq!(
        gpu.memory.free_or_derived(),
        Some(21_458_059_264 - 27_856_896)
    );
    assert_eq!(gpu.utilization_pct, Some(0.0));
    assert!(has_warning(&csv, "not free"));
    assert!(!has_warning(&csv, "--showproductname"));
}

/// LocalAI PR #7761: a discrete RX 6800 and the Raphael iGPU's 64 MiB carve-out, in card order.
#[test]
fn csv_lists_every_card_with_its_own_figures() {
    let snap = parsed("csv-productname-meminfo-vram-uniqueid__radeon-rx-6800-raphael-igpu.csv");
    let got: Vec<_> = snap
        .gpus
        .iter()
        .map(|g| (g.index, g.name.as_deref(), g.memory.total_bytes))
        .collect();
    assert_eq!(
        got,
        [
            (
                Some(0),
                Some("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"),
                Some(17_163_091_968)
            ),
            (Some(1), Some("Raphael"), Some(64 << 20)),
        ]
    );
    assert_eq!(snap.gpus[1].utilization_pct, None);
}

/// legacy-rocm-build issue #1909: the text view names no GPU, and the warning says which flag
/// does.
#[test]
fn text_view_reads_bytes_and_asks_for_the_name() {
    let snap = parsed("text-meminfo-vram__4-gib-gpu.txt");
    assert_eq!(snap.source, SourceFormat::RocmSmi);
    let gpu = &snap.gpus[0];
    assert_eq!(gpu.memory.total_bytes, Some(4_278_190_080));
    assert_eq!(gpu.memory.used_bytes, Some(108_814_336));
    assert_eq!(gpu.name, None);
    assert!(has_warning(&snap, "--showproductname"));
}

/// rocm-smi CSV starts `device,`; nvidia-smi CSV never does, and neither is taken for the other.
#[test]
fn rocm_csv_and_nvidia_csv_are_told_apart() {
    let rocm = "device,VRAM Total Memory (B),VRAM Total Used Memory (B)\ncard0,100,1";
    assert_eq!(detect(rocm), Some(SourceFormat::RocmSmi));
    let nvidia = "index, name, memory.total [MiB], memory.used [MiB]\n0, X, 100 MiB, 1 MiB";
    assert_eq!(detect(nvidia), Some(SourceFormat::QueryGpuCsv));
    assert_eq!(parse(nvidia).unwrap().source, SourceFormat::QueryGpuCsv);
}

/// Output without VRAM figures (`--showuse` alone) is read, with a warning naming the flag; a
/// `GTT …` or `VIS_VRAM …` pool is never taken for VRAM.
#[test]
fn missing_vram_is_unknown_and_other_pools_are_not_vram() {
    let snap = parse("device,GPU use (%),GTT Total Memory (B)\ncard0,3,33554432000").unwrap();
    assert_eq!(snap.gpus[0].memory.total_bytes, None);
    assert_eq!(snap.gpus[0].utilization_pct, Some(3.0));
    assert!(has_warning(&snap, "--showmeminfo vram"));
    let tabs = "GPU[1]\t\t: VRAM Total Memory (B): 536870912\n\
                GPU[1]\t\t: VIS_VRAM Total Memory (B): 536870912\n\
                GPU[1]\t\t: VRAM Total Used Memory (B): N/A";
    let gpu = &parse(tabs).unwrap().gpus[0];
    assert_eq!(gpu.index, Some(1));
    assert_eq!(
        (gpu.memory.total_bytes, gpu.memory.used_bytes),
        (Some(512 << 20), None)
    );
}

/// The JSON's `system` object is not a card, and a JSON object of other keys is not rocm-smi.
#[test]
fn json_needs_a_card() {
    let snap =
        parse(r#"{"system": {"Driver version": "6.8"}, "card3": {"Card Series": "X"}}"#).unwrap();
    assert_eq!(snap.gpus.len(), 1);
    assert_eq!(snap.gpus[0].index, Some(3));
    assert!(parse(r#"{"system": {"Driver version": "6.8"}}"#).is_err());
}
