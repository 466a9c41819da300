//! A sans-IO reader of llama-bench's results in each format it prints (`-o md`, the default, and
//! `-o csv`, `-o json`, `-o jsonl`; tools/llama-bench/llama-bench.cpp's printers), as pasted: text
//! in, one [`Row`] per test out; and of `vllm bench serve`'s (`vllm` module): its result block or
//! `--save-result` JSON, one [`ServeRun`] per run. It does no IO and never panics, because it also
//! runs in a browser tab.
//!
//! A markdown table prints `model | size | params | backend | ngl | … | test | t/s`, a test as
//! `pp512`, `tg128`, `pp512+tg128` (older builds `pp 512`), with ` @ d4096` for a test after that
//! many tokens of context, and `t/s` as `mean ± stddev`; the build follows as `build: 8cf6b42
//! (6140)`. CSV, JSON and JSONL carry every field by name (`n_prompt`, `n_gen`, `n_depth`,
//! `avg_ts`, `stddev_ts`, `model_type`, `model_size`, `model_n_params`, `n_gpu_layers`,
//! `flash_attn`, `backends`, `build_commit`, `gpu_info`).

mod markdown;
mod record;
mod vllm;

pub use vllm::ServeRun;

use serde::Serialize;

/// The largest input read, in bytes: a long sweep's JSON is well under this.
pub const MAX_INPUT_BYTES: usize = 4 << 20;

/// One test's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The model as llama-bench describes it: `llama 7B Q4_0`.
    pub model: String,
    /// The model's tensor bytes, and its parameters, where printed.
    pub size_bytes: Option<u64>,
    pub params: Option<u64>,
    pub backend: Option<String>,
    pub n_gpu_layers: Option<u32>,
    pub flash_attn: Option<bool>,
    /// Prompt tokens processed, tokens generated, and the context before the test.
    pub n_prompt: u32,
    pub n_gen: u32,
    pub n_depth: u32,
    pub tokens_per_s: f64,
    pub stddev: Option<f64>,
}

impl Row {
    /// The test as llama-bench names it: `pp512`, `tg128`, `pp512+tg128`, with ` @ d4096`.
    pub fn test(&self) -> String {
        let test = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        match self.n_depth {
            0 => test,
            d => format!("{test} @ d{d}"),
        }
    }
}

/// The format the text was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Markdown,
    Csv,
    Json,
    Jsonl,
    /// `vllm bench serve`'s printed result block (or `benchmark_serving.py`'s).
    VllmConsole,
    /// Its `--save-result` JSON.
    VllmJson,
}

impl Format {
    /// The tool that prints this format.
    pub fn tool(self) -> &'static str {
        match self {
            Format::Markdown | Format::Csv | Format::Json | Format::Jsonl => "llama-bench",
            Format::VllmConsole | Format::VllmJson => "vllm bench serve",
        }
    }
}

/// What the text held.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bench {
    pub format: Format,
    /// llama-bench's tests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Row>,
    /// `vllm bench serve`'s runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<ServeRun>,
    /// The build line or field: `8cf6b42 (6140)`.
    pub build: Option<String>,
    /// Lines or records that looked like results but could not be read, each said.
    pub warnings: Vec<String>,
}

impl Bench {
    /// The models the tests or runs name, each once in a row.
    pub fn models(&self) -> Vec<&str> {
        let mut models: Vec<&str> = self
            .rows
            .iter()
            .map(|r| r.model.as_str())
            .chain(self.runs.iter().filter_map(|r| r.model.as_deref()))
            .collect();
        models.dedup();
        models
    }

    /// The runtime the results measured: llama-bench runs llama.cpp; a serving benchmark's runs
    /// name their client's backend, `sglang…` for SGLang's server, and otherwise vLLM's.
    pub fn runtime(&self) -> &'static str {
        match self.format {
            Format::VllmConsole | Format::VllmJson => {
                let sglang = self.runs.iter().any(|r| {
                    r.backend
                        .as_deref()
                        .is_some_and(|b| b.starts_with("sglang"))
                });
                if sglang {
                    "sglang"
                } else {
                    "vllm"
                }
            }
            _ => "llama.cpp",
        }
    }

    /// The tool that printed the results: `sglang.bench_serving` prints vLLM's block and JSON
    /// keys with its own backend.
    pub fn tool(&self) -> &'static str {
        match self.runtime() {
            "sglang" => "sglang.bench_serving",
            _ => self.format.tool(),
        }
    }

    pub(crate) fn empty(format: Format) -> Bench {
        Bench {
            format,
            rows: Vec::new(),
            runs: Vec::new(),
            build: None,
            warnings: Vec::new(),
        }
    }
}

/// Why the text is not a benchmark's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    TooLarge,
    /// No table, CSV header or JSON record of llama-bench's, and no result of vLLM's.
    NotBench,
    /// A table, records or result blocks with no test that could be read; the first reason.
    NoRows(String),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::TooLarge => write!(f, "over {} MiB: paste the benchmark's output only", MAX_INPUT_BYTES >> 20),
            ParseError::NotBench => f.write_str(
                "not llama-bench or vllm bench serve output: paste llama-bench's markdown table (the default) or its -o csv, -o json or -o jsonl output, or vllm bench serve's result block or --save-result JSON",
            ),
            ParseError::NoRows(why) => write!(f, "no test could be read: {why}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Reads llama-bench's output in any of its formats, or `vllm bench serve`'s.
pub fn parse(text: &str) -> Result<Bench, ParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(ParseError::TooLarge);
    }
    let trimmed = text.trim_start();
    let json = trimmed.starts_with('[') || trimmed.starts_with('{');
    let bench = if text.contains(vllm::HEADER) {
        Some(vllm::console(text))
    } else if let Some(bench) = json.then(|| vllm::json(text)).flatten() {
        Some(bench)
    } else if trimmed.starts_with('[') {
        record::json(text)
    } else if trimmed.starts_with('{') {
        record::jsonl(text)
    } else if let Some(bench) = record::csv(text) {
        Some(bench)
    } else {
        markdown::parse(text)
    };
    let bench = bench.ok_or(ParseError::NotBench)?;
    if bench.rows.is_empty() && bench.runs.is_empty() {
        let why = bench.warnings.first().cloned();
        return Err(ParseError::NoRows(
            why.unwrap_or_else(|| "the table is empty".into()),
        ));
    }
    Ok(bench)
}

/// `pp512`, `tg128`, `pp512+tg128`, `pp 512`, with an optional ` @ d4096`: (prompt, gen, depth).
pub(crate) fn read_test(text: &str) -> Option<(u32, u32, u32)> {
    let (test, depth) = match text.split_once('@') {
        Some((test, depth)) => (test, depth.trim().strip_prefix('d')?.trim().parse().ok()?),
        None => (text, 0),
    };
    let number = |s: &str| s.trim().parse::<u32>().ok();
    let mut prompt = 0;
    let mut gen = 0;
    for part in test.split('+') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("pp") {
            prompt = number(n)?;
        } else if let Some(n) = part.strip_prefix("tg") {
            gen = number(n)?;
        } else {
            return None;
        }
    }
    (prompt + gen > 0).then_some((prompt, gen, depth))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_are_read_in_every_spelling() {
        assert_eq!(read_test("pp512"), Some((512, 0, 0)));
        assert_eq!(read_test("tg 128"), Some((0, 128, 0)));
        assert_eq!(read_test("pp512+tg128"), Some((512, 128, 0)));
        assert_eq!(read_test("pp2048 @ d4096"), Some((2048, 0, 4096)));
        assert_eq!(read_test("pp"), None);
        assert_eq!(read_test("xx512"), None);
        assert_eq!(read_test("pp0"), None);
    }

    #[test]
    fn a_row_names_its_test_as_llama_bench_does() {
        let row = Row {
            model: "llama 7B Q4_0".into(),
            size_bytes: None,
            params: None,
            backend: None,
            n_gpu_layers: None,
            flash_attn: None,
            n_prompt: 512,
            n_gen: 0,
            n_depth: 4096,
            tokens_per_s: 1.0,
            stddev: None,
        };
        assert_eq!(row.test(), "pp512 @ d4096");
    }
}
