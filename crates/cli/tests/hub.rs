//! `--hf` and `--model-dir` end to end against the fixture Hub (`vramfit-hub-fixture`), which
//! speaks the Hub's protocol from checkpoints checked against their published sizes: every
//! format's weights come out at the checkpoint's exact tensor bytes, the same from the Hub, a
//! directory and the HF cache offline; only headers are read; and each failure a user meets
//! (gated, not found, no Range, offline without a cache) exits 2 saying what to do.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use vramfit_engine::units::group_thousands;
use vramfit_hub_fixture::fixtures::{self, TEST_TOKEN};
use vramfit_hub_fixture::server::{Hub, HubOptions};
use vramfit_hub_fixture::{materialize_dir, materialize_hf_cache};

const QWEN3_30B_A3B: &str = "Qwen/Qwen3-30B-A3B";
const MIB: u64 = 1 << 20;

/// An empty folder of its own for one test: HF_HOME, or a checkpoint directory.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("vramfit-hub-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `vramfit` with the Hub settings of a clean machine: an empty HF_HOME, no token, online.
fn vramfit(endpoint: &str, hf_home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vramfit"));
    command
        .args(args)
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HOME", hf_home)
        .env_remove("HF_HUB_CACHE")
        .env_remove("HUGGINGFACE_HUB_CACHE")
        .env_remove("HF_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_HUB_OFFLINE");
    command
}

fn output(mut command: Command) -> Output {
    command.output().expect("the binary runs")
}

fn weights_and_params(out: &Output) -> (u64, f64) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    let weights = e["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "weights")
        .unwrap()["bytes"]
        .as_u64()
        .unwrap();
    (weights, e["params"].as_f64().unwrap())
}

fn refused(out: &Output, said: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for words in said {
        assert!(stderr.contains(words), "`{words}` not in: {stderr}");
    }
}

const INFERENCE: [&str; 4] = ["estimate", "--json", "--mode", "inference"];

#[test]
fn a_repo_id_gives_the_checkpoints_exact_bytes_reading_headers_only() {
    let hub = Hub::start(HubOptions::default());
    let home = TempDir::new("qwen");
    let args = [&INFERENCE[..], &["--hf", QWEN3_30B_A3B]].concat();
    let from_hub = output(vramfit(hub.endpoint(), &home.0, &args));
    assert_eq!(
        weights_and_params(&from_hub),
        (61_064_245_248, 30_532_122_624.0)
    );
    let stats = hub.settled_stats(std::time::Duration::from_secs(10));
    assert!(stats.body_bytes < 64 * MIB, "{} B read", stats.body_bytes);
    assert!(stats.log.iter().all(|r| r.status < 400), "{:?}", stats.log);

    // The same checkpoint as a directory, and from the HF cache with the Hub out of reach.
    let checkpoint = fixtures::find(QWEN3_30B_A3B).unwrap();
    let dir = TempDir::new("qwen-dir");
    materialize_dir(&checkpoint, &dir.0).unwrap();
    let dir_arg = dir.0.to_str().unwrap();
    let from_dir = output(vramfit(
        hub.endpoint(),
        &home.0,
        &[&INFERENCE[..], &["--model-dir", dir_arg]].concat(),
    ));
    assert_eq!(weights_and_params(&from_dir), weights_and_params(&from_hub));
    materialize_hf_cache(&checkpoint, &home.0.join("hub")).unwrap();
    let mut offline = vramfit("http://127.0.0.1:9", &home.0, &args);
    offline.env("HF_HUB_OFFLINE", "1");
    assert_eq!(
        weights_and_params(&output(offline)),
        weights_and_params(&from_hub)
    );
}

/// The launch command names the repo `--hf` read: vLLM's model argument, llama-server's `-hf
/// REPO:QUANT`.
#[test]
fn the_launch_command_names_the_repo_it_was_read_from() {
    let hub = Hub::start(HubOptions::default());
    let home = TempDir::new("launch");
    let command = |hf: &str, runtime: &str| {
        let args = [&INFERENCE[..], &["--hf", hf, "--runtime", runtime]].concat();
        let mut run = vramfit(hub.endpoint(), &home.0, &args);
        run.env("HF_TOKEN", TEST_TOKEN);
        let out = output(run);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let e: Value = serde_json::from_slice(&out.stdout).unwrap();
        e["serving"]["command"].as_str().unwrap().to_string()
    };
    let vllm = command(QWEN3_30B_A3B, "vllm");
    assert!(
        vllm.starts_with("vllm serve Qwen/Qwen3-30B-A3B --max-model-len"),
        "{vllm}"
    );
    let gguf = "vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M";
    let llama = command(gguf, "llama.cpp");
    assert!(
        llama.starts_with(&format!("llama-server -hf {gguf} -c")),
        "{llama}"
    );
}

#[test]
fn every_format_reads_to_its_tensor_bytes() {
    let hub = Hub::start(HubOptions::default());
    let home = TempDir::new("formats");
    for checkpoint in fixtures::all() {
        let repo = checkpoint.repo;
        let hf = if checkpoint.format.starts_with("GGUF") {
            format!("{repo}:Q4_K_M")
        } else {
            repo.to_string()
        };
        let mut command = vramfit(
            hub.endpoint(),
            &home.0,
            &[&INFERENCE[..], &["--hf", &hf]].concat(),
        );
        command.env("HF_TOKEN", TEST_TOKEN);
        let out = output(command);
        let (weights, _) = weights_and_params(&out);
        // The GGUF repo holds its file whole and split, so its tensors are counted twice.
        let expected = match checkpoint.format.starts_with("GGUF") {
            true => checkpoint.tensor_bytes() / 2,
            false => checkpoint.tensor_bytes(),
        };
        if !checkpoint.format.starts_with("GGUF") {
            assert_eq!(weights, expected, "{repo}");
        } else {
            // llama.cpp places the output layer's and token_embd's bytes apart from the weights
            // component; the file's whole tensors are in its summary.
            let told = String::from_utf8_lossy(&out.stderr);
            let grouped = group_thousands(expected);
            assert!(told.contains(&grouped), "{repo}: {told}");
        }
    }
}

#[test]
fn a_split_gguf_file_is_read_from_its_first_shard() {
    let checkpoint = fixtures::find("vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF").unwrap();
    let dir = TempDir::new("gguf");
    materialize_dir(&checkpoint, &dir.0).unwrap();
    let home = TempDir::new("gguf-home");
    let read = |file: &str| {
        let path = dir.0.join(file);
        output(vramfit(
            "http://127.0.0.1:9",
            &home.0,
            &["estimate", "--json", "--gguf", path.to_str().unwrap()],
        ))
    };
    let whole = read("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf");
    let split = read("Q4_K_M/Meta-Llama-3.1-8B-Instruct-Q4_K_M-00001-of-00002.gguf");
    assert_eq!(weights_and_params(&split), weights_and_params(&whole));
}

#[test]
fn failures_say_what_to_do() {
    let hub = Hub::start(HubOptions::default());
    let home = TempDir::new("failures");
    let hf = |repo: &str| {
        output(vramfit(
            hub.endpoint(),
            &home.0,
            &[&INFERENCE[..], &["--hf", repo]].concat(),
        ))
    };
    refused(&hf("meta-llama/Llama-3.1-8B"), &["gated", "HF_TOKEN"]);
    refused(
        &hf("nobody/no-such-model"),
        &["nobody/no-such-model", "HF_TOKEN"],
    );
    refused(&hf("Qwen/Qwen3-30B-A3B@v9"), &["no revision v9"]);
    let mut offline = vramfit(
        hub.endpoint(),
        &home.0,
        &[&INFERENCE[..], &["--hf", QWEN3_30B_A3B]].concat(),
    );
    offline.env("HF_HUB_OFFLINE", "1");
    refused(&output(offline), &["HF_HUB_OFFLINE", "not in the HF cache"]);
    let before = hub.stats().requests;
    let unreachable = vramfit(
        "http://127.0.0.1:9",
        &home.0,
        &[&INFERENCE[..], &["--hf", QWEN3_30B_A3B]].concat(),
    );
    refused(&output(unreachable), &["cannot reach", "HF_HUB_OFFLINE"]);
    assert_eq!(hub.stats().requests, before);

    let no_range = Hub::start(HubOptions {
        ignore_range: true,
        ..HubOptions::default()
    });
    let out = output(vramfit(
        no_range.endpoint(),
        &home.0,
        &[&INFERENCE[..], &["--hf", QWEN3_30B_A3B]].concat(),
    ));
    refused(&out, &["ignored the Range"]);
    let read = no_range
        .settled_stats(std::time::Duration::from_secs(10))
        .body_bytes;
    assert!(read < 64 * MIB, "{read} B read from a server without Range");
}
