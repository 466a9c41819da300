//! Hugging Face transformers' `generate()`: no pool of its own. The detailed method sizes its
//! cache per sequence (`estimate/inference.rs`), and it is the one runtime that also trains.

use super::{Build, Facts, RuntimeRules, RuntimeSpeed, Serving};
use crate::estimate::links::Parallel;
use crate::scenario::{Resolved, Scenario};

pub(super) struct Transformers;

/// A library, not a server: it has no pool, settings or launch command of its own.
const FACTS: Facts = Facts::library("transformers", "transformers inference");

impl RuntimeRules for Transformers {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn push(&self, _build: Build<'_>) -> Option<Serving> {
        None
    }
}

/// Its speed is the default's: llama.cpp's CUDA shares, until runs of its own set them.
impl RuntimeSpeed for Transformers {
    /// `generate()` runs one batch: under `device_map="auto"` it passes each GPU's layers in
    /// turn with the others idle (accelerate's hooks move the activations between them).
    fn parallel(&self, s: &Scenario, r: &Resolved) -> Parallel {
        Parallel {
            in_flight: 1,
            ..super::rules::served_in_stages(s, r)
        }
    }
}
