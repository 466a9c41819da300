//! The rule the decode constants are set by, executable: least squares of the decode step time's
//! relative error on each constant's fit rows (speed-scenarios.csv's `fit` column), the step
//! timed by the speed model itself at trial values of the constant (`DecodeParts::seconds`). The
//! step is linear in a share's inverse and in the time per layer, so each fit is a small linear
//! least squares whose coefficients are read off the model; a share the rule puts past the peak
//! is held at the peak and a time it puts below none at none, each refitting the other. A
//! clocked constant's share and ceilings, which a `min` makes nonlinear, are found by a
//! coordinate search (golden sections), the cycles per layer solved beside each trial.

use super::records;
use super::speed::compare_speed;
use crate::estimate::{decode_parts_of, DecodeParts, Efficiency, SmCeiling};
use crate::estimate::{
    LLAMA_CPP_CUDA, LLAMA_CPP_CUDA_2024, LLAMA_CPP_CUDA_2024_MMVQ, LLAMA_CPP_CUDA_PRE_AMPERE,
    LLAMA_CPP_METAL, LLAMA_CPP_METAL_2024, LLAMA_CPP_ROCM, LLAMA_CPP_ROCM_WAVE64, LLAMA_CPP_VULKAN,
    MLX_METAL,
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
    /// `clocked`: its share, the 16-bit kernel's ceiling per SM-cycle and the cycles per layer
    /// together (the quantized kernel's ceiling held), then the quantized kernel's ceiling
    /// alone, the rest held; each to its stated rounding.
    Clocked {
        dmmv_within: f64,
        mmvq_within: f64,
        cycles_within: f64,
    },
}

/// A constant the rule sets: its name, the `fit` tag of its rows (those of them that run it, or
/// run `also`), its committed value, its form, and the rounding its doc comment states.
#[derive(Clone, Copy, Debug)]
pub struct FitConstant {
    pub name: &'static str,
    pub rows: &'static str,
    pub constant: Efficiency,
    pub also: Option<Efficiency>,
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
        also: None,
        form: Form::ShareAndTime,
        share_within: 0.005,
        time_within: 0.5e-6,
    }
}

/// The decode constants set by the step time's rule, each as its doc comment states it
/// (crates/engine/src/estimate/serving/llamacpp.rs and mlx.rs).
pub const FITTED: &[FitConstant] = &[
    entry("MLX_METAL", "MLX_METAL.bandwidth", MLX_METAL),
    FitConstant {
        form: Form::Experts,
        ..entry("MLX_METAL", "MLX_METAL.experts", MLX_METAL)
    },
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
    FitConstant {
        // 89.3% to a tenth of a point; 6.42 bytes per SM-cycle; 10.9 GB/s per SM; 167,000
        // cycles to the thousand.
        also: Some(LLAMA_CPP_CUDA_2024_MMVQ),
        form: Form::Clocked {
            dmmv_within: 0.005,
            mmvq_within: 0.05e9,
            cycles_within: 500.0,
        },
        share_within: 0.0005,
        ..entry(
            "LLAMA_CPP_CUDA_2024.clocked",
            "LLAMA_CPP_CUDA_2024.bandwidth",
            LLAMA_CPP_CUDA_2024,
        )
    },
];

/// What the rule may set: the weights' share (as its inverse), the time per layer, the routed
/// experts' share (as its inverse); a clocked constant's share, ceilings and cycles per layer.
#[derive(Clone, Copy, PartialEq)]
enum Unknown {
    Share,
    Time,
    Experts,
    ClockedShare,
    Dmmv,
    Mmvq,
    Cycles,
}

/// `c` with each unknown at its value; a share the constant repeats in the cache's or the
/// experts' follows it, and a ceiling of the other kernel than `c`'s is left alone.
fn trial(c: &Efficiency, values: &[(Unknown, f64)]) -> Efficiency {
    let mut t = *c;
    for &(u, v) in values {
        match (u, t.clocked.as_mut()) {
            (Unknown::Share, _) => {
                t.bandwidth = 1.0 / v;
                if c.attention == c.bandwidth {
                    t.attention = t.bandwidth;
                }
                if c.experts == c.bandwidth {
                    t.experts = t.bandwidth;
                }
            }
            (Unknown::Time, _) => t.layer_s = v,
            (Unknown::Experts, _) => t.experts = 1.0 / v,
            (Unknown::ClockedShare, Some(k)) => k.bandwidth = v,
            (Unknown::Cycles, Some(k)) => k.layer_cycles = v,
            (Unknown::Dmmv, Some(k)) => {
                if let SmCeiling::PerCycle(_) = k.sm_ceiling {
                    k.sm_ceiling = SmCeiling::PerCycle(v);
                }
            }
            (Unknown::Mmvq, Some(k)) => {
                if let SmCeiling::PerSecond(_) = k.sm_ceiling {
                    k.sm_ceiling = SmCeiling::PerSecond(v);
                }
            }
            (_, None) => {}
        }
    }
    t
}

/// `u`'s value in `c`, as [`trial`] takes it.
fn value_of(c: &Efficiency, u: Unknown) -> f64 {
    let k = c.clocked;
    match u {
        Unknown::Share => 1.0 / c.bandwidth,
        Unknown::Time => c.layer_s,
        Unknown::Experts => 1.0 / c.experts,
        Unknown::ClockedShare => k.map_or(0.0, |k| k.bandwidth),
        Unknown::Cycles => k.map_or(0.0, |k| k.layer_cycles),
        Unknown::Dmmv | Unknown::Mmvq => match k.map(|k| k.sm_ceiling) {
            Some(SmCeiling::PerCycle(b)) if u == Unknown::Dmmv => b,
            Some(SmCeiling::PerSecond(b)) if u == Unknown::Mmvq => b,
            _ => 0.0,
        },
    }
}

/// A fit row: its id, measured step (1 / tokens per s), the constant it runs and its parts.
pub struct FitRow {
    pub id: String,
    pub measured_s: f64,
    pub constant: Efficiency,
    pub parts: DecodeParts,
}

/// The row's step as `c + Σ k·u` in the linear unknowns `u` (a share as its inverse, a time in
/// seconds, cycles), read off the model at `base` and one step from it in each unknown.
fn linear(row: &FitRow, base: &Efficiency, unknowns: &[Unknown]) -> (f64, Vec<f64>) {
    let at = |values: &[(Unknown, f64)]| row.parts.seconds(&trial(base, values));
    let step0 = row.parts.seconds(base);
    let k: Vec<f64> = unknowns
        .iter()
        .map(|&u| {
            let d = match u {
                Unknown::Time => 1e-4,
                Unknown::Cycles => 1e5,
                _ => 1.0,
            };
            (at(&[(u, value_of(base, u) + d)]) - step0) / d
        })
        .collect();
    let at_base: f64 = unknowns
        .iter()
        .zip(&k)
        .map(|(&u, k)| k * value_of(base, u))
        .sum();
    (step0 - at_base, k)
}

/// The linear unknowns minimising Σ ((c + Σ k·u) / m − 1)² over the rows, each row's constant
/// first set to `held`: the normal equations of the rows scaled by their measured step, solved by
/// Gaussian elimination (one or two unknowns).
fn least_squares(rows: &[FitRow], held: &[(Unknown, f64)], unknowns: &[Unknown]) -> Vec<f64> {
    let n = unknowns.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for row in rows {
        let (c0, k) = linear(row, &trial(&row.constant, held), unknowns);
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

/// Σ of the squared relative errors of the step, each row's constant set to `values`.
fn squared_error(rows: &[FitRow], values: &[(Unknown, f64)]) -> f64 {
    rows.iter()
        .map(|r| (r.parts.seconds(&trial(&r.constant, values)) / r.measured_s - 1.0).powi(2))
        .sum()
}

/// The minimum of `f` on `[lo, hi]` by golden sections (to a millionth of the interval).
fn golden(mut lo: f64, mut hi: f64, f: impl Fn(f64) -> f64) -> f64 {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    while hi - lo > 1e-6 * hi.abs() {
        let (a, b) = (hi - r * (hi - lo), lo + r * (hi - lo));
        if f(a) < f(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    (lo + hi) / 2.0
}

/// Sweeps of the coordinate search over a clocked constant's share and 16-bit ceiling.
const CLOCKED_SWEEPS: usize = 12;

/// The clocked rule: the share, dmmv's ceiling and the cycles per layer by least squares of the
/// step time's relative error (a coordinate search over the share and the ceiling, the cycles
/// solved beside each trial), mmvq's held; then mmvq's ceiling alone, the rest as committed.
/// Returns the share, dmmv, cycles and mmvq.
fn clocked(rows: &[FitRow]) -> [f64; 4] {
    use Unknown::{ClockedShare, Cycles, Dmmv, Mmvq};
    let cycles = |held: &[(Unknown, f64)]| least_squares(rows, held, &[Cycles])[0];
    let profiled = |held: [(Unknown, f64); 2]| {
        let c = cycles(&held);
        squared_error(rows, &[held[0], held[1], (Cycles, c)])
    };
    let (mut share, mut dmmv) = (0.8, 6.0);
    for _ in 0..CLOCKED_SWEEPS {
        share = golden(0.5, 1.0, |s| profiled([(ClockedShare, s), (Dmmv, dmmv)]));
        dmmv = golden(3.0, 10.0, |d| profiled([(ClockedShare, share), (Dmmv, d)]));
    }
    let c = cycles(&[(ClockedShare, share), (Dmmv, dmmv)]);
    let mmvq = golden(5e9, 16e9, |q| squared_error(rows, &[(Mmvq, q)]));
    [share, dmmv, c, mmvq]
}

/// One fit row as the report shows it: what its step reads, and what it reaches at the
/// committed constant: the share with the committed time taken out (the experts' share for
/// [`Form::Experts`]) and the time per layer it leaves beside its reads at the peak (neither
/// for a clocked constant, whose share a ceiling may cap).
#[derive(Clone, Debug, Serialize)]
pub struct RowReach {
    pub id: String,
    pub measured_s: f64,
    pub dense_bytes: f64,
    pub expert_bytes: f64,
    pub cache_bytes: f64,
    pub layers: f64,
    pub share: Option<f64>,
    pub time_at_peak: Option<f64>,
}

impl RowReach {
    fn of(r: &FitRow, form: Form) -> RowReach {
        use Unknown::{Experts, Share, Time};
        let unclocked = !matches!(form, Form::Clocked { .. });
        let unknown = if form == Form::Experts {
            Experts
        } else {
            Share
        };
        let (c0, s) = linear(r, &r.constant, &[unknown]);
        let (t0, t) = linear(r, &trial(&r.constant, &[(Share, 1.0)]), &[Time]);
        RowReach {
            id: r.id.clone(),
            measured_s: r.measured_s,
            dense_bytes: r.parts.dense_bytes,
            expert_bytes: r.parts.expert_bytes,
            cache_bytes: r.parts.cache_bytes,
            layers: r.parts.layers,
            share: unclocked.then(|| s[0] / (r.measured_s - c0)),
            time_at_peak: (unclocked && form != Form::Experts).then(|| (r.measured_s - t0) / t[0]),
        }
    }
}

/// One value the rule sets: its name, the rule's value, the committed one and the rounding
/// within which they must agree.
#[derive(Clone, Debug, Serialize)]
pub struct Value {
    pub name: &'static str,
    pub rule: f64,
    pub committed: f64,
    pub within: f64,
}

impl Value {
    pub fn agrees(&self) -> bool {
        (self.rule - self.committed).abs() <= self.within * (1.0 + 1e-9)
    }
}

/// A constant's rule against its committed value.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub name: &'static str,
    pub rows_tag: &'static str,
    pub form: Form,
    pub rows: Vec<RowReach>,
    /// The rule with every unknown free (a share as a fraction, a time in seconds).
    pub free: Vec<f64>,
    /// What the rule holds: "the share at the peak" (the free share runs past it) or "no time"
    /// (the free time is negative), the other unknown refitted.
    pub held: Option<&'static str>,
    /// The rule's values after any hold (a time refitted beside the committed share), against
    /// the committed ones.
    pub values: Vec<Value>,
    /// Σ squared relative error of the step at the committed constant.
    pub committed_error: f64,
}

/// The rule's share and time for a [`Form::ShareAndTime`] constant: the free fit, what it held,
/// the share after the hold and the time beside the committed share.
fn share_and_time(rows: &[FitRow]) -> (Vec<f64>, Option<&'static str>, f64, f64) {
    use Unknown::{Share, Time};
    let free = least_squares(rows, &[], &[Share, Time]);
    let (share, held) = if free[0] < 1.0 {
        (1.0, Some("the share at the peak"))
    } else if free[1] < 0.0 {
        let share = 1.0 / least_squares(rows, &[(Time, 0.0)], &[Share])[0];
        (share, Some("no time"))
    } else {
        (1.0 / free[0], None)
    };
    let time = match held {
        Some("no time") => 0.0,
        _ => least_squares(rows, &[], &[Time])[0],
    };
    (vec![1.0 / free[0], free[1]], held, share, time)
}

/// The rule's free values, hold and values against the committed ones.
fn rule(k: &FitConstant, rows: &[FitRow]) -> (Vec<f64>, Option<&'static str>, Vec<Value>) {
    let c = &k.constant;
    let value = |name, rule, committed, within| Value {
        name,
        rule,
        committed,
        within,
    };
    let share = |rule| value("share", rule, c.bandwidth, k.share_within);
    let time = |rule| value("time per layer (s)", rule, c.layer_s, k.time_within);
    match k.form {
        Form::ShareAndTime => {
            let (free, held, s, t) = share_and_time(rows);
            (free, held, vec![share(s), time(t)])
        }
        Form::Time => {
            let t = least_squares(rows, &[], &[Unknown::Time])[0];
            (vec![t], None, vec![time(t)])
        }
        Form::Experts => {
            let e = 1.0 / least_squares(rows, &[], &[Unknown::Experts])[0];
            let v = value("experts' share", e, c.experts, k.share_within);
            (vec![e], None, vec![v])
        }
        Form::Clocked {
            dmmv_within,
            mmvq_within,
            cycles_within,
        } => {
            let [s, d, y, q] = clocked(rows);
            let of = |u| value_of(c, u);
            let mmvq = k.also.map_or(0.0, |m| value_of(&m, Unknown::Mmvq));
            let values = vec![
                value("share", s, of(Unknown::ClockedShare), k.share_within),
                value("dmmv (bytes/SM-cycle)", d, of(Unknown::Dmmv), dmmv_within),
                value("cycles per layer", y, of(Unknown::Cycles), cycles_within),
                value("mmvq (bytes/SM/s)", q, mmvq, mmvq_within),
            ];
            (vec![s, d, y, q], None, values)
        }
    }
}

/// The rule applied to `k` on `rows`, beside its committed value and what each row reaches.
pub fn fit_constant(k: &FitConstant, rows: Vec<FitRow>) -> Fit {
    let (free, held, values) = rule(k, &rows);
    Fit {
        name: k.name,
        rows_tag: k.rows,
        form: k.form,
        rows: rows.iter().map(|r| RowReach::of(r, k.form)).collect(),
        committed_error: squared_error(&rows, &[]),
        free,
        held,
        values,
    }
}

/// Every constant of [`FITTED`] fitted on its rows: the decode rows speed-scenarios.csv tags with
/// its `rows` and that run it (or `also`), as `compare_speed` maps them.
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
                    let constant = std::iter::once(k.constant)
                        .chain(k.also)
                        .find(|c| parts.runs(c))?;
                    Some(FitRow {
                        id: r.id.clone(),
                        measured_s: 1.0 / r.measured,
                        constant,
                        parts,
                    })
                })
                .collect();
            fit_constant(k, rows)
        })
        .collect()
}
