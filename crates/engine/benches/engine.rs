//! Criterion benchmarks for the engine's hot paths; the README's performance figures come from here.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use vramfit_engine::estimate::{speed_of, total_bytes};
use vramfit_engine::{estimate, solver, tables, Scenario};

fn scenario(pairs: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::default();
    for (k, v) in pairs {
        s.set(k, v).expect("valid benchmark scenario");
    }
    s
}

fn qlora() -> Scenario {
    scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "qlora"),
        ("batch", "4"),
        ("gpu", "rtx-4090"),
    ])
}

fn estimates(c: &mut Criterion) {
    let qlora = qlora();
    let moe = scenario(&[
        ("model", "deepseek-v3"),
        ("mode", "inference"),
        ("gpus", "8"),
        ("sharding", "tensor"),
        ("gpu", "h200"),
    ]);
    let vllm = scenario(&[
        ("model", "llama-3.1-70b"),
        ("mode", "inference"),
        ("runtime", "vllm"),
        ("gpus", "4"),
        ("sharding", "tensor"),
        ("gpu", "h100-80"),
        ("max-model-len", "32768"),
    ]);
    let llama_cpp = scenario(&[
        ("model", "qwen3-30b-a3b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("quant", "Q4_K_M"),
        ("ctx-size", "16384"),
        ("gpu", "rtx-4090"),
    ]);
    c.bench_function("estimate: total only, vLLM runtime (70B, TP4)", |b| {
        b.iter(|| estimate::total_bytes(black_box(&vllm)))
    });
    c.bench_function(
        "estimate: total only, llama.cpp runtime (MoE Q4_K_M)",
        |b| b.iter(|| estimate::total_bytes(black_box(&llama_cpp))),
    );
    c.bench_function(
        "serving plan: vLLM (concurrency, max context, GPUs, curve)",
        |b| b.iter(|| vramfit_engine::serving_plan::plan_serving(black_box(&vllm), Some(32), None)),
    );
    c.bench_function("estimate: total only (solver inner loop)", |b| {
        b.iter(|| estimate::total_bytes(black_box(&qlora)))
    });
    c.bench_function(
        "estimate: total only, 256-expert MLA model (DeepSeek-V3)",
        |b| b.iter(|| estimate::total_bytes(black_box(&moe))),
    );
    c.bench_function("estimate: with formulas", |b| {
        b.iter(|| estimate(black_box(&qlora)))
    });
    // An inference on an A10, whose datasheet is known: its memory total alone, and the same
    // estimate with its speed (`speed_of` builds the stack without text, then times it); the
    // difference is what the speed model costs.
    let a10 = scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("prompt", "512"),
        ("seq", "640"),
        ("gpu", "a10"),
    ]);
    c.bench_function("estimate: total only (A10, llama.cpp)", |b| {
        b.iter(|| total_bytes(black_box(&a10)))
    });
    c.bench_function("estimate: total and speed (A10, llama.cpp)", |b| {
        b.iter(|| speed_of(black_box(&a10)))
    });
}

fn solvers(c: &mut Criterion) {
    let qlora = qlora();
    let oom = scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "full"),
        ("batch", "8"),
        ("gpu", "t4"),
    ]);
    c.bench_function("solver: fix-it ladder (OOM full FT on a T4)", |b| {
        b.iter(|| solver::ladder(black_box(&oom)))
    });
    c.bench_function(
        "solver: everything (max batch, max seq, smallest GPU, ladder)",
        |b| b.iter(|| solver::solve(black_box(&oom), Some(16))),
    );
    c.bench_function("tables: all four", |b| {
        b.iter(|| tables::all_tables(black_box(&qlora)))
    });
}

criterion_group!(engine, estimates, solvers);
criterion_main!(engine);
