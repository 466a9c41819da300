//! The optimizer step's own peak: torch's AdamW builds a temporary `sqrt(v)` after the backward
//! pass has freed the activations and logits, for every parameter at once (foreach), for one
//! tensor at a time (for-loop), or not at all (fused). Checked on Llama-3.1-8B's shape.

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, Scenario};

const PARAMS: f64 = 8.03e9;
/// The largest trainable tensor: the 128256 × 4096 embedding (and the untied head).
const LARGEST_TENSOR: f64 = 128_256.0 * 4096.0;
const FP32: f64 = 4.0;

fn llama(pairs: &[(&str, &str)]) -> Scenario {
    common::scenario(
        &[
            ("model", "llama-3.1-8b"),
            ("mode", "full"),
            ("optimizer", "adamw"),
            ("checkpointing", "full"),
            ("batch", "1"),
            ("seq", "512"),
        ],
        pairs,
    )
}

fn step_bytes(s: &Scenario) -> f64 {
    estimate(s)
        .unwrap()
        .bytes_of(ComponentId::OptimizerStep)
        .as_f64()
}

fn freed_before_the_step(s: &Scenario) -> f64 {
    let e = estimate(s).unwrap();
    ["activations", "weight_copies", "logits"]
        .iter()
        .map(|id| e.bytes_of(ComponentId::parse(id).unwrap()).as_f64())
        .sum()
}

#[test]
fn foreach_adamw_peaks_at_the_step_when_checkpointing_leaves_little_to_free() {
    let s = llama(&[("optimizer-step", "foreach")]);
    let expected = PARAMS * FP32 - freed_before_the_step(&s);
    let step = step_bytes(&s);
    assert!(expected > 0.0);
    assert!((step / expected - 1.0).abs() < 0.01, "{step} vs {expected}");
}

#[test]
fn the_fused_kernel_adds_nothing_and_the_loop_at_most_one_tensor() {
    assert_eq!(step_bytes(&llama(&[("optimizer-step", "fused")])), 0.0);
    let for_loop = step_bytes(&llama(&[("optimizer-step", "for-loop")]));
    assert!(for_loop <= LARGEST_TENSOR * FP32, "{for_loop}");
    assert!(for_loop < step_bytes(&llama(&[("optimizer-step", "foreach")])));
}

#[test]
fn the_step_is_not_the_peak_when_the_backward_pass_held_more() {
    let long = llama(&[("checkpointing", "none"), ("seq", "8192"), ("batch", "4")]);
    assert!(freed_before_the_step(&long) > PARAMS * FP32);
    assert_eq!(step_bytes(&long), 0.0);
}

#[test]
fn sharded_optimizer_state_shards_the_temporary_and_offloaded_state_steps_on_the_cpu() {
    let one = step_bytes(&llama(&[])) + freed_before_the_step(&llama(&[]));
    let sharded = llama(&[("sharding", "zero3"), ("gpus", "8")]);
    let eight = step_bytes(&sharded) + freed_before_the_step(&sharded);
    assert!(
        (eight / (one / 8.0) - 1.0).abs() < 0.01,
        "{eight} vs {one}/8"
    );
    let offloaded = llama(&[
        ("sharding", "zero3"),
        ("gpus", "8"),
        ("offload", "optimizer"),
    ]);
    assert_eq!(step_bytes(&offloaded), 0.0);
}

#[test]
fn optimizers_that_update_in_place_have_no_step_peak() {
    for optimizer in ["adamw-8bit", "adafactor", "sgd"] {
        assert_eq!(
            step_bytes(&llama(&[("optimizer", optimizer)])),
            0.0,
            "{optimizer}"
        );
    }
}
