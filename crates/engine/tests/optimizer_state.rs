//! Low-bit and paged optimizer state on Llama-2-7B: the block-wise quantized moments of
//! bitsandbytes and torchao, and bitsandbytes' paged state, which nvidia-smi sees but PyTorch's
//! allocated and reserved peaks do not.

mod common;

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::{estimate, Estimate};

fn llama(pairs: &[(&str, &str)]) -> Estimate {
    let s = common::scenario(
        &[
            ("model", "llama-2-7b"),
            ("mode", "full"),
            ("weights", "bf16"),
            ("master-weights", "false"),
            ("checkpointing", "full"),
            ("batch", "2"),
            ("seq", "1024"),
        ],
        pairs,
    );
    estimate(&s).expect("estimates")
}

fn bytes(e: &Estimate, id: &str) -> f64 {
    e.bytes_of(ComponentId::parse(id).unwrap()).as_f64()
}

const PARAMS: f64 = 6_738_415_616.0;

#[test]
fn quantized_moments_take_their_codes_and_one_fp32_scale_per_block() {
    let eight = bytes(&llama(&[("optimizer", "adamw-8bit")]), "optimizer");
    let four = bytes(&llama(&[("optimizer", "adamw-4bit")]), "optimizer");
    let fp8 = bytes(&llama(&[("optimizer", "adamw-fp8")]), "optimizer");
    let close = |got: f64, want: f64| (got - want).abs() / want < 1e-3;
    assert!(close(eight, PARAMS * 2.0 * (1.0 + 4.0 / 256.0)), "{eight}");
    assert!(close(four, PARAMS * 2.0 * (0.5 + 4.0 / 128.0)), "{four}");
    assert_eq!(eight, fp8);
}

#[test]
fn paged_state_leaves_torch_peaks_but_stays_in_the_total() {
    let plain = llama(&[("optimizer", "adamw-8bit")]);
    let paged = llama(&[("optimizer", "adamw-8bit"), ("paged-optimizer", "true")]);
    let managed = bytes(&paged, "paged_optimizer");
    // The total keeps the state; only the allocator's 2% slack on persistent tensors goes,
    // since managed memory never passes through PyTorch's caching allocator.
    let total_drop = plain.total_bytes.as_f64() - paged.total_bytes.as_f64();
    assert!((total_drop - 0.02 * managed).abs() < 1e3, "{total_drop}");
    // Every matrix of Llama-2-7B is paged; the fp32 block scales and the norms' moments are not.
    let matrices = PARAMS - 32.0 * 2.0 * 4096.0 - 4096.0;
    assert!((managed - matrices * 2.0).abs() < 1.0, "{managed}");
    let dropped = plain.allocated_bytes().as_f64() - paged.allocated_bytes().as_f64();
    assert!((dropped - managed).abs() < 1.0, "{dropped} vs {managed}");
    assert!(
        bytes(&paged, "optimizer") > 0.0,
        "block scales stay PyTorch tensors"
    );
}

#[test]
fn lora_adapters_under_a_hundred_thousand_values_are_not_paged() {
    let lora = |rank: &str| {
        llama(&[
            ("mode", "lora"),
            ("lora-rank", rank),
            ("optimizer", "adamw"),
            ("paged-optimizer", "true"),
        ])
    };
    // r = 16: each A (16 × 4096) and B (4096 × 16) has 65,536 values.
    assert_eq!(bytes(&lora("16"), "paged_optimizer"), 0.0);
    // r = 32: 131,072 values each, so both moments of every adapter are paged (fp32).
    let r32 = lora("32");
    let adapters = 32.0 * 2.0 * 2.0 * 32.0 * 4096.0;
    assert!((bytes(&r32, "paged_optimizer") - adapters * 8.0).abs() < 1.0);
}

#[test]
fn an_optimizer_without_a_paged_version_says_so_and_stays_in_the_allocator() {
    let e = llama(&[("optimizer", "adamw-4bit"), ("paged-optimizer", "true")]);
    assert_eq!(bytes(&e, "paged_optimizer"), 0.0);
    assert!(e.notes.iter().any(|n| n.contains("no paged adamw-4bit")));
}
