//! The safetensors dtypes: the name a header stores for each, and its width in bits. This is the
//! one place sizes live; every byte count in the crate is [`Dtype::bytes_for`].
//!
//! Source: `enum Dtype`, `Dtype::bitsize` and `impl Display for Dtype` in huggingface/safetensors
//! `safetensors/src/tensor.rs` @ `24b0b2857fef49be734b9ab72ce97c09bb25f5b9` (the wire name is the
//! variant name, as serde writes it). The order here is theirs ("increasing alignment order").

use std::fmt;

/// A safetensors element type. Variant names are the wire names (`BF16`, `F8_E4M3`).
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    BOOL,
    /// MXFP4's element (OCP microscaling formats v1.0): 4 bits.
    F4,
    /// MXFP6 (OCP MX v1.0): 6 bits.
    F6_E2M3,
    /// MXFP6 (OCP MX v1.0): 6 bits.
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    /// The MX formats' shared scale (OCP MX v1.0): 8 bits.
    F8_E8M0,
    /// AMD's FP8 variants (no negative zero; arXiv 2206.02915).
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    /// A complex number of two `F32` parts.
    C64,
    F64,
    I64,
    U64,
}

impl Dtype {
    /// Every dtype, in the reference's order.
    pub const ALL: [Dtype; 22] = [
        Dtype::BOOL,
        Dtype::F4,
        Dtype::F6_E2M3,
        Dtype::F6_E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8_E5M2,
        Dtype::F8_E4M3,
        Dtype::F8_E8M0,
        Dtype::F8_E4M3FNUZ,
        Dtype::F8_E5M2FNUZ,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];

    /// The name a header stores, such as `BF16`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::BOOL => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6_E2M3 => "F6_E2M3",
            Dtype::F6_E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8_E5M2 => "F8_E5M2",
            Dtype::F8_E4M3 => "F8_E4M3",
            Dtype::F8_E8M0 => "F8_E8M0",
            Dtype::F8_E4M3FNUZ => "F8_E4M3FNUZ",
            Dtype::F8_E5M2FNUZ => "F8_E5M2FNUZ",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }

    /// The dtype a header names, matched exactly (the reference is case-sensitive: `bf16` is not a
    /// dtype).
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Bits per element (`Dtype::bitsize`).
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3
            | Dtype::F8_E8M0
            | Dtype::F8_E4M3FNUZ
            | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// The bytes of `elements` values: `elements × bits / 8`, or `None` when that overflows 64 bits
    /// or is not a whole number of bytes. The reference refuses a tensor whose bits are not whole
    /// bytes (`MisalignedSlice` in `Metadata::validate`) rather than rounding up, so an `F4`
    /// tensor has an even number of elements and an `F6_*` one a multiple of 4.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        let bits = elements.checked_mul(self.bits())?;
        bits.is_multiple_of(8).then_some(bits / 8)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_exact() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_name(d.name()), Some(d));
            assert_eq!(d.to_string(), d.name());
        }
        assert_eq!(Dtype::from_name("bf16"), None);
        assert_eq!(Dtype::from_name("F8_E4M3FN"), None);
        assert!(Dtype::ALL.windows(2).all(|w| w[0] < w[1]), "ALL is sorted");
    }

    #[test]
    fn sizes_are_whole_bytes_or_none() {
        assert_eq!(Dtype::BF16.bytes_for(1024), Some(2048));
        assert_eq!(Dtype::F4.bytes_for(2), Some(1));
        assert_eq!(Dtype::F4.bytes_for(3), None);
        assert_eq!(Dtype::F6_E3M2.bytes_for(4), Some(3));
        assert_eq!(Dtype::F6_E2M3.bytes_for(2), None);
        assert_eq!(Dtype::C64.bytes_for(3), Some(24));
        assert_eq!(Dtype::BOOL.bytes_for(0), Some(0));
        assert_eq!(Dtype::F64.bytes_for(u64::MAX / 8), None);
        assert_eq!(
            Dtype::U8.bytes_for(u64::MAX),
            None,
            "the bit count overflows first"
        );
        assert_eq!(Dtype::U8.bytes_for(u64::MAX / 8), Some(u64::MAX / 8));
    }
}
