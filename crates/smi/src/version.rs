//! `nvidia-smi --version`: driver and CUDA versions, and no GPUs at all.
//!
//! It parses to a snapshot with an empty GPU list and a warning rather than an error, so that a
//! caller can still show the versions and ask for a fuller paste.

use crate::snapshot::{Snapshot, SourceFormat};
use crate::values;

pub(crate) fn detect(text: &str) -> bool {
    text.lines().any(|l| {
        l.trim_start()
            .to_ascii_lowercase()
            .starts_with("nvidia-smi version")
    })
}

pub(crate) fn parse(text: &str) -> Snapshot {
    let mut snap = Snapshot::new(SourceFormat::Version);
    let (mut driver, mut kmd, mut cuda, mut umd) = (None, None, None, None);
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        // From 610 on, `DRIVER version` and `CUDA version` hold prose pointing at the new keys.
        let value = Some(value.trim())
            .filter(|v| values::is_version(v))
            .map(str::to_string);
        match key.trim().to_ascii_lowercase().as_str() {
            "driver version" => driver = value,
            "kmd version" => kmd = value,
            "cuda version" => cuda = value,
            "cuda umd version" => umd = value,
            _ => {}
        }
    }
    snap.driver_version = kmd.or(driver);
    snap.cuda_version = umd.or(cuda);
    snap.warn(
        "`nvidia-smi --version` reports versions only, no GPUs; paste `nvidia-smi` or \
         `nvidia-smi --query-gpu=index,name,memory.total,memory.used,memory.free --format=csv`",
    );
    snap
}
