//! The memory terms that follow the architecture: KV cache per token for each attention kind,
//! checked against the runtimes' own arithmetic; the recurrent state; expert parallelism; the
//! checkpoint formats of presets.

use vramfit_engine::estimate::breakdown;
use vramfit_engine::estimate::ComponentId;
use vramfit_engine::model::preset;
use vramfit_engine::{Bytes, Scenario};

fn scenario(query: &str) -> Scenario {
    let mut s = Scenario::default();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap();
        s.set(k, v).unwrap_or_else(|e| panic!("{pair}: {e}"));
    }
    s
}

fn bytes(query: &str, id: &str) -> u64 {
    breakdown(&scenario(query))
        .unwrap()
        .bytes_of(ComponentId::parse(id).unwrap())
        .0
}

/// KV bytes per token over all layers, from a 1-sequence, 1000-token inference.
fn kv_per_token(query: &str) -> u64 {
    let q = format!("{query}&mode=inference&batch=1&seq=1000&gpu=b200");
    (bytes(&q, "kv_cache") + bytes(&q, "kv_cache_sliding")) / 1000
}

#[test]
fn kv_bytes_per_token_match_the_runtimes_arithmetic() {
    // vLLM's AttentionSpec (vllm/v1/kv_cache_interface.py): a page holds
    // 2 × block_size × num_kv_heads × head_size × dtype_size bytes per layer. Llama-3.1-8B in bf16:
    // 2 × 8 × 128 × 2 = 4096 B per token per layer, × 32 layers.
    assert_eq!(kv_per_token("model=llama-3.1-8b"), 2 * 8 * 128 * 2 * 32);
    // MLAAttentionSpec: one KV "head" of kv_lora_rank + qk_rope_head_dim values. DeepSeek-V3:
    // (512 + 64) × 2 B × 61 layers.
    assert_eq!(
        kv_per_token("model=deepseek-v3&kv-dtype=bf16"),
        (512 + 64) * 2 * 61
    );
    // transformers' DeepseekV3Attention caches the decompressed key (qk_nope + qk_rope = 192 per
    // head) and value (128 per head) for all 128 heads.
    assert_eq!(
        kv_per_token("model=deepseek-v3&kv-dtype=bf16&mla-cache=expanded"),
        128 * (192 + 128) * 2 * 61
    );
    // Below its window a sliding-window layer caches every token like a full layer.
    assert_eq!(
        kv_per_token("model=gemma-3-27b"),
        2 * 16 * 128 * 2 * 62,
        "1000 tokens < the 1024-token window"
    );
}

#[test]
fn sliding_window_layers_stop_growing_at_their_window() {
    // gpt-oss-20b: 12 of 24 layers attend within 128 tokens (SlidingWindowSpec's
    // min(sliding_window, max_model_len) tokens per sequence, transformers' sliding cache alike).
    let at = |seq: u32| {
        let q = format!("model=gpt-oss-20b&mode=inference&batch=1&seq={seq}&gpu=b200");
        (bytes(&q, "kv_cache"), bytes(&q, "kv_cache_sliding"))
    };
    let (full_4k, sliding_4k) = at(4096);
    let (full_32k, sliding_32k) = at(32768);
    assert_eq!(
        sliding_4k, sliding_32k,
        "the window caps the sliding layers"
    );
    assert_eq!(sliding_4k, 12 * 2 * 8 * 64 * 2 * 128);
    assert_eq!(full_32k, 8 * full_4k, "full layers grow with the context");
}

#[test]
fn recurrent_layers_keep_a_fixed_state_per_sequence() {
    // vLLM's MambaSpec: the page is the conv state (conv_dim, kernel − 1) and the SSM state
    // (heads, head_dim, d_state). Nemotron-H-style layers: 64 heads × 64 dims × 128 state in fp32,
    // conv over 64·64 + 2·8·128 channels × 3 in bf16.
    let query =
        "mode=inference&layers=4&hidden=2048&heads=16&kv-heads=2&head-dim=128&ffn=4096&vocab=32000\
        &recurrent-layers=3&no-attention-layers=3&recurrent-heads=64&recurrent-head-dim=64\
        &recurrent-state=128&recurrent-groups=8&recurrent-conv=4&gpu=b200";
    let state = |seq: u32, batch: u32| {
        bytes(
            &format!("{query}&seq={seq}&batch={batch}"),
            "recurrent_state",
        )
    };
    let per_sequence = 3 * (64 * 64 * 128 * 4 + (64 * 64 + 2 * 8 * 128) * 3 * 2);
    assert_eq!(state(1000, 1), per_sequence);
    assert_eq!(state(100_000, 1), per_sequence, "no growth with context");
    assert_eq!(state(1000, 8), 8 * per_sequence, "one state per sequence");
    let kv = bytes(&format!("{query}&seq=1000&batch=1"), "kv_cache");
    assert_eq!(
        kv,
        2 * 2 * 128 * 2 * 1000,
        "only the one attention layer caches keys and values"
    );
}

#[test]
fn an_attention_output_gate_doubles_q_proj_and_keeps_the_gate_for_backward() {
    // Qwen3-Next: 12 of 48 layers attend, 16 heads × 256. `Qwen3NextAttention`'s q_proj is
    // hidden × 2·heads·head_dim; `attn_output * torch.sigmoid(gate)` keeps the sigmoid's output
    // and the gated output o_proj reads, two query-wide tensors per token and attention layer.
    let (attention_layers, hidden, q_width) = (12u64, 2048u64, 16u64 * 256);
    let train = "model=qwen3-next-80b-a3b&mode=full&weights=bf16&act-dtype=bf16&batch=1&seq=1000\
        &checkpointing=none&attention=flash&gpu=b200";
    let ungated = format!("{train}&attention-gate=false");
    assert_eq!(
        bytes(train, "weights") - bytes(&ungated, "weights"),
        attention_layers * hidden * q_width * 2,
        "the gate's half of q_proj, in bf16"
    );
    // Kept by each of the 12 attention layers, and by the one layer in backward (an average
    // layer: a quarter of an attention layer's).
    let per_attention_layer = 2 * q_width * 2;
    assert_eq!(
        bytes(train, "activations") - bytes(&ungated, "activations"),
        1000 * (attention_layers * per_attention_layer + per_attention_layer / 4),
        "sigmoid(gate) and the gated output, bf16, per token and attention layer"
    );
    let serve = "model=qwen3-next-80b-a3b&mode=inference&batch=1&seq=1000&gpu=b200";
    assert_eq!(
        bytes(serve, "kv_cache"),
        bytes(&format!("{serve}&attention-gate=false"), "kv_cache"),
        "the gate is not cached"
    );
}

#[test]
fn vllm_raises_a_hybrids_block_so_one_attention_page_holds_a_state() {
    // vLLM logs "Setting attention block size to N tokens to ensure that attention page size is
    // >= mamba page size": 544 for Qwen3.5-0.8B and 784 for the 27B shape (Qwen3.6-27B), in an
    // LMCache recipe's reference values (index id 56156006681). Their configs declare
    // `mamba_ssm_dtype: float32`, which vLLM takes for the state; bf16 cache.
    let setting = |q: &str, key: &str| {
        let e = vramfit_engine::estimate::estimate(&scenario(q)).unwrap();
        let serving = e.serving.unwrap();
        serving
            .settings
            .into_iter()
            .find(|s| s.key == key)
            .unwrap_or_else(|| panic!("no {key} in {q}"))
    };
    let block = |q: &str| setting(q, "block-size").value.parse::<u32>().unwrap();
    let qwen3_5 = |shape: &str| {
        format!(
            "runtime=vllm&mode=inference&gpu=h100-80&max-model-len=32768&vocab=248320\
             &head-dim=256&gated=true&attention-gate=true&recurrent-head-dim=128\
             &recurrent-state=128&recurrent-groups=16&recurrent-conv=4&ssm-dtype=fp32&{shape}"
        )
    };
    let small = "layers=24&hidden=1024&heads=8&kv-heads=2&ffn=3584&recurrent-layers=18\
        &no-attention-layers=18&recurrent-heads=16";
    let large = "layers=64&hidden=5120&heads=24&kv-heads=4&ffn=17408&recurrent-layers=48\
        &no-attention-layers=48&recurrent-heads=48";
    assert_eq!(block(&qwen3_5(small)), 544);
    assert_eq!(block(&qwen3_5(large)), 784);
    assert_eq!(
        block(&qwen3_5(&format!("{large}&block-size=1600"))),
        1600,
        "a larger block stays"
    );
    // Qwen3-Next's config names no state format, so vLLM keeps the state in the model's bf16
    // and logged "Setting attention block size to 1072 tokens" for a TP-2, fp8-cache serve
    // (calibration/runtime-logs.csv, vllm-007); an fp32 state would need 2096.
    let next = "runtime=vllm&mode=inference&model=qwen3-next-80b-a3b&weights=int4\
        &quantized=experts&gpu=l40s&gpus=2&sharding=tensor&kv-dtype=fp8&max-model-len=32768";
    assert_eq!(block(next), 1072);
    assert_eq!(setting(next, "ssm-dtype").value, "bf16");
    assert_eq!(block(&format!("{next}&ssm-dtype=fp32")), 2096);
    let preset = "runtime=vllm&mode=inference&gpu=h100-80&model=qwen3.5-35b-a3b";
    let declared = setting(preset, "ssm-dtype");
    assert_eq!(declared.value, "fp32", "Qwen3.5 declares mamba_ssm_dtype");
    assert!(declared.default_from.unwrap().contains("checkpoint"));
}

#[test]
fn expert_parallelism_splits_the_routed_experts_only() {
    let one = "model=qwen3-30b-a3b&mode=inference&weights=bf16&gpu=h100-80&batch=1&seq=1024";
    let arch = preset("qwen3-30b-a3b").unwrap().arch;
    let routed = arch.params_in(&[vramfit_engine::model::Block::RoutedExpert]);
    let total = arch.param_count();
    let whole = bytes(one, "weights") as f64;
    let split = bytes(&format!("{one}&gpus=8&sharding=expert"), "weights") as f64;
    let expected = whole * ((total - routed) + routed / 8.0) / total;
    assert!(
        (split - expected).abs() / expected < 1e-9,
        "{split} vs {expected}"
    );
    assert!(bytes(&format!("{one}&gpus=8&sharding=expert"), "all_to_all") > 0);
    assert_eq!(bytes(one, "all_to_all"), 0);
    let dense = scenario("model=llama-3.1-8b&gpus=8&sharding=expert");
    let errors = dense.validate();
    assert_eq!(errors[0].field, "sharding", "{errors:?}");
}

#[test]
fn presets_load_in_their_checkpoint_format_for_inference() {
    // gpt-oss ships MXFP4 experts and bf16 attention: 13.76 GB of tensors for gpt-oss-20b.
    let gpt_oss = "model=gpt-oss-20b&mode=inference&gpu=h100-80";
    let loaded = bytes(gpt_oss, "weights") + bytes(gpt_oss, "quant_constants");
    assert!(
        (Bytes(loaded).as_f64() - 13_761_264_768.0).abs() < 0.01 * 13_761_264_768.0,
        "{loaded}"
    );
    // Trained in full, the same preset starts from bf16.
    let full = "model=gpt-oss-20b&mode=full&gpu=h100-80";
    assert!(bytes(full, "weights") > 40_000_000_000);
}

#[test]
fn a_vision_tower_encodes_the_stated_images() {
    // Gemma 3's SigLIP tower: 896-pixel images in 14-pixel patches, 4096 patch tokens each.
    let at = |images: u32| {
        bytes(
            &format!("model=gemma-3-27b&mode=inference&batch=2&seq=4096&images={images}&gpu=h200"),
            "vision_activations",
        )
    };
    assert_eq!(at(0), 0);
    assert_eq!(at(4), 2 * at(2), "activations scale with the images");
    let per_patch = 2 * (6 * 1152 + 2 * 4304);
    assert_eq!(at(1), 2 * 4096 * per_patch);
    let text_only = scenario("model=llama-3.1-8b&images=1");
    assert_eq!(text_only.validate()[0].field, "images");
}

/// transformers' cache classes (src/transformers/cache_utils.py): what each keeps, and that the
/// activations follow the tokens one forward processes, not the cache.
#[test]
fn transformers_caches_and_the_prompt_are_sized_apart() {
    let base = "model=llama-3.1-8b&mode=inference&batch=4&seq=4096&gpu=b200";
    let at = |extra: &str, id: &str| bytes(&format!("{base}{extra}"), id);
    let dynamic = at("", "kv_cache");
    assert_eq!(dynamic, 4 * 4096 * 2 * 8 * 128 * 2 * 32);
    // A prompt of 512 tokens: the cache still holds seq (prompt + new tokens); one layer's
    // working set shrinks with the tokens per forward.
    assert_eq!(at("&prompt=512", "kv_cache"), dynamic);
    let whole = at("", "activations") as f64;
    let chunk = at("&prompt=512", "activations") as f64;
    assert!((whole / chunk - 8.0).abs() < 1e-6, "{whole} / {chunk}");
    // StaticCache is allocated at max_cache_len, whatever the sequence so far.
    assert_eq!(
        at("&cache=static&max-cache-len=16384", "kv_cache"),
        4 * dynamic
    );
    // QuantizedCache: 4-bit values with a half scale and zero-point per 64, the newest 128
    // tokens in bf16: (4096 − 128) × 36/64 + 128 × 2 bytes per value.
    let values = 4 * 2 * 8 * 128 * 32;
    assert_eq!(
        at("&cache=quantized", "kv_cache"),
        values * ((4096 - 128) * 36 / 64 + 128 * 2)
    );
    // It has no sliding-window layers: Gemma 3 caches every layer at full length, more than
    // the dynamic cache that stops its sliding layers at the window.
    let gemma = "model=gemma-3-27b&mode=inference&batch=1&seq=32768&gpu=b200";
    let dynamic_gemma = bytes(gemma, "kv_cache") + bytes(gemma, "kv_cache_sliding");
    let quantized = format!("{gemma}&cache=quantized");
    assert_eq!(bytes(&quantized, "kv_cache_sliding"), 0);
    assert!(bytes(&quantized, "kv_cache") > dynamic_gemma);
}

/// What `generate` keeps of each new token's distribution until it returns: transformers'
/// `output_scores` (and `output_logits`) tuples hold fp32 `b × V` tensors for every new token,
/// gpt-fast's `decode_n_tokens` the model-dtype probabilities of every step after prefill's.
#[test]
fn kept_scores_grow_with_every_new_token() {
    let base =
        "model=llama-3.1-8b&mode=inference&weights=bf16&gpu=h100-80&batch=128&seq=206&prompt=6";
    let at = |extra: &str| bytes(&format!("{base}{extra}"), "kept_scores");
    let vocab = 128_256;
    assert_eq!(at(""), 0);
    assert_eq!(at("&kept-scores=scores"), 200 * 128 * vocab * 4);
    assert_eq!(
        at("&kept-scores=scores-and-logits"),
        2 * 200 * 128 * vocab * 4
    );
    // torchao's generate.py: 200 new tokens, the first sampled by prefill, 199 kept in bf16.
    assert_eq!(at("&kept-scores=probs"), 199 * 128 * vocab * 2);
    // They are kept to the end, so they count in the peak.
    let total = |extra: &str| {
        vramfit_engine::estimate::estimate(&scenario(&format!("{base}{extra}")))
            .unwrap()
            .total_bytes
            .0
    };
    assert!(total("&kept-scores=probs") >= total("") + at("&kept-scores=probs"));
}

#[test]
fn cache_settings_that_cannot_hold_or_do_not_apply_are_named() {
    let errors = scenario("mode=inference&seq=4096&prompt=5000").validate();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field, "prompt");
    let errors = scenario("mode=inference&seq=4096&cache=static&max-cache-len=1024").validate();
    assert_eq!(errors[0].field, "max-cache-len");
    let notes = |q: &str| {
        vramfit_engine::estimate::estimate(&scenario(q))
            .unwrap()
            .notes
            .join(" ")
    };
    assert!(notes("mode=lora&prompt=100").contains("prompt not used"));
    assert!(
        notes("mode=inference&runtime=vllm&cache=quantized").contains("vllm keeps its own cache")
    );
    assert!(notes("mode=inference&max-cache-len=8192").contains("only cache=static"));
    assert!(notes("mode=inference&runtime=sglang&kept-scores=scores")
        .contains("kept-scores not used: sglang keeps its own cache and runs its own sampling"));
    // With no prompt there are no new tokens to count: the note says which input is missing.
    assert!(notes("mode=inference&kept-scores=scores").contains("set prompt"));
}

/// A token-dropping router pads every expert's batch to `factor × k × tokens / experts`, so each
/// routed copy of a token, its expert intermediates and the all-to-all buffers grow by the factor;
/// the router's logits do not. Qwen3-30B-A3B: 8 of 128 experts of 768, hidden 2048, bf16, a gated
/// MLP keeping 4 intermediates per expert token, in every one of its 48 layers.
#[test]
fn a_capacity_factor_pads_the_routed_tokens() {
    let one = "model=qwen3-30b-a3b&mode=inference&weights=bf16&gpu=h100-80&batch=1&seq=1024";
    let padded = format!("{one}&capacity-factor=1.25");
    let extra_per_token = 0.25 * 8.0 * (4.0 * 2.0 * 768.0 + 2.0 * 2048.0);
    assert_eq!(
        bytes(&padded, "activations") - bytes(one, "activations"),
        (1024.0 * extra_per_token) as u64
    );
    let ep = "&gpus=4&sharding=expert";
    assert_eq!(
        bytes(&format!("{padded}{ep}"), "all_to_all"),
        bytes(&format!("{one}{ep}"), "all_to_all") * 5 / 4
    );
    // On a dense model the factor changes nothing, and the estimate says so.
    let dense = "model=llama-3.1-8b&mode=inference&capacity-factor=1.25";
    let estimate = vramfit_engine::estimate(&scenario(dense)).unwrap();
    assert_eq!(
        estimate.total_bytes,
        vramfit_engine::estimate(&scenario("model=llama-3.1-8b&mode=inference"))
            .unwrap()
            .total_bytes
    );
    assert!(
        estimate
            .notes
            .iter()
            .any(|n| n.starts_with("capacity-factor not used")),
        "{:?}",
        estimate.notes
    );
    assert!(scenario("capacity-factor=2").validate().is_empty());
    let mut s = Scenario::default();
    assert!(s.set("capacity-factor", "0").is_err());
}
