//! The launch commands round-trip: a serving scenario's command, read back with the same tables
//! that wrote it and applied to the scenario's model, GPU and runtime version, plans the same
//! deployment, and writes the same command again.

use vramfit_engine::estimate::{
    estimate, parse_launch_command, shell_quote, shell_split, Estimate, ModelSource,
};
use vramfit_engine::scenario::FIELDS;
use vramfit_engine::Scenario;

fn scenario(pairs: &str) -> Scenario {
    let mut s = Scenario::default();
    s.set("mode", "inference").unwrap();
    for pair in pairs.split_whitespace() {
        let (key, value) = pair.split_once('=').unwrap();
        s.set(key, value)
            .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    }
    s
}

/// The scenario with every field its runtime's command writes back at its default, and the
/// runtime unset: what is left is the model, the GPU and what no flag says (the runtime's
/// version, the card's free memory).
fn without_launch_fields(s: &Scenario) -> Scenario {
    let launch = s.runtime.rules().facts().launch.unwrap();
    let mut keys: Vec<&str> = launch.flags.iter().map(|f| f.key).collect();
    keys.push("runtime");
    if launch.parallel.is_some() {
        keys.extend(["gpus", "sharding"]);
    }
    let default = Scenario::default();
    let mut base = s.clone();
    for field in FIELDS.iter().filter(|f| keys.contains(&f.key)) {
        field.edit(&mut base, &field.get(&default)).unwrap();
    }
    base
}

/// What the deployment is: the stack on one GPU and what the runtime does with its pool.
fn plan(e: &Estimate) -> impl PartialEq + std::fmt::Debug {
    let serving = e.serving.as_ref().unwrap();
    (
        e.components
            .iter()
            .map(|c| (c.id.clone(), c.bytes))
            .collect::<Vec<_>>(),
        e.total_bytes,
        serving.kv_pool_bytes,
        serving.kv_tokens,
        serving.kv_blocks,
        serving.max_concurrency,
        serving.context_tokens,
        serving.starts,
        serving.host.bytes,
        serving
            .settings
            .iter()
            .map(|s| (s.key.clone(), s.value.clone()))
            .collect::<Vec<_>>(),
    )
}

/// Scenario → command → pairs on the scenario's model → the same plan and the same command.
fn round_trip(pairs: &str) -> String {
    let s = scenario(pairs);
    let first = estimate(&s).unwrap_or_else(|e| panic!("{pairs}: {e:?}"));
    let command = first.serving.as_ref().unwrap().command.clone();
    let command = command.unwrap_or_else(|| panic!("{pairs}: no command: {:?}", first.notes));
    let parsed = parse_launch_command(&command).unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(parsed.runtime, s.runtime, "{command}");
    let mut back = without_launch_fields(&s);
    for (key, value) in &parsed.pairs {
        back.set(key, value)
            .unwrap_or_else(|e| panic!("{command}: {key}={value}: {e}"));
    }
    let second = estimate(&back).unwrap_or_else(|e| panic!("{command}: {e:?}"));
    assert_eq!(plan(&second), plan(&first), "{pairs}\n{command}");
    assert_eq!(
        second.serving.unwrap().command.as_deref(),
        Some(command.as_str()),
        "{pairs}"
    );
    command
}

const VLLM: &str = "runtime=vllm model=llama-3.1-8b gpu=h100-80";
const SGLANG: &str = "runtime=sglang model=llama-3.1-8b gpu=h100-80";
const LLAMA_CPP: &str = "runtime=llama.cpp model=llama-3.1-8b gpu=rtx-4090";

#[test]
fn vllm_commands_round_trip() {
    let defaults = round_trip(VLLM);
    assert_eq!(
        defaults,
        "vllm serve meta-llama/Llama-3.1-8B --max-model-len 2048"
    );
    for extra in [
        "max-model-len=16384 gpu-memory-utilization=0.95 max-num-seqs=64 max-num-batched-tokens=4096 block-size=32 kv-dtype=fp8 enforce-eager=true",
        "cudagraph-mode=piecewise max-cudagraph-capture-size=256 attention-backend=triton",
        "profile-cudagraphs=false seq=8192",
        "gpu=a100-80 max-num-seqs=1024",
        "kv-cache-memory=20GiB max-model-len=auto",
    ] {
        round_trip(&format!("{VLLM} {extra}"));
    }
    let tp = round_trip(
        "runtime=vllm model=llama-3.1-70b gpu=l40s gpus=2 sharding=tensor weights=int4 max-model-len=8192",
    );
    assert_eq!(
        tp,
        "vllm serve MODEL --tensor-parallel-size 2 --max-model-len 8192"
    );
    let ep = round_trip("runtime=vllm model=qwen3-30b-a3b gpu=h100-80 gpus=2 sharding=expert");
    assert!(ep.contains("--tensor-parallel-size 2 --enable-expert-parallel"));
    round_trip("runtime=vllm model=qwen3-30b-a3b gpu=h100-80 gpus=2 sharding=pipeline");
    let hybrid = round_trip("runtime=vllm model=qwen3.5-9b gpu=h100-80 ssm-dtype=bf16");
    assert!(hybrid.contains("--mamba-ssm-cache-dtype bfloat16"));
}

#[test]
fn sglang_commands_round_trip() {
    assert_eq!(
        round_trip(SGLANG),
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --context-length 2048"
    );
    round_trip(&format!(
        "{SGLANG} max-model-len=32768 mem-fraction-static=0.8 max-num-seqs=128 max-num-batched-tokens=4096 kv-dtype=fp8"
    ));
    let ep = round_trip("runtime=sglang model=qwen3-30b-a3b gpu=h100-80 gpus=4 sharding=expert");
    assert!(ep.contains("--tp-size 4 --ep-size 4"));
    round_trip("runtime=sglang model=llama-3.1-70b gpu=h100-80 gpus=2 sharding=tensor");
}

#[test]
fn llama_server_commands_round_trip() {
    assert_eq!(
        round_trip(LLAMA_CPP),
        "llama-server -m MODEL.gguf -c 2048 -np 1 -ngl 33 -fa on"
    );
    round_trip(&format!(
        "{LLAMA_CPP} ctx-size=16384 parallel=4 kv-unified=true cache-type-k=q8_0 cache-type-v=q8_0 ubatch-size=1024"
    ));
    let offload = round_trip(&format!(
        "{LLAMA_CPP} n-gpu-layers=20 flash-attn=false ctx-size=32768"
    ));
    assert!(offload.contains("-ngl 20 -fa off"));
    let moe = round_trip(
        "runtime=llama.cpp model=qwen3-30b-a3b gpu=rtx-4090 quant=Q4_K_M n-cpu-moe=12 ctx-size=16384",
    );
    assert!(moe.ends_with("--n-cpu-moe 12"));
}

#[test]
fn a_setting_the_runtime_has_no_flag_for_gives_no_command_and_says_so() {
    let e = estimate(&scenario(&format!("{VLLM} kv-dtype=int8"))).unwrap();
    assert_eq!(e.serving.unwrap().command, None);
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("kv-dtype int8 has no --kv-cache-dtype value")));
}

#[test]
fn transformers_has_no_command() {
    let e = estimate(&scenario("model=llama-3.1-8b")).unwrap();
    assert!(e.serving.is_none());
}

#[test]
fn another_source_of_the_weights_is_named_and_quoted() {
    let s = scenario(LLAMA_CPP);
    let serving = estimate(&s).unwrap().serving.unwrap();
    let file = "/models/Llama 3.1 8B (it's Q4).gguf";
    let command = serving
        .launch_command(&s, &ModelSource::GgufFile(file.to_string()))
        .unwrap();
    assert!(command.starts_with(r"llama-server -m '/models/Llama 3.1 8B (it'\''s Q4).gguf' -c"));
    assert_eq!(parse_launch_command(&command).unwrap().model, file);
    let repo = ModelSource::GgufRepo("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M".into());
    let command = serving.launch_command(&s, &repo).unwrap();
    assert!(
        command.starts_with("llama-server -hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M -c")
    );
    // A checkpoint is not what llama-server loads: the placeholder stays.
    let checkpoint = ModelSource::Checkpoint("meta-llama/Llama-3.1-8B".into());
    assert!(serving
        .launch_command(&s, &checkpoint)
        .unwrap()
        .starts_with("llama-server -m MODEL.gguf"));
}

#[test]
fn words_are_quoted_for_a_posix_shell_and_split_back() {
    assert_eq!(
        shell_quote("meta-llama/Llama-3.1-8B"),
        "meta-llama/Llama-3.1-8B"
    );
    assert_eq!(shell_quote("0.95"), "0.95");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote("$HOME"), "'$HOME'");
    for word in [
        "",
        "a b",
        "it's",
        "\"q\"",
        "$HOME `x` \\ ;|&<>*?~#!",
        "tab\there",
        "new\nline",
    ] {
        let quoted = shell_quote(word);
        assert_eq!(shell_split(&quoted).unwrap(), vec![word], "{quoted}");
    }
    assert_eq!(
        shell_split("vllm serve \"my model\" \\\n  --max-model-len 4096 'a'\"b\"c\\ d").unwrap(),
        vec![
            "vllm",
            "serve",
            "my model",
            "--max-model-len",
            "4096",
            "abc d"
        ]
    );
    assert_eq!(shell_split(r#""a\"b\$c\d""#).unwrap(), vec![r#"a"b$c\d"#]);
    assert!(shell_split("'open").is_err());
    assert!(shell_split("\"open").is_err());
}

#[test]
fn pasted_commands_read_back_or_name_what_is_not_planned() {
    let parsed = parse_launch_command(
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2",
    )
    .unwrap();
    assert_eq!(parsed.model, "Qwen/Qwen3-8B");
    assert!(parsed.pairs.contains(&("sharding".into(), "tensor".into())));
    let err = parse_launch_command("vllm serve M --port 8000").unwrap_err();
    assert!(err.contains("--port"), "{err}");
    assert!(parse_launch_command("ollama run llama3").is_err());
    assert!(parse_launch_command("vllm serve M --kv-cache-dtype fp8_e5m2").is_err());
    // vLLM reads `500M` as 500 MiB (`human_readable_int`), and `-1` as `auto`.
    let parsed =
        parse_launch_command("vllm serve M --kv-cache-memory-bytes 500M --max-model-len -1")
            .unwrap();
    assert!(parsed
        .pairs
        .contains(&("kv-cache-memory".into(), format!("{}B", 500u64 << 20))));
    assert!(parsed
        .pairs
        .contains(&("max-model-len".into(), "-1".into())));
}
