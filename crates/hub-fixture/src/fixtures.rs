//! The fixture checkpoints: one per checkpoint format vramfit reads from the Hub. Configs are the
//! real files in `crates/engine/tests/fixtures/hf-configs` (provenance in its SOURCES.md);
//! tensor lists are generated from them ([`crate::model`]); published figures come from that
//! folder's `published.csv` unless a fixture's `source` says otherwise.
//!
//! The commit shas are fixed stand-ins, not the repositories' real commits.

use serde_json::{json, Value};
use vramfit_safetensors::Dtype;

use crate::checkpoint::{sharded, with_quantization, Checkpoint, Gated, Published};
use crate::files::RepoFile;
use crate::gguf_files::{gguf_file, llama_q4_k_m, split};
use crate::model::{decoder, gpt_oss, Quant, Shape};

macro_rules! config {
    ($file:literal) => {
        include_str!(concat!("../../engine/tests/fixtures/hf-configs/", $file))
    };
}

/// The token the fixture Hub accepts for gated repositories (`Authorization: Bearer …`).
pub const TEST_TOKEN: &str = "hf_vramfitFixtureToken";
/// A well-formed token of a user who has not been granted access to gated repositories.
pub const UNAPPROVED_TOKEN: &str = "hf_vramfitFixtureNotApproved";

/// Every fixture checkpoint.
pub fn all() -> Vec<Checkpoint> {
    vec![
        llama_3_1_8b(),
        llama_3_2_1b_instruct(),
        qwen3_30b_a3b(),
        qwen3_32b_awq(),
        qwen3_8b_fp8(),
        qwen3_8b_w4a16(),
        gpt_oss_20b(),
        llama_3_2_1b_bnb_4bit(),
        llama_3_1_8b_gguf(),
    ]
}

/// The fixture for `repo`.
pub fn find(repo: &str) -> Option<Checkpoint> {
    all().into_iter().find(|c| c.repo == repo)
}

fn parse(config: &str) -> Shape {
    Shape::from_config(&serde_json::from_str::<Value>(config).expect("fixture configs parse"))
}

/// `config.json` followed by the weight files.
fn with_config(config: String, weights: Vec<RepoFile>) -> Vec<RepoFile> {
    let mut files = vec![RepoFile::small("config.json", config.into_bytes())];
    files.extend(weights);
    files
}

fn csv_row() -> &'static str {
    "published.csv row of the config (SOURCES.md gives the pages it was read from)"
}

fn llama_3_1_8b() -> Checkpoint {
    let config = config!("llama-3.1-8b.json");
    let tensors = decoder(&parse(config), Quant::Dense(Dtype::BF16));
    Checkpoint {
        repo: "meta-llama/Llama-3.1-8B",
        sha: "d04e592bb4f6aa9cfee91e2e20afa771667e1d4b",
        format: "bf16 dense, 4 shards, gated (manual)",
        gated: Gated::Manual,
        files: with_config(config.into(), sharded(tensors, 4, None)),
        published: Published {
            params: Some(8_030_261_248),
            tensor_bytes: Some(16_060_522_496),
            source: csv_row(),
        },
        notes: "Shard boundaries are equal-size cuts, not Meta's.",
    }
}

fn llama_3_2_1b_instruct() -> Checkpoint {
    let config = config!("llama-3.2-1b-instruct.json");
    let tensors = decoder(&parse(config), Quant::Dense(Dtype::BF16));
    Checkpoint {
        repo: "meta-llama/Llama-3.2-1B-Instruct",
        sha: "9213176726f574b556790deb65791e0c5aa438b6",
        format: "bf16 dense, one model.safetensors, tied embeddings, gated (manual)",
        gated: Gated::Manual,
        files: with_config(config.into(), sharded(tensors, 1, None)),
        published: Published {
            params: Some(1_235_814_400),
            tensor_bytes: Some(2_471_628_800),
            source: csv_row(),
        },
        notes: "The published file is 2,471,645,608 B (a 16,808 B header); this header is \
                shorter (no per-tensor padding), so only the tensor bytes are compared.",
    }
}

fn qwen3_30b_a3b() -> Checkpoint {
    let config = config!("qwen3-30b-a3b.json");
    let tensors = decoder(&parse(config), Quant::Dense(Dtype::BF16));
    Checkpoint {
        repo: "Qwen/Qwen3-30B-A3B",
        sha: "ad44e777bcd18fa416d9da3bd8f70d33ebb85d39",
        format: "bf16 MoE (128 experts, q_norm/k_norm), 16 shards",
        gated: Gated::No,
        files: with_config(config.into(), sharded(tensors, 16, None)),
        published: Published {
            params: Some(30_532_122_624),
            tensor_bytes: Some(61_064_245_248),
            source: "published.csv; params = the index's total_size / 2 (SOURCES.md)",
        },
        notes: "Shard boundaries are equal-size cuts, not Qwen's.",
    }
}

fn qwen3_32b_awq() -> Checkpoint {
    let config = config!("qwen3-32b-awq.reserialized.json");
    let tensors = decoder(&parse(config), Quant::Awq { group: 128 });
    Checkpoint {
        repo: "Qwen/Qwen3-32B-AWQ",
        sha: "5ea6a7a0d4e0a4d1c3e0bd0c4fd7e0b5a0e5f3f1",
        format: "AWQ 4-bit GEMM (qweight/qzeros/scales), fp16 rest, 4 shards",
        gated: Gated::No,
        files: with_config(config.into(), sharded(tensors, 4, Some(19_338_405_888))),
        published: Published {
            params: Some(32_800_000_000),
            tensor_bytes: Some(19_325_298_688),
            source: "published.csv and SOURCES.md: tensors 19,325,298,688 B, index total_size \
                     19,338,405,888 B",
        },
        notes: "config.json is transformers' re-serialization (SOURCES.md). The index's \
                total_size is the published one, 13,107,200 B over the tensors, as on the Hub.",
    }
}

fn qwen3_8b_fp8() -> Checkpoint {
    let block = json!({
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128]
    });
    let config = with_quantization(config!("qwen3-8b.json"), &block);
    let tensors = decoder(&parse(&config), Quant::Fp8Block { block: 128 });
    Checkpoint {
        repo: "Qwen/Qwen3-8B-FP8",
        sha: "a29cae3e2e44a7d5b4fd54f8e9c41a47e1a7e0b2",
        format: "fp8 e4m3 128x128 blocks with weight_scale_inv, bf16 rest, 2 shards",
        gated: Gated::No,
        files: with_config(config, sharded(tensors, 2, None)),
        published: Published {
            params: Some(8_200_000_000),
            tensor_bytes: None,
            source: "params: Qwen3-8B's card (published.csv); no published byte count found",
        },
        notes: "config.json is Qwen3-8B's real file with the fp8 quantization_config block put \
                in front; the release's own config.json was not found.",
    }
}

fn qwen3_8b_w4a16() -> Checkpoint {
    let weights = json!({
        "num_bits": 4, "type": "int", "symmetric": true, "strategy": "group",
        "group_size": 128, "dynamic": false, "actorder": null, "observer": "minmax"
    });
    let block = json!({
        "config_groups": {"group_0": {
            "targets": ["Linear"], "weights": weights,
            "input_activations": null, "output_activations": null
        }},
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "quant_method": "compressed-tensors",
        "quantization_status": "compressed"
    });
    let config = with_quantization(config!("qwen3-8b.json"), &block);
    let tensors = decoder(&parse(&config), Quant::PackW4 { group: 128 });
    Checkpoint {
        repo: "RedHatAI/Qwen3-8B-quantized.w4a16",
        sha: "0f3c1d47b2a94e5f8c6d2b1a0e9f8d7c6b5a4e3d",
        format: "compressed-tensors pack-quantized W4A16 (weight_packed/scale/shape), 2 shards",
        gated: Gated::No,
        files: with_config(config, sharded(tensors, 2, None)),
        published: Published {
            params: None,
            tensor_bytes: None,
            source: "no published byte count found",
        },
        notes: "config.json is Qwen3-8B's real file with a compressed-tensors block in front, \
                modelled on the format's fields; the release's own files were not found.",
    }
}

fn gpt_oss_20b() -> Checkpoint {
    let config = config!("gpt-oss-20b.json");
    let tensors = gpt_oss(&parse(config));
    Checkpoint {
        repo: "openai/gpt-oss-20b",
        sha: "6cee5e81ee83917806bbde320786a8fb61efebee",
        format: "MXFP4 experts (U8 blocks + scales), bf16 rest, 3 shards",
        gated: Gated::No,
        files: with_config(config.into(), sharded(tensors, 3, None)),
        published: Published {
            params: Some(21_000_000_000),
            tensor_bytes: Some(13_761_264_768),
            source: csv_row(),
        },
        notes: "Shards are named model-0000N-of-00003 here; the published names were not \
                verified.",
    }
}

fn llama_3_2_1b_bnb_4bit() -> Checkpoint {
    let block = json!({
        "_load_in_4bit": true, "_load_in_8bit": false,
        "bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_quant_storage": "uint8",
        "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true,
        "llm_int8_enable_fp32_cpu_offload": false, "llm_int8_has_fp16_weight": false,
        "llm_int8_skip_modules": null, "llm_int8_threshold": 6.0,
        "load_in_4bit": true, "load_in_8bit": false, "quant_method": "bitsandbytes"
    });
    let config = with_quantization(config!("llama-3.2-1b-instruct.json"), &block);
    let tensors = decoder(&parse(&config), Quant::BnbNf4);
    Checkpoint {
        repo: "unsloth/Llama-3.2-1B-Instruct-bnb-4bit",
        sha: "3b1b2e3b0c6a4f1e9d8c7b6a5f4e3d2c1b0a9f8e",
        format: "bitsandbytes NF4, double quant, serialized quant_state, one file",
        gated: Gated::No,
        files: with_config(config, sharded(tensors, 1, None)),
        published: Published {
            params: Some(1_235_814_400),
            tensor_bytes: None,
            source: "params: the base model's (published.csv); no published byte count found",
        },
        notes: "config.json is Llama-3.2-1B-Instruct's real file with a bitsandbytes block in \
                front. quant_state blobs use one fixed nested_offset, so their lengths are the \
                same in every layer.",
    }
}

fn llama_3_1_8b_gguf() -> Checkpoint {
    let header = llama_q4_k_m();
    let name = "Meta-Llama-3.1-8B-Instruct-Q4_K_M";
    let mut files = vec![gguf_file(&format!("{name}.gguf"), &header)];
    files.extend(split(&format!("Q4_K_M/{name}"), &header, 2));
    Checkpoint {
        repo: "vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF",
        sha: "7c1f0e2d3b4a59687f6e5d4c3b2a190817f6e5d4",
        format: "GGUF Q4_K_M, whole and split in two (gguf-split layout in a folder)",
        gated: Gated::No,
        files,
        published: Published {
            params: Some(8_030_261_248),
            tensor_bytes: None,
            source: "no published tensor byte count; 4,912,898,304 B is the gguf crate's \
                     hand sum (crates/gguf/tests/models.rs)",
        },
        notes: "Not a real repository: it holds the same file whole and split so one fixture \
                tests both; tensor_bytes() counts both copies.",
    }
}
