//! The training step's time against FLOPs and bytes counted by hand: Llama 3.1 8B's matmul
//! parameters and attention, its elementwise work and loss, full fine-tuning against LoRA, and
//! checkpointing's extra forward.

use vramfit_engine::estimate::{
    ComponentId, TrainSpeed, TRAIN_AMPERE, TRAIN_HOPPER, UTILISATION_SPREAD,
};
use vramfit_engine::{estimate, Estimate, Scenario};

/// The H100 SXM's dense BF16 tensor throughput (datasheet: 1,979 sparse, halved).
const H100_HALF_FLOPS: f64 = 989.5e12;

/// Llama 3.1 8B: 32 layers of q and o (4096²), k and v (4096 × 1024) and a SwiGLU MLP
/// (3 × 4096 × 14336), and the LM head (128,256 × 4096).
const BLOCKS: f64 = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
const HEAD: f64 = 128_256.0 * 4096.0;
/// Attention's forward FLOPs per token at seq 2048: 4 × seq × query width (32 × 128) × 32 layers.
const ATTENTION: f64 = 4.0 * 2048.0 * 4096.0 * 32.0;
/// Tokens of a batch of 8 at seq 2048.
const TOKENS: f64 = 8.0 * 2048.0;
/// The H100 SXM's HBM3 bandwidth (datasheet: 3.35 TB/s).
const H100_BYTES_PER_S: f64 = 3.35e12;

/// Llama 3.1 8B's elementwise bytes per token per layer in bf16, forward: two RMSNorms (fp32
/// upcast input and bf16 output, 4096 × 6 B each), two residual adds (three 4096-wide tensors
/// each), SiLU on gate (read and write 14,336) and its product with up (two reads, one write).
const LAYER_FORWARD: f64 = 2.0 * 4096.0 * 6.0 + 2.0 * 3.0 * 4096.0 * 2.0 + 5.0 * 14336.0 * 2.0;
/// Backward: the norms 1.5 times their forward, the adds the same three, the product's three reads
/// and two writes and SiLU's three.
const LAYER_BACKWARD: f64 =
    1.5 * 2.0 * 4096.0 * 6.0 + 2.0 * 3.0 * 4096.0 * 2.0 + 8.0 * 14336.0 * 2.0;
/// The loss per token over 128,256 words: bf16 logits read, fp32 log-probabilities written, their
/// fp32 gradient written, both read, the bf16 logits' gradient written.
const LOSS: f64 = 128_256.0 * (2.0 + 4.0 + 4.0 + 8.0 + 2.0);

/// What the optimizer step moves on one GPU: the trained weights, master weights and optimizer
/// state read and written, the gradients read, at the estimate's own sizes.
fn optimizer_s(e: &Estimate, trained: ComponentId) -> f64 {
    let bytes = |id: ComponentId| e.bytes_of(id).as_f64();
    let updated =
        bytes(trained) + bytes(ComponentId::MasterWeights) + bytes(ComponentId::Optimizer);
    (2.0 * updated + bytes(ComponentId::Gradients)) / H100_BYTES_PER_S
}

/// The memory-bound time of a step of `TOKENS` with no checkpointing.
fn memory_s(e: &Estimate, trained: ComponentId) -> f64 {
    TOKENS * (32.0 * (LAYER_FORWARD + LAYER_BACKWARD) + LOSS) / H100_BYTES_PER_S
        + optimizer_s(e, trained)
}

fn run(pairs: &[(&str, &str)]) -> Estimate {
    let base = [
        ("model", "llama-3.1-8b"),
        ("gpu", "h100-80"),
        ("seq", "2048"),
        ("batch", "8"),
    ];
    let (s, errors) = Scenario::from_pairs(base.iter().chain(pairs).copied());
    assert!(errors.is_empty(), "{errors:?}");
    estimate(&s).unwrap()
}

fn train(e: &Estimate) -> &TrainSpeed {
    e.speed
        .as_ref()
        .and_then(|t| t.training())
        .unwrap_or_else(|| panic!("a training speed: {:?}", e.notes))
}

fn close(got: f64, want: f64) {
    assert!((got / want - 1.0).abs() < 1e-9, "got {got}, want {want}");
}

#[test]
fn a_full_step_is_6n_plus_attention_at_the_utilisation() {
    let e = run(&[("mode", "full")]);
    let t = train(&e);
    let flops = 6.0 * (BLOCKS + HEAD) + 3.0 * ATTENTION;
    // 48.25 GFLOP a token: 16,384 tokens at 989.5 TFLOPS × 49.7% take 1.607 s; 21.57 MB a token
    // of elementwise work and loss at 3.35 TB/s 0.105 s more, and the optimizer step the rest.
    let compute = TOKENS * flops / (H100_HALF_FLOPS * TRAIN_HOPPER);
    let memory = memory_s(&e, ComponentId::Weights);
    close(t.train_step_s, compute + memory);
    assert!((t.train_step_s - 1.785).abs() < 0.001, "{}", t.train_step_s);
    close(t.train_tokens_per_s, TOKENS / t.train_step_s);
    // The band moves the utilisation, not the bandwidth.
    close(
        t.train_tokens_per_s_low,
        TOKENS / (compute / UTILISATION_SPREAD.0 + memory),
    );
    assert!(
        t.basis
            .contains("16,384 tokens × 48.25 GFLOP a token at 990 TFLOPS × 50% (Hopper's"),
        "{}",
        t.basis
    );
    assert!(
        t.basis.contains(
            "plus at 3,350 GB/s: elementwise work and the loss 353.41 GB a micro-batch, the \
             optimizer step"
        ),
        "{}",
        t.basis
    );
}

#[test]
fn lora_skips_the_frozen_weights_gradients() {
    let e = run(&[
        ("mode", "lora"),
        ("lora-rank", "16"),
        ("lora-targets", "q,v"),
    ]);
    // Rank 16 on q (4096 → 4096) and v (4096 → 1024) in 32 layers.
    let adapters = 32.0 * 16.0 * ((4096.0 + 4096.0) + (4096.0 + 1024.0));
    let flops = 4.0 * (BLOCKS + HEAD) + 3.0 * ATTENTION + 6.0 * adapters;
    close(
        train(&e).train_step_s,
        TOKENS * flops / (H100_HALF_FLOPS * TRAIN_HOPPER) + memory_s(&e, ComponentId::Adapters),
    );
}

/// Each card takes its architecture's utilisation: an A100 Ampere's and an H100 Hopper's; an RTX
/// 4090 (Ada) and a B200 (Blackwell) the nearest rule, which the basis names as such.
#[test]
fn the_utilisation_is_the_architectures() {
    for (gpu, utilisation, rule, nearest) in [
        ("a100-80", TRAIN_AMPERE, "(Ampere's utilisation)", false),
        ("h100-80", TRAIN_HOPPER, "(Hopper's utilisation)", false),
        (
            "rtx-4090",
            TRAIN_AMPERE,
            "(Ampere's utilisation, the nearest rule",
            true,
        ),
        (
            "b200",
            TRAIN_HOPPER,
            "(Hopper's utilisation, the nearest rule",
            true,
        ),
    ] {
        let e = run(&[("mode", "full"), ("gpu", gpu), ("batch", "1")]);
        let t = train(&e);
        assert_eq!(t.utilisation, utilisation, "{gpu}");
        assert!(t.basis.contains(rule), "{gpu}: {}", t.basis);
        assert_eq!(t.basis.contains("nearest"), nearest, "{gpu}: {}", t.basis);
    }
}

#[test]
fn full_checkpointing_adds_a_forward_of_the_blocks() {
    let plain = train(&run(&[("mode", "full")])).train_step_s;
    let every = train(&run(&[("mode", "full"), ("checkpointing", "full")])).train_step_s;
    let half = train(&run(&[
        ("mode", "full"),
        ("checkpointing", "full"),
        ("checkpoint-every", "2"),
    ]))
    .train_step_s;
    // The recomputed forward: its FLOPs, and its elementwise work again, on every layer or 16.
    let forward = TOKENS * (2.0 * BLOCKS + ATTENTION) / (H100_HALF_FLOPS * TRAIN_HOPPER)
        + TOKENS * 32.0 * LAYER_FORWARD / H100_BYTES_PER_S;
    close(every - plain, forward);
    close(half - plain, forward / 2.0);
}

#[test]
fn qlora_adds_its_dequantization_and_data_parallel_its_exchange() {
    let lora = train(&run(&[("mode", "lora"), ("lora-targets", "all")])).train_step_s;
    let qlora = run(&[("mode", "qlora"), ("lora-targets", "all")]);
    assert!(
        train(&qlora)
            .basis
            .contains("plus at 3,350 GB/s: elementwise work and the loss 353.41 GB a micro-batch, dequantizing the 4-bit weights"),
        "{}",
        train(&qlora).basis
    );
    assert!(train(&qlora).train_step_s > 0.0 && lora > 0.0);
    // Eight GPUs on NVLink hide DDP's exchange behind the backward: eight times the tokens.
    let one = run(&[("mode", "full")]);
    let one = train(&one);
    let eight = run(&[("mode", "full"), ("sharding", "ddp"), ("gpus", "8")]);
    close(
        train(&eight).train_tokens_per_s,
        8.0 * one.train_tokens_per_s,
    );
    // Over PCIe 4.0 (32 GB/s) an RTX 4090 pair cannot hide the 16 GB of bf16 gradients' ring
    // (0.5 s) behind a 512-token backward (about 0.15 s).
    let pcie = run(&[
        ("mode", "full"),
        ("sharding", "ddp"),
        ("gpus", "2"),
        ("gpu", "rtx-4090"),
        ("batch", "1"),
        ("seq", "512"),
    ]);
    assert!(
        train(&pcie).basis.contains("of the exchange over 32 GB/s"),
        "{}",
        train(&pcie).basis
    );
    let alone = run(&[
        ("mode", "full"),
        ("gpu", "rtx-4090"),
        ("batch", "1"),
        ("seq", "512"),
    ]);
    assert!(train(&pcie).train_tokens_per_s_per_gpu < train(&alone).train_tokens_per_s_per_gpu);
}

/// Past one node of eight the ring runs at the slower of the card's link and the node's network:
/// an H100's 450 GB/s NVLink against the default 3,200 Gb/s (400 GB/s), or a stated 100 Gb/s
/// (12.5 GB/s), over which DDP's gradients outlast a 512-token backward.
#[test]
fn past_one_node_the_exchange_crosses_the_network() {
    use vramfit_engine::estimate::{GPUS_PER_NODE, NETWORK_DEFAULT_BITS_PER_S};
    assert_eq!((GPUS_PER_NODE, NETWORK_DEFAULT_BITS_PER_S), (8, 3200e9));
    let ddp = |gpus: &'static str, network: Option<&'static str>| {
        let mut pairs = vec![
            ("mode", "full"),
            ("sharding", "ddp"),
            ("gpus", gpus),
            ("batch", "1"),
            ("seq", "512"),
        ];
        pairs.extend(network.map(|n| ("network", n)));
        run(&pairs)
    };
    let node = ddp("8", Some("100"));
    assert!(
        train(&node).basis.contains("over 450 GB/s that"),
        "{}",
        train(&node).basis
    );
    let two = ddp("16", None);
    assert!(
        train(&two).basis.contains(
            "over 400 GB/s (the slower of the link and the node's network) that no compute hides"
        ),
        "{}",
        train(&two).basis
    );
    let slow = ddp("16", Some("100"));
    assert!(
        train(&slow).basis.contains("over 13 GB/s"),
        "{}",
        train(&slow).basis
    );
    // The step outlasts the ring, which only the last backward overlaps.
    let ring_s = 2.0 * 15.0 / 16.0 * slow.bytes_of(ComponentId::Gradients).as_f64() / 12.5e9;
    assert!(
        train(&slow).train_step_s > ring_s,
        "{}",
        train(&slow).train_step_s
    );
    assert!(
        train(&slow).train_tokens_per_s_per_gpu < 0.5 * train(&node).train_tokens_per_s_per_gpu,
        "{} against {}",
        train(&slow).train_tokens_per_s_per_gpu,
        train(&node).train_tokens_per_s_per_gpu
    );
}

/// An fp32 run's matmuls at the CUDA cores' fp32 rate, not TF32's (PyTorch's default): the H100
/// SXM's 132 SMs × 128 lanes × 2 × 1.98 GHz, 66.9 TFLOPS (the whitepaper's Peak FP32), at the
/// same utilisation; its bytes at the bandwidth add a little.
#[test]
fn an_fp32_run_is_timed_on_the_cuda_cores() {
    let e = run(&[("mode", "full"), ("act-dtype", "fp32")]);
    let t = train(&e);
    let fp32 = 132.0 * 128.0 * 2.0 * 1.98e9;
    let compute = TOKENS * (6.0 * (BLOCKS + HEAD) + 3.0 * ATTENTION) / (fp32 * TRAIN_HOPPER);
    assert!(
        compute < t.train_step_s && t.train_step_s < 1.05 * compute,
        "{} against {compute}",
        t.train_step_s
    );
    assert!(
        t.basis.contains(
            "at 67 TFLOPS fp32 on the CUDA cores (TF32 off, PyTorch's default; with TF32 on, the \
             tensor cores' 495 TFLOPS would be faster) × 50% (Hopper's utilisation, set on 16-bit \
             runs)"
        ),
        "{}",
        t.basis
    );
}

#[test]
fn what_is_not_modelled_is_named() {
    for (pairs, says) in [
        (
            vec![("mode", "full"), ("act-dtype", "fp32"), ("gpu", "b200")],
            "computes in fp32, and the B200 180GB's fp32 peak is not known",
        ),
        (
            vec![
                ("mode", "full"),
                ("gpus", "8"),
                ("tp", "8"),
                ("sharding", "fsdp"),
            ],
            "tensor, pipeline",
        ),
        (vec![("mode", "full"), ("float8", "tensorwise")], "float8"),
        (
            vec![("mode", "full"), ("offload", "optimizer")],
            "offload=optimizer",
        ),
    ] {
        let e = run(&pairs);
        assert!(e.speed.is_none(), "{pairs:?}");
        assert!(
            e.notes
                .iter()
                .any(|n| n.starts_with("No training speed estimate") && n.contains(says)),
            "{:?}",
            e.notes
        );
    }
}
