//! Quantized weights against the bytes a runtime reports for them: torchao's quantization README
//! (pytorch/ao@92dd5f557, `torchao/quantization/README.md`) lists each quantized model's size,
//! `get_model_size_in_bytes(model, ignore_embeddings=True) / 1e9` in `_models/llama/generate.py`:
//! every parameter and buffer but the token embedding, after `quantize_` replaced every
//! `nn.Linear`, the output layer included (`_is_linear`). And what an LLM.int8 linear, and
//! torchao's weight-only and dynamic kernels, allocate beside a 16-bit one while they run.

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, units::GB};

/// The weights and their scales less the token embedding, in GB: what torchao's column counts.
fn model_size_gb(model: &str, pairs: &[(&str, &str)]) -> f64 {
    let base = [
        ("model", model),
        ("mode", "inference"),
        ("act-dtype", "bf16"),
        ("batch", "1"),
        ("seq", "106"),
    ];
    let e = estimate(&common::scenario(&base, pairs)).expect("estimates");
    let (vocab, hidden) = match model {
        "llama-2-7b" => (32_000.0, 4096.0),
        _ => (128_256.0, 4096.0),
    };
    let embedding = vocab * hidden * 2.0;
    (e.bytes_of(ComponentId::Weights).as_f64() + e.bytes_of(ComponentId::QuantConstants).as_f64()
        - embedding)
        / GB as f64
}

fn within_one_percent(got: f64, published: f64) -> bool {
    (got - published).abs() / published < 0.01
}

const TORCHAO_INT4_64: [(&str, &str); 4] = [
    ("weights", "int4"),
    ("int4-layout", "tinygemm"),
    ("int4-group", "64"),
    ("quant-head", "true"),
];

#[test]
fn torchao_int4_keeps_a_bf16_scale_and_zero_per_group_of_64() {
    // int4wo-64: Llama-2-7B 3.74 GB, Llama-3-8B and Llama-3.1-8B 4.22 GB.
    for (model, published) in [("llama-2-7b", 3.74), ("llama-3.1-8b", 4.22)] {
        let got = model_size_gb(model, &TORCHAO_INT4_64);
        assert!(within_one_percent(got, published), "{model}: {got}");
        // GPTQ's fp16 scale and 4-bit zero per 128 would miss it by more than 5%.
        let gptq = model_size_gb(model, &[TORCHAO_INT4_64[0], TORCHAO_INT4_64[3]]);
        assert!(
            (gptq - published).abs() / published > 0.05,
            "{model}: {gptq}"
        );
    }
}

#[test]
fn torchao_quantizes_the_lm_head_with_the_blocks() {
    // int8wo: Llama-2-7B 6.62 GB, Llama-3.1-8B 7.52 GB; float8wo: Llama-3.1-8B 7.51 GB.
    for (model, weights, published) in [
        ("llama-2-7b", "int8", 6.62),
        ("llama-3.1-8b", "int8", 7.52),
        ("llama-3.1-8b", "fp8", 7.51),
    ] {
        let head = model_size_gb(model, &[("weights", weights), ("quant-head", "true")]);
        assert!(
            within_one_percent(head, published),
            "{model} {weights}: {head}"
        );
    }
    // A bf16 head would add 0.5 GB to Llama-3.1-8B's 7.52.
    let kept = model_size_gb("llama-3.1-8b", &[("weights", "int8")]);
    assert!(kept - 7.52 > 0.4, "{kept}");
}

#[test]
fn a_tied_head_quantized_is_a_copy_beside_the_embedding() {
    let pairs = |head: &'static str| {
        common::scenario(
            &[("model", "llama-3.2-1b"), ("mode", "inference")],
            &[("weights", "int8"), ("quant-head", head)],
        )
    };
    let kept = estimate(&pairs("false")).expect("estimates");
    let quantized = estimate(&pairs("true")).expect("estimates");
    let head = 128_256.0 * 2048.0;
    let added = quantized.bytes_of(ComponentId::Weights).as_f64()
        - kept.bytes_of(ComponentId::Weights).as_f64();
    assert!((added - head).abs() < 1e-3 * head, "{added}");
}

#[test]
fn an_int8_linear_adds_its_quantized_input_and_int32_product() {
    // Falcon-7B (M061): the widest product is the MLP's up-projection, 4544 → 18176.
    let activations = |weights: &'static str| {
        let s = common::scenario(
            &[
                ("model", "falcon-7b"),
                ("mode", "inference"),
                ("seq", "266"),
            ],
            &[("weights", weights), ("act-dtype", "fp16")],
        );
        estimate(&s)
            .expect("estimates")
            .bytes_of(ComponentId::Activations)
            .as_f64()
    };
    let added = activations("int8") - activations("fp16");
    let per_token = 4544.0 + 4.0 + 18_176.0 * 4.0;
    assert!((added - 266.0 * per_token).abs() < 1.0, "{added}");
}

#[test]
fn torchao_weight_only_kernels_multiply_a_dequantized_copy_of_the_largest_weight() {
    // Llama-3.1-8B with its head quantized too: the head (128256 × 4096) is the largest linear.
    let run = |weights: &'static str, kernel: &'static str| {
        let s = common::scenario(
            &[
                ("model", "llama-3.1-8b"),
                ("mode", "inference"),
                ("act-dtype", "bf16"),
                ("quant-head", "true"),
                ("seq", "208"),
            ],
            &[("weights", weights), ("quant-kernel", kernel)],
        );
        estimate(&s).expect("estimates")
    };
    let activations = |weights, kernel| {
        run(weights, kernel)
            .bytes_of(ComponentId::Activations)
            .as_f64()
    };
    let head_bf16 = 128_256.0 * 4096.0 * 2.0;
    let fp8_plain = activations("fp8", "auto");
    // int8: the weight cast to bf16; float8: cast to bf16, then multiplied by its scale.
    let int8_copy = activations("int8", "torchao-wo") - fp8_plain;
    assert!((int8_copy - head_bf16).abs() < 1.0, "{int8_copy}");
    let fp8_copies = activations("fp8", "torchao-wo") - fp8_plain;
    assert!((fp8_copies - 2.0 * head_bf16).abs() < 1.0, "{fp8_copies}");
    // The dynamic kernels quantize the input instead: kilobytes per token, not a weight.
    assert!(activations("fp8", "torchao-dq") - fp8_plain < 208.0 * 20_000.0);
    // A kernel for a format it does not run is named, not applied.
    let nf4 = run("nf4", "torchao-wo");
    assert!(
        nf4.notes
            .iter()
            .any(|n| n.starts_with("quant-kernel not used")),
        "{:?}",
        nf4.notes
    );
}

/// vLLM runs block-fp8 weights through Marlin where the card has no fp8 tensor cores
/// (`prepare_fp8_layer_for_marlin`, vllm/model_executor/layers/quantization/utils/
/// marlin_utils_fp8.py of v0.24.0): each 128×128 block's fp32 scale becomes 128 scales in the
/// model's dtype, one per column, so the constants grow 64-fold. Cards with fp8 (and AMD's, on
/// ROCm) keep the blocks' scales.
#[test]
fn vllm_keeps_a_16_bit_scale_per_128_inputs_where_fp8_runs_through_marlin() {
    let constants = |gpu: &str| {
        let pairs = [
            ("runtime", "vllm"),
            ("model", "llama-3.1-8b"),
            ("mode", "inference"),
            ("weights", "fp8"),
            ("act-dtype", "bf16"),
            ("gpu", gpu),
        ];
        let e = estimate(&common::scenario(&pairs, &[])).expect("estimates");
        e.bytes_of(ComponentId::QuantConstants).as_f64()
    };
    let ampere = constants("rtx-3090");
    let ada = constants("rtx-4090");
    let hopper = constants("h100-80");
    let cdna2 = constants("mi210");
    assert!((ampere / ada - 64.0).abs() < 1e-9, "{ampere} vs {ada}");
    assert_eq!(ada, hopper);
    assert_eq!(cdna2, hopper);
    // Llama-3.1-8B's blocks hold 6.98B linear weights: 2 B per 128 of them.
    assert!((ampere / 1e6 - 6.98e3 / 64.0).abs() < 1.0, "{ampere}");
}
