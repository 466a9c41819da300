//! `vramfit parse-bench`: llama-bench's or `vllm bench serve`'s output against the speed estimate
//! of the scenario the flags give, each test or run and the correction; what is neither exits 2.

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
const VLLM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bench/tests/fixtures/vllm-pr35777.txt"
);
const VLLM_SWEEP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bench/tests/fixtures/vllm-nerdalert-sweep.txt"
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
    assert_eq!(checks[0]["quantity"], "tokens_per_s");
    assert_eq!(checks[0]["measured"], 7100.002165);
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
    assert_eq!(checks[0]["predicted"], e["speed"]["prefill_tokens_per_s"]);
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
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("-o json") && said.contains("vllm bench serve"),
        "{said}"
    );
}

/// The scenario a vLLM run is set beside; vLLM is the runtime without `--runtime`. The model is
/// a catalogue one: this checks the mapping, not the model's accuracy.
const VLLM_SCENARIO: [&str; 4] = ["--model", "llama-3.1-8b", "--gpu", "h100-80"];

fn json_of(args: &[&str]) -> Value {
    let out = vramfit(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_vllm_run_is_its_concurrency_mean_prompt_and_output() {
    let v = json_of(&[&["parse-bench", VLLM, "--json"][..], &VLLM_SCENARIO].concat());
    assert_eq!(v["bench"]["format"], "vllm-console");
    let checks = v["check"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0]["test"], "c8, 237 in / 300 out");
    assert_eq!(checks[0]["measured"], 775.71);
    assert_eq!(checks[1]["quantity"], "ttft_s");
    assert_eq!(checks[1]["measured"], 0.14837);
    assert!(checks[1]["note"]
        .as_str()
        .unwrap()
        .starts_with("mean TTFT (median 151.86 ms)"));
    // --max-concurrency 8; 237,165 tokens in and 300,000 out over 1,000 requests.
    let e = json_of(
        &[
            &[
                "estimate",
                "--json",
                "--mode",
                "inference",
                "--runtime",
                "vllm",
            ][..],
            &["--concurrency", "8", "--prompt", "237", "--seq", "537"],
            &VLLM_SCENARIO,
        ]
        .concat(),
    );
    assert_eq!(checks[0]["predicted"], e["speed"]["output_tokens_per_s"]);
    assert_eq!(checks[1]["predicted"], e["speed"]["ttft_s"]);
    // The correction is the throughput's alone.
    let ratio = 775.71 / e["speed"]["output_tokens_per_s"].as_f64().unwrap();
    assert_eq!(v["check"]["correction"].as_f64().unwrap(), ratio);
}

#[test]
fn a_run_at_a_request_rate_or_without_a_concurrency_says_why_it_is_not_compared() {
    let out = vramfit(&[&["parse-bench", VLLM_SWEEP][..], &VLLM_SCENARIO].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("10 req/s, 999 in / 270 out") && text.contains("an open loop"),
        "{text}"
    );
    assert!(
        text.contains("unbounded") && text.contains("no maximum concurrency"),
        "{text}"
    );
    assert!(
        !text.contains("correction"),
        "nothing compared, nothing to correct: {text}"
    );
}
