//! Feeds arbitrary bytes to `vramfit_safetensors::parse_header` twice: as they are (a file's
//! start, length first), and framed as a header of their own length, so that mutations reach the
//! JSON reader instead of mostly changing the length. Either must return (Ok or Err) without
//! panicking; whatever it reads must write back, read back the same, and write the same bytes
//! again. The seeds in `fuzz/seeds` are small headers in the writer's layout, each as a whole
//! header (`.header`) and as its JSON alone (`.json`); `tests/no_panic.rs` holds that they are
//! valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_safetensors::{parse_header, write_header, ParseError};

fn check(bytes: &[u8]) {
    let header = match parse_header(bytes) {
        Ok(header) => header,
        Err(ParseError::Truncated { needed }) => {
            assert!(needed > bytes.len() as u64, "Truncated asks for more");
            return;
        }
        Err(_) => return,
    };
    let _ = (header.tensor_bytes(), header.file_len());
    for t in &header.tensors {
        assert_eq!(t.expected_bytes(), Some(t.bytes()), "{}", t.name);
    }
    assert!(header.check_file_len(header.file_len()).is_ok());
    let written = write_header(&header);
    let reread = parse_header(&written).expect("a written header reads back");
    assert_eq!(reread.tensors, header.tensors);
    assert_eq!(reread.metadata, header.metadata);
    assert_eq!(reread.data_start, written.len() as u64);
    assert_eq!(write_header(&reread), written, "writing is stable");
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut framed = (data.len() as u64).to_le_bytes().to_vec();
    framed.extend_from_slice(data);
    check(&framed);
});
