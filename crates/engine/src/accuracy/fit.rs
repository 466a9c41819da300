//! The rule the decode constants are set by, executable: least squares of the decode step time's
//! relative error on each constant's fit rows (speed-scenarios.csv's `fit` column), the step
//! timed by the speed model itself at trial values of the constant (`DecodeParts::seconds`). The
//! step is linear in a share's inverse and in the time per layer, so each fit is a small linear
//! least squares whose coefficients are read off the model; a share the rule puts past the peak
//! is held at the peak and a time it puts below none at none, each refitting the other.

use super::records;
use super::speed::compare_speed;
use crate::estimate::{decode_parts_of, Band, DecodeParts, Efficiency};
use crate::estimate::{
    LLAMA_CPP_CUDA, LLAMA_CPP_CUDA_PRE_AMPERE, LLAMA_CPP_METAL, LLAMA_CPP_METAL_2024,
    LLAMA_CPP_ROCM, LLAMA_CPP_ROCM_WAVE64, LLAMA_CPP_VULKAN,
};
use crate::query::scenario_from_query;
use serde::Serialize;

/// What a constant's rule sets.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Form {
    /// The weights' share (and the cache's and experts' where the constant repeats it) and the
    /// time per layer together; then the time again beside the share as committed.
    ShareAndTime,
    /// The time per layer alone, the shares held.
    Time,
    /// The routed experts' share alone, the rest held.
    Experts,
}

/// A constant the rule sets: its name, the `fit` tag of its rows (those of them that run it), its
/// committed value, its form, and the rounding its doc comment states.
#[derive(Clone, Copy, Debug)]
pub struct FitConstant {
    pub name: &'static str,
    pub rows: &'static str,
    pub constant: Efficiency,
    pub form: Form,
    /// A share's rounding (0.005: to the point) and a time per layer's (seconds).
    pub share_within: f64,
    pub time_within: f64,
}

const fn entry(name: &'static str, rows: &'static str, constant: Efficiency) -> FitConstant {
    FitConstant {
        name,
        rows,
        constant,
        form: Form::ShareAndTime,
        share_within: 0.005,
        time_within: 0.5e-6,
    }
}

/// The decode constants set by the step time's rule, each as its doc comment states it
/// (crates/engine/src/estimate/serving/llamacpp.rs). `LLAMA_CPP_CUDA_2024`'s clocked share,
/// ceilings and cycles are not linear in the step and are not refitted here.
pub const FITTED: &[FitConstant] = &[
    entry("LLAMA_CPP_CUDA", "LLAMA_CPP_CUDA.bandwidth", LLAMA_CPP_CUDA),
    FitConstant {
        form: Form::Time,
        ..entry(
            "LLAMA_CPP_CUDA_PRE_AMPERE",
            "LLAMA_CPP_CUDA_PRE_AMPERE.layer_s",
            LLAMA_CPP_CUDA_PRE_AMPERE,
        )
    },
    FitConstant {
        form: Form::Experts,
        ..entry("LLAMA_CPP_CUDA", "LLAMA_CPP_CUDA.experts", LLAMA_CPP_CUDA)
    },
    entry(
        "LLAMA_CPP_METAL",
        "LLAMA_CPP_METAL.bandwidth",
        LLAMA_CPP_METAL,
    ),
    FitConstant {
        form: Form::Experts,
        ..entry(
            "LLAMA_CPP_METAL",
            "LLAMA_CPP_METAL.experts",
            LLAMA_CPP_METAL,
        )
    },
    entry(
        "LLAMA_CPP_METAL_2024",
        "LLAMA_CPP_METAL_2024.bandwidth",
        LLAMA_CPP_METAL_2024,
    ),
    entry("LLAMA_CPP_ROCM", "LLAMA_CPP_ROCM.bandwidth", LLAMA_CPP_ROCM),
    FitConstant {
        // Two rows, two unknowns: "4.6 ms a step" over 32 layers, to 0.05 ms.
        time_within: 0.05e-3 / 32.0,
        ..entry(
            "LLAMA_CPP_ROCM_WAVE64",
            "LLAMA_CPP_ROCM_WAVE64.bandwidth",
            LLAMA_CPP_ROCM_WAVE64,
        )
    },
    FitConstant {
        // "1.57 ms" over 32 layers, to 0.01 ms.
        time_within: 0.005e-3 / 32.0,
        ..entry(
            "LLAMA_CPP_VULKAN",
            "LLAMA_CPP_VULKAN.bandwidth",
            LLAMA_CPP_VULKAN,
        )
    },
];

/// What the rule may set: the weights' share, the time per layer, the routed experts' share.
#[derive(Clone, Copy)]
enum Unknown {
    Share,
    Time,
    Experts,
}

/// `c` with the unknowns at `values` (a share as its inverse); a share the constant repeats in
/// the cache's or the experts' follows it.
fn trial(c: &Efficiency, unknowns: &[Unknown], values: &[f64]) -> Efficiency {
    let set = |b: Band, v: f64| Band { typical: v, ..b };
    let mut t = *c;
    for (u, &v) in unknowns.iter().zip(values) {
        match u {
            Unknown::Share => {
                t.bandwidth = set(c.bandwidth, 1.0 / v);
                if c.attention == c.bandwidth {
                    t.attention = t.bandwidth;
                }
                if c.experts == c.bandwidth {
                    t.experts = t.bandwidth;
                }
            }
            Unknown::Time => t.layer_s = set(c.layer_s, v),
            Unknown::Experts => t.experts = set(c.experts, 1.0 / v),
        }
    }
    t
}

/// A fit row: its id, measured step (1 / tokens per s) and decode parts.
pub struct FitRow {
    pub id: String,
    pub measured_s: f64,
    pub parts: DecodeParts,
}

/// The row's step as `c + Σ k·u` in the unknowns `u` (a share as its inverse, a time in
/// seconds), read off the model at `c`'s values and one step from them in each unknown.
fn linear(row: &FitRow, c: &Efficiency, unknowns: &[Unknown]) -> (f64, Vec<f64>) {
    let base: Vec<f64> = unknowns
        .iter()
        .map(|u| match u {
            Unknown::Share => 1.0 / c.bandwidth.typical,
            Unknown::Time => c.layer_s.typical,
            Unknown::Experts => 1.0 / c.experts.typical,
        })
        .collect();
    let at = |values: &[f64]| row.parts.seconds(&trial(c, unknowns, values));
    let step0 = at(&base);
    let k: Vec<f64> = (0..base.len())
        .map(|j| {
            let mut v = base.clone();
            let d = if matches!(unknowns[j], Unknown::Time) {
                1e-4
            } else {
                1.0
            };
            v[j] += d;
            (at(&v) - step0) / d
        })
        .collect();
    let c0 = step0 - k.iter().zip(&base).map(|(k, b)| k * b).sum::<f64>();
    (c0, k)
}

/// The unknowns minimising Σ ((c + Σ k·u) / m − 1)² over the rows: the normal equations of the
/// rows scaled by their measured step, solved by Gaussian elimination (one or two unknowns).
fn least_squares(rows: &[FitRow], c: &Efficiency, unknowns: &[Unknown]) -> Vec<f64> {
    let n = unknowns.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for row in rows {
        let (c0, k) = linear(row, c, unknowns);
        let m = row.measured_s;
        let target = 1.0 - c0 / m;
        for i in 0..n {
            for j in 0..n {
                a[i][j] += k[i] / m * k[j] / m;
            }
            a[i][n] += k[i] / m * target;
        }
    }
    for col in 0..n {
        let pivot_row = a[col].clone();
        for (i, row) in a.iter_mut().enumerate() {
            if i != col && pivot_row[col] != 0.0 {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    (0..n).map(|i| a[i][n] / a[i][i]).collect()
}

/// Σ of the squared relative errors of the step at `c`.
pub fn squared_error(rows: &[FitRow], c: &Efficiency) -> f64 {
    rows.iter()
        .map(|r| (r.parts.seconds(c) / r.measured_s - 1.0).powi(2))
        .sum()
}

/// One fit row as the report shows it: what its step reads, and what it reaches at the
/// committed constant: the share with the committed time taken out (the experts' share for
/// [`Form::Experts`]) and the time per layer it leaves beside its reads at the peak.
#[derive(Clone, Debug, Serialize)]
pub struct RowReach {
    pub id: String,
    pub measured_s: f64,
    pub dense_bytes: f64,
    pub expert_bytes: f64,
    pub cache_bytes: f64,
    pub layers: f64,
    pub share: f64,
    pub time_at_peak: Option<f64>,
}

/// A constant's rule against its committed value.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub name: &'static str,
    pub rows_tag: &'static str,
    pub form: Form,
    pub rows: Vec<RowReach>,
    /// The rule with every unknown free: the share (or the experts'), then the time per layer.
    pub free: Vec<f64>,
    /// What the rule holds: "the share at the peak" (the free share runs past it) or "no time"
    /// (the free time is negative), with the other unknown refitted.
    pub held: Option<&'static str>,
    /// The rule's share after any hold, and its time per layer beside the committed share.
    pub share: Option<f64>,
    pub time: Option<f64>,
    pub committed_share: f64,
    pub committed_time: f64,
    /// Σ squared relative error of the step at the committed constant.
    pub committed_error: f64,
    pub share_within: f64,
    pub time_within: f64,
    /// The committed band's low share and fast time end, and whether the cache's share follows
    /// the weights' (else the band's low end is read at the cache's own low share).
    pub band_low: f64,
    pub cache_follows_share: bool,
    pub band_fast_time: f64,
}

/// The rule's share and time for a [`Form::ShareAndTime`] constant, and what it held.
fn share_and_time(rows: &[FitRow], c: &Efficiency) -> (Vec<f64>, Option<&'static str>, f64) {
    use Unknown::{Share, Time};
    let free = least_squares(rows, c, &[Share, Time]);
    let (share, held) = if free[0] < 1.0 {
        (1.0, Some("the share at the peak"))
    } else if free[1] < 0.0 {
        let zero = trial(c, &[Time], &[0.0]);
        (
            1.0 / least_squares(rows, &zero, &[Share])[0],
            Some("no time"),
        )
    } else {
        (1.0 / free[0], None)
    };
    (vec![1.0 / free[0], free[1]], held, share)
}

/// The rule applied to `k` on `rows`, beside its committed value and what each row reaches.
pub fn fit_constant(k: &FitConstant, rows: Vec<FitRow>) -> Fit {
    use Unknown::{Experts, Share, Time};
    let c = &k.constant;
    let (free, held, share, time) = match k.form {
        Form::ShareAndTime => {
            let (free, held, share) = share_and_time(&rows, c);
            let time = match held {
                Some("no time") => 0.0,
                _ => least_squares(&rows, c, &[Time])[0],
            };
            (free, held, Some(share), Some(time))
        }
        Form::Time => {
            let t = least_squares(&rows, c, &[Time])[0];
            (vec![t], None, None, Some(t))
        }
        Form::Experts => {
            let e = 1.0 / least_squares(&rows, c, &[Experts])[0];
            (vec![e], None, Some(e), None)
        }
    };
    let (unknown, committed_share, band_low) = match k.form {
        Form::Experts => (Experts, c.experts.typical, c.experts.low),
        _ => (Share, c.bandwidth.typical, c.bandwidth.low),
    };
    let at_peak = trial(c, &[Share], &[1.0]);
    let reach = |r: &FitRow| {
        let (c0, s) = linear(r, c, &[unknown]);
        let (t0, t) = linear(r, &at_peak, &[Time]);
        RowReach {
            id: r.id.clone(),
            measured_s: r.measured_s,
            dense_bytes: r.parts.dense_bytes,
            expert_bytes: r.parts.expert_bytes,
            cache_bytes: r.parts.cache_bytes,
            layers: r.parts.layers,
            share: s[0] / (r.measured_s - c0),
            time_at_peak: (k.form != Form::Experts).then(|| (r.measured_s - t0) / t[0]),
        }
    };
    Fit {
        name: k.name,
        rows_tag: k.rows,
        form: k.form,
        rows: rows.iter().map(reach).collect(),
        committed_error: squared_error(&rows, c),
        free,
        held,
        share,
        time,
        committed_share,
        committed_time: c.layer_s.typical,
        share_within: k.share_within,
        time_within: k.time_within,
        band_low,
        cache_follows_share: c.attention == c.bandwidth,
        band_fast_time: c.layer_s.high,
    }
}

/// Every constant of [`FITTED`] fitted on its rows: the decode rows speed-scenarios.csv tags with
/// its `rows` and that run it, as `compare_speed` maps them.
pub fn fit_speed_constants(measured_csv: &str, scenarios_csv: &str) -> Vec<Fit> {
    let (compared, _) = compare_speed(measured_csv, scenarios_csv);
    let scenarios = records(scenarios_csv);
    let query = |id: &str| {
        let row = scenarios
            .iter()
            .find(|r| r.get("id").map(String::as_str) == Some(id));
        row.and_then(|r| r.get("query"))
            .cloned()
            .unwrap_or_default()
    };
    FITTED
        .iter()
        .map(|k| {
            let rows = compared
                .iter()
                .filter(|r| r.fit.as_deref() == Some(k.rows) && r.figure == "decode_tokens_per_s")
                .filter_map(|r| {
                    let parts = decode_parts_of(&scenario_from_query(&query(&r.id)).0)?;
                    parts.runs(&k.constant).then(|| FitRow {
                        id: r.id.clone(),
                        measured_s: 1.0 / r.measured,
                        parts,
                    })
                })
                .collect();
            fit_constant(k, rows)
        })
        .collect()
}
