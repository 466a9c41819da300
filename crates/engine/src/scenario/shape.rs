//! The one mapping between the scenario's shape fields and [`Architecture`]: which key holds which
//! part of the shape, both ways. [`Architecture::pairs`] writes a shape as fields (what a pasted
//! config.json or a dropped GGUF sets); [`Scenario::shape_parts`] reads them back when the
//! scenario resolves. `tests/shape_round_trip.rs` holds every reader to the round trip.

use super::Scenario;
use crate::model::Architecture;

/// The whole-number parts of the shape beyond the dense fields, each zero when the model lacks
/// it: the macro writes straight-line code for each direction (a resolve runs in the solver's
/// inner loop), from this one list.
macro_rules! parts {
    ($($key:literal: $field:ident => $($path:ident).+;)*) => {
        /// Every part's key, in the list's order.
        const PART_KEYS: &[&str] = &[$($key),*];

        /// Each part as its scenario `key=value` pair.
        fn part_pairs(a: &Architecture) -> [(&'static str, String); PART_KEYS.len()] {
            [$(($key, a.$($path).+.to_string())),*]
        }

        /// Each part given in the scenario, else the preset's (`from_preset`) or none.
        fn resolve_parts(s: &Scenario, arch: &mut Architecture, from_preset: bool) {
            $(arch.$($path).+ = s.$field.unwrap_or(if from_preset { arch.$($path).+ } else { 0 });)*
        }
    };
}

parts! {
    "experts": experts => moe.experts;
    "experts-per-token": experts_per_token => moe.per_token;
    "expert-ffn": expert_ffn => moe.expert_ffn;
    "shared-ffn": shared_ffn => moe.shared_ffn;
    "dense-layers": dense_layers => moe.dense_layers;
    "q-lora-rank": q_lora_rank => mla.q_rank;
    "kv-lora-rank": kv_lora_rank => mla.kv_rank;
    "rope-head-dim": rope_head_dim => mla.rope_dim;
    "v-head-dim": v_head_dim => mla.v_head_dim;
    "sliding-window": sliding_window => window.tokens;
    "sliding-layers": sliding_layers => window.layers;
    "vision-layers": vision_layers => vision.layers;
    "vision-hidden": vision_hidden => vision.hidden;
    "vision-ffn": vision_ffn => vision.ffn;
    "vision-patch": vision_patch => vision.patch;
    "vision-image": vision_image => vision.image;
    "vision-merge": vision_merge => vision.merge;
    "recurrent-layers": recurrent_layers => recurrent.layers;
    "recurrent-heads": recurrent_heads => recurrent.heads;
    "recurrent-head-dim": recurrent_head_dim => recurrent.head_dim;
    "recurrent-state": recurrent_state => recurrent.state;
    "recurrent-groups": recurrent_groups => recurrent.groups;
    "recurrent-conv": recurrent_conv => recurrent.conv;
    "no-attention-layers": no_attention_layers => no_attention;
    "no-mlp-layers": no_mlp_layers => no_mlp;
    "mtp-layers": mtp_layers => mtp_layers;
    "rope-positions": rope_positions => rope.positions;
    "rope-local-positions": rope_local_positions => rope.local_positions;
    "rotary-dim": rotary_dim => rope.dim;
}

impl Architecture {
    /// The shape as scenario `key=value` pairs, so a pasted config.json fills the same fields a
    /// person would type; every one is written, so nothing comes from a previous preset.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("layers", self.layers.to_string()),
            ("hidden", self.hidden.to_string()),
            ("heads", self.heads.to_string()),
            ("kv-heads", self.kv_heads.to_string()),
            ("head-dim", self.head_dim.to_string()),
            ("ffn", self.ffn.to_string()),
            ("vocab", self.vocab.to_string()),
            ("tied", self.tied.to_string()),
            ("gated", self.gated.to_string()),
        ];
        pairs.extend(part_pairs(self));
        pairs.extend([
            (
                "ssm-dtype",
                self.recurrent
                    .state_dtype
                    .map_or("auto".to_string(), |d| d.to_string()),
            ),
            ("attention-gate", self.attention_gate.to_string()),
            ("fused-qkv", self.fused_qkv.to_string()),
        ]);
        pairs
    }
}

impl Scenario {
    /// The parts beyond the dense shape (experts, latent attention, windows, vision, recurrent
    /// layers, MTP, RoPE tables, the fused and gated projections): each field given, else the
    /// preset's, or none for a shape typed by hand (`from_preset` false).
    pub(super) fn shape_parts(&self, base: &Architecture, from_preset: bool) -> Architecture {
        let mut arch = *base;
        resolve_parts(self, &mut arch, from_preset);
        arch.recurrent.state_dtype = self
            .ssm_dtype
            .or(base.recurrent.state_dtype.filter(|_| from_preset));
        arch.attention_gate = self
            .attention_gate
            .unwrap_or(from_preset && base.attention_gate);
        arch.fused_qkv = self.fused_qkv.unwrap_or(from_preset && base.fused_qkv);
        arch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::KEYS;

    /// Every part's key is a scenario key, once.
    #[test]
    fn every_part_is_a_field_of_its_own() {
        for (i, key) in PART_KEYS.iter().enumerate() {
            assert!(KEYS.contains(key), "{key}");
            assert!(!PART_KEYS[..i].contains(key), "{key}");
        }
    }
}
