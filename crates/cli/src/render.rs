//! Text rendering of engine results for a terminal: aligned tables, honest unit labels.

use serde_json::{json, Map, Value};
use vramfit_engine::gpu::GPUS;
use vramfit_engine::model::PRESETS;
use vramfit_engine::solver::Solution;
use vramfit_engine::tables::Table;
use vramfit_engine::{Bytes, Estimate, Units};

fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = widths[i]))
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
    }
    out
}

pub fn estimate(e: &Estimate) -> String {
    let units = e.scenario.units;
    let mut rows = vec![vec![
        "component".to_string(),
        "memory".to_string(),
        "formula".to_string(),
    ]];
    for c in &e.components {
        rows.push(vec![
            c.label.clone(),
            c.bytes.display(units),
            c.formula.clone(),
        ]);
    }
    let mut out = aligned(&rows);
    let headroom = if e.headroom_bytes >= 0 {
        Bytes(e.headroom_bytes.unsigned_abs()).display(units)
    } else {
        format!("-{}", Bytes(e.headroom_bytes.unsigned_abs()).display(units))
    };
    out += &format!(
        "\ntotal per GPU  {}\nGPU            {} × {} ({} capacity)\nusable         {} (after in-use and margin)\nheadroom       {}\nverdict        {}\n",
        e.total_bytes.display(units),
        e.gpus,
        e.gpu_name,
        e.capacity_bytes.display(units),
        e.usable_bytes.display(units),
        headroom,
        e.verdict.as_str().to_uppercase(),
    );
    for note in &e.notes {
        out += &format!("note: {note}\n");
    }
    out
}

pub fn solution(s: &Solution, units: Units) -> String {
    let or_none = |v: Option<u32>| {
        v.map(|n| n.to_string())
            .unwrap_or_else(|| "does not fit at 1".to_string())
    };
    let mut out = format!(
        "usable per GPU      {}\nfixed               {}\nper sample          {}\nmax micro-batch     {}   (seed 004: (usable − fixed) / per-sample)\nmax sequence        {}\n",
        s.usable_bytes.display(units),
        s.fixed_bytes.display(units),
        s.per_sample_bytes.display(units),
        or_none(s.max_batch),
        or_none(s.max_seq),
    );
    if let (Some(target), Some(micro), Some(accum)) = (s.target_batch, s.micro_batch, s.grad_accum)
    {
        out += &format!("effective batch {target}  micro-batch {micro} × accumulation {accum}\n");
    }
    out += &format!(
        "smallest GPU        {}\n",
        s.smallest_gpu.as_deref().unwrap_or("none in the catalogue")
    );
    if !s.ladder.is_empty() {
        out += "\nfix-it ladder (each step on top of the ones before):\n";
        for (i, step) in s.ladder.iter().enumerate() {
            out += &format!(
                "{}. {:<70} {:>10}  {}\n",
                i + 1,
                step.action,
                step.total_bytes.display(units),
                step.verdict.as_str()
            );
        }
    }
    out
}

pub fn table(t: &Table) -> String {
    let mut rows = vec![std::iter::once(t.corner.clone())
        .chain(t.columns.iter().cloned())
        .collect::<Vec<_>>()];
    for r in &t.rows {
        rows.push(
            std::iter::once(r.label.clone())
                .chain(r.cells.iter().map(|c| c.text.clone()))
                .collect(),
        );
    }
    aligned(&rows) + &t.note + "\n"
}

pub fn models() -> Vec<Map<String, Value>> {
    PRESETS
        .iter()
        .map(|p| {
            let value = json!({"id": p.id, "name": p.name, "params": p.arch.param_count().round(), "layers": p.arch.layers,
                "hidden": p.arch.hidden, "heads": p.arch.heads, "kv_heads": p.arch.kv_heads, "vocab": p.arch.vocab});
            value.as_object().cloned().unwrap_or_default()
        })
        .collect()
}

pub fn gpus() -> Vec<Map<String, Value>> {
    GPUS.iter()
        .map(|g| {
            let value = json!({"id": g.id, "name": g.name, "advertised_gib": g.advertised_gib,
                "smi_total_mib": g.smi_total_mib, "capacity_bytes": g.capacity().0});
            value.as_object().cloned().unwrap_or_default()
        })
        .collect()
}
