//! The `vramfit` binary end to end (no GPU needed): `estimate --json` follows the
//! `vramfit.estimate/3` schema and equals the engine's own estimate; the chapter-62 lesson golden
//! holds through the CLI; the human output shows a table and the verdict; bad flags and invalid
//! scenarios exit 2 naming each bad field without a panic; `fit`, `tables --markdown` and `list`
//! answer; `--config` reads a Hugging Face config.json and names missing fields; `--gguf` reads a
//! GGUF header into llama.cpp with the file's exact tensors; `parse-smi` reads
//! a real 8×H100 nvidia-smi capture and rejects garbage; `--from-probe` budgets against the card's
//! total; `probe` without a driver exits 3 with its cause and the parse-smi hint; and every URL
//! query key is a `--key` flag.

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use vramfit_engine::query::scenario_from_query;
use vramfit_engine::scenario::KEYS;

const MIB: u64 = 1 << 20;

fn vramfit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vramfit"))
}

fn run(args: &[&str]) -> Output {
    vramfit().args(args).output().expect("the binary runs")
}

fn run_with_stdin(args: &[&str], input: &str) -> Output {
    let mut child = vramfit()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("stdin accepts the input");
    child.wait_with_output().expect("the binary exits")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a command that must succeed and print exactly one JSON value.
fn json(args: &[&str]) -> Value {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "{args:?} did not print one JSON value: {e}\n{}",
            stdout(&out)
        )
    })
}

fn assert_no_panic(out: &Output) {
    let err = stderr(out);
    assert!(
        !err.contains("panicked") && !err.contains("backtrace") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
}

/// A command that must be refused as bad input: exit 2, each field named, no panic.
fn assert_rejected(args: &[&str], fields: &[&str]) -> String {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_no_panic(&out);
    assert!(out.stdout.is_empty(), "{args:?} printed {}", stdout(&out));
    for field in fields {
        assert!(
            err.contains(&format!("invalid {field}: ")),
            "{args:?} does not name {field}: {err}"
        );
    }
    err
}

/// A file under the temp directory, unique to this process, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: impl AsRef<[u8]>) -> TempFile {
        let path =
            std::env::temp_dir().join(format!("vramfit-cli-test-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("temp file written");
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn smi_fixture(name: &str) -> String {
    format!(
        "{}/../smi/tests/fixtures/nvidia-smi/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

const H100_X8_TABLE: &str = "table__h100-80gb-hbm3-x8__550.90.07__linux.txt";

const LLAMA_CONFIG: &str = r#"{
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "vocab_size": 128256,
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "rope_theta": 500000.0,
  "torch_dtype": "bfloat16"
}"#;

/// Checks the `vramfit.estimate/3` shape and returns the total.
fn check_estimate_json(e: &Value) -> u64 {
    assert_eq!(e["schema"], "vramfit.estimate/3");
    let components = e["components"].as_array().expect("components is an array");
    assert!(!components.is_empty());
    let mut sum = 0u64;
    for c in components {
        for key in ["id", "label", "formula"] {
            assert!(
                c[key].as_str().is_some_and(|s| !s.is_empty()),
                "component {key}: {c}"
            );
        }
        sum += c["bytes"].as_u64().unwrap_or_else(|| panic!("bytes: {c}"));
    }
    let total = e["total_bytes"].as_u64().expect("total_bytes is a number");
    assert_eq!(total, sum, "total_bytes is the sum of the components");
    assert!(
        matches!(e["verdict"].as_str(), Some("fits" | "tight" | "oom")),
        "verdict: {}",
        e["verdict"]
    );
    total
}

#[test]
fn estimate_json_follows_the_schema() {
    for args in [
        &["estimate", "--json"][..],
        &[
            "estimate",
            "--json",
            "--model",
            "llama-3.1-8b",
            "--mode",
            "qlora",
            "--checkpointing",
            "full",
        ],
        &[
            "estimate",
            "--json",
            "--model",
            "qwen2.5-7b",
            "--mode",
            "inference",
            "--weights",
            "int4",
            "--gpu",
            "l4",
        ],
    ] {
        let e = json(args);
        check_estimate_json(&e);
        assert!(e["components"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == "weights"));
    }
}

#[test]
fn the_lesson_golden_holds_through_the_cli() {
    let e = json(&[
        "estimate",
        "--json",
        "--params",
        "8B",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--method",
        "lesson",
        "--weights",
        "fp16",
    ]);
    assert_eq!(check_estimate_json(&e), 97_573_741_824);
    assert_eq!(e["method"], "lesson");
}

#[test]
fn human_output_has_a_table_and_the_verdict() {
    for (args, verdict) in [
        (&["estimate"][..], "OOM"),
        (
            &["estimate", "--model", "smollm2-135m", "--mode", "inference"][..],
            "FITS",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default();
        assert!(
            header.starts_with("component")
                && header.contains("memory")
                && header.contains("formula"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("Model weights")),
            "{text}"
        );
        assert!(text.contains("total per GPU"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("verdict") && l.trim_end().ends_with(verdict)),
            "{text}"
        );
    }
}

#[test]
fn bad_flags_exit_2_and_name_each_field() {
    let cases: [(&[&str], &[&str]); 5] = [
        (&["--batch", "-1"], &["batch"]),
        (&["--batch", "abc"], &["batch"]),
        (&["--gpu", "nope"], &["gpu"]),
        (&["--mode", "qlora", "--weights", "bf16"], &["weights"]),
        (&["--vram", "0"], &["vram"]),
    ];
    for (flags, fields) in cases {
        for command in ["estimate", "fit", "tables"] {
            let mut args = vec![command];
            args.extend_from_slice(flags);
            assert_rejected(&args, fields);
            args.push("--json");
            assert_rejected(&args, fields);
        }
    }
    // Several at once: every one is named, not just the first.
    let err = assert_rejected(
        &[
            "estimate", "--batch", "-1", "--gpu", "nope", "--vram", "0", "--seq", "2.5",
        ],
        &["batch", "gpu", "vram", "seq"],
    );
    assert_eq!(err.lines().count(), 4, "{err}");
    // A flag that does not exist is clap's usage error, also exit 2.
    let out = run(&["estimate", "--batchsize", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert_no_panic(&out);
    assert!(stderr(&out).contains("--batchsize"));
}

#[test]
fn fit_json_gives_max_batch_and_a_ladder_that_ends_fitting() {
    let scenario = [
        "--params", "8B", "--layers", "32", "--hidden", "4096", "--mode", "full", "--batch", "4",
        "--gpu", "t4",
    ];
    let mut args = vec!["fit", "--json"];
    args.extend(scenario);
    let fit = json(&args);
    assert_eq!(fit["schema"], "vramfit.fit/1");
    let object = fit.as_object().unwrap();
    assert!(object.contains_key("max_batch"), "{fit}");
    assert!(
        fit["max_batch"].is_null(),
        "a full 8B fine-tune does not fit a T4 at batch 1"
    );
    let ladder = fit["ladder"].as_array().expect("a ladder");
    assert!(ladder.len() >= 3, "{fit}");
    let (last, before) = ladder.split_last().unwrap();
    // The ladder stops at the first step that runs, tight or not.
    assert!(
        matches!(last["verdict"].as_str(), Some("fits" | "tight")),
        "{fit}"
    );
    assert!(before.iter().all(|step| step["verdict"] == "oom"), "{fit}");
    for step in ladder {
        assert!(step["action"].as_str().is_some_and(|a| !a.is_empty()));
    }

    // Applying the last step's changes as flags gives the step's own total, and it fits. Flags
    // may be given once each, so a change replaces the scenario's own value.
    let mut flags: Vec<(String, String)> = scenario
        .chunks(2)
        .map(|kv| {
            (
                kv[0].trim_start_matches("--").to_string(),
                kv[1].to_string(),
            )
        })
        .collect();
    for change in last["changes"].as_array().unwrap() {
        let key = change[0].as_str().unwrap().to_string();
        flags.retain(|(k, _)| *k != key);
        flags.push((key, change[1].as_str().unwrap().to_string()));
    }
    let mut applied = vec!["estimate".to_string(), "--json".to_string()];
    for (key, value) in flags {
        applied.extend([format!("--{key}"), value]);
    }
    let applied: Vec<&str> = applied.iter().map(String::as_str).collect();
    let e = json(&applied);
    assert_eq!(e["total_bytes"], last["total_bytes"]);
    assert_ne!(e["verdict"], "oom");

    // A scenario that fits has a max batch, and a target batch splits into micro × accumulation.
    let fit = json(&[
        "fit",
        "--json",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "qlora",
        "--gpu",
        "h100-80",
        "--target-batch",
        "64",
    ]);
    let max = fit["max_batch"].as_u64().expect("a max batch");
    let micro = fit["micro_batch"].as_u64().unwrap();
    let accum = fit["grad_accum"].as_u64().unwrap();
    assert!(micro <= max && micro * accum >= 64, "{fit}");
    assert!(fit["ladder"].as_array().unwrap().is_empty());
}

#[test]
fn tables_markdown_has_the_four_tables() {
    let out = run(&["tables", "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for title in [
        "### Inference (model loading only)",
        "### Training (QLoRA with gradient checkpointing)",
        "### GPU recommendations (largest preset that fits)",
        "### VRAM budget table for GeForce RTX 4090 24GB",
    ] {
        assert!(text.contains(title), "missing {title}:\n{text}");
    }
    assert_eq!(text.matches("\n### ").count() + 1, 4, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with('|') && l.contains("---")),
        "{text}"
    );
}

#[test]
fn list_models_search_needs_every_word() {
    let found = json(&["list", "models", "--json", "--search", "qwen3 30"]);
    let ids: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["qwen3-30b-a3b"]);
    let table = stdout(&run(&["list", "models", "--search", "llama 70"]));
    assert_eq!(
        table.lines().count(),
        4,
        "a header and three 70B Llamas:\n{table}"
    );
}

#[test]
fn list_json_has_the_catalogues() {
    let models = json(&["list", "models", "--json"]);
    let ids: Vec<&str> = models
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"llama-3.1-8b"), "{ids:?}");
    let gpus = json(&["list", "gpus", "--json"]);
    let h100 = gpus
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "h100-80")
        .expect("h100-80 is listed");
    assert_eq!(h100["capacity_bytes"].as_u64(), Some(81559 * MIB));
    assert_eq!(h100["unified"], false);
    let mac = gpus
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "m4-max-64")
        .expect("m4-max-64 is listed");
    // Three quarters of 64 GiB: Metal's working set on a 64 GB Mac.
    assert_eq!(mac["unified"], true);
    assert_eq!(mac["capacity_bytes"].as_u64(), Some(48 * 1024 * MIB));
}

#[test]
fn config_json_gives_the_shape() {
    let config = TempFile::new("llama-config.json", LLAMA_CONFIG);
    let from_config = json(&[
        "estimate",
        "--json",
        "--config",
        config.path(),
        "--mode",
        "lora",
    ]);
    let from_preset = json(&[
        "estimate",
        "--json",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "lora",
    ]);
    assert_eq!(from_config["total_bytes"], from_preset["total_bytes"]);
    assert_eq!(from_config["params"], from_preset["params"]);
    // A flag after --config overrides the config's field.
    let fewer = json(&[
        "estimate",
        "--json",
        "--config",
        config.path(),
        "--layers",
        "16",
    ]);
    assert_eq!(fewer["scenario"]["layers"], 16);

    let broken = TempFile::new("broken-config.json", r#"{"hidden_size": 4096}"#);
    let err = assert_rejected(&["estimate", "--config", broken.path()], &["config"]);
    for missing in ["num_hidden_layers", "num_attention_heads", "vocab_size"] {
        assert!(err.contains(missing), "{err}");
    }
    assert_rejected(
        &["estimate", "--config", "/nonexistent/config.json"],
        &["config"],
    );
    let not_json = TempFile::new("not-json.json", "{ hidden_size: 4096 ");
    let err = assert_rejected(&["fit", "--config", not_json.path()], &["config"]);
    assert!(err.contains("not valid JSON"), "{err}");
}

const GGUF_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf"
);

/// Llama-3.1-8B-Instruct Q4_K_M: all tensor data, and token_embd's Q4_K share of it.
const GGUF_TENSOR_BYTES: u64 = 4_912_898_304;
const GGUF_TOKEN_EMBD_BYTES: u64 = 295_501_824;

fn component(estimate: &Value, list: &str, id: &str) -> u64 {
    let list = match list {
        "gpu" => &estimate["components"],
        _ => &estimate["serving"]["host_components"],
    };
    list.as_array()
        .and_then(|l| l.iter().find(|c| c["id"] == id))
        .and_then(|c| c["bytes"].as_u64())
        .unwrap_or(0)
}

/// `estimate` prints the command that starts the planned deployment in its serving section and
/// its JSON (`serving.command`); `fit` ends its serving plan with it. A `--gguf` file is the
/// command's `-m`, quoted for the shell.
#[test]
fn serving_scenarios_print_their_launch_command() {
    let vllm = [
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
        "--runtime",
        "vllm",
        "--gpu",
        "h100-80",
        "--max-model-len",
        "16384",
        "--gpu-memory-utilization",
        "0.95",
    ];
    let expected =
        "vllm serve meta-llama/Llama-3.1-8B --max-model-len 16384 --gpu-memory-utilization 0.95";
    let text = stdout(&run(&[&["estimate"][..], &vllm].concat()));
    assert!(
        text.contains(&format!("\nlaunch         {expected}\n")),
        "{text}"
    );
    let e = json(&[&["estimate", "--json"][..], &vllm].concat());
    assert_eq!(e["serving"]["command"], expected);
    let plan = stdout(&run(&[&["fit"][..], &vllm].concat()));
    assert!(
        plan.ends_with(&format!("\nlaunch              {expected}\n")),
        "{plan}"
    );
    assert_eq!(
        json(&[&["fit", "--json"][..], &vllm].concat())["command"],
        expected
    );

    let file = TempFile::new("my model's.gguf", std::fs::read(GGUF_FIXTURE).unwrap());
    let e = json(&["estimate", "--json", "--gguf", file.path()]);
    let command = e["serving"]["command"].as_str().unwrap();
    let quoted = format!("'{}'", file.path().replace('\'', r"'\''"));
    assert!(
        command.starts_with(&format!(
            "llama-server -m {quoted} -c 2048 -np 1 -ngl 33 -fa on"
        )),
        "{command}"
    );
    // Training and transformers have no runtime to launch.
    let e = json(&[
        "estimate",
        "--json",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
    ]);
    assert!(e["serving"].is_null());
}

#[test]
fn a_gguf_header_gives_llama_cpp_with_the_files_exact_tensors() {
    let told = stderr(&run(&["estimate", "--gguf", GGUF_FIXTURE]));
    assert!(
        told.contains("Meta Llama 3.1 8B Instruct") && told.contains("4,912,898,304 B"),
        "{told}"
    );
    let all = json(&["estimate", "--json", "--gguf", GGUF_FIXTURE]);
    assert_eq!(all["scenario"]["runtime"], "llama.cpp");
    assert_eq!(all["scenario"]["quant"], "Q4_K_M");
    assert_eq!(all["scenario"]["layers"], 32);
    assert_eq!(all["scenario"]["kv-heads"], 8);
    // token_embd stays in system RAM; everything else is on the GPU.
    assert_eq!(
        component(&all, "gpu", "weights"),
        GGUF_TENSOR_BYTES - GGUF_TOKEN_EMBD_BYTES
    );
    assert_eq!(component(&all, "host", "weights"), GGUF_TOKEN_EMBD_BYTES);
    // Split by -ngl, the GPU and system RAM still hold the file's bytes exactly.
    let partial = json(&[
        "estimate",
        "--json",
        "--gguf",
        GGUF_FIXTURE,
        "--n-gpu-layers",
        "17",
    ]);
    assert_eq!(
        component(&partial, "gpu", "weights") + component(&partial, "host", "weights"),
        GGUF_TENSOR_BYTES
    );
    assert!(component(&partial, "gpu", "weights") < component(&all, "gpu", "weights"));

    // Only the header is read: what follows it does not matter.
    let mut bytes = std::fs::read(GGUF_FIXTURE).unwrap();
    let header_len = bytes.len();
    bytes.resize(header_len + (1 << 20), 0xAB);
    let padded = TempFile::new("padded.gguf", &bytes);
    let from_padded = json(&["estimate", "--json", "--gguf", padded.path()]);
    assert_eq!(from_padded["total_bytes"], all["total_bytes"]);

    let cut = TempFile::new("cut.gguf", &bytes[..header_len / 2]);
    let err = assert_rejected(&["estimate", "--gguf", cut.path()], &["gguf"]);
    assert!(err.contains("incomplete"), "{err}");
    let not_gguf = TempFile::new("config.gguf", LLAMA_CONFIG);
    let err = assert_rejected(&["estimate", "--gguf", not_gguf.path()], &["gguf"]);
    assert!(err.contains("not a GGUF file"), "{err}");
}

/// The 8×H100 capture as parse-smi's JSON.
fn h100_snapshot() -> Value {
    json(&["parse-smi", &smi_fixture(H100_X8_TABLE), "--json"])
}

#[test]
fn parse_smi_reads_a_real_capture_and_rejects_garbage() {
    let snapshot = h100_snapshot();
    let gpus = snapshot["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 8);
    for gpu in gpus {
        assert_eq!(
            gpu["memory"]["total_bytes"].as_u64(),
            Some(81559 * MIB),
            "{gpu}"
        );
    }
    // The same capture through stdin.
    let capture = std::fs::read_to_string(smi_fixture(H100_X8_TABLE)).unwrap();
    let out = run_with_stdin(&["parse-smi", "--json"], &capture);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let piped: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(piped["gpus"], snapshot["gpus"]);

    for garbage in ["", "garbage\n", "{\"gpus\": 3}", "| 0 NVIDIA | 1MiB / |"] {
        for args in [&["parse-smi"][..], &["parse-smi", "--json"]] {
            let out = run_with_stdin(args, garbage);
            assert_eq!(out.status.code(), Some(2), "{garbage:?}: {}", stderr(&out));
            assert_no_panic(&out);
            assert!(out.stdout.is_empty());
            assert!(stderr(&out).starts_with("vramfit: "), "{}", stderr(&out));
        }
    }
    let out = run(&["parse-smi", "/nonexistent/smi.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert_no_panic(&out);
}

#[test]
fn parse_smi_reads_a_macs_sysctl_as_its_working_set() {
    // archspec-json's `sysctl` capture of a 64 GB M4 Max: Metal may wire three quarters.
    let capture = format!(
        "{}/../smi/tests/fixtures/macos/sysctl-a-excerpt__apple-m4-max-64gb__macos-15.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let snapshot = json(&["parse-smi", &capture, "--json"]);
    assert_eq!(snapshot["source"], "macos");
    let gpu = &snapshot["gpus"][0];
    assert_eq!(gpu["name"], "Apple M4 Max");
    assert_eq!(gpu["memory"]["total_bytes"].as_u64(), Some(49152 * MIB));
    assert!(gpu["memory"]["used_bytes"].is_null());
}

#[test]
fn parse_smi_reads_amd_smis_default_view_and_csv() {
    // AMD's example of `amd-smi` alone (ROCm 7.0 changelog): eight MI300X, 4976 MiB used each.
    let capture = format!(
        "{}/../smi/tests/fixtures/amd-smi/default__mi300x-x8__amd-smi-26.0.0-rocm-7.0-changelog.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let snapshot = json(&["parse-smi", &capture, "--json"]);
    assert_eq!(snapshot["source"], "amd_smi");
    let gpus = snapshot["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 8);
    assert_eq!(gpus[0]["name"], "AMD Instinct MI300X");
    assert_eq!(
        gpus[0]["memory"]["total_bytes"].as_u64(),
        Some(196592 * MIB)
    );
    assert_eq!(gpus[0]["memory"]["used_bytes"].as_u64(), Some(4976 * MIB));
    let out = run_with_stdin(
        &["parse-smi", "--json"],
        "gpu,total_vram,used_vram,free_vram\n0,16368,905,15463\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let csv: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(csv["source"], "amd_smi");
    assert_eq!(
        csv["gpus"][0]["memory"]["free_bytes"].as_u64(),
        Some(15463 * MIB)
    );
}

#[test]
fn from_probe_budgets_against_the_card_total() {
    let snapshot = TempFile::new(
        "h100-snapshot.json",
        serde_json::to_string(&h100_snapshot()).unwrap(),
    );
    let e = json(&[
        "estimate",
        "--json",
        "--from-probe",
        snapshot.path(),
        "--model",
        "llama-3.1-8b",
        "--mode",
        "lora",
    ]);
    assert_eq!(e["capacity_bytes"].as_u64(), Some(81559 * MIB));
    // What the card already holds (1 MiB) counts as reserved.
    assert_eq!(e["scenario"]["reserved"].as_u64(), Some(MIB));
    // The raw nvidia-smi capture works as well as the JSON.
    let raw = json(&[
        "estimate",
        "--json",
        "--from-probe",
        &smi_fixture(H100_X8_TABLE),
        "--probe-gpu",
        "7",
    ]);
    assert_eq!(raw["capacity_bytes"].as_u64(), Some(81559 * MIB));
    // Where the output gives free memory, the driver's reserve is taken too: total − free.
    let q = smi_fixture("q__l40s__595.80__linux.txt");
    let card = &json(&["parse-smi", &q, "--json"])["gpus"][0]["memory"];
    let (total, free) = (card["total_bytes"].as_u64(), card["free_bytes"].as_u64());
    let planned = json(&["estimate", "--json", "--from-probe", &q]);
    assert_eq!(planned["capacity_bytes"].as_u64(), total);
    assert_eq!(
        planned["scenario"]["reserved"].as_u64(),
        total.zip(free).map(|(t, f)| t - f)
    );
    // One MIG slice of an H100: its own 20096 MiB, not the card's 81559.
    let mig_table = smi_fixture("table__h100-mig__590.48.01__linux.txt");
    let slice = json(&[
        "estimate",
        "--json",
        "--from-probe",
        &mig_table,
        "--probe-mig",
        "1",
    ]);
    assert_eq!(slice["capacity_bytes"].as_u64(), Some(20096 * MIB));
    assert_eq!(slice["scenario"]["reserved"].as_u64(), Some(17 * MIB));
    assert_rejected(
        &["estimate", "--from-probe", &mig_table, "--probe-mig", "4"],
        &["from-probe"],
    );
    assert_rejected(
        &[
            "estimate",
            "--from-probe",
            snapshot.path(),
            "--probe-gpu",
            "8",
        ],
        &["from-probe"],
    );
    let garbage = TempFile::new("garbage-probe.txt", "not a snapshot");
    assert_rejected(
        &["estimate", "--from-probe", garbage.path()],
        &["from-probe"],
    );
}

#[test]
fn probe_without_a_driver_exits_3_with_the_cause_and_the_hint() {
    let out = run(&["probe"]);
    if out.status.success() {
        // NVML loaded: this machine has a driver, and the no-driver path cannot be tested here.
        return;
    }
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_no_panic(&out);
    assert!(out.stdout.is_empty());
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.starts_with("vramfit: ") && l.len() > "vramfit: ".len()),
        "{err}"
    );
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.contains("nvidia-smi | vramfit parse-smi")),
        "{err}"
    );
    assert!(lines.len() <= 3, "the cause is short: {err}");
}

#[test]
fn every_query_key_is_a_flag() {
    for command in ["estimate", "fit", "tables"] {
        let out = run(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        let help = stdout(&out);
        for key in KEYS {
            assert!(
                help.contains(&format!("--{key} <")),
                "`{command} --help` does not list --{key}:\n{help}"
            );
        }
    }
}

/// Every key at once, through flags and through the URL query: the CLI's estimate is the engine's.
#[test]
fn flags_and_query_give_the_same_estimate() {
    let query =
        "model=llama-3.2-1b&params=1.2B&checkpoint-weights=bf16,1000,2000,0,0,3000:1000*16&layers=16&hidden=2048&heads=32&kv-heads=8&head-dim=64\
        &ffn=8192&vocab=128256&tied=true&gated=true&experts=0&experts-per-token=0&expert-ffn=0\
        &shared-ffn=0&dense-layers=0&capacity-factor=1.25&q-lora-rank=0&kv-lora-rank=0&rope-head-dim=0&v-head-dim=0\
        &attention-gate=true&fused-qkv=false&sliding-window=512&sliding-layers=8&vision-layers=0&vision-hidden=0&vision-ffn=0&vision-patch=0&vision-image=0&vision-merge=0\
        &recurrent-layers=0&recurrent-heads=0&recurrent-head-dim=0&recurrent-state=0&recurrent-groups=0\
        &recurrent-conv=0&ssm-dtype=bf16&no-attention-layers=0&no-mlp-layers=0&mtp-layers=0&rope-positions=131072&rope-local-positions=0&rotary-dim=32&mtp=false&mla-cache=expanded\
        &head=lm&mode=qlora&runtime=transformers&max-model-len=4096&max-num-seqs=64\
        &max-num-batched-tokens=2048&vllm-version=0.19&gpu-memory-utilization=0.85&kv-cache-memory=20GiB&block-size=32&enforce-eager=true\
        &profile-cudagraphs=false&model-runner-v2=true&cudagraph-mode=piecewise&max-cudagraph-capture-size=256&attention-backend=triton&speculative-tokens=2&prefix-caching=true\
        &sglang-version=0.5.9&mem-fraction-static=0.8&max-total-tokens=100000&llama-cpp-build=b7000&quant=Q5_K_M&gguf-weights=1000,2000,3000:1000*16&n-gpu-layers=20&offload-output=last&ctx-size=8192&parallel=2&kv-unified=true\
        &cache-type-k=q8_0&cache-type-v=q8_0&flash-attn=true&ubatch-size=256&logit-rows=ubatch&kq-mask=f32&gpu-backend=vulkan&tensor-split=3,1&n-cpu-moe=0&fit=false&mlx-lm-version=0.26.4&mlx-bits=4&mlx-group-size=32&prefill-step-size=512&max-kv-size=4096&kv-bits=8&kv-group-size=32&quantized-kv-start=0&host-bandwidth=60&network=1600&weights=nf4&quantized=all-linear&grads=bf16&adapter-dtype=fp32\
        &act-dtype=bf16&kv-dtype=fp8&optimizer=adamw-8bit&optimizer-step=for-loop&paged-optimizer=true&float8=off&master-weights=false&batch=4&concurrency=4&seq=1024\
        &prompt=512&cache=static&max-cache-len=2048&kept-scores=scores&grad-accum=8&images=0&checkpointing=selective&checkpoint-every=2&compile=true&offload-activations=true&attention=eager&lora-rank=32&lora-targets=all&lora-dropout=true\
        &double-quant=true&quant-kernel=torchao-wo&int4-layout=tinygemm&int4-group=64&quant-head=true&nf4-kernel=bnb-legacy&quantize-moe-experts=false&loss=chunked&logits-dtype=activations&kbit-prep=peft&dropout=true&attention-dropout=true&method=detailed\
        &gpu=t4&devices=t4&vram=15GiB&wired-limit=40GiB&gpus=2&cp=2\
        &sharding=zero3&tp=1&sequence-parallel=off&replicas=1&offload=optimizer&reserved=1GiB&wsl2=true&margin=500MiB&context=600MiB&tight=90\
        &units=gib&custom=RSSM%20dynamics:500MiB&custom=replay%20buffer:1GiB";
    let (scenario, errors) = scenario_from_query(query);
    assert!(errors.is_empty(), "{errors:?}");
    let pairs: Vec<(&str, String)> = query
        .split('&')
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (k, v.replace("%20", " "))
        })
        .collect();
    let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| *k).collect();
    keys.dedup();
    assert_eq!(keys, KEYS, "the query covers every key, in KEYS order");

    let mut args = vec!["estimate".to_string(), "--json".to_string()];
    for (key, value) in &pairs {
        args.push(format!("--{key}"));
        args.push(value.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cli = json(&args);
    let engine = serde_json::to_value(vramfit_engine::estimate(&scenario).unwrap()).unwrap();
    assert_eq!(cli, engine);
}

#[test]
fn every_scenario_flag_says_what_it_takes() {
    let help = stdout(&run(&["estimate", "--help"]));
    for key in KEYS {
        let flag = format!("--{key} <VALUE>");
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&flag))
            .unwrap_or_else(|| panic!("{flag} is not in --help"));
        let text = line.trim_start()[flag.len()..].trim();
        assert!(!text.is_empty(), "{flag} has no help text");
    }
}

#[test]
fn list_prints_headed_aligned_tables() {
    let models = stdout(&run(&["list", "models"]));
    let mut lines = models.lines();
    let header = lines.next().unwrap();
    for column in [
        "id",
        "name",
        "family",
        "params",
        "active",
        "checkpoint",
        "layers",
        "hidden",
        "heads/kv",
        "vocab",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let llama = lines
        .find(|l| l.starts_with("llama-3.1-8b "))
        .expect("llama-3.1-8b is listed");
    assert!(llama.contains("8.03B") && llama.contains("32/8"), "{llama}");
    let deepseek = lines
        .find(|l| l.starts_with("deepseek-v3 "))
        .expect("deepseek-v3 is listed");
    assert!(
        deepseek.contains("mla-moe") && deepseek.contains("37.55B") && deepseek.contains("fp8"),
        "total, active and checkpoint format: {deepseek}"
    );
    assert!(!models.contains('\t'), "aligned with spaces, not tabs");
    // Every row's second column starts where the header's does.
    let name_at = header.find("name").unwrap();
    for line in models.lines().skip(1) {
        assert_eq!(&line[name_at - 2..name_at], "  ", "{line}");
    }

    let gpus = stdout(&run(&["list", "gpus"]));
    let header = gpus.lines().next().unwrap();
    for column in ["id", "name", "advertised", "capacity", "MiB"] {
        assert!(header.contains(column), "{header}");
    }
    let h100 = gpus
        .lines()
        .find(|l| l.starts_with("h100-80 "))
        .expect("h100-80 is listed");
    assert!(
        h100.contains("81559 MiB") && h100.contains("79.65 GiB"),
        "{h100}"
    );
}

#[test]
fn parse_smi_prints_each_warning_once_on_its_own_line() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../smi/tests/fixtures/nvidia-smi/nvitop-api-snapshot__rtx-2080-ti-x10__readme-example.txt",
    );
    let out = run(&["parse-smi", fixture.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    let warning = "read from nvitop's Python REPL output";
    assert_eq!(all.matches(warning).count(), 1, "{all}");
    let line = all.lines().find(|l| l.contains(warning)).unwrap();
    assert!(
        line.starts_with("warning: ") && line.matches("warning:").count() == 1,
        "{line}"
    );
}

/// `estimate --accuracy` shows, for each speed figure, the held-out published rows of the
/// scenario's speed kind: as many as `cargo xtask accuracy`'s held-out table counts for it.
#[test]
fn accuracy_shows_the_speed_kinds_held_out_rows() {
    use vramfit_engine::accuracy::{compare_speed, summarize_speed};
    let read = calibration;
    let (rows, _) = compare_speed(&read("speed-measured.csv"), &read("speed-scenarios.csv"));
    let held_out: Vec<_> = rows.into_iter().filter(|r| r.fit.is_none()).collect();
    let counted = |kind: &str| {
        summarize_speed(&held_out)
            .iter()
            .find(|s| s.kind == kind)
            .map_or(0, |s| s.rows)
    };
    let args = [
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
        "--runtime",
        "llama.cpp",
        "--gpu",
        "rtx-4090",
        "--accuracy",
    ];
    let e = json(&[&args[..], &["--json"]].concat());
    let figures = e["accuracy"]["speed"]["figures"].as_array().unwrap();
    let decode = figures
        .iter()
        .find(|f| f["figure"] == "decode_tokens_per_s")
        .expect("a decode figure");
    let kind = "llama.cpp CUDA decode, memory-bound, dense, consumer";
    assert_eq!(decode["kind"], kind);
    assert_eq!(decode["shown"], kind, "enough rows of its own: not widened");
    assert!(decode["note"].is_null());
    let rows = decode["group"]["rows"].as_u64().unwrap() as usize;
    assert!(rows >= 5, "{rows}");
    assert_eq!(rows, counted(kind));
    let in_band = decode["group"]["in_band"].as_u64().unwrap() as usize;
    assert!(in_band <= decode["group"]["banded"].as_u64().unwrap() as usize);
    assert!(figures
        .iter()
        .any(|f| f["figure"] == "prefill_tokens_per_s"));

    let text = stdout(&run(&args));
    assert!(text.contains("speed accuracy for runs like this"), "{text}");
    assert!(text.contains(&format!("{kind}  ")), "{text}");

    // A kind with too few rows of its own is widened, and the note names both.
    let lora = stdout(&run(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "lora",
        "--gpu",
        "rtx-4090",
        "--accuracy",
    ]));
    assert!(
        lora.contains("of lora training, dense, consumer (fewer than 5): shown for lora training"),
        "{lora}"
    );
    // A runtime no held-out speed row measures says so.
    let transformers = stdout(&run(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
        "--gpu",
        "rtx-4090",
        "--accuracy",
    ]));
    assert!(
        transformers.contains("No held-out published speed measurement validates transformers"),
        "{transformers}"
    );
}

/// `estimate --accuracy` shows the figures of the scenario's kind of run, the ones the engine
/// computes from calibration/ (and `cargo xtask accuracy` prints), and says plainly when too few
/// published runs are like it.
#[test]
fn accuracy_shows_the_kind_of_runs_figures() {
    use vramfit_engine::accuracy::{validation, KindAccuracy, RunKind};
    let read = calibration;
    let summaries = validation(
        &read("measured-public.csv"),
        &read("scenarios.csv"),
        &read("runtime-logs.csv"),
    );
    let qlora = [
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "qlora",
        "--accuracy",
    ];
    let e = json(&[&qlora[..], &["--json"]].concat());
    let (scenario, _) = scenario_from_query("model=llama-3.1-8b&mode=qlora");
    let expected = KindAccuracy::of(&summaries, RunKind::of(&scenario).unwrap());
    let mut memory = e["accuracy"].clone();
    memory.as_object_mut().unwrap().remove("speed");
    assert_eq!(memory, serde_json::to_value(&expected).unwrap());
    assert_eq!(e["accuracy"]["kind"], "qlora");
    assert!(e["accuracy"]["figures"][0]["rows"].as_u64().unwrap() >= 5);
    assert!(
        e["total_bytes"].as_u64().unwrap() > 0,
        "the estimate is still there"
    );

    let text = stdout(&run(&qlora));
    assert!(text.contains("verdict"), "{text}");
    assert!(
        text.contains("accuracy for QLoRA on one GPU (qlora)"),
        "{text}"
    );
    assert!(text.contains("source: Lightning-AI/litgpt"), "{text}");

    let fp8 = |extra: &[&str]| {
        let mut args = vec![
            "estimate",
            "--model",
            "llama-3.1-8b",
            "--mode",
            "inference",
            "--weights",
            "fp8",
            "--accuracy",
        ];
        args.extend_from_slice(extra);
        stdout(&run(&args))
    };
    let one_gpu = fp8(&[]);
    assert!(
        one_gpu.contains("published measurements validate this kind of run: too few"),
        "{one_gpu}"
    );
    let sharded = fp8(&["--gpus", "2"]);
    assert!(
        sharded.contains("No published measurement validates this kind of run yet"),
        "{sharded}"
    );
    let without = json(&["estimate", "--model", "llama-3.1-8b", "--json"]);
    assert!(without.get("accuracy").is_none(), "only when asked");
}

#[test]
fn unlike_gpus_get_a_plan_each_in_json_and_text() {
    let args = [
        "estimate",
        "--mode",
        "inference",
        "--runtime",
        "llama.cpp",
        "--model",
        "llama-3.1-8b",
        "--sharding",
        "pipeline",
        "--devices",
        "rtx-4090,rtx-3090",
        "--gpus",
        "2",
    ];
    let e = json(&[&args[..], &["--json"]].concat());
    // The existing keys stay, as the fullest device's; `devices` adds one plan per GPU.
    let total = check_estimate_json(&e);
    let devices = e["devices"].as_array().expect("devices is an array");
    let placed: Vec<(u64, bool)> = devices
        .iter()
        .map(|d| (d["blocks"].as_u64().unwrap(), d["output_layer"] == true))
        .collect();
    // 17 blocks on the 4090, 15 and the output layer on the 3090 (crates/engine/tests/mixed_gpus.rs).
    assert_eq!(placed, [(17, false), (15, true)]);
    assert_eq!(devices[0]["gpu"], "rtx-4090");
    assert!(devices
        .iter()
        .any(|d| d["total_bytes"].as_u64() == Some(total)));
    let text = stdout(&run(&args));
    assert!(text.contains("per device"), "{text}");
    assert!(text.contains("15 + output"), "{text}");
    assert!(text.contains("fullest of 2:"), "{text}");
    assert_rejected(
        &[&args[..], &["--tensor-split", "1,2,3"]].concat(),
        &["tensor-split"],
    );
}

/// A file of calibration/, as the accuracy tests read it.
fn calibration(name: &str) -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../calibration")
            .join(name),
    )
    .expect("calibration file")
}
