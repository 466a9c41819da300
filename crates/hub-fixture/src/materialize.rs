//! Checkpoints written to disk for tests that read local files: a plain directory, or the
//! Hugging Face cache layout. Weight files are sparse (the header written, the length set with
//! `File::set_len`), so a 60 GB checkpoint takes a few megabytes of disk.
//!
//! The cache layout is huggingface_hub's (huggingface/huggingface_hub@
//! ee0a4510f4bc15e26cb722be2efc2bdb01383ca0: src/huggingface_hub/file_download.py
//! `hf_hub_download`'s docstring, `_create_symlink`, `_cache_commit_hash_for_specific_revision`;
//! constants.py `REPO_ID_SEPARATOR`): `models--{org}--{name}/blobs/{etag}`,
//! `snapshots/{commit}/{path}` as relative symlinks to the blobs, and `refs/main` holding the
//! commit with no newline.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::checkpoint::Checkpoint;
use crate::files::RepoFile;

fn write_sparse(file: &RepoFile, path: &Path) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut out = File::create(path)?;
    out.write_all(&file.head)?;
    out.set_len(file.size)
}

/// Writes every file of `ckpt` under `dir` (created if missing) at its repository path.
pub fn materialize_dir(ckpt: &Checkpoint, dir: &Path) -> io::Result<()> {
    for file in &ckpt.files {
        write_sparse(file, &dir.join(&file.path))?;
    }
    Ok(())
}

/// `models--{org}--{name}`, the cache folder of a model repository.
pub fn cache_folder_name(repo: &str) -> String {
    format!("models--{}", repo.replace('/', "--"))
}

/// Writes `ckpt` into the HF cache at `hub_cache` (what `HF_HUB_CACHE` names) and returns its
/// snapshot folder, `…/snapshots/{sha}`.
pub fn materialize_hf_cache(ckpt: &Checkpoint, hub_cache: &Path) -> io::Result<PathBuf> {
    let repo_dir = hub_cache.join(cache_folder_name(ckpt.repo));
    let snapshot = repo_dir.join("snapshots").join(ckpt.sha);
    for file in &ckpt.files {
        let etag = file.etag();
        let blob = repo_dir.join("blobs").join(&etag);
        write_sparse(file, &blob)?;
        let link = snapshot.join(&file.path);
        if let Some(parent) = link.parent() {
            fs::create_dir_all(parent)?;
        }
        let depth = file.path.matches('/').count() + 2;
        let target: PathBuf = std::iter::repeat_n("..", depth)
            .collect::<PathBuf>()
            .join("blobs")
            .join(&etag);
        if fs::symlink_metadata(&link).is_ok() {
            fs::remove_file(&link)?;
        }
        symlink(&target, &link)?;
    }
    fs::create_dir_all(repo_dir.join("refs"))?;
    fs::write(repo_dir.join("refs").join("main"), ckpt.sha)?;
    Ok(snapshot)
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Where symlinks need privileges, huggingface_hub copies the blob instead; so does this.
#[cfg(not(unix))]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    let blob = link.parent().unwrap_or(link).join(target);
    fs::copy(blob, link).map(|_| ())
}
