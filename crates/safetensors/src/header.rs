//! A safetensors file's header as read: the tensors in data order, `__metadata__`, and where the
//! data starts, with the sizes vramfit asks of them. [`crate::parse_header`] builds it from bytes
//! and [`crate::write_header`] turns it back into bytes.

use crate::dtype::Dtype;
use crate::error::ParseError;
use crate::write::write_header;

/// A safetensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Tensor descriptions in data order (by `data_offsets`, as the reference sorts them; the
    /// JSON object's own order means nothing). Tensors of no bytes at the same offset keep the
    /// header's order.
    pub tensors: Vec<TensorInfo>,
    /// `__metadata__`'s entries in header order (empty when absent or `null`).
    pub metadata: Vec<(String, String)>,
    /// Where tensor data starts in the file: 8 + the header length. Offsets count from here.
    pub data_start: u64,
}

/// One tensor's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Its name, such as `model.layers.0.self_attn.q_proj.weight`.
    pub name: String,
    pub dtype: Dtype,
    /// Dimensions, outermost first (row-major, as PyTorch prints them). Empty for a scalar.
    pub shape: Vec<u64>,
    /// Where its data starts and ends (one past), from [`Header::data_start`].
    pub data_offsets: (u64, u64),
}

impl TensorInfo {
    /// The number of values (1 for a scalar), or `None` on overflow.
    pub fn elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// The bytes its shape and dtype take, or `None` when they overflow or are not whole bytes.
    /// Equal to [`TensorInfo::bytes`] for a tensor [`crate::parse_header`] returned.
    pub fn expected_bytes(&self) -> Option<u64> {
        self.dtype.bytes_for(self.elements()?)
    }

    /// The bytes its data takes in the file: `end - start` (0 if a hand-built tensor ends before
    /// it starts).
    pub fn bytes(&self) -> u64 {
        self.data_offsets.1.saturating_sub(self.data_offsets.0)
    }
}

impl Header {
    /// A header holding `tensors` one after another in the order given, as a writer lays them
    /// out, with `data_start` where [`write_header`] puts the data. `None` when a tensor's size
    /// overflows or is not whole bytes. For tests and header-only files:
    /// `parse_header(&write_header(&h)) == Ok(h)` when the tensors' names are distinct and not
    /// `__metadata__`, and the metadata's keys are distinct.
    pub fn lay_out(
        tensors: impl IntoIterator<Item = (String, Dtype, Vec<u64>)>,
        metadata: Vec<(String, String)>,
    ) -> Option<Header> {
        let mut end = 0u64;
        let mut laid = Vec::new();
        for (name, dtype, shape) in tensors {
            let mut tensor = TensorInfo {
                name,
                dtype,
                shape,
                data_offsets: (end, end),
            };
            end = end.checked_add(tensor.expected_bytes()?)?;
            tensor.data_offsets.1 = end;
            laid.push(tensor);
        }
        let mut header = Header {
            tensors: laid,
            metadata,
            data_start: 0,
        };
        header.data_start = write_header(&header).len() as u64;
        Some(header)
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// `__metadata__`'s value for `key`, such as `format` (`pt`).
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The exact bytes of all tensor data (saturating; for a parsed header it is the last
    /// tensor's end, as the data is contiguous).
    pub fn tensor_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.bytes()))
    }

    /// The size the whole file has: [`Header::data_start`] + the last tensor's end (saturating;
    /// exact for a parsed header). The reference refuses a file of any other length; see
    /// [`Header::check_file_len`].
    pub fn file_len(&self) -> u64 {
        let data_end = self.tensors.iter().map(|t| t.data_offsets.1).max();
        self.data_start.saturating_add(data_end.unwrap_or(0))
    }

    /// The reference's last check, which a reader of a prefix cannot make: the file is exactly
    /// [`Header::file_len`] bytes (`MetadataIncompleteBuffer`). Give it the file's length (a
    /// `File`'s size, or a Range response's `Content-Range` total).
    pub fn check_file_len(&self, actual: u64) -> Result<(), ParseError> {
        let expected = self.file_len();
        if actual == expected {
            Ok(())
        } else {
            Err(ParseError::FileLength { expected, actual })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_shapes_and_offsets() {
        let h = Header::lay_out(
            [
                ("a".to_string(), Dtype::BF16, vec![4, 8]),
                ("s".to_string(), Dtype::F32, vec![]),
                ("e".to_string(), Dtype::I64, vec![0, 3]),
                ("p".to_string(), Dtype::F4, vec![6]),
            ],
            vec![("format".into(), "pt".into())],
        )
        .unwrap();
        let spans: Vec<_> = h.tensors.iter().map(|t| t.data_offsets).collect();
        assert_eq!(spans, [(0, 64), (64, 68), (68, 68), (68, 71)]);
        assert_eq!(h.tensor_bytes(), 71);
        assert_eq!(h.file_len(), h.data_start + 71);
        assert_eq!(h.data_start % 8, 0, "the writer pads the header to 8 bytes");
        assert_eq!(h.tensor("s").map(TensorInfo::elements), Some(Some(1)));
        assert_eq!(h.metadata_value("format"), Some("pt"));
        assert_eq!(h.check_file_len(h.file_len()), Ok(()));
        assert_eq!(
            h.check_file_len(10),
            Err(ParseError::FileLength {
                expected: h.file_len(),
                actual: 10
            })
        );
        assert_eq!(
            Header::lay_out([("odd".to_string(), Dtype::F4, vec![3])], vec![]),
            None
        );
    }
}
