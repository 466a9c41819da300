//! A GGUF file's header as read: the metadata and the tensor list, with the questions vramfit asks
//! of them (architecture, shape keys, exact weight bytes). [`crate::parse_header`] builds it from
//! bytes and [`crate::write_header`] turns it back into bytes.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::file_type::FileType;
use crate::metadata::MetaValue;
use crate::types::GgmlType;

/// The alignment of tensor data when `general.alignment` is absent (`GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// The key that overrides [`DEFAULT_ALIGNMENT`]; it must be a `u32` power of two.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// A GGUF header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The format version: 2 or 3 (the layouts are the same; 1 is no longer read).
    pub version: u32,
    /// Tensor data alignment, from `general.alignment` or [`DEFAULT_ALIGNMENT`]. Derived: the
    /// writer recomputes it from the metadata.
    pub alignment: u64,
    /// Key/value pairs in file order.
    #[serde(serialize_with = "as_map")]
    pub metadata: Vec<(String, MetaValue)>,
    /// Tensor descriptions in file order.
    pub tensors: Vec<TensorInfo>,
    /// Where tensor data starts in the file: the end of the tensor list, padded to the alignment.
    /// Derived: the writer recomputes it.
    pub data_offset: u64,
}

/// One tensor's description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TensorInfo {
    /// Its name, such as `blk.0.attn_q.weight`.
    pub name: String,
    /// Dimensions as the file stores them: ne0 (the row length) first.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Where its data starts, from the start of the tensor data. Derived: the writer lays tensors
    /// out one after another, each padded to the alignment, as llama.cpp requires.
    pub offset: u64,
}

impl TensorInfo {
    /// The number of values (1 for no dimensions, as ggml counts a scalar), or `None` on
    /// overflow.
    pub fn elements(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// The exact bytes of its data, or `None` when the row is not whole blocks of its type or the
    /// size overflows. Always `Some` for a tensor [`crate::parse_header`] returned.
    pub fn bytes(&self) -> Option<u64> {
        let row = self.dims.first().copied().unwrap_or(1);
        if !row.is_multiple_of(self.ggml_type.block_elements()) {
            return None;
        }
        self.ggml_type.bytes_for(self.elements()?)
    }
}

/// A per-layer setting: one value for all layers, or one per layer (newer files write
/// `head_count_kv` and the like as arrays for models whose layers differ).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PerLayer {
    Same(u64),
    Each(Vec<u64>),
}

impl PerLayer {
    /// The value for layer `layer` (any layer when they are all the same).
    pub fn layer(&self, layer: usize) -> Option<u64> {
        match self {
            PerLayer::Same(v) => Some(*v),
            PerLayer::Each(values) => values.get(layer).copied(),
        }
    }

    /// The largest value over the layers.
    pub fn max(&self) -> Option<u64> {
        match self {
            PerLayer::Same(v) => Some(*v),
            PerLayer::Each(values) => values.iter().copied().max(),
        }
    }
}

impl Header {
    /// The value of `key`, if the file has it.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `key` as a string.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// `key` as a non-negative integer of any width.
    pub fn u64_key(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }

    /// `key` as a float (stored as `f32` or `f64`).
    pub fn f32_key(&self, key: &str) -> Option<f32> {
        // Narrowing an f64 is what the caller asked for; llama.cpp keeps these as float too.
        self.get(key)?.as_f64().map(|v| v as f32)
    }

    /// `key` as one integer or an array of them, one per layer.
    pub fn per_layer_u64(&self, key: &str) -> Option<PerLayer> {
        match self.get(key)? {
            MetaValue::Array(array) => array.to_u64s().map(PerLayer::Each),
            value => value.as_u64().map(PerLayer::Same),
        }
    }

    /// `general.architecture`: `llama`, `qwen3moe`, `gemma2`, … The model's own keys start with
    /// it.
    pub fn architecture(&self) -> Option<&str> {
        self.string("general.architecture")
    }

    /// The architecture's key `suffix` (`block_count` → `llama.block_count`) as an integer.
    pub fn arch_u64(&self, suffix: &str) -> Option<u64> {
        self.u64_key(&self.arch_key(suffix)?)
    }

    /// The architecture's key `suffix` as a float.
    pub fn arch_f32(&self, suffix: &str) -> Option<f32> {
        self.f32_key(&self.arch_key(suffix)?)
    }

    /// The architecture's key `suffix` (`attention.head_count_kv`) per layer.
    pub fn arch_per_layer_u64(&self, suffix: &str) -> Option<PerLayer> {
        self.per_layer_u64(&self.arch_key(suffix)?)
    }

    fn arch_key(&self, suffix: &str) -> Option<String> {
        Some(format!("{}.{suffix}", self.architecture()?))
    }

    /// The raw `general.file_type` number, known to vramfit or not.
    pub fn file_type_id(&self) -> Option<u64> {
        self.u64_key("general.file_type")
    }

    /// `general.file_type` as a llama.cpp file type, when it names one.
    pub fn file_type(&self) -> Option<FileType> {
        FileType::from_id(u32::try_from(self.file_type_id()?).ok()?)
    }

    /// The exact bytes of all tensor data, without the padding between tensors: what llama.cpp
    /// prints as "model size". `None` only for a hand-built header with an impossible tensor.
    pub fn tensor_bytes_total(&self) -> Option<u64> {
        self.tensors
            .iter()
            .try_fold(0u64, |sum, t| sum.checked_add(t.bytes()?))
    }

    /// The size the whole file should have: the header, then each tensor padded to the alignment
    /// (the last one too, as llama-quantize writes it). A shorter file is an incomplete download.
    pub fn expected_file_size(&self) -> Option<u64> {
        self.tensors.iter().try_fold(self.data_offset, |end, t| {
            end.checked_add(pad_to(t.bytes()?, self.alignment)?)
        })
    }

    /// How many tensors have each type, as llama.cpp's loader logs `type q4_K: 193 tensors`.
    pub fn tensor_type_counts(&self) -> BTreeMap<GgmlType, usize> {
        let mut counts = BTreeMap::new();
        for t in &self.tensors {
            *counts.entry(t.ggml_type).or_insert(0) += 1;
        }
        counts
    }
}

/// `GGML_PAD`: `n` rounded up to a multiple of `alignment` (a power of two), or `None` on
/// overflow or a zero alignment.
pub(crate) fn pad_to(n: u64, alignment: u64) -> Option<u64> {
    let rest = n.checked_rem(alignment)?;
    if rest == 0 {
        Some(n)
    } else {
        n.checked_add(alignment - rest)
    }
}

/// Metadata as a JSON object in file order (keys are unique in a parsed header).
fn as_map<S: Serializer>(
    metadata: &[(String, MetaValue)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(metadata.len()))?;
    for (key, value) in metadata {
        map.serialize_entry(key, value)?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{ArrayValues, MetaArray};

    fn header(metadata: Vec<(&str, MetaValue)>, tensors: Vec<TensorInfo>) -> Header {
        Header {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            metadata: metadata
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            tensors,
            data_offset: 64,
        }
    }

    fn tensor(name: &str, dims: &[u64], ggml_type: GgmlType) -> TensorInfo {
        TensorInfo {
            name: name.into(),
            dims: dims.to_vec(),
            ggml_type,
            offset: 0,
        }
    }

    #[test]
    fn arch_keys_and_per_layer_values() {
        let h = header(
            vec![
                ("general.architecture", MetaValue::String("gemma3".into())),
                ("gemma3.block_count", MetaValue::U32(26)),
                (
                    "gemma3.attention.head_count_kv",
                    MetaValue::Array(MetaArray::Values(ArrayValues::I32(vec![1, 4]))),
                ),
                ("gemma3.attention.head_count", MetaValue::U32(8)),
                ("gemma3.rope.freq_base", MetaValue::F32(1e6)),
                ("general.file_type", MetaValue::U32(15)),
            ],
            vec![],
        );
        assert_eq!(h.architecture(), Some("gemma3"));
        assert_eq!(h.arch_u64("block_count"), Some(26));
        assert_eq!(h.arch_f32("rope.freq_base"), Some(1e6));
        assert_eq!(
            h.arch_per_layer_u64("attention.head_count_kv"),
            Some(PerLayer::Each(vec![1, 4]))
        );
        assert_eq!(
            h.arch_per_layer_u64("attention.head_count")
                .and_then(|p| p.layer(25)),
            Some(8)
        );
        assert_eq!(h.file_type(), Some(FileType::Q4_K_M));
        assert_eq!(h.u64_key("missing"), None);
    }

    #[test]
    fn sizes_count_whole_blocks_and_padding() {
        let h = header(
            vec![],
            vec![
                tensor("a", &[256, 3], GgmlType::Q4_K), // 3 blocks of 144
                tensor("b", &[5], GgmlType::F32),       // 20 bytes, padded to 32
            ],
        );
        assert_eq!(h.tensor_bytes_total(), Some(3 * 144 + 20));
        assert_eq!(h.expected_file_size(), Some(64 + 448 + 32));
        assert_eq!(
            h.tensor_type_counts().into_iter().collect::<Vec<_>>(),
            [(GgmlType::F32, 1), (GgmlType::Q4_K, 1)]
        );
        assert_eq!(tensor("c", &[100, 2], GgmlType::Q4_K).bytes(), None);
        assert_eq!(tensor("s", &[], GgmlType::F32).bytes(), Some(4));
    }

    #[test]
    fn pad_to_rounds_up_to_powers_of_two() {
        assert_eq!(pad_to(0, 32), Some(0));
        assert_eq!(pad_to(33, 32), Some(64));
        assert_eq!(pad_to(u64::MAX, 32), None);
        assert_eq!(pad_to(5, 0), None);
    }
}
