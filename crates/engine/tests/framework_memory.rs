//! What torchtune- and axolotl-style training does to the memory stack, checked against the
//! tensor arithmetic on Llama-3.2-3B's shape (28 layers, hidden 3072, MLP 8192, vocabulary
//! 128256, tied embeddings): torch.compile's recomputed pointwise ops and compiled chunked loss,
//! activation offloading, optimizer-in-backward and Cut Cross-Entropy.

mod common;

use vramfit_engine::estimate;
use vramfit_engine::estimate::ComponentId;

const LAYERS: f64 = 28.0;
const HIDDEN: f64 = 3072.0;
const FFN: f64 = 8192.0;
const VOCAB: f64 = 128256.0;
const BATCH: f64 = 2.0;
const SEQ: f64 = 4096.0;
const TOKENS: f64 = BATCH * SEQ;
/// bf16 activations, gradients and logits.
const E: f64 = 2.0;
const FP32: f64 = 4.0;

const LLAMA: &[(&str, &str)] = &[
    ("model", "llama-3.2-3b"),
    ("mode", "full"),
    ("weights", "bf16"),
    ("master-weights", "false"),
    ("optimizer", "adamw-bf16"),
    ("batch", "2"),
    ("seq", "4096"),
];

fn component(pairs: &[(&str, &str)], id: &str) -> f64 {
    estimate(&common::scenario(LLAMA, pairs))
        .unwrap()
        .bytes_of(ComponentId::parse(id).unwrap())
        .as_f64()
}

fn assert_close(got: f64, expected: f64) {
    assert!((got - expected).abs() < 1.0, "{got} vs {expected}");
}

/// Compiled, each RMSNorm keeps its bf16 input and an fp32 reciprocal RMS per token instead of
/// its fp32 upcast (2 × (H·(4 − 2) − 4) bytes less per token per layer), and the gated MLP
/// recomputes act(gate) (FFN·2 bytes less), in every saved layer and in the one whose backward
/// is running.
#[test]
fn compiled_layers_recompute_the_norms_upcast_and_the_mlps_activation() {
    let eager = component(&[], "activations");
    let compiled = component(&[("compile", "true")], "activations");
    let per_token = 2.0 * (HIDDEN * (FP32 - E) - FP32) + FFN * E;
    assert_close(eager - compiled, (LAYERS + 1.0) * TOKENS * per_token);

    // Under full checkpointing only the layer inputs are saved, which compiling leaves as they
    // are: just the recomputed layer is smaller.
    let full = [("checkpointing", "full")];
    let eager = component(&full, "activations");
    let compiled = component(&[full[0], ("compile", "true")], "activations");
    assert_close(eager - compiled, TOKENS * per_token);
}

/// A LayerNorm is one op that saves its input compiled or not, and a plain MLP's activation
/// output is the second projection's input, which the backward matmul reads: nothing to drop.
#[test]
fn compiling_a_layernorm_model_with_a_plain_mlp_saves_nothing() {
    let gpt2 = |compile: &str| {
        let s = common::scenario(
            &[("model", "gpt2"), ("mode", "full")],
            &[("compile", compile)],
        );
        estimate(&s).unwrap().bytes_of(ComponentId::Activations)
    };
    assert_eq!(gpt2("true"), gpt2("false"));
}

/// torchtune compiles the chunked loss's upcast and cross-entropy together: the 16-bit logits
/// stay until their chunk's backward, and the only other tensor is one chunk's 16-bit gradient.
/// A whole-sequence loss is not compiled (the recipes drop `compile_loss`'s result), so its fp32
/// chain stays.
#[test]
fn a_compiled_chunked_loss_keeps_the_16_bit_logits_and_one_chunks_gradient() {
    let chunk = BATCH * 1024.0 * VOCAB;
    let compiled = component(&[("loss", "chunked"), ("compile", "true")], "logits");
    assert_close(compiled, (TOKENS * VOCAB + chunk) * E);
    let eager = component(&[("loss", "chunked")], "logits");
    assert_close(eager - compiled, chunk * (2.0 * FP32 - E));

    let whole = component(&[], "logits");
    assert_eq!(whole, component(&[("compile", "true")], "logits"));
}

/// Offloading moves what the checkpointing policy saves to CPU memory but keeps one layer's
/// share on the GPU (the copies in flight, the layer brought back), and the layer whose
/// backward is running is never offloaded: the peak falls, but not below that working set.
#[test]
fn offloading_lowers_the_gpu_peak_but_not_below_one_layers_working_set() {
    let offload = ("offload-activations", "true");
    for policy in ["none", "selective", "full"] {
        let kept = component(&[("checkpointing", policy)], "activations");
        let offloaded = component(&[("checkpointing", policy), offload], "activations");
        assert!(offloaded < kept, "{policy}: {offloaded} vs {kept}");
        // The working set: with nothing recomputed it is one saved layer's worth.
        let working = component(&[("checkpointing", "none")], "activations") / (LAYERS + 1.0);
        assert!(offloaded > working, "{policy}: {offloaded} vs {working}");
    }
    // Full checkpointing saves each layer's input; all but one layer's go to CPU.
    let full = component(&[("checkpointing", "full")], "activations");
    let offloaded = component(&[("checkpointing", "full"), offload], "activations");
    assert_close(full - offloaded, (LAYERS - 1.0) * TOKENS * HIDDEN * E);
    // Nothing else moves: the weights, gradients, optimizer and logits stay on the GPU.
    for id in ["weights", "gradients", "optimizer", "logits"] {
        assert_eq!(
            component(&[("checkpointing", "full")], id),
            component(&[("checkpointing", "full"), offload], id),
            "{id}"
        );
    }
}

/// With the optimizer stepped in backward (`optimizer-step=in-backward`) each gradient is freed after its parameter's step, so
/// the gradient component is the largest one alone: the tied embedding table's, V × H × 2 bytes,
/// not 3.2B × 2. The optimizer state is untouched.
#[test]
fn optimizer_in_backward_keeps_only_the_largest_gradient() {
    let in_backward = [("optimizer-step", "in-backward")];
    assert_close(component(&in_backward, "gradients"), VOCAB * HIDDEN * E);
    assert!(component(&[], "gradients") > 8.0 * component(&in_backward, "gradients"));
    assert_eq!(
        component(&in_backward, "optimizer"),
        component(&[], "optimizer")
    );

    // LoRA: the largest adapter matrix, the down projection's r × FFN factor, in bf16 as
    // torchtune builds its adapters.
    let lora = [
        ("mode", "lora"),
        ("adapter-dtype", "bf16"),
        ("lora-rank", "64"),
        ("lora-targets", "q,v,gate,up,down"),
        ("optimizer-step", "in-backward"),
    ];
    assert_close(component(&lora, "gradients"), 64.0 * FFN * E);
}

/// Cut Cross-Entropy computes the loss from the hidden states block by block: no logits, no
/// fp32 chain, one fp32 log-sum-exp per token.
#[test]
fn cut_cross_entropy_keeps_no_logits() {
    let cce = component(&[("loss", "cce")], "logits");
    assert_close(cce, TOKENS * FP32);
    assert!(cce * 1000.0 < component(&[("loss", "chunked")], "logits"));
}

/// Megatron-LM's vocab-parallel cross-entropy upcasts the logits once and turns that fp32
/// softmax into its own gradient in place: one 16-bit and one fp32 copy of the logits, where
/// `F.cross_entropy` keeps the fp32 log-probabilities and a separate fp32 gradient.
#[test]
fn an_in_place_loss_keeps_one_fp32_copy_of_the_logits() {
    let logits = TOKENS * VOCAB;
    assert_close(
        component(&[("loss", "in-place")], "logits"),
        logits * (E + FP32),
    );
    assert_close(
        component(&[("loss", "whole")], "logits"),
        logits * (E + 2.0 * FP32),
    );
}

#[test]
fn a_compiled_run_says_its_whole_loss_is_counted_eager() {
    let notes = |pairs: &[(&str, &str)]| estimate(&common::scenario(LLAMA, pairs)).unwrap().notes;
    let says = |notes: Vec<String>| notes.iter().any(|n| n.contains("counted eager"));
    assert!(says(notes(&[("compile", "true")])));
    assert!(!says(notes(&[("compile", "true"), ("loss", "chunked")])));
    assert!(!says(notes(&[])));
}

/// axolotl's `quantize_moe_experts`: bitsandbytes' parametrization dequantizes a layer's fused
/// `gate_up_proj` [E, 2·I, H] and `down_proj` [E, H, I] whole, and the experts' matmuls keep it
/// until that layer's backward. Qwen3-30B-A3B: 128 experts of I = 768 over H = 2048, bf16.
#[test]
fn fused_nf4_experts_dequantize_one_whole_layer() {
    const QWEN3_MOE: &[(&str, &str)] = &[
        ("model", "qwen3-30b-a3b"),
        ("mode", "qlora"),
        ("weights", "nf4"),
        ("checkpointing", "full"),
        ("batch", "1"),
        ("seq", "2048"),
        ("quantize-moe-experts", "true"),
    ];
    let dequantized = |pairs: &[(&str, &str)]| {
        estimate(&common::scenario(QWEN3_MOE, pairs))
            .unwrap()
            .bytes_of(ComponentId::DequantizedExperts)
            .as_f64()
    };
    let one_layer = 128.0 * 3.0 * 768.0 * 2048.0 * E;
    assert_close(dequantized(&[]), one_layer);
    // Expert parallelism gives each GPU a quarter of every layer's experts to dequantize.
    assert_close(
        dequantized(&[("gpus", "4"), ("sharding", "expert")]),
        one_layer / 4.0,
    );
    // Off, or without NF4 weights to dequantize, nothing is added; the latter says why.
    assert_eq!(dequantized(&[("quantize-moe-experts", "false")]), 0.0);
    let int8 = estimate(&common::scenario(QWEN3_MOE, &[("weights", "int8")])).unwrap();
    assert_eq!(int8.bytes_of(ComponentId::DequantizedExperts).as_f64(), 0.0);
    assert!(
        int8.notes
            .iter()
            .any(|n| n.starts_with("quantize-moe-experts not used")),
        "{:?}",
        int8.notes
    );
}

/// peft wraps `nn.Linear` modules by name; fused expert tensors are parameters, so under
/// `quantize-moe-experts` "gate,up,down" reach the dense layers and shared experts only.
#[test]
fn fused_experts_take_no_linear_lora_targets() {
    let run = |fused: &str| {
        estimate(&common::scenario(
            &[
                ("model", "qwen3-30b-a3b"),
                ("mode", "qlora"),
                ("weights", "nf4"),
                ("lora-rank", "8"),
                ("lora-targets", "gate,up,down"),
            ],
            &[("quantize-moe-experts", fused)],
        ))
        .unwrap()
    };
    let trainable = |fused: &str| run(fused).trainable_params;
    // Qwen3-30B-A3B has no dense MLP layer and no shared expert: 48 layers × 128 experts × 3
    // projections of r·(H + I) = 8 × (2048 + 768) adapter weights each as nn.Linear, none fused.
    assert_eq!(
        trainable("false"),
        48.0 * 128.0 * 3.0 * 8.0 * (2048.0 + 768.0)
    );
    assert_eq!(trainable("true"), 0.0);
    let notes = run("true").notes;
    assert!(
        notes.iter().any(|n| n.contains("nothing is trained")),
        "{notes:?}"
    );
}
