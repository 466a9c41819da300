//! A config's keys as transformers reads them: the text model's own (a nested `text_config`, for
//! multimodal configs) before the top level's, and the model type's documented defaults for keys
//! a minimal file leaves out. Every default used is recorded, so the reader can say so.

use serde_json::{Map, Value};

/// Defaults of transformers' configuration classes for keys the published minimal files omit,
/// by `model_type`. Only keys that change memory; cited per family:
/// - `gemma3_text`: `Gemma3TextConfig` (transformers@008f5c8c, configuration_gemma3.py);
/// - `gemma2`: `Gemma2Config` (transformers@008e5743);
/// - `qwen3`, `qwen3_moe`: `head_dim = 128` (transformers@008e5743), not hidden/heads;
/// - `mistral`: `sliding_window = 4096` (transformers@001f85b3), which `null` turns off;
/// - `llama4_text`: `Llama4TextConfig` (transformers@008e5743);
/// - `deepseek_v3`: `DeepseekV3Config` (transformers@001f85b3);
/// - `deepseek_v2`: `DeepseekV2Config` (transformers@008e5743): V3's latent sizes, but a 32,000
///   vocabulary, no dense layers first and no experts-per-token default;
/// - `gpt_oss`: `sliding_window = 128` (transformers@02b8f42b);
/// - `nemotron_h`: `NemotronHConfig`'s Mamba-2 sizes (transformers@13923c63);
/// - `granitemoehybrid`: `GraniteMoeHybridConfig`'s Mamba-2 sizes (transformers@008f5c8c);
/// - `num_experts_per_tok` for each mixture-of-experts family: Mixtral 2, Qwen3-MoE 8
///   (`qwen3_moe`@008e5743), DeepSeek-V3 8, gpt-oss 4, Llama 4 1, Qwen3-Next 10, NemotronH 2,
///   granite hybrid 2;
/// - `qwen3_next`: `Qwen3NextConfig`'s linear-attention sizes (transformers@008e5743);
/// - `qwen3_5`, `qwen3_5_moe`: `Qwen3_5TextConfig`'s and `Qwen3_5MoeTextConfig`'s sizes
///   (transformers@008e5743, the classes Qwen3.6 checkpoints load too);
/// - `num_key_value_heads` where the class's default is a number rather than "one per query
///   head" (which is what the reader takes without an entry): Gemma 16, Gemma 2 4, Mistral 8,
///   Mixtral 8, Qwen2 32, Qwen2-MoE 16, Qwen3 32, Qwen3-MoE 4, Qwen3-Next 2, GLM-4.5 8,
///   gpt-oss 8, NemotronH 8, SmolLM3 4 (each `configuration_<family>.py`, transformers@008e5743;
///   gpt-oss @02b8f42b, NemotronH @13923c63);
/// - `head_dim` where the class fixes it rather than deriving hidden / heads: Gemma 256,
///   Qwen3-Next 256, gpt-oss 64 (not 2880 / 64 = 45), NemotronH 128 (same files).
const FAMILY_DEFAULTS: &[(&str, &[(&str, u32)])] = &[
    (
        "gemma3_text",
        &[
            ("vocab_size", 262_208),
            ("hidden_size", 2304),
            ("intermediate_size", 9216),
            ("num_hidden_layers", 26),
            ("num_attention_heads", 8),
            ("num_key_value_heads", 4),
            ("head_dim", 256),
            ("sliding_window", 4096),
            ("sliding_window_pattern", 6),
            ("max_position_embeddings", 131_072),
        ],
    ),
    (
        "gemma2",
        &[
            ("vocab_size", 256_000),
            ("num_key_value_heads", 4),
            ("head_dim", 256),
            ("sliding_window", 4096),
        ],
    ),
    ("gemma", &[("num_key_value_heads", 16), ("head_dim", 256)]),
    ("qwen2", &[("num_key_value_heads", 32)]),
    ("qwen2_moe", &[("num_key_value_heads", 16)]),
    ("qwen3", &[("num_key_value_heads", 32), ("head_dim", 128)]),
    (
        "qwen3_moe",
        &[
            ("num_key_value_heads", 4),
            ("head_dim", 128),
            ("num_experts_per_tok", 8),
        ],
    ),
    (
        "mixtral",
        &[("num_key_value_heads", 8), ("num_experts_per_tok", 2)],
    ),
    (
        "mistral",
        &[("num_key_value_heads", 8), ("sliding_window", 4096)],
    ),
    ("glm4_moe", &[("num_key_value_heads", 8)]),
    ("smollm3", &[("num_key_value_heads", 4)]),
    (
        "llama4_text",
        &[
            ("vocab_size", 202_048),
            ("hidden_size", 5120),
            ("intermediate_size", 8192),
            ("intermediate_size_mlp", 16384),
            ("num_hidden_layers", 48),
            ("num_attention_heads", 40),
            ("num_key_value_heads", 8),
            ("head_dim", 128),
            ("num_local_experts", 16),
            ("num_experts_per_tok", 1),
            ("attention_chunk_size", 8192),
        ],
    ),
    (
        "deepseek_v3",
        &[
            ("vocab_size", 129_280),
            ("q_lora_rank", 1536),
            ("kv_lora_rank", 512),
            ("qk_rope_head_dim", 64),
            ("qk_nope_head_dim", 128),
            ("v_head_dim", 128),
            ("first_k_dense_replace", 3),
            ("num_experts_per_tok", 8),
        ],
    ),
    (
        "deepseek_v2",
        &[
            ("vocab_size", 32_000),
            ("q_lora_rank", 1536),
            ("kv_lora_rank", 512),
            ("qk_rope_head_dim", 64),
            ("qk_nope_head_dim", 128),
            ("v_head_dim", 128),
            ("first_k_dense_replace", 0),
        ],
    ),
    (
        "gpt_oss",
        &[
            ("num_key_value_heads", 8),
            ("head_dim", 64),
            ("sliding_window", 128),
            ("num_experts_per_tok", 4),
        ],
    ),
    (
        "nemotron_h",
        &[
            ("num_key_value_heads", 8),
            ("head_dim", 128),
            ("ssm_state_size", 128),
            ("mamba_num_heads", 128),
            ("mamba_head_dim", 64),
            ("n_groups", 8),
            ("conv_kernel", 4),
            ("expand", 2),
            ("num_experts_per_tok", 2),
        ],
    ),
    (
        "granitemoehybrid",
        &[
            ("mamba_num_heads", 128),
            ("ssm_state_size", 256),
            ("n_groups", 1),
            ("conv_kernel", 4),
            ("expand", 2),
            ("num_experts_per_tok", 2),
        ],
    ),
    (
        "qwen3_next",
        &[
            ("num_key_value_heads", 2),
            ("head_dim", 256),
            ("num_experts_per_tok", 10),
        ],
    ),
    (
        "qwen3_5",
        &[
            ("vocab_size", 248_320),
            ("hidden_size", 4096),
            ("intermediate_size", 12288),
            ("num_hidden_layers", 32),
            ("num_attention_heads", 16),
            ("num_key_value_heads", 4),
            ("head_dim", 256),
        ],
    ),
    (
        "qwen3_5_moe",
        &[
            ("vocab_size", 248_320),
            ("hidden_size", 2048),
            ("num_hidden_layers", 40),
            ("num_attention_heads", 16),
            ("num_key_value_heads", 2),
            ("head_dim", 256),
            ("moe_intermediate_size", 512),
            ("shared_expert_intermediate_size", 512),
            ("num_experts_per_tok", 8),
            ("num_experts", 256),
        ],
    ),
];

/// `tie_word_embeddings` by model type, for a file that leaves it out: what each configuration
/// class defaults it to. transformers 4's `PretrainedConfig.__init__` pops it with a default of
/// true (configuration_utils.py), so a class that never sets it ties; transformers 5 has each
/// class declare it. A multimodal wrapper's text model decides (`get_text_config(decoder=True)`
/// in `tie_weights`), which is why the key is read from `text_config` first. Each entry is its
/// family's `configuration_<family>.py` at the commit named.
const TIE_WORD_EMBEDDINGS: &[(&str, bool)] = &[
    // `tie_word_embeddings: bool = True` (transformers@008e5743).
    ("smollm3", true),
    ("gemma", true),
    ("gemma2", true),
    // `tie_word_embeddings=True` in `Gemma3TextConfig.__init__` (transformers@008f5c8c).
    ("gemma3_text", true),
    // `tie_word_embeddings=True` in `GPTBigCodeConfig.__init__` (transformers@05ff2e98).
    ("gpt_bigcode", true),
    // Never set by the class, so `PretrainedConfig`'s true: GPT2Config (transformers@01ae98ae),
    // BertConfig (@008f5c8c), OPTConfig (@014674d3), FalconConfig (@05585536).
    ("gpt2", true),
    ("bert", true),
    ("opt", true),
    ("falcon", true),
    // `tie_word_embeddings: bool = False` (transformers@008e5743).
    ("llama", false),
    ("mistral", false),
    ("mixtral", false),
    ("qwen2", false),
    ("qwen2_moe", false),
    ("qwen3", false),
    ("qwen3_moe", false),
    ("qwen3_next", false),
    ("qwen3_5", false),
    ("qwen3_5_moe", false),
    ("llama4_text", false),
    ("phi", false),
    ("phi3", false),
    ("olmo2", false),
    ("gpt_neox", false),
    ("deepseek_v3", false),
    ("deepseek_v2", false),
    ("glm4_moe", false),
    // transformers@02b8f42b.
    ("gpt_oss", false),
    // transformers@13923c63.
    ("nemotron_h", false),
    // `tie_word_embeddings=False` in `GraniteMoeHybridConfig.__init__` (transformers@008f5c8c).
    ("granitemoehybrid", false),
];

/// Families whose linear-attention layers are gated DeltaNet and whose attention gates its
/// output (transformers' `Qwen3NextGatedDeltaNet` and `Qwen3NextAttention`, which Qwen3.5
/// subclasses).
pub(super) const GATED_DELTA_NET_FAMILIES: &[&str] = &["qwen3_next", "qwen3_5", "qwen3_5_moe"];

/// The linear-attention sizes all three of those configuration classes default to
/// (transformers@008e5743), beside each family's own defaults.
const GATED_DELTA_NET_DEFAULTS: &[(&str, u32)] = &[
    ("linear_conv_kernel_dim", 4),
    ("linear_key_head_dim", 128),
    ("linear_value_head_dim", 128),
    ("linear_num_key_heads", 16),
    ("linear_num_value_heads", 32),
    ("full_attention_interval", 4),
];

/// The nested text config's model type names the family for a multimodal wrapper.
fn family(model_type: &str) -> &str {
    match model_type {
        "gemma3" => "gemma3_text",
        "llama4" => "llama4_text",
        "qwen3_5_text" => "qwen3_5",
        "qwen3_5_moe_text" => "qwen3_5_moe",
        // `Mistral3Config` builds its text model as a `mistral` one when `text_config` names none.
        "mistral3" => "mistral",
        other => other,
    }
}

pub(super) struct Keys<'a> {
    config: &'a Map<String, Value>,
    root: &'a Map<String, Value>,
    family: &'a str,
    /// `key = value` for each family default used.
    pub defaults_used: std::cell::RefCell<Vec<String>>,
}

impl<'a> Keys<'a> {
    pub fn new(root: &'a Map<String, Value>) -> Keys<'a> {
        let config = root
            .get("text_config")
            .and_then(Value::as_object)
            .unwrap_or(root);
        let model_type = config
            .get("model_type")
            .or_else(|| root.get("model_type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        Keys {
            config,
            root,
            family: family(model_type),
            defaults_used: Default::default(),
        }
    }

    pub fn family(&self) -> &'a str {
        self.family
    }

    /// The first of `keys` present (a `null` counts as present), in the text config or at the
    /// top level.
    pub fn value(&self, keys: &[&str]) -> Option<&'a Value> {
        keys.iter()
            .find_map(|k| self.config.get(*k).or_else(|| self.root.get(*k)))
    }

    /// Whether any of `keys` is present with a value other than `null`, `false`, 0 or empty.
    pub fn given(&self, keys: &[&str]) -> bool {
        self.value(keys).is_some_and(|v| match v {
            Value::Null | Value::Bool(false) => false,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Bool(true) => true,
        })
    }

    /// A whole number from 0 that fits a shape field, under the first key present; else the
    /// family's default under the first of `keys` it has one for (recorded), else `None`. A
    /// present `null` is `None` and takes no default: `"sliding_window": null` turns the window
    /// off.
    pub fn count(&self, keys: &[&str]) -> Option<u32> {
        match self.value(keys) {
            Some(v) => whole(v),
            None => keys.iter().find_map(|key| self.default(key)),
        }
    }

    /// [`Keys::count`], above 0.
    pub fn positive(&self, keys: &[&str]) -> Option<u32> {
        self.count(keys).filter(|n| *n > 0)
    }

    fn default(&self, key: &str) -> Option<u32> {
        let own = FAMILY_DEFAULTS
            .iter()
            .filter(|(f, _)| *f == self.family)
            .flat_map(|(_, defaults)| defaults.iter());
        let linear = GATED_DELTA_NET_DEFAULTS
            .iter()
            .filter(|_| GATED_DELTA_NET_FAMILIES.contains(&self.family));
        let (_, value) = own.chain(linear).find(|(k, _)| *k == key)?;
        self.defaults_used
            .borrow_mut()
            .push(format!("{key} = {value}"));
        Some(*value)
    }

    pub fn text(&self, keys: &[&str]) -> Option<&'a str> {
        self.value(keys).and_then(Value::as_str)
    }

    pub fn flag(&self, keys: &[&str]) -> Option<bool> {
        self.value(keys).and_then(Value::as_bool)
    }

    /// `tie_word_embeddings`, else the family's default from [`TIE_WORD_EMBEDDINGS`] (recorded).
    /// A family without one is counted untied, and a warning says the file left it open: a
    /// separate head is the larger count, and most decoder classes transformers has added since
    /// Llama declare it false.
    pub fn tied(&self, warnings: &mut Vec<String>) -> bool {
        if let Some(tied) = self.flag(&["tie_word_embeddings"]) {
            return tied;
        }
        match TIE_WORD_EMBEDDINGS.iter().find(|(f, _)| *f == self.family) {
            Some((_, tied)) => {
                self.defaults_used
                    .borrow_mut()
                    .push(format!("tie_word_embeddings = {tied}"));
                *tied
            }
            None => {
                let family = match self.family {
                    "" => "no model_type".to_string(),
                    f => format!("model_type `{f}`"),
                };
                warnings.push(format!(
                    "tie_word_embeddings: not in the file, and {family} has no known default; \
                     counted untied (a separate output head)"
                ));
                false
            }
        }
    }

    pub fn list(&self, keys: &[&str]) -> Option<&'a Vec<Value>> {
        self.value(keys).and_then(Value::as_array)
    }

    pub fn object(&self, keys: &[&str]) -> Option<&'a Map<String, Value>> {
        self.value(keys).and_then(Value::as_object)
    }

    /// Whether a dropout probability under one of `keys` is above 0; only that matters for memory.
    pub fn probability(&self, keys: &[&str]) -> Option<bool> {
        self.value(keys)
            .and_then(Value::as_f64)
            .filter(|p| p.is_finite())
            .map(|p| p > 0.0)
    }
}

/// A JSON number that is a whole, non-negative value fitting a u32.
pub(super) fn whole(value: &Value) -> Option<u32> {
    value
        .as_u64()
        .or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
                .map(|f| f as u64)
        })
        .and_then(|n| u32::try_from(n).ok())
}
