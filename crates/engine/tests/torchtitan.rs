//! What torchtitan-style training keeps, checked against the tensor arithmetic on Llama 3.1 8B's
//! shape (32 layers, hidden 4096, 32 heads, 8 KV heads of 128, ffn 14336, vocabulary 128256,
//! untied): op-level selective checkpointing, checkpointing every k-th layer, and FSDP's mixed
//! precision (16-bit gathered copies, the unsharded root, the reduce-scatter buffer), hybrid
//! sharding, 2-D (FSDP × tensor) parallelism with each `sequence-parallel` style, context
//! parallelism and torchao's float8 linears.

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, Scenario};

const LAYERS: f64 = 32.0;
const HIDDEN: f64 = 4096.0;
const KV_WIDTH: f64 = 8.0 * 128.0;
const FFN: f64 = 14336.0;
const HEADS: f64 = 32.0;
const VOCAB: f64 = 128256.0;
const BF16: f64 = 2.0;
const FP32: f64 = 4.0;
const TOKENS: f64 = 2.0 * 8192.0;
/// q, k, v, o, gate, up and down of one layer.
const LAYER_PARAMS: f64 = 2.0 * HIDDEN * HIDDEN + 2.0 * HIDDEN * KV_WIDTH + 3.0 * HIDDEN * FFN;

/// torchtitan's Llama 3.1 8B run (benchmarks/llama3_h100_202412_torchtitan.md): fp32 shards,
/// bf16 compute, batch 2 × 8192 tokens.
const TITAN: &[(&str, &str)] = &[
    ("model", "llama-3.1-8b"),
    ("mode", "full"),
    ("weights", "fp32"),
    ("act-dtype", "bf16"),
    ("master-weights", "false"),
    ("batch", "2"),
    ("seq", "8192"),
    ("sharding", "fsdp"),
    ("gpus", "8"),
];

fn titan(changes: &[(&str, &str)]) -> Scenario {
    common::scenario(TITAN, changes)
}

fn bytes(s: &Scenario, id: &str) -> f64 {
    estimate(s)
        .unwrap()
        .bytes_of(ComponentId::parse(id).unwrap())
        .as_f64()
}

fn activations(checkpointing: &str, every: &str) -> f64 {
    bytes(
        &titan(&[
            ("checkpointing", checkpointing),
            ("checkpoint-every", every),
        ]),
        "activations",
    )
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
}

#[test]
fn op_level_checkpointing_keeps_less_than_selective_and_more_than_full() {
    let none = activations("none", "1");
    let selective = activations("selective", "1");
    let op = activations("op", "1");
    let full = activations("full", "1");
    assert!(none >= selective && selective > op && op > full);
}

#[test]
fn op_level_checkpointing_keeps_the_input_attention_and_every_other_matmul_output() {
    // Per token and layer: the input, q (1st matmul), v (3rd), gate (5th) and down (7th) in bf16,
    // the flash kernel's bf16 output and its fp32 log-sum-exp per head; full keeps the input.
    let op = BF16 * (HIDDEN + HIDDEN + KV_WIDTH + FFN + HIDDEN + HIDDEN) + FP32 * HEADS;
    let extra = activations("op", "1") - activations("full", "1");
    close(extra, LAYERS * TOKENS * (op - BF16 * HIDDEN));
}

#[test]
fn checkpointing_every_kth_layer_wraps_the_floor_of_l_over_k_layers() {
    let none = activations("none", "1");
    let full = activations("full", "1");
    // The working layer is the same in all three, so each layer moves the total by a 32nd.
    let per_layer = (none - full) / LAYERS;
    close(activations("full", "2"), full + 16.0 * per_layer);
    close(activations("full", "3"), full + (LAYERS - 10.0) * per_layer);
    close(activations("full", "33"), none);
    close(activations("none", "4"), none);
}

#[test]
fn fsdp_mixed_precision_gathers_16_bit_copies_and_keeps_the_root_unsharded() {
    let shards = 8.03e9 * FP32 / 8.0;
    let gathered = 2.0 * LAYER_PARAMS * BF16;
    let root = 2.0 * VOCAB * HIDDEN * BF16;
    let weights = bytes(&titan(&[]), "weights");
    assert!(
        (weights - (shards + gathered + root)).abs() < 0.01 * shards,
        "{weights}"
    );
    // In fp32 compute the same layers and root are gathered at 4 bytes.
    let fp32 = bytes(&titan(&[("act-dtype", "fp32")]), "weights");
    close(fp32 - weights, gathered + root);
    // ZeRO-3 gathers the parameters' own format and frees every layer after its forward.
    let zero3 = bytes(&titan(&[("sharding", "zero3")]), "weights");
    close(zero3 - weights, gathered - root);
}

#[test]
fn fsdp_reduce_scatters_one_layer_of_gradients_in_the_gradient_format() {
    let sharded = bytes(&titan(&[("sharding", "zero2")]), "gradients");
    let fsdp = bytes(&titan(&[]), "gradients");
    // The layer's bf16 unsharded gradients and its fp32 reduce-scatter buffer.
    close(fsdp - sharded, LAYER_PARAMS * (BF16 + FP32));
}

#[test]
fn context_parallelism_keeps_seq_over_cp_tokens_of_activations_and_logits_per_gpu() {
    let one = titan(&[("checkpointing", "full")]);
    let split = titan(&[("checkpointing", "full"), ("seq", "16384"), ("cp", "2")]);
    for id in ["activations", "logits", "weights", "gradients", "optimizer"] {
        close(bytes(&split, id), bytes(&one, id));
    }
    let whole = titan(&[("checkpointing", "full"), ("seq", "16384")]);
    close(bytes(&whole, "logits"), 2.0 * bytes(&split, "logits"));
    assert!(bytes(&whole, "activations") > 1.9 * bytes(&split, "activations"));
}

#[test]
fn context_parallelism_needs_cp_to_divide_the_gpus() {
    let errors = titan(&[("cp", "3")]).validate();
    assert!(errors.iter().any(|e| e.field == "cp"), "{errors:?}");
}

#[test]
fn hybrid_sharding_holds_what_fsdp_over_one_replica_group_holds() {
    let hsdp = titan(&[("gpus", "32"), ("replicas", "4"), ("checkpointing", "full")]);
    let fsdp = titan(&[("checkpointing", "full")]);
    close(
        estimate(&hsdp).unwrap().total_bytes.as_f64(),
        estimate(&fsdp).unwrap().total_bytes.as_f64(),
    );
}

#[test]
fn two_d_parallelism_shards_state_over_every_gpu_and_gathers_the_tensor_slice_of_a_layer() {
    // FSDP 4 × TP 2 on 8 GPUs: every parameter's fp32 shard is 1/8, each GPU gathers its half
    // of a layer (and of the root) in bf16.
    let two_d = titan(&[("tp", "2")]);
    let shards = 8.03e9 * FP32 / 8.0;
    let gathered = 2.0 * LAYER_PARAMS * BF16 / 2.0;
    let root = 2.0 * VOCAB * HIDDEN * BF16 / 2.0;
    let weights = bytes(&two_d, "weights");
    assert!(
        (weights - (shards + gathered + root)).abs() < 0.01 * shards,
        "{weights}"
    );
    close(bytes(&two_d, "optimizer"), bytes(&titan(&[]), "optimizer"));
    // Loss parallelism: each GPU keeps half the vocabulary's logits.
    close(2.0 * bytes(&two_d, "logits"), bytes(&titan(&[]), "logits"));
}

#[test]
fn tensor_parallelism_keeps_each_layers_two_gathered_inputs_whole() {
    // Without checkpointing every layer keeps its attention and MLP inputs at the whole
    // sequence (bf16, or float8 when float8 linears gather them), the rest of its activations
    // halved; so do the layer in backward, and the LM head's input.
    let activations = |changes: &[(&str, &str)]| bytes(&titan(changes), "activations");
    let whole = activations(&[]);
    for (float8, element) in [("off", BF16), ("tensorwise", 1.0)] {
        let halved = activations(&[("float8", float8)]) / 2.0;
        let split = activations(&[("float8", float8), ("tp", "2")]);
        let gathered_tensors = 2.0 * (LAYERS + 1.0) + 1.0;
        close(
            split - halved,
            gathered_tensors * TOKENS * HIDDEN * element / 2.0,
        );
        assert!(split < whole);
    }
}

#[test]
fn megatron_sequence_parallelism_splits_every_activation_and_none_keeps_norms_whole() {
    // Megatron-LM's sequence parallelism saves each linear's sharded input and gathers it again
    // in backward: activations are exactly halved over two GPUs. Without sequence parallelism
    // both norms' saved tensors (RMSNorm: the fp32 upcast input and the bf16 output) stay whole
    // in every layer, the layer in backward and, as the head's input, the final norm's output;
    // a fully checkpointed layer keeps its input whole.
    let activations = |changes: &[(&str, &str)]| bytes(&titan(changes), "activations");
    for checkpointing in ["none", "full"] {
        let halved = activations(&[("checkpointing", checkpointing)]) / 2.0;
        let megatron = activations(&[
            ("checkpointing", checkpointing),
            ("tp", "2"),
            ("sequence-parallel", "megatron"),
        ]);
        close(megatron, halved);
        let off = activations(&[
            ("checkpointing", checkpointing),
            ("tp", "2"),
            ("sequence-parallel", "off"),
        ]);
        let norms = 2.0 * HIDDEN * (FP32 + BF16);
        let whole_per_token = if checkpointing == "none" {
            (LAYERS + 1.0) * norms + HIDDEN * BF16
        } else {
            LAYERS * HIDDEN * BF16 + norms + HIDDEN * BF16
        };
        close(off - halved, whole_per_token * TOKENS / 2.0);
    }
    // Without tensor parallelism the style changes nothing, and the estimate says so.
    let alone = titan(&[("sequence-parallel", "off")]);
    assert_eq!(
        bytes(&alone, "activations"),
        bytes(&titan(&[]), "activations")
    );
    let notes = estimate(&alone).unwrap().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("sequence-parallel=off not used")),
        "{notes:?}"
    );
}

#[test]
fn parallel_degrees_must_tile_the_gpus_and_fit_the_sharding() {
    let field_errors = |changes: &[(&str, &str)]| -> Vec<String> {
        titan(changes)
            .validate()
            .into_iter()
            .map(|e| e.field.to_string())
            .collect()
    };
    assert_eq!(field_errors(&[("tp", "3")]), ["tp"]);
    assert_eq!(
        field_errors(&[("tp", "2"), ("cp", "2"), ("replicas", "4")]),
        ["replicas"]
    );
    assert_eq!(field_errors(&[("tp", "2"), ("sharding", "tensor")]), ["tp"]);
    assert_eq!(field_errors(&[("tp", "2"), ("sharding", "none")]), ["tp"]);
    assert_eq!(
        field_errors(&[("replicas", "2"), ("sharding", "ddp")]),
        ["replicas"]
    );
    assert!(field_errors(&[("tp", "2"), ("cp", "2"), ("replicas", "2")]).is_empty());
}

#[test]
fn float8_linears_under_op_level_checkpointing_keep_no_matmul_output() {
    // `_scaled_mm` is not in the op list: only the input and the flash kernel's output and
    // log-sum-exp stay, well under what bf16 linears keep.
    let bf16 = activations("op", "1");
    let float8 = |checkpointing: &str| {
        bytes(
            &titan(&[("checkpointing", checkpointing), ("float8", "tensorwise")]),
            "activations",
        )
    };
    // Beyond full checkpointing's input: the attention output and fp32 log-sum-exp per head.
    let kernel = BF16 * HIDDEN + FP32 * HEADS;
    close(
        float8("op") - activations("full", "1"),
        LAYERS * TOKENS * kernel,
    );
    assert!(float8("op") < 0.5 * bf16);
    // Under full checkpointing nothing a float8 linear saves outlives its layer.
    close(float8("full"), activations("full", "1"));
}

#[test]
fn float8_all_gather_gathers_the_block_linears_at_one_byte_a_parameter() {
    let bf16_gather = bytes(&titan(&[("float8", "tensorwise")]), "weights");
    let fp8_gather = bytes(&titan(&[("float8", "fp8-gather")]), "weights");
    // Two gathered layers go from 2 bytes to 1; the root (embeddings, head) stays bf16.
    close(bf16_gather - fp8_gather, 2.0 * LAYER_PARAMS * (BF16 - 1.0));
    close(bf16_gather, bytes(&titan(&[]), "weights"));
    // The gradients still come back in bf16 for the fp32 reduce-scatter.
    close(
        bytes(&titan(&[("float8", "fp8-gather")]), "gradients"),
        bytes(&titan(&[]), "gradients"),
    );
}

#[test]
fn float8_needs_full_training_and_its_all_gather_needs_fsdp() {
    let lora = titan(&[("mode", "lora"), ("float8", "tensorwise")]).validate();
    assert!(lora.iter().any(|e| e.field == "float8"), "{lora:?}");
    let zero3 = titan(&[("sharding", "zero3"), ("float8", "fp8-gather")]).validate();
    assert!(zero3.iter().any(|e| e.field == "float8"), "{zero3:?}");
    assert!(titan(&[("float8", "fp8-gather")]).validate().is_empty());
}
