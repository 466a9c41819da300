//! Criterion benchmarks for the engine's hot paths; the README's performance figures come from here.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use vramfit_engine::{estimate, Scenario};

fn scenario() -> Scenario {
    let mut s = Scenario::default();
    for (k, v) in [
        ("model", "llama-3.1-8b"),
        ("mode", "qlora"),
        ("batch", "4"),
        ("seq", "2048"),
        ("gpu", "rtx-4090"),
    ] {
        s.set(k, v).expect("valid benchmark scenario");
    }
    s
}

fn benches(c: &mut Criterion) {
    let s = scenario();
    c.bench_function("estimate_total_only", |b| {
        b.iter(|| vramfit_engine::estimate::total_bytes(black_box(&s)))
    });
    c.bench_function("estimate_with_formulas", |b| {
        b.iter(|| estimate(black_box(&s)))
    });
}

criterion_group!(engine, benches);
criterion_main!(engine);
