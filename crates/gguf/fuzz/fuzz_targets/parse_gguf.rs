//! Feeds arbitrary bytes to `vramfit_gguf::parse_header`, which must return (Ok or Err) without
//! panicking; whatever it reads must write back, read back the same, and write the same bytes
//! again. Seed the corpus with `tests/fixtures/*.gguf`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_gguf::{parse_header, write_header};

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = parse_header(data) {
        let _ = (header.tensor_bytes_total(), header.expected_file_size(), header.file_type());
        let written = write_header(&header);
        let reread = parse_header(&written).expect("a written header reads back");
        assert_eq!(reread.metadata, header.metadata);
        assert_eq!(reread.tensors, header.tensors);
        assert_eq!(write_header(&reread), written);
    }
});
