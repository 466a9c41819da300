//! The checkpoint's weight format: `quantization_config` where there is one, else `torch_dtype`
//! (`dtype` in transformers 5). Formats the engine cannot represent are named in a warning.

use super::keys::Keys;
use crate::dtype::{Dtype, QuantScope};
use serde_json::{Map, Value};

/// The weight format a config declares.
#[derive(Debug, Default, PartialEq)]
pub(super) struct WeightFormat {
    pub weights: Option<Dtype>,
    pub scope: Option<QuantScope>,
    pub double_quant: Option<bool>,
    /// GPTQ's and AWQ's `group_size`: weights per int4 scale.
    pub int4_group: Option<u32>,
    /// GPTQ's `lm_head`: the output layer quantized too.
    pub quant_head: Option<bool>,
}

pub(super) fn weight_format(keys: &Keys, warnings: &mut Vec<String>) -> WeightFormat {
    match keys.object(&["quantization_config"]) {
        Some(q) => quantized(q, warnings),
        None => WeightFormat {
            weights: keys.text(&["torch_dtype", "dtype"]).and_then(float_dtype),
            ..WeightFormat::default()
        },
    }
}

pub(super) fn float_dtype(name: &str) -> Option<Dtype> {
    match name {
        "bfloat16" => Some(Dtype::Bf16),
        "float16" => Some(Dtype::Fp16),
        "float32" => Some(Dtype::Fp32),
        _ => None,
    }
}

fn number(q: &Map<String, Value>, key: &str) -> Option<u64> {
    q.get(key).and_then(Value::as_u64)
}

/// Whether a `modules_to_not_convert` or `ignore` list keeps attention out of the format.
fn attention_kept(q: &Map<String, Value>) -> bool {
    ["modules_to_not_convert", "ignore"].iter().any(|k| {
        q.get(*k).and_then(Value::as_array).is_some_and(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .any(|m| m.contains("self_attn") || m.contains("attn"))
        })
    })
}

fn quantized(q: &Map<String, Value>, warnings: &mut Vec<String>) -> WeightFormat {
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    let mut format = WeightFormat::default();
    let mut unsupported = |what: String| {
        warnings.push(format!(
            "quantization_config: {what} is not modeled; the weights are counted as bf16"
        ))
    };
    match method {
        "fp8" => format.weights = Some(Dtype::Fp8),
        "mxfp4" => {
            format.weights = Some(Dtype::Mxfp4);
            if attention_kept(q) {
                format.scope = Some(QuantScope::Experts);
            }
        }
        "gptq" | "awq" => match number(q, "bits") {
            Some(4) => {
                format.weights = Some(Dtype::Int4);
                format.int4_group = number(q, "group_size").and_then(|g| u32::try_from(g).ok());
                if format.int4_group.is_none() && q.contains_key("group_size") {
                    warnings.push(
                        "quantization_config.group_size: per-channel scales are counted per 128 weights"
                            .to_string(),
                    );
                }
                format.quant_head = q.get("lm_head").and_then(Value::as_bool);
            }
            Some(8) => format.weights = Some(Dtype::Int8),
            Some(bits) => unsupported(format!("{method} with {bits}-bit weights")),
            None => unsupported(format!("{method} without `bits`")),
        },
        "bitsandbytes" => {
            let flag = |k: &str| q.get(k).and_then(Value::as_bool) == Some(true);
            if flag("load_in_4bit") {
                format.weights = Some(Dtype::Nf4);
                format.double_quant = Some(flag("bnb_4bit_use_double_quant"));
            } else if flag("load_in_8bit") {
                format.weights = Some(Dtype::Int8);
            } else {
                unsupported("bitsandbytes without load_in_4bit or load_in_8bit".to_string());
            }
        }
        "compressed-tensors" => match compressed_tensors_weights(q) {
            Some((8, "float")) => format.weights = Some(Dtype::Fp8),
            Some((8, "int")) => format.weights = Some(Dtype::Int8),
            Some((4, "int")) => format.weights = Some(Dtype::Int4),
            Some((4, "float")) => {
                format.weights = Some(Dtype::Mxfp4);
                warnings.push(
                    "quantization_config: 4-bit float weights are counted as MXFP4 (an 8-bit \
                     scale per 32; NVFP4's per-16 fp8 scales add 0.03 B per weight)"
                        .to_string(),
                );
            }
            Some((bits, kind)) => unsupported(format!(
                "compressed-tensors weights of {bits}-bit type `{kind}`"
            )),
            None => unsupported("compressed-tensors without config_groups weights".to_string()),
        },
        other => unsupported(format!("quant_method `{other}`")),
    }
    format
}

/// The first config group's weight bits and type (`int` or `float`).
fn compressed_tensors_weights(q: &Map<String, Value>) -> Option<(u64, &str)> {
    let groups = q.get("config_groups")?.as_object()?;
    groups.values().find_map(|group| {
        let weights = group.get("weights")?.as_object()?;
        Some((number(weights, "num_bits")?, weights.get("type")?.as_str()?))
    })
}
