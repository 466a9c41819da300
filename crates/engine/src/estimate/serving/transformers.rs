//! Hugging Face transformers' `generate()`: no pool of its own. The detailed method sizes its
//! cache per sequence (`estimate/inference.rs`), and it is the one runtime that also trains.

use super::{Build, RuntimeRules, Serving};

pub(super) struct Transformers;

impl RuntimeRules for Transformers {
    fn name(&self) -> &'static str {
        "transformers"
    }

    fn serves(&self) -> bool {
        false
    }

    fn accuracy_label(&self) -> &'static str {
        "transformers inference"
    }

    fn push(&self, _build: Build<'_>) -> Option<Serving> {
        None
    }
}
