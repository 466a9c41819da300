//! llama-bench's default output: a markdown table, its columns chosen by the flags given
//! (`markdown_printer::print_header`), so they are read by name.

use crate::{read_test, Bench, Format, Row};
use vramfit_units::parse_f64;

/// The table's columns this reader uses, by their printed names.
struct Columns {
    model: usize,
    size: Option<usize>,
    params: Option<usize>,
    backend: Option<usize>,
    ngl: Option<usize>,
    fa: Option<usize>,
    test: usize,
    speed: usize,
}

impl Columns {
    fn of(header: &[&str]) -> Option<Columns> {
        let find = |name: &str| header.iter().position(|h| *h == name);
        Some(Columns {
            model: find("model")?,
            size: find("size"),
            params: find("params"),
            backend: find("backend"),
            ngl: find("ngl"),
            fa: find("fa"),
            test: find("test")?,
            speed: find("t/s")?,
        })
    }
}

/// The cells of a table line: `| a | b |` → `["a", "b"]`.
fn cells(line: &str) -> Option<Vec<&str>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(str::trim).collect())
}

/// Every table's rows, and the build line.
pub fn parse(text: &str) -> Option<Bench> {
    let mut bench = Bench::empty(Format::Markdown);
    let mut columns: Option<Columns> = None;
    let mut found = false;
    for line in text.lines() {
        if let Some(build) = line.trim().strip_prefix("build:") {
            bench.build = Some(build.trim().to_string());
            continue;
        }
        let Some(cells) = cells(line) else {
            columns = None;
            continue;
        };
        if let Some(header) = Columns::of(&cells) {
            columns = Some(header);
            found = true;
        } else if cells
            .iter()
            .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':')))
        {
            continue;
        } else if let Some(c) = &columns {
            match row(c, &cells) {
                Some(row) => bench.rows.push(row),
                None => bench.warnings.push(format!("not read: {}", line.trim())),
            }
        }
    }
    found.then_some(bench)
}

fn row(c: &Columns, cells: &[&str]) -> Option<Row> {
    let cell = |i: usize| cells.get(i).copied();
    let (n_prompt, n_gen, n_depth) = read_test(cell(c.test)?)?;
    let (mean, stddev) = match cell(c.speed)?.split_once('±') {
        Some((mean, sd)) => (mean.trim(), parse_f64(sd.trim())),
        None => (cell(c.speed)?.trim(), None),
    };
    let tokens_per_s = parse_f64(mean).filter(|v| v.is_finite() && *v > 0.0)?;
    Some(Row {
        model: cell(c.model)?.to_string(),
        size_bytes: c.size.and_then(cell).and_then(size_bytes),
        params: c.params.and_then(cell).and_then(params),
        backend: c.backend.and_then(cell).map(str::to_string),
        n_gpu_layers: c.ngl.and_then(cell).and_then(|n| n.parse().ok()),
        flash_attn: c.fa.and_then(cell).and_then(|f| match f {
            "1" | "on" | "true" => Some(true),
            "0" | "off" | "false" => Some(false),
            _ => None,
        }),
        n_prompt,
        n_gen,
        n_depth,
        tokens_per_s,
        stddev,
    })
}

/// `3.56 GiB`, `712.33 MiB`: the printed, rounded size in bytes.
fn size_bytes(text: &str) -> Option<u64> {
    let (number, unit) = text.split_once(' ')?;
    let scale = match unit.trim() {
        "GiB" => (1u64 << 30) as f64,
        "MiB" => (1u64 << 20) as f64,
        "KiB" => 1024.0,
        _ => return None,
    };
    number_of(number, scale)
}

/// `6.74 B`, `494.03 M`: the printed, rounded parameter count.
fn params(text: &str) -> Option<u64> {
    let (number, unit) = text.split_once(' ')?;
    let scale = match unit.trim() {
        "T" => 1e12,
        "B" => 1e9,
        "M" => 1e6,
        "K" => 1e3,
        _ => return None,
    };
    number_of(number, scale)
}

fn number_of(number: &str, scale: f64) -> Option<u64> {
    let value = parse_f64(number.trim())?;
    (value.is_finite() && value >= 0.0).then(|| (value * scale).round() as u64)
}
