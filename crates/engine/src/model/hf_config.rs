//! Reads a pasted Hugging Face config.json into an [`Architecture`], naming whatever it lacks.

use super::Architecture;
use std::fmt;

/// The largest config.json read: real ones are a few KiB.
const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Why a config.json could not give a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    TooLarge,
    NotJson(String),
    NotAnObject,
    /// Every required key that is missing, by its config.json name.
    Missing(Vec<String>),
    NoHeadDim {
        hidden: u32,
        heads: u32,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::TooLarge => {
                f.write_str("config.json is over 1 MiB; paste only the model's config.json")
            }
            ConfigError::NotJson(e) => write!(f, "config.json is not valid JSON: {e}"),
            ConfigError::NotAnObject => f.write_str("config.json must be a JSON object"),
            ConfigError::Missing(keys) => write!(f, "config.json is missing {}", keys.join(", ")),
            ConfigError::NoHeadDim { hidden, heads } => write!(
                f,
                "config.json's hidden_size {hidden} is smaller than num_attention_heads {heads} and gives no head_dim"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// What a pasted config.json gave, with whatever it left out named.
#[derive(Clone, Debug, PartialEq)]
pub struct HfConfig {
    pub arch: Architecture,
    pub model_type: Option<String>,
    /// Whether the config trains with hidden-state dropout, when it says.
    pub dropout: Option<bool>,
    /// Whether the config trains with attention-probability dropout, when it says.
    pub attention_dropout: Option<bool>,
}

impl HfConfig {
    /// The scenario fields this config sets: the shape, and dropout where the config names it.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = self.arch.pairs().to_vec();
        if let Some(on) = self.dropout {
            pairs.push(("dropout", on.to_string()));
        }
        if let Some(on) = self.attention_dropout {
            pairs.push(("attention-dropout", on.to_string()));
        }
        pairs
    }
}

/// A config's keys: the text model's own (a nested `text_config`, for multimodal configs), then
/// the top level's.
struct Keys<'a> {
    config: &'a serde_json::Map<String, serde_json::Value>,
    root: &'a serde_json::Map<String, serde_json::Value>,
}

impl<'a> Keys<'a> {
    /// The first of `keys` present, in the text config or at the top level.
    fn value(&self, keys: &[&str]) -> Option<&'a serde_json::Value> {
        keys.iter()
            .find_map(|k| self.config.get(*k).or_else(|| self.root.get(*k)))
    }

    /// A whole number that fits a shape field and is above 0.
    fn count(&self, keys: &[&str]) -> Option<u32> {
        self.value(keys)
            .and_then(|v| {
                v.as_u64().or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
            })
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
    }

    fn text(&self, keys: &[&str]) -> Option<&'a str> {
        self.value(keys).and_then(|v| v.as_str())
    }

    /// Whether a dropout probability under one of `keys` is above 0; only that matters for memory.
    fn probability(&self, keys: &[&str]) -> Option<bool> {
        self.value(keys)
            .and_then(|v| v.as_f64())
            .filter(|p| p.is_finite())
            .map(|p| p > 0.0)
    }
}

/// Reads a Hugging Face config.json (Llama, Mistral, Qwen, Gemma, Phi-3, GPT-2 and multimodal
/// configs with a nested `text_config`). Errors name every missing field at once.
pub fn parse_hf_config(text: &str) -> Result<HfConfig, ConfigError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge);
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ConfigError::NotJson(e.to_string()))?;
    let root = value.as_object().ok_or(ConfigError::NotAnObject)?;
    let config = root
        .get("text_config")
        .and_then(|t| t.as_object())
        .unwrap_or(root);
    let keys = Keys { config, root };
    let model_type = keys.text(&["model_type"]).map(str::to_string);
    Ok(HfConfig {
        arch: architecture(&keys, model_type.as_deref())?,
        model_type,
        // Dropout probabilities under each family's name (BERT, GPT-2, OPT/BART, Falcon;
        // Llama-family configs carry `attention_dropout: 0.0`).
        dropout: keys.probability(&[
            "hidden_dropout_prob",
            "resid_pdrop",
            "hidden_dropout",
            "dropout",
        ]),
        attention_dropout: keys.probability(&[
            "attention_probs_dropout_prob",
            "attn_pdrop",
            "attention_dropout",
        ]),
    })
}

/// The shape, under each family's key names, with transformers' defaults where a key is absent.
fn architecture(keys: &Keys, model_type: Option<&str>) -> Result<Architecture, ConfigError> {
    let mut missing = Vec::new();
    let mut required = |name: &str, names: &[&str]| {
        keys.count(names).unwrap_or_else(|| {
            missing.push(name.to_string());
            0
        })
    };
    let layers = required(
        "num_hidden_layers",
        &["num_hidden_layers", "n_layer", "num_layers"],
    );
    let hidden = required("hidden_size", &["hidden_size", "n_embd", "d_model"]);
    let heads = required("num_attention_heads", &["num_attention_heads", "n_head"]);
    let vocab = required("vocab_size", &["vocab_size"]);
    if !missing.is_empty() {
        return Err(ConfigError::Missing(missing));
    }
    let head_dim = keys.count(&["head_dim"]).unwrap_or(hidden / heads.max(1));
    if head_dim == 0 {
        return Err(ConfigError::NoHeadDim { hidden, heads });
    }
    let activation = keys
        .text(&["hidden_act", "activation_function"])
        .unwrap_or("silu");
    let gpt_style = matches!(
        model_type,
        Some("gpt2" | "gpt_neox" | "falcon" | "phi" | "bert" | "opt" | "gpt_bigcode")
    );
    Ok(Architecture {
        layers,
        hidden,
        heads,
        kv_heads: keys
            .count(&[
                "num_key_value_heads",
                "num_kv_heads",
                "multi_query_group_num",
            ])
            .unwrap_or(heads),
        head_dim,
        // Saturating: `hidden_size` may be any u32, and `4 * hidden` overflowed (a panic in debug
        // builds, a wrapped and possibly zero ffn in release). The saturated value is past the
        // scenario's 1e7 limit, so setting it is rejected by name.
        ffn: keys
            .count(&["intermediate_size", "n_inner", "ffn_dim"])
            .unwrap_or(hidden.saturating_mul(4)),
        vocab,
        // transformers' PretrainedConfig default is true.
        tied: keys
            .value(&["tie_word_embeddings"])
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
        gated: !gpt_style && !activation.starts_with("gelu_new") && activation != "relu",
        moe: Default::default(),
        mla: Default::default(),
        window: Default::default(),
        vision: Default::default(),
        recurrent: Default::default(),
        no_attention: 0,
        no_mlp: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;

    #[test]
    fn hf_config_reads_llama_and_nested_text_config() {
        let llama = r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,
            "num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":128256,"tie_word_embeddings":false,"hidden_act":"silu"}"#;
        let parsed = parse_hf_config(llama).unwrap();
        assert_eq!(parsed.arch, preset("llama-3.1-8b").unwrap().arch);

        let gemma3 = r#"{"model_type":"gemma3","text_config":{"hidden_size":2560,"intermediate_size":10240,
            "num_attention_heads":8,"num_hidden_layers":34,"num_key_value_heads":4,"head_dim":256,"vocab_size":262208}}"#;
        let parsed = parse_hf_config(gemma3).unwrap();
        assert_eq!(parsed.arch.head_dim, 256);
        assert_eq!(parsed.arch.kv_heads, 4);
        assert!(parsed.arch.tied);
    }

    #[test]
    fn hf_config_reads_dropout_under_each_family_name() {
        let bert = r#"{"model_type":"bert","hidden_size":1024,"num_attention_heads":16,"num_hidden_layers":24,
            "intermediate_size":4096,"vocab_size":30522,"hidden_act":"gelu","hidden_dropout_prob":0.1,
            "attention_probs_dropout_prob":0.1}"#;
        let parsed = parse_hf_config(bert).unwrap();
        assert_eq!(
            (parsed.dropout, parsed.attention_dropout),
            (Some(true), Some(true))
        );
        assert!(parsed
            .pairs()
            .contains(&("attention-dropout", "true".to_string())));

        let opt = r#"{"model_type":"opt","hidden_size":1024,"num_attention_heads":16,"num_hidden_layers":24,
            "ffn_dim":4096,"vocab_size":50272,"dropout":0.1,"attention_dropout":0.0}"#;
        let parsed = parse_hf_config(opt).unwrap();
        assert_eq!(
            (parsed.dropout, parsed.attention_dropout),
            (Some(true), Some(false))
        );

        let llama = r#"{"hidden_size":4096,"num_attention_heads":32,"num_hidden_layers":32,"vocab_size":128256}"#;
        let parsed = parse_hf_config(llama).unwrap();
        assert_eq!((parsed.dropout, parsed.attention_dropout), (None, None));
        assert_eq!(
            parsed.pairs().len(),
            parsed.arch.pairs().len(),
            "no dropout pairs when the config is silent"
        );
    }

    #[test]
    fn hf_config_names_every_missing_field() {
        let err = parse_hf_config(r#"{"hidden_size": 4096}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("num_hidden_layers")
                && err.contains("num_attention_heads")
                && err.contains("vocab_size"),
            "{err}"
        );
        assert!(parse_hf_config("not json")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        assert!(parse_hf_config("[1,2]")
            .unwrap_err()
            .to_string()
            .contains("object"));
    }
}
