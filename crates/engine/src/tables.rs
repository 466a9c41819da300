//! The quick-reference tables, computed by the engine rather than typed in: chapter 62's inference,
//! QLoRA-training and GPU-recommendation tables, and the 16 GB OOM budget guide's budget table. Each cell carries the
//! scenario changes that produce it, so the page can highlight and apply it.

use crate::dtype::{HALF_BYTES, NIBBLE_BYTES};
use crate::estimate::{breakdown, Breakdown, ComponentId, Verdict};
use crate::gpu_catalogue::{Gpu, GPUS};
use crate::model::{Preset, CATALOGUE_PRESETS, PRESETS};
use crate::scenario::Scenario;
use crate::units::{Bytes, Units};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub text: String,
    pub bytes: Option<u64>,
    pub verdict: Option<Verdict>,
    /// The `key=value` pairs, applied to the base scenario, that this cell describes.
    pub pairs: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub label: String,
    pub cells: Vec<Cell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// `inference`, `qlora`, `gpus` or `budget`: the page's `data-testid=table-<id>`.
    pub id: String,
    pub title: String,
    pub corner: String,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    pub note: String,
}

impl Table {
    pub fn to_markdown(&self) -> String {
        let mut out = format!("| {} | {} |\n", self.corner, self.columns.join(" | "));
        out += &format!("|{}\n", "---|".repeat(self.columns.len() + 1));
        for row in &self.rows {
            let cells: Vec<&str> = row.cells.iter().map(|c| c.text.as_str()).collect();
            out += &format!("| {} | {} |\n", row.label, cells.join(" | "));
        }
        out
    }

    pub fn to_csv(&self) -> String {
        let quote = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = std::iter::once(quote(&self.corner))
            .chain(self.columns.iter().map(|c| quote(c)))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for row in &self.rows {
            let line: Vec<String> = std::iter::once(quote(&row.label))
                .chain(row.cells.iter().map(|c| quote(&c.text)))
                .collect();
            out += &line.join(",");
            out.push('\n');
        }
        out
    }
}

impl Cell {
    /// True when the scenario already has every value this cell sets.
    pub fn matches(&self, scenario: &Scenario) -> bool {
        self.matches_pairs(&scenario.all_pairs())
    }

    /// As [`Cell::matches`], against `Scenario::all_pairs` computed once for many cells.
    pub fn matches_pairs(&self, current: &[(&str, String)]) -> bool {
        !self.pairs.is_empty()
            && self
                .pairs
                .iter()
                .all(|(k, v)| current.iter().any(|(ck, cv)| ck == k && cv == v))
    }
}

fn apply(base: &Scenario, pairs: &[(&str, String)]) -> Scenario {
    let mut s = base.clone();
    for (k, v) in pairs {
        // Table pairs are constants of this module; a failure would leave the base value.
        let _ = s.set(k, v);
    }
    s
}

fn owned(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// A cell of `pick`'s bytes for `base` with `pairs` applied. `pick` is a function pointer, not a
/// generic, so the estimate is compiled once for every table.
fn estimate_cell(
    base: &Scenario,
    pairs: Vec<(&str, String)>,
    pick: fn(&Breakdown) -> Bytes,
    units: Units,
) -> Cell {
    let s = apply(base, &pairs);
    match breakdown(&s) {
        Ok(b) => {
            let bytes = pick(&b);
            Cell {
                text: bytes.display(units),
                bytes: Some(bytes.0),
                verdict: Some(b.verdict()),
                pairs: owned(&pairs),
            }
        }
        Err(_) => Cell {
            text: "—".to_string(),
            bytes: None,
            verdict: None,
            pairs: owned(&pairs),
        },
    }
}

/// The parts of the current scenario that carry into every table: method, GPU and budget. Two
/// scenarios with the same inputs get the same tables, so callers can memoise on this.
pub fn table_inputs(current: &Scenario) -> Scenario {
    Scenario {
        method: current.method,
        gpu: current.gpu.clone(),
        vram: current.vram,
        reserved: current.reserved,
        margin: current.margin,
        tight: current.tight,
        units: current.units,
        double_quant: current.double_quant,
        ..Scenario::default()
    }
}

const SIZES: [(&str, &str); 4] = [("1B", "1B"), ("7-8B", "8B"), ("13B", "13B"), ("70B", "70B")];

/// Chapter 62, "Inference (Model Loading Only)": weights (and quantization constants) per precision.
pub fn inference_table(current: &Scenario) -> Table {
    let base = table_inputs(current);
    let precisions = [("FP16", "fp16"), ("INT8", "int8"), ("INT4/NF4", "nf4")];
    let rows = SIZES
        .iter()
        .map(|(label, params)| Row {
            label: label.to_string(),
            cells: precisions
                .iter()
                .map(|(_, w)| {
                    let pairs = vec![
                        ("mode", "inference".to_string()),
                        ("params", params.to_string()),
                        ("weights", w.to_string()),
                    ];
                    estimate_cell(
                        &base,
                        pairs,
                        |b| {
                            b.bytes_of(ComponentId::Weights)
                                .saturating_add(b.bytes_of(ComponentId::QuantConstants))
                        },
                        current.units,
                    )
                })
                .collect(),
        })
        .collect();
    Table {
        id: "inference".to_string(),
        title: "Inference (model loading only)".to_string(),
        corner: "Model".to_string(),
        columns: precisions.iter().map(|(c, _)| c.to_string()).collect(),
        rows,
        note: "Weights plus quantization constants; the KV cache and working set come on top."
            .to_string(),
    }
}

/// Chapter 62, "Training (QLoRA with Gradient Checkpointing)".
pub fn qlora_table(current: &Scenario) -> Table {
    let base = table_inputs(current);
    let shapes = [
        ("Batch 1, Seq 2K", 1, 2048),
        ("Batch 4, Seq 512", 4, 512),
        ("Batch 4, Seq 1K", 4, 1024),
    ];
    let rows = SIZES[1..]
        .iter()
        .map(|(label, params)| Row {
            label: label.trim_start_matches("7-").to_string(),
            cells: shapes
                .iter()
                .map(|(_, batch, seq)| {
                    let pairs = vec![
                        ("mode", "qlora".to_string()),
                        ("params", params.to_string()),
                        ("weights", "nf4".to_string()),
                        ("checkpointing", "full".to_string()),
                        ("batch", batch.to_string()),
                        ("seq", seq.to_string()),
                    ];
                    estimate_cell(&base, pairs, |b| b.total, current.units)
                })
                .collect(),
        })
        .collect();
    Table {
        id: "qlora".to_string(),
        title: "Training (QLoRA with gradient checkpointing)".to_string(),
        corner: "Model".to_string(),
        columns: shapes.iter().map(|(c, _, _)| c.to_string()).collect(),
        rows,
        note: "Total per GPU, LoRA r=16 on q,v.".to_string(),
    }
}

/// A column of the GPU table: its title, the scenario pairs it sets, and the fewest bytes per
/// parameter its weights can take (16-bit, or 4-bit for quantized linear layers), so a preset
/// whose weights alone exceed the card is skipped without an estimate: the catalogue runs to a
/// trillion parameters.
struct TableMethod(&'static str, &'static [(&'static str, &'static str)], f64);

/// The GPU table's columns.
const GPU_TABLE_METHODS: [TableMethod; 5] = [
    TableMethod(
        "Inference FP16",
        &[("mode", "inference"), ("weights", "fp16")],
        HALF_BYTES,
    ),
    TableMethod(
        "Inference NF4",
        &[("mode", "inference"), ("weights", "nf4")],
        NIBBLE_BYTES,
    ),
    TableMethod(
        "Full FT",
        &[("mode", "full"), ("checkpointing", "full")],
        HALF_BYTES,
    ),
    TableMethod(
        "LoRA",
        &[("mode", "lora"), ("checkpointing", "full")],
        HALF_BYTES,
    ),
    TableMethod(
        "QLoRA",
        &[("mode", "qlora"), ("checkpointing", "full")],
        NIBBLE_BYTES,
    ),
];

/// The GPU table's rows, by catalogue id.
const GPU_TABLE_GPUS: [&str; 9] = [
    "t4", "l4", "rtx-3090", "rtx-4090", "a100-40", "l40s", "a100-80", "h100-80", "h200",
];

/// Chapter 62, "GPU Recommendations": the largest catalogue model each GPU fits, per method,
/// at batch 1 × 2048 tokens (training with checkpointing).
pub fn gpu_table(current: &Scenario) -> Table {
    let base = table_inputs(current);
    let models = catalogue_by_size();
    let rows = GPU_TABLE_GPUS
        .iter()
        .filter_map(|id| GPUS.iter().find(|g| g.id == *id))
        .map(|g| Row {
            label: g.name.to_string(),
            cells: GPU_TABLE_METHODS
                .iter()
                .map(|method| largest_fitting_cell(&base, g, method, &models))
                .collect(),
        })
        .collect();
    Table {
        id: "gpus".to_string(),
        title: "GPU recommendations (largest preset that fits)".to_string(),
        corner: "GPU".to_string(),
        columns: GPU_TABLE_METHODS.iter().map(|m| m.0.to_string()).collect(),
        rows,
        note: "Batch 1 × 2048 tokens; training with gradient checkpointing; your margin and in-use memory apply.".to_string(),
    }
}

/// The catalogue presets by published size, in catalogue order among equals: each preset goes
/// in after those no larger. A handful of presets; the standard library's stable sort would bring
/// its merge machinery into the page's wasm.
fn catalogue_by_size() -> Vec<&'static Preset> {
    let mut models: Vec<&Preset> = Vec::with_capacity(CATALOGUE_PRESETS);
    for preset in &PRESETS[..CATALOGUE_PRESETS] {
        let at = models.partition_point(|m| {
            m.published_params
                .total_cmp(&preset.published_params)
                .is_le()
        });
        models.insert(at, preset);
    }
    models
}

/// The cell naming the largest of `models` (smallest first) that fits `gpu` under `method`.
fn largest_fitting_cell(
    base: &Scenario,
    gpu: &Gpu,
    TableMethod(_, method, least_bytes_per_param): &TableMethod,
    models: &[&Preset],
) -> Cell {
    let capacity = gpu.capacity().as_f64();
    let gpu_base = Scenario {
        vram: None,
        gpu: gpu.id.to_string(),
        ..base.clone()
    };
    let method_pairs: Vec<(&str, String)> =
        method.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let best = models.iter().rev().find_map(|m| {
        if m.arch.param_count() * least_bytes_per_param > capacity {
            return None;
        }
        let mut pairs = method_pairs.clone();
        pairs.push(("model", m.id.to_string()));
        let fits = breakdown(&apply(&gpu_base, &pairs)).ok()?.verdict().fits();
        fits.then_some((m.name, pairs))
    });
    match best {
        Some((name, mut pairs)) => {
            pairs.push(("gpu", gpu.id.to_string()));
            Cell {
                text: name.to_string(),
                bytes: None,
                verdict: Some(Verdict::Fits),
                pairs: owned(&pairs),
            }
        }
        None => Cell {
            text: "—".to_string(),
            bytes: None,
            verdict: Some(Verdict::Oom),
            pairs: Vec::new(),
        },
    }
}

/// The OOM budget guide's table: model × precision × batch × checkpointing → estimate, safe? — on the chosen GPU.
pub fn budget_table(current: &Scenario) -> Table {
    let base = table_inputs(current);
    let configs: [(&str, &str, u32, u32, bool); 8] = [
        ("smollm2-135m", "fp16", 16, 512, false),
        ("smollm2-135m", "fp16", 32, 512, false),
        ("tinyllama-1.1b", "fp32", 4, 1024, false),
        ("tinyllama-1.1b", "fp16", 4, 1024, false),
        ("tinyllama-1.1b", "fp16", 2, 1024, true),
        ("tinyllama-1.1b", "fp16", 1, 1024, true),
        ("llama-3.2-3b", "fp16", 1, 1024, true),
        ("llama-2-7b", "fp16", 1, 1024, true),
    ];
    let rows = configs
        .iter()
        .map(|(model, weights, batch, seq, ckpt)| {
            let pairs = vec![
                ("model", model.to_string()),
                ("mode", "full".to_string()),
                ("weights", weights.to_string()),
                ("batch", batch.to_string()),
                ("seq", seq.to_string()),
                (
                    "checkpointing",
                    if *ckpt { "full" } else { "none" }.to_string(),
                ),
            ];
            let cell = estimate_cell(&base, pairs, |b| b.total, current.units);
            let safe = match cell.verdict {
                Some(Verdict::Fits) => "Yes",
                Some(Verdict::Tight) => "Tight",
                _ => "OOM",
            };
            let name = PRESETS
                .iter()
                .find(|p| p.id == *model)
                .map(|p| p.name)
                .unwrap_or(model);
            let text = |t: String| Cell {
                text: t,
                bytes: None,
                verdict: None,
                pairs: cell.pairs.clone(),
            };
            Row {
                label: name.to_string(),
                cells: vec![
                    text(weights.to_ascii_uppercase()),
                    text(batch.to_string()),
                    text(if *ckpt { "Yes" } else { "No" }.to_string()),
                    cell.clone(),
                    Cell {
                        text: safe.to_string(),
                        ..cell
                    },
                ],
            }
        })
        .collect();
    let gpu_name = current.resolve().map(|r| r.gpu_name()).unwrap_or_default();
    Table {
        id: "budget".to_string(),
        title: format!("VRAM budget table for {gpu_name}"),
        corner: "Model".to_string(),
        columns: ["Precision", "Batch", "Checkpointing", "Est. VRAM", "Safe?"]
            .iter()
            .map(|c| c.to_string())
            .collect(),
        rows,
        note: "Full fine-tune with AdamW, as the OOM budget guide plans it.".to_string(),
    }
}

pub fn all_tables(current: &Scenario) -> Vec<Table> {
    vec![
        inference_table(current),
        qlora_table(current),
        gpu_table(current),
        budget_table(current),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lesson_inference_table_matches_chapter_62() {
        let s = Scenario {
            method: crate::workload::Method::Lesson,
            ..Scenario::default()
        };
        let t = inference_table(&s);
        let text: Vec<Vec<&str>> = t
            .rows
            .iter()
            .map(|r| r.cells.iter().map(|c| c.text.as_str()).collect())
            .collect();
        assert_eq!(text[0], ["2.00 GB", "1.00 GB", "0.50 GB"]);
        assert_eq!(text[1], ["16.00 GB", "8.00 GB", "4.00 GB"]);
        assert_eq!(text[2], ["26.00 GB", "13.00 GB", "6.50 GB"]);
        assert_eq!(text[3], ["140.00 GB", "70.00 GB", "35.00 GB"]);
    }

    #[test]
    fn markdown_and_csv_have_every_row() {
        let t = budget_table(&Scenario::default());
        assert_eq!(t.to_markdown().lines().count(), t.rows.len() + 2);
        assert_eq!(t.to_csv().lines().count(), t.rows.len() + 1);
    }

    #[test]
    fn a_cell_matches_the_scenario_it_describes() {
        let t = qlora_table(&Scenario::default());
        let cell = &t.rows[0].cells[0];
        let mut s = Scenario::default();
        for (k, v) in &cell.pairs {
            s.set(k, v).unwrap();
        }
        assert!(cell.matches(&s));
        assert!(!t.rows[0].cells[1].matches(&s));
    }

    #[test]
    fn bigger_gpus_fit_models_at_least_as_large() {
        let t = gpu_table(&Scenario::default());
        assert_eq!(t.rows.len(), 9);
        let qlora_on_t4 = &t.rows[0].cells[4].text;
        assert_ne!(qlora_on_t4, "—", "QLoRA of some preset fits a T4");
    }
}
