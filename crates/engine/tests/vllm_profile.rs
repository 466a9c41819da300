//! vLLM's profile run: the activation peak its KV budget leaves room for, and what the fused-MoE
//! kernels keep beside it (`estimate/serving/vllm.rs`).

mod common;

use vramfit_engine::estimate::{breakdown, FUSED_MOE_CHUNK_TOKENS, SAMPLER_BYTES_PER_LOGIT};

const TOKENS: u64 = 8192;
const SEQS: u64 = 1024;
const BF16: u64 = 2;

fn scenario(model: &str, changes: &[(&str, &str)]) -> vramfit_engine::Scenario {
    let base = [
        ("model", model),
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpu", "h100-80"),
        ("max-model-len", "8192"),
        ("max-num-seqs", "1024"),
        ("max-num-batched-tokens", "8192"),
    ];
    common::scenario(&base, changes)
}

fn activations(model: &str, changes: &[(&str, &str)]) -> u64 {
    breakdown(&scenario(model, changes))
        .unwrap()
        .bytes_of("activations")
        .0
}

/// The dummy sampler's peak over `min(seqs, tokens)` rows of the vocabulary, beside the last
/// hidden states.
fn sampler(vocab: u64, hidden: u64, tokens: u64) -> u64 {
    (SEQS.min(tokens) as f64 * vocab as f64 * SAMPLER_BYTES_PER_LOGIT) as u64
        + tokens * hidden * BF16
}

/// Equal but for each term's rounding to whole bytes.
fn assert_near(a: u64, b: u64) {
    assert!(a.abs_diff(b) <= 4, "{a} vs {b}");
}

#[test]
fn the_fused_moe_workspace_stays_allocated_under_the_sampler() {
    // Qwen3-30B-A3B: H 2048, 8 of 128 experts of intermediate 768 per token. TritonExperts'
    // workspace13 (M, 8, max(768, 2048)), which the (M, H) output shares, and workspace2
    // (M, 8, max(1536, 2048)). vLLM 0.19 logs a 2.68 GiB peak for this run (vllm-073).
    let workspace = TOKENS * 8 * (2048 + 2048) * BF16;
    assert_near(
        activations("qwen3-30b-a3b", &[]),
        sampler(151_936, 2048, TOKENS) + workspace,
    );
    // A dense model has none: Llama-3.1-8B's peak is its sampler's.
    assert_near(
        activations("llama-3.1-8b", &[]),
        sampler(128_256, 4096, TOKENS),
    );
}

#[test]
fn tensor_parallelism_splits_the_experts_intermediate_and_expert_parallelism_does_not() {
    // Mixtral-8x7B: H 4096, 2 of 8 experts of intermediate 14336. With every layer routed, its
    // forward keeps no dense MLP outputs, and the sampler (32k vocabulary) sets the base.
    let base = sampler(32_000, 4096, TOKENS);
    let workspace = |inter: u64| TOKENS * 2 * (inter.max(4096) + (2 * inter).max(4096)) * BF16;
    let tp2 = activations("mixtral-8x7b", &[("gpus", "2"), ("sharding", "tensor")]);
    assert_near(tp2, base + workspace(14336 / 2));
    let ep2 = activations("mixtral-8x7b", &[("gpus", "2"), ("sharding", "expert")]);
    assert_near(ep2, base + workspace(14336));
}

#[test]
fn beyond_one_chunk_the_output_has_storage_of_its_own() {
    // 32768 batched tokens: the workspaces hold one 16384-token chunk, the output every token.
    let tokens = 2 * u64::from(FUSED_MOE_CHUNK_TOKENS);
    let chunk = u64::from(FUSED_MOE_CHUNK_TOKENS);
    let workspace = (chunk * 8 * 2048 + tokens * 2048 + chunk * 8 * 2048) * BF16;
    let peak = activations("qwen3-30b-a3b", &[("max-num-batched-tokens", "32768")]);
    assert_near(peak, sampler(151_936, 2048, tokens) + workspace);
}

#[test]
fn mxfp4_experts_on_hopper_keep_the_output_and_one_intermediate() {
    // gpt-oss-20b at TP 2: OAITritonExperts' (M, H) output and (M·4, 2880 / 2).
    let workspace = (TOKENS * 2880 + TOKENS * 4 * 1440) * BF16;
    let peak = activations("gpt-oss-20b", &[("gpus", "2"), ("sharding", "tensor")]);
    assert_near(peak, sampler(201_088, 2880, TOKENS) + workspace);
}
