//! Test support for the sans-IO parsers (GGUF, safetensors): a valid file damaged the ways files
//! get damaged (cut short, a byte or a field overwritten, bytes inserted or removed), as a
//! proptest strategy, and a time bound on a parse, so a reader that is quadratic in some count
//! fails a test instead of hanging a page. Each parser's tests say which values to write over a
//! field, since those are what its format reads as lengths, counts and types.

use proptest::prelude::*;
use std::time::{Duration, Instant};

/// One way a file gets damaged.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Cut the file short.
    Truncate(prop::sample::Index),
    /// Overwrite bytes from a place, as far as the file goes: one byte, or a field's value.
    Put(prop::sample::Index, Vec<u8>),
    /// Overwrite the file's first bytes (a leading length).
    PutAtStart(Vec<u8>),
    /// Insert bytes.
    Insert(prop::sample::Index, Vec<u8>),
    /// Remove a run of bytes.
    Remove(prop::sample::Index, usize),
}

/// Damage of every kind; `fields` overwrites a format's fields with what it reads as lengths,
/// counts and types.
pub fn damage(fields: impl Strategy<Value = Damage> + 'static) -> impl Strategy<Value = Damage> {
    let index = any::<prop::sample::Index>;
    prop_oneof![
        index().prop_map(Damage::Truncate),
        (index(), any::<u8>()).prop_map(|(i, b)| Damage::Put(i, vec![b])),
        fields,
        (index(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Damage::Insert(i, b)),
        (index(), 1..64usize).prop_map(|(i, n)| Damage::Remove(i, n)),
    ]
}

/// Applies `damage` to `bytes`.
pub fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let len = bytes.len().max(1);
    match damage {
        Damage::Truncate(i) => bytes.truncate(i.index(len)),
        Damage::Put(i, value) => put(bytes, i.index(len), value),
        Damage::PutAtStart(value) => put(bytes, 0, value),
        Damage::Insert(i, inserted) => {
            let at = i.index(len + 1).min(bytes.len());
            bytes.splice(at..at, inserted.iter().copied());
        }
        Damage::Remove(i, n) => {
            let at = i.index(len).min(bytes.len());
            let end = at.saturating_add(*n).min(bytes.len());
            bytes.drain(at..end);
        }
    }
}

fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    for (k, b) in value.iter().enumerate() {
        if let Some(slot) = bytes.get_mut(at + k) {
            *slot = *b;
        }
    }
}

/// Runs `parse` and fails if it takes over 10 s: generous for a debug build on a busy two-core
/// machine, while a reader quadratic in a count from the file would take hours on the worst
/// cases the hostile tests build.
pub fn quick<T>(parse: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let result = parse();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    result
}
