//! Reading a model from a repository's files without doing any IO, in the manner of httparse:
//! [`RepoRead`] says what to read next ([`Next`]), is handed each answer, and ends with what the
//! files gave. The CLI drives it over a directory, the HF cache or HTTP, the page over `fetch`;
//! both get the same reads in the same order, and the same errors. Only config.json, the index
//! and the headers are read, never tensor data:
//!
//! - a checkpoint: the listing; config.json, and `model.safetensors.index.json` when the listing
//!   has one (its `weight_map` names the shards; else `model.safetensors` or every top-level
//!   `.safetensors` file); then each shard's 8-byte header length, then its header;
//! - a GGUF repo's quant (`REPO:Q4_K_M`, never the `mmproj` projector): each shard's first
//!   [`GGUF_FIRST_READ_BYTES`], grown while the header needs more, read whole from every shard
//!   of a `gguf-split` file;
//! - a GGUF repo with no quant named: its quants, with their sizes where the listing has them.
//!
//! Every shard's next read is asked for at once, so a driver may make them side by side.

use super::{
    parse_hf_config, read_checkpoint, read_gguf_split, Checkpoint, GgufModel, HfConfig,
    GGUF_FIRST_READ_BYTES,
};
use crate::dtype::Dtype;
use std::fmt;
use vramfit_safetensors::{TensorInfo, HEADER_LENGTH_BYTES};

const INDEX: &str = "model.safetensors.index.json";

/// A file in a repository's listing; `size` where the listing gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoFile {
    pub name: String,
    pub size: Option<u64>,
}

/// One read: a whole (small) file, or `len` bytes from `start`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub file: String,
    pub range: Option<(u64, u64)>,
}

/// What the reader needs next.
#[derive(Debug)]
pub enum Next {
    /// The repository's files: answer with [`RepoRead::listed`].
    List,
    /// These reads, in any order or all at once: answer with [`RepoRead::fetched`], in this order.
    Fetch(Vec<Fetch>),
    /// The end: what the files gave, or why they gave nothing.
    Done(Result<RepoModel, String>),
}

/// One quant of a GGUF repo: its name (`Q4_K_M`), its file's shards, and their bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quant {
    pub name: String,
    pub files: Vec<String>,
    pub bytes: Option<u64>,
}

/// A checkpoint's config and tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadCheckpoint {
    pub origin: String,
    pub config: HfConfig,
    pub checkpoint: Checkpoint,
    /// Header bytes read, over every shard.
    pub header_bytes: u64,
}

/// What a repository gave.
#[derive(Clone, Debug, PartialEq)]
pub enum RepoModel {
    Checkpoint(Box<ReadCheckpoint>),
    Gguf(Box<GgufModel>),
    /// A GGUF repo read with no quant named: the ones to choose from.
    Quants(Vec<Quant>),
}

impl RepoModel {
    /// The scenario fields: for a checkpoint the config's shape and format, then its tensors.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        match self {
            RepoModel::Checkpoint(read) => {
                let mut pairs = vec![("model", String::new()), ("params", String::new())];
                pairs.extend(read.config.pairs());
                pairs.extend(read.checkpoint.pairs());
                pairs
            }
            RepoModel::Gguf(file) => file.pairs(),
            RepoModel::Quants(_) => Vec::new(),
        }
    }

    /// What to tell the user: the summary, then each warning.
    pub fn messages(&self) -> Vec<String> {
        match self {
            RepoModel::Checkpoint(read) => read.messages(),
            RepoModel::Gguf(file) => std::iter::once(file.summary())
                .chain(file.warnings.iter().cloned())
                .collect(),
            RepoModel::Quants(quants) => vec![quants
                .iter()
                .map(Quant::to_string)
                .collect::<Vec<_>>()
                .join(", ")],
        }
    }
}

impl ReadCheckpoint {
    fn messages(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{}: {} {} ({} B of headers read)",
            self.origin,
            self.config.summary(),
            self.checkpoint.summary(),
            self.header_bytes
        )];
        lines.extend(self.config.warnings.iter().cloned());
        if !self.config.defaults_used.is_empty() {
            lines.push(format!(
                "not in config.json, taken from the {} defaults: {}",
                self.config.model_type.as_deref().unwrap_or("family"),
                self.config.defaults_used.join(", ")
            ));
        }
        lines.extend(self.checkpoint.warnings.iter().cloned());
        lines
    }
}

impl fmt::Display for Quant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes {
            Some(bytes) => write!(
                f,
                "{} ({:.2} GiB)",
                self.name,
                bytes as f64 / f64::from(1u32 << 30)
            ),
            None => f.write_str(&self.name),
        }
    }
}

/// A shard whose header is being read: the bytes so far, and the read it needs next.
#[derive(Debug)]
struct Shard {
    name: String,
    bytes: Vec<u8>,
    want: Option<(u64, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Safetensors,
    Gguf,
}

#[derive(Debug)]
enum Stage {
    List,
    /// config.json, and the index when the listing has one.
    Config {
        index: bool,
    },
    Headers {
        kind: Kind,
        shards: Vec<Shard>,
        config: Option<Box<HfConfig>>,
    },
    Done(Option<Result<RepoModel, String>>),
}

/// The reader: one per model read. See the module documentation for the order of reads.
#[derive(Debug)]
pub struct RepoRead {
    origin: String,
    quant: Option<String>,
    listing: Vec<RepoFile>,
    stage: Stage,
}

impl RepoRead {
    /// Reads a repository from its listing: a checkpoint, or with `quant` that quant's GGUF
    /// file. `origin` names the repository in messages.
    pub fn new(origin: &str, quant: Option<&str>) -> RepoRead {
        RepoRead {
            origin: origin.to_string(),
            quant: quant.map(str::to_string),
            listing: Vec::new(),
            stage: Stage::List,
        }
    }

    /// Reads a GGUF file's header from its shards (a quant's `files`, or [`split_shards`]).
    pub fn gguf(origin: &str, shards: &[String]) -> RepoRead {
        let mut read = RepoRead::new(origin, None);
        read.stage = match shards {
            [] => Stage::Done(Some(Err(format!("{origin}: no GGUF file to read")))),
            _ => headers(Kind::Gguf, shards, None),
        };
        read
    }

    /// The reads this stage needs. After `Done`, the reader is spent.
    pub fn next_read(&mut self) -> Next {
        match &mut self.stage {
            Stage::List => Next::List,
            Stage::Config { index } => {
                let whole = |file: &str| Fetch {
                    file: file.to_string(),
                    range: None,
                };
                let mut fetches = vec![whole("config.json")];
                if *index {
                    fetches.push(whole(INDEX));
                }
                Next::Fetch(fetches)
            }
            Stage::Headers { shards, .. } => Next::Fetch(
                shards
                    .iter()
                    .filter_map(|s| {
                        s.want.map(|range| Fetch {
                            file: s.name.clone(),
                            range: Some(range),
                        })
                    })
                    .collect(),
            ),
            Stage::Done(result) => Next::Done(
                result
                    .take()
                    .unwrap_or_else(|| Err("this read has ended".to_string())),
            ),
        }
    }

    /// The repository's files, answering [`Next::List`].
    pub fn listed(&mut self, files: Vec<RepoFile>) {
        if !matches!(self.stage, Stage::List) {
            return self.fail("a listing came when none was asked for".to_string());
        }
        self.listing = files;
        let names: Vec<String> = self.listing.iter().map(|f| f.name.clone()).collect();
        let has = |name: &str| names.iter().any(|n| n == name);
        self.stage = match &self.quant {
            Some(quant) => match pick_quant(&names, quant) {
                Ok(shards) => headers(Kind::Gguf, &shards, None),
                Err(e) => Stage::Done(Some(Err(format!("{}: {e}", self.origin)))),
            },
            None if has("config.json") => Stage::Config { index: has(INDEX) },
            None => match quants(&self.listing) {
                quants if !quants.is_empty() => Stage::Done(Some(Ok(RepoModel::Quants(quants)))),
                _ => Stage::Done(Some(Err(format!("{} has no config.json", self.origin)))),
            },
        };
    }

    /// The answers to [`Next::Fetch`], in its order: the bytes, or `None` for no such file.
    pub fn fetched(&mut self, answers: Vec<Option<Vec<u8>>>) {
        let stage = std::mem::replace(&mut self.stage, Stage::Done(None));
        self.stage = match stage {
            Stage::Config { index } if answers.len() == 1 + usize::from(index) => {
                self.config_read(answers)
            }
            Stage::Headers {
                kind,
                mut shards,
                config,
            } if answers.len() == shards.iter().filter(|s| s.want.is_some()).count() => {
                let asked = shards.iter_mut().filter(|s| s.want.is_some());
                for (shard, answer) in asked.zip(answers) {
                    if let Err(e) = self.advance(kind, shard, answer) {
                        return self.fail(e);
                    }
                }
                match shards.iter().all(|s| s.want.is_none()) {
                    true => Stage::Done(Some(self.finish(kind, &shards, config))),
                    false => Stage::Headers {
                        kind,
                        shards,
                        config,
                    },
                }
            }
            _ => Stage::Done(Some(Err(format!(
                "{}: answers came that were not asked for",
                self.origin
            )))),
        };
    }

    fn fail(&mut self, message: String) {
        self.stage = Stage::Done(Some(Err(message)));
    }

    /// config.json read (and the index): the shards' headers come next.
    fn config_read(&self, mut answers: Vec<Option<Vec<u8>>>) -> Stage {
        let origin = &self.origin;
        let index = answers.get_mut(1).map(Option::take);
        let Some(config) = answers[0].take() else {
            return Stage::Done(Some(Err(format!("{origin} has no config.json"))));
        };
        let config = match parse_hf_config(&String::from_utf8_lossy(&config)) {
            Ok(config) => config,
            Err(e) => return Stage::Done(Some(Err(format!("{origin}: {e}")))),
        };
        let shards = match index {
            Some(Some(index)) => index_shards(origin, &index),
            Some(None) => Err(format!("{origin} has no {INDEX}")),
            None => listed_shards(origin, &self.listing),
        };
        match shards {
            Ok(shards) => headers(Kind::Safetensors, &shards, Some(Box::new(config))),
            Err(e) => Stage::Done(Some(Err(e))),
        }
    }

    /// Adds a read's bytes to a shard and works out what it needs next.
    fn advance(
        &self,
        kind: Kind,
        shard: &mut Shard,
        answer: Option<Vec<u8>>,
    ) -> Result<(), String> {
        let shown = format!("{}/{}", self.origin, shard.name);
        let Some(more) = answer else {
            return Err(format!("{} has no {}", self.origin, shard.name));
        };
        let asked = shard.want.take().map_or(0, |(_, len)| len);
        let ended = (more.len() as u64) < asked;
        shard.bytes.extend(more);
        let have = shard.bytes.len() as u64;
        let needed = match kind {
            Kind::Safetensors => match vramfit_safetensors::parse_header(&shard.bytes) {
                Ok(_) => return Ok(()),
                Err(vramfit_safetensors::ParseError::Truncated { needed }) => needed,
                Err(e) => return Err(format!("{shown}: {e}")),
            },
            Kind::Gguf => match vramfit_gguf::parse_header(&shard.bytes) {
                Ok(_) => return Ok(()),
                Err(vramfit_gguf::ParseError::Truncated { needed_at_least }) => needed_at_least,
                Err(e) => return Err(format!("{shown}: {e}")),
            },
        };
        if ended || needed <= have {
            return Err(format!("{shown} ends after {have} bytes but its header needs {needed}: the file is incomplete; download it again"));
        }
        // A GGUF header's size is known only once it is read, so its reads double.
        let want = match kind {
            Kind::Safetensors => needed,
            Kind::Gguf => needed.max(have.saturating_mul(2)),
        };
        shard.want = Some((have, want - have));
        Ok(())
    }

    fn finish(
        &self,
        kind: Kind,
        shards: &[Shard],
        config: Option<Box<HfConfig>>,
    ) -> Result<RepoModel, String> {
        let origin = &self.origin;
        let header_bytes = shards.iter().map(|s| s.bytes.len() as u64).sum();
        match (kind, config) {
            (Kind::Gguf, _) => {
                let others: Vec<&[u8]> = shards[1..].iter().map(|s| s.bytes.as_slice()).collect();
                read_gguf_split(&shards[0].bytes, &others)
                    .map(|model| RepoModel::Gguf(Box::new(model)))
                    .map_err(|e| format!("{origin}/{}: {e}", shards[0].name))
            }
            (Kind::Safetensors, Some(config)) => {
                let mut tensors = Vec::new();
                for shard in shards {
                    let header = vramfit_safetensors::parse_header(&shard.bytes)
                        .map_err(|e| format!("{origin}/{}: {e}", shard.name))?;
                    tensors.extend(header.tensors);
                }
                let format = config.weights.unwrap_or_else(|| dominant_format(&tensors));
                let checkpoint = read_checkpoint(&tensors, config.arch.layers, format)
                    .map_err(|e| format!("{origin}: {e}"))?;
                Ok(RepoModel::Checkpoint(Box::new(ReadCheckpoint {
                    origin: origin.clone(),
                    config: *config,
                    checkpoint,
                    header_bytes,
                })))
            }
            (Kind::Safetensors, None) => Err(format!("{origin}: no config.json was read")),
        }
    }
}

fn headers(kind: Kind, names: &[String], config: Option<Box<HfConfig>>) -> Stage {
    let first = match kind {
        Kind::Safetensors => HEADER_LENGTH_BYTES,
        Kind::Gguf => GGUF_FIRST_READ_BYTES as u64,
    };
    let shards = names
        .iter()
        .map(|name| Shard {
            name: name.clone(),
            bytes: Vec::new(),
            want: Some((0, first)),
        })
        .collect();
    Stage::Headers {
        kind,
        shards,
        config,
    }
}

/// The shards an index's `weight_map` names, each once.
fn index_shards(origin: &str, index: &[u8]) -> Result<Vec<String>, String> {
    let index: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(index))
        .map_err(|e| format!("{origin}: {INDEX} is not JSON: {e}"))?;
    let map = index
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| format!("{origin}: {INDEX} has no weight_map"))?;
    let mut names: Vec<String> = map
        .values()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    match names.is_empty() {
        true => Err(format!("{origin}: {INDEX}'s weight_map names no file")),
        false => Ok(names),
    }
}

/// Without an index: `model.safetensors`, or every top-level `.safetensors` file.
fn listed_shards(origin: &str, listing: &[RepoFile]) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = listing
        .iter()
        .map(|f| f.name.clone())
        .filter(|n| n.ends_with(".safetensors") && !n.contains('/'))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!(
            "{origin} has no safetensors weights (no model.safetensors or index); a GGUF repo is read by its quant (REPO:Q4_K_M)"
        ));
    }
    Ok(names)
}

/// The format most of the bytes are in, for a config that names none.
fn dominant_format(tensors: &[TensorInfo]) -> Dtype {
    use vramfit_safetensors::Dtype as St;
    let mut by_format: Vec<(Dtype, u64)> = Vec::new();
    for t in tensors {
        let format = match t.dtype {
            St::F32 => Dtype::Fp32,
            St::F16 => Dtype::Fp16,
            St::F8_E4M3 | St::F8_E5M2 => Dtype::Fp8,
            _ => Dtype::Bf16,
        };
        match by_format.iter_mut().find(|(f, _)| *f == format) {
            Some((_, bytes)) => *bytes += t.bytes(),
            None => by_format.push((format, t.bytes())),
        }
    }
    by_format
        .into_iter()
        .max_by_key(|(_, bytes)| *bytes)
        .map_or(Dtype::Bf16, |(f, _)| f)
}

/// The shards of a split file, named as `gguf-split` names them, from its first (folder kept);
/// else the file alone.
pub fn split_shards(path: &str) -> Vec<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((dir, name)) => (format!("{dir}/"), name),
        None => (String::new(), path),
    };
    let split = name
        .strip_suffix(".gguf")
        .and_then(|stem| stem.rsplit_once("-00001-of-"))
        .and_then(|(base, count)| {
            (count.len() == 5).then(|| count.parse::<u32>().ok().map(|n| (base, n)))?
        });
    match split {
        Some((base, count)) => (1..=count)
            .map(|i| format!("{dir}{base}-{i:05}-of-{count:05}.gguf"))
            .collect(),
        None => vec![path.to_string()],
    }
}

/// A model file of a GGUF repo: a `.gguf` that is not the multimodal projector (`mmproj…`).
fn is_model_gguf(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    name.ends_with(".gguf") && !name.starts_with("mmproj")
}

/// The shards of a repo's file for `quant` (`Q4_K_M`, any letter case), among its files.
pub fn pick_quant(files: &[String], quant: &str) -> Result<Vec<String>, String> {
    let wanted = quant.to_ascii_lowercase();
    let mut matching: Vec<&String> = files
        .iter()
        .filter(|f| is_model_gguf(f) && f.to_ascii_lowercase().contains(&wanted))
        .collect();
    matching.sort();
    let first = matching
        .iter()
        .find(|f| !f.contains("-of-") || f.contains("-00001-of-"))
        .ok_or_else(|| {
            let quants: Vec<&str> = files
                .iter()
                .filter(|f| f.ends_with(".gguf"))
                .map(|f| f.as_str())
                .collect();
            format!(
                "no .gguf file for {quant}; the repo has: {}",
                quants.join(", ")
            )
        })?;
    Ok(split_shards(first))
}

/// A GGUF repo's quants, named as llama.cpp's `-hf REPO:QUANT` takes them (the file name's last
/// `-` or `.` part: `…-Q4_K_M.gguf`), each with the file [`pick_quant`] reads for it.
pub fn quants(listing: &[RepoFile]) -> Vec<Quant> {
    let names: Vec<String> = listing.iter().map(|f| f.name.clone()).collect();
    let mut labels: Vec<String> = names
        .iter()
        .filter(|n| is_model_gguf(n))
        .filter_map(|n| {
            let stem = n.rsplit('/').next()?.strip_suffix(".gguf")?;
            let stem = match stem.rsplit_once("-of-") {
                Some((first, _)) => first.strip_suffix("-00001")?,
                None => stem,
            };
            Some(stem.rsplit(['-', '.']).next()?.to_string())
        })
        .collect();
    labels.sort_by_key(|l| l.to_ascii_lowercase());
    labels.dedup_by_key(|l| l.to_ascii_lowercase());
    let size = |name: &String| listing.iter().find(|f| &f.name == name)?.size;
    labels
        .into_iter()
        .filter_map(|name| {
            let files = pick_quant(&names, &name).ok()?;
            let bytes = files.iter().map(size).sum();
            Some(Quant { name, files, bytes })
        })
        .collect()
}

/// What the Hub's model API (`/api/models/{repo}/revision/{rev}`) says about a repository:
/// its files (`siblings`, sizes with `blobs=true`), whether it is gated, and its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    pub files: Vec<RepoFile>,
    /// `gated` is `false`, `"auto"` or `"manual"`: its files need an approved account's token.
    pub gated: bool,
    pub sha: Option<String>,
}

impl ModelInfo {
    pub fn parse(json: &[u8]) -> Result<ModelInfo, String> {
        // From text, as config.json is read: one serde_json reader in the page, not two.
        let info: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(json))
            .map_err(|e| format!("the model API's answer is not JSON: {e}"))?;
        let mut files: Vec<RepoFile> = info["siblings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| {
                Some(RepoFile {
                    name: s["rfilename"].as_str()?.to_string(),
                    size: s["size"].as_u64().or_else(|| s["lfs"]["size"].as_u64()),
                })
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ModelInfo {
            files,
            gated: !matches!(
                info["gated"],
                serde_json::Value::Bool(false) | serde_json::Value::Null
            ),
            sha: info["sha"].as_str().map(str::to_string),
        })
    }
}

/// A Hub repository and revision, from `org/name[@revision][:QUANT]` or a huggingface.co URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubRepo {
    pub id: String,
    pub revision: String,
    /// A GGUF repo's quant (`REPO:Q4_K_M`, as llama.cpp's `-hf` names it).
    pub quant: Option<String>,
}

impl HubRepo {
    pub fn parse(text: &str) -> Result<HubRepo, String> {
        let text = text.trim();
        let bad = || format!("`{text}` is not a repo id: expected org/name[@revision]");
        let path = text
            .strip_prefix("https://huggingface.co/")
            .or_else(|| text.strip_prefix("http://huggingface.co/"))
            .unwrap_or(text);
        let (path, quant) = match path.rsplit_once(':') {
            Some((path, quant)) if !quant.is_empty() && !quant.contains('/') => {
                (path, Some(quant.to_string()))
            }
            _ => (path, None),
        };
        let (path, at) = match path.split_once('@') {
            Some((path, revision)) => (path, Some(revision.to_string())),
            None => (path, None),
        };
        let mut parts = path.trim_end_matches('/').split('/');
        let (Some(org), Some(name)) = (parts.next(), parts.next()) else {
            return Err(bad());
        };
        // A URL's `/tree/<revision>` names the revision as `@` does.
        let tree = match (parts.next(), parts.next()) {
            (Some("tree" | "blob" | "resolve"), Some(revision)) => Some(revision.to_string()),
            _ => None,
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        let revision = at.or(tree).unwrap_or_else(|| "main".to_string());
        // Both go into URLs as they are.
        let safe = |s: &str| !s.is_empty() && !s.contains(['?', '#', '&', ' ', '"', '\\']);
        if !valid(org) || !valid(name) || !safe(&revision) || !quant.as_deref().is_none_or(safe) {
            return Err(bad());
        }
        Ok(HubRepo {
            id: format!("{org}/{name}"),
            revision,
            quant,
        })
    }
}

impl fmt::Display for HubRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.id, self.revision)?;
        match &self.quant {
            Some(quant) => write!(f, ":{quant}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vramfit_gguf::{MetaValue, TensorInfo as GgufTensor};
    use vramfit_safetensors::{write_header, Dtype as St, Header};

    const CONFIG: &str = include_str!("../../tests/fixtures/hf-configs/smollm2-135m.json");
    const GGUF: &[u8] =
        include_bytes!("../../../gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");

    /// A repository in memory: files by name, and every read made, in order.
    struct Repo {
        files: Vec<(String, Vec<u8>)>,
        reads: Vec<Fetch>,
        lists: usize,
    }

    impl Repo {
        fn new(files: Vec<(&str, Vec<u8>)>) -> Repo {
            let files = files.into_iter().map(|(n, b)| (n.to_string(), b)).collect();
            Repo {
                files,
                reads: Vec::new(),
                lists: 0,
            }
        }

        /// Drives `read` to its end, as a front end does.
        fn drive(&mut self, mut read: RepoRead) -> Result<RepoModel, String> {
            loop {
                match read.next_read() {
                    Next::List => {
                        self.lists += 1;
                        let listing = self.files.iter().map(|(name, bytes)| RepoFile {
                            name: name.clone(),
                            size: Some(bytes.len() as u64),
                        });
                        read.listed(listing.collect());
                    }
                    Next::Fetch(fetches) => {
                        let answers = fetches.iter().map(|f| self.read(f)).collect();
                        self.reads.extend(fetches);
                        read.fetched(answers);
                    }
                    Next::Done(result) => return result,
                }
            }
        }

        fn read(&self, fetch: &Fetch) -> Option<Vec<u8>> {
            let (_, bytes) = self.files.iter().find(|(n, _)| *n == fetch.file)?;
            Some(match fetch.range {
                None => bytes.clone(),
                Some((start, len)) => {
                    let start = (start as usize).min(bytes.len());
                    let end = (start + len as usize).min(bytes.len());
                    bytes[start..end].to_vec()
                }
            })
        }
    }

    /// SmolLM2-135M's tensors (30 layers, tied), a few per layer, in `shards` files.
    fn shards(count: usize) -> Vec<Vec<u8>> {
        let mut tensors = vec![("model.embed_tokens.weight".to_string(), vec![49152, 576])];
        for i in 0..30 {
            tensors.push((
                format!("model.layers.{i}.mlp.up_proj.weight"),
                vec![1536, 576],
            ));
            tensors.push((
                format!("model.layers.{i}.input_layernorm.weight"),
                vec![576],
            ));
        }
        tensors.push(("model.norm.weight".to_string(), vec![576]));
        let per = tensors.len().div_ceil(count);
        tensors
            .chunks(per)
            .map(|part| {
                let part = part.iter().map(|(n, s)| (n.clone(), St::BF16, s.clone()));
                write_header(&Header::lay_out(part, Vec::new()).unwrap())
            })
            .collect()
    }

    fn index(names: &[&str]) -> Vec<u8> {
        let map: serde_json::Map<String, serde_json::Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("t{i}"), serde_json::Value::from(*n)))
            .collect();
        serde_json::json!({ "metadata": {}, "weight_map": map })
            .to_string()
            .into_bytes()
    }

    fn checkpoint(result: Result<RepoModel, String>) -> ReadCheckpoint {
        match result {
            Ok(RepoModel::Checkpoint(read)) => *read,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_index_names_the_shards_each_read_as_length_then_header_all_at_once() {
        let [a, b] = <[Vec<u8>; 2]>::try_from(shards(2)).unwrap();
        let names = [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
        ];
        let mut repo = Repo::new(vec![
            ("config.json", CONFIG.as_bytes().to_vec()),
            (INDEX, index(&names)),
            (names[0], a.clone()),
            (names[1], b.clone()),
            ("README.md", b"hi".to_vec()),
        ]);
        let read = checkpoint(repo.drive(RepoRead::new("org/model", None)));
        let expected: u64 = 49152 * 576 * 2 + 30 * (1536 * 576 + 576) * 2 + 576 * 2;
        assert_eq!(read.checkpoint.tensor_bytes, expected);
        assert_eq!(read.checkpoint.params, Some(expected / 2));
        assert_eq!(read.header_bytes, (a.len() + b.len()) as u64);
        let range = |file: &str, start, len| Fetch {
            file: file.to_string(),
            range: Some((start, len)),
        };
        let header_len = |bytes: &[u8]| bytes.len() as u64 - 8;
        assert_eq!(repo.lists, 1);
        assert_eq!(
            repo.reads[2..],
            [
                range(names[0], 0, 8),
                range(names[1], 0, 8),
                range(names[0], 8, header_len(&a)),
                range(names[1], 8, header_len(&b)),
            ]
        );
        let pairs = RepoModel::Checkpoint(Box::new(read.clone())).pairs();
        assert!(pairs.contains(&("model", String::new())));
        assert!(pairs.iter().any(|(k, _)| *k == "checkpoint-weights"));
        assert!(read.messages()[0].starts_with("org/model: "));
    }

    #[test]
    fn without_an_index_the_listed_files_are_the_shards() {
        let [a, b] = <[Vec<u8>; 2]>::try_from(shards(2)).unwrap();
        let mut repo = Repo::new(vec![
            ("config.json", CONFIG.as_bytes().to_vec()),
            ("b.safetensors", b),
            ("a.safetensors", a),
            ("sub/extra.safetensors", Vec::new()),
        ]);
        let read = checkpoint(repo.drive(RepoRead::new("dir", None)));
        assert_eq!(read.checkpoint.tensors, 62);
        assert!(repo.reads.iter().all(|f| f.file != INDEX));
        assert!(repo.reads.iter().all(|f| !f.file.starts_with("sub/")));
    }

    #[test]
    fn failures_name_what_is_missing_or_broken() {
        let drive =
            |files: Vec<(&str, Vec<u8>)>| Repo::new(files).drive(RepoRead::new("o/m", None));
        let config = || ("config.json", CONFIG.as_bytes().to_vec());
        assert_eq!(drive(vec![]).unwrap_err(), "o/m has no config.json");
        assert!(drive(vec![config()])
            .unwrap_err()
            .contains("no safetensors weights"));
        let names = ["s1.safetensors", "s2.safetensors"];
        let [a, _] = <[Vec<u8>; 2]>::try_from(shards(2)).unwrap();
        let missing = drive(vec![
            config(),
            (INDEX, index(&names)),
            (names[0], a.clone()),
        ]);
        assert_eq!(missing.unwrap_err(), "o/m has no s2.safetensors");
        let cut = a[..a.len() - 10].to_vec();
        let short = drive(vec![config(), ("model.safetensors", cut)]).unwrap_err();
        assert!(
            short.contains("o/m/model.safetensors ends after"),
            "{short}"
        );
        let one = drive(vec![config(), ("model.safetensors", a)]).unwrap_err();
        assert!(one.contains("layers"), "{one}");
        let bad = drive(vec![("config.json", b"{".to_vec())]).unwrap_err();
        assert!(
            bad.starts_with("o/m: config.json is not valid JSON"),
            "{bad}"
        );
    }

    /// The fixture's header with `extra` bytes of metadata, split in `count` shards when > 1.
    fn gguf_files(extra: usize, count: u16) -> Vec<Vec<u8>> {
        let mut header = vramfit_gguf::parse_header(GGUF).unwrap();
        if extra > 0 {
            let padding = MetaValue::String("x".repeat(extra));
            header.metadata.push(("test.padding".into(), padding));
        }
        if count == 1 {
            return vec![vramfit_gguf::write_header(&header)];
        }
        let tensors: Vec<GgufTensor> = std::mem::take(&mut header.tensors);
        let per = tensors.len().div_ceil(usize::from(count));
        tensors
            .chunks(per)
            .enumerate()
            .map(|(no, part)| {
                let mut shard = header.clone();
                if no > 0 {
                    shard.metadata.clear();
                }
                shard
                    .metadata
                    .push(("split.no".into(), MetaValue::U16(no as u16)));
                shard
                    .metadata
                    .push(("split.count".into(), MetaValue::U16(count)));
                shard.tensors = part.to_vec();
                vramfit_gguf::write_header(&shard)
            })
            .collect()
    }

    fn listing(names: &[&str]) -> Vec<(&'static str, Vec<u8>)> {
        names
            .iter()
            .map(|n| (&*Box::leak(n.to_string().into_boxed_str()), vec![0; 10]))
            .collect()
    }

    #[test]
    fn a_quant_reads_its_gguf_header_growing_past_the_first_read() {
        let big = gguf_files(9 << 20, 1).remove(0);
        let mut files = listing(&["mmproj-Q4_K_M.gguf", "README.md"]);
        files.push(("Model-Q4_K_M.gguf", big.clone()));
        let mut repo = Repo::new(files);
        let model = match repo.drive(RepoRead::new("o/m", Some("q4_k_m"))) {
            Ok(RepoModel::Gguf(model)) => model,
            other => panic!("{other:?}"),
        };
        assert_eq!(model.tensor_bytes, 4_912_898_304);
        let first = GGUF_FIRST_READ_BYTES as u64;
        assert_eq!(
            repo.reads,
            [
                Fetch {
                    file: "Model-Q4_K_M.gguf".into(),
                    range: Some((0, first))
                },
                Fetch {
                    file: "Model-Q4_K_M.gguf".into(),
                    range: Some((first, first))
                },
            ]
        );
        let cut = big[..(9 << 20)].to_vec();
        let mut short = Repo::new(vec![("Model-Q4_K_M.gguf", cut)]);
        let error = short
            .drive(RepoRead::new("o/m", Some("Q4_K_M")))
            .unwrap_err();
        assert!(error.contains("the file is incomplete"), "{error}");
    }

    #[test]
    fn a_split_gguf_file_is_read_from_every_shard_at_once() {
        let parts = gguf_files(0, 2);
        let names = [
            "Q4_K_M/M-Q4_K_M-00001-of-00002.gguf",
            "Q4_K_M/M-Q4_K_M-00002-of-00002.gguf",
        ];
        let files = vec![(names[1], parts[1].clone()), (names[0], parts[0].clone())];
        let mut repo = Repo::new(files);
        let shards = split_shards(names[0]);
        let model = match repo.drive(RepoRead::gguf("dir", &shards)) {
            Ok(RepoModel::Gguf(model)) => model,
            other => panic!("{other:?}"),
        };
        assert_eq!(model.tensor_bytes, 4_912_898_304);
        assert_eq!(repo.reads.len(), 2);
        assert_eq!(repo.lists, 0);
    }

    #[test]
    fn a_gguf_repo_without_a_quant_lists_its_quants_with_sizes() {
        let mut files = listing(&[
            "mmproj-F16.gguf",
            "M-Q8_0.gguf",
            "Q4_K_M/M-Q4_K_M-00001-of-00002.gguf",
            "Q4_K_M/M-Q4_K_M-00002-of-00002.gguf",
            "M.UD-IQ2_XS.gguf",
        ]);
        files.push(("README.md", Vec::new()));
        let quants = match Repo::new(files).drive(RepoRead::new("o/m", None)) {
            Ok(RepoModel::Quants(quants)) => quants,
            other => panic!("{other:?}"),
        };
        let shown: Vec<String> = quants.iter().map(|q| q.to_string()).collect();
        assert_eq!(
            shown,
            ["IQ2_XS (0.00 GiB)", "Q4_K_M (0.00 GiB)", "Q8_0 (0.00 GiB)"]
        );
        assert_eq!(quants[1].bytes, Some(20));
        assert_eq!(quants[1].files.len(), 2);
        let none = Repo::new(listing(&["M-Q8_0.gguf"])).drive(RepoRead::new("o/m", Some("Q2_K")));
        assert!(none.unwrap_err().contains("no .gguf file for Q2_K"));
    }

    #[test]
    fn a_quant_picks_its_file_not_the_projector() {
        let files: Vec<String> = [
            "README.md",
            "mmproj-Q4_K_M.gguf",
            "Model-Q8_0.gguf",
            "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf",
            "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            pick_quant(&files, "q4_k_m").unwrap(),
            [
                "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf",
                "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf"
            ]
        );
        assert_eq!(pick_quant(&files, "Q8_0").unwrap(), ["Model-Q8_0.gguf"]);
        assert_eq!(split_shards("m-Q4_K_M.gguf"), ["m-Q4_K_M.gguf"]);
    }

    #[test]
    fn answers_out_of_turn_end_the_read() {
        let mut read = RepoRead::new("o/m", None);
        read.fetched(vec![None]);
        assert!(matches!(read.next_read(), Next::Done(Err(_))));
        assert!(matches!(read.next_read(), Next::Done(Err(_))), "spent");
    }

    #[test]
    fn the_model_api_gives_files_sizes_and_the_gate() {
        let json = br#"{"id":"o/m","sha":"abc","gated":"manual","siblings":[
            {"rfilename":"b.gguf","size":5,"lfs":{"size":5}},{"rfilename":"a.json"}]}"#;
        let info = ModelInfo::parse(json).unwrap();
        let names: Vec<_> = info
            .files
            .iter()
            .map(|f| (f.name.as_str(), f.size))
            .collect();
        assert_eq!(names, [("a.json", None), ("b.gguf", Some(5))]);
        assert!(info.gated);
        assert_eq!(info.sha.as_deref(), Some("abc"));
        assert!(!ModelInfo::parse(br#"{"gated":false}"#).unwrap().gated);
        assert!(ModelInfo::parse(b"<html>").is_err());
    }

    #[test]
    fn repo_ids_urls_and_revisions() {
        let parse = |t: &str| HubRepo::parse(t).map(|r| (r.id, r.revision));
        let main = |id: &str| Ok((id.to_string(), "main".to_string()));
        assert_eq!(parse("Qwen/Qwen3-30B-A3B"), main("Qwen/Qwen3-30B-A3B"));
        assert_eq!(
            parse("https://huggingface.co/Qwen/Qwen3-8B/"),
            main("Qwen/Qwen3-8B")
        );
        assert_eq!(
            parse("Qwen/Qwen3-8B@v1.0"),
            Ok(("Qwen/Qwen3-8B".to_string(), "v1.0".to_string()))
        );
        assert_eq!(
            parse("https://huggingface.co/Qwen/Qwen3-8B/tree/abc"),
            Ok(("Qwen/Qwen3-8B".to_string(), "abc".to_string()))
        );
        assert!(parse("llama").is_err());
        assert!(parse("a/b c").is_err());
        assert!(parse("a/b@x?y").is_err());
        let gguf = HubRepo::parse("unsloth/gpt-oss-20b-GGUF@v2:Q4_K_M").unwrap();
        assert_eq!(
            (gguf.id.as_str(), gguf.revision.as_str()),
            ("unsloth/gpt-oss-20b-GGUF", "v2")
        );
        assert_eq!(gguf.quant.as_deref(), Some("Q4_K_M"));
        assert_eq!(gguf.to_string(), "unsloth/gpt-oss-20b-GGUF@v2:Q4_K_M");
    }
}
