//! llama-bench's `-o csv`, `-o json` and `-o jsonl`: every field by name (`test::get_fields`),
//! CSV with every value quoted, JSON with numbers and booleans typed.

use crate::{Bench, Format, Row};
use serde_json::{Map, Value};
use vramfit_units::{csv_fields, parse_f64};

/// A record's fields, whatever the format gave them as.
pub(crate) trait Fields {
    fn text(&self, key: &str) -> Option<String>;

    fn number(&self, key: &str) -> Option<f64> {
        parse_f64(self.text(key)?.trim())
    }

    fn whole(&self, key: &str) -> Option<u64> {
        self.number(key)
            .filter(|n| *n >= 0.0 && n.fract() == 0.0)
            .map(|n| n as u64)
    }
}

impl Fields for Map<String, Value> {
    fn text(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
            _ => None,
        }
    }
}

impl Fields for Vec<(String, String)> {
    fn text(&self, key: &str) -> Option<String> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }
}

fn row(fields: &impl Fields) -> Result<Row, String> {
    let count = |key: &str| fields.whole(key).and_then(|n| u32::try_from(n).ok());
    let (n_prompt, n_gen) = (count("n_prompt").unwrap_or(0), count("n_gen").unwrap_or(0));
    if n_prompt + n_gen == 0 {
        return Err("a record without n_prompt or n_gen".into());
    }
    let tokens_per_s = fields
        .number("avg_ts")
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or("a record without avg_ts")?;
    Ok(Row {
        model: fields.text("model_type").unwrap_or_default(),
        size_bytes: fields.whole("model_size"),
        params: fields.whole("model_n_params"),
        backend: fields.text("backends"),
        n_gpu_layers: count("n_gpu_layers"),
        // An int since flash attention became tri-state (-1 auto); a bool before.
        flash_attn: fields.number("flash_attn").and_then(|f| match f as i64 {
            1 => Some(true),
            0 => Some(false),
            _ => None,
        }),
        n_prompt,
        n_gen,
        n_depth: count("n_depth").unwrap_or(0),
        tokens_per_s,
        stddev: fields.number("stddev_ts"),
    })
}

fn collect<F: Fields>(format: Format, records: impl Iterator<Item = Result<F, String>>) -> Bench {
    let mut bench = Bench::empty(format);
    for record in records {
        match record.and_then(|r| {
            bench.build = bench.build.take().or_else(|| build(&r));
            row(&r)
        }) {
            Ok(row) => bench.rows.push(row),
            Err(why) => bench.warnings.push(why),
        }
    }
    bench
}

/// `build_commit (build_number)`, as the markdown's build line prints it.
fn build(fields: &impl Fields) -> Option<String> {
    let commit = fields.text("build_commit")?;
    Some(match fields.text("build_number") {
        Some(number) => format!("{commit} ({number})"),
        None => commit,
    })
}

pub fn json(text: &str) -> Option<Bench> {
    let Value::Array(records) = serde_json::from_str(text).ok()? else {
        return None;
    };
    let objects = records.into_iter().map(|r| match r {
        Value::Object(map) => Ok(map),
        _ => Err("a JSON record that is not an object".to_string()),
    });
    Some(collect(Format::Json, objects))
}

pub fn jsonl(text: &str) -> Option<Bench> {
    let objects = text.lines().filter(|l| !l.trim().is_empty()).map(|line| {
        match serde_json::from_str(line) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(format!(
                "not a JSON record: {}",
                line.chars().take(60).collect::<String>()
            )),
        }
    });
    let bench = collect(Format::Jsonl, objects);
    (!bench.rows.is_empty()).then_some(bench)
}

pub fn csv(text: &str) -> Option<Bench> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = csv_fields(lines.next()?);
    let known = ["avg_ts", "n_prompt", "n_gen"];
    if !known.iter().all(|k| header.iter().any(|h| h == k)) {
        return None;
    }
    let records = lines.map(|line| {
        let values = csv_fields(line);
        if values.len() != header.len() {
            return Err(format!(
                "a CSV line of {} fields, not {}",
                values.len(),
                header.len()
            ));
        }
        Ok(header.iter().cloned().zip(values).collect::<Vec<_>>())
    });
    Some(collect(Format::Csv, records))
}
