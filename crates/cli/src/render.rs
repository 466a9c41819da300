//! Text rendering of engine results for a terminal: aligned tables, honest unit labels.

use crate::columns::{grid, Column};
use serde_json::{json, Map, Value};
use vramfit_engine::accuracy::{KindAccuracy, SpeedAccuracy};
use vramfit_engine::estimate::{DevicePlan, Serving};
use vramfit_engine::estimate::{Speed, Timing, TrainSpeed};
use vramfit_engine::gpu_catalogue::{Gpu, Unified, GPUS};
use vramfit_engine::model::{params_label, PRESETS};
use vramfit_engine::serving_plan::ServingPlan;
use vramfit_engine::solver::Solution;
use vramfit_engine::tables::Table;
use vramfit_engine::units::{GIB, MIB};
use vramfit_engine::Scenario;
use vramfit_engine::{Bytes, Estimate, Units};

pub fn estimate(e: &Estimate) -> String {
    let units = e.scenario.units;
    let rows = e
        .components
        .iter()
        .map(|c| vec![c.label.clone(), c.bytes.display(units), c.formula.clone()])
        .collect();
    let mut out = grid(
        &[
            Column::left("component"),
            Column::left("memory"),
            Column::left("formula"),
        ],
        rows,
    );
    let gpus = if e.devices.is_empty() {
        format!("{} ×", e.gpus)
    } else {
        format!("fullest of {}:", e.gpus)
    };
    out += &format!(
        "\ntotal per GPU  {}\nGPU            {gpus} {} ({} capacity)\nusable         {} (after in-use and margin)\nheadroom       {}\nverdict        {}\n",
        e.total_bytes.display(units),
        e.gpu_name,
        e.capacity_bytes.display(units),
        e.usable_bytes.display(units),
        signed(e.headroom_bytes, units),
        e.verdict.as_str().to_uppercase(),
    );
    out += &devices(&e.devices, units);
    if let Some(serving) = &e.serving {
        out += &serving_lines(serving, units);
    }
    match &e.speed {
        Some(Timing::Inference(speed)) => out += &speed_lines(speed),
        Some(Timing::Training(speed)) => out += &training_speed_lines(speed),
        None => {}
    }
    for note in &e.notes {
        out += &format!("note: {note}\n");
    }
    out
}

/// A size that may be negative (headroom past the budget).
fn signed(bytes: i64, units: Units) -> String {
    let size = Bytes(bytes.unsigned_abs()).display(units);
    if bytes >= 0 {
        size
    } else {
        format!("-{size}")
    }
}

/// Each of unlike GPUs' plan, in device order; nothing when the GPUs are alike.
fn devices(plans: &[DevicePlan], units: Units) -> String {
    if plans.is_empty() {
        return String::new();
    }
    let rows = plans
        .iter()
        .map(|d| {
            let blocks = match (d.blocks, d.output_layer) {
                (Some(b), true) => format!("{b} + output"),
                (Some(b), false) => b.to_string(),
                (None, _) => "all (shared)".to_string(),
            };
            vec![
                d.device.to_string(),
                d.gpu_name.clone(),
                blocks,
                d.weights_bytes.display(units),
                d.kv_cache_bytes.display(units),
                d.compute_bytes.display(units),
                d.total_bytes.display(units),
                d.usable_bytes.display(units),
                signed(d.headroom_bytes, units),
                d.verdict.as_str().to_uppercase(),
            ]
        })
        .collect();
    let columns = [
        Column::right("device"),
        Column::left("GPU"),
        Column::left("layers"),
        Column::right("weights"),
        Column::right("KV cache"),
        Column::right("compute"),
        Column::right("total"),
        Column::right("usable"),
        Column::right("headroom"),
        Column::left("verdict"),
    ];
    format!("\nper device\n{}", grid(&columns, rows))
}

/// How estimates of this kind of run compared with published measurements, figure by figure.
pub fn accuracy(a: &KindAccuracy) -> String {
    let mut out = format!(
        "accuracy for {} ({})
",
        a.label, a.kind
    );
    if !a.figures.is_empty() {
        out += &grid(
            &[
                Column::left("figure"),
                Column::right("rows"),
                Column::right("median |error|"),
                Column::right("worst |error|"),
                Column::right("within ±10%"),
            ],
            a.figures
                .iter()
                .map(|f| {
                    vec![
                        f.figure.clone(),
                        f.rows.to_string(),
                        format!("{:.1}%", f.median_abs_pct),
                        format!("{:.1}% ({})", f.worst_abs_pct, f.worst_id),
                        format!("{} of {}", f.within_10_pct, f.rows),
                    ]
                })
                .collect(),
        );
    }
    if let Some(note) = &a.note {
        out += &format!("{note}\n");
    }
    let mut sources: Vec<&str> = Vec::new();
    for source in a.figures.iter().flat_map(|f| &f.sources) {
        if !sources.contains(&source.as_str()) {
            sources.push(source);
        }
    }
    for source in sources {
        out += &format!("source: {source}\n");
    }
    out
}

/// How the speeds of runs like this one compared with held-out published rows, figure by figure,
/// each under the kind its rows are of.
pub fn speed_accuracy(a: &SpeedAccuracy) -> String {
    let mut out = "speed accuracy for runs like this (held-out published rows: no constant was set from them)\n".to_string();
    if !a.figures.is_empty() {
        out += &grid(
            &[
                Column::left("figure"),
                Column::left("kind"),
                Column::right("rows"),
                Column::right("median |error|"),
                Column::right("worst |error|"),
                Column::right("inside the band"),
            ],
            a.figures
                .iter()
                .map(|f| {
                    let g = &f.group.summary;
                    let band = match f.group.banded {
                        0 => "no band".to_string(),
                        banded => format!("{} of {banded}", f.group.in_band),
                    };
                    vec![
                        f.pick.label.to_string(),
                        f.pick.shown.clone(),
                        g.rows.to_string(),
                        format!("{:.1}%", g.median_abs_pct),
                        format!("{:.1}% ({})", g.worst_abs_pct, g.worst_id),
                        band,
                    ]
                })
                .collect(),
        );
    }
    for f in &a.figures {
        if let Some(note) = &f.pick.note {
            out += &format!("{}: {note}\n", f.pick.label);
        }
    }
    if let Some(note) = &a.note {
        out += &format!("{note}\n");
    }
    out
}

/// The training speed section: the optimizer step, tokens/s over every GPU and on one, the band
/// and the basis.
fn training_speed_lines(s: &TrainSpeed) -> String {
    format!(
        "\nspeed          a training step at {:.0}% of the tensor throughput\nstep           {:.3} s\ntokens         {:.0} tokens/s ({:.0} per GPU; band {:.0}–{:.0})\nbasis          {}\n",
        s.utilisation * 100.0,
        s.train_step_s,
        s.train_tokens_per_s,
        s.train_tokens_per_s_per_gpu,
        s.train_tokens_per_s_low,
        s.train_tokens_per_s_high,
        s.basis
    )
}

/// The speed section: each figure, the band, the basis and the command that measures it.
fn speed_lines(s: &Speed) -> String {
    let prefill = match (s.prefill_tokens_per_s, s.ttft_s) {
        (Some(rate), Some(ttft)) => format!("{rate:.0} tokens/s (first token after {ttft:.2} s)"),
        _ => "not predicted: the card's maker publishes no tensor throughput".to_string(),
    };
    let mut out = format!(
        "\nspeed          a roofline at concurrency {}\nprefill        {prefill}\ndecode         {:.1} tokens/s per request\noutput         {:.1} tokens/s over all requests (band {:.1}–{:.1})\nbasis          {}\n",
        s.concurrency,
        s.decode_tokens_per_s,
        s.output_tokens_per_s,
        s.low,
        s.high,
        s.basis
    );
    if let Some(command) = &s.measure {
        out += &format!("measure it     {command}\n");
    }
    out
}

/// A serving runtime's pool as its own log would put it, and the settings it applied.
fn serving_lines(s: &Serving, units: Units) -> String {
    let mut out = format!(
        "\n{} KV pool   {} per GPU ({:.2} GiB)\nKV tokens      {}\n",
        s.runtime,
        s.kv_pool_bytes.display(units),
        s.kv_pool_bytes.gib(),
        s.kv_tokens
    );
    if let Some(blocks) = s.kv_blocks {
        out += &format!("KV blocks      {blocks}\n");
    }
    out += &format!(
        "concurrency    {:.2}x at {} tokens per request\nstarts         {}\n",
        s.max_concurrency,
        s.context_tokens,
        if s.starts { "yes" } else { "no" }
    );
    if let Some(host) = s.host.bytes {
        out += &format!("system RAM     {}\n", host.display(units));
    }
    if let Some(reason) = &s.reason {
        out += &format!("reason: {reason}\n");
    }
    let settings: Vec<String> = s
        .settings
        .iter()
        .map(|setting| match &setting.default_from {
            Some(from) => format!("{}={} ({from})", setting.key, setting.value),
            None => format!("{}={}", setting.key, setting.value),
        })
        .collect();
    out += &format!("settings       {}\n", settings.join(", "));
    if let Some(command) = &s.command {
        out += &format!("launch         {command}\n");
    }
    out
}

/// `fit`'s last line: the command that starts the planned deployment.
pub fn launch_line(command: Option<&str>) -> String {
    command.map_or_else(String::new, |c| format!("\nlaunch              {c}\n"))
}

/// The kind GPU counts are counted of: the smallest of unlike devices.
fn alike_gpu(s: &Scenario) -> String {
    let mut alike = s.clone();
    alike.make_alike();
    alike.gpu
}

pub fn serving_plan(p: &ServingPlan, s: &Scenario) -> String {
    let or_none = |v: Option<String>, none: &str| v.unwrap_or_else(|| none.to_string());
    let mut out = format!(
        "concurrency         {:.2}x at {} tokens per request\nmax context         {} for {} concurrent request(s)\nsmallest GPU        {}\nfewest GPUs         {}\n\n",
        p.max_concurrency,
        p.context_tokens,
        or_none(p.max_context.map(|t| format!("{t} tokens")), "none fits"),
        p.users,
        or_none(p.smallest_gpu.clone(), "none in the catalogue"),
        or_none(
            p.fewest_gpus.map(|n| format!("{n} × {}", alike_gpu(s))),
            "more than 64"
        ),
    );
    if let Some(quant) = &p.best_quant {
        out += &format!("best quant          {quant} with every layer on the GPU\n");
    }
    if let Some(layers) = p.max_gpu_layers {
        out += &format!("max -ngl            {layers} at {}\n\n", s.quant);
    }
    if let Some(target) = p.speed_target {
        out += &format!(
            "at {target} tokens/s each: smallest GPU {}, fewest GPUs {}, most requests {}\n\n",
            or_none(p.smallest_gpu_for_speed.clone(), "none in the catalogue"),
            or_none(
                p.fewest_gpus_for_speed
                    .map(|n| format!("{n} × {}", alike_gpu(s))),
                "more than 64"
            ),
            or_none(p.most_users_at_speed.map(|n| n.to_string()), "none"),
        );
    }
    out += &grid(
        &[Column::right("context"), Column::right("concurrency")],
        p.curve
            .iter()
            .map(|(tokens, c)| vec![tokens.to_string(), format!("{c:.2}x")])
            .collect(),
    );
    out
}

pub fn solution(s: &Solution, units: Units) -> String {
    let or_none = |v: Option<u32>| {
        v.map(|n| n.to_string())
            .unwrap_or_else(|| "does not fit at 1".to_string())
    };
    let mut out = format!(
        "usable per GPU      {}\nfixed               {}\nper sample          {}\nmax micro-batch     {}   (the safe-batch rule: (usable − fixed) / per-sample)\nmax sequence        {}\n",
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
    let columns: Vec<Column> = std::iter::once(t.corner.as_str())
        .chain(t.columns.iter().map(String::as_str))
        .map(Column::left)
        .collect();
    let rows = t
        .rows
        .iter()
        .map(|r| {
            std::iter::once(r.label.clone())
                .chain(r.cells.iter().map(|c| c.text.clone()))
                .collect()
        })
        .collect();
    grid(&columns, rows) + &t.note + "\n"
}

/// `vramfit list models [--search WORDS]`: one row per preset the search finds.
pub fn models_table(search: &str) -> String {
    let rows = PRESETS
        .iter()
        .filter(|p| p.matches(search))
        .map(|p| {
            let a = &p.arch;
            vec![
                p.id.to_string(),
                p.name.to_string(),
                a.family().to_string(),
                params_label(a.param_count()),
                a.active_param_count().map(params_label).unwrap_or_default(),
                p.checkpoint.0.to_string(),
                a.layers.to_string(),
                a.hidden.to_string(),
                format!("{}/{}", a.heads, a.kv_heads),
                a.vocab.to_string(),
            ]
        })
        .collect();
    grid(
        &[
            Column::left("id"),
            Column::left("name"),
            Column::left("family"),
            Column::right("params"),
            Column::right("active"),
            Column::left("checkpoint"),
            Column::right("layers"),
            Column::right("hidden"),
            Column::right("heads/kv"),
            Column::right("vocab"),
        ],
        rows,
    )
}

/// Where a catalogue GPU's capacity comes from, for `vramfit list gpus`.
fn capacity_from(g: &Gpu) -> &'static str {
    match (g.unified, g.smi_total_mib) {
        (Some(Unified::AppleWorkingSet), _) => "unified: Metal working set",
        (Some(Unified::SharedPool { .. }), _) => "unified: shared pool",
        (Some(Unified::CarveOut { .. }), _) => "unified: firmware carve-out",
        (None, Some(_)) => "nvidia-smi total",
        (None, None) => "advertised",
    }
}

/// `vramfit list gpus`: one row per catalogue GPU, smallest first.
pub fn gpus_table() -> String {
    let rows = GPUS
        .iter()
        .map(|g| {
            let capacity = g.capacity();
            vec![
                g.id.to_string(),
                g.name.to_string(),
                format!("{} GB", g.advertised_gib),
                format!("{:.2} GiB", capacity.as_f64() / GIB as f64),
                format!("{} MiB", capacity.0 / MIB),
                capacity_from(g).to_string(),
            ]
        })
        .collect();
    grid(
        &[
            Column::left("id"),
            Column::left("name"),
            Column::right("advertised"),
            Column::right("capacity"),
            Column::right("MiB"),
            Column::left("capacity from"),
        ],
        rows,
    )
}

pub fn models(search: &str) -> Vec<Map<String, Value>> {
    PRESETS
        .iter()
        .filter(|p| p.matches(search))
        .map(|p| {
            let value = json!({"id": p.id, "name": p.name, "family": p.arch.family(), "params": p.arch.param_count().round(),
                "active_params": p.arch.active_param_count().map(f64::round), "checkpoint": p.checkpoint.0,
                "config": p.config, "layers": p.arch.layers,
                "hidden": p.arch.hidden, "heads": p.arch.heads, "kv_heads": p.arch.kv_heads, "vocab": p.arch.vocab});
            value.as_object().cloned().unwrap_or_default()
        })
        .collect()
}

pub fn gpus() -> Vec<Map<String, Value>> {
    GPUS.iter()
        .map(|g| {
            let value = json!({"id": g.id, "name": g.name, "advertised_gib": g.advertised_gib,
                "smi_total_mib": g.smi_total_mib, "capacity_bytes": g.capacity().0,
                "unified": g.is_unified()});
            value.as_object().cloned().unwrap_or_default()
        })
        .collect()
}
