//! Golden tests: the `lesson` method reproduces chapter 62's worked examples, in GB = 1e9.

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, Bytes, Scenario};

fn lesson(pairs: &[(&str, &str)]) -> vramfit_engine::Estimate {
    let mut s = Scenario::default();
    s.set("method", "lesson").unwrap();
    for (k, v) in pairs {
        s.set(k, v).unwrap_or_else(|e| panic!("{e}"));
    }
    estimate(&s).unwrap_or_else(|e| panic!("{e:?}"))
}

fn gb(e: &vramfit_engine::Estimate, id: &str) -> f64 {
    e.bytes_of(ComponentId::parse(id).unwrap()).gb()
}

const LLAMA_8B: [(&str, &str); 3] = [("params", "8B"), ("layers", "32"), ("hidden", "4096")];

#[test]
fn full_fine_tune_llama_8b_fp16_is_97_57_gb() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([
        ("mode", "full"),
        ("weights", "fp16"),
        ("batch", "1"),
        ("seq", "2048"),
        ("checkpointing", "none"),
    ]);
    let e = lesson(&pairs);
    assert_eq!(e.bytes_of(ComponentId::Weights), Bytes(16_000_000_000));
    assert_eq!(e.bytes_of(ComponentId::Gradients), Bytes(16_000_000_000));
    assert_eq!(e.bytes_of(ComponentId::Optimizer), Bytes(64_000_000_000));
    // 2 · 32 · 1 · 2048 · 4096 · 2 bytes
    assert_eq!(e.bytes_of(ComponentId::Activations), Bytes(1_073_741_824));
    assert_eq!(e.bytes_of(ComponentId::CudaContext), Bytes(500_000_000));
    assert_eq!(e.total_bytes, Bytes(97_573_741_824));
    assert_eq!(format!("{:.2}", e.total_bytes.gb()), "97.57");
    assert!(
        e.component(ComponentId::MasterWeights).is_none(),
        "the lesson has no master copy"
    );
}

#[test]
fn lora_rank_16_on_q_v_trains_8_4m_params() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([
        ("mode", "lora"),
        ("weights", "fp16"),
        ("lora-rank", "16"),
        ("lora-targets", "q,v"),
    ]);
    let e = lesson(&pairs);
    assert_eq!(e.trainable_params, 8_388_608.0);
    assert_eq!(e.bytes_of(ComponentId::Gradients), Bytes(16_777_216)); // "16.8 MB"
    assert_eq!(e.bytes_of(ComponentId::Optimizer), Bytes(67_108_864)); // "67 MB"
    assert_eq!(format!("{:.1}", gb(&e, "gradients") * 1000.0), "16.8");
}

/// The formula gives 5.01 GB with checkpointing. The lesson's prose rounds the checkpointed
/// activations up to "~1 GB" and so says ~5.6 GB; its printed 5.36 contradicts its own code.
#[test]
fn qlora_llama_8b_nf4_with_checkpointing_is_5_01_gb() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([
        ("mode", "qlora"),
        ("weights", "nf4"),
        ("checkpointing", "full"),
        ("batch", "1"),
        ("seq", "2048"),
    ]);
    let e = lesson(&pairs);
    assert_eq!(e.bytes_of(ComponentId::Weights), Bytes(4_000_000_000));
    assert_eq!(e.bytes_of(ComponentId::Gradients), Bytes(16_777_216));
    assert_eq!(e.bytes_of(ComponentId::Optimizer), Bytes(67_108_864));
    assert_eq!(e.bytes_of(ComponentId::Activations), Bytes(429_496_730)); // 1,073,741,824 × 0.4
    assert_eq!(e.total_bytes, Bytes(5_013_382_810));
}

#[test]
fn inference_llama_8b_nf4_is_4_5_gb() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([("mode", "inference"), ("weights", "nf4")]);
    let e = lesson(&pairs);
    assert_eq!(e.total_bytes, Bytes(4_500_000_000));
    let ids: Vec<&str> = e.components.iter().map(|c| c.id.id()).collect();
    assert_eq!(ids, ["weights", "cuda_context"]);
}

#[test]
fn checkpointing_multiplies_activations_by_0_4_and_batch_scales_linearly() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([("mode", "full"), ("weights", "fp16"), ("batch", "4")]);
    let e = lesson(&pairs);
    // "batch_size=4 → 4.3 GB of activations"
    assert_eq!(format!("{:.1}", gb(&e, "activations")), "4.3");
}

#[test]
fn formulas_show_the_numbers() {
    let mut pairs = LLAMA_8B.to_vec();
    pairs.extend([("mode", "full"), ("weights", "fp16")]);
    let e = lesson(&pairs);
    let f = &e.component(ComponentId::Activations).unwrap().formula;
    assert!(f.contains("2 × 32 × 1 × 2048 × 4096 × 2"), "{f}");
}
