//! Feeds arbitrary bytes to `vramfit_gguf::parse_header`, which must return (Ok or Err) without
//! panicking; whatever it reads must write back, read back the same, and write the same bytes
//! again. Seed the corpus with `tests/fixtures/*.gguf`. Headers that `general.alignment` pads past
//! 1 MiB (llama.cpp accepts any power of two up to 2^31) are not written back: the writer would
//! rightly emit up to 2 GiB of zeros, past libFuzzer's memory limit (the first run's only
//! finding), and the inputs here are at most tens of KB, so anything longer is padding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_gguf::{parse_header, write_header};

/// Longer written headers are padding (see above).
const WRITE_BACK_LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = parse_header(data) {
        let _ = (header.tensor_bytes_total(), header.expected_file_size(), header.file_type());
        if header.data_offset > WRITE_BACK_LIMIT {
            return;
        }
        let written = write_header(&header);
        let reread = parse_header(&written).expect("a written header reads back");
        assert_eq!(reread.metadata, header.metadata);
        assert_eq!(reread.tensors, header.tensors);
        assert_eq!(write_header(&reread), written);
    }
});
