//! Inference under transformers: the KV cache for every token the cache holds (`seq`, or a static
//! cache's `max-cache-len`, by cache class), and one layer's transient tensors for the tokens one
//! forward processes (`prompt`, a prefill chunk; the prompt's logits are in `logits`).

use super::formula::{Formula, Fx};
use super::parallel::Split;
use super::per_token::{eager_scores_bytes_per_token, layer_bytes_per_token};
use super::stack::Stack;
use crate::dtype::{Dtype, QuantKernel, BYTE, FP32_BYTES, HALF_BYTES, NIBBLE_BYTES};
use crate::estimate::ComponentId;
use crate::model::{Architecture, MatrixShape};
use crate::scenario::{Resolved, Scenario};
use crate::sharding::Sharding;
use crate::workload::{KvCache, MlaCache};

/// Keys and values: two tensors per layer.
const KV_TENSORS: f64 = 2.0;

/// `QuantizedCache`'s defaults (transformers `cache_utils.py`, quanto backend): values quantized
/// to 4 bits in groups of `q_group_size = 64`, each group with a half-precision scale and
/// zero-point, and the newest `residual_length = 128` tokens kept unquantized.
const QUANTIZED_CACHE_GROUP: f64 = 64.0;
const QUANTIZED_CACHE_BYTES_PER_VALUE: f64 =
    (QUANTIZED_CACHE_GROUP * NIBBLE_BYTES + 2.0 * HALF_BYTES) / QUANTIZED_CACHE_GROUP;
const QUANTIZED_CACHE_RESIDUAL_TOKENS: f64 = 128.0;

/// The tokens one forward processes: training's whole sequence; in inference the prompt or a
/// prefill chunk, all of `seq` when unset.
pub(super) fn forward_tokens(s: &Scenario) -> f64 {
    let prompt = if s.mode.is_training() {
        s.seq
    } else {
        s.prompt.unwrap_or(s.seq)
    };
    f64::from(prompt)
}

/// The tokens each full-attention layer's cache is allocated for.
fn cached_tokens(s: &Scenario) -> f64 {
    match s.cache {
        KvCache::Static => f64::from(s.max_cache_len.unwrap_or(s.seq)),
        KvCache::Dynamic | KvCache::Quantized => f64::from(s.seq),
    }
}

/// Bytes per cached value over `tokens` tokens: the cache dtype's `b`, or the quantized cache's
/// 4-bit groups with its unquantized residual.
fn bytes_per_cached_value(s: &Scenario, tokens: f64, b: f64) -> f64 {
    if s.cache != KvCache::Quantized || tokens <= 0.0 {
        return b;
    }
    let residual = tokens.min(QUANTIZED_CACHE_RESIDUAL_TOKENS);
    ((tokens - residual) * QUANTIZED_CACHE_BYTES_PER_VALUE + residual * b) / tokens
}

/// Pushes the KV cache, one component per kind of layer: full attention caches every token in
/// context, a sliding-window layer at most its window (transformers' `SlidingWindowCache`,
/// vLLM's `SlidingWindowSpec`), and an MLA layer its latent or its expanded heads ([`MlaCache`]).
fn push_kv_cache(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let seq = cached_tokens(s);
    let cache = Cache {
        batch: f64::from(s.batch),
        seq,
        b: bytes_per_cached_value(s, seq, r.kv_dtype.bytes()),
    };
    let a = &r.arch;
    if a.mla.is_mla() {
        push_mla_cache(s, a, stack, split, &cache);
        return;
    }
    // QuantizedCache builds every layer at full length, sliding or not.
    let windowed = if s.cache == KvCache::Quantized {
        0
    } else {
        a.window.layers.min(a.attention_layers())
    };
    push_full_attention_cache(
        a,
        stack,
        split,
        &cache,
        a.attention_layers() - windowed,
        windowed > 0,
    );
    if windowed > 0 {
        push_sliding_window_cache(s, a, stack, split, &cache, windowed);
    }
}

/// What the cache holds: `batch` sequences of `seq` cached tokens, at `b` bytes a value.
struct Cache {
    batch: f64,
    seq: f64,
    b: f64,
}

impl Cache {
    /// Keys and values, per token and layer.
    fn kv_bytes_per_token_layer(&self, a: &Architecture, fx: Fx) -> Formula {
        fx.num(KV_TENSORS) * fx.sym("kv-heads·head-dim", a.kv_width()) * fx.num(self.b).unit("B")
    }
}

/// An MLA layer caches its latent and RoPE key, or (transformers) every head's keys and values.
fn push_mla_cache(s: &Scenario, a: &Architecture, stack: &mut Stack, split: &Split, cache: &Cache) {
    let fx = stack.fx();
    let m = &a.mla;
    let Cache { batch, seq, b } = *cache;
    // The latent is one tensor shared by every head, so tensor parallelism replicates it on
    // each rank (vLLM's `MLAAttentionSpec`: one KV head, not split by TP); a pipeline still
    // divides the layers.
    let ways = if s.sharding == Sharding::Tensor && s.mla_cache == MlaCache::Latent {
        1.0
    } else {
        split.model_parallel
    };
    let (per_token_layer, label) = match s.mla_cache {
        MlaCache::Latent => (
            fx.sym("kv-lora-rank", f64::from(m.kv_rank))
                + fx.sym("rope-head-dim", f64::from(m.rope_dim)),
            "KV cache (MLA latent)",
        ),
        MlaCache::Expanded => (
            fx.sym("heads", f64::from(a.heads))
                * (fx.sym("head-dim", f64::from(a.head_dim))
                    + fx.sym("v-head-dim", f64::from(m.v_head_dim))),
            "KV cache (MLA, expanded per head)",
        ),
    };
    let bytes = fx.sym("L", f64::from(a.attention_layers()))
        * per_token_layer
        * fx.sym("b", batch)
        * fx.sym("cached", seq)
        * fx.num(b).unit("B");
    stack.push(ComponentId::KvCache, label, bytes / split.ways(fx, ways));
}

/// `full` layers that cache every token; labelled as one kind of two when `beside_sliding`.
fn push_full_attention_cache(
    a: &Architecture,
    stack: &mut Stack,
    split: &Split,
    cache: &Cache,
    full: u32,
    beside_sliding: bool,
) {
    let fx = stack.fx();
    let full_bytes = fx.sym("L", f64::from(full))
        * cache.kv_bytes_per_token_layer(a, fx)
        * fx.sym("b", cache.batch)
        * fx.sym("cached", cache.seq);
    stack.push(
        ComponentId::KvCache,
        if beside_sliding {
            "KV cache (full-attention layers)"
        } else {
            "KV cache"
        },
        full_bytes / split.ways(fx, split.model_parallel),
    );
}

/// `windowed` sliding-window layers, each caching at most its window.
fn push_sliding_window_cache(
    s: &Scenario,
    a: &Architecture,
    stack: &mut Stack,
    split: &Split,
    cache: &Cache,
    windowed: u32,
) {
    let fx = stack.fx();
    let cached = fx
        .sym("cached", cache.seq)
        .min(fx.sym("window", f64::from(a.window.tokens)));
    let bytes = fx.sym("L_window", f64::from(windowed))
        * cache.kv_bytes_per_token_layer(a, fx)
        * fx.sym("b", f64::from(s.batch))
        * cached
        / split.ways(fx, split.model_parallel);
    stack.push(
        ComponentId::KvCacheSliding,
        "KV cache (sliding-window layers)",
        bytes,
    );
}

/// A recurrent layer's state per sequence, whatever the context: the `heads × head_dim × state`
/// matrix in the state's format (`ssm-dtype`) and the convolution's last `conv − 1` inputs in the
/// activation dtype.
fn push_recurrent_state(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let rec = &r.arch.recurrent;
    if rec.layers == 0 {
        return;
    }
    let fx = stack.fx();
    let (state, conv) = rec.state_elements();
    let (b, e) = (r.state_dtype, r.act_dtype);
    let per_sequence = fx.sym("L_rec", f64::from(rec.layers))
        * (fx.sym("heads·head-dim·state", state) * fx.num(b.bytes()).unit(format_args!("B ({b})"))
            + fx.sym("conv channels·(conv − 1)", conv)
                * fx.num(e.bytes()).unit(format_args!("B ({e})")));
    stack.push(
        ComponentId::RecurrentState,
        "Recurrent state (Mamba / linear attention)",
        fx.sym("b", f64::from(s.batch)) * per_sequence / split.ways(fx, split.model_parallel),
    );
}

pub(super) fn push(s: &Scenario, r: &Resolved, stack: &mut Stack, split: &Split) {
    let fx = stack.fx();
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    let tokens = f64::from(s.batch) * forward_tokens(s);
    push_kv_cache(s, r, stack, split);
    push_recurrent_state(s, r, stack, split);
    let keys = cached_tokens(s);
    // `compile` is a training setting (what the partitioner saves for the backward pass).
    let one_layer = fx.sym("b·prompt", tokens)
        * fx.num(
            layer_bytes_per_token(s, a, e, false) + eager_scores_bytes_per_token(s, a, e, keys),
        )
        .unit("B (one layer's tensors)");
    // QuantizedCache hands attention each layer's whole cache dequantized.
    let dequantized = if s.cache == KvCache::Quantized {
        fx.sym("b", f64::from(s.batch))
            * fx.sym("cached", keys)
            * fx.num(KV_TENSORS)
            * fx.sym("kv-heads·head-dim", a.kv_width())
            * fx.num(r.kv_dtype.bytes())
                .unit("B (one layer's cache dequantized)")
    } else {
        fx.num(0.0).shown_if(false)
    };
    let (kernel_bytes, kernel_label) = quantized_matmul_bytes(s, r, tokens);
    let kernel = fx
        .num(kernel_bytes)
        .words(kernel_label)
        .size(s.units)
        .shown_if(kernel_bytes > 0.0);
    stack.push(
        ComponentId::Activations,
        "Activations (one layer's working set)",
        (one_layer + dequantized + kernel) / split.ways(fx, split.model_parallel),
    );
}

/// What the int8 or fp8 matmul kernel ([`QuantKernel`]) allocates beside the largest quantized
/// linear, and its label. LLM.int8 and torchao's int8 dynamic kernel share a shape: the input
/// quantized per row and an int32 product.
fn quantized_matmul_bytes(s: &Scenario, r: &Resolved, tokens: f64) -> (f64, &'static str) {
    let a = &r.arch;
    let e = r.act_dtype.bytes();
    // torchao's `quantize_` covers the LM head too under `quant-head`.
    let largest_weight = || {
        let head = if s.quant_head {
            f64::from(a.vocab) * f64::from(a.hidden)
        } else {
            0.0
        };
        head.max(widest_linear(a, |m| m.rows * m.cols))
    };
    match (r.weights, s.quant_kernel) {
        (Dtype::Int8, QuantKernel::Auto | QuantKernel::Dynamic) => (
            tokens * int8_matmul_bytes_per_token(a),
            if s.quant_kernel == QuantKernel::Auto {
                "LLM.int8's buffers"
            } else {
                "the int8 input and int32 product"
            },
        ),
        (Dtype::Int8, QuantKernel::WeightOnly) => {
            (largest_weight() * e, "the largest weight dequantized")
        }
        (Dtype::Fp8, QuantKernel::WeightOnly) => (
            2.0 * largest_weight() * e,
            "the largest weight dequantized, twice",
        ),
        (Dtype::Fp8, QuantKernel::Dynamic) => (
            tokens * widest_linear(a, |m| m.rows * BYTE + FP32_BYTES),
            "the fp8 input and its scales",
        ),
        _ => (0.0, ""),
    }
}

/// The largest of `bytes` over the block linears.
fn widest_linear(a: &Architecture, bytes: impl Fn(&MatrixShape) -> f64) -> f64 {
    a.block_linears().iter().map(bytes).fold(0.0, f64::max)
}

/// What an LLM.int8 linear adds per token beyond a 16-bit one, at the linear where it is largest:
/// its input quantized to int8 with an fp32 scale per row, and the int32 product before it is
/// dequantized into the 16-bit output (bitsandbytes 0.43.1 `MatMul8bitLt.forward`, 4a6fb352:
/// `F.double_quant(A)` → `CA`, `SCA`; `F.igemmlt` → `out32`; `F.mm_dequant`). Releases up to 0.44
/// also keep a column-major `CAt` and a col32 `C32A` copy of the input (2 more bytes per input
/// value); later ones do not, so this counts the bytes every release allocates.
fn int8_matmul_bytes_per_token(a: &Architecture) -> f64 {
    widest_linear(a, |m| m.rows * BYTE + FP32_BYTES + m.cols * FP32_BYTES)
}
