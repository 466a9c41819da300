//! llama.cpp's file types (`enum llama_ftype`): what a GGUF file's `general.file_type` says and
//! what `llama-quantize` and Hugging Face file names call it (`Q4_K_M`, `IQ4_XS`, `BF16`). A file
//! type is a recipe; [`crate::quantize`] turns it into each tensor's type.
//!
//! Sources (ggml-org/llama.cpp, as stored by the search index):
//! - ids 0–37: `include/llama.h` @ `3679b65db16ebaabba95a893c62eb6c4840e832c` (also
//!   `gguf-py/gguf/constants.py` `LlamaFileType` @ `ef035f779276d5f5636a0fd8cbeff6a83d646d2b`);
//! - MXFP4_MOE = 38, NVFP4 = 39, Q1_0 = 40: `include/llama.h`
//!   @ `0011438e931ec7fd258433f61d411301a759fae2`, matching the bindings that mirror `llama.h`;
//! - names, and the aliases `Q3_K`/`Q4_K`/`Q5_K`: `QUANT_OPTIONS` in `tools/quantize/quantize.cpp`
//!   @ `03161a4eb9a2ec66ef97789f347c5a28279f06ea` (NVFP4 is not offered there: such files come
//!   from converting NVFP4 checkpoints, not from `llama-quantize`);
//! - default tensor type: `llama_ftype_get_default_type` in `src/llama-quant.cpp`
//!   @ `007dbbf3fd17eefe9b47fee45f48f7ba5e62b714`.
//!
//! Removed ids (4 = MOSTLY_Q4_1_SOME_F16, 5, 6, 33–35) are not file types here.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use crate::types::GgmlType;

/// Declares [`FileType`] from one table: each variant (the name `llama-quantize` takes) with its
/// `general.file_type` id, the type most 2-D weights get and one line saying what it does.
macro_rules! file_types {
    ($($name:ident = $id:literal, $default:ident, $description:literal;)*) => {
        /// A llama.cpp file type. Variant names are the names `llama-quantize` takes.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FileType {
            $($name,)*
        }

        impl FileType {
            /// The `general.file_type` value (`enum llama_ftype`).
            pub fn id(self) -> u32 {
                match self {
                    $(FileType::$name => $id,)*
                }
            }

            /// The name `llama-quantize` takes and Hugging Face file names carry: `Q4_K_M`, `BF16`.
            pub fn name(self) -> &'static str {
                match self {
                    $(FileType::$name => stringify!($name),)*
                }
            }

            /// One line saying what the recipe does.
            pub fn description(self) -> &'static str {
                match self {
                    $(FileType::$name => $description,)*
                }
            }

            /// The type most 2-D weights get before the per-tensor rules of [`crate::quantize`].
            pub fn default_type(self) -> GgmlType {
                match self {
                    $(FileType::$name => GgmlType::$default,)*
                }
            }
        }
    };
}

file_types! {
    F32 = 0, F32, "32-bit floats throughout, unquantized";
    F16 = 1, F16, "16-bit floats for every 2-D weight; norms and other 1-D tensors stay F32";
    BF16 = 32, BF16, "bfloat16 for every 2-D weight; norms and other 1-D tensors stay F32";
    Q4_0 = 2, Q4_0, "legacy 4-bit (4.5 bits per weight) in 32-element blocks; Q6_K output";
    Q4_1 = 3, Q4_1, "legacy 4-bit with an offset (5.0 bits per weight); Q6_K output";
    Q5_0 = 8, Q5_0, "legacy 5-bit (5.5 bits per weight) in 32-element blocks; Q6_K output";
    Q5_1 = 9, Q5_1, "legacy 5-bit with an offset (6.0 bits per weight); Q6_K output";
    Q8_0 = 7, Q8_0, "8-bit (8.5 bits per weight) for every 2-D weight, the output included";
    Q2_K = 10, Q2_K, "2-bit K-quant: Q2_K, with Q3_K or Q4_K attn_v, Q3_K ffn_down and \
        attn_output, Q6_K output";
    Q2_K_S = 21, Q2_K, "2-bit K-quant, small: Q2_K, Q4_K for the first eighth of ffn_down (and \
        attn_v with 4+ query heads per KV head), Q6_K output";
    Q3_K_S = 11, Q3_K, "3-bit K-quant, small: Q3_K throughout, Q6_K output";
    Q3_K_M = 12, Q3_K, "3-bit K-quant, medium: Q3_K with Q4_K attn_output, Q4_K attn_v and \
        ffn_down (Q5_K in the first layers), Q6_K output";
    Q3_K_L = 13, Q3_K, "3-bit K-quant, large: Q3_K with Q5_K attn_v, ffn_down and attn_output, \
        Q6_K output";
    Q4_K_S = 14, Q4_K, "4-bit K-quant, small: Q4_K with Q5_K for the first 4 attn_v and the first \
        eighth of ffn_down, Q6_K output";
    Q4_K_M = 15, Q4_K, "4-bit K-quant, medium: Q4_K with Q6_K for half of attn_v/ffn_down and the \
        output";
    Q5_K_S = 16, Q5_K, "5-bit K-quant, small: Q5_K throughout, Q6_K output";
    Q5_K_M = 17, Q5_K, "5-bit K-quant, medium: Q5_K with Q6_K for half of attn_v/ffn_down and the \
        output";
    Q6_K = 18, Q6_K, "6-bit K-quant (6.56 bits per weight) for every 2-D weight";
    IQ1_S = 24, IQ1_S, "1.56-bit i-quant; Q2_K token embedding, Q5_K output";
    IQ1_M = 31, IQ1_M, "1.75-bit i-quant; Q2_K token embedding, Q5_K output";
    IQ2_XXS = 19, IQ2_XXS, "2.06-bit i-quant; Q2_K token embedding, Q5_K output";
    IQ2_XS = 20, IQ2_XS, "2.31-bit i-quant; Q2_K token embedding, Q5_K output";
    IQ2_S = 28, IQ2_XS, "2.5-bit i-quant mix: IQ2_XS with IQ3_S token embedding, attn_output and \
        first eighth of ffn_down, IQ3_S or Q4_K attn_v, Q5_K output";
    IQ2_M = 29, IQ2_S, "2.7-bit i-quant mix: IQ2_S with IQ3_S token embedding, attn_output and \
        first eighth of ffn_down, IQ3_S or Q4_K attn_v, Q5_K output";
    IQ3_XXS = 23, IQ3_XXS, "3.06-bit i-quant; IQ3_S token embedding and attn_output, IQ2_S \
        attn_q/attn_k, Q5_K output";
    IQ3_XS = 22, IQ3_S, "3.3-bit i-quant mix of IQ3_S and IQ3_XXS (attn_q, attn_k, middle \
        ffn_gate/up)";
    IQ3_S = 26, IQ3_S, "3.44-bit i-quant; Q6_K output";
    IQ3_M = 27, IQ3_S, "3.66-bit i-quant mix: IQ3_S with Q4_K attn_v, attn_output and first \
        eighth of ffn_down";
    IQ4_NL = 25, IQ4_NL, "4.5-bit non-linear quant in 32-element blocks; Q6_K output";
    IQ4_XS = 30, IQ4_XS, "4.25-bit non-linear quant in 256-element blocks; Q6_K output";
    TQ1_0 = 36, TQ1_0, "1.69-bit ternary, for ternary-trained models; Q4_K token embedding, Q6_K \
        output";
    TQ2_0 = 37, TQ2_0, "2.06-bit ternary, for ternary-trained models; Q4_K token embedding, Q6_K \
        output";
    MXFP4_MOE = 38, MXFP4, "MXFP4 (4.25 bits per weight) for the routed-expert tensors, Q8_0 for \
        every other 2-D weight";
    NVFP4 = 39, NVFP4, "NVFP4 (4.5 bits per weight), as converted from NVFP4 checkpoints; Q6_K \
        output";
    Q1_0 = 40, Q1_0, "1.125-bit quant in 128-element blocks; Q6_K output";
}

impl FileType {
    /// Every file type, roughly from largest to smallest, for a list of choices.
    pub const ALL: [FileType; 35] = [
        FileType::F32,
        FileType::F16,
        FileType::BF16,
        FileType::Q8_0,
        FileType::Q6_K,
        FileType::Q5_K_M,
        FileType::Q5_K_S,
        FileType::Q5_1,
        FileType::Q5_0,
        FileType::Q4_K_M,
        FileType::Q4_K_S,
        FileType::Q4_1,
        FileType::Q4_0,
        FileType::IQ4_NL,
        FileType::IQ4_XS,
        FileType::NVFP4,
        FileType::MXFP4_MOE,
        FileType::Q3_K_L,
        FileType::Q3_K_M,
        FileType::Q3_K_S,
        FileType::IQ3_M,
        FileType::IQ3_S,
        FileType::IQ3_XS,
        FileType::IQ3_XXS,
        FileType::Q2_K,
        FileType::Q2_K_S,
        FileType::IQ2_M,
        FileType::IQ2_S,
        FileType::IQ2_XS,
        FileType::IQ2_XXS,
        FileType::TQ2_0,
        FileType::IQ1_M,
        FileType::TQ1_0,
        FileType::IQ1_S,
        FileType::Q1_0,
    ];

    /// The file type a `general.file_type` value names.
    pub fn from_id(id: u32) -> Option<FileType> {
        FileType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// Reads a name in any letter case. `llama-quantize`'s aliases are accepted too: `Q3_K`,
    /// `Q4_K` and `Q5_K` are its names for the `_M` recipes.
    pub fn from_name(name: &str) -> Option<FileType> {
        let name = name.trim();
        let alias = [
            ("Q3_K", FileType::Q3_K_M),
            ("Q4_K", FileType::Q4_K_M),
            ("Q5_K", FileType::Q5_K_M),
        ];
        FileType::ALL
            .into_iter()
            .map(|t| (t.name(), t))
            .chain(alias)
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, t)| t)
    }
}

impl fmt::Display for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// JSON carries the `llama-quantize` name.
impl Serialize for FileType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A name that is no llama.cpp file type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFileType(pub String);

impl fmt::Display for UnknownFileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a llama.cpp file type; use one of:", self.0)?;
        for t in FileType::ALL {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownFileType {}

impl FromStr for FileType {
    type Err = UnknownFileType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FileType::from_name(s).ok_or_else(|| UnknownFileType(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `enum llama_ftype`, written out as numbers from llama.h.
    #[test]
    fn ids_are_llama_h() {
        let expected = [
            ("F32", 0),
            ("F16", 1),
            ("Q4_0", 2),
            ("Q4_1", 3),
            ("Q8_0", 7),
            ("Q5_0", 8),
            ("Q5_1", 9),
            ("Q2_K", 10),
            ("Q3_K_S", 11),
            ("Q3_K_M", 12),
            ("Q3_K_L", 13),
            ("Q4_K_S", 14),
            ("Q4_K_M", 15),
            ("Q5_K_S", 16),
            ("Q5_K_M", 17),
            ("Q6_K", 18),
            ("IQ2_XXS", 19),
            ("IQ2_XS", 20),
            ("Q2_K_S", 21),
            ("IQ3_XS", 22),
            ("IQ3_XXS", 23),
            ("IQ1_S", 24),
            ("IQ4_NL", 25),
            ("IQ3_S", 26),
            ("IQ3_M", 27),
            ("IQ2_S", 28),
            ("IQ2_M", 29),
            ("IQ4_XS", 30),
            ("IQ1_M", 31),
            ("BF16", 32),
            ("TQ1_0", 36),
            ("TQ2_0", 37),
            ("MXFP4_MOE", 38),
            ("NVFP4", 39),
            ("Q1_0", 40),
        ];
        assert_eq!(expected.len(), FileType::ALL.len());
        for (name, id) in expected {
            let t = FileType::from_name(name).unwrap();
            assert_eq!(t.id(), id, "{name}");
            assert_eq!(t.name(), name);
            assert_eq!(FileType::from_id(id), Some(t));
        }
        for removed in [4, 5, 6, 33, 34, 35, 1024] {
            assert_eq!(FileType::from_id(removed), None);
        }
    }

    #[test]
    fn names_parse_in_any_case_with_quantize_aliases() {
        assert_eq!("q4_k_m".parse(), Ok(FileType::Q4_K_M));
        assert_eq!("Q4_K".parse(), Ok(FileType::Q4_K_M));
        assert_eq!("iq4_xs".parse(), Ok(FileType::IQ4_XS));
        assert_eq!("mxfp4_moe".parse(), Ok(FileType::MXFP4_MOE));
        assert!("Q4_K_L"
            .parse::<FileType>()
            .unwrap_err()
            .to_string()
            .contains("Q4_K_M"));
    }

    #[test]
    fn every_description_is_one_line() {
        for t in FileType::ALL {
            assert!(
                !t.description().is_empty() && !t.description().contains('\n'),
                "{t}"
            );
        }
    }
}
