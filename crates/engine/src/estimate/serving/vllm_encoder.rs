//! vLLM's profile of the multimodal encoder, which runs before the text profile and can set the
//! activation peak a multimodal model's pool is sized under (V1 engine; read in
//! vllm/v1/worker/gpu_model_runner.py of v0.19.0 and v0.28.0, `profile_run`, lines 6558–6631 of
//! v0.28.0).
//!
//! - Unless `--skip-mm-profiling`, `profile_run` builds one dummy batch of the modality with the
//!   most tokens per item (`_get_mm_dummy_batch`), runs `embed_multimodal` on it, keeps every
//!   output in the encoder cache (`self.encoder_cache[f"tmp_{i}"]`, lines 6600–6615), then runs the
//!   text profile (`_dummy_run`, the sampler) and only then clears the cache (line 6630). The
//!   dummy batch is a local of `profile_run`, so its pixels outlive the encoder too.
//! - Items in the batch (`MultiModalBudget._get_max_items`, vllm/multimodal/encoder_budget.py
//!   lines 147–187): `max(1, min(budget // tokens per item, max_num_seqs × max(1, min(limit,
//!   max_model_len // tokens per item))))`, the budget `max(max_num_batched_tokens, tokens per
//!   item)` (`compute_mm_encoder_budget`, vllm/v1/core/encoder_cache_manager.py lines 322–327;
//!   both `max_num_encoder_input_tokens` and `encoder_cache_size` are `max_num_batched_tokens`,
//!   vllm/config/scheduler.py lines 238–239) and the limit 999 when unset
//!   (`MultiModalConfig.get_limit_per_prompt`, vllm/config/multimodal.py line 499).
//! - Pixels come in the model's dtype (`_postprocess_output` casts every floating tensor,
//!   vllm/multimodal/processing/context.py lines 246–247), so `.type(self.visual.dtype)` in
//!   `_process_image_input` (vllm/model_executor/models/qwen3_vl.py line 2248) copies nothing.
//!
//! Modelled for Qwen3-VL's and Qwen3.5's towers (the blocks of qwen3_vl.py): their processor's
//! largest image is `size.longest_edge` = 4096² pixels (`Qwen2VLImageProcessorFast` in the
//! checkpoints' preprocessor_config.json), more tokens than their largest video item, so the
//! dummy batch is of images; Qwen3-VL's deepstack outputs are left out, as its mergers are. Read
//! in v0.19.0 and v0.28.0; applied from the V1 engine's default (v0.8.0) on.

use super::vllm_rules::{Rule, Rules};
use crate::estimate::stack::Stack;
use crate::estimate::ComponentId;
use crate::scenario::{Resolved, Scenario};

/// Pixels of the processor's largest image (`size.longest_edge` of Qwen3-VL's and Qwen3.5's
/// preprocessor_config.json: 16777216, 4096 × 4096).
const MAX_IMAGE_PIXELS: u64 = 16_777_216;

/// Values one patch carries: 3 channels × `temporal_patch_size` 2 (an image is repeated to fill
/// the temporal patch) per pixel.
const VALUES_PER_PIXEL: u64 = 6;

/// `--limit-mm-per-prompt` when unset (`get_limit_per_prompt`, vllm/config/multimodal.py).
const DEFAULT_ITEMS_PER_PROMPT: u64 = 999;

/// The scheduler's figures the encoder budget follows.
pub(super) struct Budget {
    pub tp: u32,
    pub batched_tokens: u32,
    pub seqs: u32,
    pub max_model_len: u32,
}

/// The patch of Qwen3-VL's and Qwen3.5's towers; Qwen2-VL's and Qwen2.5-VL's, which merge too,
/// take 14-pixel patches up to another `max_pixels` through windowed blocks, not modelled.
const QWEN3_VL_PATCH: u32 = 16;

/// Whether vLLM profiles this model's encoder as modelled here: a Qwen3-VL-style tower (16-pixel
/// patches merged by the projector) under the V1 engine.
fn modelled(r: &Resolved, rules: Rules) -> bool {
    let v = &r.arch.vision;
    v.layers > 0 && v.merge >= 2 && v.patch == QWEN3_VL_PATCH && rules.applies(Rule::V1Engine)
}

/// Patches of the largest image and the tokens the projector makes of them.
fn largest_image(r: &Resolved) -> (u64, u64) {
    let v = &r.arch.vision;
    let patches = MAX_IMAGE_PIXELS / u64::from(v.patch).pow(2);
    (patches, patches / u64::from(v.merge).pow(2))
}

/// Dummy items in the profile's batch (`MultiModalBudget._get_max_items`).
fn items(tokens_per_item: u64, b: &Budget) -> u64 {
    let per_item = tokens_per_item.max(1);
    let budget = u64::from(b.batched_tokens).max(per_item);
    let per_prompt = DEFAULT_ITEMS_PER_PROMPT
        .min(u64::from(b.max_model_len) / per_item)
        .max(1);
    (budget / per_item)
        .min(u64::from(b.seqs) * per_prompt)
        .max(1)
}

/// Elements per patch one vision block holds at its peak on one tensor-parallel rank (the larger
/// of its attention and its MLP), beside the residual stream:
/// - attention (`Qwen2_5_VisionAttention.forward`, qwen2_5_vl.py lines 400–458): the residual and
///   its norm, whole (2H), the qkv projection (3H), the contiguous q·k (2H, line 427) and their
///   rotated copy (2H), the context (H), split over ranks, and the projection's output (H);
///   ViT attention runs through FlashAttention on Ampere and later
///   (`get_supported_vit_attn_backends`, vllm/platforms/cuda.py line 499), which keeps no scores;
/// - MLP (`Qwen3_VisionMLP.forward`, qwen3_vl.py line 432): the residual and its norm (2H), fc1's
///   output and its activation (2F, split over ranks).
fn block_elements(hidden: f64, ffn: f64, tp: f64) -> f64 {
    let attention = 3.0 * hidden + 8.0 * hidden / tp;
    let mlp = 2.0 * hidden + 2.0 * ffn / tp;
    attention.max(mlp)
}

/// Pushes what the encoder's profile adds to the text profile's peak `text_peak`: the larger of
/// the encoder's own peak beyond it (the dummy pixels, the position embeddings and one block at
/// its peak) and what stays through the text profile (the pixels and the cached outputs).
/// Returns the bytes added (0 where vLLM profiles no encoder or it is not modelled).
pub(super) fn push(
    s: &Scenario,
    r: &Resolved,
    rules: Rules,
    b: &Budget,
    text_peak: f64,
    stack: &mut Stack,
) -> f64 {
    if !modelled(r, rules) {
        return 0.0;
    }
    let v = &r.arch.vision;
    let (patches_per_item, tokens_per_item) = largest_image(r);
    let n = items(tokens_per_item, b) as f64;
    let fx = stack.fx();
    let e = || fx.num(r.act_dtype.bytes()).unit("B");
    let patches = || fx.sym("images", n) * fx.sym("patches", patches_per_item as f64);
    let pixels = || {
        (patches() * fx.num((VALUES_PER_PIXEL * u64::from(v.patch).pow(2)) as f64) * e())
            .words("dummy pixels")
    };
    let hidden = f64::from(v.hidden);
    let block = block_elements(hidden, f64::from(v.ffn), f64::from(b.tp.max(1)));
    let encoder = pixels()
        + patches()
            * (fx.sym("H_vision", hidden).words("position embeddings")
                + fx.num(block).words("one block's peak"))
            * e();
    let outputs = fx.sym("images", n)
        * fx.sym("tokens", tokens_per_item as f64)
        * fx.sym("H", f64::from(r.arch.hidden))
        * e();
    let kept = pixels() + outputs.words("encoder cache");
    let text = fx.num(text_peak).words("text profile's peak").size(s.units);
    let added = (encoder - text).max(kept);
    let bytes = added.value();
    stack.push(
        ComponentId::EncoderProfile,
        "Multimodal encoder profile (dummy images)",
        added.remark("the encoder's peak above the text profile's, or what it keeps through it"),
    );
    bytes
}

/// What the estimate assumes of the encoder's profile, for a model with a vision tower.
pub(super) fn note(r: &Resolved, rules: Rules) -> Option<String> {
    if r.arch.vision.layers == 0 || !rules.applies(Rule::V1Engine) {
        return None;
    }
    Some(if modelled(r, rules) {
        "vision tower: the profile run encodes the processor's largest dummy images first and \
         keeps their pixels and outputs through the text profile, as vLLM does unless \
         --skip-mm-profiling, --language-model-only or --limit-mm-per-prompt '{\"image\":0}' \
         (images assumed on; the processor's default size)."
            .to_string()
    } else {
        "vision tower: vLLM's profile of the encoder on dummy images is not modelled for this \
         tower (only for Qwen3-VL's and Qwen3.5's); the activation peak may read low."
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(batched_tokens: u32, seqs: u32, max_model_len: u32) -> Budget {
        Budget {
            tp: 1,
            batched_tokens,
            seqs,
            max_model_len,
        }
    }

    /// `_get_max_items`: the budget is at least one item, so one 16384-token image is profiled
    /// under 2048 or 8192 batched tokens; 32768 fit two.
    #[test]
    fn items_follow_the_encoder_budget() {
        assert_eq!(items(16384, &budget(2048, 32, 8192)), 1);
        assert_eq!(items(16384, &budget(8192, 256, 262_144)), 1);
        assert_eq!(items(16384, &budget(32768, 256, 262_144)), 2);
        // Small items: the budget, capped by the sequences' items.
        assert_eq!(items(256, &budget(8192, 1024, 8192)), 32);
        assert_eq!(items(256, &budget(8192, 4, 512)), 8);
    }

    /// Qwen3.5-0.8B's tower (768 wide, MLP 3072): the attention's 11H is the block's peak; the
    /// 27B's (1152, 4304) too; tensor parallelism splits the projections only.
    #[test]
    fn a_block_peaks_in_attention_for_qwen3_5() {
        assert_eq!(block_elements(768.0, 3072.0, 1.0), 11.0 * 768.0);
        assert_eq!(block_elements(1152.0, 4304.0, 1.0), 11.0 * 1152.0);
        assert_eq!(block_elements(1152.0, 4304.0, 2.0), 7.0 * 1152.0);
        assert_eq!(
            block_elements(1024.0, 8192.0, 1.0),
            2.0 * 1024.0 + 2.0 * 8192.0
        );
    }

    /// Qwen3.5-0.8B under `vllm serve` on an A100 at 2048 batched tokens (calibration row
    /// vllm-115): one 4096² image of 65536 patches, 1536 values each in bf16, then the
    /// position embeddings and the attention's 11 × 768 per patch: 1.3125 GiB, which the
    /// profile's peak becomes.
    #[test]
    fn the_encoder_sets_qwen3_5_0_8b_peak() {
        let query = "runtime=vllm&layers=24&hidden=1024&heads=8&kv-heads=2&head-dim=256&\
            ffn=3584&vocab=248320&tied=true&gated=true&vision-layers=12&vision-hidden=768&\
            vision-ffn=3072&vision-patch=16&vision-merge=2&weights=bf16&gpu=a100-pcie-80&\
            max-model-len=8192&max-num-seqs=32&mode=inference&vllm-version=0.28.0";
        let peak = |query: &str| {
            let (s, errors) = crate::query::scenario_from_query(query);
            assert!(errors.is_empty(), "{errors:?}");
            let b = crate::estimate::breakdown(&s).unwrap();
            let bytes = |id| b.bytes_of(id).0;
            (
                bytes(ComponentId::Activations),
                bytes(ComponentId::EncoderProfile),
            )
        };
        let (text, encoder) = peak(query);
        let expected = 65536 * (1536 * 2 + (768 + 11 * 768) * 2);
        assert_eq!(expected, 1_409_286_144);
        assert!(
            (text + encoder).abs_diff(expected) <= 2,
            "{text} + {encoder}"
        );
        // The V0 engine (before 0.8) profiles otherwise: not modelled.
        assert_eq!(peak(&query.replace("0.28.0", "0.7.3")).1, 0);
        // Qwen2.5-VL's 14-pixel windowed tower is not modelled.
        assert_eq!(
            peak(&query.replace("vision-patch=16", "vision-patch=14")).1,
            0
        );
        // A text-only model has no encoder to profile.
        assert_eq!(
            peak(&query.replace("vision-layers=12", "vision-layers=0")).1,
            0
        );
    }
}
