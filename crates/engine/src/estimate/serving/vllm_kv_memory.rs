//! `--kv-cache-memory-bytes` (`kv-cache-memory`, since v0.10.2): the KV pool is the given bytes.
//! `determine_available_memory` (vllm/v1/worker/gpu_worker.py of v0.10.2 and v0.33.0) still runs
//! the profile run, "which compiles the model for max_num_batched_tokens", then returns the bytes
//! without measuring the profile, so neither the utilization budget nor the CUDA-graph estimate
//! sizes the pool, and the graphs are captured after it. `init_device` still refuses to start
//! when the free memory is below `gpu_memory_utilization × total` (`request_memory`,
//! vllm/v1/worker/utils.py of v0.33.0), and the pool must still hold one `max_model_len` request.
//! The log prints "reserved N GiB memory for KV Cache as specified by kv_cache_memory_bytes
//! config and skipped memory profiling" in place of "Available KV cache memory".

use super::vllm_rules::{Rule, Rules};
use super::{gib2, Settings};
use crate::scenario::{FieldError, Scenario};
use crate::units::format_size_exact;

/// vLLM's argument parser has no `--kv-cache-memory-bytes` before v0.10.2.
pub(super) fn check(s: &Scenario, errors: &mut Vec<FieldError>) {
    let rules = Rules::new(s.vllm_version);
    if s.kv_cache_memory.is_some() && !rules.applies(Rule::KvCacheMemory) {
        errors.push(FieldError::new(
            "kv-cache-memory",
            format!(
                "vLLM {} has no --kv-cache-memory-bytes (added in 0.10.2); set gpu-memory-utilization instead",
                s.vllm_version
            ),
        ));
    }
}

/// Whether the CUDA-graph estimate is taken out of the budget, when the pool is given: never,
/// since the profile is not measured. `None` when the pool is sized from the budget.
pub(super) fn graphs_inside(s: &Scenario, settings: &mut Settings) -> Option<bool> {
    s.kv_cache_memory.map(|_| {
        settings.push(
            "profile-cudagraphs",
            false,
            false,
            "kv-cache-memory skips the memory profile: the graphs are captured after the pool, outside any budget",
        );
        false
    })
}

/// The pool's bytes as a setting: as given, or what the budget left.
pub(super) fn push_setting(s: &Scenario, pool: f64, settings: &mut Settings) {
    match s.kv_cache_memory {
        Some(bytes) => settings.given("kv-cache-memory", format_size_exact(bytes)),
        None => settings.push(
            "kv-cache-memory",
            Gib(pool),
            false,
            "what the gpu-memory-utilization budget leaves",
        ),
    }
}

/// Bytes as GiB to two decimals, a size the field reads back; written only when the settings are.
struct Gib(f64);

impl std::fmt::Display for Gib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}GiB", gib2(self.0))
    }
}

/// What the estimate says of a given pool.
pub(super) fn note(s: &Scenario) -> Option<String> {
    s.kv_cache_memory.map(|bytes| {
        format!(
            "kv-cache-memory: vLLM reserves {} GiB for the KV pool as given and skips the memory profile's budget; gpu-memory-utilization only checks the free memory at start, so the whole stack is held against the card's memory.",
            gib2(bytes.as_f64())
        )
    })
}

/// With a given pool, vLLM allocates it whatever the card holds: the stack beyond the free memory
/// at start fails with CUDA out of memory when the pool is allocated or the graphs captured.
pub(super) fn out_of_memory(s: &Scenario, stack_bytes: f64, free_at_start: f64) -> Option<String> {
    let pool = s.kv_cache_memory?.as_f64();
    (stack_bytes > free_at_start).then(|| {
        format!(
            "CUDA out of memory: the KV pool of {} GiB (kv-cache-memory) with the weights, profile-run peak, non-torch memory and CUDA graphs needs {} GiB, more than the {} GiB free at start. Lower kv-cache-memory, or leave it unset to size the pool from gpu-memory-utilization.",
            gib2(pool),
            gib2(stack_bytes),
            gib2(free_at_start)
        )
    })
}
