//! Published sizes of real models (the fixtures' `published.csv`) and what the engine counts for
//! the same config.json: the parameter count, the active count as the card counts it, and the
//! weights' bytes as loaded for inference. Read by the fixture tests and `cargo xtask configs`.

use super::HfConfig;
use crate::estimate::breakdown;
use crate::scenario::{FieldError, Scenario};
use crate::units::parse_f64;

/// How a card states a mixture of experts' active parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ActiveClaim {
    /// A dense model.
    Dense,
    /// Counting the input embedding (Mistral, Qwen).
    WithEmbedding(f64),
    /// Leaving it out (OpenAI, DeepSeek, Moonshot, Meta, NVIDIA).
    WithoutEmbedding(f64),
    /// Only a size-class label ("A3B").
    Label,
}

/// One model's published figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Published {
    pub file: String,
    pub total_params: f64,
    pub active: ActiveClaim,
    /// The checkpoint's tensor bytes (`total_size`), where published.
    pub checkpoint_bytes: Option<f64>,
}

/// Reads `published.csv`: `file,total_params,active_counts,active_params,checkpoint_bytes`,
/// with `#` comment lines and a header.
pub fn parse_published(csv: &str) -> Result<Vec<Published>, String> {
    csv.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with("file,"))
        .map(|line| {
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            let [file, total, counts, active, checkpoint] = cells[..] else {
                return Err(format!("`{line}` does not have 5 columns"));
            };
            let number = |text: &str| {
                parse_f64(text).ok_or_else(|| format!("`{text}` in `{line}` is not a number"))
            };
            let active = match counts {
                "" => ActiveClaim::Dense,
                "label" => ActiveClaim::Label,
                "with-embedding" => ActiveClaim::WithEmbedding(number(active)?),
                "without-embedding" => ActiveClaim::WithoutEmbedding(number(active)?),
                other => return Err(format!("unknown active_counts `{other}` in `{line}`")),
            };
            Ok(Published {
                file: file.to_string(),
                total_params: number(total)?,
                active,
                checkpoint_bytes: if checkpoint.is_empty() {
                    None
                } else {
                    Some(number(checkpoint)?)
                },
            })
        })
        .collect()
}

/// What the engine counts for a config, in the card's terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counted {
    pub params: f64,
    /// The active count as `claim` counts it; `None` for a dense model or a label.
    pub active: Option<f64>,
    /// Weights, quantization constants, vision tower and any multi-token-prediction modules:
    /// everything the checkpoint stores.
    pub weight_bytes: f64,
}

impl HfConfig {
    /// The scenario a user gets by pasting this config over `base`.
    pub fn applied_to(&self, mut base: Scenario) -> Result<Scenario, FieldError> {
        for (key, value) in self.pairs() {
            base.set(key, &value)?;
        }
        Ok(base)
    }

    /// The engine's counts for this config, the active count taken as `claim` takes it.
    pub fn counted(&self, claim: ActiveClaim) -> Result<Counted, Vec<FieldError>> {
        let inference = Scenario {
            mode: crate::workload::Mode::Inference,
            ..Scenario::default()
        };
        let mut scenario = self.applied_to(inference).map_err(|e| vec![e])?;
        scenario.mtp = self.arch.mtp_layers > 0;
        let b = breakdown(&scenario)?;
        // What the checkpoint holds is what a runtime's model load holds.
        let weight_bytes = b
            .components
            .iter()
            .filter(|c| c.id.is_model_load())
            .map(|c| c.bytes.0 as f64)
            .sum();
        let input_embedding = f64::from(self.arch.vocab) * f64::from(self.arch.hidden);
        let active = self
            .arch
            .active_param_count()
            .and_then(|active| match claim {
                ActiveClaim::WithEmbedding(_) => Some(active),
                ActiveClaim::WithoutEmbedding(_) => Some(active - input_embedding),
                ActiveClaim::Dense | ActiveClaim::Label => None,
            });
        Ok(Counted {
            params: self.arch.param_count(),
            active,
            weight_bytes,
        })
    }
}
