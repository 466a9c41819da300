//! What changed in vLLM's memory between releases: each rule with the first release that applies
//! it, as read in the release's own source (the `vllm` wheel of that version on PyPI). The rules
//! before 0.20 are v0.19.0's, which the calibration logs of 0.10–0.19 follow; `latest` is the
//! newest release checked, [`NEWEST_CHECKED`].
//!
//! Checked and unchanged from v0.19.0 to v0.33.0: the budget (`requested_memory = util × total`),
//! the profile run's shape (`_dummy_run(max_num_batched_tokens)` then the sampler over
//! `min(max_num_seqs, max_num_batched_tokens)` rows), the 70 GiB and A100 rule of the scheduler's
//! defaults, and `--kv-cache-memory-bytes`, which skips the budget.
//!
//! Not modelled, named where the estimate meets them:
//! - What the profile run leaves on the card from 0.27 to 0.30 ([`Rule::ConsumedFromFreeMemory`]
//!   before [`Rule::ProfileSplitLimit`]): the estimate says so ([`Rules::pinned_blocks_note`]).
//! - Model Runner V2 before its default: 0.22 runs it for Qwen3, 0.23 also for Llama and Mistral
//!   (dense and unquantized), 0.24 also for DeepSeek-V2, Qwen2-MoE and GraniteMoE
//!   (`DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`, vllm/config/vllm.py); the shape does not name its
//!   architecture, so the V1 runner's rules apply there unless `model-runner-v2` says otherwise.
//!   V2's persistent buffers (input ids and positions per batched token, block tables of
//!   `max_num_seqs × ⌈max_model_len / block⌉` int32 allocated with the pool) are not counted.
//! - `--max-model-len auto`'s upper bound, the model's derived length (`_get_and_verify_max_len`,
//!   vllm/config/model.py), is taken as the RoPE table's positions: vLLM's differs for Gemma 3
//!   (not scaled again), YaRN since it stopped multiplying the factor, LongRoPE (the original
//!   length) and a tokenizer's `model_max_length`. It matters only when the whole context fits.

use crate::gpu_catalogue::Gpu;
use crate::runtime::Release;

/// The newest release whose rules were checked: what `latest` means.
pub const NEWEST_CHECKED: [u32; 3] = [0, 33, 0];

/// The oldest release whose V1 engine the rules describe (the oldest calibration logs).
const OLDEST_MODELLED: [u32; 3] = [0, 10, 0];

/// A rule that changed between releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1 (vllm/envs.py of v0.20.0, whose
    /// log line nevertheless says "default since v0.21.0"), so `determine_available_memory` takes
    /// `profile_cudagraph_memory()` out of the requested memory; v0.19.0 defaults it to 0.
    GraphsInBudget,
    /// `CacheConfig.gpu_memory_utilization = Field(default=0.92)` (vllm/config/cache.py of
    /// v0.20.0); 0.9 in v0.19.0.
    Utilization092,
    /// `_set_cudagraph_sizes` also captures `max_num_batched_tokens` when it is within the
    /// largest capture size and off the 8/16 stride (vllm/config/vllm.py of v0.21.0).
    CaptureBatchedTokens,
    /// `get_batch_defaults` gives GPUs of ≥ 160 GiB 16384 batched tokens and 1024 sequences under
    /// `vllm serve` (vllm/engine/arg_utils.py of v0.28.0: "for GPUs like B200/B300").
    LargestTier,
    /// The default largest capture size is 1024 on data-centre Blackwell (compute capability
    /// 10.x, `is_device_capability_family(100)`), 512 elsewhere (vllm/config/vllm.py of v0.28.0).
    BlackwellCapture,
    /// `_set_cudagraph_sizes` also captures `max_num_seqs` when it is within the largest capture
    /// size (`uniform_decode_sizes`, vllm/config/vllm.py of v0.31.0).
    CaptureMaxSeqs,
    /// "GPU KV cache size" reports `int(max_concurrency × max_model_len)` rather than
    /// `num_blocks // groups × block_size` (`_report_kv_cache_config`,
    /// vllm/v1/core/kv_cache_utils.py of v0.20.1; v0.20.0 still divides the blocks). The two
    /// agree for a model of one layer kind whose `max_model_len` is a whole number of blocks;
    /// a hybrid model's count now includes what its recurrent groups take per request.
    TokensFromConcurrency,
    /// A hybrid model (recurrent layers beside attention) turns prefix caching on by default:
    /// `default_prefix_caching = model_config.is_prefix_caching_supported`
    /// (`_set_default_chunked_prefill_and_prefix_caching_args`, vllm/engine/arg_utils.py of
    /// v0.28.0), which is true for generative hybrids since v0.26.0 (vllm/config/model.py); v0.26
    /// and v0.27 still left it opt-in (`and not model_config.is_hybrid`), and before v0.26
    /// hybrids did not support it.
    HybridPrefixCaching,
    /// GB10 (DGX Spark, compute capability 12.1) keeps the small tier of the scheduler's
    /// defaults whatever its memory (`is_gb10`, vllm/engine/arg_utils.py of v0.33.0).
    Gb10SmallTier,
    /// The V1 engine runs by default (`VLLM_USE_V1` defaults to "1" in vllm/envs.py of v0.8.0,
    /// "0" in v0.7.3), with its scheduler defaults by GPU; before it, V0's.
    V1Engine,
    /// Model Runner V2 (vllm/v1/worker/gpu/) runs by default for every generating model without
    /// experts, recurrent layers or attention-free layers, and for the experts of the listed
    /// architectures (`_is_default_v2_model_runner_model`, vllm/config/vllm.py of v0.25.0).
    V2RunnerDense,
    /// Model Runner V2 runs by default for every model (`use_v2_model_runner` no longer asks
    /// the architecture, vllm/config/vllm.py of v0.29.0).
    V2RunnerAll,
    /// Model Runner V2's `profile_cudagraph_memory` captures the graphs into a throwaway pool
    /// and returns their size (vllm/v1/worker/gpu/cudagraph_utils.py of v0.29.0); before, it
    /// returned 0 (vllm/v1/worker/gpu/model_runner.py of v0.22.0–v0.28.0), so the graphs were
    /// captured after the pool, outside the budget, whatever
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` said.
    V2GraphsProfiled,
    /// Model Runner V2's dummy sampler runs a second pass with
    /// `SamplingParams.for_sampler_warmup()` (temperature, top-k/top-p, min-p, penalties, logit
    /// bias, logprobs), the fp32 logits pipeline (`_dummy_sampler_run`,
    /// vllm/v1/worker/gpu/model_runner.py of v0.33.0); before, only the default pass, which
    /// processes nothing.
    V2SamplerWarmup,
    /// The Triton attention backend refuses an fp8 KV cache below compute capability 8.9
    /// (`TritonAttentionImpl.__init__`, vllm/v1/attention/backends/triton_attn.py of v0.24.0).
    TritonFp8Kv,
    /// Model Runner V2 runs by default for a few named architectures (Qwen3 in v0.22.0;
    /// `DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`, vllm/config/vllm.py).
    V2RunnerNamed,
    /// `--kv-cache-memory-bytes` (`CacheConfig.kv_cache_memory_bytes`, vllm/config/cache.py and
    /// vllm/engine/arg_utils.py of v0.10.2; absent from v0.10.1.1): `determine_available_memory`
    /// still runs the profile run but returns the given bytes, skipping the budget and the
    /// CUDA-graph estimate (vllm/v1/worker/gpu_worker.py of v0.10.2 and v0.33.0).
    KvCacheMemory,
    /// `--max-model-len auto` (or -1; `human_readable_int_or_auto`, vllm/engine/arg_utils.py of
    /// v0.14.0, absent from v0.13.0): profiled at the model's whole context, then lowered to the
    /// longest request the pool holds (`_auto_fit_max_model_len`, vllm/v1/core/kv_cache_utils.py).
    AutoMaxModelLen,
    /// The one-request check and auto-fit plan against the pool less one block, the null block
    /// `BlockPool` holds back ("Reserve the null block", `get_kv_cache_configs`,
    /// vllm/v1/core/kv_cache_utils.py of v0.29.0; absent from v0.28.0).
    NullBlockReserved,
    /// V0's chunked prefill defaults to 2048 batched tokens (`SchedulerConfig`, vllm/config.py
    /// of v0.6.5 and v0.7.2); 512 in v0.6.4.
    V0ChunkedPrefill2048,
    /// The consumed memory is the free memory lost from the worker's start to the end of the
    /// profile run, after `gc` and `empty_cache()` (`total_consumed`, `memory_profiling` in
    /// vllm/utils/mem_utils.py of v0.27.0), so it holds every block the caching allocator cannot
    /// release; 0.26 added the weights, the torch peak increase and the non-torch increase, which
    /// leave such blocks out.
    ConsumedFromFreeMemory,
    /// The profile run is made under `max_split_size_mb=20` (`_scoped_allocator_max_split` around
    /// `profile_run`, vllm/v1/worker/gpu_worker.py of v0.31.0, whose comment names the fault it
    /// ends: a later small allocation carved out of a freed large block pins the whole segment,
    /// which is then counted as consumed and taken from the KV cache).
    ProfileSplitLimit,
    /// On Intel GPUs the XPU platform raises a gated-DeltaNet hybrid's attention block to a
    /// multiple of 64 tokens, "since kernel only supports block size dividable by 64", and pads
    /// the recurrent page with it (`XPUPlatform.update_block_size_for_backend`,
    /// vllm/platforms/xpu.py of v0.20.0; absent from v0.19.1).
    XpuGdnBlock64,
}

impl Rule {
    /// The first release that applies it.
    const fn since(self) -> [u32; 3] {
        match self {
            Rule::GraphsInBudget | Rule::Utilization092 | Rule::XpuGdnBlock64 => [0, 20, 0],
            Rule::TokensFromConcurrency => [0, 20, 1],
            Rule::CaptureBatchedTokens => [0, 21, 0],
            Rule::LargestTier | Rule::BlackwellCapture | Rule::HybridPrefixCaching => [0, 28, 0],
            Rule::CaptureMaxSeqs => [0, 31, 0],
            Rule::V2RunnerNamed => [0, 22, 0],
            Rule::TritonFp8Kv => [0, 24, 0],
            Rule::V2RunnerDense => [0, 25, 0],
            Rule::V2RunnerAll | Rule::V2GraphsProfiled => [0, 29, 0],
            Rule::V2SamplerWarmup => [0, 33, 0],
            Rule::Gb10SmallTier => [0, 33, 0],
            Rule::V1Engine => [0, 8, 0],
            Rule::V0ChunkedPrefill2048 => [0, 6, 5],
            Rule::ConsumedFromFreeMemory => [0, 27, 0],
            Rule::ProfileSplitLimit => [0, 31, 0],
            Rule::KvCacheMemory => [0, 10, 2],
            Rule::AutoMaxModelLen => [0, 14, 0],
            Rule::NullBlockReserved => [0, 29, 0],
        }
    }
}

/// The rules of one release.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rules {
    pub release: Release,
}

impl Rules {
    pub fn new(release: Release) -> Rules {
        Rules { release }
    }

    pub fn applies(self, rule: Rule) -> bool {
        self.release.at_least(rule.since())
    }

    /// `--gpu-memory-utilization` when unset, and the release it comes from.
    pub fn default_utilization(self) -> (f64, &'static str) {
        if self.applies(Rule::Utilization092) {
            (0.92, "vLLM's default since 0.20")
        } else {
            (0.9, "vLLM's default before 0.20")
        }
    }

    /// Whether the CUDA-graph estimate is taken out of the budget when the environment leaves
    /// `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` unset, and why.
    pub fn default_graphs_in_budget(self) -> (bool, &'static str) {
        if self.applies(Rule::GraphsInBudget) {
            (true, "vLLM's default since 0.20 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1): the graphs' estimate is taken out of the budget")
        } else {
            (false, "vLLM's default before 0.20: the graphs are captured after the pool, outside the budget")
        }
    }

    /// Whether Model Runner V2 runs when `VLLM_USE_V2_MODEL_RUNNER` is unset, for a model with
    /// or without experts or recurrent layers, and why.
    pub fn default_v2_runner(self, experts_or_recurrent: bool) -> (bool, &'static str) {
        if self.applies(Rule::V2RunnerAll) {
            (
                true,
                "vLLM's default since 0.29: Model Runner V2 for every model",
            )
        } else if self.applies(Rule::V2RunnerDense) && !experts_or_recurrent {
            (true, "vLLM's default since 0.25: Model Runner V2 for models without experts or recurrent layers")
        } else if self.applies(Rule::V2RunnerDense) {
            (false, "vLLM's default from 0.25 to 0.28 for models with experts or recurrent layers: the V1 runner (but for DeepSeek-V2, Qwen2-MoE and GraniteMoE, which the shape cannot tell)")
        } else {
            (false, "vLLM's default before 0.25: the V1 runner (0.22–0.24 run V2 for a few named architectures, which the shape cannot tell)")
        }
    }

    /// What the estimate says of the runner it assumed where the release's default depends on
    /// the architecture's name, which the shape does not carry (0.22–0.24), or where V2's
    /// sampler is counted at V1's bytes (0.33).
    pub fn v2_note(self, given: bool, v2: bool) -> Option<String> {
        if !given && self.applies(Rule::V2RunnerNamed) && !self.applies(Rule::V2RunnerDense) {
            Some(format!("vLLM {} runs Model Runner V2 by default for a few architectures (Qwen3 from 0.22; Llama and Mistral from 0.23; DeepSeek-V2, Qwen2-MoE and GraniteMoE from 0.24), which the shape does not name: the V1 runner's rules apply (model-runner-v2=true for V2's).", self.release))
        } else if v2 && self.applies(Rule::V2SamplerWarmup) {
            Some("Model Runner V2's profile run samples twice since 0.33, the second pass with every sampling parameter on (fp32 logits, top-k/top-p, penalties, logprobs): its peak is counted at the V1 sampler's fitted bytes per logit, not measured under V2.".to_string())
        } else {
            None
        }
    }

    /// Whether the runner's CUDA-graph estimate can be taken out of the budget: V1's always,
    /// Model Runner V2's from 0.29.
    pub fn graphs_profiled(self, v2_runner: bool) -> bool {
        !v2_runner || self.applies(Rule::V2GraphsProfiled)
    }

    /// The default largest capture size on this GPU.
    pub fn capture_ceiling(self, gpu: Option<&Gpu>) -> u32 {
        let blackwell = gpu.is_some_and(|g| g.id == "b200");
        if blackwell && self.applies(Rule::BlackwellCapture) {
            1024
        } else {
            512
        }
    }

    /// What the estimate says of a release that counts the blocks the profile run leaves pinned
    /// as consumed memory, and profiles without the split limit that keeps freed blocks whole
    /// (0.27 to 0.30): the estimate cannot size them and does not count them.
    pub fn pinned_blocks_note(self) -> Option<String> {
        (self.applies(Rule::ConsumedFromFreeMemory) && !self.applies(Rule::ProfileSplitLimit)).then(|| {
            format!("vLLM {} counts what its profile run leaves on the card as consumed memory, and profiles without the 20 MiB split limit 0.31 adds: a block the profile frees (torch.compile's on a cold cache, a workspace's) can be pinned and taken from the KV cache. The estimate is a warm cache's start (a restart); a first start's pool is smaller (0.8–2.1 GiB in two pairs at 0.28: docs/accuracy.md).", self.release)
        })
    }

    /// What the estimate says of a hybrid model on an Intel GPU, whose attention block vLLM's XPU
    /// platform rounds up to 64 tokens when the recurrent layers are gated DeltaNet (Qwen3.5,
    /// Qwen3-Next) but not Mamba's, which the shape does not tell apart: the block stays CUDA's.
    pub fn intel_block_note(
        self,
        gpu: Option<&Gpu>,
        recurrent_layers: u32,
        block: u32,
    ) -> Option<String> {
        let intel = gpu.is_some_and(Gpu::is_intel);
        (intel && recurrent_layers > 0 && self.applies(Rule::XpuGdnBlock64) && !block.is_multiple_of(64)).then(|| {
            format!("On an Intel GPU, vLLM {} raises a gated-DeltaNet hybrid's (Qwen3.5, Qwen3-Next) attention block to a multiple of 64 tokens, {} here, and pads the recurrent state's page with it; the shape does not say whether its recurrent layers are gated DeltaNet or Mamba, so the block stays {block} tokens and the pool may hold fewer tokens than estimated.", self.release, block.div_ceil(64) * 64)
        })
    }

    /// What the estimate says of the release it was asked for: nothing for a release whose
    /// rules were checked, else which rules stand in for it.
    pub fn note(self) -> Option<String> {
        match self.release {
            // A patch release keeps its minor release's memory rules.
            Release::Version(v) if v[..2] > NEWEST_CHECKED[..2] => Some(format!(
                "vLLM {} is newer than the releases whose memory rules were checked: those of {}.{} apply.",
                self.release, NEWEST_CHECKED[0], NEWEST_CHECKED[1]
            )),
            Release::Version(v) if v < OLDEST_MODELLED => Some(format!(
                "vLLM {} predates the V1 engine these rules describe (0.10 and later): v0.19's memory rules apply (with V0's scheduler defaults before 0.8), and its pool may differ.",
                self.release
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_applies_from_its_release() {
        let at = |v: &str| Rules::new(Release::parse(v).unwrap());
        assert!(!at("0.19.1").applies(Rule::GraphsInBudget));
        assert!(at("0.20.0").applies(Rule::GraphsInBudget));
        assert!(!at("0.20.0").applies(Rule::TokensFromConcurrency));
        assert!(at("0.20.1").applies(Rule::TokensFromConcurrency));
        assert_eq!(at("0.19").default_utilization().0, 0.9);
        assert_eq!(at("0.20").default_utilization().0, 0.92);
        assert!(!at("0.27.1").applies(Rule::LargestTier));
        assert!(at("0.28").applies(Rule::LargestTier));
        assert!(!at("0.27.1").applies(Rule::HybridPrefixCaching));
        assert!(at("0.28.0").applies(Rule::HybridPrefixCaching));
        assert!(Rules::new(Release::Latest).applies(Rule::Gb10SmallTier));
        assert!(!at("0.7.3").applies(Rule::V1Engine));
        assert!(at("0.8").applies(Rule::V1Engine));
        assert!(!at("0.6.4").applies(Rule::V0ChunkedPrefill2048));
        assert!(at("0.25").note().is_none());
        assert!(!at("0.24.0").default_v2_runner(false).0);
        assert!(at("0.25.0").default_v2_runner(false).0);
        assert!(!at("0.28.0").default_v2_runner(true).0);
        assert!(at("0.29.0").default_v2_runner(true).0);
        assert!(!at("0.28.0").graphs_profiled(true));
        assert!(at("0.28.0").graphs_profiled(false));
        assert!(at("0.29.0").graphs_profiled(true));
        assert!(!at("0.32.0").applies(Rule::V2SamplerWarmup));
        assert!(at("0.33.0").applies(Rule::V2SamplerWarmup));
        assert!(!at("0.13.0").applies(Rule::AutoMaxModelLen));
        assert!(at("0.14.0").applies(Rule::AutoMaxModelLen));
        assert!(!at("0.28.0").applies(Rule::NullBlockReserved));
        assert!(at("0.29.0").applies(Rule::NullBlockReserved));
        assert!(!at("0.19.1").applies(Rule::XpuGdnBlock64));
        assert!(at("0.20.0").applies(Rule::XpuGdnBlock64));
        assert!(!at("0.10.1").applies(Rule::KvCacheMemory));
        assert!(at("0.10.2").applies(Rule::KvCacheMemory));
        assert!(at("0.40").note().unwrap().contains("0.33"));
        assert!(at("0.6.4").note().unwrap().contains("V1"));
    }

    #[test]
    fn pinned_blocks_are_named_from_027_until_the_split_limit() {
        let at = |v: &str| Rules::new(Release::parse(v).unwrap());
        assert!(at("0.26.1").pinned_blocks_note().is_none());
        assert!(at("0.27.0")
            .pinned_blocks_note()
            .unwrap()
            .contains("vLLM 0.27 "));
        assert!(at("0.30.9").pinned_blocks_note().is_some());
        assert!(at("0.31.0").pinned_blocks_note().is_none());
        assert!(Rules::new(Release::Latest).pinned_blocks_note().is_none());
    }
}
