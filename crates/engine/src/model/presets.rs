//! The model catalogue: each preset's shape and parameter count from its published config.json
//! and model card.

use super::{dense_shape as arch, Architecture, Mla, Moe, Recurrent, Rope, Vision, Window};
use crate::dtype::{Dtype, QuantScope};

/// A named model with its published shape and parameter count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Preset {
    pub id: &'static str,
    pub name: &'static str,
    pub arch: Architecture,
    /// The count its authors publish (model card, or `sum(p.numel())` where the card rounds), for
    /// the 1% check.
    pub published_params: f64,
    /// The published count is the checkpoint's tensors, which hold the multi-token-prediction
    /// modules too (Qwen3.5's Hub counts); cards' counts leave them out (DeepSeek-V3's 671B).
    pub published_with_mtp: bool,
    /// For a mixture of experts, the active count its card publishes.
    pub published_active: Option<f64>,
    /// The card's active count leaves out the input embedding (OpenAI's, DeepSeek's and
    /// Moonshot's do; Mistral's and Qwen's count it, as [`Architecture::active_param_count`] does).
    pub active_without_embedding: bool,
    /// The Hugging Face repository whose config.json the shape is read from.
    pub config: &'static str,
    /// The format the published checkpoint ships its weights in, and which layers it covers.
    pub checkpoint: (Dtype, QuantScope),
}

impl Preset {
    /// Whether the model picker's search finds this preset: every whitespace-separated word of
    /// `search`, ignoring ASCII case, is part of its name or id, its family's name (`mla`,
    /// `hybrid`, …), or `moe` for a mixture of experts (hybrids too) and `dense` for the rest.
    /// An empty search finds every preset.
    pub fn matches(&self, search: &str) -> bool {
        let family = self.arch.family().as_str();
        let experts = if self.arch.moe.is_moe() {
            "moe"
        } else {
            "dense"
        };
        search.split_whitespace().all(|word| {
            let word = word.to_ascii_lowercase();
            [self.name, self.id, family, experts]
                .iter()
                .any(|text| text.to_ascii_lowercase().contains(&word))
        })
    }
}

const BF16_CHECKPOINT: (Dtype, QuantScope) = (Dtype::Bf16, QuantScope::AllLinear);
const FP32_CHECKPOINT: (Dtype, QuantScope) = (Dtype::Fp32, QuantScope::AllLinear);
/// DeepSeek-V3's and Kimi K2's `quantization_config`: fp8 e4m3 with 128×128 block scales.
const FP8_BLOCK_CHECKPOINT: (Dtype, QuantScope) = (Dtype::Fp8, QuantScope::AllLinear);
/// gpt-oss's: MXFP4 experts, everything in `modules_to_not_convert` (attention, router,
/// embeddings, head) in bf16.
const MXFP4_EXPERTS_CHECKPOINT: (Dtype, QuantScope) = (Dtype::Mxfp4, QuantScope::Experts);

/// A dense preset: its shape, count and the repository of its config.json.
const fn dense(
    id: &'static str,
    name: &'static str,
    arch: Architecture,
    published_params: f64,
    config: &'static str,
) -> Preset {
    Preset {
        id,
        name,
        arch,
        published_params,
        published_with_mtp: false,
        published_active: None,
        active_without_embedding: false,
        config,
        checkpoint: BF16_CHECKPOINT,
    }
}

/// RoPE over the whole head, with a table of `positions` (config.json's `max_position_embeddings`
/// with its scaling applied as vLLM applies it; see [`Rope`]).
const fn rope(arch: Architecture, positions: u32) -> Architecture {
    Architecture {
        rope: Rope {
            positions,
            local_positions: 0,
            dim: 0,
        },
        ..arch
    }
}

/// RoPE on `dim` of each head's channels (`partial_rotary_factor`, `rotary_pct`).
const fn partial_rope(arch: Architecture, positions: u32, dim: u32) -> Architecture {
    Architecture {
        rope: Rope {
            positions,
            local_positions: 0,
            dim,
        },
        ..arch
    }
}

/// Gemma 3: the global layers' table of `positions` (linear scaling applied) and the sliding
/// layers' own, unscaled one of `local_positions`.
const fn two_ropes(arch: Architecture, positions: u32, local_positions: u32) -> Architecture {
    Architecture {
        rope: Rope {
            positions,
            local_positions,
            dim: 0,
        },
        ..arch
    }
}

const fn windowed(arch: Architecture, tokens: u32, layers: u32) -> Architecture {
    Architecture {
        window: Window { tokens, layers },
        ..arch
    }
}

const fn experts(
    arch: Architecture,
    experts: u32,
    per_token: u32,
    expert_ffn: u32,
    shared_ffn: u32,
    dense_layers: u32,
) -> Architecture {
    Architecture {
        moe: Moe {
            experts,
            per_token,
            expert_ffn,
            shared_ffn,
            dense_layers,
        },
        ..arch
    }
}

const fn latent(
    arch: Architecture,
    q_rank: u32,
    kv_rank: u32,
    rope_dim: u32,
    v_head_dim: u32,
) -> Architecture {
    Architecture {
        mla: Mla {
            q_rank,
            kv_rank,
            rope_dim,
            v_head_dim,
        },
        ..arch
    }
}

/// `layers` of the model's layers replace attention with a recurrent mixer; `no_mlp` have no MLP.
const fn hybrid(
    arch: Architecture,
    recurrent: Recurrent,
    no_attention: u32,
    no_mlp: u32,
) -> Architecture {
    Architecture {
        recurrent,
        no_attention,
        no_mlp,
        ..arch
    }
}

const fn with_mtp(arch: Architecture, mtp_layers: u32) -> Architecture {
    Architecture { mtp_layers, ..arch }
}

/// Phi-3's fused `qkv_proj` (Phi3ForCausalLM, which Phi-4 also is).
const fn fused_qkv(arch: Architecture) -> Architecture {
    Architecture {
        fused_qkv: true,
        ..arch
    }
}

/// Qwen3-Next's and Qwen3.5's gated attention output (q_proj twice the query width).
const fn attention_gate(arch: Architecture) -> Architecture {
    Architecture {
        attention_gate: true,
        ..arch
    }
}

/// A vision tower whose projector merges `merge` × `merge` patches into one token (Qwen-VL's
/// `spatial_merge_size`).
const fn with_merger(arch: Architecture, merge: u32) -> Architecture {
    Architecture {
        vision: Vision {
            merge,
            ..arch.vision
        },
        ..arch
    }
}

/// Qwen3.5's shape (`Qwen3_5TextConfig`): every fourth of `layers` is gated attention (256-wide
/// heads), the rest gated DeltaNet with 16 key heads and `value_heads` value heads of 128 (state
/// 128, convolution 4, the state kept in fp32 as its config's `mamba_ssm_dtype` says); an untied
/// 248,320-token head; one MTP module; a 27-block vision tower of width 1152 merging 2 × 2
/// patches.
const fn qwen3_5(
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    value_heads: u32,
    ffn: u32,
) -> Architecture {
    let recurrent_layers = layers - layers / 4;
    with_mtp(
        with_merger(
            with_vision(
                hybrid(
                    attention_gate(arch(
                        layers, hidden, heads, kv_heads, 256, ffn, 248320, false, true,
                    )),
                    Recurrent {
                        layers: recurrent_layers,
                        heads: value_heads,
                        head_dim: 128,
                        state: 128,
                        groups: 16,
                        conv: 4,
                        state_dtype: Some(Dtype::Fp32),
                    },
                    recurrent_layers,
                    0,
                ),
                27,
                1152,
                4304,
                16,
                0,
            ),
            2,
        ),
        1,
    )
}

/// Qwen3.5's mixtures of experts (`Qwen3_5MoeTextConfig`): [`qwen3_5`] with two KV heads and,
/// in each layer, `experts` routed experts of `expert_ffn` (8 or 10 per token) and one shared
/// expert of the same width.
const fn qwen3_5_moe(
    layers: u32,
    hidden: u32,
    heads: u32,
    value_heads: u32,
    experts_count: u32,
    per_token: u32,
    expert_ffn: u32,
) -> Architecture {
    experts(
        qwen3_5(layers, hidden, heads, 2, value_heads, expert_ffn),
        experts_count,
        per_token,
        expert_ffn,
        expert_ffn,
        0,
    )
}

/// DeepSeek-V3's shape (`DeepseekV3Config`), which Kimi K2 reuses, `positions` long: 61 layers of
/// width 7168; `heads` MLA heads with a 1536-wide query latent and a 512-wide KV latent, 192-wide
/// queries and keys (64 of them rotary) and 128-wide values; an untied `vocab`-token head. All but
/// the first `dense_layers` layers (dense FFN 18432) hold `experts_count` routed experts of 2048,
/// 8 per token, and one shared expert as wide.
const fn deepseek_v3(
    heads: u32,
    vocab: u32,
    positions: u32,
    experts_count: u32,
    dense_layers: u32,
) -> Architecture {
    latent(
        experts(
            rope(
                arch(61, 7168, heads, heads, 192, 18432, vocab, false, true),
                positions,
            ),
            experts_count,
            8,
            2048,
            2048,
            dense_layers,
        ),
        1536,
        512,
        64,
        128,
    )
}

/// Llama 4's shape (`Llama4TextConfig`), `positions` long: 48 layers of width 5120, 40 query and
/// 8 KV heads of 128, an untied 202,048-token head. Three of every four layers attend within
/// 8192-token chunks (`attention_chunk_size`), cached here as a window of that size. All but
/// `dense_layers` layers hold `experts_count` routed experts of 8192 (one per token) and one
/// shared expert as wide; a 34-block vision tower of width 1408 takes 14-pixel patches of
/// 336-pixel images.
const fn llama_4(positions: u32, experts_count: u32, dense_layers: u32) -> Architecture {
    with_vision(
        windowed(
            experts(
                rope(
                    arch(48, 5120, 40, 8, 128, 16384, 202048, false, true),
                    positions,
                ),
                experts_count,
                1,
                8192,
                8192,
                dense_layers,
            ),
            8192,
            36,
        ),
        34,
        1408,
        5632,
        14,
        336,
    )
}

const fn with_vision(
    arch: Architecture,
    layers: u32,
    hidden: u32,
    ffn: u32,
    patch: u32,
    image: u32,
) -> Architecture {
    Architecture {
        vision: Vision {
            layers,
            hidden,
            ffn,
            patch,
            image,
            merge: 0,
        },
        ..arch
    }
}

/// How many of [`PRESETS`] are the catalogue proper; the rest exist for the calibration set.
pub const CATALOGUE_PRESETS: usize = 57;

/// Presets, with each number taken from the model's config.json on the Hugging Face Hub.
/// The last group are the models in the public calibration set, so its rows can name them.
pub const PRESETS: &[Preset] = &[
    dense(
        "smollm2-135m",
        "SmolLM2-135M",
        rope(arch(30, 576, 9, 3, 64, 1536, 49152, true, true), 8192),
        134_515_008.0,
        "HuggingFaceTB/SmolLM2-135M",
    ),
    dense(
        "gpt2",
        "GPT-2 small",
        arch(12, 768, 12, 12, 64, 3072, 50257, true, false),
        124_439_808.0,
        "openai-community/gpt2",
    ),
    dense(
        "tinyllama-1.1b",
        "TinyLlama-1.1B",
        arch(22, 2048, 32, 4, 64, 5632, 32000, false, true),
        1_100_048_384.0,
        "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
    ),
    dense(
        "llama-3.2-1b",
        "Llama-3.2-1B",
        rope(arch(16, 2048, 32, 8, 64, 8192, 128256, true, true), 131072),
        1_235_814_400.0,
        "meta-llama/Llama-3.2-1B",
    ),
    dense(
        "llama-3.2-3b",
        "Llama-3.2-3B",
        rope(arch(28, 3072, 24, 8, 128, 8192, 128256, true, true), 131072),
        3_212_749_824.0,
        "meta-llama/Llama-3.2-3B",
    ),
    dense(
        "llama-2-7b",
        "Llama-2-7B",
        rope(arch(32, 4096, 32, 32, 128, 11008, 32000, false, true), 4096),
        6_738_415_616.0,
        "meta-llama/Llama-2-7b-hf",
    ),
    dense(
        "llama-2-13b",
        "Llama-2-13B",
        rope(arch(40, 5120, 40, 40, 128, 13824, 32000, false, true), 4096),
        13_015_864_320.0,
        "meta-llama/Llama-2-13b-hf",
    ),
    dense(
        "llama-2-70b",
        "Llama-2-70B",
        rope(arch(80, 8192, 64, 8, 128, 28672, 32000, false, true), 4096),
        68_976_648_192.0,
        "meta-llama/Llama-2-70b-hf",
    ),
    dense(
        "llama-3.1-8b",
        "Llama-3.1-8B",
        rope(
            arch(32, 4096, 32, 8, 128, 14336, 128256, false, true),
            131072,
        ),
        8_030_261_248.0,
        "meta-llama/Llama-3.1-8B",
    ),
    dense(
        "llama-3.1-70b",
        "Llama-3.1-70B",
        rope(
            arch(80, 8192, 64, 8, 128, 28672, 128256, false, true),
            131072,
        ),
        70_553_706_496.0,
        "meta-llama/Llama-3.1-70B",
    ),
    dense(
        "mistral-7b",
        "Mistral-7B-v0.1",
        windowed(
            rope(arch(32, 4096, 32, 8, 128, 14336, 32000, false, true), 32768),
            4096,
            32,
        ),
        7_241_732_096.0,
        "mistralai/Mistral-7B-v0.1",
    ),
    dense(
        "qwen2.5-7b",
        "Qwen2.5-7B",
        rope(
            arch(28, 3584, 28, 4, 128, 18944, 152064, false, true),
            131072,
        ),
        7_615_616_512.0,
        "Qwen/Qwen2.5-7B",
    ),
    dense(
        "qwen2.5-14b",
        "Qwen2.5-14B",
        rope(
            arch(48, 5120, 40, 8, 128, 13824, 152064, false, true),
            131072,
        ),
        14_770_033_664.0,
        "Qwen/Qwen2.5-14B",
    ),
    dense(
        "qwen2.5-32b",
        "Qwen2.5-32B",
        rope(
            arch(64, 5120, 40, 8, 128, 27648, 152064, false, true),
            131072,
        ),
        32_763_876_352.0,
        "Qwen/Qwen2.5-32B",
    ),
    dense(
        "qwen2.5-72b",
        "Qwen2.5-72B",
        arch(80, 8192, 64, 8, 128, 29568, 152064, false, true),
        72_706_203_648.0,
        "Qwen/Qwen2.5-72B",
    ),
    dense(
        "phi-3-mini",
        "Phi-3-mini-4k",
        fused_qkv(arch(32, 3072, 32, 32, 96, 8192, 32064, false, true)),
        3_821_079_552.0,
        "microsoft/Phi-3-mini-4k-instruct",
    ),
    dense(
        "gemma-2-9b",
        "Gemma-2-9B",
        windowed(
            rope(arch(42, 3584, 16, 8, 256, 14336, 256000, true, true), 8192),
            4096,
            21,
        ),
        9_241_705_984.0,
        "google/gemma-2-9b",
    ),
    dense(
        "llama-3.3-70b",
        "Llama-3.3-70B",
        rope(
            arch(80, 8192, 64, 8, 128, 28672, 128256, false, true),
            131072,
        ),
        70_553_706_496.0,
        "meta-llama/Llama-3.3-70B-Instruct",
    ),
    dense(
        "qwen2.5-3b",
        "Qwen2.5-3B",
        rope(arch(36, 2048, 16, 2, 128, 11008, 151936, true, true), 32768),
        3_085_938_688.0,
        "Qwen/Qwen2.5-3B",
    ),
    dense(
        "qwen3-0.6b",
        "Qwen3-0.6B",
        rope(arch(28, 1024, 16, 8, 128, 3072, 151936, true, true), 40960),
        596_049_920.0,
        "Qwen/Qwen3-0.6B",
    ),
    dense(
        "qwen3-4b",
        "Qwen3-4B",
        rope(arch(36, 2560, 32, 8, 128, 9728, 151936, true, true), 40960),
        4_022_468_096.0,
        "Qwen/Qwen3-4B",
    ),
    dense(
        "qwen3-8b",
        "Qwen3-8B",
        rope(
            arch(36, 4096, 32, 8, 128, 12288, 151936, false, true),
            40960,
        ),
        8.2e9,
        "Qwen/Qwen3-8B",
    ),
    dense(
        "qwen3-14b",
        "Qwen3-14B",
        rope(
            arch(40, 5120, 40, 8, 128, 17408, 151936, false, true),
            40960,
        ),
        14_768_307_200.0,
        "Qwen/Qwen3-14B",
    ),
    dense(
        "qwen3-32b",
        "Qwen3-32B",
        rope(
            arch(64, 5120, 64, 8, 128, 25600, 151936, false, true),
            40960,
        ),
        32.8e9,
        "Qwen/Qwen3-32B",
    ),
    dense(
        "phi-4",
        "Phi-4",
        fused_qkv(rope(
            arch(40, 5120, 40, 10, 128, 17920, 100352, false, true),
            16384,
        )),
        14_659_507_200.0,
        "microsoft/phi-4",
    ),
    // 52 of the 62 layers are local (1024-token window), 5 local to 1 global. The count is the
    // Gemma 3 Technical Report's Table 1: 417M vision + 1,416M embedding + 25,600M other.
    dense(
        "gemma-3-27b",
        "Gemma-3-27B",
        with_vision(
            windowed(
                two_ropes(
                    arch(62, 5376, 32, 16, 128, 21504, 262208, true, true),
                    1048576,
                    131072,
                ),
                1024,
                52,
            ),
            27,
            1152,
            4304,
            14,
            896,
        ),
        27_433e6,
        "google/gemma-3-27b-it",
    ),
    dense(
        "mistral-nemo-12b",
        "Mistral-Nemo-12B",
        rope(
            arch(40, 5120, 32, 8, 128, 14336, 131072, false, true),
            128000,
        ),
        // Mistral says "12B"; the bf16 checkpoint's 24,495,564,800 bytes / 2.
        12_247_782_400.0,
        "mistralai/Mistral-Nemo-Base-2407",
    ),
    dense(
        "mistral-small-3.1-24b",
        "Mistral-Small-3.1-24B",
        with_vision(
            rope(
                arch(40, 5120, 32, 8, 128, 32768, 131072, false, true),
                131072,
            ),
            24,
            1024,
            4096,
            14,
            1540,
        ),
        24e9,
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    ),
    dense(
        "gemma-2-27b",
        "Gemma-2-27B",
        windowed(
            rope(arch(46, 4608, 32, 16, 128, 36864, 256000, true, true), 8192),
            4096,
            23,
        ),
        27_227_128_320.0,
        "google/gemma-2-27b",
    ),
    // Gemma 3's 1B is text-only; the 4B and 12B share the 27B's SigLIP tower (Technical Report
    // Table 1: 417M vision parameters for each), and the counts are that table's sums.
    dense(
        "gemma-3-1b",
        "Gemma-3-1B",
        windowed(
            two_ropes(
                arch(26, 1152, 4, 1, 256, 6912, 262144, true, true),
                32768,
                32768,
            ),
            512,
            22,
        ),
        999_885_952.0,
        "google/gemma-3-1b-it",
    ),
    dense(
        "gemma-3-4b",
        "Gemma-3-4B",
        with_vision(
            windowed(
                two_ropes(
                    arch(34, 2560, 8, 4, 256, 10240, 262208, true, true),
                    1048576,
                    131072,
                ),
                1024,
                29,
            ),
            27,
            1152,
            4304,
            14,
            896,
        ),
        4_301e6,
        "google/gemma-3-4b-it",
    ),
    dense(
        "gemma-3-12b",
        "Gemma-3-12B",
        with_vision(
            windowed(
                two_ropes(
                    arch(48, 3840, 16, 8, 256, 15360, 262208, true, true),
                    1048576,
                    131072,
                ),
                1024,
                40,
            ),
            27,
            1152,
            4304,
            14,
            896,
        ),
        12_188e6,
        "google/gemma-3-12b-it",
    ),
    // OLMo 2's base checkpoints are fp32 (`torch_dtype` float32; the 13B's index `total_size` is
    // 4 bytes × 13,716,198,400).
    Preset {
        checkpoint: FP32_CHECKPOINT,
        ..dense(
            "olmo-2-13b",
            "OLMo-2-13B",
            rope(
                arch(40, 5120, 40, 40, 128, 13824, 100352, false, true),
                4096,
            ),
            13_716_198_400.0,
            "allenai/OLMo-2-1124-13B",
        )
    },
    Preset {
        checkpoint: FP32_CHECKPOINT,
        ..dense(
            "olmo-2-32b",
            "OLMo-2-32B",
            rope(arch(64, 5120, 40, 8, 128, 27648, 100352, false, true), 4096),
            32e9,
            "allenai/OLMo-2-0325-32B",
        )
    },
    dense(
        "smollm3-3b",
        "SmolLM3-3B",
        rope(arch(36, 2048, 16, 4, 128, 11008, 128256, true, true), 65536),
        3_075_098_624.0,
        "HuggingFaceTB/SmolLM3-3B",
    ),
    dense(
        "deepseek-r1-distill-llama-8b",
        "DeepSeek-R1-Distill-Llama-8B",
        rope(
            arch(32, 4096, 32, 8, 128, 14336, 128256, false, true),
            131072,
        ),
        8_030_261_248.0,
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    ),
    dense(
        "deepseek-r1-distill-qwen-32b",
        "DeepSeek-R1-Distill-Qwen-32B",
        arch(64, 5120, 40, 8, 128, 27648, 152064, false, true),
        32_763_876_352.0,
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    ),
    Preset {
        id: "mixtral-8x7b",
        name: "Mixtral-8x7B",
        arch: experts(
            rope(arch(32, 4096, 32, 8, 128, 14336, 32000, false, true), 32768),
            8,
            2,
            14336,
            0,
            0,
        ),
        published_params: 46.7e9,
        published_with_mtp: false,
        published_active: Some(12.9e9),
        active_without_embedding: false,
        config: "mistralai/Mixtral-8x7B-v0.1",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "mixtral-8x22b",
        name: "Mixtral-8x22B",
        arch: experts(
            rope(arch(56, 6144, 48, 8, 128, 16384, 32000, false, true), 65536),
            8,
            2,
            16384,
            0,
            0,
        ),
        published_params: 141e9,
        published_with_mtp: false,
        published_active: Some(39e9),
        active_without_embedding: false,
        config: "mistralai/Mixtral-8x22B-v0.1",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "qwen3-30b-a3b",
        name: "Qwen3-30B-A3B",
        arch: experts(
            rope(arch(48, 2048, 32, 4, 128, 6144, 151936, false, true), 40960),
            128,
            8,
            768,
            0,
            0,
        ),
        published_params: 30.5e9,
        published_with_mtp: false,
        published_active: Some(3.3e9),
        active_without_embedding: false,
        config: "Qwen/Qwen3-30B-A3B",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "qwen3-235b-a22b",
        name: "Qwen3-235B-A22B",
        arch: experts(
            rope(
                arch(94, 4096, 64, 4, 128, 12288, 151936, false, true),
                262144,
            ),
            128,
            8,
            1536,
            0,
            0,
        ),
        published_params: 235e9,
        published_with_mtp: false,
        published_active: Some(22e9),
        active_without_embedding: false,
        config: "Qwen/Qwen3-235B-A22B-Instruct-2507",
        checkpoint: BF16_CHECKPOINT,
    },
    // gpt-oss alternates 128-token sliding-window and full layers; "active" on its card leaves
    // out the input embedding.
    Preset {
        id: "gpt-oss-20b",
        name: "gpt-oss-20b",
        arch: windowed(
            experts(
                rope(arch(24, 2880, 64, 8, 64, 2880, 201088, false, true), 131072),
                32,
                4,
                2880,
                0,
                0,
            ),
            128,
            12,
        ),
        published_params: 21e9,
        published_with_mtp: false,
        published_active: Some(3.6e9),
        active_without_embedding: true,
        config: "openai/gpt-oss-20b",
        checkpoint: MXFP4_EXPERTS_CHECKPOINT,
    },
    Preset {
        id: "gpt-oss-120b",
        name: "gpt-oss-120b",
        arch: windowed(
            experts(
                rope(arch(36, 2880, 64, 8, 64, 2880, 201088, false, true), 131072),
                128,
                4,
                2880,
                0,
                0,
            ),
            128,
            18,
        ),
        published_params: 117e9,
        published_with_mtp: false,
        published_active: Some(5.1e9),
        active_without_embedding: true,
        config: "openai/gpt-oss-120b",
        checkpoint: MXFP4_EXPERTS_CHECKPOINT,
    },
    Preset {
        id: "llama-4-scout",
        name: "Llama-4-Scout-17B-16E",
        arch: llama_4(10485760, 16, 0),
        published_params: 109e9,
        published_with_mtp: false,
        published_active: Some(17e9),
        active_without_embedding: true,
        config: "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "llama-4-maverick",
        name: "Llama-4-Maverick-17B-128E",
        arch: llama_4(1048576, 128, 24),
        published_params: 400e9,
        published_with_mtp: false,
        published_active: Some(17e9),
        active_without_embedding: true,
        config: "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        checkpoint: BF16_CHECKPOINT,
    },
    // The first 3 layers are dense, and one MTP module follows the last.
    // "Activated 36.6B (including 0.9B for the output head)" leaves out the input embedding.
    Preset {
        id: "deepseek-v3",
        name: "DeepSeek-V3 / R1",
        arch: with_mtp(deepseek_v3(128, 129280, 163840, 256, 3), 1),
        published_params: 671e9,
        published_with_mtp: false,
        published_active: Some(36.6e9),
        active_without_embedding: true,
        config: "deepseek-ai/DeepSeek-R1-0528",
        checkpoint: FP8_BLOCK_CHECKPOINT,
    },
    Preset {
        id: "kimi-k2",
        name: "Kimi-K2",
        arch: deepseek_v3(64, 163840, 131072, 384, 1),
        // The card's "1 trillion" rounds; this is the checkpoint's tensor inventory
        // (1,026,470,731,056 elements) less its 62,518,232 fp32 block scales and 3,416 RoPE buffers.
        published_params: 1_026_408_232_448.0,
        published_with_mtp: false,
        published_active: Some(32e9),
        active_without_embedding: true,
        config: "moonshotai/Kimi-K2-Instruct",
        checkpoint: FP8_BLOCK_CHECKPOINT,
    },
    // Gemma 2 alternates 4096-token sliding-window and global layers, starting windowed.
    dense(
        "gemma-2-2b",
        "Gemma-2-2B",
        windowed(
            rope(arch(26, 2304, 8, 4, 256, 9216, 256000, true, true), 8192),
            4096,
            13,
        ),
        2_614_341_888.0,
        "google/gemma-2-2b-it",
    ),
    // 36 of the 48 layers are gated-DeltaNet linear attention (every 4th is full attention), each
    // with a mixture of 512 experts, 10 per token, and a shared expert. "3B activated" is the A3B
    // size label.
    Preset {
        id: "qwen3-next-80b-a3b",
        name: "Qwen3-Next-80B-A3B",
        arch: hybrid(
            experts(
                attention_gate(partial_rope(
                    arch(48, 2048, 16, 2, 256, 5120, 151936, false, true),
                    262144,
                    64,
                )),
                512,
                10,
                512,
                512,
                0,
            ),
            Recurrent {
                layers: 36,
                heads: 32,
                head_dim: 128,
                state: 128,
                groups: 16,
                conv: 4,
                state_dtype: None,
            },
            36,
            0,
        ),
        published_params: 80e9,
        published_with_mtp: false,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3-Next-80B-A3B-Thinking",
        checkpoint: BF16_CHECKPOINT,
    },
    // Qwen3.5's dense models count as their checkpoints' tensors (the cards' "9B" and "27B" are
    // size labels): the Hub API's `safetensors.total` for the 9B, recorded in jm-vis/modelroom
    // (model sha c2022362), and for the 27B a catalog's `parameters_raw`, which Qwen3.8-27B's
    // index `total_size` / 2 repeats (tests/fixtures/qwen3.5/SOURCES.md).
    Preset {
        id: "qwen3.5-9b",
        name: "Qwen3.5-9B",
        arch: qwen3_5(32, 4096, 16, 4, 32, 12288),
        published_params: 9_653_104_368.0,
        published_with_mtp: true,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3.5-9B",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "qwen3.5-27b",
        name: "Qwen3.5-27B",
        arch: qwen3_5(64, 5120, 24, 4, 48, 17408),
        published_params: 27_781_427_952.0,
        published_with_mtp: true,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3.5-27B",
        checkpoint: BF16_CHECKPOINT,
    },
    // Qwen3.5's mixtures of experts (Qwen3.6-35B-A3B has the 35B's shape). The cards' active
    // counts ("3B", "10B", "17B activated") are size labels.
    Preset {
        id: "qwen3.5-35b-a3b",
        name: "Qwen3.5-35B-A3B",
        arch: qwen3_5_moe(40, 2048, 16, 32, 256, 8, 512),
        published_params: 35e9,
        published_with_mtp: false,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3.5-35B-A3B",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "qwen3.5-122b-a10b",
        name: "Qwen3.5-122B-A10B",
        arch: qwen3_5_moe(48, 3072, 32, 64, 256, 8, 1024),
        published_params: 122e9,
        published_with_mtp: false,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3.5-122B-A10B",
        checkpoint: BF16_CHECKPOINT,
    },
    Preset {
        id: "qwen3.5-397b-a17b",
        name: "Qwen3.5-397B-A17B",
        arch: qwen3_5_moe(60, 4096, 32, 64, 512, 10, 1024),
        published_params: 397e9,
        published_with_mtp: false,
        published_active: None,
        active_without_embedding: false,
        config: "Qwen/Qwen3.5-397B-A17B",
        checkpoint: BF16_CHECKPOINT,
    },
    // 52 single-purpose blocks: 23 Mamba-2, 23 mixture-of-experts (128 experts, 6 per token,
    // relu² MLPs), 6 attention ("MEMEM*E…").
    Preset {
        id: "nemotron-3-nano-30b-a3b",
        name: "NVIDIA-Nemotron-3-Nano-30B-A3B",
        arch: hybrid(
            experts(
                arch(52, 2688, 32, 2, 128, 1856, 131072, false, false),
                128,
                6,
                1856,
                3712,
                0,
            ),
            Recurrent {
                layers: 23,
                heads: 64,
                head_dim: 64,
                state: 128,
                groups: 8,
                conv: 4,
                // vLLM keeps Nemotron-H's state in fp32 unless the config says otherwise
                // (`NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE`).
                state_dtype: Some(Dtype::Fp32),
            },
            46,
            29,
        ),
        published_params: 31.6e9,
        published_with_mtp: false,
        published_active: Some(3.2e9),
        active_without_embedding: true,
        config: "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        checkpoint: BF16_CHECKPOINT,
    },
    // Models of the public calibration set (calibration/measured-public.csv).
    dense(
        "phi-1.5",
        "Phi-1.5",
        arch(24, 2048, 32, 32, 64, 8192, 51200, false, false),
        1_418_270_720.0,
        "microsoft/phi-1_5",
    ),
    dense(
        "stablelm-base-alpha-3b",
        "StableLM-base-alpha-3B",
        arch(16, 4096, 32, 32, 128, 16384, 50688, false, false),
        3_638_525_952.0,
        "stabilityai/stablelm-base-alpha-3b",
    ),
    dense(
        "falcon-7b",
        "Falcon-7B",
        arch(32, 4544, 71, 1, 64, 18176, 65024, false, false),
        7_217_189_760.0,
        "tiiuae/falcon-7b",
    ),
    dense(
        "falcon-40b",
        "Falcon-40B",
        arch(60, 8192, 128, 8, 64, 32768, 65024, false, false),
        41_838_936_064.0,
        "tiiuae/falcon-40b",
    ),
    dense(
        "codellama-34b",
        "CodeLlama-34B",
        arch(48, 8192, 64, 8, 128, 22016, 32000, false, true),
        33_743_970_304.0,
        "codellama/CodeLlama-34b-hf",
    ),
    dense(
        "starcoder-15.5b",
        "StarCoder-15.5B",
        arch(40, 6144, 48, 1, 128, 24576, 49152, true, false),
        15_517_462_528.0,
        "bigcode/starcoder",
    ),
    dense(
        "bert-large",
        "BERT-large-uncased",
        arch(24, 1024, 16, 16, 64, 4096, 30522, true, false),
        335_141_888.0,
        "google-bert/bert-large-uncased",
    ),
];

pub fn preset(id: &str) -> Option<&'static Preset> {
    let wanted = id.trim().to_ascii_lowercase();
    PRESETS.iter().find(|p| p.id == wanted)
}

/// The dense, full-attention preset whose parameter count is closest on a log scale: the shape
/// assumed for a bare `--params` (a Llama-style model, as the note on the result says).
pub fn nearest_preset(params: f64) -> &'static Preset {
    let distance = |p: &Preset| (p.published_params.ln() - params.max(1.0).ln()).abs();
    let plain = |p: &&Preset| {
        !p.arch.moe.is_moe()
            && !p.arch.mla.is_mla()
            && p.arch.window.layers == 0
            && p.arch.recurrent.layers == 0
    };
    PRESETS[..CATALOGUE_PRESETS]
        .iter()
        .filter(plain)
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        .unwrap_or(&PRESETS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(search: &str) -> Vec<&'static str> {
        PRESETS[..CATALOGUE_PRESETS]
            .iter()
            .filter(|p| p.matches(search))
            .map(|p| p.id)
            .collect()
    }

    #[test]
    fn the_picker_search_needs_every_word_in_the_name_id_or_family() {
        assert_eq!(found("qwen3 30"), ["qwen3-30b-a3b"]);
        assert_eq!(found("QWEN3  30b "), ["qwen3-30b-a3b"]);
        assert_eq!(
            found("llama 70"),
            ["llama-2-70b", "llama-3.1-70b", "llama-3.3-70b"]
        );
        let gemma = found("gemma");
        assert!(
            gemma.len() >= 7 && gemma.iter().all(|id| id.starts_with("gemma-")),
            "{gemma:?}"
        );
        assert_eq!(found("gemma 27"), ["gemma-3-27b", "gemma-2-27b"]);
        assert_eq!(found("gemma 3 27"), ["gemma-3-27b"]);
        assert_eq!(found("r1 8b"), ["deepseek-r1-distill-llama-8b"]);
        assert_eq!(found("no such model"), Vec::<&str>::new());
        assert_eq!(found("").len(), CATALOGUE_PRESETS);
        assert_eq!(found("  ").len(), CATALOGUE_PRESETS);
        let moe = found("moe");
        assert!(moe.contains(&"qwen3-30b-a3b") && moe.contains(&"deepseek-v3"));
        assert!(moe.contains(&"mixtral-8x7b") && !moe.contains(&"llama-3.1-8b"));
        for id in &moe {
            assert!(
                preset(id).unwrap().arch.moe.is_moe(),
                "{id} is not a mixture of experts"
            );
        }
        assert!(
            moe.contains(&"nemotron-3-nano-30b-a3b"),
            "a hybrid with experts is MoE"
        );
        let dense = found("dense");
        assert!(dense.contains(&"llama-3.1-8b") && !dense.contains(&"qwen3-30b-a3b"));
        assert_eq!(moe.len() + dense.len(), CATALOGUE_PRESETS);
    }

    #[test]
    fn nearest_preset_for_8b_is_llama_3_1_8b() {
        assert_eq!(nearest_preset(8e9).id, "llama-3.1-8b");
        assert_eq!(nearest_preset(70e9).id, "llama-3.1-70b");
        assert_eq!(nearest_preset(1.1e9).id, "tinyllama-1.1b");
    }
}
