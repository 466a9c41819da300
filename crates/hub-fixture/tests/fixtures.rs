//! The fixtures reproduce their published sizes, and their files read back with vramfit's own
//! header readers.

use std::collections::BTreeSet;

use serde_json::Value;
use vramfit_hub_fixture::fixtures::{all, find};
use vramfit_hub_fixture::model::nf4_state_json;

#[test]
fn at_least_eight_checkpoints_of_distinct_formats() {
    let all = all();
    assert!(all.len() >= 8);
    let repos: BTreeSet<_> = all.iter().map(|c| c.repo).collect();
    assert_eq!(repos.len(), all.len(), "repository ids are unique");
    for c in &all {
        assert_eq!(c.sha.len(), 40, "{}", c.repo);
        assert!(c.sha.bytes().all(|b| b.is_ascii_hexdigit()), "{}", c.repo);
        assert!(c.file("config.json").is_some() || c.repo.ends_with("-GGUF"));
    }
}

/// Tensor bytes equal the published checkpoint bytes wherever one was found.
#[test]
fn tensor_bytes_equal_published_sizes() {
    let expected = [
        ("meta-llama/Llama-3.1-8B", 16_060_522_496),
        ("meta-llama/Llama-3.2-1B-Instruct", 2_471_628_800),
        ("Qwen/Qwen3-30B-A3B", 61_064_245_248),
        ("Qwen/Qwen3-32B-AWQ", 19_325_298_688),
        ("openai/gpt-oss-20b", 13_761_264_768),
    ];
    for (repo, bytes) in expected {
        let c = find(repo).unwrap();
        assert_eq!(c.published.tensor_bytes, Some(bytes), "{repo}");
        assert_eq!(c.tensor_bytes(), bytes, "{repo}");
    }
    let with_figure = all()
        .iter()
        .filter(|c| c.published.tensor_bytes.is_some())
        .count();
    assert_eq!(
        with_figure,
        expected.len(),
        "every published figure is checked above"
    );
}

/// Dense bf16 checkpoints hold 2 bytes per published parameter, exactly.
#[test]
fn bf16_parameter_counts_are_the_published_ones() {
    for repo in ["meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"] {
        let c = find(repo).unwrap();
        let params: u64 = c.parameters().values().sum();
        assert_eq!(Some(params), c.published.params, "{repo}");
        assert_eq!(c.parameters().keys().collect::<Vec<_>>(), ["BF16"]);
    }
}

/// Without a published byte count, the quantized fixtures are checked against their layouts by
/// hand: Qwen3-8B has 36 layers of 7 linears (q 4096×4096, k and v 1024×4096, o 4096×4096,
/// gate and up 12288×4096, down 4096×12288 as out×in) and 151,936×4096 embeddings and head.
#[test]
fn quantized_layouts_add_up_by_hand() {
    let linears: [(u64, u64); 7] = [
        (4096, 4096),
        (1024, 4096),
        (1024, 4096),
        (4096, 4096),
        (12288, 4096),
        (12288, 4096),
        (4096, 12288),
    ];
    let rest = 2 * 151_936 * 4096 * 2 + 36 * (2 * 4096 + 2 * 128) * 2 + 4096 * 2;
    let fp8: u64 = linears
        .iter()
        .map(|&(o, i)| o * i + o.div_ceil(128) * i.div_ceil(128) * 4)
        .sum();
    let w4: u64 = linears
        .iter()
        .map(|&(o, i)| o * i / 2 + o * (i / 128) * 2 + 16)
        .sum();
    assert_eq!(
        find("Qwen/Qwen3-8B-FP8").unwrap().tensor_bytes(),
        rest + 36 * fp8
    );
    let w4a16 = find("RedHatAI/Qwen3-8B-quantized.w4a16").unwrap();
    assert_eq!(w4a16.tensor_bytes(), rest + 36 * w4);
}

#[test]
fn nf4_layout_adds_up_by_hand() {
    // Llama-3.2-1B: 16 layers, hidden 2048, kv 512, intermediate 8192, tied 128,256 × 2048.
    let linears: [(u64, u64); 7] = [
        (2048, 2048),
        (512, 2048),
        (512, 2048),
        (2048, 2048),
        (8192, 2048),
        (8192, 2048),
        (2048, 8192),
    ];
    let per_linear = |o: u64, i: u64| {
        let n = o * i;
        n / 2
            + n / 64
            + 16 * 4
            + (n / 64).div_ceil(256) * 4
            + 256 * 4
            + nf4_state_json(o, i).len() as u64
    };
    let layer: u64 = linears.iter().map(|&(o, i)| per_linear(o, i)).sum::<u64>() + 2 * 2048 * 2;
    let expected = 128_256 * 2048 * 2 + 16 * layer + 2048 * 2;
    let c = find("unsloth/Llama-3.2-1B-Instruct-bnb-4bit").unwrap();
    assert_eq!(c.tensor_bytes(), expected);
}

/// Every safetensors file parses with vramfit's reader, is exactly as long as its header says,
/// and the index maps each tensor to the file that holds it.
#[test]
fn safetensors_files_and_indexes_read_back() {
    for c in all() {
        let mut in_files = BTreeSet::new();
        for f in c.files.iter().filter(|f| f.path.ends_with(".safetensors")) {
            let h = vramfit_safetensors::parse_header(&f.head).unwrap();
            h.check_file_len(f.size).unwrap();
            assert_eq!(h.tensor_bytes(), f.tensor_bytes, "{}", f.path);
            assert_eq!(h.metadata_value("format"), Some("pt"));
            for t in &h.tensors {
                in_files.insert((t.name.clone(), f.path.clone()));
            }
        }
        let Some(index) = c.file("model.safetensors.index.json") else {
            continue;
        };
        let index: Value = serde_json::from_slice(&index.head).unwrap();
        let mapped: BTreeSet<_> = index["weight_map"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        assert_eq!(mapped, in_files, "{}", c.repo);
        let total = index["metadata"]["total_size"].as_u64().unwrap();
        if c.repo == "Qwen/Qwen3-32B-AWQ" {
            assert_eq!(total, 19_338_405_888, "the published, overstated total");
        } else {
            assert_eq!(total, c.tensor_bytes(), "{}", c.repo);
        }
    }
}

/// Names as published indexes spell them (quoted from public copies of real
/// `model.safetensors.index.json` files, see the crate's `model` docs).
#[test]
fn names_follow_published_indexes() {
    let names = |repo: &str| -> BTreeSet<String> {
        let c = find(repo).unwrap();
        c.files
            .iter()
            .filter(|f| f.path.ends_with(".safetensors"))
            .flat_map(|f| vramfit_safetensors::parse_header(&f.head).unwrap().tensors)
            .map(|t| t.name)
            .collect()
    };
    let llama = names("meta-llama/Llama-3.1-8B");
    assert_eq!(llama.len(), 291);
    for n in [
        "lm_head.weight",
        "model.embed_tokens.weight",
        "model.layers.0.input_layernorm.weight",
    ] {
        assert!(llama.contains(n), "{n}");
    }
    let awq = names("Qwen/Qwen3-32B-AWQ");
    for s in ["qweight", "qzeros", "scales"] {
        assert!(awq.contains(&format!("model.layers.0.mlp.gate_proj.{s}")));
    }
    let qwen = names("Qwen/Qwen3-30B-A3B");
    assert!(qwen.contains("model.layers.47.mlp.experts.127.down_proj.weight"));
    assert!(qwen.contains("model.layers.0.self_attn.q_norm.weight"));
    assert!(qwen.contains("model.layers.0.mlp.gate.weight"));
    let nf4 = names("unsloth/Llama-3.2-1B-Instruct-bnb-4bit");
    for s in [
        "",
        ".absmax",
        ".quant_map",
        ".quant_state.bitsandbytes__nf4",
    ] {
        assert!(
            nf4.contains(&format!("model.layers.0.mlp.down_proj.weight{s}")),
            "{s}"
        );
    }
    let oss = names("openai/gpt-oss-20b");
    assert!(oss.contains("model.layers.23.mlp.experts.gate_up_proj_blocks"));
    assert!(oss.contains("model.layers.0.self_attn.sinks"));
}

#[test]
fn gguf_split_reads_back_as_the_whole_file() {
    let c = find("vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF").unwrap();
    let parse = |path: &str| vramfit_gguf::parse_header(&c.file(path).unwrap().head).unwrap();
    let whole = parse("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf");
    assert_eq!(whole.tensor_bytes_total(), Some(4_912_898_304));
    let prefix = "Q4_K_M/Meta-Llama-3.1-8B-Instruct-Q4_K_M";
    let first = parse(&format!("{prefix}-00001-of-00002.gguf"));
    let second = parse(&format!("{prefix}-00002-of-00002.gguf"));
    assert_eq!(first.architecture(), Some("llama"));
    assert_eq!(
        second.architecture(),
        None,
        "only the first split keeps the metadata"
    );
    for (no, part) in [(0, &first), (1, &second)] {
        assert_eq!(part.u64_key("split.no"), Some(no));
        assert_eq!(part.u64_key("split.count"), Some(2));
        assert_eq!(part.u64_key("split.tensors.count"), Some(292));
    }
    assert_eq!(first.tensors.len() + second.tensors.len(), 292);
    let sum = first.tensor_bytes_total().unwrap() + second.tensor_bytes_total().unwrap();
    assert_eq!(sum, 4_912_898_304);
    for f in c.files.iter() {
        let h = vramfit_gguf::parse_header(&f.head).unwrap();
        assert_eq!(h.expected_file_size(), Some(f.size), "{}", f.path);
    }
}

/// Derived configs keep the base model's keys and add the quantizer's block.
#[test]
fn derived_configs_parse_with_their_quantization_block() {
    for (repo, method) in [
        ("Qwen/Qwen3-8B-FP8", "fp8"),
        ("RedHatAI/Qwen3-8B-quantized.w4a16", "compressed-tensors"),
        ("unsloth/Llama-3.2-1B-Instruct-bnb-4bit", "bitsandbytes"),
        ("Qwen/Qwen3-32B-AWQ", "awq"),
        ("openai/gpt-oss-20b", "mxfp4"),
    ] {
        let c = find(repo).unwrap();
        let config: Value = serde_json::from_slice(&c.file("config.json").unwrap().head).unwrap();
        assert_eq!(
            config["quantization_config"]["quant_method"], method,
            "{repo}"
        );
        assert!(config["hidden_size"].as_u64().is_some());
    }
}
