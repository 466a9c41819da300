//! Every llama-bench format, read from real outputs (fixtures/SOURCES.md), and damaged or
//! arbitrary text never panics.

use proptest::prelude::*;
use vramfit_bench::{parse, Format, ParseError};

const MD_NGL: &str = include_str!("fixtures/readme-md-ngl.md");
const MD_DEPTH: &str = include_str!("fixtures/readme-md-depth.md");
const CSV: &str = include_str!("fixtures/readme-as.csv");
const CSV_MISMATCHED: &str = include_str!("fixtures/readme-mismatched.csv");
const JSON: &str = include_str!("fixtures/readme.json");
const JSONL: &str = include_str!("fixtures/readme-as.jsonl");

#[test]
fn the_markdown_table_reads_each_test_with_its_spread() {
    let b = parse(MD_NGL).unwrap();
    assert_eq!(b.format, Format::Markdown);
    assert_eq!(b.rows.len(), 6);
    let last = &b.rows[5];
    assert_eq!(last.test(), "tg128");
    assert_eq!((last.tokens_per_s, last.stddev), (131.66, Some(0.49)));
    assert_eq!(last.n_gpu_layers, Some(35));
    assert_eq!(last.model, "llama 7B mostly Q4_0");
    assert_eq!(last.params, Some(6_740_000_000));
    assert_eq!(b.rows[0].test(), "pp512");
}

#[test]
fn a_context_depth_is_kept() {
    let b = parse(MD_DEPTH).unwrap();
    let tests: Vec<String> = b.rows.iter().map(|r| r.test()).collect();
    assert_eq!(tests, ["pp512", "tg128", "pp512 @ d512", "tg128 @ d512"]);
}

#[test]
fn csv_json_and_jsonl_give_the_same_fields() {
    for (text, format, pp, tg) in [
        (CSV, Format::Csv, 7100.002165, 118.881588),
        (JSON, Format::Json, 7100.002165, 118.881588),
        (JSONL, Format::Jsonl, 7100.002165, 118.881588),
    ] {
        let b = parse(text).unwrap();
        assert_eq!(b.format, format);
        assert_eq!(b.build.as_deref(), Some("8cf427ff (5163)"));
        let tests: Vec<(String, f64)> = b.rows.iter().map(|r| (r.test(), r.tokens_per_s)).collect();
        assert_eq!(
            tests,
            [("pp512".to_string(), pp), ("tg128".to_string(), tg)]
        );
        let row = &b.rows[0];
        assert_eq!(row.size_bytes, Some(4_677_120_000));
        assert_eq!(row.params, Some(7_615_616_512));
        assert_eq!(row.backend.as_deref(), Some("CUDA"));
        assert_eq!(row.flash_attn, None, "-1 is auto");
    }
}

#[test]
fn a_csv_line_that_does_not_match_its_header_is_refused_not_shifted() {
    let refused = parse(CSV_MISMATCHED).unwrap_err();
    assert_eq!(
        refused,
        ParseError::NoRows("a CSV line of 41 fields, not 42".into())
    );
}

#[test]
fn other_text_is_refused_with_what_to_paste() {
    assert_eq!(parse("hello"), Err(ParseError::NotBench));
    let empty_table = "| model | test | t/s |\n| --- | --- | --- |\n| m | xx | 1 |\n";
    assert!(matches!(parse(empty_table), Err(ParseError::NoRows(_))));
    assert!(ParseError::NotBench.to_string().contains("-o json"));
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        let _ = parse(&text);
    }

    #[test]
    fn damaged_outputs_never_panic(
        which in 0..5usize,
        cut in any::<prop::sample::Index>(),
        insert in any::<prop::sample::Index>(),
        junk in "[|±@+,\"{}\\[\\]0-9a-z .-]{0,12}",
    ) {
        let text = [MD_NGL, MD_DEPTH, CSV, JSON, JSONL][which];
        let chars: Vec<char> = text.chars().collect();
        let at = insert.index(chars.len());
        let mut damaged: String = chars[..at].iter().collect();
        damaged.push_str(&junk);
        damaged.extend(&chars[at..cut.index(chars.len()).max(at)]);
        let _ = parse(&damaged);
    }
}
