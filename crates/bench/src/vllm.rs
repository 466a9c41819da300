//! `vllm bench serve`'s results, and the older `benchmarks/benchmark_serving.py`'s: the block it
//! prints (`vllm/benchmarks/serve.py`'s `benchmark`, 0.11.0: "Successful requests:", "Maximum
//! request concurrency:" when set (since PR #21095), "Request rate configured (RPS):" when not
//! `inf`, "Total input tokens:", "Total generated tokens:", "Output token throughput (tok/s):",
//! "Mean TTFT (ms):", …), with the lines printed above it ("Traffic request rate:", "Maximum
//! request concurrency:"), which are all the older script shows of its traffic; and the
//! `--save-result` JSON (`completed`, `total_input_tokens`, `total_output_tokens`,
//! `output_throughput`, `mean_ttft_ms`, `request_rate` (a number or `"inf"`), `max_concurrency`
//! (`null` when unset), `input_lens` and `output_lens` with `--save-detailed`), one object, an
//! array of them, or one a line as `--append-result` leaves them.

use crate::record::Fields;
use crate::{Bench, Format};
use serde::Serialize;
use serde_json::{Map, Value};
use vramfit_units::parse_f64;

/// The line that opens a result block.
pub(crate) const HEADER: &str = "Serving Benchmark Result";

/// One benchmark run: its totals, the traffic it was sent as, and the figures compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServeRun {
    /// The model as the JSON names it (`model_id`); the block does not print it.
    pub model: Option<String>,
    /// The client's `--backend` where printed (SGLang's `bench_serving` prints it, and its JSON
    /// and vLLM's name it): `sglang`, `sglang-oai`, `vllm`, `openai`, ….
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Requests that completed: the totals are theirs.
    pub completed: u64,
    /// `--max-concurrency`; `None` where unset or not printed.
    pub max_concurrency: Option<u32>,
    /// `--request-rate` in requests per second where it was a number; `None` for `inf` (every
    /// request sent at once, or as the concurrency frees a place), which the block leaves out.
    pub request_rate: Option<f64>,
    /// `--ramp-up-strategy`, where the rate ramped.
    pub ramp_up: Option<String>,
    pub duration_s: Option<f64>,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// "Output token throughput (tok/s)": generated tokens over the whole run's duration.
    pub output_tokens_per_s: f64,
    pub mean_ttft_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub mean_tpot_ms: Option<f64>,
    pub mean_itl_ms: Option<f64>,
}

impl ServeRun {
    /// Mean tokens per completed request: `total ÷ completed`, to the nearest token.
    fn mean(&self, total: u64) -> u32 {
        let mean = (total as f64 / self.completed.max(1) as f64).round();
        mean.min(f64::from(u32::MAX)) as u32
    }

    /// The mean prompt of a completed request, in tokens.
    pub fn mean_input(&self) -> u32 {
        self.mean(self.total_input_tokens)
    }

    /// The mean tokens a completed request generated.
    pub fn mean_output(&self) -> u32 {
        self.mean(self.total_output_tokens)
    }

    /// The run as it is named beside its figures: `c8, 237 in / 300 out`, or its request rate.
    pub fn test(&self) -> String {
        let traffic = match (self.max_concurrency, self.request_rate) {
            (_, Some(rate)) => format!("{rate} req/s"),
            (Some(c), None) if c > 0 => format!("c{c}"),
            _ => "unbounded".to_string(),
        };
        format!(
            "{traffic}, {} in / {} out",
            self.mean_input(),
            self.mean_output()
        )
    }
}

/// A run's fields as they are read, before the required ones are checked.
#[derive(Default)]
struct Partial {
    model: Option<String>,
    backend: Option<String>,
    completed: Option<u64>,
    max_concurrency: Option<u32>,
    request_rate: Option<f64>,
    ramp_up: Option<String>,
    duration_s: Option<f64>,
    total_input_tokens: Option<u64>,
    total_output_tokens: Option<u64>,
    output_tokens_per_s: Option<f64>,
    mean_ttft_ms: Option<f64>,
    median_ttft_ms: Option<f64>,
    mean_tpot_ms: Option<f64>,
    mean_itl_ms: Option<f64>,
}

impl Partial {
    /// The run, or the figures it lacks, by the names vLLM prints them under.
    fn finish(self) -> Result<ServeRun, String> {
        let (Some(completed), Some(input), Some(output), Some(rate)) = (
            self.completed,
            self.total_input_tokens,
            self.total_output_tokens,
            self.output_tokens_per_s,
        ) else {
            let missing: Vec<&str> = [
                (self.completed.is_none(), "Successful requests"),
                (self.total_input_tokens.is_none(), "Total input tokens"),
                (self.total_output_tokens.is_none(), "Total generated tokens"),
                (
                    self.output_tokens_per_s.is_none(),
                    "Output token throughput",
                ),
            ]
            .into_iter()
            .filter_map(|(absent, name)| absent.then_some(name))
            .collect();
            return Err(format!(
                "a result without {}: paste the whole block",
                missing.join(", ")
            ));
        };
        if completed == 0 {
            return Err("a result with no successful request".into());
        }
        Ok(ServeRun {
            model: self.model,
            backend: self.backend,
            completed,
            max_concurrency: self.max_concurrency.filter(|c| *c > 0),
            request_rate: self.request_rate,
            ramp_up: self.ramp_up,
            duration_s: self.duration_s,
            total_input_tokens: input,
            total_output_tokens: output,
            output_tokens_per_s: rate,
            mean_ttft_ms: self.mean_ttft_ms,
            median_ttft_ms: self.median_ttft_ms,
            mean_tpot_ms: self.mean_tpot_ms,
            mean_itl_ms: self.mean_itl_ms,
        })
    }
}

/// A printed label and the field it fills. Each line fills at most one, the first it holds, so
/// "Peak output token throughput" comes before "Output token throughput".
type Setter = fn(&mut Partial, &str);

const LABELS: [(&str, Option<Setter>); 17] = [
    ("peak output token throughput (tok/s):", None),
    ("successful requests:", Some(|p, v| p.completed = whole(v))),
    ("backend:", Some(|p, v| p.backend = Some(v.to_string()))),
    (
        "maximum request concurrency:",
        Some(|p, v| p.max_concurrency = whole(v).and_then(|c| u32::try_from(c).ok())),
    ),
    // SGLang's `bench_serving` (python/sglang/bench_serving.py), "not set" when unset; older
    // releases printed "reqeuest" (as sgl-project/sglang#2805 and #6121 show).
    (
        "max request concurrency:",
        Some(|p, v| p.max_concurrency = whole(v).and_then(|c| u32::try_from(c).ok())),
    ),
    (
        "max reqeuest concurrency:",
        Some(|p, v| p.max_concurrency = whole(v).and_then(|c| u32::try_from(c).ok())),
    ),
    (
        "traffic request rate:",
        Some(|p, v| p.request_rate = rate(v)),
    ),
    (
        "request rate configured (rps):",
        Some(|p, v| p.request_rate = rate(v)),
    ),
    (
        "traffic ramp-up strategy:",
        Some(|p, v| p.ramp_up = Some(v.trim_end_matches('.').to_string())),
    ),
    (
        "benchmark duration (s):",
        Some(|p, v| p.duration_s = number(v)),
    ),
    (
        "total input tokens:",
        Some(|p, v| p.total_input_tokens = whole(v)),
    ),
    (
        "total generated tokens:",
        Some(|p, v| p.total_output_tokens = whole(v)),
    ),
    (
        "output token throughput (tok/s):",
        Some(|p, v| p.output_tokens_per_s = number(v).filter(|r| *r > 0.0)),
    ),
    ("mean ttft (ms):", Some(|p, v| p.mean_ttft_ms = number(v))),
    (
        "median ttft (ms):",
        Some(|p, v| p.median_ttft_ms = number(v)),
    ),
    ("mean tpot (ms):", Some(|p, v| p.mean_tpot_ms = number(v))),
    ("mean itl (ms):", Some(|p, v| p.mean_itl_ms = number(v))),
];

fn number(value: &str) -> Option<f64> {
    parse_f64(value).filter(|v| v.is_finite() && *v >= 0.0)
}

fn whole(value: &str) -> Option<u64> {
    value.parse().ok()
}

/// `inf` is no rate: `None`.
fn rate(value: &str) -> Option<f64> {
    number(value).filter(|r| *r > 0.0)
}

/// Reads one line into `run`: the value is the first word after the label, wherever the label
/// starts (a paste may prefix each line with `# ` or a container's name).
fn read_line(run: &mut Partial, line: &str) {
    let lower = line.to_ascii_lowercase();
    for (label, set) in LABELS {
        if let Some(at) = lower.find(label) {
            let value = line[at + label.len()..].split_whitespace().next();
            if let (Some(set), Some(value)) = (set, value) {
                set(run, value);
            }
            return;
        }
    }
}

/// The line that closes a block: only `=` (after any prefix).
fn closes(line: &str) -> bool {
    let line = line.trim();
    line.ends_with("=====") && !line.chars().any(char::is_alphanumeric)
}

fn close(block: Partial, bench: &mut Bench) {
    match block.finish() {
        Ok(run) => bench.runs.push(run),
        Err(why) => bench.warnings.push(why),
    }
}

/// Every result block, each with the traffic lines printed above it.
pub fn console(text: &str) -> Bench {
    let mut bench = Bench::empty(Format::VllmConsole);
    let mut above = Partial::default();
    let mut block: Option<Partial> = None;
    for line in text.lines() {
        if line.contains(HEADER) {
            if let Some(open) = block.take() {
                close(open, &mut bench);
            }
            let traffic = std::mem::take(&mut above);
            block = Some(Partial {
                backend: traffic.backend,
                max_concurrency: traffic.max_concurrency,
                request_rate: traffic.request_rate,
                ramp_up: traffic.ramp_up,
                ..Partial::default()
            });
        } else if closes(line) {
            if let Some(open) = block.take() {
                close(open, &mut bench);
            }
        } else {
            read_line(block.as_mut().unwrap_or(&mut above), line);
        }
    }
    if let Some(open) = block {
        close(open, &mut bench);
    }
    bench
}

/// A `--save-result` object's run.
fn record(map: &Map<String, Value>) -> Result<ServeRun, String> {
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    let run = Partial {
        model: text("model_id").map(str::to_string),
        backend: text("backend").map(str::to_string),
        completed: map.whole("completed"),
        max_concurrency: map
            .whole("max_concurrency")
            .and_then(|c| u32::try_from(c).ok()),
        request_rate: map
            .number("request_rate")
            .filter(|r| r.is_finite() && *r > 0.0),
        ramp_up: text("ramp_up_strategy").map(str::to_string),
        duration_s: map.number("duration"),
        total_input_tokens: map.whole("total_input_tokens"),
        total_output_tokens: map.whole("total_output_tokens"),
        output_tokens_per_s: map.number("output_throughput").filter(|r| *r > 0.0),
        mean_ttft_ms: map.number("mean_ttft_ms"),
        median_ttft_ms: map.number("median_ttft_ms"),
        mean_tpot_ms: map.number("mean_tpot_ms"),
        mean_itl_ms: map.number("mean_itl_ms"),
    };
    run.finish()
}

/// With `--save-detailed`, each request's lengths: where they differ, the check's means stand
/// for requests of several lengths, which is said.
fn spread(map: &Map<String, Value>) -> Option<String> {
    let range = |key: &str| {
        let lens: Vec<u64> = map
            .get(key)?
            .as_array()?
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        Some((*lens.iter().min()?, *lens.iter().max()?))
    };
    let (input, output) = (range("input_lens")?, range("output_lens")?);
    (input.0 != input.1 || output.0 != output.1).then(|| {
        format!(
            "requests of {}–{} tokens in and {}–{} out: the check takes their means",
            input.0, input.1, output.0, output.1
        )
    })
}

/// Whether an object is a `vllm bench serve` result rather than a llama-bench record.
fn is_result(value: &Value) -> bool {
    value.as_object().is_some_and(|m| {
        m.contains_key("output_throughput") || m.contains_key("total_output_tokens")
    })
}

/// Python's `json.dumps` writes an unbounded rate as `Infinity` (SGLang's `--output-file` does)
/// and a missing mean as `NaN`, which JSON lacks: outside strings they become `"inf"` and `null`.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
        } else if c == '"' {
            in_string = true;
        } else if let Some((word, with)) = [
            ("-Infinity", "\"-inf\""),
            ("Infinity", "\"inf\""),
            ("NaN", "null"),
        ]
        .into_iter()
        .find(|(word, _)| rest.starts_with(word))
        {
            out.push_str(with);
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The JSON form: `None` where the text is not JSON of vLLM's results.
pub fn json(text: &str) -> Option<Bench> {
    let text = &python_json(text);
    let values: Vec<Value> = match serde_json::from_str(text) {
        Ok(Value::Array(values)) => values,
        Ok(value) => vec![value],
        // `--append-result`: one object a line.
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect(),
    };
    if !values.first().is_some_and(is_result) {
        return None;
    }
    let mut bench = Bench::empty(Format::VllmJson);
    for value in &values {
        let Some(map) = value.as_object().filter(|_| is_result(value)) else {
            bench
                .warnings
                .push("a line that is not a vllm bench serve result".into());
            continue;
        };
        match record(map) {
            Ok(run) => {
                bench.warnings.extend(spread(map));
                bench.runs.push(run);
            }
            Err(why) => bench.warnings.push(why),
        }
    }
    Some(bench)
}
