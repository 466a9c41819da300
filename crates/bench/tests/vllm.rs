//! `vllm bench serve`'s result block and `--save-result` JSON, and the older
//! `benchmarks/benchmark_serving.py`'s block, read from real outputs (fixtures/SOURCES.md); a cut
//! block names what it lacks, and damaged text never panics.

use proptest::prelude::*;
use vramfit_bench::{parse, Format, ParseError};

/// vLLM in 2026: "Failed requests", the concurrency inside the block, lowercase "token".
const PR35777: &str = include_str!("fixtures/vllm-pr35777.txt");
/// benchmark_serving.py, the traffic above each block, every line behind `# `.
const FORK_PP: &str = include_str!("fixtures/vllm-fork-pp.txt");
/// benchmark_serving.py (May 2025): 10 requests/s, then `inf` without a concurrency.
const SWEEP: &str = include_str!("fixtures/vllm-nerdalert-sweep.txt");
const JSON_10QPS: &str = include_str!("fixtures/vllm-nerdalert-10qps.json");
const JSON_INF: &str = include_str!("fixtures/vllm-nerdalert-inf.json");

#[test]
fn a_current_block_reads_its_totals_concurrency_and_latencies() {
    let b = parse(PR35777).unwrap();
    assert_eq!(
        (b.format, b.format.tool()),
        (Format::VllmConsole, "vllm bench serve")
    );
    assert!(b.rows.is_empty());
    let [run] = &b.runs[..] else {
        panic!("{:?}", b.runs)
    };
    assert_eq!(run.completed, 1000);
    assert_eq!(run.max_concurrency, Some(8));
    assert_eq!(run.request_rate, None);
    assert_eq!(
        (run.total_input_tokens, run.total_output_tokens),
        (237_165, 300_000)
    );
    assert_eq!((run.mean_input(), run.mean_output()), (237, 300));
    // Not the "Peak output token throughput" line above it.
    assert_eq!(run.output_tokens_per_s, 775.71);
    assert_eq!(
        (run.mean_ttft_ms, run.median_ttft_ms),
        (Some(148.37), Some(151.86))
    );
    assert_eq!(
        (run.mean_tpot_ms, run.mean_itl_ms),
        (Some(9.85), Some(9.85))
    );
    assert_eq!(run.duration_s, Some(386.74));
    assert_eq!(run.test(), "c8, 237 in / 300 out");
}

#[test]
fn an_older_block_takes_its_traffic_from_the_lines_above_it() {
    let b = parse(FORK_PP).unwrap();
    assert_eq!(b.runs.len(), 2);
    for run in &b.runs {
        assert_eq!(run.max_concurrency, Some(32));
        assert_eq!(run.request_rate, None, "inf");
        assert_eq!((run.mean_input(), run.mean_output()), (2048, 2048));
    }
    assert_eq!(b.runs[1].output_tokens_per_s, 329.86);
    assert_eq!(b.runs[1].mean_ttft_ms, Some(6535.45));
}

#[test]
fn each_block_of_a_sweep_keeps_its_own_rate() {
    let b = parse(SWEEP).unwrap();
    let traffic: Vec<(Option<f64>, Option<u32>)> = b
        .runs
        .iter()
        .map(|r| (r.request_rate, r.max_concurrency))
        .collect();
    assert_eq!(traffic, [(Some(10.0), None), (None, None)]);
    assert_eq!(b.runs[0].test(), "10 req/s, 999 in / 270 out");
    assert_eq!(b.runs[1].test(), "unbounded, 999 in / 267 out");
}

#[test]
fn the_saved_json_gives_what_the_block_prints() {
    for (text, rate, printed) in [(JSON_10QPS, Some(10.0), 0usize), (JSON_INF, None, 1)] {
        let b = parse(text).unwrap();
        assert_eq!(b.format, Format::VllmJson);
        let [run] = &b.runs[..] else {
            panic!("{:?}", b.runs)
        };
        let block = &parse(SWEEP).unwrap().runs[printed];
        assert_eq!(run.request_rate, rate);
        assert_eq!(run.max_concurrency, None, "null");
        assert_eq!(
            run.model.as_deref(),
            Some("meta-llama/Llama-3.2-3B-Instruct")
        );
        assert_eq!(
            (
                run.completed,
                run.total_input_tokens,
                run.total_output_tokens
            ),
            (
                block.completed,
                block.total_input_tokens,
                block.total_output_tokens
            )
        );
        // The block rounds to two decimals.
        assert!((run.output_tokens_per_s - block.output_tokens_per_s).abs() < 0.005);
        assert!((run.mean_ttft_ms.unwrap() - block.mean_ttft_ms.unwrap()).abs() < 0.005);
    }
}

#[test]
fn appended_results_are_one_run_a_line() {
    let both = format!("{JSON_10QPS}{JSON_INF}");
    let b = parse(&both).unwrap();
    assert_eq!(b.runs.len(), 2);
    assert_eq!(b.runs[1].request_rate, None);
}

#[test]
fn a_cut_block_names_what_it_lacks() {
    let cut: String = PR35777.lines().take(6).collect::<Vec<_>>().join("\n");
    let Err(ParseError::NoRows(why)) = parse(&cut) else {
        panic!("read a cut block")
    };
    assert!(
        why.contains("Total generated tokens") && why.contains("Output token throughput"),
        "{why}"
    );
    assert!(!why.contains("Total input tokens"), "{why}");
    // A sweep whose last block is cut keeps the whole ones and says what the last lacks.
    let cut_sweep = &SWEEP[..SWEEP.rfind("Total generated tokens").unwrap()];
    let b = parse(cut_sweep).unwrap();
    assert_eq!(b.runs.len(), 1);
    assert!(
        b.warnings[0].contains("Output token throughput"),
        "{:?}",
        b.warnings
    );
}

#[test]
fn llama_bench_json_is_not_taken_for_vllm() {
    let b = parse(include_str!("fixtures/readme.json")).unwrap();
    assert_eq!(b.format, Format::Json);
    assert!(b.runs.is_empty());
    assert!(ParseError::NotBench
        .to_string()
        .contains("vllm bench serve"));
}

proptest! {
    #[test]
    fn damaged_outputs_never_panic(
        which in 0..4usize,
        cut in any::<prop::sample::Index>(),
        insert in any::<prop::sample::Index>(),
        junk in "[=:#{}\\[\\]0-9a-zA-Z ().,\"-]{0,16}",
    ) {
        let text = [PR35777, FORK_PP, SWEEP, JSON_INF][which];
        let chars: Vec<char> = text.chars().collect();
        let at = insert.index(chars.len());
        let mut damaged: String = chars[..at].iter().collect();
        damaged.push_str(&junk);
        damaged.extend(&chars[at..cut.index(chars.len()).max(at)]);
        let _ = parse(&damaged);
    }
}

/// SGLang's `bench_serving`: its "Backend:" line names the server, its concurrency label differs
/// from vLLM's (and was misspelt in older releases), and its JSON lines carry Python's `Infinity`.
#[test]
fn sglang_blocks_and_json_lines_read_as_sglang_runs() {
    let b = parse(include_str!("fixtures/sglang-pr8552.txt")).unwrap();
    let [run] = &b.runs[..] else {
        panic!("{:?}", b.runs)
    };
    assert_eq!(run.backend.as_deref(), Some("sglang-oai"));
    assert_eq!(run.max_concurrency, Some(1));
    assert_eq!((run.mean_input(), run.mean_output()), (1000, 1000));
    assert_eq!(
        (run.output_tokens_per_s, run.mean_ttft_ms),
        (78.0, Some(167.36))
    );
    assert_eq!((b.runtime(), b.tool()), ("sglang", "sglang.bench_serving"));

    let b = parse(include_str!("fixtures/sglang-pr6121.txt")).unwrap();
    assert_eq!(b.runs[0].max_concurrency, Some(128), "the misspelt label");
    assert_eq!(b.runs[0].output_tokens_per_s, 2022.48);

    let b = parse(include_str!("fixtures/sglang-issue9585.jsonl")).unwrap();
    assert_eq!(b.format, Format::VllmJson);
    let [run] = &b.runs[..] else {
        panic!("{:?} {:?}", b.runs, b.warnings)
    };
    assert_eq!((run.request_rate, run.max_concurrency), (None, Some(16)));
    assert_eq!(run.completed, 300);
    assert_eq!(b.runtime(), "sglang");
    assert_eq!(parse(PR35777).unwrap().runtime(), "vllm");
}
