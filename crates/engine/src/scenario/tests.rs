//! The field table's promises: every key round-trips through its wire form, bad values name
//! their field and change nothing, and the table agrees with serde's JSON names.

use super::*;
use crate::dtype::Dtype;
use crate::workload::Mode;

#[test]
fn every_key_round_trips_through_pairs() {
    let mut s = Scenario::default();
    for (k, v) in [
        ("model", "llama-3.1-8b"),
        ("params", "8B"),
        ("layers", "30"),
        ("mode", "qlora"),
        ("weights", "nf4"),
        ("batch", "4"),
        ("seq", "1024"),
        ("checkpointing", "full"),
        ("lora-targets", "all"),
        ("lora-dropout", "true"),
        ("vram", "16376MiB"),
        ("reserved", "1.5GiB"),
        ("margin", "500MB"),
        ("tight", "90"),
        ("units", "gib"),
        ("custom", "RSSM dynamics:500MiB"),
        ("double-quant", "true"),
        ("gpu", "t4"),
        ("sharding", "zero3"),
        ("gpus", "4"),
    ] {
        s.set(k, v).unwrap_or_else(|e| panic!("{e}"));
    }
    let pairs = s.to_pairs();
    let (back, errors) = Scenario::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(back, s);
}

#[test]
fn bad_values_name_the_field_and_keep_the_last_good_value() {
    let mut s = Scenario::default();
    for (k, v) in [
        ("batch", "-1"),
        ("batch", "NaN"),
        ("batch", "1e30"),
        ("batch", "2.5"),
        ("seq", ""),
        ("vram", "0"),
        ("gpu", "h900"),
        ("weights", "int3"),
        ("tight", "0"),
        ("nonsense", "1"),
        ("custom", "no-size"),
    ] {
        let e = s.set(k, v).unwrap_err();
        assert_eq!(e.field, k);
        assert!(!e.message.is_empty());
    }
    assert_eq!(s, Scenario::default());
}

#[test]
fn a_replaced_key_is_refused_naming_its_replacement() {
    let mut s = Scenario::default();
    let e = s.set("chunked-loss", "true").unwrap_err();
    assert!(e.message.contains("loss=chunked"), "{e}");
    let json = serde_json::json!({"cut-cross-entropy": true});
    let e = Scenario::from_json_object(json.as_object().unwrap()).unwrap_err();
    assert!(e.to_string().contains("loss=cce"), "{e}");
    assert_eq!(s, Scenario::default());
}

#[test]
fn validate_lists_every_problem() {
    let mut s = Scenario {
        mode: Mode::Qlora,
        weights: Some(Dtype::Bf16),
        hidden: Some(4000),
        heads: Some(7),
        ..Scenario::default()
    };
    s.lora_rank = 5000;
    let fields: Vec<String> = s.validate().into_iter().map(|e| e.field).collect();
    assert!(fields.contains(&"weights".to_string()), "{fields:?}");
    assert!(fields.contains(&"heads".to_string()), "{fields:?}");
    assert!(fields.contains(&"lora-rank".to_string()), "{fields:?}");
}

#[test]
fn json_uses_the_same_kebab_case_names() {
    let s = Scenario {
        kv_dtype: Some(Dtype::Fp8),
        ..Scenario::default()
    };
    let json = serde_json::to_string(&s).unwrap();
    assert!(json.contains("\"kv-dtype\":\"fp8\""), "{json}");
    let back: Scenario = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    assert!(serde_json::from_str::<Scenario>(r#"{"batchsize": 3}"#).is_err());
}

#[test]
fn the_table_keys_are_the_json_keys_in_the_same_order() {
    let json = serde_json::to_value(Scenario::default()).unwrap();
    let names: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted_keys = KEYS.to_vec();
    sorted_keys.sort_unstable();
    let mut sorted_names = names.clone();
    sorted_names.sort_unstable();
    assert_eq!(sorted_names, sorted_keys);
    assert_eq!(FIELDS.len(), KEYS.len());
    for (f, key) in FIELDS.iter().zip(KEYS) {
        assert_eq!(f.key, *key);
    }
}

#[test]
fn every_field_has_a_label_a_help_line_and_a_placeholder_or_choices() {
    for f in FIELDS {
        assert!(!f.label.is_empty() && !f.help.is_empty(), "{}", f.key);
        match f.control() {
            Control::Text => assert!(!f.placeholder().is_empty(), "{} has no placeholder", f.key),
            Control::Choices(list) | Control::Catalogue(list) => {
                assert!(list.len() >= 2, "{}", f.key);
                for choice in list {
                    assert!(
                        f.edit(&mut Scenario::default(), &choice.value).is_ok(),
                        "{} offers {:?}, which it refuses",
                        f.key,
                        choice.value
                    );
                }
            }
        }
    }
}

#[test]
fn enum_help_lists_each_value_with_its_meaning() {
    let help = field("method").unwrap().full_help();
    assert!(help.starts_with("which formula"), "{help}");
    assert!(help.contains("lesson (chapter 62's formula)"), "{help}");
    assert!(help.contains(" | detailed ("), "{help}");
    let size = field("vram").unwrap().full_help();
    assert!(size.contains("16376MiB"), "{size}");
}

#[test]
fn the_form_replaces_a_list_while_the_url_appends_to_it() {
    let mut s = Scenario::default();
    s.set("custom", "a:1GiB").unwrap();
    s.set("custom", "b:2GiB").unwrap();
    assert_eq!(s.custom.len(), 2);
    assert_eq!(field("custom").unwrap().get(&s), "a:1GiB; b:2GiB");
    s.edit("custom", "c:3GiB").unwrap();
    assert_eq!(s.custom.len(), 1);
    let before = s.clone();
    assert!(s.edit("custom", "c:3GiB; broken").is_err());
    assert_eq!(s, before);
    s.edit("custom", "").unwrap();
    assert!(s.custom.is_empty());
}

#[test]
fn modes_name_which_fields_apply_to_which_mode() {
    use crate::runtime::Runtime;
    let applies =
        |key: &str, mode: Mode, runtime: Runtime| field(key).unwrap().applies_to(mode, runtime);
    let tf = Runtime::Transformers;
    for (key, inference, full, lora, qlora) in [
        ("model", true, true, true, true),
        ("batch", true, true, true, true),
        ("weights", true, true, true, true),
        ("lora-rank", false, false, true, true),
        ("lora-targets", false, false, true, true),
        ("lora-dropout", false, false, true, true),
        ("optimizer", false, true, true, true),
        ("grads", false, true, true, true),
        ("adapter-dtype", false, false, true, true),
        ("master-weights", false, true, true, true),
        ("grad-accum", false, true, true, true),
        ("checkpointing", false, true, true, true),
        ("dropout", false, true, true, true),
        ("loss", false, true, true, true),
        ("sequence-parallel", false, true, true, true),
        ("compile", false, true, true, true),
        ("offload-activations", false, true, true, true),
        ("runtime", true, false, false, false),
        ("prompt", true, false, false, false),
        ("cache", true, false, false, false),
        ("kv-dtype", true, false, false, false),
        ("offload", true, true, true, true),
    ] {
        let got =
            [Mode::Inference, Mode::Full, Mode::Lora, Mode::Qlora].map(|m| applies(key, m, tf));
        assert_eq!(got, [inference, full, lora, qlora], "{key}");
    }
    // A runtime's own settings: only for that runtime, and only for inference.
    assert!(applies(
        "gpu-memory-utilization",
        Mode::Inference,
        Runtime::Vllm
    ));
    assert!(!applies(
        "gpu-memory-utilization",
        Mode::Inference,
        Runtime::Sglang
    ));
    assert!(!applies(
        "gpu-memory-utilization",
        Mode::Full,
        Runtime::Vllm
    ));
    assert!(applies("max-model-len", Mode::Inference, Runtime::Sglang));
    assert!(!applies(
        "max-model-len",
        Mode::Inference,
        Runtime::LlamaCpp
    ));
    assert!(applies("quant", Mode::Inference, Runtime::LlamaCpp));
    assert!(!applies("quant", Mode::Qlora, Runtime::LlamaCpp));
}

/// Values to try in a field: its choices, or text that some text field accepts.
fn other_values(f: &Field) -> Vec<String> {
    match f.control() {
        Control::Choices(list) | Control::Catalogue(list) => {
            list.into_iter().map(|c| c.value.to_string()).collect()
        }
        Control::Text => [
            "3", "64", "0.5", "300", "true", "false", "all", "q,k,v,o", "8GiB",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The rule's promise: a field hidden for a scenario's mode and runtime does not change its
/// estimate. Every other value of every hidden field, over each mode and runtime, both methods,
/// sharded or not, and a dense, an MoE and an MLA model, leaves the total and every component as they were, or
/// the scenario is refused naming that field (a serving runtime while training, gradients in
/// fp8), which the page then shows to be fixed.
#[test]
fn a_field_outside_its_modes_never_changes_the_estimate() {
    use crate::runtime::Runtime;
    use crate::{estimate, Estimate};
    let shown = |e: &Estimate| {
        let parts: Vec<(String, u64)> = e
            .components
            .iter()
            .map(|c| (c.id.to_string(), c.bytes.0))
            .collect();
        (e.total_bytes, parts)
    };
    let mut checked = 0;
    for model in ["llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"] {
        for (method, sharding) in [
            ("detailed", "none"),
            ("detailed", "zero3"),
            ("lesson", "none"),
        ] {
            for &mode in Mode::ALL {
                for &runtime in Runtime::ALL {
                    if runtime != Runtime::Transformers && mode != Mode::Inference {
                        continue;
                    }
                    let mut base = Scenario::default();
                    for (k, v) in [
                        ("model", model),
                        ("method", method),
                        ("mode", mode.as_str()),
                        ("runtime", runtime.as_str()),
                        ("gpu", "h100-80"),
                        ("sharding", sharding),
                        ("gpus", "4"),
                    ] {
                        base.set(k, v).unwrap();
                    }
                    let before = estimate(&base).map(|e| shown(&e));
                    for f in FIELDS.iter().filter(|f| !f.applies_to(mode, runtime)) {
                        for value in other_values(f) {
                            let mut changed = base.clone();
                            if f.edit(&mut changed, &value).is_err() || changed == base {
                                continue;
                            }
                            checked += 1;
                            let after = estimate(&changed).map(|e| shown(&e));
                            let refused_for_it = after
                                .as_ref()
                                .is_err_and(|errors| errors.iter().any(|e| e.field == f.key));
                            assert!(
                                after == before || refused_for_it,
                                "{}={value} changed {model} {method} {} {}: {:?} to {:?}",
                                f.key,
                                mode.as_str(),
                                runtime.as_str(),
                                before.as_ref().map(|b| b.0),
                                after.as_ref().map(|a| a.0),
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "{checked} changes checked");
}
