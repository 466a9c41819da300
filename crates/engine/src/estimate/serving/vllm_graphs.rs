//! The CUDA graphs vLLM V1 captures once the KV pool is sized, as v0.19 captures them
//! (`GPUModelRunner.capture_model`, vllm/v1/worker/gpu_model_runner.py). Its log line
//! `Graph capturing finished in N secs, took X GiB` is the drop in free device memory across the
//! capture, which is what this module estimates.
//!
//! - Sizes (`VllmConfig._set_cudagraph_sizes`, vllm/config/vllm.py): `[1, 2, 4] +
//!   range(8, 256, 8) + range(256, max + 1, 16)`, where `max` is `--max-cudagraph-capture-size`,
//!   by default `min(2 × max_num_seqs, 512)`, and never above `max_num_batched_tokens`.
//!   Piecewise graphs are captured at every size; full graphs at the sizes of uniform decode
//!   batches, at most `max_num_seqs` requests of one token (`CudagraphDispatcher`).
//! - Memory: every graph shares one pool, captured largest first so that the smaller reuse its
//!   blocks. vLLM's own estimator has the same shape (`profile_cudagraph_memory`: the first
//!   capture, then `(n − 1) ×` the second's cost), and so has this one:
//!   - the pool, [`GRAPH_POOL_BYTES`];
//!   - each graph's kernel nodes, per layer on the rank: [`GRAPH_BYTES_PER_DENSE_LAYER`] and
//!     [`GRAPH_BYTES_PER_MOE_LAYER`], plus [`GRAPH_BYTES_PER_SHARED_EXPERT`] where a MoE layer
//!     also runs a shared expert (a dense MLP of its own);
//!   - with full graphs on FlashAttention 3 (Hopper), its split-KV accumulators, which the
//!     largest decode graph allocates in the pool: fp32 `[splits, tokens, heads, head_dim_v]` with
//!     `flash_attn_max_num_splits_for_cuda_graph` = 32 splits (vllm/config/attention.py;
//!     `FlashAttentionMetadataBuilder` passes it as `num_splits` only under full graphs and the
//!     FA3 scheduler). MLA's FlashAttention backend splits the latent (`kv_lora_rank` wide).
//!
//! The four constants are fitted to the 45 H100 logs of llm-d-planner's vLLM 0.19.0 sweep (dense and
//! MoE, 2B–72B, TP 1–4, PP 1–4), whose DEBUG lines also log vLLM's per-graph estimates: 4–8 MiB
//! per graph for 26–48-layer models, 18–20 MiB for 80 layers at TP 2 and 4. Left out: NCCL's
//! all-reduce graphs on PCIe cards without vLLM's custom all-reduce (L40S at TP 4 and 8 logs
//! about twice this), and 0.10's denser capture list (67 sizes).

use super::vllm_rules::{Rule, Rules};
use super::Settings;
use crate::dtype::{Dtype, FP32_BYTES};
use crate::estimate::formula::{Formula, Fx};
use crate::model::Architecture;
use crate::runtime::{AttentionBackend, CudagraphMode};
use crate::scenario::{Resolved, Scenario};
use crate::units::{Bytes, KIB, MIB};

/// The graph pool: the largest capture's intermediate tensors and the capture's workspaces.
pub const GRAPH_POOL_BYTES: Bytes = Bytes(181 * MIB);
/// One captured graph's kernel nodes for one dense (or recurrent) layer.
pub const GRAPH_BYTES_PER_DENSE_LAYER: Bytes = Bytes(164 * KIB);
/// One captured graph's kernel nodes for one mixture-of-experts layer: the router, top-k and the
/// fused experts' alignment and GEMM kernels in place of the dense MLP.
pub const GRAPH_BYTES_PER_MOE_LAYER: Bytes = Bytes(236 * KIB);
/// What a shared expert adds to a MoE layer's nodes in each graph (DeepSeek's, Qwen1.5-MoE's,
/// Llama 4's): its own gate/up and down GEMMs, activation and gate.
pub const GRAPH_BYTES_PER_SHARED_EXPERT: Bytes = Bytes(111 * KIB);
/// `flash_attn_max_num_splits_for_cuda_graph`'s default.
const FLASH_ATTN_SPLITS: f64 = 32.0;
/// vLLM's cap on the default largest capture size, off data-centre Blackwell.
const MAX_DEFAULT_CAPTURE: u32 = 512;

/// The sizes vLLM captures piecewise graphs at, smallest first.
fn capture_sizes(largest: u32) -> Vec<u32> {
    let small = [1, 2, 4].into_iter().filter(|&n| n <= largest);
    let by_eight = (8..largest.saturating_add(1).min(256)).step_by(8);
    let by_sixteen = (256..=largest).step_by(16);
    small.chain(by_eight).chain(by_sixteen).collect()
}

/// The backend the graphs run, whether it is FlashAttention 3 (whose full graphs keep split
/// buffers), and where the choice came from.
fn attention(s: &Scenario, r: &Resolved) -> (AttentionBackend, bool, &'static str) {
    let hopper = r.gpu.is_some_and(|g| g.hopper) && s.vram.is_none();
    match s.attention_backend {
        AttentionBackend::Triton => (AttentionBackend::Triton, false, ""),
        AttentionBackend::FlashAttn => (AttentionBackend::FlashAttn, hopper, ""),
        // FlashAttention takes fp16 and bf16 only (`FlashAttentionBackend.get_supported_dtypes`).
        AttentionBackend::Auto if r.act_dtype == Dtype::Fp32 => (
            AttentionBackend::Triton,
            false,
            "vLLM's choice for fp32 (FlashAttention takes 16-bit only)",
        ),
        AttentionBackend::Auto if hopper => (
            AttentionBackend::FlashAttn,
            true,
            "vLLM's choice: FlashAttention 3 on Hopper",
        ),
        AttentionBackend::Auto => (
            AttentionBackend::FlashAttn,
            false,
            "vLLM's choice: FlashAttention 2, as off Hopper (or on a GPU not in the catalogue), without split buffers",
        ),
    }
}

/// What the capture holds; nothing under `--enforce-eager`. `(tp, pp)` are the ranks, `(seqs,
/// batched_tokens)` the scheduler's limits.
pub(super) fn cuda_graphs(
    s: &Scenario,
    r: &Resolved,
    rules: Rules,
    (tp, pp): (u32, u32),
    (seqs, batched_tokens): (u32, u32),
    settings: &mut Settings,
    fx: Fx,
) -> Formula {
    settings.given("enforce-eager", s.enforce_eager);
    if s.enforce_eager {
        return fx.num(0.0).remark("--enforce-eager: no graphs");
    }
    let ceiling = rules.capture_ceiling(r.gpu.filter(|_| s.vram.is_none()));
    let capture = Capture::new(s, rules, ceiling, (seqs, batched_tokens), settings);
    let graphs = fx
        .num((capture.piecewise + capture.full) as f64)
        .unit(format_args!(
            "graphs ({} piecewise, {} full)",
            capture.piecewise, capture.full
        ));
    let a = &r.arch;
    let layers = LayerNodes::new(a, pp);
    let per_layer = |bytes: f64| fx.num(bytes).unit("B");
    let nodes = graphs
        * (fx.num(layers.dense).unit("dense layers")
            * per_layer(GRAPH_BYTES_PER_DENSE_LAYER.as_f64())
            + fx.num(layers.moe).unit("MoE layers") * per_layer(layers.per_moe_layer as f64));
    let (backend, fa3, backend_from) = attention(s, r);
    settings.push(
        "attention-backend",
        backend,
        s.attention_backend != AttentionBackend::Auto,
        backend_from,
    );
    let split_buffers = if fa3 && capture.full > 0 {
        flash_attn_split_buffers(a, tp, capture.decode_tokens, fx)
    } else {
        fx.num(0.0).shown_if(false)
    };
    fx.num(GRAPH_POOL_BYTES.as_f64()).words("pool").exact_size() + nodes + split_buffers
}

/// The graphs vLLM captures: how many of each kind, and the largest decode batch.
struct Capture {
    piecewise: usize,
    full: usize,
    decode_tokens: u32,
}

impl Capture {
    fn new(
        s: &Scenario,
        rules: Rules,
        ceiling: u32,
        (seqs, batched_tokens): (u32, u32),
        settings: &mut Settings,
    ) -> Capture {
        let mode = s.cudagraph_mode;
        settings.push(
            "cudagraph-mode",
            mode,
            mode != CudagraphMode::FullAndPiecewise,
            "vLLM's default since 0.11",
        );
        let unclamped = s
            .max_cudagraph_capture_size
            .unwrap_or(seqs.saturating_mul(2).min(ceiling));
        let largest = unclamped.min(batched_tokens);
        settings.push(
            "max-cudagraph-capture-size",
            largest,
            s.max_cudagraph_capture_size.is_some(),
            if ceiling > MAX_DEFAULT_CAPTURE {
                "vLLM's default on data-centre Blackwell since 0.28: min(2 × max-num-seqs, 1024, max-num-batched-tokens)"
            } else {
                "vLLM's default: min(2 × max-num-seqs, 512, max-num-batched-tokens)"
            },
        );
        let mut sizes = capture_sizes(largest);
        if rules.applies(Rule::CaptureBatchedTokens) && batched_tokens <= largest {
            sizes.push(batched_tokens);
        }
        if rules.applies(Rule::CaptureMaxSeqs) && seqs <= unclamped && seqs <= batched_tokens {
            sizes.push(seqs);
        }
        sizes.sort_unstable();
        sizes.dedup();
        let decode = sizes.iter().filter(|&&n| n <= seqs);
        Capture {
            piecewise: if mode.piecewise() { sizes.len() } else { 0 },
            full: if mode.full() {
                decode.clone().count()
            } else {
                0
            },
            decode_tokens: decode.clone().next_back().copied().unwrap_or(0),
        }
    }
}

/// The layers each graph holds nodes for, on one pipeline stage.
struct LayerNodes {
    dense: f64,
    moe: f64,
    /// A MoE layer's nodes, with its shared expert's.
    per_moe_layer: u64,
}

impl LayerNodes {
    fn new(a: &Architecture, pp: u32) -> LayerNodes {
        let stages = f64::from(pp.max(1));
        let moe_layers = if a.moe.experts > 0 {
            a.layers.saturating_sub(a.moe.dense_layers)
        } else {
            0
        };
        LayerNodes {
            dense: f64::from(a.layers - moe_layers) / stages,
            moe: f64::from(moe_layers) / stages,
            per_moe_layer: GRAPH_BYTES_PER_MOE_LAYER.0
                + if a.moe.shared_ffn > 0 {
                    GRAPH_BYTES_PER_SHARED_EXPERT.0
                } else {
                    0
                },
        }
    }
}

/// FlashAttention 3's split-KV buffers for the largest full decode graph: 32 splits of every
/// token's heads on this rank, each as wide as a value, in fp32.
fn flash_attn_split_buffers(a: &Architecture, tp: u32, decode_tokens: u32, fx: Fx) -> Formula {
    let heads = f64::from(a.heads.div_ceil(tp.max(1)));
    let value_width = if a.mla.is_mla() {
        a.mla.kv_rank
    } else {
        a.head_dim
    };
    fx.num(FLASH_ATTN_SPLITS)
        .words("FlashAttention 3 split buffers:")
        * fx.num(f64::from(decode_tokens)).unit("tokens")
        * fx.num(heads).unit("heads")
        * fx.num(f64::from(value_width)).unit("wide")
        * fx.num(FP32_BYTES).unit("B")
}

#[cfg(test)]
mod tests {
    use super::capture_sizes;

    #[test]
    fn capture_sizes_follow_vllms_pattern() {
        // "Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)".
        let sizes = capture_sizes(512);
        assert_eq!(sizes.len(), 51);
        assert_eq!(sizes.iter().filter(|&&n| n <= 256).count(), 35);
        // gpt-oss's override to 1024: "PIECEWISE=83 (largest=1024)".
        assert_eq!(capture_sizes(1024).len(), 83);
        assert_eq!(capture_sizes(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(capture_sizes(3), vec![1, 2]);
    }
}
