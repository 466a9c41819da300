//! Where a model comes from when it is not a preset: a checkpoint directory (`--model-dir`), a
//! Hugging Face repo (`--hf REPO[@REVISION][:QUANT]`), read from the local HF cache first and
//! then from the Hub, or a GGUF file (`--gguf`). The engine's `RepoRead` decides what to read;
//! this module only reads it: files, HTTP, and four reads at a time. What the files give is
//! applied as scenario fields, as a pasted config.json is.

mod cache;
mod hub;

use std::path::{Path, PathBuf};
use vramfit_engine::model::{self, Fetch, GgufModel, Next, RepoFile, RepoModel, RepoRead};

pub use vramfit_engine::model::HubRepo;

/// A place that holds a checkpoint's files, read by name and by byte range, from a few threads at
/// once.
trait Files: Sync {
    /// Where the files are, for messages.
    fn origin(&self) -> String;
    /// A whole small file (config.json, the index), or `len` bytes from `start` of a large one;
    /// `Ok(None)` when there is no such file.
    fn read(&self, name: &str, range: Option<(u64, u64)>) -> Result<Option<Vec<u8>>, String>;
    /// Every file, by its path in the repo.
    fn list(&self) -> Result<Vec<RepoFile>, String>;
}

/// How many reads are made at once: enough to hide the Hub's latency, few enough to be polite
/// to it.
const READS_IN_FLIGHT: usize = 4;

/// Makes the reads `read` asks for until it ends.
fn drive(files: &dyn Files, mut read: RepoRead) -> Result<RepoModel, String> {
    let mut told = false;
    loop {
        match read.next_read() {
            Next::List => read.listed(files.list()?),
            Next::Fetch(fetches) => {
                if fetches.len() > READS_IN_FLIGHT && !told {
                    eprintln!(
                        "vramfit: {}: reading {} headers",
                        files.origin(),
                        fetches.len()
                    );
                    told = true;
                }
                read.fetched(fetch_all(files, &fetches)?);
            }
            Next::Done(result) => return result,
        }
    }
}

/// `fetches`, READS_IN_FLIGHT at a time, answers in their order.
fn fetch_all(files: &dyn Files, fetches: &[Fetch]) -> Result<Vec<Option<Vec<u8>>>, String> {
    let mut answers = Vec::with_capacity(fetches.len());
    for batch in fetches.chunks(READS_IN_FLIGHT) {
        let read: Vec<_> = std::thread::scope(|scope| {
            let reads: Vec<_> = batch
                .iter()
                .map(|f| scope.spawn(|| files.read(&f.file, f.range)))
                .collect();
            reads.into_iter().map(|r| r.join()).collect()
        });
        for answer in read {
            answers.push(answer.map_err(|_| format!("{}: a read failed", files.origin()))??);
        }
    }
    Ok(answers)
}

/// Reads a local checkpoint directory.
pub fn read_dir(dir: &Path) -> Result<RepoModel, String> {
    let files = LocalDir(dir.to_path_buf());
    let read = drive(&files, RepoRead::new(&files.origin(), None))?;
    match read {
        RepoModel::Quants(quants) => Err(format!(
            "{} holds GGUF files, not a checkpoint; read one with --gguf ({})",
            files.origin(),
            quant_list(&quants)
        )),
        read => Ok(read),
    }
}

/// Reads a local GGUF file and, when it is the first shard of a split file, the shards beside it.
pub fn read_gguf(path: &Path) -> Result<GgufModel, String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = LocalDir(dir.unwrap_or(Path::new(".")).to_path_buf());
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{} is not a file name", path.display()))?;
    let read = RepoRead::gguf(&dir.origin(), &model::split_shards(name));
    match drive(&dir, read)? {
        RepoModel::Gguf(file) => Ok(*file),
        _ => Err(format!("{} is not a GGUF file", path.display())),
    }
}

fn quant_list(quants: &[model::Quant]) -> String {
    quants
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads a Hub repo: from the HF cache when it holds the revision's files, else from the Hub
/// (never under `HF_HUB_OFFLINE=1`).
pub fn read_hub(repo: &HubRepo) -> Result<RepoModel, String> {
    let env = hub::Env::from_process();
    let read = |files: &dyn Files| {
        let read = drive(
            files,
            RepoRead::new(&repo.to_string(), repo.quant.as_deref()),
        )?;
        match read {
            RepoModel::Quants(quants) => Err(format!(
                "{repo} is a GGUF repo: name one of its quants, as --hf {}:QUANT ({})",
                repo.id,
                quant_list(&quants)
            )),
            read => Ok(read),
        }
    };
    if let Some(dir) = cache::snapshot(&env.hub_cache(), repo) {
        let cached = read(&LocalDir(dir));
        if cached.is_ok() || env.offline {
            return cached;
        }
    } else if env.offline {
        return Err(format!(
            "{repo} is not in the HF cache ({}) and HF_HUB_OFFLINE is set, so the Hub is not asked",
            env.hub_cache().display()
        ));
    }
    read(&hub::Remote::new(env, repo.clone())?)
}

/// A checkpoint directory on disk (the HF cache's snapshots are ones too).
struct LocalDir(PathBuf);

impl Files for LocalDir {
    fn origin(&self) -> String {
        self.0.display().to_string()
    }

    fn read(&self, name: &str, range: Option<(u64, u64)>) -> Result<Option<Vec<u8>>, String> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.0.join(name);
        let fail = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        let (start, len) = range.unwrap_or((0, u64::MAX));
        file.seek(SeekFrom::Start(start)).map_err(fail)?;
        let mut bytes = Vec::new();
        file.take(len).read_to_end(&mut bytes).map_err(fail)?;
        Ok(Some(bytes))
    }

    fn list(&self) -> Result<Vec<RepoFile>, String> {
        let mut files = Vec::new();
        list_into(&self.0, "", &mut files)
            .map_err(|e| format!("cannot read {}: {e}", self.0.display()))?;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(files)
    }
}

/// The files under `dir`, and one level of folders below it (a GGUF repo's `Q4_K_M/`).
fn list_into(dir: &Path, prefix: &str, files: &mut Vec<RepoFile>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let path = entry.path();
        if path.is_dir() && prefix.is_empty() {
            list_into(&path, &format!("{name}/"), files)?;
        } else if path.is_file() {
            files.push(RepoFile {
                name: format!("{prefix}{name}"),
                size: std::fs::metadata(&path).ok().map(|m| m.len()),
            });
        }
    }
    Ok(())
}
