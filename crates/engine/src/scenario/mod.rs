//! The `Scenario`: everything a person describes (model, method, precisions, batch, GPU, budget).
//!
//! One type is the URL query, the JSON export and the CLI flags. Each field is one entry of the
//! field table in `fields`, and [`Scenario::set`] is the only place a `key=value` string becomes a
//! field, so the page, the CLI and the tests cannot drift apart. [`Scenario::resolve`] turns it
//! into the fully-specified [`Resolved`] the formulas read, or every invalid field with its reason.

mod codec;
mod fields;
mod json;
pub use json::JsonError;
mod resolve;
mod shape;

pub(crate) use codec::{Codec, Proportions, MAX_COUNT};
pub use codec::{Control, CustomComponent, MAX_CUSTOM};
pub use fields::{
    Field, Group, Modes, Scenario, DEFAULT_CUDA_CONTEXT, DEFAULT_MARGIN, FIELDS, KEYS,
};
pub use resolve::Resolved;

use serde::{Deserialize, Serialize};
use std::fmt;

/// One field that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The field with this key.
pub fn field(key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.key == key)
}

/// Keys an older release had, with the setting that replaced each, so an old link or export is
/// refused with the fix rather than silently read another way.
const REPLACED_KEYS: &[(&str, &str)] = &[
    ("chunked-loss", "loss=chunked"),
    ("cut-cross-entropy", "loss=cce"),
];

/// The setting that replaced `key`, if an older release had it.
fn replaced_by(key: &str) -> Option<&'static str> {
    REPLACED_KEYS
        .iter()
        .find(|(old, _)| *old == key)
        .map(|(_, now)| *now)
}

/// Why `key` is not a field, naming what replaced it where something did.
fn unknown_key_message(key: &str) -> String {
    match replaced_by(key) {
        Some(now) => format!("unknown parameter; {now} replaced it"),
        None => "unknown parameter".to_string(),
    }
}

impl Scenario {
    /// Sets one field from its wire form. `custom` appends; every other key replaces.
    /// On error the scenario is unchanged, so the last good value stays.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), FieldError> {
        let field = field(key).ok_or_else(|| FieldError::new(key, unknown_key_message(key)))?;
        field
            .set(self, value)
            .map_err(|message| FieldError::new(key, message))
    }

    /// Replaces one field's whole value from a form's text (`custom` takes `name:size; name:size`,
    /// and an empty text clears it). On error nothing changes.
    pub fn edit(&mut self, key: &str, text: &str) -> Result<(), FieldError> {
        let field = field(key).ok_or_else(|| FieldError::new(key, unknown_key_message(key)))?;
        field
            .edit(self, text)
            .map_err(|message| FieldError::new(key, message))
    }

    /// Builds a scenario from `key=value` pairs, keeping the default for every pair that fails and
    /// reporting it: how the page reads its URL.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> (Scenario, Vec<FieldError>) {
        let mut scenario = Scenario::default();
        let mut errors = Vec::new();
        for (key, value) in pairs {
            if let Err(e) = scenario.set(key, value) {
                errors.push(e);
            }
        }
        (scenario, errors)
    }

    /// Every key's wire value, defaults included (`custom` once per component), in [`KEYS`] order.
    pub fn all_pairs(&self) -> Vec<(&'static str, String)> {
        FIELDS
            .iter()
            .flat_map(|f| f.wire(self).into_iter().map(move |v| (f.key, v)))
            .collect()
    }

    /// The wire value of one key (the first, for `custom`); empty when unset.
    pub fn get(&self, key: &str) -> String {
        field(key)
            .and_then(|f| f.wire(self).into_iter().next())
            .unwrap_or_default()
    }

    /// The fields that differ from the default, in wire form: the URL query and the CLI flags.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let defaults = Scenario::default().all_pairs();
        self.all_pairs()
            .into_iter()
            .filter(|(key, value)| {
                *key == "custom" || !defaults.iter().any(|(k, v)| k == key && v == value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
