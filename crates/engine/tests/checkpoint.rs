//! A checkpoint's tensor bytes (`checkpoint-weights`) are the weights exactly when they stand for
//! them, and are named as unused when they do not.

use vramfit_engine::estimate::ComponentId;
use vramfit_engine::model::{parse_hf_config, read_checkpoint};
use vramfit_engine::{estimate, Estimate, Scenario};
use vramfit_safetensors::{Dtype, Header};

const QWEN3_0_6B: &str = include_str!("fixtures/hf-configs/qwen3-0.6b.json");

/// Qwen3-0.6B's tensors as transformers' `Qwen3ForCausalLM` names them, in bf16.
fn qwen3_0_6b() -> Header {
    let (h, layers, q, kv, head_dim, ffn, vocab) = (1024, 28, 2048, 1024, 128, 3072, 151936);
    let mut t = vec![
        ("model.embed_tokens.weight".to_string(), vec![vocab, h]),
        ("model.norm.weight".to_string(), vec![h]),
    ];
    for i in 0..layers {
        let p = format!("model.layers.{i}.");
        for (name, shape) in [
            ("input_layernorm", vec![h]),
            ("post_attention_layernorm", vec![h]),
            ("self_attn.q_proj", vec![q, h]),
            ("self_attn.k_proj", vec![kv, h]),
            ("self_attn.v_proj", vec![kv, h]),
            ("self_attn.o_proj", vec![h, q]),
            ("self_attn.q_norm", vec![head_dim]),
            ("self_attn.k_norm", vec![head_dim]),
            ("mlp.gate_proj", vec![ffn, h]),
            ("mlp.up_proj", vec![ffn, h]),
            ("mlp.down_proj", vec![h, ffn]),
        ] {
            t.push((format!("{p}{name}.weight"), shape));
        }
    }
    Header::lay_out(t.into_iter().map(|(n, s)| (n, Dtype::BF16, s)), Vec::new()).unwrap()
}

fn run(extra: &[(&str, &str)]) -> Estimate {
    let config = parse_hf_config(QWEN3_0_6B).unwrap();
    let header = qwen3_0_6b();
    let checkpoint = read_checkpoint(&header.tensors, config.arch.layers, config.weights.unwrap());
    let mut pairs: Vec<(&str, String)> = config.pairs();
    pairs.extend(checkpoint.unwrap().pairs());
    pairs.push(("mode", "inference".to_string()));
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let (s, errors) = Scenario::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    assert!(errors.is_empty(), "{errors:?}");
    estimate(&s).unwrap()
}

fn weights(e: &Estimate) -> u64 {
    e.component(ComponentId::Weights).unwrap().bytes.0
}

#[test]
fn the_checkpoints_bytes_are_the_weights() {
    let tensors = qwen3_0_6b().tensor_bytes();
    // The config alone misses the per-head q_norm/k_norm: 2 × 128 × 28 parameters.
    assert_eq!(tensors, 1_192_099_840);
    let e = run(&[]);
    assert_eq!(weights(&e), tensors);
    assert!(e.notes.iter().all(|n| !n.contains("checkpoint-weights")));
    let vllm = run(&[("runtime", "vllm")]);
    assert_eq!(weights(&vllm), tensors);
    // Tensor parallelism splits the checkpoint's own bytes.
    let tp2 = run(&[("runtime", "vllm"), ("gpus", "2"), ("sharding", "tensor")]);
    assert_eq!(weights(&tp2), tensors / 2);
}

#[test]
fn unused_checkpoint_bytes_are_named() {
    let qlora = run(&[("mode", "qlora"), ("weights", "nf4")]);
    assert!(weights(&qlora) < 1_000_000_000);
    assert!(
        qlora
            .notes
            .iter()
            .any(|n| n.contains("checkpoint-weights holds bf16")),
        "{:?}",
        qlora.notes
    );
    let gguf = run(&[("runtime", "llama.cpp")]);
    assert!(
        gguf.notes
            .iter()
            .any(|n| n.contains("not read under llama.cpp")),
        "{:?}",
        gguf.notes
    );
}

#[test]
fn a_checkpoint_of_other_layers_is_refused() {
    let config = parse_hf_config(QWEN3_0_6B).unwrap();
    let c = read_checkpoint(&qwen3_0_6b().tensors, 28, config.weights.unwrap()).unwrap();
    let (s, errors) = Scenario::from_pairs([
        ("model", "llama-3.1-8b"),
        ("checkpoint-weights", &c.weights.format()),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    let refused = estimate(&s).unwrap_err();
    assert_eq!(refused[0].field, "checkpoint-weights", "{refused:?}");
}
