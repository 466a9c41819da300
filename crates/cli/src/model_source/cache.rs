//! The local Hugging Face cache, laid out as huggingface_hub writes it
//! (`file_download.py`: `{cache}/models--{org}--{name}/refs/{revision}` holds the commit, and
//! `snapshots/{commit}/{file}` links to `blobs/{etag}`).

use super::HubRepo;
use std::path::{Path, PathBuf};

/// The revision's snapshot folder, when the cache holds one.
pub fn snapshot(cache: &Path, repo: &HubRepo) -> Option<PathBuf> {
    let folder = cache.join(format!("models--{}", repo.id.replace('/', "--")));
    let commit = if is_commit(&repo.revision) {
        repo.revision.clone()
    } else {
        std::fs::read_to_string(folder.join("refs").join(&repo.revision))
            .ok()?
            .trim()
            .to_string()
    };
    let dir = folder.join("snapshots").join(commit);
    dir.is_dir().then_some(dir)
}

/// A full commit hash, which names a snapshot without a ref.
pub fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ref_names_its_snapshot() {
        let cache = std::env::temp_dir().join(format!("vramfit-cache-{}", std::process::id()));
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let folder = cache.join("models--Org--Model");
        std::fs::create_dir_all(folder.join("refs")).unwrap();
        let repo = HubRepo::parse("Org/Model").unwrap();
        assert_eq!(snapshot(&cache, &repo), None, "no ref yet");
        std::fs::write(folder.join("refs/main"), commit).unwrap();
        assert_eq!(snapshot(&cache, &repo), None, "no snapshot yet");
        std::fs::create_dir_all(folder.join("snapshots").join(commit)).unwrap();
        let dir = folder.join("snapshots").join(commit);
        assert_eq!(snapshot(&cache, &repo), Some(dir.clone()));
        let pinned = HubRepo::parse(&format!("Org/Model@{commit}")).unwrap();
        assert_eq!(snapshot(&cache, &pinned), Some(dir));
        assert_eq!(
            snapshot(&cache, &HubRepo::parse("Org/Other").unwrap()),
            None
        );
        std::fs::remove_dir_all(cache).unwrap();
    }
}
