//! A config.json that leaves a key out takes the default of its model type's transformers
//! configuration class (`configuration_<family>.py`, cited beside each default in
//! src/model/hf_config/keys.rs), and says so in `defaults_used`. One test per family whose
//! default the reader takes from that table.

use serde_json::{json, Value};
use vramfit_engine::model::{parse_hf_config, HfConfig};

/// A small decoder of `model_type` with only the sizes every reader needs, plus `extra` (where a
/// `null` takes the key out).
fn read(model_type: &str, extra: Value) -> HfConfig {
    let mut config = json!({
        "model_type": model_type,
        "hidden_size": 2048,
        "num_hidden_layers": 8,
        "num_attention_heads": 16,
        "intermediate_size": 8192,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    });
    let object = config.as_object_mut().unwrap();
    for (key, value) in extra.as_object().unwrap() {
        match value {
            Value::Null => object.remove(key),
            _ => object.insert(key.clone(), value.clone()),
        };
    }
    parse_hf_config(&config.to_string()).unwrap()
}

fn used(config: &HfConfig, default: &str) -> bool {
    config.defaults_used.iter().any(|d| d == default)
}

/// The KV heads, head width and tying a bare config of `model_type` reads, each default listed.
fn assert_defaults(model_type: &str, kv_heads: u32, head_dim: u32, tied: bool) {
    let config = read(model_type, json!({}));
    let a = &config.arch;
    assert_eq!(
        (a.kv_heads, a.head_dim, a.tied),
        (kv_heads, head_dim, tied),
        "{model_type}"
    );
    assert!(
        used(&config, &format!("tie_word_embeddings = {tied}")),
        "{model_type}: {:?}",
        config.defaults_used
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn smollm3_ties_and_groups_four_kv_heads() {
    assert_defaults("smollm3", 4, 128, true);
    let config = read("smollm3", json!({}));
    assert!(used(&config, "num_key_value_heads = 4"));
}

#[test]
fn falcon_ties_as_pretrained_config_does() {
    assert_defaults("falcon", 16, 128, true);
}

#[test]
fn gemma_has_16_kv_heads_of_256() {
    assert_defaults("gemma", 16, 256, true);
    assert!(used(&read("gemma", json!({})), "head_dim = 256"));
}

#[test]
fn gemma2_has_4_kv_heads_of_256() {
    assert_defaults("gemma2", 4, 256, true);
}

#[test]
fn mistral_has_8_kv_heads_and_stays_untied() {
    assert_defaults("mistral", 8, 128, false);
}

#[test]
fn mistral3_without_a_text_model_type_is_read_as_mistral() {
    // `Mistral3Config` defaults its own `tie_word_embeddings` to true, but its text model is a
    // `MistralConfig`, untied, and that is the one transformers ties by.
    let config = read("mistral3", json!({}));
    assert_eq!((config.arch.kv_heads, config.arch.tied), (8, false));
}

#[test]
fn mixtral_has_8_kv_heads() {
    assert_defaults("mixtral", 8, 128, false);
}

#[test]
fn qwen2_has_32_kv_heads() {
    assert_defaults("qwen2", 32, 128, false);
}

#[test]
fn qwen2_moe_has_16_kv_heads() {
    assert_defaults("qwen2_moe", 16, 128, false);
}

#[test]
fn qwen3_has_32_kv_heads_of_128() {
    assert_defaults("qwen3", 32, 128, false);
}

#[test]
fn qwen3_moe_has_4_kv_heads_of_128() {
    assert_defaults("qwen3_moe", 4, 128, false);
}

#[test]
fn qwen3_next_has_2_kv_heads_of_256() {
    assert_defaults("qwen3_next", 2, 256, false);
}

#[test]
fn glm4_moe_has_8_kv_heads() {
    assert_defaults("glm4_moe", 8, 128, false);
}

#[test]
fn gpt_oss_has_8_kv_heads_of_64() {
    // 2880 / 64 heads would be 45; GptOssConfig fixes 64.
    let config = read(
        "gpt_oss",
        json!({"hidden_size": 2880, "num_attention_heads": 64}),
    );
    assert_eq!((config.arch.kv_heads, config.arch.head_dim), (8, 64));
    assert!(!config.arch.tied);
}

#[test]
fn nemotron_h_has_8_kv_heads_of_128() {
    assert_defaults("nemotron_h", 8, 128, false);
}

#[test]
fn deepseek_v2_takes_its_own_class_defaults_not_v3s() {
    let config = read(
        "deepseek_v2",
        json!({"vocab_size": null, "n_routed_experts": 64, "moe_intermediate_size": 1408,
               "num_experts_per_tok": 6}),
    );
    let a = &config.arch;
    assert_eq!(
        a.vocab, 32_000,
        "DeepseekV2Config's vocabulary, not V3's 129,280"
    );
    assert_eq!(a.moe.dense_layers, 0, "no dense layers first, not V3's 3");
    assert_eq!((a.mla.kv_rank, a.mla.q_rank), (512, 1536));
    assert!(!a.tied);
    // No experts-per-token default in DeepseekV2Config: left for validation to name.
    let bare = read("deepseek_v2", json!({"n_routed_experts": 64}));
    assert_eq!(bare.arch.moe.per_token, 0);
}

#[test]
fn a_stated_key_is_never_replaced_by_a_default() {
    let config = read(
        "smollm3",
        json!({"tie_word_embeddings": false, "num_key_value_heads": 16}),
    );
    assert_eq!((config.arch.tied, config.arch.kv_heads), (false, 16));
    assert!(
        config.defaults_used.is_empty(),
        "{:?}",
        config.defaults_used
    );
}

#[test]
fn an_unknown_family_is_counted_untied_and_says_so() {
    for model_type in ["new_decoder", ""] {
        let config = read(model_type, json!({}));
        assert!(!config.arch.tied);
        assert!(
            config.warnings[0].starts_with("tie_word_embeddings: not in the file"),
            "{:?}",
            config.warnings
        );
        assert!(config.defaults_used.is_empty());
    }
}
