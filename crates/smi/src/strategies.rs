//! Proptest strategies for the snapshot's types (feature `proptest`), for the tests of every
//! crate that takes a snapshot: one generator, so each tests the same corners.

use crate::Memory;
use proptest::prelude::*;

/// A memory record whose every figure may be missing, zero, a plausible size or any `u64`.
pub fn memory() -> impl Strategy<Value = Memory> {
    let size = || {
        prop_oneof![
            Just(None),
            Just(Some(0u64)),
            (0u64..1 << 40).prop_map(Some),
            any::<u64>().prop_map(Some),
        ]
    };
    (size(), size(), size(), size()).prop_map(
        |(total_bytes, used_bytes, free_bytes, reserved_bytes)| Memory {
            total_bytes,
            used_bytes,
            free_bytes,
            reserved_bytes,
        },
    )
}
