//! The GPU catalogue: each card's advertised memory and, where a real capture shows it, the total
//! that nvidia-smi reports (the captures under crates/smi/tests/fixtures/nvidia-smi, and the
//! published captures quoted in docs/gpu-totals.md, are the evidence). AMD Instinct cards have no
//! NVML: their totals are rocm-smi's, and `vramfit probe` cannot read them (paste the totals).
//! Not to be confused with the CLI's `gpu/`, which reads real GPUs through NVML.

use crate::units::{Bytes, GIB, MIB};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpu {
    pub id: &'static str,
    pub name: &'static str,
    /// The marketing size in "GB", which makers mean as GiB (the VRAM auto-config guide: a "16 GB"
    /// card is 16384 MiB).
    pub advertised_gib: f64,
    /// `memory.total` as nvidia-smi prints it, in MiB, where a capture shows it. It is lower than
    /// the advertised size because the driver keeps some for itself (the auto-config guide's
    /// 16376 MiB on a "16 GB" card).
    pub smi_total_mib: Option<u32>,
    /// The total CUDA reports (`cudaMemGetInfo`, `torch.cuda.mem_get_info()[1]`), where a log
    /// shows it: below nvidia-smi's by the driver's reserve. vLLM budgets a share of this figure.
    pub cuda_total_bytes: Option<u64>,
    /// An SXM card on an NVSwitch with NVLink SHARP (Hopper, Blackwell), where NCCL allocates its
    /// NVLS buffers on every GPU of a tensor-parallel group.
    pub nvswitch: bool,
    /// A Hopper GPU (sm90), where vLLM's FlashAttention backend runs FlashAttention 3
    /// (`get_flash_attn_version`, vllm/v1/attention/backends/fa_utils.py); elsewhere it runs
    /// FlashAttention 2.
    pub hopper: bool,
    /// What the card moves and computes, where its datasheet is cited.
    pub datasheet: Option<Datasheet>,
}

/// A card's peak figures from its maker's datasheet: memory bandwidth and dense (not sparse)
/// tensor throughput per format, and the link between cards. Peaks, not what a kernel reaches:
/// the speed model applies each runtime's efficiency to them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Datasheet {
    pub memory_bytes_per_s: f64,
    /// Dense tensor FLOP/s with 16-bit inputs (bf16, or fp16 where the card has no bf16).
    pub half_flops_per_s: f64,
    /// Dense fp8 tensor FLOP/s; 0 where the card has no fp8 path (before Ada and Hopper).
    pub fp8_flops_per_s: f64,
    /// Dense int8 tensor ops/s.
    pub int8_ops_per_s: f64,
    /// Dense fp4 tensor FLOP/s; 0 before Blackwell.
    pub fp4_flops_per_s: f64,
    /// One direction of the card's link to its peers: NVLink where it has one, else its PCIe
    /// slot.
    pub link_bytes_per_s: f64,
    /// The datasheet: its title or address.
    pub source: &'static str,
}

/// A datasheet's figures in the units datasheets print: GB/s (10⁹ B/s) and dense TFLOPS or TOPS.
pub const fn datasheet(
    memory_gb_s: f64,
    half_tflops: f64,
    fp8_tflops: f64,
    int8_tops: f64,
    fp4_tflops: f64,
    link_gb_s: f64,
    source: &'static str,
) -> Datasheet {
    Datasheet {
        memory_bytes_per_s: memory_gb_s * 1e9,
        half_flops_per_s: half_tflops * 1e12,
        fp8_flops_per_s: fp8_tflops * 1e12,
        int8_ops_per_s: int8_tops * 1e12,
        fp4_flops_per_s: fp4_tflops * 1e12,
        link_bytes_per_s: link_gb_s * 1e9,
        source,
    }
}

/// nvidia-smi's total less CUDA's on the cards where both are published (the catalogue's
/// `cuda_total_bytes`, 211–729 MiB); the median stands in for a card without a CUDA figure, and
/// the estimate says so.
pub const DRIVER_RESERVE_FALLBACK: Bytes = Bytes(460 * MIB);

impl Gpu {
    /// What CUDA reports as the total, and whether it was measured on this card (else
    /// [`DRIVER_RESERVE_FALLBACK`] below the capacity).
    pub fn cuda_total(&self) -> (Bytes, bool) {
        match self.cuda_total_bytes {
            Some(bytes) => (Bytes(bytes), true),
            None => (
                self.capacity().saturating_sub(DRIVER_RESERVE_FALLBACK),
                false,
            ),
        }
    }

    const fn on_nvswitch(mut self) -> Gpu {
        self.nvswitch = true;
        self
    }

    const fn hopper(mut self) -> Gpu {
        self.hopper = true;
        self
    }

    /// Records the card's datasheet figures.
    const fn sheet(mut self, figures: Datasheet) -> Gpu {
        self.datasheet = Some(figures);
        self
    }

    /// Records the CUDA total a published log shows for this card.
    const fn cuda(mut self, bytes: u64) -> Gpu {
        self.cuda_total_bytes = Some(bytes);
        self
    }

    /// The capacity the planner budgets against: nvidia-smi's total when known, else the advertised size.
    pub fn capacity(&self) -> Bytes {
        match self.smi_total_mib {
            Some(mib) => Bytes(u64::from(mib) * MIB),
            None => Bytes::from_f64(self.advertised_gib * GIB as f64),
        }
    }
}

const fn gpu(
    id: &'static str,
    name: &'static str,
    advertised_gib: f64,
    smi_total_mib: Option<u32>,
) -> Gpu {
    Gpu {
        id,
        name,
        advertised_gib,
        smi_total_mib,
        cuda_total_bytes: None,
        nvswitch: false,
        hopper: false,
        datasheet: None,
    }
}

/// A CUDA total as vLLM logs it, to two decimals of GiB.
const fn logged_gib(hundredths: u64) -> u64 {
    hundredths * GIB / 100
}

/// Ordered by capacity, smallest first, so "the smallest GPU that fits" is the first match.
pub const GPUS: &[Gpu] = &[
    gpu("rtx-3070", "GeForce RTX 3070 8GB", 8.0, Some(8192)),
    gpu("rtx-3080", "GeForce RTX 3080 10GB", 10.0, Some(10240)),
    gpu("rtx-5070", "GeForce RTX 5070 12GB", 12.0, Some(12227)),
    gpu("rtx-4070", "GeForce RTX 4070 12GB", 12.0, Some(12282)),
    gpu("rtx-3060", "GeForce RTX 3060 12GB", 12.0, Some(12288)),
    gpu("rtx-3080-ti", "GeForce RTX 3080 Ti 12GB", 12.0, Some(12288)),
    gpu("t4", "Tesla T4 16GB", 16.0, Some(15360)),
    gpu("v100-16", "Tesla V100 16GB", 16.0, Some(16130)),
    gpu("rtx-5070-ti", "GeForce RTX 5070 Ti 16GB", 16.0, Some(16303)),
    gpu("rtx-4080", "GeForce RTX 4080 16GB", 16.0, Some(16376)),
    gpu(
        "rtx-4080-super",
        "GeForce RTX 4080 SUPER 16GB",
        16.0,
        Some(16376),
    ),
    gpu(
        "rtx-4070-ti-super",
        "GeForce RTX 4070 Ti SUPER 16GB",
        16.0,
        Some(16376),
    ),
    gpu("rtx-5080", "GeForce RTX 5080 16GB", 16.0, None),
    gpu("rtx-4060-ti-16", "GeForce RTX 4060 Ti 16GB", 16.0, None),
    gpu("a10", "A10 24GB", 24.0, Some(23028)),
    gpu("a10g", "A10G 24GB", 24.0, Some(23028)),
    gpu("l4", "L4 24GB", 24.0, Some(23034)),
    gpu("rtx-4090", "GeForce RTX 4090 24GB", 24.0, Some(24564)).sheet(datasheet(
        1008.0,
        165.2,
        330.3,
        660.6,
        0.0,
        32.0,
        "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A Table 2 (RTX 4090: 1008 GB/s; \
         FP16 tensor with FP32 accumulate 165.2 TFLOPS, FP8 330.3, INT8 660.6, dense); PCIe 4.0 x16",
    )),
    // vLLM 0.5-era logs on an RTX 3090: total_gpu_memory 23.58 GiB (calibration/runtime-gpus.csv).
    gpu("rtx-3090", "GeForce RTX 3090 24GB", 24.0, Some(24576)).cuda(logged_gib(2358)),
    gpu("rtx-5090", "GeForce RTX 5090 32GB", 32.0, Some(32607)),
    gpu("v100-32", "Tesla V100 32GB", 32.0, None),
    // vLLM log on an A100 40GB: total_gpu_memory 39.38 GiB.
    gpu("a100-40", "A100 40GB", 40.0, Some(40536)).cuda(logged_gib(3938)),
    // ECC on, as data-centre cards ship; with ECC off the L40 and A40 print 49140 MiB.
    gpu("l40", "L40 48GB", 48.0, Some(46068)),
    // vLLM log on an L40S: "Free memory on device (43.93/44.42 GiB)".
    gpu("l40s", "L40S 48GB", 48.0, Some(46068)).cuda(logged_gib(4442)),
    gpu("a40", "A40 48GB", 48.0, Some(46068)),
    // ECC off, as the published workstation captures show; ECC on prints 46068 MiB.
    gpu(
        "rtx-6000-ada",
        "RTX 6000 Ada Generation 48GB",
        48.0,
        Some(49140),
    ),
    gpu("a6000", "RTX A6000 48GB", 48.0, None),
    // nvaccelinfo "Global Memory Size: 85045477376" beside nvidia-smi's 81559MiB (docs/gpu-totals.md).
    gpu("h100-pcie", "H100 PCIe 80GB", 80.0, Some(81559))
        .cuda(85_045_477_376)
        .hopper(),
    // Every vLLM 0.19.0 log of llm-d-planner's H100 sweep: total_memory=79.19GiB.
    gpu("h100-80", "H100 80GB", 80.0, Some(81559))
        .cuda(logged_gib(7919))
        .on_nvswitch()
        .hopper(),
    gpu("a100-80", "A100 80GB", 80.0, Some(81920)),
    gpu("a800-80", "A800 80GB", 80.0, Some(81920)),
    gpu("h100-nvl", "H100 NVL 94GB", 94.0, Some(95830)).hopper(),
    gpu("h20", "H20 96GB", 96.0, Some(97871))
        .on_nvswitch()
        .hopper(),
    gpu(
        "rtx-pro-6000",
        "RTX PRO 6000 Blackwell 96GB",
        96.0,
        Some(97887),
    ),
    gpu("h200", "H200 141GB", 141.0, Some(143771))
        .on_nvswitch()
        .hopper(),
    // "183,359 MiB in nvidia-smi and 178.35 GiB through CUDA" (docs/gpu-totals.md).
    gpu("b200", "B200 180GB", 180.0, Some(183359))
        .cuda(logged_gib(17835))
        .on_nvswitch(),
    // rocm-smi's "VRAM Total Memory (B)": 206141652992 B on bare metal.
    gpu(
        "mi300x",
        "Instinct MI300X 192GB (ROCm)",
        192.0,
        Some(196592),
    ),
    gpu("mi325x", "Instinct MI325X 256GB (ROCm)", 256.0, None),
];

pub fn find(id: &str) -> Option<&'static Gpu> {
    let wanted = id.trim().to_ascii_lowercase();
    GPUS.iter().find(|g| g.id == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_sorted_by_capacity_for_the_smallest_fit_search() {
        for pair in GPUS.windows(2) {
            assert!(
                pair[0].capacity() <= pair[1].capacity(),
                "{} > {}",
                pair[0].id,
                pair[1].id
            );
        }
    }

    #[test]
    fn driver_reserve_fallback_is_the_median_of_the_measured_cards() {
        let mut reserves: Vec<u64> = GPUS
            .iter()
            .filter_map(|g| Some(g.capacity().0 - g.cuda_total_bytes?))
            .collect();
        reserves.sort_unstable();
        assert!(reserves.len() >= 5);
        let mid = reserves.len() / 2;
        let median = if reserves.len().is_multiple_of(2) {
            (reserves[mid - 1] + reserves[mid]) / 2
        } else {
            reserves[mid]
        };
        assert_eq!(median / MIB, DRIVER_RESERVE_FALLBACK.0 / MIB);
    }

    #[test]
    fn smi_total_is_below_advertised_as_the_auto_config_guide_observed() {
        let card = find("rtx-4080").unwrap();
        assert_eq!(card.capacity(), Bytes(16376 * MIB));
        for g in GPUS {
            assert!(g.capacity().gib() <= g.advertised_gib + 1e-9, "{}", g.id);
        }
    }
}
