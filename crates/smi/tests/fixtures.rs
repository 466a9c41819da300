//! Every real output in `tests/fixtures/nvidia-smi`, `amd-smi`, `rocm-smi` and `macos` parses to the
//! values read off it by eye.
//!
//! Figures are MiB as printed (`m`), or exact bytes where the source prints bytes (`b`); `NA`
//! marks a value the source does not give, which must come out as `None`, never `0`.

use std::path::PathBuf;

use vramfit_smi::{parse, SourceFormat};

const MIB: u64 = 1_048_576;
const NA: Option<u64> = None;

const fn m(mib: u64) -> Option<u64> {
    Some(mib * MIB)
}

const fn b(bytes: u64) -> Option<u64> {
    Some(bytes)
}

/// total, used, free, process count, MIG device count.
#[derive(Clone, Copy, Debug)]
struct G(Option<u64>, Option<u64>, Option<u64>, usize, usize);

struct Case {
    file: &'static str,
    source: SourceFormat,
    gpus: Vec<G>,
}

fn case(file: &'static str, source: SourceFormat, gpus: Vec<G>) -> Case {
    Case { file, source, gpus }
}

#[expect(clippy::too_many_lines, reason = "a data table: one entry per fixture")]
fn cases() -> Vec<Case> {
    use SourceFormat::*;
    let apps = |procs| vec![G(NA, NA, NA, procs, 0)];
    vec![
        case(
            "csv-compute-apps__geforce-rtx-2080-super__591.86__windows.csv",
            ComputeAppsCsv,
            apps(12),
        ),
        case(
            "csv-compute-apps__geforce-rtx-2080-super__595.71.05__linux.csv",
            ComputeAppsCsv,
            apps(2),
        ),
        case(
            "csv-compute-apps__geforce-rtx-2080-super__610.57.04__linux.csv",
            ComputeAppsCsv,
            apps(2),
        ),
        case(
            "csv-compute-apps__geforce-rtx-2080-super__610.62__windows.csv",
            ComputeAppsCsv,
            apps(21),
        ),
        case(
            "csv-compute-apps__geforce-rtx-4080-super__595.71.05__linux.csv",
            ComputeAppsCsv,
            apps(3),
        ),
        case(
            "csv-compute-apps__h100-80gb-hbm3__590.48.01__linux.csv",
            ComputeAppsCsv,
            apps(3),
        ),
        case(
            "csv-compute-apps__h100-mig__590.48.01__linux.csv",
            ComputeAppsCsv,
            apps(3),
        ),
        case(
            "csv-compute-apps__h200__590.48.01__linux.csv",
            ComputeAppsCsv,
            apps(3),
        ),
        case(
            "csv-compute-apps__l40s__595.80__linux.csv",
            ComputeAppsCsv,
            apps(2),
        ),
        case(
            "csv-query-gpu-full__geforce-rtx-2080-super__610.62__windows.csv",
            QueryGpuCsv,
            vec![G(m(8192), m(1366), m(6622), 0, 0)],
        ),
        case(
            "csv-query-gpu-full__geforce-rtx-4080-super__595.71.05__linux.csv",
            QueryGpuCsv,
            vec![G(m(16376), m(1474), m(14470), 0, 0)],
        ),
        case(
            "csv-query-gpu-full__h100-mig__590.48.01__linux.csv",
            QueryGpuCsv,
            vec![G(m(81559), m(11125), m(69956), 0, 0)],
        ),
        case(
            "csv-query-gpu-full__l40s__595.80__linux.csv",
            QueryGpuCsv,
            vec![G(m(46068), m(1235), m(44225), 0, 0)],
        ),
        case(
            "csv-query-gpu-noheader-nounits__gtx-1070-ti__telegraf-2018.csv",
            QueryGpuCsv,
            vec![G(m(8114), m(553), m(7561), 0, 0)],
        ),
        case(
            "csv-query-gpu-single-field__tesla-v100-sxm2__460.73.01__linux.csv",
            QueryGpuCsv,
            vec![G(NA, NA, NA, 0, 0)],
        ),
        case(
            "amd-smi/metric-json__radeon-rx-6600__rocm-6.x-pve.json",
            AmdSmiJson,
            vec![G(m(8176), m(202), m(7974), 0, 0)],
        ),
        case(
            "amd-smi/static-json__radeon-rx-6600__rocm-6.x-pve.json",
            AmdSmiJson,
            vec![G(m(8176), NA, NA, 0, 0)],
        ),
        // amd-smi's text, CSV and default views: MiB as printed; the default view has no free.
        case(
            "amd-smi/metric__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt",
            AmdSmi,
            vec![G(m(65536), m(1512), m(64024), 0, 0)],
        ),
        case(
            "amd-smi/static__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt",
            AmdSmi,
            vec![G(m(65536), NA, NA, 0, 0)],
        ),
        case(
            "amd-smi/list__radeon-890m__amd-smi-26.2.1-rocm-7.2.txt",
            AmdSmi,
            vec![G(NA, NA, NA, 0, 0)],
        ),
        case(
            "amd-smi/csv-metric-mem-usage__16-gib-card__rocblas-getspecs-docstring.csv",
            AmdSmi,
            vec![G(m(16368), m(905), m(15463), 0, 0)],
        ),
        case(
            "amd-smi/default__mi300x-x8__amd-smi-26.0.0-rocm-7.0-changelog.txt",
            AmdSmi,
            vec![G(m(196592), m(4976), NA, 0, 0); 8],
        ),
        case(
            "amd-smi/default__mi300x-vf__amd-smi-26.2.0-rocm-7.1.1.txt",
            AmdSmi,
            vec![G(m(196288), m(285), NA, 0, 0)],
        ),
        case(
            "amd-smi/monitor-p-t-v__mi300x-cpx-x32__rocm-6.3-changelog.txt",
            AmdSmi,
            vec![G(m(196300), m(283), NA, 0, 0); 32],
        ),
        case(
            "amd-smi/monitor-v__instinct-64gb__rocm-blogs-bnb-8bit.txt",
            AmdSmi,
            vec![G(m(65501), m(64908), NA, 0, 0)],
        ),
        case(
            "amd-smi/default__radeon-rx-7900-xtx-x2__amd-smi-26.2.2.txt",
            AmdSmi,
            vec![G(m(24560), m(7608), NA, 0, 0), G(m(24560), m(30), NA, 0, 0)],
        ),
        case(
            "rocm-smi/csv-productname-use-meminfo-vram__radeon-rx-7900-xt.csv",
            RocmSmi,
            vec![G(b(21_458_059_264), b(27_856_896), NA, 0, 0)],
        ),
        case(
            "rocm-smi/json-productname-use-meminfo-vram__radeon-rx-7900-xt.json",
            RocmSmi,
            vec![G(b(21_458_059_264), b(27_856_896), NA, 0, 0)],
        ),
        case(
            "rocm-smi/csv-productname-meminfo-vram-uniqueid__radeon-rx-6800-raphael-igpu.csv",
            RocmSmi,
            vec![
                G(b(17_163_091_968), b(692_142_080), NA, 0, 0),
                G(b(67_108_864), b(26_079_232), NA, 0, 0),
            ],
        ),
        // A Mac's total is Metal's working set: ¾ of 64 GiB, ⅔ of 24 GiB rounded up to a 16 KiB
        // page, and the wired limit where one is set.
        case(
            "macos/sysctl-a-excerpt__apple-m4-max-64gb__macos-15.txt",
            MacOs,
            vec![G(m(49152), NA, NA, 0, 0)],
        ),
        case(
            "macos/sysctl-a-excerpt__apple-m5-24gb__macos-26.txt",
            MacOs,
            vec![G(b(17_179_885_568), NA, NA, 0, 0)],
        ),
        // llama.cpp's own view: Metal's working set, here the wired limit, and what is free.
        case(
            "macos/llama-list-devices__apple-m1-max-32gb__wired-26000.txt",
            LlamaDevices,
            vec![G(m(26000), NA, m(25999), 0, 0)],
        ),
        // The System Report's hardware overview: the machine's 32 GiB, whose two thirds Metal wires.
        case(
            "macos/system-profiler-hardware__apple-m2-pro-32gb__macos-13.txt",
            MacOs,
            vec![G(b(22_906_503_168), NA, NA, 0, 0)],
        ),
        // FixIt's M1 Pro: the Hardware Overview's 16 GB gives two thirds, rounded up to a page;
        // the displays view names the chip and no memory.
        case(
            "macos/system-profiler-hardware-excerpt__apple-m1-pro-16gb__fixit.txt",
            MacOs,
            vec![G(b(11_453_251_584), NA, NA, 0, 0)],
        ),
        case(
            "macos/system-profiler-displays__apple-m1-pro-16-core-gpu__fixit.txt",
            MacOs,
            vec![G(NA, NA, NA, 0, 0)],
        ),
        // An Intel Mac's card: `VRAM (Total): 16 GB` of its own.
        case(
            "macos/system-profiler-displays__imac-pro-radeon-pro-vega-64-16gb__cpu-info-17.txt",
            MacOs,
            vec![G(m(16384), NA, NA, 0, 0)],
        ),
        // system_profiler names the chip and prints no memory on Apple silicon.
        case(
            "macos/system-profiler-json__apple-m3-max-40-core-gpu.json",
            MacOs,
            vec![G(NA, NA, NA, 0, 0)],
        ),
        case(
            "macos/sysctl-set-wired-limit__apple-m1-max-32gb.txt",
            MacOs,
            vec![G(m(26000), NA, NA, 0, 0)],
        ),
        case(
            "rocm-smi/text-meminfo-vram__4-gib-gpu.txt",
            RocmSmi,
            vec![G(b(4_278_190_080), b(108_814_336), NA, 0, 0)],
        ),
        case(
            "gpustat-json__gtx-1080-ti-x4__gpustat-0.6-era.json",
            GpustatJson,
            vec![
                G(m(11164), m(612), NA, 6, 0),
                G(m(11172), m(2), NA, 0, 0),
                G(m(11172), m(2), NA, 0, 0),
                G(m(11172), m(2), NA, 0, 0),
            ],
        ),
        case(
            "list-L__geforce-rtx-2080-super__610.62__windows.txt",
            List,
            vec![G(NA, NA, NA, 0, 0)],
        ),
        case(
            "list-L__h100-mig__590.48.01__linux.txt",
            List,
            vec![G(NA, NA, NA, 0, 4)],
        ),
        case(
            "list-L__h200-mig__590.48.01__linux.txt",
            List,
            vec![G(NA, NA, NA, 0, 5)],
        ),
        case(
            "nvitop-api-snapshot__rtx-2080-ti-x10__readme-example.txt",
            NvitopSnapshot,
            {
                let mut gpus = vec![G(m(11019), NA, NA, 0, 0); 10];
                // `nvidia0 = Device(0)`, then `nvidia0.memory_used()` → 9293398016 (in bytes).
                gpus[0] = G(m(11019), b(9_293_398_016), NA, 2, 0);
                gpus[1] = G(b(11_554_717_696), b(1_092_485_120), b(10_462_232_576), 0, 0);
                gpus
            },
        ),
        case(
            "q__a10__535.129.03__linux.txt",
            QueryText,
            vec![G(m(23028), m(4), m(22511), 0, 0)],
        ),
        case(
            "q__geforce-rtx-2080-super__610.57.04__linux.txt",
            QueryText,
            vec![G(m(8192), m(815), m(6978), 4, 0)],
        ),
        case(
            "q__geforce-rtx-2080-super__610.62__windows.txt",
            QueryText,
            vec![G(m(8192), m(1366), m(6622), 21, 0)],
        ),
        case(
            "q__geforce-rtx-4080-super__595.71.05__linux.txt",
            QueryText,
            vec![G(m(16376), m(1474), m(14470), 7, 0)],
        ),
        case(
            "q__h100-80gb-hbm3-x8__535.161.08__linux.txt",
            QueryText,
            vec![G(m(81559), m(0), m(81007), 0, 0); 8],
        ),
        case(
            "q__h100-mig__590.48.01__linux.txt",
            QueryText,
            vec![G(m(81559), m(11125), m(69956), 3, 4)],
        ),
        case(
            "q__l40s__595.80__linux.txt",
            QueryText,
            vec![G(m(46068), m(1235), m(44225), 2, 0)],
        ),
        case(
            "q__l4__550.90.07__linux-simreplay.txt",
            QueryText,
            vec![G(m(23034), m(1), m(22479), 0, 0)],
        ),
        case(
            "q__rtx-4090-x8__535.154.05__linux.txt",
            QueryText,
            vec![
                G(m(24564), m(20328), m(3888), 1, 0),
                G(m(24564), m(21356), m(2860), 1, 0),
                G(m(24564), m(23044), m(1172), 1, 0),
                G(m(24564), m(22790), m(1426), 1, 0),
                G(m(24564), m(24212), m(4), 1, 0),
                G(m(24564), m(0), m(24217), 0, 0),
                G(m(24564), m(22378), m(1838), 1, 0),
                G(m(24564), m(6488), m(17728), 1, 0),
            ],
        ),
        case(
            "table-idle__geforce-rtx-2080-super__610.62__windows.txt",
            Table,
            vec![G(m(8192), m(797), NA, 19, 0)],
        ),
        case(
            "table-idle__geforce-rtx-4080-super__595.71.05__linux.txt",
            Table,
            vec![G(m(16376), m(596), NA, 5, 0)],
        ),
        case(
            "table-idle__h100-mig__590.48.01__linux.txt",
            Table,
            vec![G(m(81559), m(59), NA, 0, 4)],
        ),
        case(
            "table-partial__a100-80gb-pcie-mig-enabled__550.54.14__cuda-NA-driver-container.txt",
            Table,
            vec![G(m(81920), m(0), NA, 0, 0)],
        ),
        case(
            "table__a100-pcie-40gb-x2__455.32.00__linux.txt",
            Table,
            vec![G(m(40536), m(0), NA, 0, 0); 2],
        ),
        case(
            "table__a100-sxm4-x4__555.42.02__linux-simreplay.txt",
            Table,
            vec![G(m(81920), m(1), NA, 0, 0); 4],
        ),
        case(
            // A unified-memory GPU: `Not Supported` where memory goes, per-process figures kept.
            "table__gb10-dgx-spark__580.95.05__linux-unified.txt",
            Table,
            vec![G(NA, NA, NA, 3, 0)],
        ),
        case(
            "table__geforce-gtx-1650__560.35.03__linux-proxmox.txt",
            Table,
            vec![G(m(4096), m(1), NA, 0, 0)],
        ),
        case(
            "table__geforce-laptop-truncated__470.63.01__linux.txt",
            Table,
            vec![G(m(16116), m(393), NA, 6, 0)],
        ),
        case(
            "table__geforce-rtx-2070-laptop__440.100__linux-pre-mig-layout.txt",
            Table,
            vec![G(m(7973), m(246), NA, 4, 0)],
        ),
        case(
            "table__geforce-rtx-2070-laptop__460.39__linux.txt",
            Table,
            vec![G(m(7973), m(259), NA, 5, 0)],
        ),
        case(
            "table__geforce-rtx-2080-super__591.86__windows.txt",
            Table,
            vec![G(m(8192), m(1296), NA, 12, 0)],
        ),
        case(
            "table__geforce-rtx-2080-super__595.71.05__linux.txt",
            Table,
            vec![G(m(8192), m(819), NA, 4, 0)],
        ),
        case(
            "table__geforce-rtx-2080-super__610.57.04__linux.txt",
            Table,
            vec![G(m(8192), m(815), NA, 4, 0)],
        ),
        case(
            "table__geforce-rtx-3090__560.35.03__linux-simreplay.txt",
            Table,
            vec![G(m(24576), m(2), NA, 0, 0); 2],
        ),
        case(
            "table__geforce-rtx-4080-super__595.71.05__linux.txt",
            Table,
            vec![G(m(16376), m(1474), NA, 7, 0)],
        ),
        case(
            "table__geforce-rtx-4090__580.65.06__linux.txt",
            Table,
            vec![G(m(24564), m(232), NA, 2, 0)],
        ),
        case(
            "table__h100-80gb-hbm3-x8__550.90.07__linux.txt",
            Table,
            vec![G(m(81559), m(1), NA, 0, 0); 8],
        ),
        case(
            "table__h100-80gb-hbm3__590.48.01__linux.txt",
            Table,
            vec![G(m(81559), m(19818), NA, 3, 0)],
        ),
        case(
            "table__h100-mig__590.48.01__linux.txt",
            Table,
            vec![G(m(81559), m(11125), NA, 3, 4)],
        ),
        case(
            "table__h100-sxm-x8__565.57.01__linux-simreplay.txt",
            Table,
            vec![G(m(81559), m(1), NA, 0, 0); 8],
        ),
        case(
            "table__h200__590.48.01__linux.txt",
            Table,
            vec![G(m(143771), m(32362), NA, 3, 0)],
        ),
        case(
            "table__l40s__595.80__linux.txt",
            Table,
            vec![G(m(46068), m(1235), NA, 2, 0)],
        ),
        case(
            "table__l4__550.90.07__linux-simreplay.txt",
            Table,
            vec![G(m(23034), m(1), NA, 0, 0)],
        ),
        case(
            "table__tesla-v100-pcie-truncated__410.48__linux.txt",
            Table,
            vec![G(m(16130), m(0), NA, 0, 0)],
        ),
        case(
            "table__titan-v__515.65.01__linux.txt",
            Table,
            vec![G(m(12288), m(0), NA, 0, 0)],
        ),
        case(
            "version__geforce-rtx-2080-super__595.71.05__linux.txt",
            Version,
            vec![],
        ),
        case(
            "version__geforce-rtx-2080-super__610.57.04__linux.txt",
            Version,
            vec![],
        ),
        case(
            "version__geforce-rtx-2080-super__610.62__windows.txt",
            Version,
            vec![],
        ),
        case(
            "xml__a100-sxm4-80gb-x4__535.54.03.xml",
            Xml,
            vec![G(m(81920), m(50), m(80999), 0, 4)],
        ),
        case(
            "xml__a10g__515.105.01.xml",
            Xml,
            vec![G(m(23028), m(22), m(22569), 1, 0)],
        ),
        case(
            "xml__gt-1030__470.74.xml",
            Xml,
            vec![G(m(1998), m(875), m(1123), 10, 0)],
        ),
        case(
            "xml__gtx-1660-ti-graphics-device__418.43.xml",
            Xml,
            vec![G(m(5912), m(0), m(5912), 0, 0)],
        ),
        case(
            "xml__quadro-p2000__525.125.06.xml",
            Xml,
            vec![G(m(5120), m(1), m(5051), 0, 0)],
        ),
        case(
            "xml__quadro-p400__418.43.xml",
            Xml,
            vec![G(m(1998), m(0), m(1998), 0, 0)],
        ),
        case(
            "xml__rtx-3060-laptop__515.65.01.xml",
            Xml,
            vec![G(m(6144), m(5), m(5940), 1, 0)],
        ),
        case(
            "xml__rtx-3060__570.124.04.xml",
            Xml,
            vec![G(m(12288), m(116), m(11806), 0, 0)],
        ),
        case(
            "xml__rtx-3080__536.40.xml",
            Xml,
            vec![G(m(10240), m(1128), m(8938), 5, 0)],
        ),
        case(
            "xml__rtx-3080__595.58.03.xml",
            Xml,
            vec![G(m(10240), m(9184), m(660), 0, 0)],
        ),
        case(
            "xml__rtx-3090__525.147.05.xml",
            Xml,
            vec![G(m(24576), m(1), m(24258), 0, 0)],
        ),
        case(
            "xml__rtx-4000-sff-ada__595.84.xml",
            Xml,
            vec![G(m(20475), m(3534), m(16482), 4, 0)],
        ),
        case(
            "xml__rtx-4090__535.86.05.xml",
            Xml,
            vec![G(m(24564), m(2), m(24214), 0, 0)],
        ),
        case(
            "xml__rtx-a5000-x2__590.44.01.xml",
            Xml,
            vec![
                G(m(24564), m(22437), m(1678), 1, 0),
                G(m(24564), m(17253), m(6862), 1, 0),
            ],
        ),
        case(
            "xml__tesla-p100-pcie-16gb__510.47.03.xml",
            Xml,
            vec![G(m(16384), m(0), m(16280), 0, 0)],
        ),
        case(
            "xml__tesla-t4__512.78.xml",
            Xml,
            vec![G(m(15360), m(276), m(14882), 15, 0)],
        ),
        case(
            "xml__tesla-t4__515.105.01.xml",
            Xml,
            vec![G(m(15360), m(1032), m(13939), 2, 0)],
        ),
    ]
}

/// The fixture folders; a case names a file of the first by its name alone, of the others as
/// `folder/name`.
const FOLDERS: [&str; 4] = ["nvidia-smi", "amd-smi", "rocm-smi", "macos"];

fn fixtures_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> String {
    let path = match name.contains('/') {
        true => fixtures_root().join(name),
        false => fixtures_root().join(FOLDERS[0]).join(name),
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_fixture_has_an_expectation() {
    let mut on_disk: Vec<String> = Vec::new();
    for (n, folder) in FOLDERS.iter().enumerate() {
        for entry in std::fs::read_dir(fixtures_root().join(folder)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name != "SOURCES.md" {
                on_disk.push(if n == 0 {
                    name
                } else {
                    format!("{folder}/{name}")
                });
            }
        }
    }
    on_disk.sort();
    let mut expected: Vec<String> = cases().iter().map(|c| c.file.to_string()).collect();
    expected.sort();
    assert_eq!(on_disk, expected);
}

#[test]
fn every_fixture_parses_to_its_expected_values() {
    let mut failures = Vec::new();
    for case in cases() {
        let snap = match parse(&fixture(case.file)) {
            Ok(snap) => snap,
            Err(e) => {
                failures.push(format!("{}: {e}", case.file));
                continue;
            }
        };
        let got: Vec<_> = snap
            .gpus
            .iter()
            .map(|g| {
                (
                    g.memory.total_bytes,
                    g.memory.used_bytes,
                    g.memory.free_bytes,
                    g.processes.len(),
                    g.mig_devices.len(),
                )
            })
            .collect();
        let want: Vec<_> = case
            .gpus
            .iter()
            .map(|g| (g.0, g.1, g.2, g.3, g.4))
            .collect();
        if snap.source != case.source || got != want {
            failures.push(format!(
                "{}: got {:?} {got:?}, want {:?} {want:?}",
                case.file, snap.source, case.source
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
