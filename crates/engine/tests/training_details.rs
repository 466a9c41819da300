//! Training details of the detailed method, checked against the tensor arithmetic on BERT-large's
//! shape: what dropout keeps for the backward pass (HF's defaults of 0.1 for both dropouts), and
//! the 16-bit weight copies of autocast mixed precision, and the formats of LoRA's adapters.

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::model::preset;
use vramfit_engine::{estimate, Scenario};

fn bert(pairs: &[(&str, &str)]) -> Scenario {
    common::scenario(
        &[
            ("model", "bert-large"),
            ("head", "classifier"),
            ("mode", "full"),
            ("weights", "fp32"),
            ("seq", "512"),
            ("batch", "4"),
        ],
        pairs,
    )
}

fn activations(s: &Scenario) -> f64 {
    estimate(s)
        .unwrap()
        .component(ComponentId::Activations)
        .expect("training has activations")
        .bytes
        .as_f64()
}

const LAYERS: f64 = 24.0;
const HIDDEN: f64 = 1024.0;
const HEADS: f64 = 16.0;
const SEQ: f64 = 512.0;
const TOKENS: f64 = 4.0 * SEQ;

/// Saved for all layers, plus the one layer whose backward is running.
const LAYER_COPIES: f64 = LAYERS + 1.0;

#[test]
fn hidden_dropout_keeps_a_one_byte_mask_per_element_of_two_residual_branches() {
    let extra = activations(&bert(&[("dropout", "true")])) - activations(&bert(&[]));
    let expected = LAYER_COPIES * TOKENS * 2.0 * HIDDEN;
    assert!((extra - expected).abs() < 1.0, "{extra} vs {expected}");
}

#[test]
fn eager_attention_dropout_keeps_a_mask_and_a_dropped_copy_of_every_score() {
    let eager = [("attention", "eager")];
    let extra = activations(&bert(&[
        ("attention", "eager"),
        ("attention-dropout", "true"),
    ])) - activations(&bert(&eager));
    // fp32 scores: a 1-byte mask plus a 4-byte dropped copy, on top of the softmax output.
    let expected = LAYER_COPIES * TOKENS * HEADS * SEQ * (1.0 + 4.0);
    assert!((extra - expected).abs() < 1.0, "{extra} vs {expected}");

    // With 16-bit compute, the dropped copy replaces the 16-bit copy the product with V kept.
    let half = [("attention", "eager"), ("act-dtype", "fp16")];
    let extra = activations(&bert(&[
        ("attention", "eager"),
        ("act-dtype", "fp16"),
        ("attention-dropout", "true"),
    ])) - activations(&bert(&half));
    let expected = LAYER_COPIES * TOKENS * HEADS * SEQ * 1.0;
    assert!((extra - expected).abs() < 1.0, "{extra} vs {expected}");
}

#[test]
fn fused_attention_and_inference_keep_nothing_for_dropout() {
    let flash = bert(&[("attention", "flash")]);
    let with_dropout = bert(&[("attention", "flash"), ("attention-dropout", "true")]);
    assert_eq!(activations(&with_dropout), activations(&flash));

    let inference = [("mode", "inference"), ("attention", "eager")];
    let mut on = bert(&inference);
    on.set("dropout", "true").unwrap();
    on.set("attention-dropout", "true").unwrap();
    assert_eq!(
        estimate(&on).unwrap().total_bytes,
        estimate(&bert(&inference)).unwrap().total_bytes
    );
}

fn weight_copies(s: &Scenario) -> Option<f64> {
    estimate(s)
        .unwrap()
        .component(ComponentId::WeightCopies)
        .map(|c| c.bytes.as_f64())
}

#[test]
fn autocast_keeps_a_16_bit_copy_of_every_fp32_linear_weight() {
    let linear = preset("bert-large").unwrap().arch.linear_params();
    let amp = bert(&[("act-dtype", "fp16")]);
    let copies = weight_copies(&amp).expect("fp32 weights with fp16 compute");
    assert!(
        (copies - linear * 2.0).abs() < 1.0,
        "{copies} vs {}",
        linear * 2.0
    );

    // Frozen weights under checkpointing are cast again layer by layer.
    let lora = bert(&[
        ("act-dtype", "fp16"),
        ("mode", "lora"),
        ("checkpointing", "full"),
    ]);
    // The fp32 adapters are trainable, so every layer's copies are cached.
    let adapters = estimate(&lora)
        .unwrap()
        .component(ComponentId::Adapters)
        .unwrap()
        .bytes
        .as_f64();
    let copies = weight_copies(&lora).unwrap();
    let expected = linear * 2.0 / LAYERS + adapters / 2.0;
    assert!((copies - expected).abs() < 1.0, "{copies} vs {expected}");

    // No cast when the weights already are in the compute dtype, or nothing is cast at all.
    assert_eq!(weight_copies(&bert(&[])), None);
    assert_eq!(
        weight_copies(&bert(&[("weights", "fp16"), ("act-dtype", "fp16")])),
        None
    );
}

/// peft keeps LoRA adapters in fp32 over a bf16 model (`autocast_adapter_dtype`, its default):
/// fp32 adapters and gradients, and autocast's cached bf16 copy of each. LitGPT's bf16-true keeps
/// adapters and gradients in bf16, with nothing to cast.
#[test]
fn peft_adapters_are_fp32_with_fp32_gradients_and_a_bf16_copy() {
    let llama = |pairs: &[(&str, &str)]| {
        common::scenario(
            &[
                ("model", "llama-2-7b"),
                ("mode", "lora"),
                ("lora-targets", "q,v"),
                ("lora-rank", "8"),
            ],
            pairs,
        )
    };
    let bytes = |s: &Scenario, id: &str| {
        estimate(s)
            .unwrap()
            .component(ComponentId::parse(id).unwrap())
            .map(|c| c.bytes.as_f64())
    };
    // q and v are 4096 × 4096 in each of 32 layers: A (8 × 4096) and B (4096 × 8) each.
    let trainable = 32.0 * 2.0 * 2.0 * 8.0 * 4096.0;
    for mode in ["lora", "qlora"] {
        let peft = llama(&[("mode", mode)]);
        assert_eq!(bytes(&peft, "adapters"), Some(trainable * 4.0), "{mode}");
        assert_eq!(bytes(&peft, "gradients"), Some(trainable * 4.0), "{mode}");
        assert_eq!(
            bytes(&peft, "weight_copies"),
            Some(trainable * 2.0),
            "{mode}"
        );
        assert_eq!(bytes(&peft, "master_weights"), None, "{mode}");

        let litgpt = llama(&[("mode", mode), ("adapter-dtype", "bf16")]);
        assert_eq!(bytes(&litgpt, "adapters"), Some(trainable * 2.0), "{mode}");
        assert_eq!(bytes(&litgpt, "gradients"), Some(trainable * 2.0), "{mode}");
        assert_eq!(bytes(&litgpt, "weight_copies"), None, "{mode}");
    }
    let (_, errors) = Scenario::from_pairs([("mode", "lora"), ("adapter-dtype", "nf4")]);
    assert!(errors.is_empty());
    let invalid = llama(&[("adapter-dtype", "nf4")]);
    assert!(estimate(&invalid).is_err());
}

fn component(s: &Scenario, id: ComponentId) -> f64 {
    estimate(s).unwrap().component(id).unwrap().bytes.as_f64()
}

fn notes(s: &Scenario) -> Vec<String> {
    estimate(s).unwrap().notes
}

/// A loss with no upcast (`logits-dtype=activations`) keeps its log-probs and their gradient in
/// bf16: 2 bytes less each per logit; Megatron-LM's in-place loss upcasts inside whatever it is
/// given, and says so.
#[test]
fn a_loss_without_the_upcast_keeps_16_bit_log_probs_and_gradient() {
    let llama = |pairs: &[(&str, &str)]| {
        common::scenario(
            &[("model", "llama-2-7b"), ("seq", "512"), ("batch", "2")],
            pairs,
        )
    };
    let logits = |pairs: &[(&str, &str)]| component(&llama(pairs), ComponentId::Logits);
    let bf16 = [("logits-dtype", "activations")];
    let saved = logits(&[]) - logits(&bf16);
    let expected = 2.0 * 512.0 * 32000.0 * 2.0 * (4.0 - 2.0);
    assert!((saved - expected).abs() < 1.0, "{saved} vs {expected}");

    let chunked = [("loss", "chunked")];
    let saved = logits(&chunked) - logits(&[("loss", "chunked"), bf16[0]]);
    let expected = 2.0 * 512.0 * 32000.0 * 2.0 * (4.0 - 2.0);
    assert!((saved - expected).abs() < 1.0, "{saved} vs {expected}");

    let in_place = [("loss", "in-place")];
    let with = llama(&[("loss", "in-place"), bf16[0]]);
    assert_eq!(logits(&in_place), component(&with, ComponentId::Logits));
    assert!(notes(&with)
        .iter()
        .any(|n| n.contains("calculate_logits_max")));
}

/// peft's `prepare_model_for_kbit_training` turns a bitsandbytes model's unquantized 16-bit
/// parameters fp32: Llama-2-7B's embedding, head and 65 norms gain 2 bytes each. GPTQ models and
/// unquantized ones are left as they were, with a note.
#[test]
fn peft_kbit_preparation_keeps_the_unquantized_parameters_in_fp32() {
    let qlora = |pairs: &[(&str, &str)]| {
        common::scenario(&[("model", "llama-2-7b"), ("mode", "qlora")], pairs)
    };
    let weights = |s: &Scenario| component(s, ComponentId::Weights);
    let peft = qlora(&[("kbit-prep", "peft")]);
    let gained = weights(&peft) - weights(&qlora(&[]));
    let unquantized = 2.0 * 32000.0 * 4096.0 + 65.0 * 4096.0;
    assert!(
        (gained - unquantized * 2.0).abs() < 1.0,
        "{gained} vs {}",
        unquantized * 2.0
    );
    assert!(notes(&peft).iter().any(|n| n.contains("not counted")));
    assert!(notes(&qlora(&[])).iter().all(|n| !n.contains("kbit-prep")));

    for other in [
        [("weights", "int4"), ("kbit-prep", "peft")],
        [("mode", "lora"), ("kbit-prep", "peft")],
    ] {
        let s = qlora(&other);
        let without = qlora(&other[..1]);
        assert_eq!(weights(&s), weights(&without), "{other:?}");
        assert!(
            notes(&s).iter().any(|n| n.contains("kbit-prep=peft")),
            "{other:?}"
        );
    }
}
