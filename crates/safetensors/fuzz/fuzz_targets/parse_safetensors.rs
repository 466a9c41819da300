//! Feeds arbitrary bytes to `vramfit_safetensors::parse_header` twice: as they are (a file's
//! start, length first), and framed as a header of their own length, so that mutations reach the
//! JSON reader instead of mostly changing the length. Either must return (Ok or Err) without
//! panicking; whatever it reads must write back, read back the same, and write the same bytes
//! again. The seeds in `fuzz/seeds` are small headers in the writer's layout, each as a whole
//! header (`.header`) and as its JSON alone (`.json`); `tests/no_panic.rs` holds that they are
//! valid.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/mod.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = common::exercise(data);
    let mut framed = (data.len() as u64).to_le_bytes().to_vec();
    framed.extend_from_slice(data);
    let _ = common::exercise(&framed);
});
