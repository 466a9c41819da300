//! The check every parsed header passes, shared by the property tests and the fuzz target
//! (`fuzz/fuzz_targets/parse_safetensors.rs` includes this file).

use vramfit_safetensors::{parse_header, write_header, Header, ParseError};

/// Reads `bytes`; on success uses every derived figure and checks the header survives writing and
/// reading back.
pub fn exercise(bytes: &[u8]) -> Result<Header, ParseError> {
    let header = match parse_header(bytes) {
        Err(ParseError::Truncated { needed }) => {
            assert!(needed > bytes.len() as u64, "Truncated asks for more");
            return Err(ParseError::Truncated { needed });
        }
        other => other?,
    };
    let _ = (header.tensor_bytes(), header.file_len());
    for t in &header.tensors {
        assert_eq!(t.expected_bytes(), Some(t.bytes()), "{}", t.name);
    }
    assert_eq!(header.check_file_len(header.file_len()), Ok(()));
    let written = write_header(&header);
    let reread = parse_header(&written).expect("a written header reads back");
    assert_eq!(reread.tensors, header.tensors);
    assert_eq!(reread.metadata, header.metadata);
    assert_eq!(reread.data_start, written.len() as u64);
    assert_eq!(write_header(&reread), written, "writing is stable");
    Ok(header)
}
