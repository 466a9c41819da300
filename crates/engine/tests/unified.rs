//! Unified memory: a Mac's GPU budgets Metal's working set of the machine's memory, the
//! `wired-limit` setting replaces it, and what is offloaded to the CPU stays in the same memory.

use vramfit_engine::estimate::{ComponentId, Verdict};
use vramfit_engine::units::{Bytes, GIB, MIB};
use vramfit_engine::{estimate, Estimate, Scenario};

fn run(pairs: &[(&str, &str)]) -> Estimate {
    let (s, errors) = Scenario::from_pairs(pairs.iter().copied());
    assert!(errors.is_empty(), "{errors:?}");
    estimate(&s).unwrap()
}

const LLAMA_70B_Q4_K_M: &[(&str, &str)] = &[
    ("model", "llama-3.1-70b"),
    ("mode", "inference"),
    ("runtime", "llama.cpp"),
    ("quant", "Q4_K_M"),
];

fn on(gpu: &str, more: &[(&str, &str)]) -> Estimate {
    let mut pairs = LLAMA_70B_Q4_K_M.to_vec();
    pairs.push(("gpu", gpu));
    pairs.extend_from_slice(more);
    run(&pairs)
}

#[test]
fn a_64_gb_mac_runs_a_70b_q4_k_m_as_the_working_set_rule_says() {
    // By hand: a 64 GB Mac's working set is 3/4 × 64 GiB = 51,539,607,552 B; less the 1 GiB
    // margin, 50,465,865,728 B usable, tight above 85% of that, 42,895,985,869 B. The stack:
    // the Q4_K_M blocks and output layer (41.92 GB; tests/llamacpp.rs holds the Q4_K_M sizes to
    // published files), the KV buffer 2048 cells × 80 layers × 2 × 8 heads × 128 × 2 B =
    // 671,088,640 B, a compute buffer of about 0.2 GB and the 512 MiB context: about 43.3 GB,
    // above the tight line and 7 GB below usable, so the verdict is tight. The 0.6 GB that
    // llama.cpp keeps in CPU buffers (token_embd, the output buffer) fit in the rest of the 64 GiB.
    let e = on("m4-max-64", &[]);
    assert_eq!(e.capacity_bytes, Bytes(48 * GIB));
    assert_eq!(e.usable_bytes, Bytes(47 * GIB));
    assert_eq!(e.bytes_of(ComponentId::KvCache), Bytes(671_088_640));
    let total = e.total_bytes.as_f64();
    assert!(
        total > 0.85 * (47 * GIB) as f64 && total < (47 * GIB) as f64,
        "{total}"
    );
    assert_eq!(e.verdict, Verdict::Tight);
    // The same file on a 48 GB Mac, whose GPU may use 36 GiB: out of memory with every layer on
    // the GPU, though 48 GB holds the 43 GB. Metal is a GPU device to llama.cpp's --fit, which
    // then keeps layers in system RAM instead.
    assert_eq!(on("m4-max-48", &[("fit", "false")]).verdict, Verdict::Oom);
    assert_ne!(on("m4-max-48", &[]).verdict, Verdict::Oom);
}

#[test]
fn the_wired_limit_replaces_the_working_set() {
    let stock = on("m4-max-64", &[]);
    let raised = on("m4-max-64", &[("wired-limit", "57344MiB")]);
    assert_eq!(raised.capacity_bytes, Bytes(57_344 * MIB));
    assert!(raised.headroom_bytes > stock.headroom_bytes);
    // On the 48 GB Mac a 44 GiB limit turns the 70B from out of memory to running.
    let mac48 = on("m4-max-48", &[("wired-limit", "44GiB"), ("fit", "false")]);
    assert_eq!(mac48.capacity_bytes, Bytes(44 * GIB));
    assert_ne!(mac48.verdict, Verdict::Oom);
    // More than the Mac has is refused; on a card without the setting it is named as unused.
    let (s, errors) = Scenario::from_pairs(
        LLAMA_70B_Q4_K_M
            .iter()
            .copied()
            .chain([("gpu", "m4-max-48"), ("wired-limit", "64GiB")]),
    );
    assert!(errors.is_empty(), "{errors:?}");
    let refused = estimate(&s).unwrap_err();
    assert_eq!(refused[0].field, "wired-limit");
    let card = on("h100-80", &[("wired-limit", "44GiB")]);
    assert_eq!(card.capacity_bytes, Bytes(81_559 * MIB));
    assert!(card
        .notes
        .iter()
        .any(|n| n.starts_with("wired-limit not used")));
}

#[test]
fn layers_on_the_cpu_of_a_mac_stay_in_its_memory() {
    // Q8_0 70B (about 75 GB) with 40 of 81 layers on the GPU: the GPU's share fits a 64 GB
    // Mac's 48 GiB, but the CPU's half lives in the same 64 GiB, and both do not fit.
    let split = [("quant", "Q8_0"), ("n-gpu-layers", "40")];
    let mac = on("m4-max-64", &split);
    assert!(
        mac.total_bytes < mac.usable_bytes,
        "the GPU's share alone fits"
    );
    assert_eq!(mac.verdict, Verdict::Oom);
    assert!(mac
        .notes
        .iter()
        .any(|n| n.contains("CPU buffers stay in the same memory")));
    // A card of the same size with memory of its own keeps them in separate system RAM.
    let mut card = split.to_vec();
    card.push(("vram", "48GiB"));
    assert_ne!(on("m4-max-64", &card).verdict, Verdict::Oom);
}

#[test]
fn zero_offload_on_unified_memory_says_it_frees_nothing() {
    let e = run(&[
        ("model", "llama-3.1-8b"),
        ("mode", "full"),
        ("offload", "optimizer"),
        ("gpu", "m4-max-128"),
    ]);
    assert!(
        e.notes.iter().any(|n| n.contains("stays in the same")),
        "{:?}",
        e.notes
    );
}
