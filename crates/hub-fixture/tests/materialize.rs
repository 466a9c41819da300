//! Materialized checkpoints are sparse, laid out as huggingface_hub lays out its cache, and read
//! back with vramfit's header readers.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use vramfit_hub_fixture::fixtures::find;
use vramfit_hub_fixture::materialize::cache_folder_name;
use vramfit_hub_fixture::{materialize_dir, materialize_hf_cache};

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("vramfit-hub-fixture-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_prefix(path: &Path, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    fs::File::open(path).unwrap().read_exact(&mut buf).unwrap();
    buf
}

#[test]
fn a_directory_of_sparse_files_reads_back() {
    let dir = temp_dir("dir");
    let c = find("Qwen/Qwen3-32B-AWQ").unwrap();
    materialize_dir(&c, &dir).unwrap();
    for f in &c.files {
        let path = dir.join(&f.path);
        assert_eq!(fs::metadata(&path).unwrap().len(), f.size, "{}", f.path);
        if f.path.ends_with(".safetensors") {
            let h = vramfit_safetensors::parse_header(&read_prefix(&path, f.head.len())).unwrap();
            h.check_file_len(f.size).unwrap();
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let shard = dir.join("model-00001-of-00004.safetensors");
        let on_disk = fs::metadata(&shard).unwrap().blocks() * 512;
        assert!(
            on_disk < 64 * 1024 * 1024,
            "sparse: {on_disk} bytes allocated"
        );
    }
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_hf_cache_layout_has_blobs_snapshots_and_refs() {
    let cache = temp_dir("cache");
    let c = find("vramfit-fixtures/Meta-Llama-3.1-8B-Instruct-GGUF").unwrap();
    let snapshot = materialize_hf_cache(&c, &cache).unwrap();
    let repo_dir = cache.join(cache_folder_name(c.repo));
    assert_eq!(
        repo_dir.file_name().unwrap(),
        "models--vramfit-fixtures--Meta-Llama-3.1-8B-Instruct-GGUF"
    );
    assert_eq!(snapshot, repo_dir.join("snapshots").join(c.sha));
    assert_eq!(
        fs::read_to_string(repo_dir.join("refs/main")).unwrap(),
        c.sha
    );
    for f in &c.files {
        let link = snapshot.join(&f.path);
        let blob = repo_dir.join("blobs").join(f.etag());
        #[cfg(unix)]
        {
            let target = fs::read_link(&link).unwrap();
            assert!(
                target.is_relative() && target.starts_with(".."),
                "{target:?}"
            );
            assert_eq!(
                fs::canonicalize(&link).unwrap(),
                fs::canonicalize(&blob).unwrap()
            );
        }
        assert_eq!(fs::metadata(&link).unwrap().len(), f.size);
        let h = vramfit_gguf::parse_header(&read_prefix(&link, f.head.len())).unwrap();
        assert_eq!(h.expected_file_size(), Some(f.size));
    }
    // A second run over an existing cache succeeds.
    materialize_hf_cache(&c, &cache).unwrap();
    fs::remove_dir_all(cache).unwrap();
}
