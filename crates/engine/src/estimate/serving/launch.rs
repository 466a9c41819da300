//! The command that starts a serving runtime as planned: `vllm serve`, `python -m
//! sglang.launch_server`, `llama-server`. Each runtime declares one [`Launch`] table, which maps
//! its scenario fields to its flags; the same table writes the command ([`write`]) and reads one
//! back into scenario pairs ([`parse`]), so the two cannot drift apart.
//!
//! A flag is written only where the runtime left to itself would do something else: a field at
//! its scenario default is the runtime's own default (the table marks the exceptions `Always`:
//! the context, whose runtime default is the model's whole window, not the scenario's `seq`, and
//! llama-server's `-np`, `-ngl` and `-fa`, whose defaults are decided at start). Words are quoted
//! for a POSIX shell.

use super::Setting;
use crate::runtime::Runtime;
use crate::scenario::{Resolved, Scenario, FIELDS};
use crate::sharding::Sharding;

/// How a field's value becomes the flag's argument.
#[derive(Clone, Copy, Debug)]
pub enum Write {
    /// The scenario's own text (`16384`, `0.95`).
    Text,
    /// A size as a whole number of bytes (`21474836480` for `20GiB`).
    Bytes,
    /// A switch with no argument, written when the field is true (`--enforce-eager`).
    Switch,
    /// `on` or `off` for true or false (llama.cpp's `-fa`).
    OnOff,
    /// The scenario's word and the runtime's, pair by pair; a value not listed has no flag.
    Words(&'static [(&'static str, &'static str)]),
}

/// When a flag is written.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// When the field differs from the scenario's default, which is the runtime's own.
    Changed,
    /// Also when the scenario says so although the field is at its default (vLLM's utilization,
    /// whose default older releases set lower).
    ChangedOr(fn(&Scenario) -> bool),
    /// Always, with the value the runtime applied (its setting of the same key): the runtime's
    /// own default is not the scenario's.
    Always,
    /// When the value the runtime applied differs from the scenario's default: a value the
    /// runtime chose at start (llama.cpp's `--fit` placing experts), which the command pins.
    Applied,
}

/// One scenario field and the runtime's flag for it.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    pub key: &'static str,
    pub flag: &'static str,
    pub write: Write,
    pub when: When,
}

impl Flag {
    pub const fn new(key: &'static str, flag: &'static str, write: Write, when: When) -> Flag {
        Flag {
            key,
            flag,
            write,
            when,
        }
    }
}

/// How a runtime spreads the model over several GPUs on its command line.
#[derive(Clone, Copy, Debug)]
pub struct Parallel {
    /// Tensor-parallel ranks (`sharding=tensor` or `expert`).
    pub tensor: &'static str,
    /// Pipeline stages (`sharding=pipeline`).
    pub pipeline: &'static str,
    /// Expert parallelism beside the tensor-parallel ranks: a switch (vLLM) or a size (SGLang).
    pub expert: Write,
    pub expert_flag: &'static str,
}

/// A runtime's launch command: its program, how it names the model, and its flags.
#[derive(Debug)]
pub struct Launch {
    /// The program and its arguments before the model: `vllm serve`.
    pub program: &'static [&'static str],
    /// The flag before the model (`--model-path`, `-m`); `None` for a positional model.
    pub model_flag: Option<&'static str>,
    /// It loads GGUF files: a local file is `-m FILE`, a Hub repo `-hf REPO:QUANT`.
    pub gguf: bool,
    /// `None` where several GPUs are not a flag (llama.cpp splits layers over every visible GPU).
    pub parallel: Option<Parallel>,
    pub flags: &'static [Flag],
}

/// Where the weights the command loads come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// A Hugging Face repo id or a local directory of safetensors (vLLM, SGLang).
    Checkpoint(String),
    /// A local `.gguf` file (llama.cpp `-m`).
    GgufFile(String),
    /// A GGUF repo on the Hub with its quant, `REPO:QUANT` (llama.cpp `-hf`).
    GgufRepo(String),
    /// Not known: the command names a placeholder.
    Unknown,
}

impl ModelSource {
    /// What the scenario itself names: a preset's Hugging Face repo, when the weights are the
    /// format that repo ships (a preset run in another format needs another checkpoint, which
    /// the catalogue does not name). A GGUF file is never known from a preset.
    pub fn of_scenario(s: &Scenario, r: &Resolved) -> ModelSource {
        let preset = s.model.as_deref().and_then(crate::model::preset);
        match preset {
            Some(p) if r.weights == p.checkpoint.0 && !p.config.is_empty() => {
                ModelSource::Checkpoint(p.config.to_string())
            }
            _ => ModelSource::Unknown,
        }
    }
}

/// The model's words on the command line: what this runtime can load from the source, else a
/// placeholder (`MODEL`, `MODEL.gguf`) the reader replaces.
fn model_words(launch: &Launch, model: &ModelSource) -> Vec<String> {
    let (flag, value) = match (launch.gguf, model) {
        (false, ModelSource::Checkpoint(repo)) => (launch.model_flag, repo.as_str()),
        (false, _) => (launch.model_flag, "MODEL"),
        (true, ModelSource::GgufFile(path)) => (Some("-m"), path.as_str()),
        (true, ModelSource::GgufRepo(repo)) => (Some("-hf"), repo.as_str()),
        (true, _) => (Some("-m"), "MODEL.gguf"),
    };
    flag.map(str::to_string)
        .into_iter()
        .chain([value.to_string()])
        .collect()
}

/// The flag's words for one field, or an error naming a value the runtime has no flag for.
fn flag_words(f: &Flag, s: &Scenario, settings: &[Setting]) -> Result<Vec<String>, String> {
    let field = FIELDS
        .iter()
        .find(|field| field.key == f.key)
        .ok_or_else(|| format!("no scenario field {}", f.key))?;
    let applied = || {
        settings
            .iter()
            .find(|setting| setting.key == f.key)
            .map(|setting| setting.value.clone())
            .ok_or_else(|| format!("the estimate applied no {}", f.key))
    };
    let value = match f.when {
        When::Always => applied()?,
        When::Applied => {
            let value = applied()?;
            if value == field.get(&Scenario::default()) {
                return Ok(Vec::new());
            }
            value
        }
        When::Changed | When::ChangedOr(_) => {
            let value = field.get(s);
            let forced = matches!(f.when, When::ChangedOr(force) if force(s));
            if value == field.get(&Scenario::default()) && !forced {
                return Ok(Vec::new());
            }
            value
        }
    };
    let flag = f.flag.to_string();
    Ok(match f.write {
        Write::Text => vec![flag, value],
        Write::Bytes => {
            let bytes = crate::units::parse_size(&value).map_err(|e| e.0)?;
            vec![flag, bytes.0.to_string()]
        }
        Write::Switch if value == "true" => vec![flag],
        Write::Switch => Vec::new(),
        Write::OnOff => vec![flag, if value == "true" { "on" } else { "off" }.into()],
        Write::Words(words) => {
            let word = words
                .iter()
                .find(|(ours, _)| *ours == value)
                .ok_or_else(|| format!("{} {value} has no {} value", f.key, f.flag))?;
            vec![flag, word.1.to_string()]
        }
    })
}

/// The parallelism flags for the scenario's GPUs.
fn parallel_words(launch: &Launch, s: &Scenario) -> Result<Vec<String>, String> {
    let gpus = s.gpus.max(1);
    if gpus == 1 {
        return Ok(Vec::new());
    }
    let Some(p) = launch.parallel else {
        return Ok(Vec::new());
    };
    let n = gpus.to_string();
    Ok(match s.sharding {
        Sharding::Tensor => vec![p.tensor.into(), n],
        Sharding::Expert => match p.expert {
            Write::Switch => vec![p.tensor.into(), n, p.expert_flag.into()],
            _ => vec![p.tensor.into(), n.clone(), p.expert_flag.into(), n],
        },
        Sharding::Pipeline => vec![p.pipeline.into(), n],
        other => return Err(format!("sharding {other} has no launch flag")),
    })
}

/// The command that starts the runtime as the scenario plans it, from the scenario and the
/// settings the runtime applied; an error names a setting the runtime has no flag for.
pub fn write(
    launch: &Launch,
    s: &Scenario,
    settings: &[Setting],
    model: &ModelSource,
) -> Result<String, String> {
    let mut words: Vec<String> = launch.program.iter().map(|w| w.to_string()).collect();
    words.extend(model_words(launch, model));
    words.extend(parallel_words(launch, s)?);
    for f in launch.flags {
        words.extend(flag_words(f, s, settings)?);
    }
    Ok(words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
}

/// A command read back: its runtime, the model it names, and the scenario pairs of its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub runtime: Runtime,
    pub model: String,
    /// `(key, value)` pairs for [`Scenario::set`], `runtime` first.
    pub pairs: Vec<(String, String)>,
}

/// Reads a launch command back into scenario pairs with the same tables that write it. A flag
/// no table knows is an error: a pair silently dropped would plan another deployment.
pub fn parse(command: &str) -> Result<Parsed, String> {
    let words = split(command)?;
    let (runtime, launch) = Runtime::ALL
        .iter()
        .filter_map(|&r| r.rules().facts().launch.map(|l| (r, l)))
        .find(|(_, l)| words.len() > l.program.len() && same_program(l.program, &words))
        .ok_or("not a vllm serve, python -m sglang.launch_server or llama-server command")?;
    let mut rest = words[launch.program.len()..].iter();
    let mut pairs = vec![("runtime".to_string(), runtime.to_string())];
    let mut model = None;
    let mut parallel = ParallelRead::default();
    if launch.model_flag.is_none() {
        model = rest.next().cloned();
    }
    while let Some(word) = rest.next() {
        let mut value = || {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("{word} needs a value"))
        };
        let model_flag = if launch.gguf {
            word == "-m" || word == "-hf"
        } else {
            launch.model_flag == Some(word.as_str())
        };
        if model_flag {
            model = Some(value()?);
        } else if let Some(p) = launch.parallel.filter(|_| parallel.reads(launch, word)) {
            parallel.read(&p, word, value)?;
        } else {
            let f = launch
                .flags
                .iter()
                .find(|f| f.flag == word)
                .ok_or_else(|| format!("{word} is not a flag vramfit plans"))?;
            pairs.push((f.key.to_string(), read_value(f, value)?));
        }
    }
    pairs.extend(parallel.pairs());
    let model = model.ok_or("the command names no model")?;
    Ok(Parsed {
        runtime,
        model,
        pairs,
    })
}

/// The program's words match, `python3` standing for `python`.
fn same_program(program: &[&str], words: &[String]) -> bool {
    program
        .iter()
        .zip(words)
        .all(|(p, w)| *p == w.as_str() || (*p == "python" && w.as_str() == "python3"))
}

/// A flag's argument as the scenario's value.
fn read_value(
    f: &Flag,
    mut value: impl FnMut() -> Result<String, String>,
) -> Result<String, String> {
    match f.write {
        Write::Text => value(),
        Write::Bytes => human_readable_bytes(&value()?).map(|bytes| format!("{bytes}B")),
        Write::Switch => Ok("true".to_string()),
        Write::OnOff => match value()?.as_str() {
            "on" => Ok("true".to_string()),
            "off" => Ok("false".to_string()),
            other => Err(format!("{} {other}: on or off", f.flag)),
        },
        Write::Words(words) => {
            let word = value()?;
            words
                .iter()
                .find(|(_, theirs)| *theirs == word)
                .map(|(ours, _)| ours.to_string())
                .ok_or_else(|| format!("{} {word} is not a value vramfit plans", f.flag))
        }
    }
}

/// A count as vLLM's `human_readable_int` reads it (vllm/utils/argparse_utils.py of v0.33.0): a
/// whole number, or a number with a suffix, `k`/`m`/`g`/`t` for powers of 1000 (decimals
/// allowed) and `K`/`M`/`G`/`T` for powers of 1024 (whole numbers only).
fn human_readable_bytes(word: &str) -> Result<u64, String> {
    let bad = || format!("{word} is not a whole number of bytes");
    let word = word.trim();
    let (number, suffix) = match word.char_indices().last() {
        Some((at, c)) if c.is_ascii_alphabetic() => (&word[..at], Some(c)),
        _ => (word, None),
    };
    let power = |c: char| "kmgt".find(c.to_ascii_lowercase()).map(|i| i as i32 + 1);
    match suffix {
        None => number.parse().map_err(|_| bad()),
        Some(c) if c.is_ascii_lowercase() => {
            let value: f64 = number.parse().map_err(|_| bad())?;
            let scale = 1000f64.powi(power(c).ok_or_else(bad)?);
            Ok((value * scale).floor() as u64)
        }
        Some(c) => {
            let value: u64 = number.parse().map_err(|_| bad())?;
            let shift = 10 * power(c).ok_or_else(bad)?;
            value.checked_mul(1u64 << shift).ok_or_else(bad)
        }
    }
}

/// The parallelism flags as they are read, turned into `gpus` and `sharding` at the end.
#[derive(Default)]
struct ParallelRead {
    tensor: Option<String>,
    pipeline: Option<String>,
    expert: bool,
}

impl ParallelRead {
    fn reads(&self, launch: &Launch, word: &str) -> bool {
        launch
            .parallel
            .is_some_and(|p| [p.tensor, p.pipeline, p.expert_flag].contains(&word))
    }

    fn read(
        &mut self,
        p: &Parallel,
        word: &str,
        mut value: impl FnMut() -> Result<String, String>,
    ) -> Result<(), String> {
        if word == p.tensor {
            self.tensor = Some(value()?);
        } else if word == p.pipeline {
            self.pipeline = Some(value()?);
        } else {
            if !matches!(p.expert, Write::Switch) {
                value()?;
            }
            self.expert = true;
        }
        Ok(())
    }

    fn pairs(self) -> Vec<(String, String)> {
        let (gpus, sharding) = match (self.tensor, self.pipeline) {
            (Some(n), _) if self.expert => (n, Sharding::Expert),
            (Some(n), _) => (n, Sharding::Tensor),
            (None, Some(n)) => (n, Sharding::Pipeline),
            (None, None) => return Vec::new(),
        };
        vec![
            ("gpus".to_string(), gpus),
            ("sharding".to_string(), sharding.to_string()),
        ]
    }
}

/// Characters a POSIX shell reads literally outside quotes.
fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c)
}

/// One word for a POSIX shell: as is when every character is plain, else in single quotes, where
/// nothing is special but the quote itself, written `'\''`.
pub fn quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(is_plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Splits a command into words as a POSIX shell does, for the quoting [`quote`] writes and what
/// a person pastes: single and double quotes, backslash escapes and line continuations. It does
/// no expansion: `$HOME` stays as written.
pub fn split(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".to_string()),
                    }
                }
            }
            '"' => double_quoted(&mut chars, word.get_or_insert_with(String::new))?,
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("the command ends in a backslash".to_string()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// The rest of a double-quoted part: a backslash escapes only `$`, `` ` ``, `"`, `\` and a
/// newline (which it removes).
fn double_quoted(chars: &mut std::str::Chars<'_>, w: &mut String) -> Result<(), String> {
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') => match chars.next() {
                Some('\n') => {}
                Some(c @ ('$' | '`' | '"' | '\\')) => w.push(c),
                Some(c) => {
                    w.push('\\');
                    w.push(c);
                }
                None => return Err("a double quote is not closed".to_string()),
            },
            Some(c) => w.push(c),
            None => return Err("a double quote is not closed".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM's own examples: `1k` is 1,000, `1K` 1,024, `25.6k` 25,600; and `500M` is 500 MiB.
    #[test]
    fn byte_counts_read_as_vllm_reads_them() {
        assert_eq!(human_readable_bytes("1k"), Ok(1000));
        assert_eq!(human_readable_bytes("1K"), Ok(1024));
        assert_eq!(human_readable_bytes("25.6k"), Ok(25_600));
        assert_eq!(human_readable_bytes("500M"), Ok(500 << 20));
        assert_eq!(human_readable_bytes("8589934592"), Ok(8 << 30));
        assert!(human_readable_bytes("1.5G").is_err());
        assert!(human_readable_bytes("20GiB").is_err());
    }
}
