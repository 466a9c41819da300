//! Real published config.json files (tests/fixtures/hf-configs, provenance in its SOURCES.md,
//! published sizes in its published.csv) read as a user pastes them: the parameter count against
//! the model card, the active count for a mixture of experts, the weights against the
//! checkpoint's published size, and no "fits" where the weights alone exceed the card.

use vramfit_engine::dtype::Dtype;
use vramfit_engine::estimate::breakdown;
use vramfit_engine::estimate::ComponentId;
use vramfit_engine::gpu_catalogue::GPUS;
use vramfit_engine::model::{parse_hf_config, parse_published, ActiveClaim, HfConfig, Published};
use vramfit_engine::{Scenario, Verdict};

/// Cards round to two or three digits: a total within 1%, and an active count within the
/// rounding of a two-digit figure (Qwen3-30B-A3B's 3.353B is printed "3.3B").
const TOTAL_TOLERANCE: f64 = 0.01;
const ACTIVE_TOLERANCE: f64 = 0.02;
/// Weights (with any multi-token-prediction modules, which checkpoints store) against the
/// checkpoint's bytes.
const CHECKPOINT_TOLERANCE: f64 = 0.03;

fn fixture_dir() -> String {
    format!("{}/tests/fixtures/hf-configs", env!("CARGO_MANIFEST_DIR"))
}

fn published() -> Vec<Published> {
    let csv = std::fs::read_to_string(format!("{}/published.csv", fixture_dir())).unwrap();
    parse_published(&csv).unwrap()
}

fn read(file: &str) -> HfConfig {
    let path = format!("{}/{file}", fixture_dir());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_hf_config(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

#[test]
fn every_config_in_the_folder_has_published_sizes() {
    let listed: Vec<String> = published().into_iter().map(|p| p.file).collect();
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".json") {
            assert!(listed.contains(&name), "{name} is not in published.csv");
        }
    }
}

#[test]
fn every_fixture_counts_within_one_percent_of_its_card() {
    let mut failures = Vec::new();
    for p in published() {
        let config = read(&p.file);
        let counted = config.counted(p.active).unwrap();
        if relative(counted.params, p.total_params) > TOTAL_TOLERANCE {
            failures.push(format!(
                "{}: {} vs {}",
                p.file, counted.params, p.total_params
            ));
        }
        let claimed = match p.active {
            ActiveClaim::WithEmbedding(a) | ActiveClaim::WithoutEmbedding(a) => Some(a),
            ActiveClaim::Dense | ActiveClaim::Label => None,
        };
        match (claimed, counted.active) {
            (Some(claim), Some(active)) if relative(active, claim) > ACTIVE_TOLERANCE => {
                failures.push(format!("{} active: {active} vs {claim}", p.file))
            }
            (Some(_), None) => failures.push(format!("{}: read as dense", p.file)),
            _ => {}
        }
        let dense = p.active == ActiveClaim::Dense;
        if dense != config.arch.active_param_count().is_none() {
            failures.push(format!("{}: mixture of experts read as {}", p.file, !dense));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_fixtures_weights_match_its_checkpoint_within_three_percent() {
    let mut failures = Vec::new();
    for p in published() {
        let Some(checkpoint) = p.checkpoint_bytes else {
            continue;
        };
        let weights = read(&p.file).counted(p.active).unwrap().weight_bytes;
        if relative(weights, checkpoint) > CHECKPOINT_TOLERANCE {
            failures.push(format!("{}: {weights} vs {checkpoint}", p.file));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn no_fixture_fits_a_card_its_weights_alone_exceed() {
    for p in published() {
        let config = read(&p.file);
        for gpu in GPUS {
            let mut base = Scenario::default();
            base.set("mode", "inference").unwrap();
            base.set("gpu", gpu.id).unwrap();
            let b = breakdown(&config.applied_to(base).unwrap()).unwrap();
            let weights =
                b.bytes_of(ComponentId::Weights).0 + b.bytes_of(ComponentId::QuantConstants).0;
            if weights > gpu.capacity().0 {
                assert!(
                    !matches!(b.verdict(), Verdict::Fits | Verdict::Tight),
                    "{} on {}: {:?}",
                    p.file,
                    gpu.id,
                    b.verdict()
                );
            }
        }
    }
}

#[test]
fn configs_name_what_is_not_modeled_and_nothing_else() {
    let deepseek = read("deepseek-r1-0528.json");
    assert_eq!(deepseek.arch.mtp_layers, 1);
    assert!(deepseek.warnings.is_empty(), "{:?}", deepseek.warnings);
    let vision = read("llama-3.2-1b-instruct.json");
    assert!(vision.warnings.is_empty(), "{:?}", vision.warnings);
    let llama = read("llama-3.1-8b.json");
    assert!(llama.warnings.is_empty(), "{:?}", llama.warnings);
    assert!(llama.defaults_used.is_empty(), "{:?}", llama.defaults_used);
    let next = read("qwen3-next-80b-a3b-thinking.json");
    assert!(next.arch.attention_gate);
    assert!(next.warnings.is_empty(), "{:?}", next.warnings);
}

#[test]
fn presets_are_the_shape_of_their_published_config() {
    use vramfit_engine::model::preset;
    let pairs = [
        ("mixtral-8x22b", "mixtral-8x22b-v0.1.json"),
        ("mistral-nemo-12b", "mistral-nemo-base-2407.json"),
        (
            "mistral-small-3.1-24b",
            "mistral-small-3.1-24b-instruct-2503.reserialized.json",
        ),
        ("gemma-2-9b", "gemma-2-9b-it.json"),
        ("gemma-2-27b", "gemma-2-27b.mlc-reserialized.json"),
        ("gemma-3-1b", "gemma-3-1b-it.mlc-reserialized.json"),
        ("gemma-3-12b", "gemma-3-12b-it.reserialized.json"),
        ("gemma-3-27b", "gemma-3-27b-it.json"),
        ("olmo-2-13b", "olmo-2-1124-13b.json"),
        ("olmo-2-32b", "olmo-2-0325-32b.mlc-abridged.json"),
        ("smollm3-3b", "smollm3-3b.abridged.json"),
        (
            "deepseek-r1-distill-llama-8b",
            "deepseek-r1-distill-llama-8b.resaved-fp32.json",
        ),
        ("llama-3.1-8b", "llama-3.1-8b.json"),
        ("mixtral-8x7b", "mixtral-8x7b-v0.1.json"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b.json"),
    ];
    for (id, file) in pairs {
        let preset = preset(id).unwrap_or_else(|| panic!("no preset {id}"));
        assert_eq!(preset.arch, read(file).arch, "{id} vs {file}");
    }
    // The 4B copy leaves its vision tower out; the text model is the preset's.
    let gemma_4b = preset("gemma-3-4b").unwrap().arch;
    let text_only = vramfit_engine::model::Architecture {
        vision: read("gemma-3-4b-it.abridged-no-vision.json").arch.vision,
        ..gemma_4b
    };
    assert_eq!(
        text_only,
        read("gemma-3-4b-it.abridged-no-vision.json").arch
    );
}

fn qwen3_5_small_config() -> String {
    let path = format!(
        "{}/tests/fixtures/qwen3.5/qwen3.5-0.8b.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

/// Qwen3.5 (and Qwen3.6, the same classes): hybrid gated DeltaNet / gated attention with a vision
/// tower merging 2 × 2 patches and one MTP module, read from the published 0.8B config; a bare
/// model type is Qwen3_5MoeTextConfig's defaults, each one listed.
#[test]
fn qwen3_5_configs_read_their_hybrid_layers_and_defaults() {
    let small = parse_hf_config(&qwen3_5_small_config()).unwrap();
    assert!(small.warnings.is_empty(), "{:?}", small.warnings);
    assert!(small.defaults_used.is_empty(), "{:?}", small.defaults_used);
    let a = small.arch;
    assert_eq!((a.layers, a.recurrent.layers, a.no_attention), (24, 18, 18));
    assert_eq!((a.recurrent.heads, a.recurrent.groups), (16, 16));
    assert!(a.attention_gate && a.tied);
    assert_eq!((a.mtp_layers, a.vision.layers, a.vision.merge), (1, 12, 2));
    assert_eq!(
        a.recurrent.state_dtype,
        Some(Dtype::Fp32),
        "mamba_ssm_dtype, which vLLM and SGLang keep the state in"
    );
    let bare = parse_hf_config(r#"{"model_type": "qwen3_5_moe_text"}"#).unwrap();
    let b = bare.arch;
    assert_eq!((b.layers, b.hidden, b.recurrent.layers), (40, 2048, 30));
    assert_eq!(
        (b.recurrent.heads, b.recurrent.groups, b.recurrent.conv),
        (32, 16, 4)
    );
    assert_eq!(
        (b.moe.experts, b.moe.per_token, b.moe.expert_ffn),
        (256, 8, 512)
    );
    assert!(bare
        .defaults_used
        .contains(&"num_experts = 256".to_string()));
}

/// A Qwen3.5 checkpoint as its card sizes it: the 0.8B config with the card's text sizes (and
/// experts), every fourth layer full attention, the 27-block vision tower; its parameters with
/// the MTP module.
fn qwen3_5_card_params(text_sizes: &[(&str, u64)], experts: Option<(u64, u64, u64)>) -> f64 {
    let mut config: serde_json::Value = serde_json::from_str(&qwen3_5_small_config()).unwrap();
    let t = config["text_config"].as_object_mut().unwrap();
    for (key, value) in text_sizes {
        t.insert(key.to_string(), (*value).into());
    }
    let layers = t["num_hidden_layers"].as_u64().unwrap();
    let kinds: Vec<&str> = (1..=layers)
        .map(|i| {
            if i % 4 == 0 {
                "full_attention"
            } else {
                "linear_attention"
            }
        })
        .collect();
    t.insert("layer_types".into(), kinds.into());
    t.insert("tie_word_embeddings".into(), false.into());
    if let Some((count, per_token, width)) = experts {
        t.insert("model_type".into(), "qwen3_5_moe_text".into());
        t.remove("intermediate_size");
        t.insert("num_experts".into(), count.into());
        t.insert("num_experts_per_tok".into(), per_token.into());
        t.insert("moe_intermediate_size".into(), width.into());
        t.insert("shared_expert_intermediate_size".into(), width.into());
    }
    let hidden = t["hidden_size"].clone();
    config["tie_word_embeddings"] = false.into();
    let v = config["vision_config"].as_object_mut().unwrap();
    for (key, value) in [
        ("depth", 27),
        ("hidden_size", 1152),
        ("intermediate_size", 4304),
    ] {
        v.insert(key.into(), value.into());
    }
    v.insert("out_hidden_size".into(), hidden);
    let read = parse_hf_config(&config.to_string()).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    read.arch.param_count() + read.arch.mtp_params()
}

/// Each checkpoint's count with the MTP module is checked against the checkpoint's safetensors
/// tensors (fixtures/qwen3.5/SOURCES.md).
#[test]
fn qwen3_5_configs_count_their_checkpoints_tensors() {
    let card = qwen3_5_card_params;
    let shape = |hidden, layers, heads, kv, value_heads| {
        vec![
            ("hidden_size", hidden),
            ("num_hidden_layers", layers),
            ("num_attention_heads", heads),
            ("num_key_value_heads", kv),
            ("linear_num_value_heads", value_heads),
        ]
    };
    let dense = |hidden, layers, heads, kv, value_heads, ffn| {
        let mut sizes = shape(hidden, layers, heads, kv, value_heads);
        sizes.push(("intermediate_size", ffn));
        card(&sizes, None)
    };
    let checkpoints = [
        (
            "9B",
            dense(4096, 32, 16, 4, 32, 12288),
            9_653_104_368.0,
            Some("qwen3.5-9b"),
        ),
        (
            "27B",
            dense(5120, 64, 24, 4, 48, 17408),
            27_781_427_952.0,
            Some("qwen3.5-27b"),
        ),
        (
            "35B-A3B",
            card(&shape(2048, 40, 16, 2, 32), Some((256, 8, 512))),
            35_951_822_704.0,
            Some("qwen3.5-35b-a3b"),
        ),
        (
            "122B-A10B",
            card(&shape(3072, 48, 32, 2, 64), Some((256, 8, 1024))),
            125_086_497_008.0,
            Some("qwen3.5-122b-a10b"),
        ),
        (
            "397B-A17B",
            card(&shape(4096, 60, 32, 2, 64), Some((512, 10, 1024))),
            403_397_928_944.0,
            Some("qwen3.5-397b-a17b"),
        ),
    ];
    for (name, counted, tensors, preset_id) in checkpoints {
        if let Some(id) = preset_id {
            let p = vramfit_engine::model::preset(id).unwrap();
            assert_eq!(p.arch.param_count() + p.arch.mtp_params(), counted, "{id}");
        }
        // What is left out: the q/k norms, the DeltaNet's b/a projections beyond one, the
        // shared-expert gate, the vision tower's temporal patch and position table.
        assert!(
            relative(counted, tensors) < 0.001,
            "Qwen3.5-{name}: {counted} vs {tensors}"
        );
    }
}

/// The RoPE table each family's scaling implies, as vLLM's `get_rope` builds it.
#[test]
fn configs_give_the_rope_tables_vllm_builds() {
    use vramfit_engine::model::Rope;
    let table = |file: &str| read(file).arch.rope;
    let whole = |positions| Rope {
        positions,
        local_positions: 0,
        dim: 0,
    };
    // Llama 3's scaling reshapes frequencies over max_position_embeddings positions.
    assert_eq!(table("llama-3.1-8b.json"), whole(131_072));
    assert_eq!(
        table("llama-4-scout-17b-16e-instruct.json"),
        whole(10_485_760)
    );
    // YaRN: the original positions × factor (gpt-oss 4096 × 32, DeepSeek 4096 × 40).
    assert_eq!(table("gpt-oss-20b.json"), whole(131_072));
    assert_eq!(table("deepseek-r1-0528.json"), whole(163_840));
    // Gemma 3: linear × 8, and the sliding layers' unscaled table; its 4B file leaves
    // max_position_embeddings to Gemma3TextConfig's default.
    let gemma = Rope {
        positions: 1_048_576,
        local_positions: 131_072,
        dim: 0,
    };
    assert_eq!(table("gemma-3-27b-it.json"), gemma);
    assert_eq!(table("gemma-3-4b-it.abridged-no-vision.json"), gemma);
    // A quarter of each 256-wide head (partial_rotary_factor 0.25), in the config or in Qwen3.5's
    // rope_parameters.
    let quarter = Rope {
        positions: 262_144,
        local_positions: 0,
        dim: 64,
    };
    assert_eq!(table("qwen3-next-80b-a3b-thinking.json"), quarter);
    let qwen35 = std::fs::read_to_string(format!(
        "{}/tests/fixtures/qwen3.5/qwen3.5-0.8b.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    assert_eq!(parse_hf_config(&qwen35).unwrap().arch.rope, quarter);
}

/// SmolLM3's published config states `tie_word_embeddings: true`; a copy without it takes
/// `SmolLM3Config`'s default, which is true too, and reads the checkpoint's 3,075,098,624
/// parameters rather than the 3.34B of a separate 128,256 × 2,048 head.
#[test]
fn smollm3_without_tie_word_embeddings_ties_as_its_config_class_does() {
    let path = format!("{}/smollm3-3b.abridged.json", fixture_dir());
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let stated = parse_hf_config(&config.to_string()).unwrap();
    config
        .as_object_mut()
        .unwrap()
        .remove("tie_word_embeddings");
    let omitted = parse_hf_config(&config.to_string()).unwrap();
    assert_eq!(omitted.arch, stated.arch);
    assert!(omitted.arch.tied);
    assert_eq!(
        format!("{:.2}", omitted.arch.param_count() / 1e9),
        "3.08",
        "{}",
        omitted.summary()
    );
    assert!(relative(omitted.arch.param_count(), 3_075_098_624.0) < TOTAL_TOLERANCE);
    assert_eq!(
        omitted.defaults_used,
        vec!["tie_word_embeddings = true".to_string()]
    );
    assert!(omitted.warnings.is_empty(), "{:?}", omitted.warnings);
    // Untied, the head adds 128,256 × 2,048 parameters: the 3.34B the reader used to give.
    config["tie_word_embeddings"] = false.into();
    let untied = parse_hf_config(&config.to_string()).unwrap();
    assert_eq!(format!("{:.2}", untied.arch.param_count() / 1e9), "3.34");
}
