//! Feeds arbitrary bytes to `vramfit_smi::parse`, which must return (Ok or Err) without panicking
//! and, for anything it reads, give a snapshot that survives a JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(snapshot) = vramfit_smi::parse(&text) {
        let json = serde_json::to_string(&snapshot).expect("a snapshot always serializes");
        if json.len() <= vramfit_smi::MAX_INPUT_BYTES {
            assert_eq!(vramfit_smi::parse(&json).ok(), Some(snapshot));
        }
    }
});
