//! What LoRA and QLoRA keep for the backward pass, checked against the tensor arithmetic on
//! Llama-2-7B's shape (hidden 4096, MLP 11008, 32 layers): a frozen bf16 projection keeps no input,
//! bitsandbytes' 4-bit matmul kept its input before 0.43.2 (today's and torchao's keep none), and
//! `lora-dropout` keeps a mask and a dropped copy of each adapter's input. The adapters are bf16
//! (LitGPT's bf16-true) unless a test says fp32 (peft's).

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, Scenario};

const LAYERS: f64 = 32.0;
const HIDDEN: f64 = 4096.0;
const FFN: f64 = 11008.0;
const TOKENS: f64 = 2.0 * 1024.0;
/// Saved for all layers, plus the one layer whose backward is running.
const LAYER_COPIES: f64 = LAYERS + 1.0;
/// bf16 activations.
const E: f64 = 2.0;

fn llama(pairs: &[(&str, &str)]) -> Scenario {
    common::scenario(
        &[
            ("model", "llama-2-7b"),
            ("batch", "2"),
            ("seq", "1024"),
            ("act-dtype", "bf16"),
            ("adapter-dtype", "bf16"),
        ],
        pairs,
    )
}

fn activations(pairs: &[(&str, &str)]) -> f64 {
    estimate(&llama(pairs))
        .unwrap()
        .component(ComponentId::Activations)
        .expect("training has activations")
        .bytes
        .as_f64()
}

fn assert_close(got: f64, expected: f64) {
    assert!((got - expected).abs() < 1.0, "{got} vs {expected}");
}

/// Full fine-tuning keeps both norms' outputs (read by q,k,v and by gate,up) and the MLP's
/// hidden state (read by down) for the weights' gradients; frozen bf16 LoRA adapters on q,v keep
/// only their own input, the first norm's output.
#[test]
fn frozen_bf16_projections_keep_no_inputs_of_their_own() {
    let full = activations(&[("mode", "full")]);
    let lora = activations(&[("mode", "lora"), ("lora-targets", "q,v")]);
    let released = LAYER_COPIES * TOKENS * E * (HIDDEN + FFN);
    assert_close(full - lora, released);
    // Adapters on every projection keep every input again.
    let all = activations(&[("mode", "lora"), ("lora-targets", "all")]);
    assert_close(all, full);
}

#[test]
fn old_bitsandbytes_4bit_projections_keep_their_inputs_as_full_fine_tuning_does() {
    let qlora = activations(&[
        ("mode", "qlora"),
        ("lora-targets", "q,v"),
        ("nf4-kernel", "bnb-legacy"),
    ]);
    let lora = activations(&[("mode", "lora"), ("lora-targets", "q,v")]);
    assert_close(qlora - lora, LAYER_COPIES * TOKENS * E * (HIDDEN + FFN));
}

/// bitsandbytes 0.43.2+ and torchao's NF4 keep only the packed weight, so a QLoRA step keeps what
/// a LoRA step on frozen bf16 weights keeps.
#[test]
fn current_nf4_kernels_keep_no_inputs_of_their_own() {
    let lora = activations(&[("mode", "lora"), ("lora-targets", "q,v")]);
    for kernel in ["bnb", "torchao"] {
        let qlora = activations(&[
            ("mode", "qlora"),
            ("lora-targets", "q,v"),
            ("nf4-kernel", kernel),
        ]);
        assert_close(qlora, lora);
    }
}

#[test]
fn lora_dropout_keeps_a_mask_and_a_dropped_copy_per_adapter() {
    let on = |mode| {
        activations(&[
            ("mode", mode),
            ("lora-targets", "q,v"),
            ("nf4-kernel", "bnb-legacy"),
            ("lora-dropout", "true"),
        ])
    };
    let off = |mode| {
        activations(&[
            ("mode", mode),
            ("lora-targets", "q,v"),
            ("nf4-kernel", "bnb-legacy"),
        ])
    };
    // q and v each keep a 1-byte mask and a bf16 copy of the hidden state.
    let per_adapter = LAYER_COPIES * TOKENS * HIDDEN * (1.0 + E);
    assert_close(on("qlora") - off("qlora"), 2.0 * per_adapter);
    // Frozen bf16: the dropped copies replace the shared norm output the adapters kept.
    assert_close(
        on("lora") - off("lora"),
        2.0 * per_adapter - LAYER_COPIES * TOKENS * E * HIDDEN,
    );
}

/// peft's fp32 adapters: its 16-bit `Linear` casts the input up to the adapters' dtype and
/// autocast casts it back, so q and v each keep a bf16 copy of their own instead of sharing the
/// norm's output; its bitsandbytes layers skip that cast under autocast, so QLoRA keeps the same.
#[test]
fn peft_fp32_adapters_on_bf16_weights_keep_a_recast_input_each() {
    let adapters = |mode, dtype| {
        activations(&[
            ("mode", mode),
            ("lora-targets", "q,v"),
            ("adapter-dtype", dtype),
        ])
    };
    assert_close(
        adapters("lora", "fp32") - adapters("lora", "bf16"),
        LAYER_COPIES * TOKENS * E * HIDDEN,
    );
    assert_close(adapters("qlora", "fp32"), adapters("qlora", "bf16"));
}
