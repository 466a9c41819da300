//! A benchmark's measured speeds against the speed model, each as the scenario it measures
//! (docs/speed.md): llama-bench's `-p N` is prompt N and seq N, its `-n N` prompt 1 and seq N;
//! `vllm bench serve` at concurrency C with input I and output O (each the run's total over its
//! completed requests) is `--concurrency C --prompt I --seq I+O`, its output token throughput
//! set against `output_tokens_per_s` and its mean TTFT against `ttft_s`. Then the error, and the
//! correction a user can apply: the median of measured ÷ predicted over the token rates.

use crate::estimate::{estimate, Speed, Timing};
use crate::scenario::Scenario;
use serde::Serialize;
use vramfit_bench::{Bench, Row, ServeRun};

/// What a check compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Tokens per second: a llama-bench test's rate, or `vllm bench serve`'s output token
    /// throughput.
    TokensPerS,
    /// Seconds to the first token: `vllm bench serve`'s mean TTFT.
    TtftS,
}

/// One measured figure against the estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchCheck {
    /// As the tool names it: `pp512`, `tg128`; a vLLM run as `c8, 237 in / 300 out`.
    pub test: String,
    pub quantity: Quantity,
    pub measured: f64,
    pub predicted: Option<f64>,
    pub error_pct: Option<f64>,
    /// Why there is no prediction, or what the comparison leaves out.
    pub note: Option<String>,
}

/// Every figure, and the factor that brings the estimate to the measurements.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    pub checks: Vec<BenchCheck>,
    /// The median of measured ÷ predicted over the token rates with a prediction (a TTFT is a
    /// time, and holds what the estimate leaves out).
    pub correction: Option<f64>,
}

const NO_THROUGHPUT: &str =
    "the card's maker publishes no tensor throughput, so prefill is not predicted";

/// The tokens/s the estimate gives for a test of `prompt` and `gen` tokens; `None` for a test
/// with a prompt on a card without a published throughput.
fn predicted(speed: &Speed, prompt: u32, gen: u32) -> Option<f64> {
    match (prompt, gen) {
        (_, 0) => speed.prefill_tokens_per_s,
        (0, _) => Some(speed.decode_tokens_per_s),
        // llama-bench times both together: the prompt, then each token.
        (p, g) => {
            let seconds = speed.ttft_s? + f64::from(g) / speed.decode_tokens_per_s;
            Some(f64::from(p + g) / seconds)
        }
    }
}

/// The scenario a llama-bench test measures, on top of `base` (its model, GPU and runtime).
fn scenario_of(base: &Scenario, row: &Row) -> Scenario {
    let mut s = base.clone();
    let (prompt, seq) = match (row.n_prompt, row.n_gen) {
        (p, 0) => (p, p),
        (0, g) => (1, g),
        (p, g) => (p, p + g),
    };
    s.prompt = Some(prompt);
    s.seq = seq;
    s.batch = 1;
    s.concurrency = None;
    if let Some(ngl) = row.n_gpu_layers {
        // llama-bench prints -1 for "every layer" in some builds.
        s.n_gpu_layers = (ngl < 999).then_some(ngl);
    }
    if let Some(fa) = row.flash_attn {
        s.flash_attn = fa;
    }
    s
}

/// The estimate's speed for a scenario, or why it has none.
fn speed_of(s: &Scenario) -> Result<Speed, String> {
    match estimate(s) {
        Ok(e) => match e.speed.as_ref().and_then(Timing::inference) {
            Some(speed) => Ok(speed.clone()),
            None => Err(e
                .notes
                .iter()
                .find(|n| n.contains("speed"))
                .cloned()
                .unwrap_or_else(|| "no speed estimate: name a catalogue GPU (--gpu)".into())),
        },
        Err(errors) => Err(errors
            .first()
            .map_or_else(|| "no estimate".into(), ToString::to_string)),
    }
}

/// A measured figure beside its prediction, or beside why there is none.
fn compared(
    test: String,
    quantity: Quantity,
    measured: f64,
    predicted: Result<f64, String>,
) -> BenchCheck {
    let (predicted, note) = match predicted {
        Ok(p) => (Some(p), None),
        Err(why) => (None, Some(why)),
    };
    BenchCheck {
        test,
        quantity,
        measured,
        predicted,
        error_pct: predicted
            .filter(|_| measured > 0.0)
            .map(|p| (p - measured) / measured * 100.0),
        note,
    }
}

fn llama_bench(base: &Scenario, row: &Row) -> BenchCheck {
    let predicted = if row.n_depth > 0 {
        Err("a test after a cached context is not modelled yet".to_string())
    } else {
        speed_of(&scenario_of(base, row)).and_then(|speed| {
            predicted(&speed, row.n_prompt, row.n_gen).ok_or_else(|| NO_THROUGHPUT.to_string())
        })
    };
    compared(
        row.test(),
        Quantity::TokensPerS,
        row.tokens_per_s,
        predicted,
    )
}

/// The concurrency a run held throughout, or why it held none: the estimate is a closed loop of
/// C requests in flight, each replaced as it finishes. The semaphore admits no more than the
/// requests there are, so a run of fewer requests than `--max-concurrency` held that many.
fn closed_loop(run: &ServeRun) -> Result<u32, String> {
    if let Some(strategy) = &run.ramp_up {
        return Err(format!(
            "the request rate ramped ({strategy}), so the requests in flight changed through the run: not like with like; rerun with --request-rate inf --max-concurrency C"
        ));
    }
    if let Some(rate) = run.request_rate {
        return Err(format!(
            "sent at {rate} requests/s: an open loop, whose requests in flight follow the arrivals and whose output is capped by them, where the estimate holds a fixed concurrency; rerun with --request-rate inf --max-concurrency C"
        ));
    }
    let Some(c) = run.max_concurrency else {
        return Err("no maximum concurrency: every request was sent at once, so the requests in flight fell from all of them to none, where the estimate holds a fixed concurrency; rerun with --max-concurrency C (benchmark_serving.py prints it above the result block: paste those lines too)".into());
    };
    Ok(c.min(u32::try_from(run.completed).unwrap_or(u32::MAX)))
}

/// The scenario a closed-loop run measures, on top of `base`.
fn serve_scenario(base: &Scenario, run: &ServeRun, concurrency: u32) -> Scenario {
    let mut s = base.clone();
    let (input, output) = (run.mean_input(), run.mean_output());
    s.prompt = Some(input);
    s.seq = input.saturating_add(output);
    s.batch = 1;
    s.concurrency = Some(concurrency);
    s
}

/// A run's output token throughput and, where printed, its mean TTFT. The mean is the figure
/// compared: the throughput is a whole-run figure over the same requests, and vramfit's
/// calibration reads the same statistic. The estimate's TTFT is one prefill alone, so a request's
/// wait behind the steps of those already running, and the HTTP round trip, read as error.
fn vllm_bench(base: &Scenario, run: &ServeRun) -> Vec<BenchCheck> {
    let speed = closed_loop(run).and_then(|c| speed_of(&serve_scenario(base, run, c)));
    let output = speed.clone().map(|s| s.output_tokens_per_s);
    let mut checks = vec![compared(
        run.test(),
        Quantity::TokensPerS,
        run.output_tokens_per_s,
        output,
    )];
    if let Some(ttft_ms) = run.mean_ttft_ms {
        let ttft = speed.and_then(|s| s.ttft_s.ok_or_else(|| NO_THROUGHPUT.to_string()));
        let mut check = compared(run.test(), Quantity::TtftS, ttft_ms / 1e3, ttft);
        let median = run
            .median_ttft_ms
            .map_or_else(String::new, |m| format!(" (median {m} ms)"));
        check.note = check.note.or(Some(format!(
            "mean TTFT{median}: the estimate is one prefill, without the wait behind running requests or the HTTP round trip"
        )));
        checks.push(check);
    }
    checks
}

/// Every test or run of a benchmark against the estimate of `base` at its lengths.
pub fn check_bench(base: &Scenario, bench: &Bench) -> BenchReport {
    let checks: Vec<BenchCheck> = bench
        .rows
        .iter()
        .map(|row| llama_bench(base, row))
        .chain(bench.runs.iter().flat_map(|run| vllm_bench(base, run)))
        .collect();
    let mut ratios: Vec<f64> = checks
        .iter()
        .filter(|c| c.quantity == Quantity::TokensPerS)
        .filter_map(|c| Some(c.measured / c.predicted?))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let correction = match ratios.len() {
        0 => None,
        n if n % 2 == 1 => Some(ratios[n / 2]),
        n => Some((ratios[n / 2 - 1] + ratios[n / 2]) / 2.0),
    };
    BenchReport { checks, correction }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(completed: u64, max_concurrency: Option<u32>) -> ServeRun {
        ServeRun {
            model: None,
            backend: None,
            completed,
            max_concurrency,
            request_rate: None,
            ramp_up: None,
            duration_s: None,
            total_input_tokens: completed * 256,
            total_output_tokens: completed * 128,
            output_tokens_per_s: 1000.0,
            mean_ttft_ms: None,
            median_ttft_ms: None,
            mean_tpot_ms: None,
            mean_itl_ms: None,
        }
    }

    #[test]
    fn a_closed_loop_holds_its_concurrency_or_the_requests_there_were() {
        assert_eq!(closed_loop(&run(1000, Some(8))), Ok(8));
        assert_eq!(closed_loop(&run(4, Some(8))), Ok(4));
        assert!(closed_loop(&run(1000, None)).is_err());
        let ramped = ServeRun {
            ramp_up: Some("linear".into()),
            ..run(1000, Some(8))
        };
        assert!(closed_loop(&ramped)
            .unwrap_err()
            .contains("ramped (linear)"));
        let open = ServeRun {
            request_rate: Some(2.5),
            ..run(1000, Some(8))
        };
        assert!(closed_loop(&open)
            .unwrap_err()
            .starts_with("sent at 2.5 requests/s"));
    }

    #[test]
    fn a_run_is_its_concurrency_with_its_mean_prompt_and_output() {
        let s = serve_scenario(&Scenario::default(), &run(10, Some(8)), 8);
        assert_eq!(
            (s.concurrency, s.prompt, s.seq, s.batch),
            (Some(8), Some(256), 384, 1)
        );
    }
}
