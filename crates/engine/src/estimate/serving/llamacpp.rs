//! llama.cpp (also what ollama and LM Studio run): a GGUF file's tensors in llama-quantize's
//! per-tensor mix, placed by `-ngl` between the GPU and system RAM, and the buffers llama.cpp
//! allocates at start (the `model buffer`, `KV buffer`, `compute buffer` and `output buffer`
//! lines of its log).
//!
//! - Placement (`load_tensors`, src/llama-model.cpp): `-ngl k` puts the output layer and the
//!   last `k − 1` blocks on the GPU (since PR #18148, December 2025; before it the last `k`
//!   blocks, and the output layer only when `k` exceeds the blocks: `offload-output`);
//!   `token_embd` always stays in system RAM; `--n-cpu-moe N` keeps the routed experts of the
//!   first N blocks there too. Several GPUs split the offloaded blocks by layer
//!   (`--split-mode layer`, the default).
//! - KV cache (src/llama-kv-cache.cpp, llama-kv-cache-iswa.cpp): `n_ctx` padded to 256 cells,
//!   one stream with `--kv-unified`, else one per slot of `⌈n_ctx / N⌉` padded; per layer
//!   `cells × (n_embd_k_gqa × size(type_k) + n_embd_v_gqa × size(type_v))`, MLA keeps K only
//!   (`kv_lora_rank + n_rot`); a sliding-window layer keeps `PAD(min(cells, window × sequences
//!   in the stream + n_ubatch), 256)` cells per stream; each layer's cache sits on its layer's
//!   device. Recurrent layers keep `R` and `S` in f32 per slot.
//! - Compute buffer: the high-water mark of ggml-alloc over the worst-case graph of
//!   `u = min(n_ctx, n_ubatch)` tokens attending over every cell of a stream (`sched_reserve`),
//!   the largest of
//!   - the output device's logits beside the final norm, `4·rows·(V + E)` (`rows` = `u`, or
//!     the slots for llama-server since b9460: `logit-rows`): ggml-alloc.c's
//!     `ggml_gallocr_allocate_node` (ggml@8a7be58d, 2024, and ggml@d99724f2, 2026) runs
//!     `rms_norm` and `mul` in place (`ggml_op_can_inplace`), so the output norm takes over the
//!     last layer's output, whose `l_out` add already took over `ffn_down`'s block; only
//!     `result_norm` (an output since `set_outputs`, still alive either way) sits under the
//!     logits. Replaying the allocator over Llama-3-8B's graph gives 258.50 MiB at u 512, what
//!     llama-044 logs, for the 2024 silu + mul FFN and the 2025 `swiglu` alike. ik_llama.cpp's
//!     4u(V + 2E) (its issue #103) comes from its `ggml_fused_rms_norm`, which its
//!     `ggml_op_can_inplace` does not list, so the norm cannot reuse `l_out`;
//!   - a layer's working set, `4u(2E + 3F) + 2·mask` with flash attention (the f16 mask is
//!     `mask = cells·u` values), or `4·mask·(H + 1) + 16uE` without, plus `4u(E_q + E_kv)`
//!     for a fused QKV projection (Phi-3's `attn_qkv`): src/models/phi3.cpp (@a0b8c172) ropes
//!     Q and K as views of the fused output, and ggml-alloc.c's `ggml_gallocr_allocate_node`
//!     (@0450e2f9) runs an op in place on a view only when its source has that one view and
//!     the view starts at offset 0, so the roped Q and K are new tensors allocated while the
//!     fused output is alive; its freed block is too small for the scores allocated after it
//!     (llama-009 is exact with it). Not added with flash attention, where no log of a fused
//!     model has measured it;
//!   - with flash attention before PR #23764 (`kq-mask=f32`), the mask's cast,
//!     `6·mask + 4u(2E + E_q)` (what a long context peaks at; `E_q` = heads × head_dim).
//!     Since that PR (merged 2026-05-27) the host writes the mask in f16 and nothing casts it,
//!     so the layer's `4u(2E + 3F) + 2·mask` is the peak (llama-048, b11151 on ROCm, is exact).
//!     Before it, ggml-alloc allocates the graph's inputs first, so the token embeddings (4uE)
//!     and the f32 mask copied from the host (4·mask) lie below everything computed. The f16 cast (2·mask) is made by `build_attn_inp_kv`
//!     (src/llama-graph.cpp@434f71a5) but enters the graph only through the first attention
//!     layer's `flash_attn_ext(q, k, v, mask)` (`src[3]`, ggml.c), which `build_attn` reaches
//!     after expanding the roped Q and the K and V stores, so it is allocated above that
//!     layer's earlier tensors: the roped Q (4u·E_q) and one hidden-wide block (4uE): in a
//!     Llama layer 0 the attention norm's, freed under Q once Q, K and V are projected; in a
//!     hybrid whose first attention layer follows recurrent ones (Qwen3.5), the residual, the
//!     norm then reusing the embeddings' freed block. Replaying ggml-alloc.c's rules (as for
//!     the logits) over Llama-3-8B's layer 0 and over a hybrid's first attention layer (the
//!     recurrent layers before it not replayed: its residual taken as the first block above
//!     the inputs) gives `4u(E + E_q)` above `6·mask + 4uE` at every cell count and shape tried.
//!     Under an attention output gate (Qwen3.5, src/models/qwen35.cpp@1af4a799) the fused
//!     Q+gate projection (8u·E_q) stays alive too, for the gate applied after attention (the
//!     replay with it gives 808.01 MiB where llama-042 logs 808.02);
//!   - a CPU-resident weight that ggml-cuda copies to the GPU to run its matmul when the ubatch
//!     has 32 tokens or more (`offload_op`): the largest CPU block's weight with the matmul's
//!     input and output, or an output layer left on the CPU with its logits.
//!
//!   Vulkan keeps both masks allocated under the logits and the layers (log-derived: llama-035
//!   is exact with it). ROCm is ggml-cuda built for HIP (ggml/src/ggml-hip/CMakeLists.txt
//!   @047c7744 compiles `../ggml-cuda/*.cu`) and takes CUDA's rules (llama-050, an RX 7900 XTX,
//!   is exact). The host holds the inputs, the mask and `4uE`
//!   (calibration/runtime-logs.csv; `cargo xtask accuracy` prints the GPU median).
//! - Output buffer (`output_reserve`): `n_vocab × slots × 4` bytes in pinned host memory.

use super::llamacpp_fit;
use super::llamacpp_rules::{self, Rule, Rules};
use super::{
    Build, Deployment, Facts, Flag, Host, Launch, LoggedFigure, PoolWords, Reads, Requests,
    RuntimeRules, RuntimeSpeed, Serving, Setting, Settings, When, Write,
};
use crate::dtype::{Dtype, FP32_BYTES};
use crate::estimate::formula::{Formula, Fx};
use crate::estimate::links::Parallel;
use crate::estimate::overhead;
use crate::estimate::speed::{Clocked, Efficiency, SmCeiling, TensorPath};
use crate::estimate::stack::{Component, Stack};
use crate::estimate::ComponentId;
use crate::estimate::LogFigure;
use crate::gpu_catalogue::{Datasheet, Gpu, Process};
use crate::model::{Architecture, Block, Projection};
use crate::runtime::{ContextLength, GpuBackend, KqMask, LogitRows, OffloadOutput, Runtime};
use crate::scenario::{Codec, FieldError, Group, Proportions};
use crate::scenario::{Resolved, Scenario};
use crate::units::{Bytes, Units, MIB};
use std::ops::Range;
use vramfit_gguf::quantize::{NameRules, NamedTensor, QuantModel, QuantTensor};
use vramfit_gguf::GgmlType;

pub(super) struct LlamaCpp;

/// llama.cpp's CUDA backend. Decode: a step reads the file at a share of the card's bandwidth and
/// takes a fixed time besides, launching and synchronising its kernels. Both were set together, by
/// least squares of the step time's relative error (linear in the share's inverse and the time; not
/// the rate's, which runs to the peak), from the CUDA scoreboard's `tg128` rows for Llama 2 7B Q4_0
/// (discussion #15013) and PR #4766's F16 and Q8_0 rows on an RTX 4090
/// (calibration/speed-measured.csv; the `fit` rows of speed-scenarios.csv): 97% of the bandwidth
/// and 2.1 ms a step. The rows that run these constants today are the scoreboard's ten on Ampere
/// and newer (the V100's takes [`LLAMA_CPP_CUDA_PRE_AMPERE`], PR #4766's the 2024 builds'): the
/// same rule on them runs past the peak (110.6% and 2.38 ms), so the share is held at the
/// datasheet's peak and the time refitted beside it: 100% and 2.096 ms (65.5
/// µs over 32 layers). The fixed time is why a bandwidth share alone read the H100 at 51% and the
/// RTX 4080 at 75%: on a fast card the same 3.8 GB take less time and the launches more of it. It
/// is taken per layer, 65.5 µs (over those rows' 32 layers): Llama's decode graph has 22 nodes a
/// layer (19 with flash attention) and about 4 a step (`build_attn`, `build_attn_mha`,
/// src/llama-graph.cpp, ggml-org/llama.cpp@00395eb2; src/models/llama.cpp @069be0ae), each its own
/// kernel but the few ggml-cuda fuses (`ggml_cuda_can_fuse`), and a CUDA graph saves the host's
/// launches but still runs each kernel, so the time follows layers. The dense rows, all 32 layers,
/// cannot split it; the MoE rows below (24, 36 and 48 layers), refitted with the experts' share,
/// put 95–100% of it per layer (their squared relative error 0.473 all per step, 0.4375 all per
/// layer). With the fixed time taken out the rows reach from 59.2% of the bandwidth (the A100,
/// speed-248) to the peak, and beside its reads at the peak the RTX 5090's row (speed-160) leaves
/// 40.6 µs a layer (1.3 ms over 32); the speed band is their spread with every other backend's
/// ([`crate::estimate::SPEED_SPREAD`]). Prefill through cuBLAS in
/// fp16: 90% of the RTX 4090's fp16 peak for an F16 file (PR #4766, `pp 512` 11,048 t/s), 65% for
/// quantized files when they were dequantized for cuBLAS (the same PR), 33% on a V100, whose
/// quantized matmuls have no int8 tensor cores (the scoreboard). The other runtimes take these
/// until calibration/ holds their own measurements. A mixture of experts' routed experts are read
/// at 61% of the bandwidth (30% to the peak): `ggml_cuda_mul_mat_id`
/// (ggml/src/ggml-cuda/ggml-cuda.cu) sends a batch of up to `MMVQ_MAX_BATCH_SIZE` tokens to
/// `ggml_cuda_mul_mat_vec_q` with the `ids` tensor, one grid slice per chosen expert, each a small
/// matrix (gpt-oss: 2880 × 2880) that fills the card less than a dense layer's, beside the router's
/// top-k, softmax and weighting kernels. Set by least squares of the step time's relative error
/// (as the bandwidth share and the time per layer are), with the constants above fixed, on every
/// other MoE decode row of speed-scenarios.csv in its order (14 rows: gpt-oss-20b and -120b,
/// Qwen3-30B-A3B, on the RTX 5090, RTX 4080 Super, RTX 5070 Ti, RTX PRO 6000 and DGX Spark): 61.5%.
/// It had been 53%, the least squares of the rate's relative error, a reading that weighs the rows
/// read fast (the DGX Spark's b6761 runs) more than those read slow. Ten of the rows are the DGX
/// Spark's, whose dense rows also read 12–23% fast; the slowest (speed-820, build b6761) leaves
/// 30%.
pub const LLAMA_CPP_CUDA: Efficiency = Efficiency {
    bandwidth: 1.0,
    attention: 1.0,
    experts: 0.61,
    compute: 0.65,
    layer_s: 65.5e-6,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// The nodes of one layer of Llama's decode graph (src/models/llama.cpp @069be0ae; `build_attn`,
/// `build_attn_mha` and `build_ffn` in src/llama-graph.cpp @00395eb2): `rms_norm` and its `mul`,
/// the Q, K and V matmuls, two `rope`s, two `set_rows` into the cache, K·Q, `soft_max_ext`,
/// V·KQ and a `cont`, the output matmul, a residual `add`, the FFN's `rms_norm`, `mul`, up and
/// gate matmuls, `swiglu`, down matmul and another `add`.
const LAYER_NODES: f64 = 22.0;

/// The same layer under flash attention: one `flash_attn_ext` in place of K·Q, `soft_max_ext`,
/// V·KQ and `cont`.
const LAYER_NODES_FLASH_ATTN: f64 = 19.0;

/// The CPU backend's time per node of a decode step, beside the bytes it reads: ggml-cpu's
/// `ggml_graph_compute_thread` (ggml/src/ggml-cpu/ggml-cpu.c, ggml-org/llama.cpp@1b5f9501) runs
/// each node on all its threads and has them meet at `ggml_barrier` before the next. test-barrier's
/// graph of small nodes, where the barriers dominate, took 2.07 µs a node on 8 threads (PR #9461,
/// 2024-09) and 1.96–3.16 µs on 4 and 8 threads of an EPYC (PR #9598). Not fitted: no fit row keeps a layer on the CPU.
const CPU_NODE_S: f64 = 2.07e-6;

/// A layer llama.cpp keeps on the CPU (`-ngl` below all): its nodes at the CPU's time per node. The
/// GPU runs none of them, so the layer adds no GPU time of its own; what crossing between the
/// two costs (at each end of the CPU's run of layers, `ggml_backend_sched_compute_splits` in
/// ggml/src/ggml-backend.cpp, ggml-org/llama.cpp@5bc7a740, waits for the backend that wrote a
/// split's input and copies it: one activation vector) has no cited figure and is not charged.
const CPU_LAYER_S: f64 = LAYER_NODES * CPU_NODE_S;

/// A backend's decode under flash attention: each layer launches 19 kernels where it launched
/// 22, so its fixed time per layer (in seconds, or in cycles where clocked; on the CPU, per node)
/// is 19/22 of the time the constants were set at without it. The ratio is the source's, not fitted; a mixture
/// of experts' layer has more nodes (its router), so it overstates their saving a little. The
/// ten fit rows run with `-fa 1` (the DGX Spark's, b6761 and b6918) barely tell it apart: when it
/// was adopted, with the experts' share then refitted beside it, the squared relative error of
/// CUDA's 14 MoE fit rows went from 0.43893 to 0.43802 (docs/speed-calibration.md, "A fixed time
/// per layer").
fn with_flash_attention(eff: Efficiency) -> Efficiency {
    let scale = |t: f64| t * LAYER_NODES_FLASH_ATTN / LAYER_NODES;
    Efficiency {
        layer_s: scale(eff.layer_s),
        cpu_layer_s: scale(eff.cpu_layer_s),
        clocked: eff.clocked.map(|c| Clocked {
            layer_cycles: scale(c.layer_cycles),
            ..c
        }),
        ..eff
    }
}

/// llama.cpp's CUDA backend on a card older than Ampere (`Gpu::pre_ampere`), where ggml-cuda
/// captures no CUDA graph: `ggml_backend_cuda_graph_compute` sets `disable_due_to_gpu_arch` below
/// `GGML_CUDA_CC_AMPERE` (ggml/src/ggml-cuda/ggml-cuda.cu, as at the scoreboards' 2025 builds), so
/// every kernel of a step is launched from the host. The kernels are CUDA's, so only the fixed time
/// changes: 3.53 ms a step, [`LLAMA_CPP_CUDA`]'s 2.096 ms plus the 1.43 ms the one fit row on such
/// a card (the V100's `tg128`, speed-194) leaves beside CUDA's reads and step time, taken per layer
/// as CUDA's is (110 µs, over its 32 layers): each kernel launched from the host. That row was
/// among those CUDA's constants were first fitted on; they were refitted without it. PR #25749 (opened 2026-07-16, its first build not pinned
/// here) captures graphs on Volta and Turing too; builds after it read those cards slower than they
/// run.
pub const LLAMA_CPP_CUDA_PRE_AMPERE: Efficiency = Efficiency {
    layer_s: 110e-6,
    ..LLAMA_CPP_CUDA
};

/// llama.cpp's Metal backend, the one it runs on Apple GPUs. Decode: the `tg128` rows of
/// discussion #4167 (Llama 2 7B in F16, Q8_0 and Q4_0 on the M1 Pro to M4 Max,
/// calibration/speed-measured.csv speed-010 to speed-158), fitted as CUDA's are, by least squares
/// of the step time's relative error: 92.9% of the bandwidth Apple states and 6.04 ms a step
/// (188.7 µs over 32 layers), held at 93% (the share rounded to a point) 6.05 ms, 189 µs a layer;
/// before that check 93% and 6.0 ms. The fixed time is what made a bandwidth share alone
/// fall from 83% for F16 on one die to 36% for Q4_0 on the 48-core M1 Ultra (speed-038): the
/// fewer bytes a step reads and the faster the chip, the more of the step the fixed time is. With
/// the fixed time taken out the rows reach from 64.5% (speed-038) to the peak, and the M3 Max's
/// Q4_0 row (speed-110) leaves 156 µs a layer (5.0 ms over 32) beside its reads at the peak. Taken per layer as
/// [`LLAMA_CPP_CUDA`]'s is; ggml-metal encodes the same graph's nodes, one dispatch
/// each. The three MoE fit rows (gpt-oss-20b, 24 layers) refitted with the experts' share put
/// all of it per layer or more (squared relative error 0.0389 per step, 0.0197 per layer;
/// the 2024 builds' 8B and 70B rows found the same, [`LLAMA_CPP_METAL_2024`]).
/// Prefill keeps CUDA's shares: the only Apple rows with a stated throughput (the 76-core M2
/// Ultra's pp512, speed-085/087/089) lie within 8% of them. Routed experts are read through
/// `kernel_mul_mv_id` (ggml/src/ggml-metal/ggml-metal.metal) at 65% (53% to the peak), set as
/// CUDA's, by least squares of the step time's relative error, on every other Apple MoE decode
/// row (gpt-oss-20b on the M3 Ultra, M4 Max, M1 Pro), with 189 µs a layer: 64.6% (61% by the
/// rate's relative error; 79% with 6.0 ms a step).
pub const LLAMA_CPP_METAL: Efficiency = Efficiency {
    bandwidth: 0.93,
    attention: 0.93,
    experts: 0.65,
    compute: LLAMA_CPP_CUDA.compute,
    layer_s: 189e-6,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// llama.cpp's CUDA backend built through HIP (ROCm) on a Radeon (RDNA, 32-lane wavefronts). Its
/// decode kernels are CUDA's compiled by hipcc with their own launch geometry: `mul_mat_vec_q`
/// takes its warps and rows per block from the RDNA table of ggml/src/ggml-cuda/mmvq.cu
/// (`get_device_table_id`, ggml-org/llama.cpp@000f4625: one 32-lane warp a block at batch 1,
/// where NVIDIA's generic table runs four), so its share is its own. Fitted as CUDA's, by least
/// squares of the relative error, on the ROCm scoreboard's `tg128` rows for Llama 2 7B Q4_0
/// (discussion #15021) on every other Radeon in speed-measured.csv's order (RX 7900 XTX, RX 9070,
/// Radeon AI PRO R9700; the `fit` rows of speed-scenarios.csv): no fixed time, as two of the three
/// read at one bandwidth (640 GB/s) and cannot tell a fixed time from a lower share (least
/// squares of the step time's relative error puts it at −33 µs a layer, which no launch takes, so
/// it is held at none), and 64% of the bandwidth by the same rule beside it (63.7%; 62% by the
/// rate's relative error, the reading it was first set by); where one is fitted (the Instinct cards', below) it is per layer, as CUDA's is,
/// since the HIP build is ggml-cuda's own code. The fit rows reach from 55% (the R9700) to the
/// peak. Prefill keeps CUDA's shares; AMD states no dense
/// matrix throughput for these cards, so none is predicted.
pub const LLAMA_CPP_ROCM: Efficiency = Efficiency {
    bandwidth: 0.64,
    attention: 0.64,
    experts: 0.64,
    compute: LLAMA_CPP_CUDA.compute,
    layer_s: 0.0,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// llama.cpp's HIP build on an Instinct card (GCN and CDNA, 64-lane wavefronts), where
/// `mul_mat_vec_q` runs the GCN table of the same mmvq.cu (two 64-lane warps a block at batch
/// 1). Fitted as [`LLAMA_CPP_ROCM`] on every other Instinct card of the ROCm scoreboard in
/// speed-measured.csv's order (MI210, MI50): 67% of the bandwidth and 4.6 ms a step. Both rows
/// reach 67% with that time taken out. Taken per
/// layer as [`LLAMA_CPP_CUDA`]'s is, 144 µs (4.6 ms over the rows' 32 layers): the HIP build
/// compiles ggml-cuda's sources (`GGML_SOURCES_ROCM` globs `../ggml-cuda/*.cu`,
/// ggml/src/ggml-hip/CMakeLists.txt, ggml-org/llama.cpp@a04f285f), so it launches a kernel per
/// node of the same graph, without HIP graphs unless built with `GGML_HIP_GRAPHS`. Its rows
/// cannot tell per layer from per step; CUDA's and Metal's MoE rows can, and found per layer.
pub const LLAMA_CPP_ROCM_WAVE64: Efficiency = Efficiency {
    bandwidth: 0.67,
    attention: 0.67,
    experts: 0.67,
    compute: LLAMA_CPP_CUDA.compute,
    layer_s: 4.6e-3 / SCOREBOARD_LAYERS,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// llama.cpp's Vulkan backend (`gpu-backend=vulkan`), on any maker's card: its own shaders
/// (ggml/src/ggml-vulkan's `mul_mat_vec` pipelines) and command-buffer submission in place of
/// CUDA's kernels and launches. Fitted as CUDA's on the Vulkan scoreboard's `tg128` rows for
/// Llama 2 7B Q4_0 (discussion #10879) on every other card in speed-measured.csv's order (RTX
/// 4070 Ti, RTX 4070, RTX 5090, Radeon AI PRO R9700, RTX 3090, RX 9070), by least squares of the
/// step time's relative error: 95.3% of the bandwidth and 1.58 ms a step; at 95% (rounded to a
/// point) 1.57 ms. It had been 91% and 1.5 ms, the least squares of the rate's relative error
/// (90.5% and 1.46 ms). With the fixed time taken out the fit rows reach from 81.3% (the RTX
/// 4070) to the peak, and the R9700's row leaves 0.93 ms beside its reads at the peak. Taken per
/// layer as [`LLAMA_CPP_CUDA`]'s is, 49 µs (over the rows' 32 layers): ggml-vulkan runs the
/// same graph and records one dispatch per node (`ggml_backend_vk_graph_compute` calls
/// `ggml_vk_build_graph` for each of `cgraph->n_nodes`, submitting every 100 nodes or so,
/// ggml/src/ggml-vulkan/ggml-vulkan.cpp, ggml-org/llama.cpp@80ec54e9). Its rows, all 32 layers,
/// cannot tell per layer from per step; CUDA's and Metal's MoE rows can, and found per layer.
/// Prefill keeps CUDA's shares.
pub const LLAMA_CPP_VULKAN: Efficiency = Efficiency {
    bandwidth: 0.95,
    attention: 0.95,
    experts: 0.95,
    compute: LLAMA_CPP_CUDA.compute,
    layer_s: 1.57e-3 / SCOREBOARD_LAYERS,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// The layers of the scoreboards' model, Llama 2 7B, over which a fixed time fitted per step on
/// its rows alone (ROCm, Vulkan) is taken per layer. Those `tg128` runs also read too short a
/// cache to tell its share from the weights', so `attention` repeats `bandwidth` in those
/// constants, and `experts` does where no MoE row was fitted (ROCm, Vulkan, the 2024 builds).
const SCOREBOARD_LAYERS: f64 = 32.0;

/// llama.cpp's CUDA backend at the builds before [`Rule::MmqTensorCores`] (b2843 and older,
/// May 2024), whose decode kernels, attention without flash attention and prefill path differ
/// from the scoreboards' 2025 builds. Set from the `fit` rows of the GPU-Benchmarks-on-LLM-
/// Inference notebooks (speed-scenarios.csv: every other CUDA card in that file's order, from the
/// first: RTX 3070, RTX 3090, RTX 4080, RTX 6000 Ada, A40, H100 PCIe; all their rows), in order:
/// - the cache's share, 33%: the median over the fit cards and models of the cache bytes a step
///   adds from `tg512` to `tg8192` over the time it adds (14% to 79%). Without flash attention
///   the step multiplies one query by the permuted K and V views in their own kernels, with f32
///   scores and `soft_max` between them, and reaches a fraction of what the weights' kernels do;
/// - the weights' share, 90%, and 124 µs per layer, by least squares of the relative error of
///   every fit decode row. The rows' 32- and 80-layer models tell a time per layer from one per
///   step, and a time per step comes out negative;
/// - prefill's share of the fp16-accumulate peak `tensor_path` (below) runs cuBLAS at, with
///   the dequantized copies (the quantized weights read and their f16 copy written) and the
///   scores timed apart: 34% by least squares of the fit `pp` rows' relative error, spanning
///   20% (the H100 PCIe) to the peak, before the FLOP/s per board watt replaced it on every fit
///   card ([`CUBLAS_2024_SAMSUNG_8N`], [`CUBLAS_2024_TSMC_4N`]); it holds where the sheet
///   states no board power, or a process without a fitted rate (GA100);
/// - on a card whose sheet states its SMs and boost clock, `clocked` replaces the weights'
///   share and the time per layer, fitted together by least squares of the step time's
///   relative error over every fit decode row, the cache's share held: 89.3% of the bandwidth,
///   capped at the batch-1 matmul kernel's own rate per SM per cycle ([`DMMV_2024`] for a
///   16-bit file, [`MMVQ_2024`] for a quantized one), and 167,000 cycles per layer at the boost
///   clock (88.4%, 6.43 bytes per SM-cycle and 168,000 cycles by the rate's relative error, the
///   reading they were first set by). Card
///   by card over all the notebooks' rows (what suggested the form; the values come from the fit
///   rows) the fixed time per layer is a number of cycles (125,000 to 183,000), not of
///   microseconds (124 µs on the A100, 62 µs on the RTX 6000 Ada), and the HBM cards read at a
///   few bytes per SM-cycle whatever their bandwidth: the kernel's blocks, not DRAM, set their
///   pace, so an A100 (108 SMs at 1410 MHz) reads F16 at under half its 2 TB/s while a GeForce
///   card's ceiling lies above its bandwidth. Without SMs or a clock the unclocked share and time per layer above hold.
pub const LLAMA_CPP_CUDA_2024: Efficiency = Efficiency {
    bandwidth: 0.90,
    attention: 0.33,
    experts: 0.90,
    compute: 0.34,
    layer_s: 124e-6,
    cpu_layer_s: CPU_LAYER_S,
    clocked: Some(CLOCKED_2024),
};

const CLOCKED_2024: Clocked = Clocked {
    bandwidth: 0.893,
    sm_ceiling: SmCeiling::PerCycle(DMMV_2024),
    layer_cycles: 167e3,
};

/// [`LLAMA_CPP_CUDA_2024`] for a quantized file: the same share and cycles, the weights capped
/// at `mul_mat_vec_q`'s rate instead of `dequantize_mul_mat_vec`'s.
pub const LLAMA_CPP_CUDA_2024_MMVQ: Efficiency = Efficiency {
    clocked: Some(Clocked {
        sm_ceiling: SmCeiling::PerSecond(MMVQ_2024),
        ..CLOCKED_2024
    }),
    ..LLAMA_CPP_CUDA_2024
};

/// Bytes per SM per cycle `dequantize_mul_mat_vec` (dmmv) reads at most, the kernel ggml-cuda
/// runs a batch-1 matmul of 16-bit weights through at the 2024 builds: `ggml_cuda_mul_mat`
/// (ggml-cuda.cu, as in agray3/llama.cpp@a5fd1931, a fork of that May 2024 code) sets
/// `use_dequantize_mul_mat_vec` for a quantized or F16 `src0` at one column (`src1->ne[1] ==
/// 1`), and `use_mul_mat_vec_q` for a quantized one only, on compute capability 6.1 or newer
/// (`MIN_CC_DP4A`, every card whose sheet states SMs); "if mmvq is available it's a better
/// choice than dmmv" clears dmmv wherever mmvq applies, so F16 reads through dmmv and the
/// k-quants through `mul_mat_vec_q` (mmvq). Fitted with the share and the cycles on the rows
/// where it binds, the H100 PCIe's F16 rows (speed-1227 to 1230, 6.32–6.47 at 167,000 cycles;
/// no other fit card's ceiling lies below its share of the bandwidth).
pub const DMMV_2024: f64 = 6.42;

/// Bytes per SM per second `mul_mat_vec_q` (mmvq) reads at most at the 2024 builds (a quantized
/// file; see [`DMMV_2024`]): a ceiling in time rather than in cycles, as a kernel bound by the
/// loads it keeps in flight rather than by the instructions it issues would meet (bytes in
/// flight over the memory's latency, which is in nanoseconds whatever the SM clock; read from
/// the rows, not from a profile). The form was chosen after the held-out A100s' Q4_K_M rows,
/// which read 7.4–9.5 bytes per SM-cycle at the 1,410 MHz A100's clock, past the 5.8–6.5 of the
/// 1,755 MHz H100 PCIe's fit rows, yet 10–13 GB/s per SM against the H100's 9.6–11.9. Fitted by
/// least squares of the step time's relative error (10.94; the rate's gave 10.9 too), the share
/// and cycles held, on the fit rows where it binds, the H100 PCIe's
/// Q4_K_M rows (speed-1219 to 1222 and 1235 to 1238, 9.6–11.9 GB/s per SM; no other fit card's
/// ceiling lies below its share of the bandwidth).
pub const MMVQ_2024: f64 = 10.9e9;

/// llama.cpp's Metal backend at the same builds, set the same way from the notebooks' Apple
/// rows on every other Mac in speed-scenarios.csv's order (M1 Max, M3 Max; the M2 Ultra is held
/// out): the cache at 11% (6.5% to 17%), then the weights' share and the time per layer by
/// least squares of the step time's relative error, as [`LLAMA_CPP_METAL`]'s: 83.6% and 207 µs,
/// at 84% (rounded to a point) 211 µs (the fit rows reach from 47.4%, the M1 Max's 70B Q4_K_M
/// row, speed-989, with the cache at 6.5%, to the peak). They had been 66% and 168 µs, the
/// least squares of the rate's relative error, which the M1 Max's slow rows (its 70B Q4_K_M at
/// 4.3 tokens/s, a sixth of its bandwidth) pull further down than the step time's does. Prefill keeps
/// [`LLAMA_CPP_METAL`]'s shares: neither fit Mac has a stated throughput.
pub const LLAMA_CPP_METAL_2024: Efficiency = Efficiency {
    bandwidth: 0.84,
    attention: 0.11,
    experts: 0.84,
    compute: LLAMA_CPP_METAL.compute,
    layer_s: 211e-6,
    cpu_layer_s: CPU_LAYER_S,
    clocked: None,
};

/// Quantized matmuls on int8 tensor cores (MMQ) on a card whose sheet states no SMs or clock:
/// the CUDA scoreboard's `pp512` rows for Llama 2 7B Q4_0 (the `LLAMA_CPP_MMQ` rows of
/// speed-scenarios.csv) reach a median 24% of the card's dense int8 peak, from 7% (H100) to
/// 37.5% (L40), with the time their runs without flash attention spend on the attention scores
/// taken out.
pub const LLAMA_CPP_MMQ: f64 = 0.24;

/// Int8 ops MMQ does per SM per cycle at the boost clock, on a card whose sheet states both:
/// what its share of the int8 peak follows. ggml-cuda's `mul_mat_q` (mmq.cuh) multiplies
/// tiles it first unpacks from the quantized blocks into shared memory with ordinary integer
/// instructions, through `mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32` on Ampere and
/// newer (`m8n8k16` on Turing; ggml/src/ggml-cuda/mma.cuh, ggml-org/llama.cpp@032f69d4, which
/// issues no Hopper `wgmma`), so its pace per SM is that kernel's, not the tensor cores' peak:
/// the fit rows reach 384–653 ops per SM-cycle whether the card's int8 tensor peak is about
/// 2,048 (GA102, Ada), 4,096 (GA100) or 7,600 (the H100 SXM) per SM-cycle, where their shares
/// of that peak run from 7% to 37.5%. Set by least squares of the relative error of every
/// `LLAMA_CPP_MMQ` row (all ten on cards with SMs and a clock), which reach 380–660.
pub const MMQ_SM_OPS_PER_CYCLE: f64 = 477.0;

/// MMQ's share of the card's int8 peak: [`MMQ_SM_OPS_PER_CYCLE`] over the peak per SM-cycle
/// where the sheet states SMs and a boost clock, else [`LLAMA_CPP_MMQ`].
fn mmq_share(sheet: &Datasheet) -> f64 {
    let sm_cycles_per_s = f64::from(sheet.sms) * f64::from(sheet.boost_mhz) * 1e6;
    if sm_cycles_per_s <= 0.0 {
        return LLAMA_CPP_MMQ;
    }
    MMQ_SM_OPS_PER_CYCLE * sm_cycles_per_s / sheet.int8_ops_per_s
}

/// FLOP/s per board watt the 2024 builds' cuBLAS prefill reaches on a Samsung 8N chip (GA102,
/// GA104), and [`CUBLAS_2024_TSMC_4N`] on TSMC 4N (Ada, Hopper): on these cards the fp16 GEMMs
/// draw the board to its power limit, so what they reach follows the watts and the energy a
/// tensor FLOP costs on the process more than the sheet's peak, which assumes the boost clock.
/// On the fit cards of [`LLAMA_CPP_CUDA_2024`] the share of the fp16-accumulate peak runs from
/// 20% (the H100 PCIe, 350 W for 756 TFLOPS) to 78% (the RTX 4080, 320 W for 195), while the
/// FLOP/s per board watt hold within each process: 0.11–0.25 TFLOPS per watt on the RTX 3070,
/// RTX 3090 and A40 (Samsung 8N), 0.35–0.53 on the RTX 4080, RTX 6000 Ada and H100 PCIe (TSMC
/// 4N). Each value by least squares of the relative error of its process's fit `pp` rows (24
/// and 30), the dequantized copy and the scores timed apart.
/// GA100 (TSMC N7: the A100s) has no fit row, so it keeps the share.
pub const CUBLAS_2024_SAMSUNG_8N: f64 = 0.202e12;

/// See [`CUBLAS_2024_SAMSUNG_8N`].
pub const CUBLAS_2024_TSMC_4N: f64 = 0.439e12;

/// The 2024 builds' cuBLAS share of `peak`: the FLOP/s the board's watts buy on its process
/// where the sheet states both and a constant was fitted for that process, else `share`.
fn cublas_2024_share(sheet: &Datasheet, peak: f64, share: f64) -> f64 {
    let per_watt = match sheet.process {
        Process::Samsung8N => CUBLAS_2024_SAMSUNG_8N,
        Process::Tsmc4N => CUBLAS_2024_TSMC_4N,
        Process::TsmcN7 | Process::Unstated => return share,
    };
    if sheet.board_watts == 0 || peak <= 0.0 {
        return share;
    }
    per_watt * f64::from(sheet.board_watts) / peak
}

/// llama.cpp's facts: a server without a pool (its KV cache is per slot, on the GPU and in system
/// RAM), that reads GGUF files, places layers and runs on Metal.
const FACTS: Facts = Facts {
    requests: Requests::Slots,
    settings_group: Some(Group::LlamaCpp),
    reads_gguf_weights: true,
    runs_on_metal: true,
    places_layers: true,
    pool_words: PoolWords {
        pool: "KV cache, GPU and system RAM",
        tokens: "KV cells",
    },
    launch: Some(&LLAMA_SERVER_LAUNCH),
    logged_figures: &[
        LoggedFigure::new("model_buffer_gpu", Reads::Gpu(LogFigure::ModelLoad)),
        LoggedFigure::new("model_buffer_host", Reads::Host(LogFigure::ModelLoad)),
        LoggedFigure::new("kv_buffer", Reads::GpuAndHost(LogFigure::KvBuffer)),
        LoggedFigure::new("compute_buffer_gpu", Reads::Gpu(LogFigure::ComputeBuffer)),
        LoggedFigure::new("compute_buffer_host", Reads::Host(LogFigure::ComputeBuffer)),
        LoggedFigure::new("recurrent_buffer", Reads::Gpu(LogFigure::RecurrentBuffer)),
        // What `--fit` placed: "offloaded N/M layers to GPU" and the layers whose routed
        // experts it overrode to the CPU (llama-fit-params' `-ot blk.N.ffn_*_exps=CPU`).
        LoggedFigure::new("fit_gpu_layers", Reads::Setting("n-gpu-layers")),
        LoggedFigure::new("fit_cpu_moe", Reads::Setting("n-cpu-moe")),
        LoggedFigure::new("output_buffer", Reads::Host(LogFigure::OutputBuffer)),
    ],
    ..Facts::server("llama.cpp", "llama.cpp")
};

impl RuntimeRules for LlamaCpp {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn check(&self, s: &Scenario, errors: &mut Vec<FieldError>) {
        if s.cache_type_v.is_quantized() && !s.flash_attn {
            errors.push(FieldError::new(
                "cache-type-v",
                "llama.cpp quantizes the V cache only with flash attention (V cache quantization requires flash_attn); set flash-attn=true or cache-type-v=f16",
            ));
        }
    }

    fn push(&self, b: Build<'_>) -> Option<Serving> {
        if b.r.arch.recurrent.layers > 0 && b.s.ssm_dtype.is_some_and(|t| t != Dtype::Fp32) {
            b.notes.push("llama.cpp keeps the recurrent state (its R and S buffers) in f32 whatever ssm-dtype says, so it is counted in f32.".to_string());
        }
        let build = Rules::new(b.s.llama_cpp_build);
        let notes = [
            build.note(b.s, b.r.arch.layers),
            build.full_context_note(b.s),
        ];
        b.notes.extend(notes.into_iter().flatten());
        // What the detailed method pushed, kept so that --fit can try other placements on it.
        let before = llamacpp_rules::fit(b.s).then(|| b.stack.trial());
        let mut serving = push(b.s, b.r, &b.d, b.stack);
        let Some(before) = before else {
            return Some(serving);
        };
        let pushed = b.stack.total();
        if let Some(fitted) = llamacpp_fit::choose(b.s, b.r, &b.d, &before, pushed, b.notes) {
            b.stack.components = before.components;
            let s = &fitted.scenario;
            serving = push(s, b.r, &b.d, b.stack);
            b.notes.push(fitted.note);
            let chosen = [
                ("n-gpu-layers", b.s.n_gpu_layers != s.n_gpu_layers),
                ("n-cpu-moe", b.s.n_cpu_moe != s.n_cpu_moe),
                ("ctx-size", b.s.ctx_size != s.ctx_size),
            ];
            for setting in &mut serving.settings {
                if chosen.contains(&(setting.key.as_str(), true)) {
                    setting.default_from = Some("chosen by --fit".to_string());
                }
            }
        }
        Some(serving)
    }
}

impl RuntimeSpeed for LlamaCpp {
    /// Metal on a Mac (whatever `gpu-backend` says), Vulkan where the scenario names it, ROCm
    /// (`gpu-backend=cuda`, built through HIP) on an AMD card, else CUDA.
    fn backend(&self, s: &Scenario, gpu: &Gpu) -> &'static str {
        if gpu.is_mac() {
            " Metal"
        } else if s.gpu_backend == GpuBackend::Vulkan {
            " Vulkan"
        } else if gpu.is_amd() {
            " ROCm"
        } else {
            " CUDA"
        }
    }

    /// The backend's own share: an Apple GPU runs Metal whatever `gpu-backend` says (it names
    /// the backends of discrete cards); otherwise Vulkan where it is named, and the CUDA
    /// backend, built through HIP on an AMD card, with its kernels' wavefront. CUDA and Metal
    /// builds before [`Rule::MmqTensorCores`] have their own.
    fn efficiency(&self, s: &Scenario, r: &Resolved) -> Efficiency {
        let current = Rules::new(s.llama_cpp_build).applies(Rule::MmqTensorCores);
        let eff = match r.gpu {
            Some(g) if g.is_mac() && current => LLAMA_CPP_METAL,
            Some(g) if g.is_mac() => LLAMA_CPP_METAL_2024,
            _ if s.gpu_backend == GpuBackend::Vulkan => LLAMA_CPP_VULKAN,
            Some(g) if g.is_instinct() => LLAMA_CPP_ROCM_WAVE64,
            Some(g) if g.is_amd() => LLAMA_CPP_ROCM,
            Some(g) if g.pre_ampere && current => LLAMA_CPP_CUDA_PRE_AMPERE,
            _ if current => LLAMA_CPP_CUDA,
            _ if s.quant.default_type().is_quantized() => LLAMA_CPP_CUDA_2024_MMVQ,
            _ => LLAMA_CPP_CUDA_2024,
        };
        self.at_settings(s, eff)
    }

    fn at_settings(&self, s: &Scenario, eff: Efficiency) -> Efficiency {
        if s.flash_attn {
            with_flash_attention(eff)
        } else {
            eff
        }
    }

    /// Several GPUs split the layers (`--split-mode layer`, the default, whatever `sharding`
    /// says; `--split-mode row` is no setting here): one batch passes each GPU's blocks in turn,
    /// each boundary copying the hidden state, which ggml computes in f32. The planned GPU is the
    /// fullest, with the output layer the others lack.
    fn parallel(&self, s: &Scenario, r: &Resolved) -> Parallel {
        let one = Parallel {
            tp: 1,
            stages: 1,
            in_flight: 1,
            activation_bytes: FP32_BYTES,
            overcount_bytes: 0.0,
        };
        // Placing the layers is the costly part of an estimate: on one GPU there is nothing to
        // split.
        if s.gpus <= 1 {
            return one;
        }
        let layers = Layers::new(s, r, r.arch.layers);
        let output = if layers.gpus > 1 && layers.output_here {
            ModelBuffers::new(s, &r.arch, &layers).output_gpu
        } else {
            0.0
        };
        Parallel {
            stages: layers.gpus,
            overcount_bytes: f64::from(layers.gpus - 1) * output,
            ..one
        }
    }

    /// A quantized file's matmuls run on int8 tensor cores (MMQ, which ggml-cuda picks for
    /// quantized types wherever the card has them, `ggml_cuda_should_use_mmq`); 16- and 32-bit
    /// files, and cards without int8 tensor cores, run cuBLAS in fp16. Before
    /// [`Rule::MmqTensorCores`], the CUDA backend ran every matmul of a batch through cuBLAS,
    /// dequantizing a quantized file's weights to f16 first, with `CUBLAS_COMPUTE_16F`
    /// (`ggml_cuda_op_mul_mat_cublas`), whose peak is the fp16-accumulate one.
    fn tensor_path(&self, s: &Scenario, r: &Resolved, sheet: &Datasheet) -> TensorPath {
        let quantized = s.quant.default_type().is_quantized();
        let share = self.efficiency(s, r).compute;
        let mmq = Rules::new(s.llama_cpp_build).applies(Rule::MmqTensorCores);
        let cuda = s.gpu_backend != GpuBackend::Vulkan;
        match r.gpu {
            _ if quantized && mmq && sheet.int8_ops_per_s > 0.0 => TensorPath {
                peak: sheet.int8_ops_per_s,
                share: mmq_share(sheet),
                dequantizes: false,
            },
            Some(g) if cuda && !mmq && !g.is_mac() && !g.is_amd() => TensorPath {
                peak: g.fp16_accumulate_flops_per_s(),
                share: cublas_2024_share(sheet, g.fp16_accumulate_flops_per_s(), share),
                dequantizes: quantized,
            },
            _ => TensorPath {
                peak: sheet.half_flops_per_s,
                share,
                dequantizes: false,
            },
        }
    }

    /// llama-bench's `-p` is one prompt's prefill and `-n` a decode from an empty cache, each
    /// timed alone.
    fn bench_command(
        &self,
        prompt: u32,
        output: u32,
        _concurrency: u32,
        s: &Scenario,
    ) -> Option<String> {
        let ngl = s.n_gpu_layers.map_or(99, |n| n);
        Some(format!(
            "llama-bench -m MODEL.gguf -p {prompt} -n {output} -ngl {ngl}"
        ))
    }
}

/// `llama-server -m FILE` (or `-hf REPO:QUANT`) and its flags, as common/arg.cpp names them:
/// `-c`, `-np`, `-ngl` and `-fa` are written always, since llama-server decides each at start
/// when unset (`-c 0` takes the model's whole context, `-np` is auto with a unified KV buffer,
/// `-ngl` is auto in current builds and 0 in older ones, `-fa` is auto); `-kvu`,
/// `--cache-type-k`, `--cache-type-v` (llama.cpp's own type names) and `-ub` only when
/// changed, and `--n-cpu-moe` when given or chosen by `--fit`, so that the command pins what
/// `--fit` would choose (a given `-ngl` turns `--fit` off). Several GPUs are not a flag: llama-server splits the layers over every
/// visible GPU (`--split-mode layer`), chosen with `CUDA_VISIBLE_DEVICES`.
static LLAMA_SERVER_LAUNCH: Launch = Launch {
    program: &["llama-server"],
    model_flag: Some("-m"),
    gguf: true,
    parallel: None,
    flags: &[
        Flag::new("ctx-size", "-c", Write::Text, When::Always),
        Flag::new("parallel", "-np", Write::Text, When::Always),
        Flag::new("n-gpu-layers", "-ngl", Write::Text, When::Always),
        Flag::new("flash-attn", "-fa", Write::OnOff, When::Always),
        Flag::new("kv-unified", "-kvu", Write::Switch, When::Changed),
        Flag::new("cache-type-k", "--cache-type-k", Write::Text, When::Changed),
        Flag::new("cache-type-v", "--cache-type-v", Write::Text, When::Changed),
        Flag::new("ubatch-size", "-ub", Write::Text, When::Changed),
        Flag::new("n-cpu-moe", "--n-cpu-moe", Write::Text, When::Applied),
    ],
};

/// llama.cpp pads the context, a slot and a sliding window's cells to this many.
const CELL_PADDING: u32 = 256;

/// A ubatch of at least this many tokens copies a CPU-resident weight to the GPU for its matmul
/// (ggml-cuda's offload of large batches), so the compute buffer holds the largest one.
const GPU_OFFLOAD_MIN_BATCH: u32 = 32;

/// llama-server's default `-b` (`n_batch`), which caps its logit rows.
const LLAMA_SERVER_BATCH: u32 = 2048;

fn pad(cells: u32, to: u32) -> u32 {
    cells.div_ceil(to).saturating_mul(to)
}

/// One block's weights in the file, and of them the routed experts'.
///
/// Every tensor's byte count is a whole number (a row is whole blocks of its type, or the type
/// falls back to one whose blocks divide it) and a model's bytes stay far below 2^53, so these
/// sums are exact in any order: the file's blocks can be summed per layer class, per starting
/// layer and per range without changing a byte.
#[derive(Clone, Copy, Default)]
struct BlockWeights {
    bytes: f64,
    experts: f64,
    largest: f64,
}

impl BlockWeights {
    fn add(&mut self, tensor_bytes: f64, routed_experts: bool) {
        self.bytes += tensor_bytes;
        self.largest = self.largest.max(tensor_bytes);
        if routed_experts {
            self.experts += tensor_bytes;
        }
    }

    /// Another set of tensors in the same block.
    fn merge(&mut self, other: &BlockWeights) {
        self.bytes += other.bytes;
        self.experts += other.experts;
        self.largest = self.largest.max(other.largest);
    }

    /// Another set of tensors that each of `blocks` blocks holds.
    fn merge_times(&mut self, other: &BlockWeights, blocks: u32) {
        if blocks > 0 {
            let blocks = f64::from(blocks);
            self.bytes += other.bytes * blocks;
            self.experts += other.experts * blocks;
            self.largest = self.largest.max(other.largest);
        }
    }
}

/// A tensor name llama.cpp's converter writes (without its `blk.N.`), with what the quantizer's
/// rules read from it, both fixed at compile time.
#[derive(Clone, Copy)]
struct Role {
    name: &'static str,
    rules: NameRules,
}

const fn role(name: &'static str) -> Role {
    Role {
        name,
        rules: NameRules::of(name),
    }
}

/// The GGUF tensor for an inventory entry.
fn gguf_role(block: Block, projection: Option<Projection>, index_in_block: usize) -> Role {
    match (block, projection) {
        (Block::Attention, Some(Projection::Q)) if index_in_block > 0 => {
            const { role("attn_q_b.weight") }
        }
        (Block::Attention, Some(Projection::Q)) => const { role("attn_q.weight") },
        (Block::Attention, Some(Projection::K)) => const { role("attn_k.weight") },
        (Block::Attention, Some(Projection::V)) => const { role("attn_v.weight") },
        (Block::Attention, _) => const { role("attn_output.weight") },
        (Block::Mlp, Some(Projection::Gate)) => const { role("ffn_gate.weight") },
        (Block::Mlp, Some(Projection::Up)) => const { role("ffn_up.weight") },
        (Block::Mlp, _) => const { role("ffn_down.weight") },
        (Block::SharedExpert, Some(Projection::Gate)) => const { role("ffn_gate_shexp.weight") },
        (Block::SharedExpert, Some(Projection::Up)) => const { role("ffn_up_shexp.weight") },
        (Block::SharedExpert, _) => const { role("ffn_down_shexp.weight") },
        (Block::RoutedExpert, Some(Projection::Gate)) => const { role("ffn_gate_exps.weight") },
        (Block::RoutedExpert, Some(Projection::Up)) => const { role("ffn_up_exps.weight") },
        (Block::RoutedExpert, _) => const { role("ffn_down_exps.weight") },
        (Block::Router, _) => const { role("ffn_gate_inp.weight") },
        (Block::Recurrent, _) if index_in_block == 0 => const { role("ssm_in.weight") },
        (Block::Recurrent, _) => const { role("ssm_out.weight") },
    }
}

/// Where the file's tensor bytes sit: `token_embd`, the output part, and the blocks placed.
struct FileWeights {
    placed: Placement,
    token_embd: f64,
    output: f64,
}

/// The file's own tensor bytes when its header was read (`gguf-weights`), else the file
/// llama-quantize would write for the architecture ([`QuantizedFile`]), with its blocks placed
/// from `first_gpu_block` on, `span` of them on the GPU planned, and the routed experts below
/// `n_cpu_moe` kept in system RAM.
fn file_weights(
    s: &Scenario,
    a: &Architecture,
    first_gpu_block: u32,
    span: Range<u32>,
    n_cpu_moe: u32,
) -> FileWeights {
    match &s.gguf_weights {
        Some(file) => {
            let blocks = |layers: Range<u32>| {
                let mut sum = BlockWeights::default();
                let end = (layers.end as usize).min(file.blocks.len());
                for b in file
                    .blocks
                    .get(layers.start as usize..end)
                    .unwrap_or_default()
                {
                    sum.merge(&BlockWeights {
                        bytes: b.bytes as f64,
                        experts: b.experts as f64,
                        largest: b.largest as f64,
                    });
                }
                sum
            };
            FileWeights {
                placed: Placement::of(blocks, first_gpu_block, span, n_cpu_moe),
                token_embd: file.token_embd as f64,
                output: file.output as f64,
            }
        }
        None => {
            let file = QuantizedFile::new(a, s.quant);
            FileWeights {
                placed: Placement::of(
                    |layers| file.blocks(layers),
                    first_gpu_block,
                    span,
                    n_cpu_moe,
                ),
                token_embd: file.token_embd,
                output: file.output,
            }
        }
    }
}

/// llama-quantize's rules read a layer only through these predicates (`use_more_bits`, the first
/// n/16 and n/8, the last n/8, the first two or four), so layers of one class get one type per
/// tensor. Which of the five thresholds (2, 4, n/16, n/8, 7n/8) a layer has reached is its run,
/// and between n/8 and 7n/8 also its residue `(i − n/8) mod 3`, the one place `use_more_bits`
/// reads it: at most 6 × 3 classes, class `3 × run + residue`. n/8 and 7n/8 are thresholds, so a
/// run lies wholly inside or outside them, and a class's layers in a range are counted without
/// visiting them: an estimate costs the same at 48 layers as at 480.
struct LayerClasses {
    /// Where each of the six runs begins, and the layer count where the last one ends (a run is
    /// empty where two thresholds meet, or beyond the last layer).
    bounds: [u32; 7],
    eighth: u32,
    last_eighth: u32,
}

impl LayerClasses {
    fn new(n: u32) -> LayerClasses {
        let eighth = n / 8;
        // 7n/8 of a u32 fits a u32.
        let last_eighth = u32::try_from(u64::from(n) * 7 / 8).unwrap_or(u32::MAX);
        let mut thresholds = [2, 4, n / 16, eighth, last_eighth].map(|t| t.min(n));
        thresholds.sort_unstable();
        let [a, b, c, d, e] = thresholds;
        LayerClasses {
            bounds: [0, a, b, c, d, e, n],
            eighth,
            last_eighth,
        }
    }

    /// Each run's layers and whether the residue splits it.
    fn runs(&self) -> impl Iterator<Item = (Range<u32>, bool)> + '_ {
        self.bounds.windows(2).map(|pair| {
            let run = pair[0]..pair[1];
            let middle = run.start >= self.eighth && run.start < self.last_eighth;
            (run, middle)
        })
    }

    /// How many layers of each class lie in `layers`.
    fn count_in(&self, layers: &Range<u32>) -> [u32; LAYER_CLASSES] {
        let mut counts = [0; LAYER_CLASSES];
        // Layers from n/8 up to `end` whose residue is `residue`.
        let up_to = |end: u32, residue: u32| (end - self.eighth + 2 - residue) / 3;
        for ((run, middle), classes) in self.runs().zip(counts.chunks_exact_mut(3)) {
            let (from, to) = (run.start.max(layers.start), run.end.min(layers.end));
            if from >= to {
                continue;
            }
            if middle {
                for (residue, count) in (0..).zip(classes) {
                    *count = up_to(to, residue) - up_to(from, residue);
                }
            } else if let Some(count) = classes.first_mut() {
                *count = to - from;
            }
        }
        counts
    }

    /// The class of one layer.
    fn class_of(&self, layer: u32) -> usize {
        (0..)
            .zip(self.runs())
            .find(|(_, (run, _))| run.contains(&layer))
            .map_or(0, |(index, (_, middle))| {
                let residue = if middle { (layer - self.eighth) % 3 } else { 0 };
                3 * index + residue as usize
            })
    }

    /// Each class's last layer: a layer that stands for its class, in range for every tensor
    /// whose layers reach the class at all (a tensor's layers run to the last one).
    fn last_layers(&self) -> [Option<u32>; LAYER_CLASSES] {
        let mut last = [None; LAYER_CLASSES];
        for ((run, middle), classes) in self.runs().zip(last.chunks_exact_mut(3)) {
            let Some(final_layer) = run.end.checked_sub(1).filter(|&l| l >= run.start) else {
                continue;
            };
            if middle {
                for (residue, slot) in (0..).zip(classes) {
                    let back = (final_layer - self.eighth + 3 - residue) % 3;
                    *slot = final_layer.checked_sub(back).filter(|&l| l >= run.start);
                }
            } else if let Some(slot) = classes.first_mut() {
                *slot = Some(final_layer);
            }
        }
        last
    }
}

const LAYER_CLASSES: usize = 18;

/// The blocks that hold a part of the model. When every block holds every part but one, the
/// blocks without it come first (`From`: DeepSeek's dense MLP layers precede the experts). A
/// hybrid interleaves its kinds: llama.cpp's qwen3next and qwen35 loaders make block `il` an
/// attention block when `(il + 1) % full_attention_interval == 0` and a gated-DeltaNet block
/// otherwise (src/llama-model.cpp, `recurrent_layer_arr`), which `Spread` and `Rest` are
/// exactly; a pattern the shape does not keep (Nemotron-H's `hybrid_override_pattern`) is
/// spread the same way.
#[derive(Clone, Copy, PartialEq)]
enum LayerSet {
    From(u32),
    /// `m` of the `n` blocks, evenly: block `il` when `⌊(il + 1)·m/n⌋ > ⌊il·m/n⌋`, which is the
    /// last of every `n/m` when `m` divides `n`.
    Spread(u32),
    /// The blocks `Spread(m)` leaves.
    Rest(u32),
}

impl LayerSet {
    /// Where `a`'s attention and recurrent mixers sit among its `n` blocks.
    fn mixers(a: &Architecture) -> (LayerSet, LayerSet) {
        let n = a.layers;
        let attention = a.attention_layers();
        if a.no_attention == 0 && a.no_mlp == 0 {
            return (LayerSet::From(0), LayerSet::From(n));
        }
        let recurrent = if attention + a.recurrent.layers == n {
            LayerSet::Rest(attention)
        } else {
            LayerSet::Spread(a.recurrent.layers)
        };
        (LayerSet::Spread(attention), recurrent)
    }

    /// The blocks below `end` that `Spread(m)` holds.
    fn spread_below(m: u32, n: u32, end: u32) -> u32 {
        u32::try_from(u64::from(end) * u64::from(m) / u64::from(n.max(1))).unwrap_or(u32::MAX)
    }

    fn contains(self, layer: u32, n: u32) -> bool {
        match self {
            LayerSet::From(first) => layer >= first,
            LayerSet::Spread(m) => {
                Self::spread_below(m, n, layer + 1) > Self::spread_below(m, n, layer)
            }
            LayerSet::Rest(m) => !LayerSet::Spread(m).contains(layer, n),
        }
    }

    /// How many of the blocks in `layers` (of `n`) it holds.
    fn count_in(self, layers: &Range<u32>, n: u32) -> u32 {
        let (start, end) = (layers.start.min(n), layers.end.min(n));
        if start >= end {
            return 0;
        }
        match self {
            LayerSet::From(first) => end.saturating_sub(start.max(first)),
            LayerSet::Spread(m) => Self::spread_below(m, n, end) - Self::spread_below(m, n, start),
            LayerSet::Rest(m) => (end - start) - LayerSet::Spread(m).count_in(layers, n),
        }
    }
}

/// `Block`'s variants, for counting the tensors of each kind met so far.
const BLOCK_KINDS: usize = Block::Recurrent as usize + 1;

/// The tensors that every block of `held` holds: those typed alike in every layer summed once,
/// and those whose type follows the layer summed per layer class.
#[derive(Clone, Copy)]
struct LayerStart {
    held: LayerSet,
    alike: BlockWeights,
    by_class: [BlockWeights; LAYER_CLASSES],
}

impl LayerStart {
    fn new(held: LayerSet) -> LayerStart {
        LayerStart {
            held,
            alike: BlockWeights::default(),
            by_class: [BlockWeights::default(); LAYER_CLASSES],
        }
    }
}

/// The file llama-quantize would write for an architecture, described by what each block holds
/// rather than block by block: a tensor is typed once per layer class it reaches (once in all
/// when its file type's rules do not read the layer), and [`QuantizedFile::blocks`] sums a range
/// of blocks from how many layers of each class it holds. An estimate costs a few quantizer
/// calls per tensor, however many layers the model has.
struct QuantizedFile {
    layers: u32,
    classes: LayerClasses,
    /// One per distinct set of blocks; a model has few (the dense MLP layers and the experts,
    /// a hybrid's attention and recurrent blocks), so this is short.
    starts: Vec<LayerStart>,
    /// Each block's norms, kept in f32: two per block.
    norms: f64,
    token_embd: f64,
    output: f64,
}

impl QuantizedFile {
    fn new(a: &Architecture, quant: vramfit_gguf::FileType) -> QuantizedFile {
        let n = a.layers.max(1);
        let mut model = QuantModel::new("llama", n, a.heads, a.kv_heads.max(1), a.moe.experts);
        // llama-quantize refuses the lowest-bit types without an importance matrix, so every
        // published file of those types was made with one.
        model.has_imatrix = true;
        let classes = LayerClasses::new(n);
        let starts = block_starts(a, quant, &model, &classes);
        let table = f64::from(a.vocab) * f64::from(a.hidden);
        let embd_dims = [u64::from(a.hidden), u64::from(a.vocab)];
        let typed = |table_role: Role| {
            NamedTensor::with_rules(
                QuantTensor {
                    name: table_role.name,
                    dims: &embd_dims,
                    source_type: GgmlType::BF16,
                },
                table_role.rules,
            )
            .type_at(quant, &model, 0, !a.tied)
            .unwrap_or(GgmlType::F16)
        };
        let token_embd = const { role("token_embd.weight") };
        let output_type = typed(if a.tied {
            token_embd
        } else {
            const { role("output.weight") }
        });
        QuantizedFile {
            layers: n,
            classes,
            starts,
            norms: 2.0 * f64::from(a.hidden) * FP32_BYTES,
            token_embd: size(typed(token_embd), table),
            // A tied table is duplicated for the output layer (TENSOR_DUPLICATED), in the output
            // type.
            output: size(output_type, table) + f64::from(a.hidden) * FP32_BYTES,
        }
    }

    /// The weights of the blocks in `layers`, summed.
    fn blocks(&self, layers: Range<u32>) -> BlockWeights {
        let end = layers.end.min(self.layers);
        let mut sum = BlockWeights::default();
        for start in &self.starts {
            let LayerSet::From(first) = start.held else {
                // Interleaved blocks are visited one by one: a hybrid's few dozen.
                for layer in layers.start..end {
                    if start.held.contains(layer, self.layers) {
                        sum.merge(&start.alike);
                        if let Some(typed) = start.by_class.get(self.classes.class_of(layer)) {
                            sum.merge(typed);
                        }
                    }
                }
                continue;
            };
            let held = layers.start.max(first)..end;
            if held.is_empty() {
                continue;
            }
            sum.merge_times(&start.alike, held.end - held.start);
            let counts = self.classes.count_in(&held);
            for (typed_by_layer, count) in start.by_class.iter().zip(counts) {
                sum.merge_times(typed_by_layer, count);
            }
        }
        sum.bytes += self.norms * f64::from(end.saturating_sub(layers.start));
        sum
    }
}

/// Each block tensor typed as llama-quantize types it, added to the set of blocks that holds it:
/// once where its file type's rules do not read the layer, else once per layer class.
fn block_starts(
    a: &Architecture,
    quant: vramfit_gguf::FileType,
    model: &QuantModel,
    classes: &LayerClasses,
) -> Vec<LayerStart> {
    let n = a.layers.max(1);
    let last_layers = classes.last_layers();
    let mixers = LayerSet::mixers(a);
    let mut starts: Vec<LayerStart> = Vec::new();
    let mut seen_in_block = [0usize; BLOCK_KINDS];
    a.each_linear(|linear| {
        let order = seen_in_block
            .get_mut(linear.block as usize)
            .map_or(0, |seen| {
                *seen += 1;
                *seen - 1
            });
        let role = gguf_role(linear.block, linear.projection, order);
        let shape = linear.shape;
        let experts = if linear.block == Block::RoutedExpert {
            f64::from(a.moe.experts.max(1))
        } else {
            1.0
        };
        let held = blocks_holding(a, n, linear.block, shape.count / experts, mixers);
        let elements = shape.rows * shape.cols * experts;
        let dims = [shape.rows as u64, shape.cols as u64, experts as u64];
        let tensor = NamedTensor::with_rules(
            QuantTensor {
                name: role.name,
                dims: &dims,
                source_type: GgmlType::BF16,
            },
            role.rules,
        );
        let bytes_at = |layer: u32| {
            if linear.block == Block::Router {
                elements * FP32_BYTES
            } else {
                let t = tensor
                    .in_block(layer)
                    .type_at(quant, model, layer, !a.tied)
                    .unwrap_or(GgmlType::F16);
                size(t, elements)
            }
        };
        let is_expert = linear.block == Block::RoutedExpert;
        let start = start_of(&mut starts, held);
        // A class's type is the same in each of its blocks, so its last block stands for it.
        let first = match held {
            LayerSet::From(first) => first,
            LayerSet::Spread(_) | LayerSet::Rest(_) => 0,
        };
        if !tensor.reads_layer_in(quant) {
            start.alike.add(bytes_at(first), is_expert);
            return;
        }
        for (class, last) in start.by_class.iter_mut().zip(last_layers) {
            if let Some(layer) = last.filter(|&layer| layer >= first) {
                class.add(bytes_at(layer), is_expert);
            }
        }
    });
    starts
}

/// The blocks that hold a tensor found in `layers_with` of the `n` blocks: all of them, the
/// attention or recurrent mixers' (`mixers`), a hybrid's interleaved MLP blocks, or the last ones.
fn blocks_holding(
    a: &Architecture,
    n: u32,
    block: Block,
    layers_with: f64,
    (attention_blocks, recurrent_blocks): (LayerSet, LayerSet),
) -> LayerSet {
    // Rounded half up by adding a half and truncating: the same whole number as `f64::round`
    // (at least one), without its libm call (one per tensor per estimate).
    let layers_with = ((layers_with + 0.5) as u32).max(1);
    match block {
        _ if layers_with >= n => LayerSet::From(0),
        Block::Attention => attention_blocks,
        Block::Recurrent => recurrent_blocks,
        // A hybrid's MLP-only and mixer-only blocks interleave too.
        _ if a.no_mlp > 0 => LayerSet::Spread(layers_with),
        _ => LayerSet::From(n - layers_with),
    }
}

/// The entry for a set of blocks, added the first time it is seen.
fn start_of(starts: &mut Vec<LayerStart>, held: LayerSet) -> &mut LayerStart {
    let found = match starts.iter().position(|start| start.held == held) {
        Some(found) => found,
        None => {
            starts.push(LayerStart::new(held));
            starts.len() - 1
        }
    };
    &mut starts[found]
}

/// A tensor's bytes in a ggml type.
fn size(t: GgmlType, elements: f64) -> f64 {
    elements * t.block_bytes() as f64 / t.block_elements() as f64
}

/// The blocks' bytes on the GPU and in system RAM: the blocks from `first_gpu_block` on are
/// offloaded, less the routed experts of those below `n_cpu_moe`; the GPU planned holds `span`
/// of them.
struct Placement {
    gpu: f64,
    host: f64,
    /// The largest tensor of a block left in system RAM.
    largest_host: f64,
}

impl Placement {
    /// `blocks(range)`: the weights of the blocks in `range`, summed.
    fn of(
        blocks: impl Fn(Range<u32>) -> BlockWeights,
        first_gpu_block: u32,
        span: Range<u32>,
        n_cpu_moe: u32,
    ) -> Placement {
        let on_host = blocks(0..first_gpu_block);
        let experts_kept = |r: Range<u32>| blocks(r.start..n_cpu_moe.clamp(r.start, r.end)).experts;
        Placement {
            gpu: blocks(span.clone()).bytes - experts_kept(span),
            host: on_host.bytes + experts_kept(first_gpu_block..u32::MAX),
            largest_host: on_host.largest,
        }
    }
}

/// Which blocks `-ngl` puts on the GPU.
struct Layers {
    /// Blocks in the model.
    n: u32,
    /// `-ngl`, capped at the blocks and the output layer.
    ngl: u32,
    gpu_blocks: u32,
    output_on_gpu: bool,
    /// Blocks from here on are offloaded.
    first_gpu_block: u32,
    /// GPUs the offloaded blocks are split over equally, by layer; 1 for one of unlike GPUs,
    /// which is planned alone.
    gpus: u32,
    /// The blocks on the GPU planned: every offloaded block, or one device's of unlike GPUs.
    span: Range<u32>,
    /// Whether the output layer is on the GPU planned.
    output_here: bool,
}

impl Layers {
    fn new(s: &Scenario, r: &Resolved, n: u32) -> Layers {
        let ngl = s.n_gpu_layers.unwrap_or(n + 1).min(n + 1);
        let (gpu_blocks, output_on_gpu) = match llamacpp_rules::offload_output(s) {
            OffloadOutput::First => (ngl.saturating_sub(1), ngl >= 1),
            OffloadOutput::Last => (ngl.min(n), ngl > n),
        };
        let first_gpu_block = n - gpu_blocks;
        let mut layers = Layers {
            n,
            ngl,
            gpu_blocks,
            output_on_gpu,
            first_gpu_block,
            gpus: s.gpus.max(1),
            span: first_gpu_block..n,
            output_here: output_on_gpu,
        };
        if let Some(device) = r.device {
            let slots = layers.slots();
            let mine = device_slots(s, slots.end)
                .get(device)
                .cloned()
                .unwrap_or(0..0);
            layers.gpus = 1;
            layers.span = first_gpu_block + mine.start.min(gpu_blocks)
                ..first_gpu_block + mine.end.min(gpu_blocks);
            layers.output_here = output_on_gpu && mine.contains(&gpu_blocks);
        }
        layers
    }

    /// llama.cpp's offloaded slots: the blocks in order, then the output layer if offloaded.
    fn slots(&self) -> Range<u32> {
        0..self.gpu_blocks + u32::from(self.output_on_gpu)
    }

    /// The fullest GPU's share of what the layer split divides.
    fn share(&self) -> f64 {
        self.share_of(Fx::new(false)).value()
    }

    /// [`Layers::share`] as a formula: `1 ÷ N`, left out of the text on one GPU.
    fn share_of(&self, fx: Fx) -> Formula {
        (fx.num(1.0) / fx.sym("N", f64::from(self.gpus))).shown_if(self.gpus > 1)
    }

    fn some_blocks_on_the_cpu(&self) -> bool {
        self.gpu_blocks < self.n
    }
}

/// The blocks on the GPU `r` describes, and whether the output layer is there.
pub(crate) fn device_blocks(s: &Scenario, r: &Resolved) -> (u32, bool) {
    let layers = Layers::new(s, r, r.arch.layers);
    (layers.span.end - layers.span.start, layers.output_here)
}

/// Each of unlike GPUs' offloaded slots (blocks, then the output layer), in device order, as
/// llama.cpp's `load_tensors` (src/llama-model.cpp) places them: the split (`tensor-split`,
/// else each device's free memory, `ggml_backend_dev_memory`) summed and normalized in f32, and
/// slot `j` of `slots` on the first device whose running share exceeds `j / slots`
/// (`std::upper_bound`). Free memory is taken as capacity less `reserved` and the context.
pub(crate) fn device_slots(s: &Scenario, slots: u32) -> Vec<Range<u32>> {
    let weights: Vec<f32> = match &s.tensor_split {
        Some(split) => split.iter().map(|&p| p as f32).collect(),
        None => s
            .devices
            .iter()
            .map(|id| {
                let capacity = crate::gpu_catalogue::find(id)
                    .map_or(Bytes::ZERO, |g| g.capacity_under(s.wired_limit));
                let free = capacity
                    .saturating_sub(s.reserved)
                    .saturating_sub(s.context);
                free.as_f64() as f32
            })
            .collect(),
    };
    let sum: f32 = weights.iter().sum();
    let mut running = 0.0f32;
    let ends: Vec<f32> = weights
        .iter()
        .map(|w| {
            running += w;
            running / sum
        })
        .collect();
    let mut counts = vec![0u32; ends.len()];
    for j in 0..slots {
        let at = j as f32 / slots as f32;
        let device = ends
            .iter()
            .position(|&end| end > at)
            .unwrap_or(ends.len().saturating_sub(1));
        if let Some(count) = counts.get_mut(device) {
            *count += 1;
        }
    }
    let mut start = 0;
    counts
        .into_iter()
        .map(|count| {
            start += count;
            start - count..start
        })
        .collect()
}

/// `-c` as llama.cpp applies it, before `--fit` shrinks anything, and where that came from.
pub(super) struct Context {
    pub cells: u32,
    pub from: &'static str,
}

/// The given tokens, `seq` when unset, or for `-c 0` and no `-c` the context the model was
/// trained for, its RoPE table's positions (`seq` for a shape without one). `--fit` gives each
/// stream all of it (`n_ctx_max = n_ctx_train × n_streams`, common/fit.cpp at llama.cpp@0c1e57098);
/// without `--fit`, `llama_context` takes it once over every slot (`n_ctx = n_ctx_train`,
/// src/llama-context.cpp).
pub(super) fn context(s: &Scenario, a: &Architecture) -> Context {
    let trained = match a.rope.positions {
        0 => s.seq,
        positions => positions,
    };
    let streams = if s.kv_unified { 1 } else { s.parallel.max(1) };
    let whole = if llamacpp_rules::fit(s) {
        (
            trained.saturating_mul(streams),
            "the trained context (RoPE positions) a stream, by --fit",
        )
    } else {
        (trained, "the trained context (RoPE positions)")
    };
    let (cells, from) = match s.ctx_size {
        None => (s.seq, "seq"),
        Some(ContextLength::Tokens(0) | ContextLength::Auto) => whole,
        Some(ContextLength::Tokens(n)) => (n, ""),
    };
    Context { cells, from }
}

/// The KV cache's cells: per slot, per stream and in all.
struct Cells {
    slots: u32,
    n_ctx: u32,
    per_stream: u32,
    all: f64,
    /// What a sliding-window layer keeps, in all streams.
    window: f64,
}

impl Cells {
    fn new(s: &Scenario, a: &Architecture) -> Cells {
        let slots = s.parallel.max(1);
        let n_ctx = context(s, a).cells;
        // A unified cache is one stream of every cell; otherwise each slot has its own stream.
        let (streams, per_stream) = if s.kv_unified || slots == 1 {
            (1, pad(n_ctx, CELL_PADDING))
        } else {
            (slots, pad(n_ctx.div_ceil(slots), CELL_PADDING))
        };
        let all = f64::from(per_stream) * f64::from(streams);
        // A sliding-window layer keeps the window of every sequence in its stream, plus a ubatch
        // (llama-kv-cache-iswa.cpp: `n_swa · (unified ? n_seq_max : 1) + n_ubatch`, padded).
        let window = if a.window.tokens > 0 {
            let sequences_per_stream = slots / streams;
            f64::from(pad(
                per_stream.min(
                    a.window
                        .tokens
                        .saturating_mul(sequences_per_stream)
                        .saturating_add(s.ubatch_size),
                ),
                CELL_PADDING,
            )) * f64::from(streams)
        } else {
            all
        };
        Cells {
            slots,
            n_ctx,
            per_stream,
            all,
            window,
        }
    }
}

/// The KV and recurrent-state buffers, each on its layer's device.
struct Caches {
    gpu_kv: Formula,
    host_kv: f64,
    gpu_state: Formula,
}

impl Caches {
    fn new(s: &Scenario, a: &Architecture, cells: &Cells, layers: &Layers, fx: Fx) -> Caches {
        let (k, v) = (
            s.cache_type_k.bytes_per_value(),
            s.cache_type_v.bytes_per_value(),
        );
        let k = || fx.num(k).unit(format_args!("B (K {})", s.cache_type_k));
        let per_cell = if a.mla.is_mla() {
            (fx.sym("kv-lora-rank", f64::from(a.mla.kv_rank))
                + fx.sym("rope-head-dim", f64::from(a.mla.rope_dim)))
                * k()
        } else {
            fx.sym("kv-heads", f64::from(a.kv_heads))
                * fx.sym("head-dim", f64::from(a.head_dim))
                * (k() + fx.num(v).unit(format_args!("B (V {})", s.cache_type_v)))
        };
        let attention = a.attention_layers();
        let sliding = a.window.layers.min(attention);
        // Which attention blocks slide is not known block by block: spread evenly among them.
        let sliding_share = || {
            fx.sym(
                "sliding share",
                f64::from(sliding) / f64::from(attention.max(1)),
            )
        };
        let cells_kept = (fx.num(1.0) - sliding_share()).shown_if(sliding > 0)
            * fx.sym("cells", cells.all)
            + (sliding_share() * fx.sym("window cells", cells.window)).shown_if(sliding > 0);
        let attention_kv = per_cell * cells_kept;
        let (state, conv) = a.recurrent.state_elements();
        let layer_state = (fx.sym("state", state) + fx.sym("conv", conv))
            * fx.num(FP32_BYTES).unit("B (f32)")
            * fx.sym("slots", f64::from(cells.slots));
        let (attention_blocks, recurrent_blocks) = LayerSet::mixers(a);
        let n = layers.n;
        let (gpu_range, host_range) = (layers.span.clone(), 0..layers.first_gpu_block);
        let host_layers = f64::from(attention_blocks.count_in(&host_range, n));
        Caches {
            host_kv: attention_kv.value() * host_layers,
            gpu_kv: attention_kv
                * fx.sym(
                    "GPU layers",
                    f64::from(attention_blocks.count_in(&gpu_range, n)),
                ),
            gpu_state: if a.recurrent.layers > 0 {
                layer_state
                    * fx.sym(
                        "GPU layers",
                        f64::from(recurrent_blocks.count_in(&gpu_range, n)),
                    )
            } else {
                fx.num(0.0)
            },
        }
    }
}

/// The model buffers: the offloaded blocks and the output layer on the GPU, the rest and
/// `token_embd` in system RAM.
struct ModelBuffers {
    gpu: f64,
    host: f64,
    /// The output layer's share of `gpu`, which the layer split does not divide.
    output_gpu: f64,
    output: f64,
    largest_host: f64,
    token_embd: f64,
}

impl ModelBuffers {
    fn new(s: &Scenario, a: &Architecture, layers: &Layers) -> ModelBuffers {
        let span = layers.span.clone();
        let weights = file_weights(s, a, layers.first_gpu_block, span, s.n_cpu_moe);
        let placed = &weights.placed;
        let output_gpu = if layers.output_here {
            weights.output
        } else {
            0.0
        };
        ModelBuffers {
            gpu: placed.gpu + output_gpu,
            host: weights.token_embd + placed.host + (weights.output - output_gpu),
            output_gpu,
            output: weights.output,
            largest_host: placed.largest_host,
            token_embd: weights.token_embd,
        }
    }

    /// The fullest GPU of a layer split: its share of the blocks, and the output layer.
    fn fullest_gpu(&self, layers: &Layers, fx: Fx, units: Units) -> Formula {
        let output = || {
            fx.num(self.output_gpu)
                .words("the output layer")
                .size(units)
                .shown_if(self.output_gpu > 0.0)
        };
        (fx.num(self.gpu).words("offloaded tensors").size(units) - output()) * layers.share_of(fx)
            + output()
    }
}

/// The compute buffers on the GPU (with its formula) and in pinned host memory, written by the
/// same branches that size them.
struct ComputeBuffers {
    gpu: Formula,
    host: f64,
}

impl ComputeBuffers {
    fn new(
        s: &Scenario,
        a: &Architecture,
        cells: &Cells,
        layers: &Layers,
        model: &ModelBuffers,
        fx: Fx,
    ) -> ComputeBuffers {
        let u = f64::from(s.ubatch_size.min(cells.n_ctx).max(1));
        let (e, f, vocab) = (
            f64::from(a.hidden),
            f64::from(a.ffn.max(a.moe.expert_ffn * a.moe.per_token)),
            f64::from(a.vocab),
        );
        let logit_rows = match llamacpp_rules::logit_rows(s) {
            LogitRows::Slots => u.min(f64::from(cells.slots).min(f64::from(LLAMA_SERVER_BATCH))),
            LogitRows::Ubatch => u,
        };
        let fp32 = || fx.num(FP32_BYTES);
        let logits =
            || fp32() * fx.sym("logit rows", logit_rows) * (fx.sym("V", vocab) + fx.sym("E", e));
        // The KQ mask holds a stream's cells for each token of the ubatch: in the type the host
        // writes it (f16 with flash attention since PR #23764, else f32), plus, before that PR,
        // its f16 cast on the GPU with flash attention.
        let mask = fx.sym("cells", f64::from(cells.per_stream)) * fx.sym("u", u);
        let (host_mask_bytes, cast_bytes) = mask_bytes(s);
        let mask_copies = fx.num(host_mask_bytes + cast_bytes) * mask.clone();
        let vulkan = s.gpu_backend == GpuBackend::Vulkan;
        let layer_work = layer_work(s, a, u, e, f, mask.clone(), mask_copies.clone());
        // ggml-cuda runs a matmul of a CPU-resident weight on the GPU when the batch is large:
        // the weight is copied into the compute buffer beside the matmul's input and output.
        let offloads_ops = s.ubatch_size >= GPU_OFFLOAD_MIN_BATCH;
        let block_copy = if layers.some_blocks_on_the_cpu() && offloads_ops {
            (fx.num(model.largest_host)
                .words("the largest CPU block weight")
                + fp32() * fx.sym("u", u) * (fx.sym("E", e) + fx.sym("F", f)))
            .remark("the largest CPU block weight is copied for its matmul")
        } else {
            fx.num(0.0).shown_if(false)
        };
        let inputs = host_mask_bytes * mask.value() + FP32_BYTES * u * e;
        // With no layer offloaded the CPU backend runs the whole graph, in its own compute buffer.
        let (gpu, host) = if layers.ngl == 0 {
            let on_the_cpu = layer_work.value().max(logits().value());
            (block_copy, on_the_cpu)
        } else if layers.output_here {
            // Vulkan keeps the mask's copies allocated below everything after them
            // (llama-035/036).
            let kept_masks = if vulkan {
                mask_copies.remark("Vulkan keeps the masks")
            } else {
                fx.num(0.0).shown_if(false)
            };
            let gpu = layer_work.max(logits() + kept_masks).max(block_copy);
            (gpu, inputs)
        } else if layers.output_on_gpu {
            // The logits are another GPU's, of unlike GPUs.
            (layer_work.max(block_copy), inputs)
        } else if offloads_ops {
            // The output matmul runs on the GPU with a copy of the output weight.
            let output_copy = fx.num(model.output).words("the output weight") + logits();
            let gpu = layer_work.max(output_copy).max(block_copy);
            (
                gpu.remark("the CPU output weight is copied for its matmul"),
                inputs,
            )
        } else {
            (layer_work.max(block_copy), inputs + logits().value())
        };
        ComputeBuffers { gpu, host }
    }
}

/// Bytes per mask value: as the host writes it, and its f16 cast on the GPU, which flash
/// attention needed before PR #23764 (`KqMask`).
fn mask_bytes(s: &Scenario) -> (f64, f64) {
    match (s.flash_attn, llamacpp_rules::kq_mask(s)) {
        (true, KqMask::F16) => (2.0, 0.0),
        (true, KqMask::F32) => (FP32_BYTES, 2.0),
        (false, _) => (FP32_BYTES, 0.0),
    }
}

/// A layer's working set in the compute buffer.
fn layer_work(
    s: &Scenario,
    a: &Architecture,
    u: f64,
    e: f64,
    f: f64,
    mask: Formula,
    mask_copies: Formula,
) -> Formula {
    let fx = mask.fx();
    let fp32_u = || fx.num(FP32_BYTES) * fx.sym("u", u);
    let e = || fx.sym("E", e);
    if s.flash_attn {
        let ffn = fp32_u() * (fx.num(2.0) * e() + fx.num(3.0) * fx.sym("F", f));
        // With an f16 mask from the host there is no cast: the FFN runs beside the mask.
        if s.gpu_backend == GpuBackend::Vulkan || llamacpp_rules::kq_mask(s) == KqMask::F16 {
            return ffn + mask_copies;
        }
        // The FFN with the f16 mask alive, or the cast itself, computed in the first attention
        // layer (the module's doc says what sits below it).
        let q_and_gate = if a.attention_gate {
            fp32_u() * fx.sym("E_q (Q + gate)", a.q_proj_width())
        } else {
            fx.num(0.0).shown_if(false)
        };
        let at_the_cast =
            fp32_u() * (fx.num(2.0) * e() + fx.sym("E_q", a.q_width())) + q_and_gate + mask_copies;
        (ffn + fx.num(2.0) * mask).max(at_the_cast)
    } else {
        let heads = fx.sym("H", f64::from(a.heads));
        let scores =
            fx.num(FP32_BYTES) * (heads * mask.clone() + mask + fx.num(4.0) * fx.sym("u", u) * e());
        if a.fused_qkv {
            // A fused QKV output keeps its roped Q and K beside it (the module's doc says why).
            let roped_copies = fp32_u()
                * fx.sym("H + H_kv", f64::from(a.heads + a.kv_heads))
                * fx.sym("head-dim", f64::from(a.head_dim));
            (scores + roped_copies).remark("fused QKV")
        } else {
            scores
        }
    }
}

pub(super) fn push(s: &Scenario, r: &Resolved, d: &Deployment, stack: &mut Stack) -> Serving {
    let ex = stack.explain;
    let fx = stack.fx();
    let a = &r.arch;
    let layers = Layers::new(s, r, a.layers);
    let cells = Cells::new(s, a);
    let caches = Caches::new(s, a, &cells, &layers, fx);
    let model = ModelBuffers::new(s, a, &layers);
    let compute = ComputeBuffers::new(s, a, &cells, &layers, &model, fx);
    let kv_pool_bytes = caches.gpu_kv.value() * layers.share() + caches.host_kv;
    let host_kv = caches.host_kv;
    push_gpu_buffers(s, &layers, caches, &model, compute.gpu, stack);
    overhead::push_context(s, stack);
    let output_buffer = f64::from(a.vocab) * f64::from(cells.slots) * FP32_BYTES;
    let host_components = host_buffers(
        ex,
        [
            (
                ComponentId::Weights,
                "Model buffer (system RAM)",
                model.host,
            ),
            (ComponentId::KvCache, "KV buffer (system RAM)", host_kv),
            (
                ComponentId::ComputeBuffer,
                "Compute buffer (pinned host)",
                compute.host,
            ),
            (
                ComponentId::OutputBuffer,
                "Output buffer (pinned host)",
                output_buffer,
            ),
        ],
    );
    let reason = refusal(s, d, stack.total());
    Serving {
        runtime: Runtime::LlamaCpp,
        kv_pool_bytes: Bytes::from_f64(kv_pool_bytes),
        kv_tokens: cells.all as u64,
        kv_blocks: None,
        max_concurrency: f64::from(cells.slots),
        context_tokens: cells.per_stream,
        starts: reason.is_none(),
        reason,
        host: Host {
            bytes: Some(host_components.iter().map(|c| c.bytes).sum()),
            components: host_components,
            layer_bytes: Bytes::from_f64(model.host - model.token_embd),
            layers: layers.first_gpu_block,
        },
        command: None,
        settings: settings(s, a, &layers, &cells, ex),
    }
}

/// The GPU's buffers, in the order llama.cpp's log prints them. The weights replace the
/// model-load components the detailed method pushed: the file's tensors are the buffer.
fn push_gpu_buffers(
    s: &Scenario,
    layers: &Layers,
    caches: Caches,
    model: &ModelBuffers,
    compute: Formula,
    stack: &mut Stack,
) {
    let fx = stack.fx();
    stack.components.retain(|c| !c.id.is_model_load());
    let source: &dyn std::fmt::Display = if s.gguf_weights.is_some() {
        &"the file's tensors"
    } else {
        &s.quant
    };
    let placed = format_args!(
        "{source}: {} of {} blocks{} on {}",
        layers.span.len(),
        layers.n,
        if layers.output_here {
            " and the output layer"
        } else {
            ""
        },
        if layers.gpus > 1 {
            "the GPUs, split by layer"
        } else if layers.span.len() < layers.gpu_blocks as usize {
            "this GPU, of a layer split"
        } else {
            "the GPU"
        }
    );
    stack.push(
        ComponentId::Weights,
        "Model buffer (GPU)",
        model.fullest_gpu(layers, fx, s.units).remark(placed),
    );
    stack.push(
        ComponentId::KvCache,
        "KV buffer (GPU)",
        caches.gpu_kv * layers.share_of(fx),
    );
    stack.push(
        ComponentId::RecurrentState,
        "Recurrent state (GPU)",
        caches.gpu_state * layers.share_of(fx),
    );
    stack.push(
        ComponentId::ComputeBuffer,
        "Compute buffer (GPU)",
        compute.remark("the peak of the layer's work and the logits"),
    );
}

/// System RAM's buffers, those that hold anything.
fn host_buffers(explain: bool, parts: [(ComponentId, &str, f64); 4]) -> Vec<Component> {
    parts
        .into_iter()
        .filter(|&(_, _, bytes)| Bytes::from_f64(bytes).0 > 0)
        .map(|(id, label, bytes)| Component {
            id,
            label: if explain {
                label.to_string()
            } else {
                String::new()
            },
            bytes: Bytes::from_f64(bytes),
            formula: String::new(),
        })
        .collect()
}

/// llama.cpp's refusal when its GPU buffers exceed what is free.
fn refusal(s: &Scenario, d: &Deployment, total: Bytes) -> Option<String> {
    let free = d
        .cuda_total
        .saturating_sub(s.context)
        .saturating_sub(s.reserved);
    let buffers = total.saturating_sub(s.context);
    (buffers > free).then(|| {
        format!(
            "The GPU buffers need {} MiB and about {} MiB are free: llama.cpp's allocation fails (\"cudaMalloc failed: out of memory\"). Lower --n-gpu-layers, the context or the quant.",
            buffers.0 / MIB,
            free.0 / MIB
        )
    })
}

/// The settings as llama.cpp applies them.
fn settings(
    s: &Scenario,
    a: &Architecture,
    layers: &Layers,
    cells: &Cells,
    explain: bool,
) -> Vec<Setting> {
    let mut settings = Settings::new(explain);
    settings.given("quant", s.quant);
    match &s.gguf_weights {
        Some(file) => settings.given(
            "gguf-weights",
            format_args!("the file's tensors, {} blocks", file.blocks.len()),
        ),
        None => settings.push("gguf-weights", "none", false, "sized from the quant"),
    }
    settings.push(
        "n-gpu-layers",
        layers.ngl,
        s.n_gpu_layers.is_some(),
        "all layers",
    );
    let given = matches!(s.ctx_size, Some(ContextLength::Tokens(n)) if n > 0);
    settings.push("ctx-size", cells.n_ctx, given, context(s, a).from);
    settings.given("parallel", cells.slots);
    settings.given("cache-type-k", s.cache_type_k);
    settings.given("cache-type-v", s.cache_type_v);
    settings.given("flash-attn", s.flash_attn);
    settings.given("ubatch-size", s.ubatch_size);
    let build = Rules::new(s.llama_cpp_build);
    settings.given("llama-cpp-build", s.llama_cpp_build);
    settings.given_or("logit-rows", s.logit_rows, build.default_logit_rows());
    settings.given("kv-unified", s.kv_unified);
    settings.given_or(
        "offload-output",
        s.offload_output,
        build.default_offload_output(),
    );
    settings.given_or("kq-mask", s.kq_mask, build.default_kq_mask());
    settings.given("gpu-backend", s.gpu_backend);
    settings.given("n-cpu-moe", s.n_cpu_moe);
    let on = if llamacpp_rules::fit(s) { "on" } else { "off" };
    settings.push("fit", on, s.fit.is_some(), build.default_fit().1);
    match &s.tensor_split {
        Some(split) => settings.given("tensor-split", Proportions.format(split)),
        None => settings.push("tensor-split", "auto", false, "by each GPU's free memory"),
    }
    settings.into_list()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer's class, as `count_in` finds it for the layer alone.
    fn class_of(classes: &LayerClasses, layer: u32) -> usize {
        let counts = classes.count_in(&(layer..layer + 1));
        assert_eq!(counts.iter().sum::<u32>(), 1, "layer {layer} in one class");
        counts.iter().position(|&c| c == 1).unwrap_or(LAYER_CLASSES)
    }

    #[test]
    fn layers_of_one_class_answer_every_predicate_alike() {
        let predicates = |i: u32, n: u32| {
            let (i, n) = (i64::from(i), i64::from(n));
            (
                i < n / 16,
                i < n / 8,
                i >= 7 * n / 8,
                // use_more_bits
                i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2,
                i < 2,
                i < 4,
            )
        };
        for n in 1..=512 {
            let classes = LayerClasses::new(n);
            let mut seen = [None; LAYER_CLASSES];
            for i in 0..n {
                let class = class_of(&classes, i);
                assert!(class < LAYER_CLASSES, "{n} layers");
                let first = *seen[class].get_or_insert(predicates(i, n));
                assert_eq!(first, predicates(i, n), "layer {i} of {n}");
            }
        }
    }

    #[test]
    fn classes_are_counted_and_found_without_visiting_layers_as_layer_by_layer() {
        for n in (1..=130).chain([255, 256, 257, 1000]) {
            let classes = LayerClasses::new(n);
            let class: Vec<usize> = (0..n).map(|i| class_of(&classes, i)).collect();
            let mut last = [None; LAYER_CLASSES];
            for (i, &c) in (0..n).zip(&class) {
                last[c] = Some(i);
            }
            assert_eq!(classes.last_layers(), last, "{n} layers");
            let step = if n > 130 { 37 } else { 1 };
            for from in (0..=n).step_by(step) {
                for to in (from..=n + 2).step_by(step) {
                    let mut counted = [0; LAYER_CLASSES];
                    for &c in class
                        .get(from as usize..(to.min(n)) as usize)
                        .unwrap_or_default()
                    {
                        counted[c] += 1;
                    }
                    assert_eq!(
                        classes.count_in(&(from..to)),
                        counted,
                        "{from}..{to} of {n}"
                    );
                }
            }
        }
    }

    /// The efficiency llama.cpp's rules give a scenario of Llama 3.1 8B on `gpu`, without flash
    /// attention.
    fn efficiency_of(gpu: &str, quant: &str, build: &str) -> Efficiency {
        let (s, errors) = crate::query::scenario_from_query(&format!(
            "model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu={gpu}&quant={quant}\
             &flash-attn=false&llama-cpp-build={build}"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        let r = s.resolve().expect("the scenario resolves");
        LlamaCpp.efficiency(&s, &r)
    }

    #[test]
    fn a_2024_build_caps_each_file_at_its_batch_one_kernels_rate() {
        // ggml-cuda's `ggml_cuda_mul_mat` at b2843: F16 through dmmv, every quantized type
        // through mmvq (which clears dmmv wherever it applies).
        let ceiling = |quant| {
            efficiency_of("a100-80", quant, "b2843")
                .clocked
                .map(|c| c.sm_ceiling)
        };
        assert_eq!(ceiling("F16"), Some(SmCeiling::PerCycle(DMMV_2024)));
        for quant in ["Q4_K_M", "Q8_0", "Q4_0"] {
            assert_eq!(
                ceiling(quant),
                Some(SmCeiling::PerSecond(MMVQ_2024)),
                "{quant}"
            );
        }
        // Only the per-SM ceiling differs between the two kernels.
        let (f16, q4) = (LLAMA_CPP_CUDA_2024, LLAMA_CPP_CUDA_2024_MMVQ);
        assert_eq!(
            Efficiency {
                clocked: f16.clocked,
                ..q4
            },
            f16
        );
        // Builds since int8 MMQ keep one unclocked constant whatever the file.
        assert_eq!(efficiency_of("a100-80", "F16", "latest"), LLAMA_CPP_CUDA);
        assert_eq!(efficiency_of("a100-80", "Q4_K_M", "latest"), LLAMA_CPP_CUDA);
    }

    #[test]
    fn flash_attention_launches_19_of_a_layers_22_kernels() {
        let (s, errors) = crate::query::scenario_from_query(
            "model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=a100-80&flash-attn=true",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let r = s.resolve().expect("the scenario resolves");
        let eff = LlamaCpp.efficiency(&s, &r);
        let off = efficiency_of("a100-80", "Q4_K_M", "latest");
        assert!((eff.layer_s / off.layer_s - 19.0 / 22.0).abs() < 1e-12);
        let cpu = eff.cpu_layer_s / off.cpu_layer_s;
        assert!((cpu - 19.0 / 22.0).abs() < 1e-12);
        assert_eq!(
            Efficiency {
                layer_s: off.layer_s,
                cpu_layer_s: off.cpu_layer_s,
                ..eff
            },
            off
        );
        // A 2024 build's time per layer is in cycles, and shortens the same way.
        let cycles = |e: Efficiency| e.clocked.map(|c| c.layer_cycles).unwrap_or(0.0);
        let clocked = with_flash_attention(LLAMA_CPP_CUDA_2024);
        assert!((cycles(clocked) / cycles(LLAMA_CPP_CUDA_2024) - 19.0 / 22.0).abs() < 1e-12);
    }
}
