//! ggml's tensor types: the id a GGUF file stores for each tensor, the lower-case name ggml prints
//! in its logs, and how many bytes a block of elements takes. This is the one place these sizes
//! live; every byte count in the crate is [`GgmlType::bytes_for`].
//!
//! Sources (ggml-org/llama.cpp, as stored by the search index):
//! - ids and `(block elements, bytes per block)` for ids 0–39: `gguf-py/gguf/constants.py`
//!   (`GGMLQuantizationType`, `GGML_QUANT_SIZES`) @ `ef035f779276d5f5636a0fd8cbeff6a83d646d2b`,
//!   which agree with the `static_assert`s of `ggml/src/ggml-common.h`
//!   @ `01243c587feceaa5d6a6c2305535ef2f549c48b8`;
//! - names: `type_traits[].type_name` in `ggml/src/ggml.c`
//!   @ `00bdaa105cb03380daf899b4fc9f026555745269`, which also lists NVFP4 (`QK_NVFP4` = 64,
//!   `block_nvfp4` = 4 scale bytes + 32 nibble bytes) and Q1_0 (`QK1_0` = 128, `block_q1_0` =
//!   2 + 16 bytes). Their ids, 40 and 41, come from copies of `ggml.h`/gguf-py in other
//!   repositories (the stored ggml-org `ggml.h` predates them).
//!
//! Ids 4–5, 31–33 and 36–38 were removed from ggml and are not types here; Q2_0 (seen only in
//! the newest builds, id unconfirmed) is not either.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// A ggml tensor type. Variant names are ggml's own (`Q4_K`, `IQ4_XS`), so they read as people
/// write them.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
    Q1_0,
}

/// A type's row of ggml's trait table.
struct Traits {
    id: u32,
    name: &'static str,
    block_elements: u64,
    block_bytes: u64,
    quantized: bool,
}

const fn plain(id: u32, name: &'static str, bytes: u64) -> Traits {
    Traits {
        id,
        name,
        block_elements: 1,
        block_bytes: bytes,
        quantized: false,
    }
}

const fn blocks(id: u32, name: &'static str, block_elements: u64, block_bytes: u64) -> Traits {
    Traits {
        id,
        name,
        block_elements,
        block_bytes,
        quantized: true,
    }
}

/// ggml's `QK_K`: the super-block of the K-quants and most i-quants.
const QK_K: u64 = 256;

impl GgmlType {
    /// Every type, in id order, for lists and exhaustive tests.
    pub const ALL: [GgmlType; 34] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::IQ2_XXS,
        GgmlType::IQ2_XS,
        GgmlType::IQ3_XXS,
        GgmlType::IQ1_S,
        GgmlType::IQ4_NL,
        GgmlType::IQ3_S,
        GgmlType::IQ2_S,
        GgmlType::IQ4_XS,
        GgmlType::I8,
        GgmlType::I16,
        GgmlType::I32,
        GgmlType::I64,
        GgmlType::F64,
        GgmlType::IQ1_M,
        GgmlType::BF16,
        GgmlType::TQ1_0,
        GgmlType::TQ2_0,
        GgmlType::MXFP4,
        GgmlType::NVFP4,
        GgmlType::Q1_0,
    ];

    fn traits(self) -> Traits {
        match self {
            GgmlType::F32 => plain(0, "f32", 4),
            GgmlType::F16 => plain(1, "f16", 2),
            GgmlType::Q4_0 => blocks(2, "q4_0", 32, 2 + 16),
            GgmlType::Q4_1 => blocks(3, "q4_1", 32, 2 + 2 + 16),
            GgmlType::Q5_0 => blocks(6, "q5_0", 32, 2 + 4 + 16),
            GgmlType::Q5_1 => blocks(7, "q5_1", 32, 2 + 2 + 4 + 16),
            GgmlType::Q8_0 => blocks(8, "q8_0", 32, 2 + 32),
            GgmlType::Q8_1 => blocks(9, "q8_1", 32, 4 + 4 + 32),
            GgmlType::Q2_K => blocks(10, "q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4),
            GgmlType::Q3_K => blocks(11, "q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12),
            GgmlType::Q4_K => blocks(12, "q4_K", QK_K, 2 + 2 + QK_K / 2 + 12),
            GgmlType::Q5_K => blocks(13, "q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12),
            GgmlType::Q6_K => blocks(14, "q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16),
            GgmlType::Q8_K => blocks(15, "q8_K", QK_K, 4 + QK_K + QK_K / 8),
            GgmlType::IQ2_XXS => blocks(16, "iq2_xxs", QK_K, 2 + QK_K / 4),
            GgmlType::IQ2_XS => blocks(17, "iq2_xs", QK_K, 2 + QK_K / 4 + QK_K / 32),
            GgmlType::IQ3_XXS => blocks(18, "iq3_xxs", QK_K, 2 + QK_K / 4 + QK_K / 8),
            GgmlType::IQ1_S => blocks(19, "iq1_s", QK_K, 2 + QK_K / 8 + QK_K / 16),
            GgmlType::IQ4_NL => blocks(20, "iq4_nl", 32, 2 + 16),
            GgmlType::IQ3_S => blocks(21, "iq3_s", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
            GgmlType::IQ2_S => blocks(22, "iq2_s", QK_K, 2 + QK_K / 4 + QK_K / 16),
            GgmlType::IQ4_XS => blocks(23, "iq4_xs", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64),
            GgmlType::I8 => plain(24, "i8", 1),
            GgmlType::I16 => plain(25, "i16", 2),
            GgmlType::I32 => plain(26, "i32", 4),
            GgmlType::I64 => plain(27, "i64", 8),
            GgmlType::F64 => plain(28, "f64", 8),
            GgmlType::IQ1_M => blocks(29, "iq1_m", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
            GgmlType::BF16 => plain(30, "bf16", 2),
            GgmlType::TQ1_0 => blocks(34, "tq1_0", QK_K, 2 + 4 * 13),
            GgmlType::TQ2_0 => blocks(35, "tq2_0", QK_K, 2 + 64),
            GgmlType::MXFP4 => blocks(39, "mxfp4", 32, 1 + 16),
            GgmlType::NVFP4 => blocks(40, "nvfp4", 64, 4 + 32),
            GgmlType::Q1_0 => blocks(41, "q1_0", 128, 2 + 16),
        }
    }

    /// The type a GGUF tensor info's `type` field names, if ggml defines it.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GgmlType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// The id a GGUF file stores for this type (`enum ggml_type`).
    pub fn id(self) -> u32 {
        self.traits().id
    }

    /// ggml's name, as its logs print it: `f16`, `q4_K`, `iq4_xs`.
    pub fn name(self) -> &'static str {
        self.traits().name
    }

    /// Reads a type name in any letter case: `Q4_K`, `q4_k`, `q8_0`, `F16`.
    pub fn from_name(name: &str) -> Option<GgmlType> {
        let name = name.trim();
        GgmlType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// Elements per block: 1 for plain numbers, 32 for the legacy quants, 256 for K-quants.
    pub fn block_elements(self) -> u64 {
        self.traits().block_elements
    }

    /// Bytes per block, from the block struct's layout.
    pub fn block_bytes(self) -> u64 {
        self.traits().block_bytes
    }

    /// Whether ggml counts this as a quantized (block) type; llama.cpp's quantizer applies its
    /// per-tensor mixes only when the file type's default type is one.
    pub fn is_quantized(self) -> bool {
        self.traits().quantized
    }

    /// Bytes that `elements` values of this type take, or `None` when `elements` is not a whole
    /// number of blocks (ggml cannot store that) or the count overflows.
    pub fn bytes_for(self, elements: u64) -> Option<u64> {
        let traits = self.traits();
        if !elements.is_multiple_of(traits.block_elements) {
            return None;
        }
        (elements / traits.block_elements).checked_mul(traits.block_bytes)
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// JSON carries ggml's name, the form people read in llama.cpp's logs.
impl Serialize for GgmlType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A name that is no ggml type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownGgmlType(pub String);

impl fmt::Display for UnknownGgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a ggml tensor type; use one of:", self.0)?;
        for t in GgmlType::ALL {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownGgmlType {}

impl FromStr for GgmlType {
    type Err = UnknownGgmlType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GgmlType::from_name(s).ok_or_else(|| UnknownGgmlType(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
        }
        let mut ids: Vec<u32> = GgmlType::ALL.iter().map(|t| t.id()).collect();
        ids.dedup();
        assert_eq!(
            ids.len(),
            GgmlType::ALL.len(),
            "ALL is in id order without repeats"
        );
    }

    #[test]
    fn removed_ids_are_not_types() {
        for id in [4, 5, 31, 32, 33, 36, 37, 38, 42, u32::MAX] {
            assert_eq!(GgmlType::from_id(id), None, "id {id}");
        }
    }

    /// The `static_assert`ed block sizes of ggml-common.h, written out as numbers.
    #[test]
    fn block_bytes_match_ggml_common() {
        let expected = [
            (GgmlType::Q4_0, 32, 18),
            (GgmlType::Q8_0, 32, 34),
            (GgmlType::Q2_K, 256, 84),
            (GgmlType::Q3_K, 256, 110),
            (GgmlType::Q4_K, 256, 144),
            (GgmlType::Q5_K, 256, 176),
            (GgmlType::Q6_K, 256, 210),
            (GgmlType::Q8_K, 256, 292),
            (GgmlType::IQ2_XXS, 256, 66),
            (GgmlType::IQ2_XS, 256, 74),
            (GgmlType::IQ3_XXS, 256, 98),
            (GgmlType::IQ1_S, 256, 50),
            (GgmlType::IQ3_S, 256, 110),
            (GgmlType::IQ2_S, 256, 82),
            (GgmlType::IQ4_XS, 256, 136),
            (GgmlType::IQ1_M, 256, 56),
            (GgmlType::TQ1_0, 256, 54),
            (GgmlType::TQ2_0, 256, 66),
            (GgmlType::MXFP4, 32, 17),
        ];
        for (t, elements, bytes) in expected {
            assert_eq!(
                (t.block_elements(), t.block_bytes()),
                (elements, bytes),
                "{t}"
            );
        }
    }

    #[test]
    fn names_parse_in_any_case() {
        assert_eq!("Q4_K".parse(), Ok(GgmlType::Q4_K));
        assert_eq!("q4_k".parse(), Ok(GgmlType::Q4_K));
        assert_eq!(" IQ4_xs ".parse(), Ok(GgmlType::IQ4_XS));
        assert_eq!("f16".parse(), Ok(GgmlType::F16));
        assert_eq!(GgmlType::Q4_K.name(), "q4_K");
        let err = "q4_k_m".parse::<GgmlType>().unwrap_err();
        assert!(err.to_string().contains("q4_K"), "{err}");
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_name(&t.name().to_uppercase()), Some(t));
        }
    }

    #[test]
    fn bytes_for_whole_blocks_only() {
        assert_eq!(GgmlType::Q4_K.bytes_for(4096 * 4096), Some(4096 * 16 * 144));
        assert_eq!(GgmlType::Q4_K.bytes_for(100), None);
        assert_eq!(GgmlType::F32.bytes_for(3), Some(12));
        assert_eq!(GgmlType::F32.bytes_for(u64::MAX), None, "overflow is None");
        assert_eq!(GgmlType::Q8_0.bytes_for(0), Some(0));
    }
}
