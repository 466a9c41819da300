//! Criterion benchmarks for `vramfit_smi::parse`: the largest real fixture of each common format,
//! since a paste is parsed on every keystroke in the page. The README's parse figures come from here.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

const FIXTURES: &[(&str, &str)] = &[
    (
        "table, 8 GPUs",
        include_str!("../tests/fixtures/nvidia-smi/table__h100-80gb-hbm3-x8__550.90.07__linux.txt"),
    ),
    (
        "-q, 8 GPUs",
        include_str!("../tests/fixtures/nvidia-smi/q__h100-80gb-hbm3-x8__535.161.08__linux.txt"),
    ),
    (
        "-q -x, 2 GPUs",
        include_str!("../tests/fixtures/nvidia-smi/xml__rtx-a5000-x2__590.44.01.xml"),
    ),
];

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for (name, text) in FIXTURES {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| b.iter(|| vramfit_smi::parse(black_box(text))));
    }
    group.finish();
}

criterion_group!(parse, benches);
criterion_main!(parse);
