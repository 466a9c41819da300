//! `vramfit parse-bench`: llama-bench's output against the speed estimate of the scenario the
//! flags give, each test and the correction; what is not llama-bench output exits 2.

use serde_json::Value;
use std::process::Command;

const JSON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bench/tests/fixtures/readme.json"
);
const MD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bench/tests/fixtures/readme-md-depth.md"
);

fn vramfit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .output()
        .unwrap()
}

const SCENARIO: [&str; 8] = [
    "--model",
    "qwen2.5-7b",
    "--runtime",
    "llama.cpp",
    "--quant",
    "Q4_K_M",
    "--gpu",
    "rtx-4080",
];

#[test]
fn each_test_is_checked_against_the_estimate_at_its_lengths() {
    let out = vramfit(&[&["parse-bench", JSON, "--json"][..], &SCENARIO].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = v["check"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0]["test"], "pp512");
    assert_eq!(checks[0]["measured_tokens_per_s"], 7100.002165);
    // The prefill the estimate gives for a 512-token prompt is what the check compares.
    let estimate = vramfit(
        &[
            &[
                "estimate",
                "--json",
                "--mode",
                "inference",
                "--prompt",
                "512",
                "--seq",
                "512",
                "--batch",
                "1",
            ][..],
            &SCENARIO,
        ]
        .concat(),
    );
    let e: Value = serde_json::from_slice(&estimate.stdout).unwrap();
    assert_eq!(
        checks[0]["predicted_tokens_per_s"],
        e["speed"]["prefill_tokens_per_s"]
    );
    let correction = v["check"]["correction"].as_f64().unwrap();
    assert!(correction > 0.5 && correction < 2.0, "{correction}");
}

#[test]
fn a_test_after_a_cached_context_says_it_is_not_modelled() {
    let out = vramfit(&[&["parse-bench", MD][..], &SCENARIO].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("pp512 @ d512") && text.contains("not modelled yet"),
        "{text}"
    );
    assert!(text.contains("correction"), "{text}");
}

#[test]
fn other_text_exits_2_saying_what_to_paste() {
    let dir = std::env::temp_dir().join(format!("vramfit-bench-{}", std::process::id()));
    std::fs::write(&dir, "not a benchmark").unwrap();
    let out = vramfit(&["parse-bench", dir.to_str().unwrap()]);
    std::fs::remove_file(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o json"));
}
