//! What runs an inference scenario: transformers' `generate()` (a cache that grows with the
//! sequence) or a serving runtime with its own memory rules (vLLM's and SGLang's preallocated KV
//! pools, llama.cpp's per-device buffers, mlx-lm's arrays). The rules themselves live in `estimate/serving/`,
//! each runtime's in its own module, registered in `Runtime::rules`.

use crate::wire::wire_enum;
use vramfit_gguf::GgmlType;

wire_enum! {
    /// The program that holds the model on the GPU.
    Runtime {
        Transformers = "transformers" => "Hugging Face transformers: a cache that grows with the sequence",
        Vllm = "vllm" => "vLLM V1: a preallocated KV pool in gpu-memory-utilization of the GPU",
        Sglang = "sglang" => "SGLang: weights and KV pool in mem-fraction-static of free memory",
        LlamaCpp = "llama.cpp" => "llama.cpp (also ollama, LM Studio): GGUF weights, layers offloaded with -ngl",
        Mlx = "mlx" => "MLX (mlx-lm) on Apple silicon: affine-quantized safetensors, a KV cache grown 256 tokens at a time",
    }
}

wire_enum! {
    /// Which CUDA graphs vLLM captures (`--compilation-config.cudagraph_mode`,
    /// vllm/config/compilation.py): piecewise graphs run every batch with attention left eager
    /// between them; full graphs take whole decode-only batches, attention included.
    CudagraphMode {
        FullAndPiecewise = "full-and-piecewise" => "piecewise graphs for every batch size and full graphs for decode batches (vLLM's default since 0.11)",
        Piecewise = "piecewise" => "piecewise graphs only (vLLM 0.10's default; what vLLM falls back to for backends without full graphs, such as Llama 4's chunked attention)",
        FullDecodeOnly = "full-decode-only" => "full graphs for decode batches only; mixed batches run eager",
    }
}

impl CudagraphMode {
    pub fn piecewise(self) -> bool {
        matches!(
            self,
            CudagraphMode::FullAndPiecewise | CudagraphMode::Piecewise
        )
    }

    pub fn full(self) -> bool {
        matches!(
            self,
            CudagraphMode::FullAndPiecewise | CudagraphMode::FullDecodeOnly
        )
    }
}

wire_enum! {
    /// vLLM's attention backend (`--attention-backend`), as far as it changes memory: with full
    /// CUDA graphs, FlashAttention 3 preallocates its split-KV buffers in the graph pool.
    AttentionBackend {
        Auto = "auto" => "vLLM's choice: FlashAttention for 16-bit models, Triton for fp32",
        FlashAttn = "flash-attn" => "FlashAttention (version 3 on Hopper, 2 elsewhere)",
        Triton = "triton" => "Triton attention (vLLM's pick for Gemma 3's image-prefix attention and for fp32)",
    }
}

wire_enum! {
    /// llama.cpp's KV-cache types (`--cache-type-k`, `--cache-type-v`): ggml types, sized by
    /// their blocks (a quantized V cache needs flash attention).
    CacheType {
        F16 = "f16" => "16-bit float (llama.cpp's default)",
        Bf16 = "bf16" => "bfloat16",
        F32 = "f32" => "32-bit float",
        Q8_0 = "q8_0" => "8-bit, 34 bytes per 32 values",
        Q5_1 = "q5_1" => "5-bit with minimum, 24 bytes per 32",
        Q5_0 = "q5_0" => "5-bit, 22 bytes per 32",
        Q4_1 = "q4_1" => "4-bit with minimum, 20 bytes per 32",
        Q4_0 = "q4_0" => "4-bit, 18 bytes per 32",
        Iq4Nl = "iq4_nl" => "4-bit non-linear, 18 bytes per 32",
    }
}

wire_enum! {
    /// How many rows of logits llama.cpp reserves in its worst-case graph (`sched_reserve`'s
    /// `n_outputs`): since commit de6f727 (PR #23861, release b9460) llama-server caps them at
    /// `n_outputs_max = min(n_batch, n_parallel)`; the library, llama-cli, llama-bench, ollama's
    /// runner and older servers reserve one for every token of the ubatch.
    LogitRows {
        Slots = "slots" => "one per slot (llama-server since b9460)",
        Ubatch = "ubatch" => "one per ubatch token (library, llama-cli, ollama, older servers)",
    }
}

wire_enum! {
    /// Which part `-ngl` offloads first. PR #18148 (merged 2025-12-17, "llama: offload output
    /// layer to GPU first") made `-ngl k` put the output layer and the last `k − 1` blocks on the
    /// GPU; before it, `-ngl k` put the last `k` blocks there and the output layer only when
    /// `k` exceeded the block count (`i_gpu_start = max(n_layer − ngl, 0)`, src/llama-model.cpp).
    OffloadOutput {
        First = "first" => "the output layer first (builds since December 2025)",
        Last = "last" => "the output layer last (older builds, llama-cpp-python before 2026)",
    }
}

wire_enum! {
    /// The type of the KQ mask llama.cpp reserves under flash attention. PR #23764 ("llama: use
    /// f16 mask for FA to save VRAM", merged 2026-05-29, first in release b9410) makes the host
    /// write it in f16; before it the host wrote f32 and the graph cast it to f16 on the GPU,
    /// both copies in the compute buffer. Without flash attention the mask is f32.
    KqMask {
        F16 = "f16" => "f16 from the host (builds since b9410, May 2026)",
        F32 = "f32" => "f32, cast to f16 on the GPU (older builds)",
    }
}

wire_enum! {
    /// The ggml backend that runs llama.cpp's graph on the GPU. Only the allocation of the
    /// attention mask differs in what the planner models. ROCm is ggml-cuda's sources built for
    /// HIP (ggml/src/ggml-hip/CMakeLists.txt @047c7744), so it allocates as CUDA does.
    GpuBackend {
        Cuda = "cuda" => "CUDA (also ROCm/HIP)",
        Vulkan = "vulkan" => "Vulkan",
    }
}

impl CacheType {
    pub fn ggml(self) -> GgmlType {
        match self {
            CacheType::F16 => GgmlType::F16,
            CacheType::Bf16 => GgmlType::BF16,
            CacheType::F32 => GgmlType::F32,
            CacheType::Q8_0 => GgmlType::Q8_0,
            CacheType::Q5_1 => GgmlType::Q5_1,
            CacheType::Q5_0 => GgmlType::Q5_0,
            CacheType::Q4_1 => GgmlType::Q4_1,
            CacheType::Q4_0 => GgmlType::Q4_0,
            CacheType::Iq4Nl => GgmlType::IQ4_NL,
        }
    }

    /// Bytes per cached value: the type's block bytes over its block length.
    pub fn bytes_per_value(self) -> f64 {
        let t = self.ggml();
        t.block_bytes() as f64 / t.block_elements() as f64
    }

    pub fn is_quantized(self) -> bool {
        !matches!(self, CacheType::F16 | CacheType::Bf16 | CacheType::F32)
    }
}

/// A runtime's release as its users name it: `latest` (the newest release whose rules were
/// checked in its source), or the version it prints (`0.25.1`, `v0.5.10.post1`). Rules that
/// changed between releases (`estimate/serving/`) apply from the release that introduced them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Latest,
    /// Major, minor and patch; a suffix (`rc1`, `.post1`, `+cu128`) does not change the rules.
    Version([u32; 3]),
}

impl Release {
    /// Reads `latest` or a version of one to three numbers, with an optional leading `v` and any
    /// suffix after the numbers.
    pub fn parse(text: &str) -> Result<Release, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("latest") {
            return Ok(Release::Latest);
        }
        let digits = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let mut parts = [0u32; 3];
        let mut rest = digits;
        for (i, part) in parts.iter_mut().enumerate() {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if end == 0 {
                if i == 0 {
                    return Err(format!(
                        "{text} is not a release: give latest or a version such as 0.25.1"
                    ));
                }
                break;
            }
            *part = rest[..end]
                .parse()
                .map_err(|_| format!("{text} is not a release: its numbers are too large"))?;
            rest = &rest[end..];
            match rest.strip_prefix('.') {
                Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
                _ => break,
            }
        }
        Ok(Release::Version(parts))
    }

    /// Whether this release applies a rule introduced in `since`: `latest` applies every rule.
    pub fn at_least(self, since: [u32; 3]) -> bool {
        match self {
            Release::Latest => true,
            Release::Version(v) => v >= since,
        }
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Release::Latest => f.write_str("latest"),
            Release::Version([major, minor, 0]) => write!(f, "{major}.{minor}"),
            Release::Version([major, minor, patch]) => write!(f, "{major}.{minor}.{patch}"),
        }
    }
}

/// vLLM's `--max-model-len`, SGLang's `--context-length` and llama.cpp's `-c` as set: a length,
/// or `auto`, the context left to the runtime to fit: vLLM's (`-1` the same;
/// `human_readable_int_or_auto`, vllm/engine/arg_utils.py of v0.14.0), the longest request the
/// pool holds; llama.cpp's, `-c` left out, the trained context that `--fit` may shrink. For
/// llama.cpp a length of 0 is `-c 0`, the trained context (`0 = loaded from model`,
/// common/arg.cpp), which `--fit` keeps whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextLength {
    Tokens(u32),
    Auto,
}

impl ContextLength {
    /// The length, unless it is left to the runtime to fit.
    pub fn tokens(self) -> Option<u32> {
        match self {
            ContextLength::Tokens(n) => Some(n),
            ContextLength::Auto => None,
        }
    }
}

impl std::fmt::Display for ContextLength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextLength::Tokens(n) => write!(f, "{n}"),
            ContextLength::Auto => f.write_str("auto"),
        }
    }
}

/// A llama.cpp build as its binaries print it (`version: 6500 (…)`, release tag `b6500`): the
/// commit count on master, so a later build has every earlier build's changes. `latest` is the
/// newest build whose rules were checked (`estimate/serving/llamacpp_rules.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlamaBuild {
    Latest,
    Number(u32),
}

impl LlamaBuild {
    /// Reads `latest`, `b6500` or `6500`.
    pub fn parse(text: &str) -> Result<LlamaBuild, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("latest") {
            return Ok(LlamaBuild::Latest);
        }
        let digits = text.strip_prefix(['b', 'B']).unwrap_or(text);
        digits.parse().map(LlamaBuild::Number).map_err(|_| {
            format!("{text} is not a llama.cpp build: give latest or a build such as b6500")
        })
    }

    /// Whether this build has a change first built in `since`: `latest` has every change.
    pub fn at_least(self, since: u32) -> bool {
        match self {
            LlamaBuild::Latest => true,
            LlamaBuild::Number(n) => n >= since,
        }
    }
}

impl std::fmt::Display for LlamaBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LlamaBuild::Latest => f.write_str("latest"),
            LlamaBuild::Number(n) => write!(f, "b{n}"),
        }
    }
}

#[cfg(test)]
mod release_tests {
    use super::Release;

    #[test]
    fn releases_read_as_their_users_write_them() {
        assert_eq!(Release::parse("latest"), Ok(Release::Latest));
        assert_eq!(Release::parse("0.25"), Ok(Release::Version([0, 25, 0])));
        assert_eq!(
            Release::parse("v0.5.10.post1"),
            Ok(Release::Version([0, 5, 10]))
        );
        assert_eq!(
            Release::parse("0.14.0rc2.dev348+gdcd80206b"),
            Ok(Release::Version([0, 14, 0]))
        );
        assert_eq!(Release::parse("0.10.1.1"), Ok(Release::Version([0, 10, 1])));
        assert!(Release::parse("new").is_err());
        assert!(Release::parse("").is_err());
        assert!(Release::parse("99999999999.1").is_err());
        assert_eq!(Release::parse("0.25").unwrap().to_string(), "0.25");
        assert_eq!(Release::parse("0.5.10").unwrap().to_string(), "0.5.10");
    }

    #[test]
    fn a_rule_applies_from_its_release_on() {
        let since = [0, 20, 0];
        assert!(!Release::parse("0.19.1").unwrap().at_least(since));
        assert!(Release::parse("0.20").unwrap().at_least(since));
        assert!(Release::Latest.at_least(since));
    }

    #[test]
    fn llama_builds_read_with_or_without_their_b() {
        use super::LlamaBuild;
        assert_eq!(LlamaBuild::parse("b6500"), Ok(LlamaBuild::Number(6500)));
        assert_eq!(LlamaBuild::parse(" 6500 "), Ok(LlamaBuild::Number(6500)));
        assert_eq!(LlamaBuild::parse("Latest"), Ok(LlamaBuild::Latest));
        assert!(LlamaBuild::parse("b65x").is_err());
        assert!(LlamaBuild::parse("").is_err());
        assert_eq!(LlamaBuild::Number(6500).to_string(), "b6500");
        assert!(LlamaBuild::Number(6500).at_least(6500));
        assert!(!LlamaBuild::Number(6499).at_least(6500));
    }
}
