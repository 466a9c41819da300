//! Criterion benchmarks for `vramfit_gguf::parse_header` on Llama-3.1-8B-Instruct Q4_K_M's header
//! (292 tensors): as committed in the fixture (no tokenizer arrays), and with the tokenizer arrays
//! of the real file at their real lengths (128,256 tokens and types, 280,147 merges; strings
//! written empty, so the bytes are fewer than the real ~8 MB but the elements as many). The
//! page parses the header of every file dropped on it; the README's figure comes from here.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use vramfit_gguf::{parse_header, write_header, MetaArray, MetaValue, ScalarType};

const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");

/// The fixture with the tokenizer arrays of the real file added back as summaries.
fn with_tokenizer() -> Vec<u8> {
    let mut header = parse_header(FIXTURE).expect("the committed fixture parses");
    let summary = |element_type, len| MetaValue::Array(MetaArray::summary(element_type, len));
    header.metadata.extend([
        (
            "tokenizer.ggml.tokens".to_string(),
            summary(ScalarType::String, 128_256),
        ),
        (
            "tokenizer.ggml.token_type".to_string(),
            summary(ScalarType::I32, 128_256),
        ),
        (
            "tokenizer.ggml.merges".to_string(),
            summary(ScalarType::String, 280_147),
        ),
    ]);
    write_header(&header)
}

fn benches(c: &mut Criterion) {
    let tokenizer = with_tokenizer();
    let mut group = c.benchmark_group("parse_header");
    for (name, bytes) in [
        ("Llama-3.1-8B Q4_K_M, no tokenizer", FIXTURE),
        (
            "Llama-3.1-8B Q4_K_M, tokenizer arrays",
            tokenizer.as_slice(),
        ),
    ] {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(name, |b| b.iter(|| parse_header(black_box(bytes))));
    }
    group.finish();
}

criterion_group!(parse, benches);
criterion_main!(parse);
