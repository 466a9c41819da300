//! Leave-one-card-out cross-validation of the decode efficiency constants: each constant refitted
//! without one card's fit rows, by least squares of the decode step time's relative error (the
//! constants' rule, docs/speed.md), and that card's rows predicted by the refit. Their errors say
//! how far a card no constant was set from falls, which the fit rows' own residuals understate.

use super::records;
use super::speed::spread;
use crate::estimate::{decode_with, Efficiency};
use crate::query::scenario_from_query;
use crate::units::parse_f64;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

/// The relative step by which each parameter is moved to read the step's slope.
const NUDGE: f64 = 1e-3;

/// One fit row's decode step near its constant's values, `a·x + b·y + c` seconds: `x` the share's
/// inverse and `y` the time per layer, each as a multiple of the committed value (1 at the
/// constant), and the share's committed value, which `x` may not take below (the peak).
struct Row {
    card: String,
    measured: f64,
    a: f64,
    b: f64,
    c: f64,
    share: f64,
}

/// The efficiency with the named constant's share divided by `x` and its time per layer times
/// `y`: `.bandwidth` moves the weights' share (and the cache's where it repeats it, and the
/// clocked share) and the time per layer or cycles; `.experts` the routed experts' share;
/// `.layer_s` the time alone.
fn moved(eff: Efficiency, field: &str, x: f64, y: f64) -> Efficiency {
    match field {
        "experts" => Efficiency {
            experts: eff.experts / x,
            ..eff
        },
        "layer_s" => Efficiency {
            layer_s: eff.layer_s * y,
            ..eff
        },
        _ => Efficiency {
            bandwidth: eff.bandwidth / x,
            attention: if eff.attention == eff.bandwidth {
                eff.attention / x
            } else {
                eff.attention
            },
            layer_s: eff.layer_s * y,
            clocked: eff.clocked.map(|c| crate::estimate::Clocked {
                bandwidth: c.bandwidth / x,
                layer_cycles: c.layer_cycles * y,
                ..c
            }),
            ..eff
        },
    }
}

/// A fit decode row's step and its slopes, or `None` where it has no decode speed.
fn linearize(query: &str, field: &str, card: &str, measured: f64) -> Option<Row> {
    let (scenario, errors) = scenario_from_query(query);
    if !errors.is_empty() {
        return None;
    }
    let share = Cell::new(1.0);
    let step = |x: f64, y: f64| {
        decode_with(&scenario, &|eff| {
            share.set(match field {
                "experts" => eff.experts,
                _ => eff.clocked.map_or(eff.bandwidth, |c| c.bandwidth),
            });
            moved(eff, field, x, y)
        })
        .map(|rate| 1.0 / rate)
    };
    let at = step(1.0, 1.0)?;
    let a = (step(1.0 + NUDGE, 1.0)? - at) / NUDGE;
    let b = (step(1.0, 1.0 + NUDGE)? - at) / NUDGE;
    Some(Row {
        card: card.to_string(),
        measured,
        a,
        b,
        c: at - a - b,
        share: share.get(),
    })
}

/// `x` and `y` by least squares of the step's relative error over `rows`, `x` held at the peak
/// and `y` at zero where the unconstrained fit passes them; a parameter no row moves stays at 1.
fn refit(rows: &[&Row]) -> (f64, f64) {
    let sum = |f: &dyn Fn(&Row) -> f64| rows.iter().map(|r| f(r)).sum::<f64>();
    let (p, q, z) = (
        |r: &Row| r.a * r.measured,
        |r: &Row| r.b * r.measured,
        |r: &Row| 1.0 - r.c * r.measured,
    );
    let (pp, pq, qq) = (
        sum(&|r| p(r) * p(r)),
        sum(&|r| p(r) * q(r)),
        sum(&|r| q(r) * q(r)),
    );
    let (pz, qz) = (sum(&|r| p(r) * z(r)), sum(&|r| q(r) * z(r)));
    let floor = rows.iter().map(|r| r.share).fold(0.0, f64::max);
    let x_alone = |y: f64| {
        if pp > 0.0 {
            ((pz - pq * y) / pp).max(floor)
        } else {
            1.0
        }
    };
    let y_alone = |x: f64| {
        if qq > 0.0 {
            ((qz - pq * x) / qq).max(0.0)
        } else {
            1.0
        }
    };
    let det = pp * qq - pq * pq;
    if pp <= 0.0 || qq <= 0.0 || det.abs() <= 1e-12 * pp * qq {
        let y = if qq > 0.0 && pp <= 0.0 {
            y_alone(1.0)
        } else {
            1.0
        };
        return (x_alone(y), y);
    }
    let (x, y) = ((pz * qq - qz * pq) / det, (qz * pp - pz * pq) / det);
    match (x < floor, y < 0.0) {
        (false, false) => (x, y),
        (true, _) => (floor, y_alone(floor)),
        (false, true) => (x_alone(0.0), 0.0),
    }
}

/// The cross-validated band: each decode constant's fit rows on at least `min_cards` cards (a
/// constant on fewer is left out), one card at a time left out, the constant refitted on the rest and the card's rows predicted;
/// the 5th and 95th percentiles of their log of measured over predicted tokens/s, pooled. With
/// the rows and constants it took, or `None` without any.
pub fn speed_band_cross_validated(
    measured_csv: &str,
    scenarios_csv: &str,
    min_cards: usize,
) -> Option<((f64, f64), usize, usize)> {
    let measured = records(measured_csv);
    let mut by_constant: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for row in records(scenarios_csv) {
        let get = |key: &str| row.get(key).map(String::as_str).unwrap_or("");
        let (Some((_, field)), "decode_tokens_per_s") = (get("fit").split_once('.'), get("figure"))
        else {
            continue;
        };
        let published = measured.iter().find(|m| m.get("id") == row.get("id"));
        let tokens = published
            .and_then(|m| m.get("tokens_per_s"))
            .and_then(|t| parse_f64(t));
        let card = get("query")
            .split('&')
            .find_map(|kv| kv.strip_prefix("gpu="));
        if let Some(r) = tokens
            .zip(card)
            .and_then(|(tokens, card)| linearize(get("query"), field, card, tokens))
        {
            by_constant
                .entry(get("fit").to_string())
                .or_default()
                .push(r);
        }
    }
    let mut logs = Vec::new();
    let mut constants = 0;
    for rows in by_constant.values() {
        let cards: BTreeSet<&str> = rows.iter().map(|r| r.card.as_str()).collect();
        if cards.len() < min_cards {
            continue;
        }
        constants += 1;
        for card in cards {
            let rest: Vec<&Row> = rows.iter().filter(|r| r.card != card).collect();
            let (x, y) = refit(&rest);
            logs.extend(
                rows.iter()
                    .filter(|r| r.card == card)
                    .map(|r| (r.measured * (r.a * x + r.b * y + r.c)).ln()),
            );
        }
    }
    (!logs.is_empty()).then(|| (spread(logs.clone(), 1.0), logs.len(), constants))
}
