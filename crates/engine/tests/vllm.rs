//! vLLM on an H100 at 8192 batched tokens: the profile run's activation peak and what the fused-MoE
//! kernels keep beside it (`estimate/serving/vllm.rs`), and the CUDA graphs captured after the
//! pool is sized: which graphs, how many, and what FlashAttention 3 keeps in their pool
//! (`estimate/serving/vllm_graphs.rs`); and the RoPE tables loaded with the weights
//! (`estimate/serving/mod.rs`).

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::estimate::{
    breakdown, estimate, FUSED_MOE_CHUNK_TOKENS, GRAPH_POOL_BYTES, SAMPLER_BYTES_PER_LOGIT,
};
use vramfit_engine::units::MIB;
use vramfit_engine::Scenario;

/// Equal but for the rounding of each component to whole bytes (scaled by the test's factors).
fn assert_near(a: u64, b: u64) {
    assert!(a.abs_diff(b) <= 256, "{a} vs {b}");
}

fn scenario(model: &str, changes: &[(&str, &str)]) -> Scenario {
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

fn graphs(changes: &[(&str, &str)]) -> u64 {
    let s = scenario("llama-3.1-8b", changes);
    breakdown(&s).unwrap().bytes_of(ComponentId::CudaGraphs).0
}

/// FlashAttention 3's split-KV buffers for the largest decode graph: 32 splits × 512 tokens ×
/// 32 heads × 128 × 4 B, the 256 MiB by which vLLM's logged FULL first capture (260 MiB) exceeds
/// the fp32 run's (4 MiB) in llm-d-planner's sweep.
const LLAMA_8B_SPLIT_BUFFERS: u64 = 32 * 512 * 32 * 128 * 4;

#[test]
fn flash_attention_3_keeps_split_buffers_only_on_hopper_with_16_bit_attention() {
    let h100 = graphs(&[]);
    assert_eq!(LLAMA_8B_SPLIT_BUFFERS, 256 * MIB);
    // The A100 runs FlashAttention 2, whose builder passes no split count under CUDA graphs.
    let a100 = graphs(&[("gpu", "a100-80")]);
    assert_eq!(h100 - a100, LLAMA_8B_SPLIT_BUFFERS);
    // fp32 runs on Triton (FlashAttention takes 16-bit only), as does a backend set to Triton.
    let fp32 = graphs(&[("weights", "fp32"), ("act-dtype", "fp32")]);
    assert_eq!(h100 - fp32, LLAMA_8B_SPLIT_BUFFERS);
    assert_eq!(graphs(&[("attention-backend", "triton")]), fp32);
    // Tensor parallelism splits the heads, and with them the buffers.
    let tp2 = graphs(&[("gpus", "2"), ("sharding", "tensor")]);
    let tp2_triton = graphs(&[
        ("gpus", "2"),
        ("sharding", "tensor"),
        ("attention-backend", "triton"),
    ]);
    assert_eq!(tp2 - tp2_triton, LLAMA_8B_SPLIT_BUFFERS / 2);
}

/// The graphs' nodes alone, above the pool: on Triton, which keeps no split buffers.
fn nodes(change: Option<(&str, &str)>) -> u64 {
    let triton = ("attention-backend", "triton");
    let bytes = match change {
        Some(change) => graphs(&[triton, change]),
        None => graphs(&[triton]),
    };
    bytes - GRAPH_POOL_BYTES.0
}

#[test]
fn the_graphs_follow_the_capture_list_and_the_mode() {
    let both = nodes(None);
    let piecewise = nodes(Some(("cudagraph-mode", "piecewise")));
    let full = nodes(Some(("cudagraph-mode", "full-decode-only")));
    // 51 piecewise and 51 full graphs at max-num-seqs 1024: each mode alone is half the nodes.
    assert_near(piecewise, full);
    assert_near(both, 2 * piecewise);
    // Eight sequences: sizes 1–16 piecewise (5), 1–8 full (4), against 51 + 51.
    let eight = nodes(Some(("max-num-seqs", "8")));
    assert_near(eight * 102, both * 9);
    // gpt-oss's override to 1024 tokens: 83 sizes a mode.
    let wide = nodes(Some(("max-cudagraph-capture-size", "1024")));
    assert_near(wide * 102, both * 166);
}

#[test]
fn pipeline_stages_capture_their_own_layers() {
    let one = nodes(None);
    let two = graphs(&[
        ("attention-backend", "triton"),
        ("gpus", "2"),
        ("sharding", "pipeline"),
    ]) - GRAPH_POOL_BYTES.0;
    assert_near(one, 2 * two);
}

#[test]
fn enforce_eager_captures_nothing_and_says_so() {
    assert_eq!(graphs(&[("enforce-eager", "true")]), 0);
    let s = scenario("llama-3.1-8b", &[]);
    let settings = estimate(&s).unwrap().serving.unwrap().settings;
    let value = |key: &str| {
        settings
            .iter()
            .find(|s| s.key == key)
            .unwrap_or_else(|| panic!("{key} not listed"))
            .value
            .clone()
    };
    assert_eq!(value("cudagraph-mode"), "full-and-piecewise");
    assert_eq!(value("max-cudagraph-capture-size"), "512");
    assert_eq!(value("attention-backend"), "flash-attn");
}

#[test]
fn since_v0_20_the_graphs_come_out_of_the_budget() {
    // vLLM ≥ 0.20 logs "The current --gpu-memory-utilization=0.9200 is equivalent to
    // --gpu-memory-utilization=0.9038 without CUDA graph memory profiling" beside "Estimated CUDA
    // graph memory: 1.94 GiB total" on a 119.63 GiB GPU: the pool shrinks by the graphs.
    let pool = |changes: &[(&str, &str)]| {
        let s = scenario("llama-3.1-8b", changes);
        breakdown(&s).unwrap().bytes_of(ComponentId::KvCache).0
    };
    let profiled = pool(&[]);
    let before = pool(&[("profile-cudagraphs", "false")]);
    assert_near(before - profiled, graphs(&[]));
    // Eager runs capture nothing, so there is nothing to take out.
    assert_eq!(
        pool(&[("enforce-eager", "true")]),
        pool(&[("enforce-eager", "true"), ("profile-cudagraphs", "false")])
    );
}

#[test]
fn each_release_sizes_the_pool_by_its_own_rules() {
    let at = |release: &str| {
        let s = scenario("llama-3.1-8b", &[("vllm-version", release)]);
        let serving = estimate(&s).unwrap().serving.unwrap();
        let setting = |key: &str| {
            let found = serving.settings.iter().find(|s| s.key == key).unwrap();
            (found.value.clone(), found.default_from.clone())
        };
        assert_eq!(setting("vllm-version").0, release);
        (serving.kv_pool_bytes.0, setting("gpu-memory-utilization"))
    };
    let (old_pool, (old_util, old_from)) = at("0.19.1");
    let (new_pool, (new_util, new_from)) = at("0.20");
    assert_eq!((old_util.as_str(), new_util.as_str()), ("0.9", "0.92"));
    assert!(old_from.unwrap().contains("before 0.20"));
    assert!(new_from.unwrap().contains("since 0.20"));
    // 0.20 adds 2% of CUDA's total to the budget and takes the graphs out of it: on the H100's
    // 79.19 GiB, 1.58 GiB more, less the graphs.
    let h100 = vramfit_engine::gpu_catalogue::find("h100-80").unwrap();
    let added = 0.02 * h100.cuda_total().0.as_f64();
    assert!((new_pool as f64 + graphs(&[]) as f64 - old_pool as f64 - added).abs() < 1024.0);
    // Between 0.20 and 0.24 no rule that sizes this pool changed.
    assert_eq!(at("0.24").0, new_pool);
}

#[test]
fn a_release_newer_than_the_checked_ones_is_named() {
    let s = scenario("llama-3.1-8b", &[("vllm-version", "0.40")]);
    let e = estimate(&s).unwrap();
    assert!(e.notes.iter().any(|n| n.contains("vLLM 0.40 is newer")));
    let s = scenario("llama-3.1-8b", &[("vllm-version", "0.33.2")]);
    assert!(!estimate(&s)
        .unwrap()
        .notes
        .iter()
        .any(|n| n.contains("newer")));
    assert!(Scenario::default().set("vllm-version", "newest").is_err());
}

#[test]
fn since_v0_28_the_largest_gpus_batch_16k_tokens() {
    let batched = |release: &str| {
        let s = common::scenario(
            &[
                ("model", "llama-3.1-8b"),
                ("mode", "inference"),
                ("runtime", "vllm"),
            ],
            &[("vllm-version", release), ("gpu", "b200")],
        );
        let settings = estimate(&s).unwrap().serving.unwrap().settings;
        let found = settings.iter().find(|s| s.key == "max-num-batched-tokens");
        found.unwrap().value.clone()
    };
    assert_eq!(batched("0.27"), "8192");
    assert_eq!(batched("0.28"), "16384");
}

#[test]
fn since_v0_28_a_hybrid_model_caches_prefixes_unless_told_not_to() {
    let serve = |changes: &[(&str, &str)]| {
        let s = scenario("qwen3.5-9b", changes);
        let serving = estimate(&s).unwrap().serving.unwrap();
        let found = serving.settings.iter().find(|s| s.key == "prefix-caching");
        (serving.kv_tokens, found.unwrap().value.clone())
    };
    let (before, before_set) = serve(&[("vllm-version", "0.27.1")]);
    let (since, since_set) = serve(&[("vllm-version", "0.28.0")]);
    assert_eq!((before_set.as_str(), since_set.as_str()), ("false", "true"));
    // The pool is the same; each request now keeps two recurrent state blocks, not one.
    assert!(since < before);
    let off = [("vllm-version", "0.28.0"), ("prefix-caching", "false")];
    assert_eq!(serve(&off).0, before);
}

#[test]
fn on_an_intel_gpu_a_hybrid_is_told_its_block_may_be_rounded_to_64_tokens() {
    let notes = |changes: &[(&str, &str)]| {
        let e = estimate(&scenario("qwen3.5-9b", changes)).unwrap();
        e.notes.iter().any(|n| n.contains("multiple of 64 tokens"))
    };
    assert!(notes(&[("gpu", "arc-b580")]));
    assert!(notes(&[("gpu", "arc-b580"), ("vllm-version", "0.20.0")]));
    assert!(!notes(&[("gpu", "arc-b580"), ("vllm-version", "0.19.1")]));
    assert!(!notes(&[]));
    let dense = estimate(&scenario("llama-3.1-8b", &[("gpu", "arc-b580")])).unwrap();
    assert!(!dense
        .notes
        .iter()
        .any(|n| n.contains("multiple of 64 tokens")));
}

#[test]
fn before_v0_8_the_v0_engine_batches_the_whole_context_up_to_32k() {
    let defaults = |release: &str, context: &str| {
        let s = common::scenario(
            &[
                ("model", "llama-3.1-8b"),
                ("mode", "inference"),
                ("runtime", "vllm"),
                ("gpu", "h100-80"),
            ],
            &[("vllm-version", release), ("max-model-len", context)],
        );
        let settings = estimate(&s).unwrap().serving.unwrap().settings;
        let value = |key: &str| {
            settings
                .iter()
                .find(|s| s.key == key)
                .unwrap()
                .value
                .clone()
        };
        (value("max-num-batched-tokens"), value("max-num-seqs"))
    };
    let pair = |tokens: &str, seqs: &str| (tokens.to_string(), seqs.to_string());
    assert_eq!(defaults("0.6.4", "20000"), pair("20000", "256"));
    assert_eq!(defaults("0.6.4", "1024"), pair("2048", "256"));
    assert_eq!(defaults("0.6.4", "65536"), pair("512", "256"));
    assert_eq!(defaults("0.7.2", "65536"), pair("2048", "256"));
    assert_eq!(defaults("0.8", "20000"), pair("8192", "1024"));
}

#[test]
fn a_shared_expert_adds_its_own_nodes_to_every_moe_layer() {
    use vramfit_engine::estimate::{
        GRAPH_BYTES_PER_DENSE_LAYER, GRAPH_BYTES_PER_MOE_LAYER, GRAPH_BYTES_PER_SHARED_EXPERT,
    };
    let base = [("model", "qwen3-30b-a3b"), ("attention-backend", "triton")];
    let routed = graphs(&base);
    let shared = graphs(&[base[0], base[1], ("shared-ffn", "768")]);
    // Qwen3-30B-A3B: 48 MoE layers, 51 piecewise and 51 full graphs.
    assert_near(shared - routed, 48 * 102 * GRAPH_BYTES_PER_SHARED_EXPERT.0);
    assert_near(
        routed - GRAPH_POOL_BYTES.0,
        48 * 102 * GRAPH_BYTES_PER_MOE_LAYER.0,
    );
    // The same depth of dense layers captures fewer nodes.
    let dense = graphs(&[
        ("model", "qwen3-8b"),
        ("attention-backend", "triton"),
        ("layers", "48"),
    ]);
    assert_near(
        dense - GRAPH_POOL_BYTES.0,
        48 * 102 * GRAPH_BYTES_PER_DENSE_LAYER.0,
    );
}

const TOKENS: u64 = 8192;
const SEQS: u64 = 1024;
const BF16: u64 = 2;

fn activations(model: &str, changes: &[(&str, &str)]) -> u64 {
    breakdown(&scenario(model, changes))
        .unwrap()
        .bytes_of(ComponentId::Activations)
        .0
}

/// The dummy sampler's peak over `min(seqs, tokens)` rows of the vocabulary, beside the last
/// hidden states.
fn sampler(vocab: u64, hidden: u64, tokens: u64) -> u64 {
    (SEQS.min(tokens) as f64 * vocab as f64 * SAMPLER_BYTES_PER_LOGIT) as u64
        + tokens * hidden * BF16
}

/// Equal but for each term's rounding to whole bytes.
fn assert_near_bytes(a: u64, b: u64) {
    assert!(a.abs_diff(b) <= 4, "{a} vs {b}");
}

#[test]
fn the_fused_moe_workspace_stays_allocated_under_the_sampler() {
    // Qwen3-30B-A3B: H 2048, 8 of 128 experts of intermediate 768 per token. TritonExperts'
    // workspace13 (M, 8, max(768, 2048)), which the (M, H) output shares, and workspace2
    // (M, 8, max(1536, 2048)). vLLM 0.19 logs a 2.68 GiB peak for this run (vllm-073).
    let workspace = TOKENS * 8 * (2048 + 2048) * BF16;
    assert_near_bytes(
        activations("qwen3-30b-a3b", &[]),
        sampler(151_936, 2048, TOKENS) + workspace,
    );
    // A dense model has none: Llama-3.1-8B's peak is its sampler's.
    assert_near_bytes(
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
    assert_near_bytes(tp2, base + workspace(14336 / 2));
    let ep2 = activations("mixtral-8x7b", &[("gpus", "2"), ("sharding", "expert")]);
    assert_near_bytes(ep2, base + workspace(14336));
}

#[test]
fn tensor_parallelism_splits_the_dense_mlp_outputs_of_the_profile_forward() {
    // Llama-3.1-70B's shape with a 32k vocabulary, so the forward, not the sampler, sets the
    // peak: H 8192, F 28672. MergedColumnParallelLinear gives each rank 2F/tp gate/up columns, so
    // the forward keeps T × (2H + 4F/tp) elements on each rank; the hidden states are replicated.
    let forward = |tp: u64| TOKENS * (2 * 8192 + 4 * 28672 / tp) * BF16;
    let on = |gpus: &str| {
        activations(
            "llama-3.1-70b",
            &[("vocab", "32000"), ("gpus", gpus), ("sharding", "tensor")],
        )
    };
    assert!(forward(4) > sampler(32_000, 8192, TOKENS));
    for (gpus, tp) in [("1", 1), ("2", 2), ("4", 4)] {
        assert_near_bytes(on(gpus), forward(tp));
    }
}

#[test]
fn beyond_one_chunk_the_output_has_storage_of_its_own() {
    // 32768 batched tokens: the workspaces hold one 16384-token chunk, the output every token.
    let tokens = 2 * u64::from(FUSED_MOE_CHUNK_TOKENS);
    let chunk = u64::from(FUSED_MOE_CHUNK_TOKENS);
    let workspace = (chunk * 8 * 2048 + tokens * 2048 + chunk * 8 * 2048) * BF16;
    let peak = activations("qwen3-30b-a3b", &[("max-num-batched-tokens", "32768")]);
    assert_near_bytes(peak, sampler(151_936, 2048, tokens) + workspace);
}

#[test]
fn mxfp4_experts_on_hopper_keep_the_output_and_one_intermediate() {
    // gpt-oss-20b at TP 2: OAITritonExperts' (M, H) output and (M·4, 2880 / 2).
    let workspace = (TOKENS * 2880 + TOKENS * 4 * 1440) * BF16;
    let peak = activations("gpt-oss-20b", &[("gpus", "2"), ("sharding", "tensor")]);
    assert_near_bytes(peak, sampler(201_088, 2880, TOKENS) + workspace);
}

fn rope_table(s: &Scenario) -> u64 {
    breakdown(s).unwrap().bytes_of(ComponentId::RopeTables).0
}

/// vLLM builds one bf16 cos/sin table per distinct RoPE for every position the model can reach,
/// whatever max-model-len is, and loads it with the weights: Llama 4 Scout's 10M positions are
/// the 2.5 GiB per GPU its vLLM log's "Model loading took" holds above its parameters (vllm-077).
#[test]
fn rope_tables_cover_every_position_the_model_reaches() {
    let scout = scenario("llama-4-scout", &[("gpus", "4"), ("sharding", "tensor")]);
    assert_eq!(rope_table(&scout), 10_485_760 * 128 * 2);
    let short = Scenario {
        max_model_len: Some(vramfit_engine::runtime::ContextLength::Tokens(2048)),
        ..scout.clone()
    };
    assert_eq!(rope_table(&short), rope_table(&scout));
    // Gemma 3: the global layers' linear scaling (factor 8) and the sliding layers' own table.
    let gemma = scenario("gemma-3-4b", &[]);
    assert_eq!(rope_table(&gemma), (131_072 * 8 + 131_072) * 256 * 2);
    // MLA rotates only its shared RoPE key; Qwen3-Next a quarter of each head.
    assert_eq!(
        rope_table(&scenario(
            "deepseek-v3",
            &[("gpus", "8"), ("sharding", "tensor")]
        )),
        4096 * 40 * 64 * 2
    );
    assert_eq!(
        rope_table(&scenario("qwen3-next-80b-a3b", &[])),
        262_144 * 64 * 2
    );
    // SGLang keeps the table in fp32 on CUDA; transformers computes cos and sin per forward.
    let sglang = scenario("llama-3.1-8b", &[("runtime", "sglang")]);
    assert_eq!(rope_table(&sglang), 131_072 * 128 * 4);
    let transformers = scenario("llama-3.1-8b", &[("runtime", "transformers")]);
    assert_eq!(rope_table(&transformers), 0);
}

#[test]
fn a_shape_without_rope_positions_says_its_table_is_not_counted() {
    let typed = common::scenario(
        &[
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("gpu", "h100-80"),
        ],
        &[("layers", "32"), ("hidden", "4096"), ("heads", "32")],
    );
    assert_eq!(rope_table(&typed), 0);
    let notes = estimate(&typed).unwrap().notes;
    assert!(
        notes.iter().any(|n| n.contains("rope-positions")),
        "{notes:?}"
    );
    let given = Scenario {
        rope_positions: Some(4096),
        ..typed
    };
    assert_eq!(rope_table(&given), 4096 * 128 * 2);
    let notes = estimate(&given).unwrap().notes;
    assert!(
        !notes.iter().any(|n| n.contains("rope-positions")),
        "{notes:?}"
    );
}

/// Under WSL2 CUDA's total is nvidia-smi's (vLLM logs 31.84 GiB on an RTX 5090 of 32607 MiB), so
/// the 0.92 share grows by 0.92 × the driver reserve the native total leaves out.
#[test]
fn under_wsl2_the_budget_is_a_share_of_the_whole_card() {
    let pool = |changes: &[(&str, &str)]| {
        let s = scenario("llama-3.1-8b", &[&[("gpu", "rtx-5090")], changes].concat());
        estimate(&s).unwrap().serving.unwrap().kv_pool_bytes.0 as f64
    };
    let rtx_5090 = vramfit_engine::gpu_catalogue::find("rtx-5090").unwrap();
    let reserve = rtx_5090.capacity().0 - rtx_5090.cuda_total().0 .0;
    let gained = pool(&[("wsl2", "true")]) - pool(&[]);
    assert!(
        (gained - 0.92 * reserve as f64).abs() < 1024.0,
        "{gained} vs {reserve}"
    );
}

fn bytes(model: &str, changes: &[(&str, &str)], id: ComponentId) -> u64 {
    breakdown(&scenario(model, changes)).unwrap().bytes_of(id).0
}

fn setting(model: &str, changes: &[(&str, &str)], key: &str) -> (String, Option<String>) {
    let serving = estimate(&scenario(model, changes))
        .unwrap()
        .serving
        .unwrap();
    let found = serving.settings.into_iter().find(|s| s.key == key).unwrap();
    (found.value, found.default_from)
}

#[test]
fn from_v0_25_model_runner_v2_profiles_only_the_logits_and_captures_its_graphs_outside() {
    // vllm/config/vllm.py of v0.25.0 (`_is_default_v2_model_runner_model`): V2 for a dense model.
    let (runner, from) = setting(
        "llama-3.1-8b",
        &[("vllm-version", "0.25")],
        "model-runner-v2",
    );
    assert_eq!(runner, "true");
    assert!(from.unwrap().contains("since 0.25"));
    assert_eq!(
        setting(
            "llama-3.1-8b",
            &[("vllm-version", "0.24")],
            "model-runner-v2"
        )
        .0,
        "false"
    );
    let at = |release: &str, id| bytes("llama-3.1-8b", &[("vllm-version", release)], id);
    // V1's sampler (15 B per logit over 1024 rows of 128256) outweighs the forward; V2's dummy
    // requests process nothing, so its sampler holds the bf16 logits and the forward's
    // `T × (2H + 4F)` bf16 elements set the peak (vllm/v1/worker/gpu/model_runner.py of v0.25.0).
    let (tokens, hidden, ffn) = (8192.0, 4096.0, 14336.0);
    let v1_sampler = 1024.0 * 128256.0 * SAMPLER_BYTES_PER_LOGIT + tokens * hidden * 2.0;
    let forward = tokens * (2.0 * hidden + 4.0 * ffn) * 2.0;
    assert_near(at("0.24", ComponentId::Activations), v1_sampler as u64);
    assert_near(at("0.25", ComponentId::Activations), forward as u64);
    // `profile_cudagraph_memory` returns 0 before 0.29: the graphs leave the budget.
    let freed = v1_sampler - forward + at("0.24", ComponentId::CudaGraphs) as f64;
    let grown = at("0.25", ComponentId::KvCache) - at("0.24", ComponentId::KvCache);
    assert_near(grown, freed as u64);
    // The environment's VLLM_USE_V2_MODEL_RUNNER=0 keeps the V1 runner's pool.
    let v1 = bytes(
        "llama-3.1-8b",
        &[("vllm-version", "0.25"), ("model-runner-v2", "false")],
        ComponentId::KvCache,
    );
    assert_eq!(v1, at("0.24", ComponentId::KvCache));
}

#[test]
fn from_v0_29_model_runner_v2_runs_every_model_and_profiles_its_graphs() {
    // Experts keep the V1 runner until 0.29 (vllm/config/vllm.py of v0.28.0 and v0.29.0).
    let runner = |release| {
        setting(
            "qwen3-30b-a3b",
            &[("vllm-version", release)],
            "model-runner-v2",
        )
        .0
    };
    assert_eq!(
        (runner("0.28").as_str(), runner("0.29").as_str()),
        ("false", "true")
    );
    // V2's graphs come out of the budget from 0.29 (vllm/v1/worker/gpu/cudagraph_utils.py).
    let at = |release: &str, id| bytes("llama-3.1-8b", &[("vllm-version", release)], id);
    let graphs = at("0.29", ComponentId::CudaGraphs);
    assert!(graphs > 0);
    assert_near(
        at("0.28", ComponentId::KvCache) - at("0.29", ComponentId::KvCache),
        graphs,
    );
    let (inside, from) = setting(
        "llama-3.1-8b",
        &[("vllm-version", "0.28")],
        "profile-cudagraphs",
    );
    assert_eq!(inside, "false");
    assert!(from.unwrap().contains("Model Runner V2 before 0.29"));
}

#[test]
fn the_runner_assumed_is_named_where_the_release_does_not_settle_it() {
    let notes = |release: &str| {
        estimate(&scenario("llama-3.1-8b", &[("vllm-version", release)]))
            .unwrap()
            .notes
    };
    assert!(notes("0.23")
        .iter()
        .any(|n| n.contains("which the shape does not name")));
    assert!(!notes("0.21").iter().any(|n| n.contains("Model Runner V2")));
    // v0.33.0's second sampler pass (`SamplingParams.for_sampler_warmup`) is counted at V1's bytes.
    assert!(notes("0.33")
        .iter()
        .any(|n| n.contains("samples twice since 0.33")));
    let at = |release: &str| {
        bytes(
            "llama-3.1-8b",
            &[("vllm-version", release)],
            ComponentId::Activations,
        )
    };
    assert_eq!(at("0.33"), at("0.24"));
}

#[test]
fn vllm_refuses_fp8_where_the_card_cannot_run_it() {
    let serving = |gpu: &str, changes: &[(&str, &str)]| {
        let mut all = vec![
            ("gpu", gpu),
            ("max-num-seqs", "256"),
            ("max-num-batched-tokens", "2048"),
        ];
        all.extend_from_slice(changes);
        estimate(&scenario("llama-3.2-1b", &all))
            .unwrap()
            .serving
            .unwrap()
    };
    // `Fp8Config.get_min_capability()` is 75: a V100 (7.0) is refused, a T4 (7.5) runs Marlin.
    let v100 = serving("v100-32", &[("weights", "fp8")]);
    assert!(!v100.starts);
    assert!(v100.reason.unwrap().contains("Minimum capability: 75"));
    assert!(serving("t4", &[("weights", "fp8")]).starts);
    // The Triton backend refuses an fp8 KV cache below 8.9 from v0.24.0.
    let triton = [("kv-dtype", "fp8"), ("attention-backend", "triton")];
    let a100 = serving("a100-80", &triton);
    assert!(a100.reason.unwrap().contains("requires SM89+"));
    assert!(serving("a100-80", &[triton[0], triton[1], ("vllm-version", "0.23")]).starts);
    assert!(serving("h100-80", &triton).starts);
    assert!(serving("a100-80", &triton[..1]).starts);
}

#[test]
fn kv_cache_memory_is_the_pool_and_the_card_decides_whether_it_fits() {
    // `--kv-cache-memory-bytes` (v0.10.2 on): `determine_available_memory` runs the profile run,
    // then returns the given bytes (vllm/v1/worker/gpu_worker.py of v0.10.2 and v0.33.0).
    let given = |changes: &[(&str, &str)]| {
        let mut pairs = vec![("kv-cache-memory", "20GiB")];
        pairs.extend_from_slice(changes);
        breakdown(&scenario("llama-3.1-8b", &pairs)).unwrap()
    };
    let pool = given(&[]);
    assert_eq!(pool.bytes_of(ComponentId::KvCache).0, 20 << 30);
    // The utilization no longer sizes the pool, and the graphs are captured after it, outside.
    let low = given(&[("gpu-memory-utilization", "0.5")]);
    assert_eq!(low.bytes_of(ComponentId::KvCache).0, 20 << 30);
    let profiled = breakdown(&scenario("llama-3.1-8b", &[])).unwrap();
    for id in [
        ComponentId::Weights,
        ComponentId::Activations,
        ComponentId::NonTorch,
        ComponentId::CudaGraphs,
    ] {
        assert_eq!(pool.bytes_of(id.clone()), profiled.bytes_of(id));
    }
    assert!(pool.total < profiled.total);
    let e = estimate(&scenario("llama-3.1-8b", &[("kv-cache-memory", "20GiB")])).unwrap();
    let serving = e.serving.unwrap();
    assert!(serving.starts);
    let setting = |key: &str| serving.settings.iter().find(|s| s.key == key).cloned();
    assert_eq!(setting("kv-cache-memory").unwrap().value, "20GiB");
    assert!(setting("profile-cudagraphs")
        .unwrap()
        .default_from
        .unwrap()
        .contains("kv-cache-memory"));
    assert!(serving
        .command
        .unwrap()
        .contains("--kv-cache-memory-bytes 21474836480"));
    assert!(e.notes.iter().any(|n| n.contains("card's memory")));
    // 76 GiB beside the 8B model's 15 GiB exceeds the H100's 79.19 GiB: vLLM allocates it anyway,
    // and fails, whatever the utilization says.
    let s = scenario("llama-3.1-8b", &[("kv-cache-memory", "76GiB")]);
    let e = estimate(&s).unwrap();
    assert!(!e.verdict.fits());
    let serving = e.serving.unwrap();
    assert!(serving.reason.unwrap().starts_with("CUDA out of memory"));
    // Before v0.10.2 vLLM's parser has no such flag.
    let errors = estimate(&scenario(
        "llama-3.1-8b",
        &[("kv-cache-memory", "20GiB"), ("vllm-version", "0.10.1")],
    ))
    .unwrap_err();
    assert!(errors.iter().any(|e| e.field == "kv-cache-memory"));
}

#[test]
fn max_model_len_auto_fits_the_longest_request_the_pool_holds() {
    // `--max-model-len auto` (v0.14.0 on): the pool is sized at the model's whole context, then
    // `_auto_fit_max_model_len` lowers it to the longest request that fits, and since v0.29 the
    // null block is held back first.
    let serving = |changes: &[(&str, &str)]| {
        let s = scenario("llama-3.1-8b", changes);
        estimate(&s).unwrap().serving.unwrap()
    };
    let small = [("kv-cache-memory", "4GiB"), ("max-model-len", "auto")];
    let auto = serving(&small);
    // Llama 3.1 8B keeps 128 KiB a token (32 layers × 8 heads × 128 × 2 × 2 B): 4 GiB less one
    // block of 16 tokens holds 32768 − 16 tokens, a whole number of blocks.
    assert_eq!(auto.context_tokens, 32768 - 16);
    assert!(auto.starts);
    assert!((auto.max_concurrency - 1.0).abs() < 0.01);
    let value = |s: &vramfit_engine::estimate::Serving, key: &str| {
        s.settings
            .iter()
            .find(|x| x.key == key)
            .unwrap()
            .value
            .clone()
    };
    assert_eq!(value(&auto, "max-model-len"), "auto");
    assert!(auto.command.unwrap().contains("--max-model-len auto"));
    // Before v0.29 the whole pool counts.
    let old = serving(&[small[0], small[1], ("vllm-version", "0.28")]);
    assert_eq!(old.context_tokens, 32768);
    // `-1` is the same; a pool that holds the whole context keeps it.
    let whole = serving(&[("max-model-len", "-1")]);
    assert_eq!(whole.context_tokens, 131_072);
    // No block fits: vLLM refuses.
    let none = serving(&[("kv-cache-memory", "1MiB"), ("max-model-len", "auto")]);
    assert!(none
        .reason
        .unwrap()
        .starts_with("Cannot auto-fit max_model_len"));
    // vLLM before 0.14 and SGLang read no `auto`.
    let refused = |changes: &[(&str, &str)]| {
        let s = scenario("llama-3.1-8b", changes);
        estimate(&s).unwrap_err()[0].field.clone()
    };
    assert_eq!(
        refused(&[("max-model-len", "auto"), ("vllm-version", "0.13")]),
        "max-model-len"
    );
    assert_eq!(
        refused(&[("max-model-len", "auto"), ("runtime", "sglang")]),
        "max-model-len"
    );
}
