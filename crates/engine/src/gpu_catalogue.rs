//! The GPU catalogue: each card's advertised memory and, where a real capture shows it, the total
//! that nvidia-smi reports (the captures under crates/smi/tests/fixtures/nvidia-smi, and the
//! published captures quoted in docs/gpu-totals.md, are the evidence). AMD Instinct cards have no
//! NVML: their totals are rocm-smi's, and `vramfit probe` cannot read them (paste the totals).
//! Not to be confused with the CLI's `gpu/`, which reads real GPUs through NVML. A unified
//! device (Macs, GB10, Jetson, Strix Halo, MI300A) takes its capacity from the machine's memory
//! by a [`Unified`] rule (docs/hardware.md).
//!
//! Each card's [`Datasheet`] is its maker's own figures, cited in its `source`: NVIDIA's product
//! datasheets for the data-centre and workstation cards (T4, V100, A10, A30, A40, A100, A800, L4,
//! L40, L40S, H100 SXM/PCIe/NVL, H200, the Blackwell datasheet's HGX B200), the appendix tables
//! of the Turing, Ampere GA102, Ada and RTX Blackwell architecture whitepapers for the GeForce,
//! Quadro and RTX workstation cards, AMD's Instinct MI300X and MI325X datasheets, for Macs the
//! memory bandwidth Apple states per chip variant (with the GPU TFLOPS only where Apple states
//! them), and the bandwidth alone where the maker states its memory but no dense tensor
//! throughput: AMD's Radeon and older Instinct cards, the DGX Spark, Intel's Arc B580, the Tesla
//! P40 and M40, and the GeForce and RTX PRO cards that came after their architecture's
//! whitepaper (their pages state only sparse "AI TOPS"). A sheet whose throughput is 0 gets
//! decode and no prefill. Where a datasheet prints only sparse figures (marked "with sparsity")
//! they are halved; the whitepapers print the dense figure first. A card whose figures its maker
//! does not publish (the A10G, the H20) has no datasheet rather than a guess.
//! An NVIDIA sheet may add the SM count and boost clock (`Datasheet::clocks`), each cited in its
//! source as read; a test holds them to the sheet's own tensor throughput per SM-cycle.

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
    /// An NVIDIA card older than Ampere (compute capability below 8.0: Maxwell to Turing), where
    /// ggml-cuda does not capture CUDA graphs (`ggml_backend_cuda_graph_compute` sets
    /// `disable_due_to_gpu_arch` below `GGML_CUDA_CC_AMPERE`, ggml/src/ggml-cuda/ggml-cuda.cu)
    /// and launches each kernel of a step from the host.
    pub pre_ampere: bool,
    /// An NVIDIA card below compute capability 7.5 (Volta and older: V100 7.0, P40 6.1, M40 5.2),
    /// where vLLM refuses fp8 weights (`Fp8Config.get_min_capability` is 75).
    pub pre_turing: bool,
    /// What the card moves and computes, where its datasheet is cited.
    pub datasheet: Option<Datasheet>,
    /// How the GPU's memory follows from the machine's, on a device whose memory the CPU
    /// shares; `None` for a card with memory of its own. `advertised_gib` is then the machine's.
    pub unified: Option<Unified>,
}

/// A device whose memory the CPU shares, and how much of it the GPU may use. Memory "offloaded
/// to the CPU" stays in the same pool there, so it frees nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unified {
    /// Apple silicon: Metal's `recommendedMaxWorkingSetSize` ([`apple_working_set`]), which
    /// llama.cpp and MLX budget against and which `iogpu.wired_limit_mb` (`wired-limit`) replaces.
    AppleWorkingSet,
    /// One pool that CUDA reports whole as its total (GB10, Jetson), `total_bytes` where a
    /// capture shows it; what the OS and desktop hold goes in `reserved`.
    SharedPool { total_bytes: Option<u64> },
    /// A share set aside in firmware (AMD's Variable Graphics Memory): the largest the maker allows.
    CarveOut { gib: f64 },
}

/// Metal's `recommendedMaxWorkingSetSize` for a Mac's memory under macOS 13 to 15 (docs/hardware.md
/// lists each log it reproduces). Defined beside the `sysctl` reader, so a pasted Mac and a
/// catalogue Mac get the same limit.
pub use crate::smi::apple_working_set;

/// A card's peak figures from its maker's datasheet: memory bandwidth and dense (not sparse)
/// tensor throughput per format, and the link between cards. Peaks, not what a kernel reaches:
/// the speed model applies each runtime's efficiency to them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Datasheet {
    pub memory_bytes_per_s: f64,
    /// Dense tensor FLOP/s with 16-bit inputs (bf16, or fp16 where the card has no bf16: V100,
    /// T4), with FP32 accumulation, which is what PyTorch, vLLM and llama.cpp run bf16 and fp16
    /// GEMMs with. GeForce whitepapers print two rows, FP16 accumulate and FP32 accumulate, the
    /// latter half the former on GeForce cards: this is the FP32-accumulate row. Data-centre and
    /// workstation cards print one figure. 0 where the maker states none (most Macs): the speed
    /// model then predicts decode and no prefill.
    pub half_flops_per_s: f64,
    /// Dense fp8 tensor FLOP/s, the FP32-accumulate row on GeForce cards as for 16-bit; 0 where
    /// the card has no fp8 path (before Ada and Hopper).
    pub fp8_flops_per_s: f64,
    /// Dense int8 tensor ops/s; 0 where the tensor cores have no int8 path (Volta).
    pub int8_ops_per_s: f64,
    /// Dense fp4 tensor FLOP/s; 0 before Blackwell. On GeForce Blackwell it is four times the
    /// FP32-accumulate fp8 figure (the whitepaper's only fp4 row, with FP32 accumulate).
    pub fp4_flops_per_s: f64,
    /// One direction of the card's link to its peers: half the "total" (bidirectional) NVLink or
    /// Infinity Fabric bandwidth of an SXM/OAM part or an H100 NVL pair, else its PCIe slot
    /// (3.0 x16 ≈ 16 GB/s, 4.0 x16 32, 5.0 x16 64). Optional 2-way NVLink bridges on PCIe
    /// cards (RTX 3090, A6000, A40) are not counted. 0 on a unified device (Macs), whose CPU and
    /// GPU share one memory.
    pub link_bytes_per_s: f64,
    /// Streaming multiprocessors and the boost clock in MHz, as NVIDIA's datasheet or
    /// architecture whitepaper states them (the speed model's per-SM ceiling and per-layer
    /// cycles read them); 0 where not stated or read (AMD, Apple, Intel).
    pub sms: u16,
    pub boost_mhz: u16,
    /// The board's power limit in watts (TDP, or TGP on a GeForce card) and the chip's process
    /// node, as the datasheet or architecture whitepaper states them; 0 and
    /// [`Process::Unstated`] where not read. A GEMM that keeps the tensor cores busy on a card
    /// held to its power limit runs at what that power buys on that process (the speed model's
    /// 2024 cuBLAS prefill reads them).
    pub board_watts: u16,
    pub process: Process,
    /// The datasheet: its title or address; empty in a build without the `citations` feature
    /// (the page, which shows none).
    pub source: &'static str,
}

/// The foundry process a chip is made on, as NVIDIA's architecture whitepapers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Process {
    Unstated,
    /// Samsung 8N (GA102, GA104: the GeForce RTX 30 series, RTX A6000, A40).
    Samsung8N,
    /// TSMC N7 (GA100: A100, A30).
    TsmcN7,
    /// TSMC 4N (Ada's AD10x, Hopper's GH100).
    Tsmc4N,
}

/// A citation where the build keeps them, else "" (see [`Datasheet::source`]).
const fn cite(source: &'static str) -> &'static str {
    if cfg!(feature = "citations") {
        source
    } else {
        ""
    }
}

/// A datasheet's figures in the units datasheets print, in the order
/// `[memory GB/s, 16-bit TFLOPS, fp8 TFLOPS, int8 TOPS, fp4 TFLOPS, link GB/s]` (GB = 10⁹ B, dense).
pub const fn datasheet(figures: [f64; 6], source: &'static str) -> Datasheet {
    let [memory_gb_s, half_tflops, fp8_tflops, int8_tops, fp4_tflops, link_gb_s] = figures;
    Datasheet {
        memory_bytes_per_s: memory_gb_s * 1e9,
        half_flops_per_s: half_tflops * 1e12,
        fp8_flops_per_s: fp8_tflops * 1e12,
        int8_ops_per_s: int8_tops * 1e12,
        fp4_flops_per_s: fp4_tflops * 1e12,
        link_bytes_per_s: link_gb_s * 1e9,
        sms: 0,
        boost_mhz: 0,
        board_watts: 0,
        process: Process::Unstated,
        source: cite(source),
    }
}

impl Datasheet {
    /// Records the card's streaming multiprocessors and boost clock (MHz).
    const fn clocks(mut self, sms: u16, boost_mhz: u16) -> Datasheet {
        self.sms = sms;
        self.boost_mhz = boost_mhz;
        self
    }

    /// Records the board's power limit (W) and the chip's process.
    const fn power(mut self, board_watts: u16, process: Process) -> Datasheet {
        self.board_watts = board_watts;
        self.process = process;
        self
    }
}

/// nvidia-smi's total less CUDA's on the cards where both are published (the catalogue's
/// `cuda_total_bytes`, 211–768 MiB); the median stands in for a card without a CUDA figure, and
/// the estimate says so.
pub const DRIVER_RESERVE_FALLBACK: Bytes = Bytes(525 * MIB);

impl Gpu {
    /// A Mac: Apple silicon, whose GPU runs Metal, not CUDA or ROCm.
    pub fn is_mac(&self) -> bool {
        self.unified == Some(Unified::AppleWorkingSet)
    }

    /// An AMD GPU (Radeon, Instinct, a Ryzen AI's Radeon), for which llama.cpp's CUDA backend is
    /// built through HIP (ROCm).
    pub fn is_amd(&self) -> bool {
        self.name.contains("Radeon") || self.name.starts_with("Instinct")
    }

    /// An Intel GPU (Arc), which vLLM runs on its XPU platform.
    pub fn is_intel(&self) -> bool {
        self.name.starts_with("Intel")
    }

    /// An NVIDIA GPU: neither AMD's, Apple's nor Intel's.
    pub fn is_nvidia(&self) -> bool {
        !self.is_amd() && !self.is_mac() && !self.is_intel()
    }

    /// Whether its tensor cores multiply fp8 (Ada, Hopper, Blackwell, CDNA 3), as its datasheet's
    /// fp8 figure says; `None` where the sheet states no tensor throughput at all (none, or one
    /// whose bandwidth alone was read), which cannot tell a missing fp8 path from an unread one.
    pub fn has_fp8_tensor_path(&self) -> Option<bool> {
        self.datasheet
            .as_ref()
            .filter(|d| d.half_flops_per_s > 0.0)
            .map(|d| d.fp8_flops_per_s > 0.0)
    }

    /// Dense FP16 tensor FLOP/s with FP16 accumulation, what cuBLAS's `CUBLAS_COMPUTE_16F` runs
    /// at: twice the sheet's FP32-accumulate figure on a GeForce card, whose whitepapers print
    /// both rows (the FP32-accumulate one at half rate), and the same figure on data-centre and
    /// workstation cards, which run both at one rate. 0 without a stated tensor throughput.
    pub fn fp16_accumulate_flops_per_s(&self) -> f64 {
        let half = self.datasheet.as_ref().map_or(0.0, |d| d.half_flops_per_s);
        if self.name.starts_with("GeForce") {
            2.0 * half
        } else {
            half
        }
    }

    /// Dense TF32 tensor FLOP/s: half the sheet's 16-bit (FP32-accumulate) figure on NVIDIA
    /// cards from Ampere on, the ratio every NVIDIA sheet and whitepaper states: A100 156 of 312
    /// (A100 whitepaper, Table 1), H100 SXM 494.7 of 989.4 (H100 whitepaper, dense), RTX 3090
    /// 35.6 of 71 (GA102 whitepaper v2, Appendix A), RTX 4090 82.6 of 165.2 and RTX 6000 Ada 182.1
    /// of 364.2 (Ada whitepaper v2.1, Appendix A), RTX 5090 104.8 of 209.5 (RTX Blackwell
    /// whitepaper, Table 3), A10 62.5 of 125 and L40S 183 of 362.05 (their datasheets). 0 before
    /// Ampere (Volta's and Turing's tensor cores have no TF32), on other makers' cards (not
    /// read), and without a stated 16-bit figure.
    pub fn tf32_flops_per_s(&self) -> f64 {
        match &self.datasheet {
            Some(d) if self.is_nvidia() && !self.pre_ampere => d.half_flops_per_s / 2.0,
            _ => 0.0,
        }
    }

    /// FP32 FLOP/s on the CUDA cores (no tensor cores): SMs × FP32 lanes per SM × 2 (a fused
    /// multiply-add) × the boost clock, as NVIDIA's whitepapers compute their "Peak FP32" rows
    /// (A100: 108 × 64 × 2 × 1.41 GHz = 19.5 TFLOPS). 0 where the sheet states no SM count or
    /// clock (AMD, Apple, Intel, and the NVIDIA cards whose clocks were not read) or the lanes
    /// per SM are not known ([`Gpu::fp32_lanes_per_sm`]).
    pub fn fp32_flops_per_s(&self) -> f64 {
        self.datasheet.as_ref().map_or(0.0, |d| {
            f64::from(d.sms) * self.fp32_lanes_per_sm() * 2.0 * f64::from(d.boost_mhz) * 1e6
        })
    }

    /// FP32 lanes (CUDA cores) per SM by architecture, from NVIDIA's whitepapers: 64 on Volta
    /// (GV100: "64 FP32 Cores" per SM), Turing (TU102: 64) and GA100 (A100 whitepaper: 64); 128
    /// on GA10x (GA102 whitepaper: both datapaths run FP32), Ada (AD102: 128), Hopper (GH100:
    /// 128) and Blackwell (GB202: 128). A card below Turing is Volta where its sheet states
    /// tensor throughput; Pascal and Maxwell (no tensor cores) get 0, since the catalogue cannot
    /// tell GP100 (64) from GP102 (128). GA100 is named (A100, A800, A30): its flags and process
    /// match the GA10x cards'. 0 for other makers.
    fn fp32_lanes_per_sm(&self) -> f64 {
        let tensor = self.datasheet.is_some_and(|d| d.half_flops_per_s > 0.0);
        let ga100 = ["A100 ", "A800 ", "A30 "]
            .iter()
            .any(|p| self.name.starts_with(p));
        if !self.is_nvidia() || (self.pre_turing && !tensor) {
            0.0
        } else if self.pre_ampere || ga100 {
            64.0
        } else {
            128.0
        }
    }

    /// An AMD Instinct card: GCN (MI50, MI60) or CDNA (MI100 on), whose wavefront is 64 lanes,
    /// where a Radeon's RDNA runs 32.
    pub fn is_instinct(&self) -> bool {
        self.name.starts_with("Instinct")
    }

    /// What CUDA reports as the total, and whether it was measured on this card (else
    /// [`DRIVER_RESERVE_FALLBACK`] below the capacity).
    pub fn cuda_total(&self) -> (Bytes, bool) {
        match (self.cuda_total_bytes, self.unified) {
            (Some(bytes), _) => (Bytes(bytes), true),
            // torch.cuda.mem_get_info's total on a GB10 is the pool the OS reports.
            (
                None,
                Some(Unified::SharedPool {
                    total_bytes: Some(total),
                }),
            ) => (Bytes(total), true),
            (None, _) => (
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

    const fn pre_ampere(mut self) -> Gpu {
        self.pre_ampere = true;
        self
    }

    /// Older than Turing, and so older than Ampere.
    const fn pre_turing(mut self) -> Gpu {
        self.pre_turing = true;
        self.pre_ampere()
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

    /// The capacity the planner budgets against: nvidia-smi's total when known, else the
    /// advertised size; on a unified device, what its rule lets the GPU use.
    pub fn capacity(&self) -> Bytes {
        self.capacity_under(None)
    }

    /// The capacity with `iogpu.wired_limit_mb` set, which on a Mac replaces the working-set
    /// limit (antirez/ds4 PR #893: `recommendedMaxWorkingSetSize` reads 112.00 GiB with
    /// `iogpu.wired_limit_mb = 114688`); other devices have no such setting.
    pub fn capacity_under(&self, wired_limit: Option<Bytes>) -> Bytes {
        match (self.unified, self.smi_total_mib) {
            (Some(Unified::AppleWorkingSet), _) => {
                wired_limit.unwrap_or_else(|| apple_working_set(self.machine_memory()))
            }
            (
                Some(Unified::SharedPool {
                    total_bytes: Some(total),
                }),
                _,
            ) => Bytes(total),
            (Some(Unified::CarveOut { gib }), _) => Bytes::from_f64(gib * GIB as f64),
            (_, Some(mib)) => Bytes(u64::from(mib) * MIB),
            _ => self.machine_memory(),
        }
    }

    /// The advertised size: the card's memory, or on a unified device the machine's.
    pub fn machine_memory(&self) -> Bytes {
        Bytes::from_f64(self.advertised_gib * GIB as f64)
    }

    /// Whether the CPU shares this device's memory.
    pub fn is_unified(&self) -> bool {
        self.unified.is_some()
    }

    /// On a unified device, the memory the CPU and GPU share, which everything a run keeps in
    /// either must fit in; `None` for a card with memory of its own.
    pub fn shared_memory(&self) -> Option<Bytes> {
        match self.unified? {
            Unified::SharedPool { .. } => Some(self.capacity()),
            Unified::AppleWorkingSet | Unified::CarveOut { .. } => Some(self.machine_memory()),
        }
    }

    const fn with_unified(mut self, rule: Unified) -> Gpu {
        self.unified = Some(rule);
        self
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
        pre_ampere: false,
        pre_turing: false,
        datasheet: None,
        unified: None,
    }
}

/// A Mac of `ram_gib` GB, whose GPU may use Metal's working set of it.
const fn apple(id: &'static str, name: &'static str, ram_gib: f64) -> Gpu {
    gpu(id, name, ram_gib, None).with_unified(Unified::AppleWorkingSet)
}

/// A Mac's datasheet: the memory bandwidth Apple states for the chip variant, and its GPU's
/// TFLOPS where Apple states them (Apple's GPUs run fp16 at their fp32 rate on the shader cores,
/// and have no fp8, int8 or fp4 tensor path), else 0: the speed model then predicts decode and
/// no prefill. No link: the CPU and GPU share one memory.
const fn mac(memory_gb_s: f64, gpu_tflops: f64, source: &'static str) -> Datasheet {
    datasheet([memory_gb_s, gpu_tflops, 0.0, 0.0, 0.0, 0.0], source)
}

// Where a chip comes in two GPU variants of one bandwidth, the bandwidth is the chip's; where the
// variants differ (M3 Max, M4 Max), each memory size is sold with one of them, named below. Apple
// states no M1 bandwidth as a figure ("nearly 6x" less than M1 Max's, "50 percent" below M2's),
// so the M1 has no datasheet; nor has the 96 GB M3 Max, whose variant no page read here names.
const M1_PRO_MAX: &str = "Apple Newsroom, \"Introducing M1 Pro and M1 Max\" (2021-10-18): M1 Pro \
     200GB/s, M1 Max 400GB/s memory bandwidth; no GPU TFLOPS stated";
const M1_ULTRA: &str = "Apple Newsroom, \"Apple unveils M1 Ultra\" (2022-03-08, as MacRumors and \
     Notebookcheck report it): 800GB/s memory bandwidth; no GPU TFLOPS stated";
const M2: &str = "Apple Newsroom, \"Apple unveils M2\" (2022-06-06, as MacRumors and Phoronix \
     report it): 100GB/s unified memory bandwidth; no GPU TFLOPS stated";
const M2_PRO_MAX: &str = "Apple Newsroom, \"Apple unveils M2 Pro and M2 Max\" (2023-01-17): M2 \
     Pro 200GB/s, M2 Max 400GB/s unified memory bandwidth; no GPU TFLOPS stated";
const M2_ULTRA_76: &str = "Apple Newsroom, \"Apple introduces M2 Ultra\" (2023-06-05): 800GB/s \
     memory bandwidth; apple.com/mac-pro (2023): the GPU of up to 76 cores reaches up to 27.2 \
     teraflops (the 76-core variant, sold with every size; the 60-core one has no stated figure)";

/// The 76-core M2 Ultra: 800 GB/s, and the one Mac whose throughput (27.2 TFLOPS) Apple states.
const M2_ULTRA_76_SHEET: Datasheet = mac(800.0, 27.2, M2_ULTRA_76);
/// Both Tesla V100s (16 and 32 GB): the SXM2 part.
const V100_SXM2: Datasheet = datasheet(
    [900.0, 125.0, 0.0, 0.0, 0.0, 150.0],
    "NVIDIA Tesla V100 datasheet, SXM2 column (900 GB/s; FP16 tensor 125 TFLOPS, no int8 tensor \
     path); NVLink 300 GB/s total; 80 SMs, 1530 MHz boost (Cornell Virtual Workshop, \"GPU \
     Example: Tesla V100\": 5,120 FP32 cores at 1.53 GHz; the sheet's 125 TFLOPS is 1,024 FLOPs \
     per SM-cycle at that clock)",
)
.clocks(80, 1530);
const M3: &str = "MacBook Pro (14-inch, M3, Nov 2023) technical specifications: 100GB/s, as \
     Ars Technica's M4 report (2024-05-07) quotes it; no GPU TFLOPS stated";
const M3_PRO: &str = "MacBook Pro (Nov 2023) technical specifications, as MacRumors read them \
     (2023-10-31): M3 Pro 150GB/s (11/14 and 12/18-core variants alike); no GPU TFLOPS stated";
const M3_MAX_30: &str = "MacBook Pro (Nov 2023) technical specifications, as MacRumors read them \
     (2023-10-31): M3 Max with 14-core CPU and 30-core GPU 300GB/s (the variant sold with 36GB); \
     no GPU TFLOPS stated";
const M3_MAX_40: &str = "MacBook Pro (Nov 2023) technical specifications, as MacRumors read them \
     (2023-10-31): M3 Max with 16-core CPU and 40-core GPU 400GB/s (the variant sold with 48, \
     64 and 128GB); no GPU TFLOPS stated";
const M3_ULTRA: &str = "Mac Studio (2025) technical specifications: M3 Ultra 819GB/s (as Macworld \
     and TechPowerUp quote them, 2025-03-05), both GPU variants; no GPU TFLOPS stated";
const M4: &str = "Apple Newsroom, iPad Pro with M4 (2024-05-07): 120GB/s memory bandwidth, as \
     Ars Technica reports it; no GPU TFLOPS stated";
const M4_PRO: &str = "Apple Newsroom, M4 Pro and Mac mini (2024-10-29, as TechCrunch reports it): \
     273GB/s unified memory bandwidth (12/16 and 14/20-core variants alike); no GPU TFLOPS stated";
const M4_MAX_32: &str = "Mac Studio (2025) technical specifications, as Macworld quotes them \
     (2025-03-05): M4 Max with 14-core CPU, 32-core GPU and 36GB, 410GB/s (36GB is sold only \
     with this variant); no GPU TFLOPS stated";
const M4_MAX_40: &str = "Apple Newsroom, M4 Max (2024-10-30, as MacRumors and TechCrunch report \
     it): up to 546GB/s, the 16-core CPU and 40-core GPU variant, the one sold with 48, 64 and \
     128GB; no GPU TFLOPS stated";

/// A card whose maker states its memory bandwidth but no dense tensor throughput read here: the
/// speed model gives it decode and no prefill, as for most Macs. `link_gb_s` as in [`datasheet`].
const fn bandwidth_only(memory_gb_s: f64, link_gb_s: f64, source: &'static str) -> Datasheet {
    datasheet([memory_gb_s, 0.0, 0.0, 0.0, 0.0, link_gb_s], source)
}

// AMD's Radeon pages state a peak FP16 rate of the dual-issue shader ALUs, not a dense matrix
// figure like NVIDIA's, so their throughput is left unread. The bandwidth is the GDDR6's, not
// the "effective" figure with Infinity Cache: a decode step streams gigabytes of weights, far
// more than the 64–96 MB cache holds.
const RX_7900: &str = "AMD Radeon RX 7900 XTX and XT specifications (2022-11-03), as Guru3D's \
     table reproduces them: 20 Gbps GDDR6, 960 GB/s (XTX, 384-bit) and 800 GB/s (XT, 320-bit); \
     PCIe 4.0 x16; no dense tensor throughput read";
const W7900: &str = "AMD Radeon PRO W7900 specifications: 48GB GDDR6, 384-bit, 864 GB/s (as \
     ITCreations quotes them); PCIe 4.0 x16; no dense tensor throughput read";
const RX_9070: &str = "AMD Radeon RX 9070 XT and RX 9070 specifications (2025-02, as \
     multiplayer.it and Videocardz report them): 20 Gbps GDDR6 on a 256-bit bus, 640 GB/s, both \
     cards; PCIe 5.0 x16; no dense tensor throughput read";
const DGX_SPARK: &str =
    "NVIDIA DGX Spark product page and hardware guide (as ai-infrastructure.net \
     quotes them, June 2026): 128 GB LPDDR5x unified, 273 GB/s; NVIDIA states only FP4 with \
     sparsity (1 PFLOP), no dense 16-bit or int8 figure; no link (one memory)";

// GeForce and RTX PRO cards that came after their architecture's whitepaper: NVIDIA's
// specification pages state each one's memory (data rate and bus width, whose product is the
// bandwidth) and, for tensor throughput, only sparse marketing totals ("AI TOPS") that no dense
// figure is read from, so they get decode and no prefill.
const RTX_50: &str = "NVIDIA GeForce RTX 50 series specifications (2025), GDDR7 data rate × \
     bus width: RTX 5080 30 Gbps × 256 bits = 960 GB/s (as Notebookcheck and BigGo report it), \
     RTX 5070 Ti 28 Gbps × 256 bits = 896 GB/s (as Loadsyn reports it), RTX 5070 28 Gbps × 192 \
     bits = 672 GB/s; PCIe 5.0 x16; tensor throughput stated only as sparse fp4 AI TOPS";
const RTX_40: &str = "NVIDIA GeForce RTX 40 series specifications, GDDR6X data rate × bus \
     width: RTX 4080 SUPER 23 Gbps × 256 bits = 736 GB/s (as BigGo reports it), RTX 4070 Ti \
     SUPER 21 Gbps × 256 bits = 672 GB/s, RTX 4070 21 Gbps × 192 bits = 504 GB/s (as PurePC \
     reports it); PCIe 4.0 x16; cards after the Ada whitepaper, no dense tensor throughput read; \
     RTX 4070: 46 SMs, 2475 MHz boost (as TheFPSReview quotes them)";
const RTX_3060: &str = "NVIDIA GeForce RTX 3060 specifications (2021-01-12): 12 GB GDDR6, 15 \
     Gbps × 192 bits = 360 GB/s (as pcpartdb reports it); PCIe 4.0 x16; GA106 is not in the GA102 \
     whitepaper, so no dense tensor throughput read";
const RTX_PRO_6000: &str = "NVIDIA RTX PRO 6000 Blackwell (GTC 2025): 96 GB GDDR7, 28 Gbps × \
     512 bits = 1792 GB/s on the Workstation, Max-Q and Server editions alike (as VideoCardz, \
     through gpu.name, reports it); PCIe 5.0 x16; tensor throughput stated only as sparse totals";
const ARC_B580: &str = "Intel Arc B580 specifications (2024-12): 12 GB GDDR6, 19 Gbps × 192 \
     bits = 456 GB/s, PCIe 4.0 x8 (as Notebookcheck and comparegpus report them); XMX \
     throughput not read";

// Scoreboard cards (llama.cpp discussions #15013, #15021, #10879) whose makers state their
// memory; those without a dense tensor figure read here get decode and no prefill.
const GEFORCE_MORE: &str = "NVIDIA GeForce specifications, memory data rate × bus width: RTX \
     4070 Ti and RTX 4070 SUPER 21 Gbps GDDR6X × 192 bits = 504 GB/s; RTX 3090 Ti and RTX 4090 \
     D 21 Gbps × 384 bits = 1008 GB/s; RTX 5060 Ti 16GB 28 Gbps GDDR7 × 128 bits = 448 GB/s on \
     PCIe 5.0 x8 (as Tom's Hardware and VideoCardz report it); no dense tensor throughput read; \
     RTX 4070 Ti: 60 SMs (7680 CUDA cores), 2610 MHz boost (as purespecs and Notebookcheck quote \
     them); RTX 3090 Ti: 84 SMs, 1860 MHz boost (as TweakTown quotes them)";
const RTX_A5000: &str = "NVIDIA RTX A5000 datasheet: 24 GB GDDR6, 768 GB/s; PCIe 4.0 x16 (the \
     NVLink bridge not counted); no dense tensor throughput read";
const RTX_ADA_WORKSTATION: &str = "NVIDIA RTX 4000 Ada Generation and RTX 5000 Ada Generation \
     datasheets: 20 GB GDDR6 on 160 bits, 360 GB/s (RTX 4000 Ada); 32 GB GDDR6 on 256 bits, \
     576 GB/s (RTX 5000 Ada); PCIe 4.0 x16; tensor throughput stated only as sparse totals; 48 SMs \
     and 2175 MHz boost (RTX 4000 Ada), 100 SMs and 2550 MHz (RTX 5000 Ada), as TechPowerUp's \
     database, through topcpu.net, quotes them";
const RTX_PRO_4000: &str = "NVIDIA RTX PRO 4000 Blackwell (GTC 2025): 24 GB GDDR7, 28 Gbps × 192 \
     bits = 672 GB/s; PCIe 5.0 x16; tensor throughput stated only as sparse totals";
const QUADRO_RTX: &str = "NVIDIA Turing GPU Architecture whitepaper (Quadro RTX 6000: 672 GB/s; \
     FP16 tensor with FP32 accumulate 130.5 TFLOPS, INT8 261 TOPS, dense); the Quadro RTX 8000 \
     datasheet states the same GPU and memory speed with 48 GB; PCIe 3.0 x16; 72 SMs, 1770 MHz \
     boost (the RTX 6000's, as TechPowerUp's database, through sysrqmts, quotes them)";
const TESLA_OLD: &str = "NVIDIA Tesla P40 datasheet (24 GB GDDR5, 346 GB/s; no tensor cores) and \
     Tesla M40 24GB datasheet (288 GB/s; no tensor cores); PCIe 3.0 x16; P40: 30 SMs, 1531 MHz \
     boost (as TechPowerUp's database, through sysrqmts, quotes them)";
const INSTINCT_OLD: &str = "AMD Instinct datasheets: MI50 32GB and MI60 32 GB HBM2 at 1024 GB/s, \
     MI100 32 GB HBM2 at 1228.8 GB/s, MI210 64 GB HBM2e at 1638.4 GB/s; PCIe 4.0 x16 (the \
     Infinity Fabric bridges not counted); matrix throughput not read";
const RADEON_PRO_MORE: &str = "AMD Radeon PRO V620 (2021-11, as Inpact Hardware reports it): 32 \
     GB GDDR6 on 256 bits, 512 GB/s, PCIe 4.0 x16; Radeon AI PRO R9700 (2025): 32 GB GDDR6, 20 \
     Gbps × 256 bits = 640 GB/s, PCIe 5.0 x16; no dense matrix throughput read";

/// A CUDA total as vLLM logs it, to two decimals of GiB.
const fn logged_gib(hundredths: u64) -> u64 {
    hundredths * GIB / 100
}

/// Ordered by capacity, smallest first, so "the smallest GPU that fits" is the first match.
pub const GPUS: &[Gpu] = &[
    apple("m1-8", "Apple M1 8GB (unified)", 8.0),
    apple("m2-8", "Apple M2 8GB (unified)", 8.0).sheet(mac(100.0, 0.0, M2)),
    apple("m3-8", "Apple M3 8GB (unified)", 8.0).sheet(mac(100.0, 0.0, M3)),
    gpu("rtx-3070", "GeForce RTX 3070 8GB", 8.0, Some(8192)).sheet(
        datasheet(
            [448.0, 40.6, 0.0, 162.6, 0.0, 32.0],
            "NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Appendix A (RTX 3070: 448 \
         GB/s; FP16 tensor with FP32 accumulate 40.6, INT8 162.6, dense); PCIe 4.0 x16; 46 \
         SMs (5888 CUDA cores), 1725 MHz boost, as NVIDIA's launch specifications are quoted \
         (winenfood, Fudzilla: 1.73 GHz); 220 W total graphics power, Samsung 8N process",
        )
        .clocks(46, 1725)
        .power(220, Process::Samsung8N),
    ),
    gpu("rtx-3080", "GeForce RTX 3080 10GB", 10.0, Some(10240)).sheet(
        datasheet(
            [760.0, 59.5, 0.0, 238.0, 0.0, 32.0],
            "NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Table 2 (RTX 3080: 760 \
         GB/s; FP16 tensor with FP32 accumulate 59.5, INT8 238, dense); PCIe 4.0 x16; 68 \
         SMs, 1710 MHz boost (as a reprinted launch review and Fudzilla quote NVIDIA's figures); \
         320 W total graphics power, Samsung 8N process",
        )
        .clocks(68, 1710)
        .power(320, Process::Samsung8N),
    ),
    apple("m1-16", "Apple M1 16GB (unified)", 16.0),
    apple("m1-pro-16", "Apple M1 Pro 16GB (unified)", 16.0).sheet(mac(200.0, 0.0, M1_PRO_MAX)),
    apple("m2-16", "Apple M2 16GB (unified)", 16.0).sheet(mac(100.0, 0.0, M2)),
    apple("m2-pro-16", "Apple M2 Pro 16GB (unified)", 16.0).sheet(mac(200.0, 0.0, M2_PRO_MAX)),
    apple("m3-16", "Apple M3 16GB (unified)", 16.0).sheet(mac(100.0, 0.0, M3)),
    apple("m4-16", "Apple M4 16GB (unified)", 16.0).sheet(mac(120.0, 0.0, M4)),
    gpu("rtx-2080-ti", "GeForce RTX 2080 Ti 11GB", 11.0, None)
        .pre_ampere()
        .sheet(bandwidth_only(
            616.0,
            16.0,
            "NVIDIA Turing GPU Architecture whitepaper, Appendix A (GeForce RTX 2080 Ti: 14 \
             Gbps GDDR6 × 352 bits = 616 GB/s); PCIe 3.0 x16; no dense tensor throughput read",
        )),
    gpu("rtx-5070", "GeForce RTX 5070 12GB", 12.0, Some(12227))
        .sheet(bandwidth_only(672.0, 64.0, RTX_50)),
    gpu("rtx-4070", "GeForce RTX 4070 12GB", 12.0, Some(12282))
        .sheet(bandwidth_only(504.0, 32.0, RTX_40).clocks(46, 2475)),
    gpu("rtx-3060", "GeForce RTX 3060 12GB", 12.0, Some(12288))
        .sheet(bandwidth_only(360.0, 32.0, RTX_3060)),
    gpu("rtx-3080-ti", "GeForce RTX 3080 Ti 12GB", 12.0, Some(12288)),
    gpu("arc-b580", "Intel Arc B580 12GB", 12.0, None).sheet(bandwidth_only(456.0, 16.0, ARC_B580)),
    gpu("rtx-4070-ti", "GeForce RTX 4070 Ti 12GB", 12.0, None)
        .sheet(bandwidth_only(504.0, 32.0, GEFORCE_MORE).clocks(60, 2610)),
    gpu("rtx-4070-super", "GeForce RTX 4070 SUPER 12GB", 12.0, None).sheet(bandwidth_only(
        504.0,
        32.0,
        GEFORCE_MORE,
    )),
    apple("m3-pro-18", "Apple M3 Pro 18GB (unified)", 18.0).sheet(mac(150.0, 0.0, M3_PRO)),
    gpu("t4", "Tesla T4 16GB", 16.0, Some(15360))
        .pre_ampere()
        .sheet(
            datasheet(
                [320.0, 65.0, 0.0, 130.0, 0.0, 16.0],
                "NVIDIA T4 datasheet (320 GB/s; mixed-precision FP16/FP32 tensor 65 TFLOPS, \
             INT8 130 TOPS); PCIe 3.0 x16; 40 SMs, 1590 MHz boost (as TechPowerUp's database, \
             through sysrqmts, quotes them)",
            )
            .clocks(40, 1590),
        ),
    gpu("v100-16", "Tesla V100 16GB", 16.0, Some(16130))
        .pre_turing()
        .sheet(V100_SXM2),
    gpu("rtx-5070-ti", "GeForce RTX 5070 Ti 16GB", 16.0, Some(16303))
        .sheet(bandwidth_only(896.0, 64.0, RTX_50)),
    gpu(
        "rtx-5060-ti-16",
        "GeForce RTX 5060 Ti 16GB",
        16.0,
        Some(16311),
    )
    .sheet(bandwidth_only(448.0, 32.0, GEFORCE_MORE)),
    gpu("rtx-4080", "GeForce RTX 4080 16GB", 16.0, Some(16376)).sheet(
        datasheet(
            [716.8, 97.5, 194.9, 389.9, 0.0, 32.0],
            "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A (RTX 4080: 716.8 GB/s; \
         FP16 tensor with FP32 accumulate 97.5, FP8 with FP32 accumulate 194.9, INT8 \
         389.9, dense); PCIe 4.0 x16; 76 SMs, 2505 MHz boost (as Wccftech and alldbin \
         quote it); 320 W total graphics power, TSMC 4N process",
        )
        .clocks(76, 2505)
        .power(320, Process::Tsmc4N),
    ),
    gpu(
        "rtx-4080-super",
        "GeForce RTX 4080 SUPER 16GB",
        16.0,
        Some(16376),
    )
    .sheet(bandwidth_only(736.0, 32.0, RTX_40)),
    gpu(
        "rtx-4070-ti-super",
        "GeForce RTX 4070 Ti SUPER 16GB",
        16.0,
        Some(16376),
    )
    .sheet(bandwidth_only(672.0, 32.0, RTX_40)),
    gpu("rtx-5080", "GeForce RTX 5080 16GB", 16.0, None).sheet(bandwidth_only(960.0, 64.0, RTX_50)),
    gpu("rtx-4060-ti-16", "GeForce RTX 4060 Ti 16GB", 16.0, None),
    gpu("arc-a770", "Intel Arc A770 16GB", 16.0, None),
    gpu("rx-9070", "Radeon RX 9070 16GB", 16.0, None).sheet(bandwidth_only(640.0, 64.0, RX_9070)),
    gpu("rx-9070-xt", "Radeon RX 9070 XT 16GB", 16.0, None)
        .sheet(bandwidth_only(640.0, 64.0, RX_9070)),
    apple("m2-24", "Apple M2 24GB (unified)", 24.0).sheet(mac(100.0, 0.0, M2)),
    apple("m3-24", "Apple M3 24GB (unified)", 24.0).sheet(mac(100.0, 0.0, M3)),
    apple("m4-24", "Apple M4 24GB (unified)", 24.0).sheet(mac(120.0, 0.0, M4)),
    apple("m4-pro-24", "Apple M4 Pro 24GB (unified)", 24.0).sheet(mac(273.0, 0.0, M4_PRO)),
    gpu("rx-7900-xt", "Radeon RX 7900 XT 20GB", 20.0, None)
        .sheet(bandwidth_only(800.0, 32.0, RX_7900)),
    gpu("rtx-4000-ada", "RTX 4000 Ada Generation 20GB", 20.0, None)
        .sheet(bandwidth_only(360.0, 32.0, RTX_ADA_WORKSTATION).clocks(48, 2175)),
    apple("m1-pro-32", "Apple M1 Pro 32GB (unified)", 32.0).sheet(mac(200.0, 0.0, M1_PRO_MAX)),
    apple("m1-max-32", "Apple M1 Max 32GB (unified)", 32.0).sheet(mac(400.0, 0.0, M1_PRO_MAX)),
    apple("m2-pro-32", "Apple M2 Pro 32GB (unified)", 32.0).sheet(mac(200.0, 0.0, M2_PRO_MAX)),
    apple("m2-max-32", "Apple M2 Max 32GB (unified)", 32.0).sheet(mac(400.0, 0.0, M2_PRO_MAX)),
    apple("m4-32", "Apple M4 32GB (unified)", 32.0).sheet(mac(120.0, 0.0, M4)),
    gpu("a10", "A10 24GB", 24.0, Some(23028)).sheet(datasheet(
        [600.0, 125.0, 0.0, 250.0, 0.0, 32.0],
        "NVIDIA A10 datasheet (600 GB/s; BF16 tensor 125 TFLOPS, INT8 250 TOPS, dense); \
         PCIe 4.0 x16 (64 GB/s both ways)",
    )),
    gpu("a10g", "A10G 24GB", 24.0, Some(23028)),
    gpu("l4", "L4 24GB", 24.0, Some(23034)).sheet(datasheet(
        [300.0, 121.0, 242.5, 242.5, 0.0, 32.0],
        "NVIDIA L4 datasheet (300 GB/s; its sparse BF16 242, FP8 485, INT8 485 halved); \
         PCIe 4.0 x16 (64 GB/s both ways)",
    )),
    gpu(
        "rtx-pro-4000",
        "RTX PRO 4000 Blackwell 24GB",
        24.0,
        Some(24467),
    )
    .sheet(bandwidth_only(672.0, 64.0, RTX_PRO_4000)),
    gpu("rtx-4090", "GeForce RTX 4090 24GB", 24.0, Some(24564)).sheet(
        datasheet(
            [1008.0, 165.2, 330.3, 660.6, 0.0, 32.0],
            "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A (RTX 4090: 1008 GB/s; \
         FP16 tensor with FP32 accumulate 165.2, FP8 with FP32 accumulate 330.3 as \
         corrected in v2.02, INT8 660.6, dense); PCIe 4.0 x16; 128 SMs, 2520 MHz boost (as \
         Neowin's table of NVIDIA's figures quotes them); \
         450 W total graphics power, TSMC 4N process",
        )
        .clocks(128, 2520)
        .power(450, Process::Tsmc4N),
    ),
    // vLLM 0.5-era logs on an RTX 3090: total_gpu_memory 23.58 GiB (calibration/runtime-gpus.csv).
    gpu("rtx-3090", "GeForce RTX 3090 24GB", 24.0, Some(24576))
        .cuda(logged_gib(2358))
        .sheet(
            datasheet(
                [936.0, 71.2, 0.0, 284.0, 0.0, 32.0],
                "NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Appendix A, and RTX \
             Blackwell whitepaper Table 3 (RTX 3090: 936 GB/s; FP16 tensor with FP32 \
             accumulate 71.2, INT8 284, dense); PCIe 4.0 x16; 82 SMs, 1695 MHz boost (as \
             Tom's Hardware's specification table and Neowin quote them); \
             350 W total graphics power, Samsung 8N process",
            )
            .clocks(82, 1695)
            .power(350, Process::Samsung8N),
        ),
    gpu("rx-7900-xtx", "Radeon RX 7900 XTX 24GB", 24.0, None)
        .sheet(bandwidth_only(960.0, 32.0, RX_7900)),
    gpu("rtx-3090-ti", "GeForce RTX 3090 Ti 24GB", 24.0, None)
        .sheet(bandwidth_only(1008.0, 32.0, GEFORCE_MORE).clocks(84, 1860)),
    gpu("rtx-4090-d", "GeForce RTX 4090 D 24GB", 24.0, None).sheet(bandwidth_only(
        1008.0,
        32.0,
        GEFORCE_MORE,
    )),
    gpu("rtx-a5000", "RTX A5000 24GB", 24.0, None).sheet(bandwidth_only(768.0, 32.0, RTX_A5000)),
    gpu("a30", "A30 24GB", 24.0, None).sheet(
        datasheet(
            [933.0, 165.0, 0.0, 330.0, 0.0, 32.0],
            "NVIDIA A30 datasheet (24 GB HBM2, 933 GB/s; BF16 tensor 165 TFLOPS, INT8 330 TOPS, \
         dense); PCIe 4.0 x16 (the NVLink bridge not counted); 56 SMs, 1440 MHz boost (as \
         TechPowerUp's database, through sysrqmts, quotes them)",
        )
        .clocks(56, 1440),
    ),
    gpu("quadro-rtx-6000", "Quadro RTX 6000 24GB", 24.0, None)
        .pre_ampere()
        .sheet(datasheet([672.0, 130.5, 0.0, 261.0, 0.0, 16.0], QUADRO_RTX).clocks(72, 1770)),
    gpu("tesla-p40", "Tesla P40 24GB", 24.0, None)
        .pre_turing()
        .sheet(bandwidth_only(346.0, 16.0, TESLA_OLD).clocks(30, 1531)),
    gpu("tesla-m40-24", "Tesla M40 24GB", 24.0, None)
        .pre_turing()
        .sheet(bandwidth_only(288.0, 16.0, TESLA_OLD)),
    apple("m3-pro-36", "Apple M3 Pro 36GB (unified)", 36.0).sheet(mac(150.0, 0.0, M3_PRO)),
    apple("m3-max-36", "Apple M3 Max 36GB (unified)", 36.0).sheet(mac(300.0, 0.0, M3_MAX_30)),
    apple("m4-max-36", "Apple M4 Max 36GB (unified)", 36.0).sheet(mac(410.0, 0.0, M4_MAX_32)),
    gpu("rtx-5090", "GeForce RTX 5090 32GB", 32.0, Some(32607)).sheet(
        datasheet(
            [1792.0, 209.5, 419.0, 838.0, 1676.0, 64.0],
            "NVIDIA RTX Blackwell GPU Architecture whitepaper, Appendix A Table 3 (RTX \
         5090: 1792 GB/s; BF16 and FP8 with FP32 accumulate 209.5 and 419, INT8 838, \
         FP4 1676, dense); PCIe 5.0 x16; 170 SMs, 2407 MHz boost (as Tom's Hardware's review, \
         reprinted in Linux Format, May 2025, quotes them)",
        )
        .clocks(170, 2407),
    ),
    gpu("v100-32", "Tesla V100 32GB", 32.0, None)
        .pre_turing()
        .sheet(V100_SXM2),
    gpu("mi50-32", "Instinct MI50 32GB (ROCm)", 32.0, None).sheet(bandwidth_only(
        1024.0,
        32.0,
        INSTINCT_OLD,
    )),
    gpu("mi60", "Instinct MI60 32GB (ROCm)", 32.0, None).sheet(bandwidth_only(
        1024.0,
        32.0,
        INSTINCT_OLD,
    )),
    gpu("mi100", "Instinct MI100 32GB (ROCm)", 32.0, None).sheet(bandwidth_only(
        1228.8,
        32.0,
        INSTINCT_OLD,
    )),
    gpu("rtx-5000-ada", "RTX 5000 Ada Generation 32GB", 32.0, None)
        .sheet(bandwidth_only(576.0, 32.0, RTX_ADA_WORKSTATION).clocks(100, 2550)),
    gpu("radeon-pro-v620", "Radeon PRO V620 32GB", 32.0, None).sheet(bandwidth_only(
        512.0,
        32.0,
        RADEON_PRO_MORE,
    )),
    gpu(
        "radeon-ai-pro-r9700",
        "Radeon AI PRO R9700 32GB",
        32.0,
        None,
    )
    .sheet(bandwidth_only(640.0, 64.0, RADEON_PRO_MORE)),
    gpu(
        "jetson-agx-orin-32",
        "Jetson AGX Orin 32GB (unified)",
        32.0,
        None,
    )
    .with_unified(Unified::SharedPool { total_bytes: None }),
    apple("m3-max-48", "Apple M3 Max 48GB (unified)", 48.0).sheet(mac(400.0, 0.0, M3_MAX_40)),
    apple("m4-pro-48", "Apple M4 Pro 48GB (unified)", 48.0).sheet(mac(273.0, 0.0, M4_PRO)),
    apple("m4-max-48", "Apple M4 Max 48GB (unified)", 48.0).sheet(mac(546.0, 0.0, M4_MAX_40)),
    // vLLM log on an A100 40GB: total_gpu_memory 39.38 GiB.
    gpu("a100-40", "A100 40GB", 40.0, Some(40536))
        .cuda(logged_gib(3938))
        .sheet(
            datasheet(
                [1555.0, 312.0, 0.0, 624.0, 0.0, 300.0],
                "NVIDIA A100 datasheet, 40GB SXM column (1555 GB/s; BF16 tensor 312 TFLOPS, \
             INT8 624 TOPS, dense); NVLink 600 GB/s total; 108 SMs, 1410 MHz boost (as llmperf.net \
             and Ultrasonics Sonochemistry 99, 2023, table 3, quote them); \
             400 W maximum power, TSMC N7 process",
            )
            .clocks(108, 1410)
            .power(400, Process::TsmcN7),
        ),
    // ECC on, as data-centre cards ship; with ECC off the L40 and A40 print 49140 MiB.
    gpu("l40", "L40 48GB", 48.0, Some(46068)).sheet(
        datasheet(
            [864.0, 181.05, 362.0, 362.0, 0.0, 32.0],
            "NVIDIA L40 datasheet (864 GB/s; BF16 tensor 181.05, FP8 362, INT8 362, dense); \
         PCIe 4.0 x16 (64 GB/s both ways); 142 SMs (18176 CUDA cores), 2490 MHz boost (as \
         alldbin quotes them); 300 W maximum power, TSMC 4N process",
        )
        .clocks(142, 2490)
        .power(300, Process::Tsmc4N),
    ),
    // vLLM log on an L40S: "Free memory on device (43.93/44.42 GiB)".
    gpu("l40s", "L40S 48GB", 48.0, Some(46068))
        .cuda(logged_gib(4442))
        .sheet(
            datasheet(
                [864.0, 362.05, 733.0, 733.0, 0.0, 32.0],
                "NVIDIA L40S datasheet (864 GB/s; BF16 tensor 362.05, FP8 733, INT8 733, \
             dense); PCIe 4.0 x16 (64 GB/s both ways); 142 SMs (18176 CUDA cores), 2520 MHz \
             boost (as TechPowerUp's database, reproduced by a reseller, quotes them); \
             350 W maximum power, TSMC 4N process",
            )
            .clocks(142, 2520)
            .power(350, Process::Tsmc4N),
        ),
    gpu("a40", "A40 48GB", 48.0, Some(46068)).sheet(
        datasheet(
            [696.0, 149.7, 0.0, 299.3, 0.0, 32.0],
            "NVIDIA A40 datasheet (696 GB/s; BF16 tensor 149.7, INT8 299.3, dense); PCIe \
         4.0 x16 (64 GB/s both ways; the optional 2-way NVLink bridge is not counted); 84 SMs, \
         1740 MHz boost (as TechPowerUp's database, through sysrqmts, quotes them); \
         300 W maximum power, Samsung 8N process",
        )
        .clocks(84, 1740)
        .power(300, Process::Samsung8N),
    ),
    // ECC off, as the published workstation captures show; ECC on prints 46068 MiB.
    gpu(
        "rtx-6000-ada",
        "RTX 6000 Ada Generation 48GB",
        48.0,
        Some(49140),
    )
    .sheet(
        datasheet(
            [960.0, 364.2, 728.5, 728.5, 0.0, 32.0],
            "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A (RTX 6000 Ada: 960 \
         GB/s; BF16 tensor with FP32 accumulate 364.2, FP8 728.5, INT8 728.5, dense); \
         PCIe 4.0 x16; 142 SMs, 2505 MHz boost (as Hardwareluxx and cputronic quote them; \
         grafikkarten.com prints 2535); 300 W maximum power, TSMC 4N process",
        )
        .clocks(142, 2505)
        .power(300, Process::Tsmc4N),
    ),
    gpu("a6000", "RTX A6000 48GB", 48.0, None).sheet(
        datasheet(
            [768.0, 154.8, 0.0, 309.7, 0.0, 32.0],
            "NVIDIA Ampere GA102 GPU Architecture whitepaper v2, Appendix C (RTX A6000: 768 \
         GB/s; BF16 tensor with FP32 accumulate 154.8, INT8 309.7, dense); PCIe 4.0 x16 \
         (NVLink bridge not counted); 84 SMs, 1800 MHz boost (as TechPowerUp's database, \
         through sysrqmts, quotes them); 300 W maximum power, Samsung 8N process",
        )
        .clocks(84, 1800)
        .power(300, Process::Samsung8N),
    ),
    apple("m1-max-64", "Apple M1 Max 64GB (unified)", 64.0).sheet(mac(400.0, 0.0, M1_PRO_MAX)),
    apple("m1-ultra-64", "Apple M1 Ultra 64GB (unified)", 64.0).sheet(mac(800.0, 0.0, M1_ULTRA)),
    apple("m2-max-64", "Apple M2 Max 64GB (unified)", 64.0).sheet(mac(400.0, 0.0, M2_PRO_MAX)),
    apple("m2-ultra-64", "Apple M2 Ultra 64GB (unified)", 64.0).sheet(M2_ULTRA_76_SHEET),
    apple("m3-max-64", "Apple M3 Max 64GB (unified)", 64.0).sheet(mac(400.0, 0.0, M3_MAX_40)),
    apple("m4-pro-64", "Apple M4 Pro 64GB (unified)", 64.0).sheet(mac(273.0, 0.0, M4_PRO)),
    apple("m4-max-64", "Apple M4 Max 64GB (unified)", 64.0).sheet(mac(546.0, 0.0, M4_MAX_40)),
    gpu("radeon-pro-w7900", "Radeon PRO W7900 48GB", 48.0, None)
        .sheet(bandwidth_only(864.0, 32.0, W7900)),
    gpu("quadro-rtx-8000", "Quadro RTX 8000 48GB", 48.0, None)
        .pre_ampere()
        .sheet(datasheet([672.0, 130.5, 0.0, 261.0, 0.0, 16.0], QUADRO_RTX).clocks(72, 1770)),
    // ROCm shows each MI250X as two GPUs (GCDs) of 64 GB: the planner's unit is one.
    gpu(
        "mi250x",
        "Instinct MI250X GCD 64GB (ROCm; two per card)",
        64.0,
        None,
    ),
    gpu("mi210", "Instinct MI210 64GB (ROCm)", 64.0, None).sheet(bandwidth_only(
        1638.4,
        32.0,
        INSTINCT_OLD,
    )),
    gpu(
        "jetson-agx-orin-64",
        "Jetson AGX Orin 64GB (unified)",
        64.0,
        None,
    )
    .with_unified(Unified::SharedPool { total_bytes: None }),
    apple("m2-max-96", "Apple M2 Max 96GB (unified)", 96.0).sheet(mac(400.0, 0.0, M2_PRO_MAX)),
    apple("m3-max-96", "Apple M3 Max 96GB (unified)", 96.0),
    apple("m3-ultra-96", "Apple M3 Ultra 96GB (unified)", 96.0).sheet(mac(819.0, 0.0, M3_ULTRA)),
    // nvaccelinfo "Global Memory Size: 85045477376" beside nvidia-smi's 81559MiB (docs/gpu-totals.md).
    gpu("h100-pcie", "H100 PCIe 80GB", 80.0, Some(81559))
        .cuda(85_045_477_376)
        .hopper()
        .sheet(
            datasheet(
                [2000.0, 756.5, 1513.0, 1513.0, 0.0, 64.0],
                "NVIDIA H100 datasheet, PCIe column (2 TB/s; its sparse BF16 1513, FP8 3026, \
             INT8 3026 halved); PCIe 5.0 x16 (128 GB/s both ways); H100 whitepaper: 114 SMs \
             (as HPC Tech's copy of NVIDIA's table quotes it), 1755 MHz boost (hmc-tech); \
             350 W maximum power, TSMC 4N process",
            )
            .clocks(114, 1755)
            .power(350, Process::Tsmc4N),
        ),
    // Every vLLM 0.19.0 log of llm-d-planner's H100 sweep: total_memory=79.19GiB.
    gpu("h100-80", "H100 80GB", 80.0, Some(81559))
        .cuda(logged_gib(7919))
        .on_nvswitch()
        .hopper()
        .sheet(
            datasheet(
                [3350.0, 989.5, 1979.0, 1979.0, 0.0, 450.0],
                "NVIDIA H100 datasheet, SXM column (3.35 TB/s; its sparse BF16 1979, FP8 3958, \
             INT8 3958 halved); NVLink 900 GB/s total; H100 whitepaper: 132 SMs (as HPC \
             Tech's copy of NVIDIA's table quotes it), 1980 MHz boost (hmc-tech); \
             700 W maximum power, TSMC 4N process",
            )
            .clocks(132, 1980)
            .power(700, Process::Tsmc4N),
        ),
    // An A100-SXM4-80GB's torch total and a vLLM 0.31.0 log on an A100 80GB: 79.25 GiB
    // (calibration/runtime-gpus.csv).
    gpu("a100-80", "A100 80GB", 80.0, Some(81920))
        .cuda(logged_gib(7925))
        .sheet(
            datasheet(
                [2039.0, 312.0, 0.0, 624.0, 0.0, 300.0],
                "NVIDIA A100 datasheet, 80GB SXM column (2039 GB/s; BF16 tensor 312 TFLOPS, \
         INT8 624 TOPS, dense); NVLink 600 GB/s total; 108 SMs, 1410 MHz boost (as the 40GB); \
         400 W maximum power, TSMC N7 process",
            )
            .clocks(108, 1410)
            .power(400, Process::TsmcN7),
        ),
    // A vLLM 0.12.0 log on an A100 80GB PCIe: "Free memory on device (46.41/79.25 GiB)"
    // (calibration/runtime-gpus.csv).
    gpu("a100-pcie-80", "A100 80GB PCIe", 80.0, None)
        .cuda(logged_gib(7925))
        .sheet(
            datasheet(
                [1935.0, 312.0, 0.0, 624.0, 0.0, 32.0],
                "NVIDIA A100 datasheet, 80GB PCIe column (1935 GB/s; BF16 tensor 312 TFLOPS, \
         INT8 624 TOPS, dense); PCIe 4.0 x16 (the NVLink bridge not counted); 108 SMs, 1410 \
         MHz boost: the same GA100 and peak throughput as the SXM; \
         300 W maximum power, TSMC N7 process",
            )
            .clocks(108, 1410)
            .power(300, Process::TsmcN7),
        ),
    gpu("a800-80", "A800 80GB", 80.0, Some(81920)).sheet(datasheet(
        [2039.0, 312.0, 0.0, 624.0, 0.0, 200.0],
        "NVIDIA A800 datasheet, 80GB SXM column (2039 GB/s; BF16 tensor 312 TFLOPS, \
         INT8 624 TOPS, dense); NVLink 400 GB/s total",
    )),
    gpu("h100-nvl", "H100 NVL 94GB", 94.0, Some(95830))
        .hopper()
        .sheet(datasheet(
            [3900.0, 835.5, 1670.5, 1670.5, 0.0, 300.0],
            "NVIDIA H100 datasheet, H100 NVL column (3.9 TB/s; its sparse BF16 1671, FP8 \
             3341, INT8 3341 halved); NVLink bridge 600 GB/s total",
        )),
    gpu("h20", "H20 96GB", 96.0, Some(97871))
        .on_nvswitch()
        .hopper(),
    gpu(
        "rtx-pro-6000",
        "RTX PRO 6000 Blackwell 96GB",
        96.0,
        Some(97887),
    )
    .sheet(bandwidth_only(1792.0, 64.0, RTX_PRO_6000)),
    apple("m1-ultra-128", "Apple M1 Ultra 128GB (unified)", 128.0).sheet(mac(800.0, 0.0, M1_ULTRA)),
    apple("m2-ultra-128", "Apple M2 Ultra 128GB (unified)", 128.0).sheet(M2_ULTRA_76_SHEET),
    apple("m3-max-128", "Apple M3 Max 128GB (unified)", 128.0).sheet(mac(400.0, 0.0, M3_MAX_40)),
    apple("m4-max-128", "Apple M4 Max 128GB (unified)", 128.0).sheet(mac(546.0, 0.0, M4_MAX_40)),
    // AMD: "AMD Ryzen AI Max+ 395 (128GB) processor with 96GB of Variable Graphics Memory"
    // (amd.com blog, FAQs: AMD Variable Graphics Memory, 2025-07-29).
    gpu(
        "strix-halo-128",
        "Ryzen AI Max+ 395 128GB (Radeon 8060S, unified)",
        128.0,
        None,
    )
    .with_unified(Unified::CarveOut { gib: 96.0 }),
    // MemTotal 127600748 kB, which torch reports as its 121.69 GiB total (nvitop PR #208,
    // unsloth PR #10283); NVML reports no memory on GB10.
    gpu("dgx-spark", "DGX Spark (GB10) 128GB (unified)", 128.0, None)
        .with_unified(Unified::SharedPool {
            total_bytes: Some(127_600_748 * 1024),
        })
        .sheet(bandwidth_only(273.0, 0.0, DGX_SPARK)),
    gpu(
        "jetson-agx-thor",
        "Jetson AGX Thor 128GB (unified)",
        128.0,
        None,
    )
    .with_unified(Unified::SharedPool { total_bytes: None }),
    gpu(
        "mi300a",
        "Instinct MI300A 128GB (ROCm, unified)",
        128.0,
        None,
    )
    .with_unified(Unified::SharedPool { total_bytes: None }),
    gpu("h200", "H200 141GB", 141.0, Some(143771))
        .on_nvswitch()
        .hopper()
        .sheet(
            datasheet(
                [4800.0, 989.5, 1979.0, 1979.0, 0.0, 450.0],
                "NVIDIA H200 datasheet, SXM column (4.8 TB/s; its sparse BF16 1979, FP8 3958, \
             INT8 3958 halved); NVLink 900 GB/s total; the H100 SXM's GH100 at its 132 SMs and \
             1980 MHz boost (the datasheet states neither; kernel write-ups measured on the card \
             quote 132 SMs and a maximum SM clock of 1980 MHz)",
            )
            .clocks(132, 1980),
        ),
    apple("m2-ultra-192", "Apple M2 Ultra 192GB (unified)", 192.0).sheet(M2_ULTRA_76_SHEET),
    // "183,359 MiB in nvidia-smi and 178.35 GiB through CUDA" (docs/gpu-totals.md).
    gpu("b200", "B200 180GB", 180.0, Some(183359))
        .cuda(logged_gib(17835))
        .on_nvswitch()
        .sheet(datasheet(
            [7700.0, 2250.0, 4500.0, 4500.0, 9000.0, 900.0],
            "NVIDIA Blackwell datasheet, HGX B200 per GPU (180 GB, 7.7 TB/s; its sparse \
             BF16 4.5, FP8 9, INT8 9, FP4 18 PFLOPS halved); NVLink 1.8 TB/s total",
        )),
    // rocm-smi's "VRAM Total Memory (B)": 206141652992 B on bare metal.
    gpu(
        "mi300x",
        "Instinct MI300X 192GB (ROCm)",
        192.0,
        Some(196592),
    )
    .sheet(datasheet(
        [5300.0, 1307.4, 2614.9, 2614.9, 0.0, 448.0],
        "AMD Instinct MI300X datasheet (5.3 TB/s; FP16/BF16 1307.4, FP8 2614.9, INT8 \
         2614.9, dense); Infinity Fabric 7 links x 128 GB/s = 896 GB/s total",
    )),
    apple("m3-ultra-256", "Apple M3 Ultra 256GB (unified)", 256.0).sheet(mac(819.0, 0.0, M3_ULTRA)),
    gpu("mi325x", "Instinct MI325X 256GB (ROCm)", 256.0, None).sheet(datasheet(
        [6000.0, 1307.4, 2614.9, 2614.9, 0.0, 448.0],
        "AMD Instinct MI325X datasheet (6 TB/s; FP16/BF16 1307.4, FP8 2614.9, INT8 \
         2614.9, dense); Infinity Fabric 7 links x 128 GB/s = 896 GB/s total",
    )),
    gpu("mi355x", "Instinct MI355X 288GB (ROCm)", 288.0, None),
    apple("m3-ultra-512", "Apple M3 Ultra 512GB (unified)", 512.0).sheet(mac(819.0, 0.0, M3_ULTRA)),
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

    /// A sheet tells whether a card multiplies fp8 only where it states tensor throughput: the
    /// RTX 4070 Ti's sheet was read for its bandwidth alone, and Ada has fp8 tensor cores.
    #[test]
    fn an_fp8_path_is_known_only_from_a_sheet_that_states_throughput() {
        let path = |id| find(id).unwrap().has_fp8_tensor_path();
        assert_eq!(path("rtx-4090"), Some(true));
        assert_eq!(path("h100-80"), Some(true));
        assert_eq!(path("rtx-3090"), Some(false));
        assert_eq!(path("a100-80"), Some(false));
        assert_eq!(path("rtx-4070-ti"), None);
        assert_eq!(path("rtx-3080-ti"), None);
    }

    /// The derived fp32 (CUDA cores) and dense TF32 peaks against the figures NVIDIA states, in
    /// TFLOPS: (card, fp32, tf32, source). The A10's sheet states 31.2 fp32, but the catalogue
    /// has no SM count or clock for it, so it derives none; Volta and Turing have no TF32.
    #[test]
    fn derived_fp32_and_tf32_peaks_match_the_stated_ones() {
        for (id, fp32, tf32, source) in [
            ("a100-80", 19.5, 156.0, "A100 datasheet (SXM)"),
            ("h100-80", 66.9, 494.7, "H100 whitepaper, Table 3 (SXM5)"),
            ("rtx-4090", 82.6, 82.6, "Ada whitepaper v2.1, Appendix A"),
            ("rtx-3090", 35.6, 35.6, "GA102 whitepaper v2, Appendix A"),
            ("l40s", 91.6, 183.0, "L40S datasheet (TF32 366 sparse)"),
            (
                "rtx-6000-ada",
                91.1,
                182.1,
                "Ada whitepaper v2.1, Appendix A",
            ),
            ("a10", 0.0, 62.5, "A10 datasheet (TF32 125 sparse)"),
            ("v100-32", 15.7, 0.0, "V100 datasheet (SXM2)"),
            ("t4", 8.1, 0.0, "T4 datasheet"),
        ] {
            let g = find(id).unwrap();
            for (got, stated) in [(g.fp32_flops_per_s(), fp32), (g.tf32_flops_per_s(), tf32)] {
                let off = if stated == 0.0 {
                    got
                } else {
                    (got / 1e12 / stated - 1.0).abs()
                };
                assert!(off < 0.015, "{id}: {got:e} against {stated} ({source})");
            }
        }
        // No SMs or clock on the sheet, another maker, or a pre-Volta card the catalogue cannot
        // place: no fp32 peak.
        for id in ["mi300x", "m2-ultra-192", "arc-b580", "tesla-p40", "b200"] {
            assert_eq!(find(id).unwrap().fp32_flops_per_s(), 0.0, "{id}");
        }
    }

    #[test]
    fn cards_below_turing_are_marked_and_are_older_than_ampere() {
        // Compute capability 7.0 (V100), 6.1 (P40), 5.2 (M40) below vLLM's fp8 minimum of 7.5;
        // Turing (T4, RTX 2080 Ti: 7.5) is not.
        let pre_turing = |id| find(id).unwrap().pre_turing;
        for id in ["v100-16", "v100-32", "tesla-p40", "tesla-m40-24"] {
            assert!(pre_turing(id) && find(id).unwrap().pre_ampere, "{id}");
        }
        assert!(!pre_turing("t4") && !pre_turing("rtx-2080-ti") && !pre_turing("a100-80"));
    }

    /// Metal's working set as llama.cpp's Metal init logged it: (the Mac's memory in GB, the
    /// figure as printed, its unit, the log). Builds of 2023 print MiB (the allocation lines'
    /// `(used / limit)`, always MiB, repeat the figure); later ones print
    /// `recommendedMaxWorkingSetSize / 1e6`.
    const LOGGED: &[(u64, &str, f64, &str)] = &[
        (
            8,
            "5461.34",
            MIB as f64,
            "li-plus/chatglm.cpp#76, M2 MacBook Air 8 GB (ggml_metal_add_buffer's limit)",
        ),
        (
            16,
            "10922.67",
            MIB as f64,
            "ise-uiuc/magicoder#19, MacBook Air M1 16 GB (ollama's llama.cpp, 2023-12)",
        ),
        (
            16,
            "10922.67",
            MIB as f64,
            "abetlen/llama-cpp-python#687, M1 Pro 16 GB",
        ),
        (
            16,
            "11453.25",
            1e6,
            "ggml-org/ci llama.cpp/73/3c2d6191e3bee836af72ede2dad46852816566/ggml-100-mac-m4 (M4)",
        ),
        (
            24,
            "17179.89",
            1e6,
            "llama.cpp b8999 on an M4 Pro 24 GB (a published setup guide)",
        ),
        (
            32,
            "21845.34",
            MIB as f64,
            "ollama/ollama#434 (M2 Max 32 GB), ggml-org/llama.cpp#2011 (M1 Max 32 GB)",
        ),
        (
            36,
            "28991.03",
            1e6,
            "llama.cpp b7690 on an M4 Max (27 GiB: 36 GB is the one M4 Max size it fits)",
        ),
        (
            48,
            "38654.71",
            1e6,
            "llama.cpp b3892 on an M3 Max, macOS 14 (36 GiB: 48 GB is the one M3 Max size it fits)",
        ),
        (
            64,
            "49152.00",
            MIB as f64,
            "a llama-cpp-python 2023 log (llama_chat README, M2 Mac)",
        ),
        (
            96,
            "73728.00",
            MIB as f64,
            "ggml-org/llama.cpp#3213, M2 Max 96 GB (printed 73728,00)",
        ),
        (
            128,
            "103079.22",
            1e6,
            "llama.cpp b2688 on an M3 Max, macOS 14 (96 GiB: 128 GB is the one M3 Max size it fits)",
        ),
    ];

    #[test]
    fn the_working_set_rule_reproduces_each_logged_figure() {
        for &(gb, logged, unit, source) in LOGGED {
            let limit = apple_working_set(Bytes(gb * GIB));
            assert_eq!(format!("{:.2}", limit.0 as f64 / unit), logged, "{source}");
        }
    }

    #[test]
    fn macs_are_unified_and_budget_their_working_set() {
        let mac = find("m4-max-64").unwrap();
        assert!(mac.is_unified());
        assert_eq!(mac.capacity(), Bytes(48 * GIB));
        assert_eq!(mac.shared_memory(), Some(Bytes(64 * GIB)));
        // iogpu.wired_limit_mb replaces the limit (antirez/ds4 PR #893: 114688 reads 112.00 GiB).
        let wired = Bytes(114_688 * MIB);
        assert_eq!(
            find("m4-max-128").unwrap().capacity_under(Some(wired)),
            wired
        );
        // On a 32 GB M1 Max, 26000 makes llama-server list `MTL0: Apple M1 Max
        // (26000 MiB, 25999 MiB free)` (AlexsJones/llmfit#570), above the 21845.34 MiB default.
        let raised = Bytes(26_000 * MIB);
        assert_eq!(
            find("m1-max-32").unwrap().capacity_under(Some(raised)),
            raised
        );
        assert_eq!(
            find("rtx-4090").unwrap().capacity_under(Some(wired)),
            Bytes(24564 * MIB)
        );
        assert!(!find("rtx-4090").unwrap().is_unified());
        assert_eq!(find("strix-halo-128").unwrap().capacity(), Bytes(96 * GIB));
        for g in GPUS
            .iter()
            .filter(|g| g.id.starts_with('m') && g.name.starts_with("Apple"))
        {
            assert_eq!(g.unified, Some(Unified::AppleWorkingSet), "{}", g.id);
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

    /// A stated SM count comes with a boost clock, only on NVIDIA cards, and agrees with the
    /// sheet's dense 16-bit throughput: 512, 1,024 or 2,048 FLOPs per SM per cycle (GeForce
    /// with FP32 accumulate, Ada and GA102 workstation cards, GA100). The H100s' datasheet
    /// figures imply 4,096 at clocks below the boost they are read at: the PCIe's 756.5 at 1,620
    /// MHz (boost 1,755), the SXM's 989.5 at 1,830 MHz (boost 1,980).
    #[test]
    fn sm_counts_and_clocks_agree_with_the_tensor_throughput() {
        for g in GPUS {
            let Some(d) = g.datasheet else { continue };
            assert_eq!(d.sms > 0, d.boost_mhz > 0, "{}", g.id);
            if d.sms == 0 {
                continue;
            }
            assert!(!g.is_amd() && !g.is_mac(), "{}", g.id);
            assert!((1000..3000).contains(&d.boost_mhz), "{}", g.id);
            if d.half_flops_per_s == 0.0 || g.hopper {
                continue;
            }
            let per_sm_cycle =
                d.half_flops_per_s / (f64::from(d.sms) * f64::from(d.boost_mhz) * 1e6);
            let nearest = [512.0, 1024.0, 2048.0]
                .into_iter()
                .map(|f: f64| (per_sm_cycle / f - 1.0).abs())
                .fold(f64::MAX, f64::min);
            assert!(nearest < 0.015, "{}: {per_sm_cycle:.0} per SM-cycle", g.id);
        }
    }

    #[test]
    fn datasheets_are_dense_and_sane() {
        for g in GPUS {
            let Some(d) = g.datasheet else { continue };
            assert!(d.memory_bytes_per_s > 0.0, "{}", g.id);
            // A throughput of 0 is "not published" (most Macs) or "not read" (the bandwidth-only
            // sheets), and then in every format.
            if d.half_flops_per_s == 0.0 {
                assert_eq!(
                    d.int8_ops_per_s + d.fp8_flops_per_s + d.fp4_flops_per_s,
                    0.0,
                    "{}",
                    g.id
                );
            }
            // Only a device whose CPU and GPU share one memory has no link to cross.
            assert_eq!(d.link_bytes_per_s > 0.0, !g.is_unified(), "{}", g.id);
            assert!(!d.source.is_empty(), "{}", g.id);
            // Dense fp8 is twice dense 16-bit on Ada, Hopper, Blackwell and CDNA 3. The L40S
            // datasheet prints 733 fp8 beside 362.05 bf16 (2.02x), hence the 2% slack.
            assert!(
                d.fp8_flops_per_s <= 2.0 * d.half_flops_per_s * 1.02,
                "{}: fp8 {} > 2 x half {}",
                g.id,
                d.fp8_flops_per_s,
                d.half_flops_per_s
            );
            // A sparse figure slipped in would put 16-bit at or above int8.
            if d.int8_ops_per_s > 0.0 {
                assert!(d.int8_ops_per_s > d.half_flops_per_s, "{}", g.id);
            }
            let blackwell = matches!(
                g.id,
                "rtx-5070" | "rtx-5070-ti" | "rtx-5080" | "rtx-5090" | "rtx-pro-6000" | "b200"
            );
            // A Blackwell sheet with throughput has fp4; a bandwidth-only one has none.
            assert_eq!(
                d.fp4_flops_per_s > 0.0,
                blackwell && d.half_flops_per_s > 0.0,
                "{}: fp4 only on Blackwell",
                g.id
            );
        }
    }

    #[test]
    fn the_cards_the_docs_use_have_datasheets() {
        for id in [
            "rtx-4090", "rtx-3090", "a100-80", "h100-80", "h200", "l4", "t4",
        ] {
            assert!(find(id).unwrap().datasheet.is_some(), "{id}");
        }
        let h100 = find("h100-80").unwrap().datasheet.unwrap();
        assert_eq!(h100.half_flops_per_s, 989.5e12);
        assert_eq!(h100.link_bytes_per_s, 450e9);
        let rtx4090 = find("rtx-4090").unwrap().datasheet.unwrap();
        assert_eq!(rtx4090.half_flops_per_s, 165.2e12);
        assert_eq!(rtx4090.memory_bytes_per_s, 1008e9);
    }

    #[test]
    fn a_geforce_card_accumulates_fp16_at_twice_its_fp32_accumulate_rate() {
        assert_eq!(
            find("rtx-4090").unwrap().fp16_accumulate_flops_per_s(),
            330.4e12
        );
        assert_eq!(
            find("a100-80").unwrap().fp16_accumulate_flops_per_s(),
            312e12
        );
        assert_eq!(
            find("m1-max-64").unwrap().fp16_accumulate_flops_per_s(),
            0.0
        );
    }

    /// Each Mac's bandwidth is its chip variant's (M3 Max 36GB: the 30-core GPU at 300GB/s; M4
    /// Max 36GB: the 32-core GPU at 410GB/s), whatever its memory size; only the 76-core M2 Ultra
    /// carries a throughput Apple states.
    #[test]
    fn macs_carry_their_chip_variants_bandwidth() {
        let sheet = |id: &str| find(id).unwrap().datasheet;
        for (id, gb_s, tflops) in [
            ("m1-pro-16", 200.0, 0.0),
            ("m1-max-64", 400.0, 0.0),
            ("m1-ultra-128", 800.0, 0.0),
            ("m2-24", 100.0, 0.0),
            ("m2-max-96", 400.0, 0.0),
            ("m2-ultra-192", 800.0, 27.2),
            ("m3-pro-36", 150.0, 0.0),
            ("m3-max-36", 300.0, 0.0),
            ("m3-max-48", 400.0, 0.0),
            ("m3-ultra-512", 819.0, 0.0),
            ("m4-32", 120.0, 0.0),
            ("m4-pro-64", 273.0, 0.0),
            ("m4-max-36", 410.0, 0.0),
            ("m4-max-128", 546.0, 0.0),
        ] {
            let d = sheet(id).unwrap();
            assert_eq!(d.memory_bytes_per_s, gb_s * 1e9, "{id}");
            assert_eq!(d.half_flops_per_s, tflops * 1e12, "{id}");
            assert_eq!(d.link_bytes_per_s, 0.0, "{id}");
        }
        // Apple states no M1 bandwidth figure, and no page read names the 96GB M3 Max's variant.
        for id in ["m1-8", "m1-16", "m3-max-96"] {
            assert!(sheet(id).is_none(), "{id}");
        }
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
