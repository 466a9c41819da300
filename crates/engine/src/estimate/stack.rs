//! The memory stack and its "show your work" text: each component with its bytes and its formula
//! with the numbers substituted in. Both come from one [`Formula`], whose text is built only when
//! it will be shown, so the solver's thousands of estimates stay cheap.

use super::component::{ComponentId, Lifetime, Slack};
use super::formula::{Formula, Fx};
use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One slice of the memory stack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub id: ComponentId,
    pub label: String,
    pub bytes: Bytes,
    /// The formula with its numbers substituted ("show your work").
    pub formula: String,
}

/// A compact number for formulas: 4096, 8.03B, 0.125, 2.5. Whole numbers take the integer
/// formatter, which is several times cheaper than the float one; fractions keep three decimals
/// at most.
pub(super) fn num(x: f64) -> String {
    let mut text = String::new();
    write_num(&mut text, x);
    text
}

/// [`num`], appended to `out` without a string of its own.
pub(super) fn write_num(out: &mut String, x: f64) {
    let abs = x.abs();
    let _ = if abs >= 1e12 {
        write!(out, "{:.2}T", x / 1e12)
    } else if abs >= 1e9 {
        write!(out, "{:.2}B", x / 1e9)
    } else if abs >= 1e6 {
        write!(out, "{:.2}M", x / 1e6)
    } else if x.fract() == 0.0 {
        write!(out, "{}", x as i64)
    } else {
        let _ = write!(out, "{x:.3}");
        while out.ends_with('0') {
            out.pop();
        }
        if out.ends_with('.') {
            out.pop();
        }
        Ok(())
    };
}

/// A fraction as a whole percentage: 0.2 → "20%".
pub(super) fn percent(fraction: f64) -> String {
    format!("{}%", (fraction * 100.0).round() as i64)
}

/// What a component's `formula` holds.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Text {
    /// Nothing: the solver's path.
    None,
    /// Labels and notes but no formula: what a view that shows no formula needs.
    Labels,
    /// The text users read ([`Formula::text`]).
    Shown,
    /// Numbers and operators only ([`Formula::arithmetic`]), for the test that evaluates them.
    Arithmetic,
}

pub(super) struct Stack {
    /// Whether components carry their label and the estimate its notes.
    pub explain: bool,
    text: Text,
    pub components: Vec<Component>,
}

impl Stack {
    pub fn new(text: Text) -> Stack {
        Stack {
            explain: text != Text::None,
            text,
            components: Vec::with_capacity(12),
        }
    }

    /// A copy without text, to try a setting on: what it totals, not how it explains itself.
    pub fn trial(&self) -> Stack {
        Stack {
            explain: false,
            text: Text::None,
            components: self.components.clone(),
        }
    }

    /// Makes the leaves of a formula for this stack: with text only where its text is kept.
    pub fn fx(&self) -> Fx {
        Fx::new(matches!(self.text, Text::Shown | Text::Arithmetic))
    }

    /// Adds a component of the formula's bytes; one of 0 bytes is left out, except the weights.
    pub fn push(&mut self, id: ComponentId, label: &str, formula: Formula) {
        let bytes = formula.value();
        if bytes > 0.0 || id == ComponentId::Weights {
            let (label, formula) = match self.text {
                Text::None => (String::new(), String::new()),
                Text::Labels => (label.to_string(), String::new()),
                Text::Shown => (label.to_string(), formula.text()),
                Text::Arithmetic => (label.to_string(), formula.arithmetic()),
            };
            self.components.push(Component {
                id,
                label,
                bytes: Bytes::from_f64(bytes),
                formula,
            });
        }
    }

    /// The bytes of the components the allocator holds this way.
    pub fn sum_slack(&self, slack: Slack) -> f64 {
        self.sum(|id| id.slack() == slack)
    }

    /// The bytes of the components a training step holds this long.
    pub fn sum_lifetime(&self, lifetime: Lifetime) -> f64 {
        self.sum(|id| id.lifetime() == lifetime)
    }

    /// The bytes of what a runtime's model load holds.
    pub fn model_load(&self) -> f64 {
        self.sum(ComponentId::is_model_load)
    }

    fn sum(&self, wanted: impl Fn(&ComponentId) -> bool) -> f64 {
        self.components
            .iter()
            .filter(|c| wanted(&c.id))
            .map(|c| c.bytes.as_f64())
            .sum()
    }

    pub fn total(&self) -> Bytes {
        self.components.iter().map(|c| c.bytes).sum()
    }
}
