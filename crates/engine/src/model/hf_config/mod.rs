//! Reads a pasted Hugging Face config.json into an [`Architecture`] and the checkpoint's weight
//! format. Every required key that is missing is an error naming it; every key that changes
//! memory and that the engine does not model is a warning naming it; every family default used
//! is listed. Nothing is taken from another model.

mod keys;
mod layers;
mod lenient;
mod quant;
mod rope;
mod shape;

use super::Architecture;
use crate::dtype::{Dtype, QuantScope};
use keys::Keys;
use shape::architecture;
use std::fmt;

/// The largest config.json read: real ones are a few KiB (Nemotron-NAS's per-layer list ~40 KiB).
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
    /// The checkpoint's weight format, from `quantization_config` or `torch_dtype`.
    pub weights: Option<Dtype>,
    pub quantized: Option<QuantScope>,
    pub double_quant: Option<bool>,
    pub int4_group: Option<u32>,
    pub quant_head: Option<bool>,
    /// Keys that change memory and that the estimate does not model, each named with what is
    /// counted instead.
    pub warnings: Vec<String>,
    /// The family defaults used for keys the file leaves out (`vocab_size = 262208`).
    pub defaults_used: Vec<String>,
}

impl HfConfig {
    /// The scenario fields this config sets: the whole shape and the checkpoint's format (so
    /// nothing is left from a preset or an earlier paste), and dropout where the config names it.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        // The format is always written ("auto" where the config names none), so a format from an
        // earlier paste or preset never stays behind.
        let auto = |value: Option<String>| value.unwrap_or_else(|| "auto".to_string());
        let mut pairs = self.arch.pairs();
        pairs.push(("weights", auto(self.weights.map(|w| w.to_string()))));
        pairs.push(("quantized", auto(self.quantized.map(|q| q.to_string()))));
        pairs.push((
            "double-quant",
            self.double_quant.unwrap_or(false).to_string(),
        ));
        pairs.push(("int4-layout", "gptq".to_string()));
        pairs.push(("int4-group", self.int4_group.unwrap_or(128).to_string()));
        pairs.push(("quant-head", self.quant_head.unwrap_or(false).to_string()));
        if let Some(on) = self.dropout {
            pairs.push(("dropout", on.to_string()));
        }
        if let Some(on) = self.attention_dropout {
            pairs.push(("attention-dropout", on.to_string()));
        }
        pairs
    }

    /// A one-line summary for people: family, total and active parameters, weight format.
    pub fn summary(&self) -> String {
        let kind = self.model_type.as_deref().unwrap_or("model");
        let total = self.arch.param_count() / 1e9;
        let active = match self.arch.active_param_count() {
            Some(active) => format!(", {:.2}B active", active / 1e9),
            None => String::new(),
        };
        let weights = match self.weights {
            Some(w) => format!(", {w} weights"),
            None => String::new(),
        };
        format!("Read a {kind} config: {total:.2}B parameters{active}{weights}.")
    }
}

/// Reads a Hugging Face config.json: dense, MoE, MLA, sliding-window, hybrid and multimodal
/// configs, with `Infinity`/`NaN` literals and nested `text_config`s.
pub fn parse_hf_config(text: &str) -> Result<HfConfig, ConfigError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge);
    }
    let value: serde_json::Value = serde_json::from_str(&lenient::nonfinite_as_null(text))
        .map_err(|e| ConfigError::NotJson(e.to_string()))?;
    let root = value.as_object().ok_or(ConfigError::NotAnObject)?;
    let keys = Keys::new(root);
    let model_type = keys.text(&["model_type"]).map(str::to_string);
    let mut warnings = Vec::new();
    let arch = architecture(&keys, &mut warnings)?;
    let format = quant::weight_format(&keys, &mut warnings);
    unmodeled(&keys, &mut warnings);
    let defaults_used = keys.defaults_used.take();
    Ok(HfConfig {
        arch,
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
        weights: format.weights,
        quantized: format.scope,
        double_quant: format.double_quant,
        int4_group: format.int4_group,
        quant_head: format.quant_head,
        warnings,
        defaults_used,
    })
}

/// Keys that change memory and that nothing here reads.
fn unmodeled(keys: &Keys, warnings: &mut Vec<String>) {
    if let Some(layers) = keys.list(&["cross_attention_layers"]) {
        warnings.push(format!(
            "cross_attention_layers: {} cross-attention layers are counted as self-attention layers",
            layers.len()
        ));
    }
    for (key, what) in [
        ("audio_config", "the audio tower is not counted"),
        (
            "mamba_d_state",
            "Jamba's Mamba-1 layers and Falcon-H1's parallel attention + Mamba blocks are not \
             modeled: their mixers' parameters and recurrent state are not counted",
        ),
    ] {
        if keys.given(&[key]) && !matches!(keys.family(), "nemotron_h" | "granitemoehybrid") {
            warnings.push(format!("{key}: {what}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;

    #[test]
    fn hf_config_reads_llama_and_nested_text_config() {
        let llama = r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,
            "num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":128256,"tie_word_embeddings":false,"hidden_act":"silu",
            "max_position_embeddings":131072,"rope_scaling":{"rope_type":"llama3","factor":8.0}}"#;
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
        let pairs = parsed.pairs();
        assert!(
            !pairs.iter().any(|(key, _)| key.contains("dropout")),
            "no dropout pairs when the config is silent"
        );
        // A config that names no format resets it, so an earlier paste's fp8 cannot stay behind.
        assert!(pairs.contains(&("weights", "auto".to_string())));
        let mut scenario = crate::Scenario::default();
        scenario.set("weights", "fp8").unwrap();
        let scenario = parsed.applied_to(scenario).unwrap();
        assert_eq!(scenario.weights, None);
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

    #[test]
    fn gemma3_minimal_text_config_takes_the_documented_defaults_and_says_so() {
        // google/gemma-3-4b-it's text_config leaves heads, KV heads, head_dim and vocab out.
        let gemma = r#"{"model_type":"gemma3","text_config":{"model_type":"gemma3_text","hidden_size":2560,
            "intermediate_size":10240,"num_hidden_layers":34,"sliding_window":1024}}"#;
        let parsed = parse_hf_config(gemma).unwrap();
        assert_eq!(parsed.arch.vocab, 262_208);
        assert_eq!(
            (
                parsed.arch.heads,
                parsed.arch.kv_heads,
                parsed.arch.head_dim
            ),
            (8, 4, 256)
        );
        assert!(parsed
            .defaults_used
            .contains(&"vocab_size = 262208".to_string()));
        // 5 local layers to 1 global: 34 − 34/6 = 29 windowed layers of 1024 tokens.
        assert_eq!(
            (parsed.arch.window.layers, parsed.arch.window.tokens),
            (29, 1024)
        );
    }

    #[test]
    fn python_infinity_is_read_and_hybrid_patterns_counted() {
        let nemotron = r#"{"model_type":"nemotron_h","hidden_size":4480,"num_attention_heads":40,"num_key_value_heads":8,
            "head_dim":128,"intermediate_size":15680,"vocab_size":131072,"mlp_hidden_act":"relu2",
            "hybrid_override_pattern":"M-M*-","mamba_num_heads":128,"mamba_head_dim":80,"ssm_state_size":128,
            "n_groups":8,"conv_kernel":4,"time_step_limit":[0.0, Infinity]}"#;
        let parsed = parse_hf_config(nemotron).unwrap();
        let a = parsed.arch;
        assert_eq!(a.layers, 5, "num_hidden_layers comes from the pattern");
        assert_eq!(
            (a.recurrent.layers, a.attention_layers(), a.mlp_layers()),
            (2, 1, 2)
        );
        assert!(!a.gated, "relu² is a plain MLP");
        assert_eq!(
            a.recurrent.state_dtype,
            Some(Dtype::Fp32),
            "vLLM's Nemotron-H default when the config names no mamba_ssm_cache_dtype"
        );
    }

    #[test]
    fn quantization_config_sets_the_checkpoint_format() {
        let base = r#""hidden_size":2880,"num_attention_heads":64,"num_hidden_layers":24,"vocab_size":201088,"num_local_experts":32,"num_experts_per_tok":4,"intermediate_size":2880,"max_position_embeddings":131072"#;
        let gpt_oss = format!(
            r#"{{{base},"quantization_config":{{"quant_method":"mxfp4","modules_to_not_convert":["model.layers.*.self_attn","model.layers.*.mlp.router","model.embed_tokens","lm_head"]}}}}"#
        );
        let parsed = parse_hf_config(&gpt_oss).unwrap();
        assert_eq!(
            (parsed.weights, parsed.quantized),
            (Some(Dtype::Mxfp4), Some(QuantScope::Experts))
        );
        let bnb = format!(
            r#"{{{base},"quantization_config":{{"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_use_double_quant":true}}}}"#
        );
        let parsed = parse_hf_config(&bnb).unwrap();
        assert_eq!(
            (parsed.weights, parsed.double_quant),
            (Some(Dtype::Nf4), Some(true))
        );
        let fp8 = format!(
            r#"{{{base},"quantization_config":{{"quant_method":"compressed-tensors","config_groups":{{"group_0":{{"weights":{{"num_bits":8,"type":"float","strategy":"channel"}}}}}},"ignore":["lm_head"]}}}}"#
        );
        assert_eq!(parse_hf_config(&fp8).unwrap().weights, Some(Dtype::Fp8));
        let gptq = format!(
            r#"{{{base},"quantization_config":{{"quant_method":"gptq","bits":4,"group_size":32,"lm_head":true}}}}"#
        );
        let pairs = parse_hf_config(&gptq).unwrap().pairs();
        for pair in [("int4-group", "32"), ("quant-head", "true")] {
            assert!(pairs.contains(&(pair.0, pair.1.to_string())), "{pairs:?}");
        }
        let unknown = format!(r#"{{{base},"quantization_config":{{"quant_method":"hqq"}}}}"#);
        let parsed = parse_hf_config(&unknown).unwrap();
        assert_eq!(parsed.weights, None);
        // The base names no model type, so an untied-head warning comes first.
        assert!(
            parsed
                .warnings
                .iter()
                .any(|w| w.contains("quant_method `hqq`")),
            "{:?}",
            parsed.warnings
        );
    }

    #[test]
    fn an_empty_per_layer_list_is_no_layer_count() {
        // Found by the parse_hf_config fuzz target: `layer_types: []` gave 0 layers.
        let text = r#"{"hidden_size": 2048, "layer_types": [], "num_attention_heads": 64, "vocab_size": 151936}"#;
        assert_eq!(
            parse_hf_config(text).unwrap_err(),
            ConfigError::Missing(vec!["num_hidden_layers".to_string()])
        );
    }

    #[test]
    fn a_size_neither_the_file_nor_the_family_gives_is_not_guessed() {
        let text = r#"{"model_type": "new_moe", "hidden_size": 2048, "num_hidden_layers": 24,
            "num_attention_heads": 16, "vocab_size": 32000, "num_local_experts": 64,
            "intermediate_size": 1024}"#;
        let arch = parse_hf_config(text).unwrap().arch;
        assert_eq!(arch.moe.per_token, 0);
        assert_eq!(arch.contradiction().unwrap().0, "experts-per-token");
        let mixtral = text.replace("new_moe", "mixtral");
        let parsed = parse_hf_config(&mixtral).unwrap();
        assert_eq!(parsed.arch.moe.per_token, 2);
        assert!(parsed
            .defaults_used
            .contains(&"num_experts_per_tok = 2".to_string()));
    }
}
