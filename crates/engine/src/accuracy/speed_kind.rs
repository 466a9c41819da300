//! The kind of run a speed figure is ("llama.cpp CUDA decode, memory-bound, dense, consumer"),
//! which `cargo xtask accuracy` groups the published speeds by, and for one estimate the held-out
//! rows of runs like it: its own kind, or a broader one, named, when its own has fewer than
//! [`FEW_ROWS`]. `vramfit estimate --accuracy` and the page's accuracy panel show them.

use super::{
    compare_speed, compare_training_speed, summary, Summary, TrainingComparison, FEW_ROWS,
};
use crate::estimate::{Bound, Estimate};
use crate::gpu_catalogue;
use crate::scenario::Scenario;
use serde::{Serialize, Serializer};
use std::fmt;

/// A speed figure's kind: runtime and backend (or training method), figure, what a decode step
/// is bound by, dense or mixture of experts, and class of card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpeedKind {
    /// "llama.cpp CUDA", "vLLM"; for training the method ("full", "lora", "qlora").
    pub runtime: String,
    /// "decode", "prefill", "output" or "training" (a step).
    pub figure: String,
    /// ", memory-bound" or ", compute-bound" for decode, else empty.
    pub bound: &'static str,
    /// "dense" or "MoE".
    pub model: &'static str,
    /// "consumer", "apple" or "data-centre".
    pub class: &'static str,
}

/// How far a kind is widened when too few rows of its own hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breadth {
    Exact,
    /// Any class of card.
    AnyCard,
    /// The runtime and figure alone.
    AnyModelOrCard,
}

/// Narrowest first, the order a kind is widened in.
const BREADTHS: [Breadth; 3] = [Breadth::Exact, Breadth::AnyCard, Breadth::AnyModelOrCard];

/// The speed figures in the order they are shown, each with its name in a kind.
const FIGURES: [(&str, &str); 3] = [
    ("prefill_tokens_per_s", "prefill"),
    ("decode_tokens_per_s", "decode"),
    ("output_tokens_per_s", "output"),
];

/// A training step's figure, as the accuracy reports name it.
pub const TRAIN_STEP: &str = "train_step_s";

/// A training step's figure in a kind's name.
const TRAINING_STEP: &str = "training";

/// GeForce, Radeon RX and Intel Arc cards, Apple silicon (unified memory, Metal), and the rest
/// (data-centre, workstation and the DGX Spark).
fn card_class(gpu_name: &str) -> &'static str {
    if gpu_name.contains("GeForce")
        || gpu_name.starts_with("Radeon RX")
        || gpu_name.starts_with("Intel Arc")
    {
        "consumer"
    } else if gpu_name.starts_with("Apple") {
        "apple"
    } else {
        "data-centre"
    }
}

/// The backend a run uses, where its runtime has more than one for the card
/// (`RuntimeRules::backend`); other runtimes are named alone.
fn backend(s: &Scenario) -> &'static str {
    gpu_catalogue::find(&s.gpu).map_or("", |gpu| s.runtime.speed().backend(s, gpu))
}

/// Expert kernels read the weights their own way, so a mixture of experts is its own group.
fn model(s: &Scenario) -> &'static str {
    if s.resolve().is_ok_and(|r| r.arch.moe.is_moe()) {
        "MoE"
    } else {
        "dense"
    }
}

impl SpeedKind {
    /// The kind of `e`'s inference figure `figure` (`decode_tokens_per_s`, …).
    pub fn of(e: &Estimate, figure: &str) -> SpeedKind {
        let s = &e.scenario;
        let (figure, _) = figure.split_once("_tokens").unwrap_or((figure, ""));
        let speed = e.speed.as_ref().and_then(|t| t.inference());
        // Prefill is compute-bound by construction; what a decode step meets first splits decode.
        let bound = match (figure, speed.map(|s| s.bound)) {
            ("decode", Some(Bound::Memory)) => ", memory-bound",
            ("decode", Some(Bound::Compute)) => ", compute-bound",
            _ => "",
        };
        SpeedKind {
            runtime: format!("{}{}", s.runtime, backend(s)),
            figure: figure.to_string(),
            bound,
            model: model(s),
            class: card_class(&e.gpu_name),
        }
    }

    /// The kind of `e`'s training step.
    pub fn of_training(e: &Estimate) -> SpeedKind {
        SpeedKind {
            runtime: e.scenario.mode.to_string(),
            figure: TRAINING_STEP.to_string(),
            bound: "",
            model: model(&e.scenario),
            class: card_class(&e.gpu_name),
        }
    }

    /// The kind's name at a breadth: the exact one is what `cargo xtask accuracy` prints.
    pub fn name(&self, breadth: Breadth) -> String {
        let SpeedKind {
            runtime, figure, ..
        } = self;
        match breadth {
            Breadth::Exact => format!(
                "{runtime} {figure}{}, {}, {}",
                self.bound, self.model, self.class
            ),
            Breadth::AnyCard => {
                format!("{runtime} {figure}{}, {}, any card", self.bound, self.model)
            }
            Breadth::AnyModelOrCard if self.bound.is_empty() => {
                format!("{runtime} {figure}, any model or card")
            }
            Breadth::AnyModelOrCard => format!("{runtime} {figure}, any bound, model or card"),
        }
    }
}

impl fmt::Display for SpeedKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.pad(&self.name(Breadth::Exact))
    }
}

impl Serialize for SpeedKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One held-out row as the groups count it.
pub struct HeldOut<'a> {
    pub kind: &'a SpeedKind,
    pub id: &'a str,
    pub error_pct: f64,
    pub source: &'a str,
    /// Whether the measurement lies within the estimate's band; `None` for a figure without one.
    pub in_band: Option<bool>,
}

impl<'a> HeldOut<'a> {
    /// A training row, which always has a band.
    pub fn of_training(r: &'a TrainingComparison) -> HeldOut<'a> {
        HeldOut {
            kind: &r.kind,
            id: &r.id,
            error_pct: r.error_pct,
            source: &r.source,
            in_band: Some(r.in_band),
        }
    }
}

/// The held-out rows of one kind at one breadth: [`Summary`]'s figures (its `kind` the name)
/// and how many lie inside the estimate's band.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedGroup {
    #[serde(flatten)]
    pub summary: Summary,
    /// Rows inside the estimate's band, of the `banded` rows that have one.
    pub in_band: usize,
    pub banded: usize,
}

/// Every kind of the held-out rows at every breadth, each once, in the order first met.
pub fn speed_groups(rows: &[HeldOut]) -> Vec<SpeedGroup> {
    let mut names: Vec<String> = Vec::new();
    for row in rows {
        for breadth in BREADTHS {
            let name = row.kind.name(breadth);
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let of: Vec<&HeldOut> = rows
                .iter()
                .filter(|r| BREADTHS.iter().any(|&b| r.kind.name(b) == name))
                .collect();
            // A training row's error is its step time's.
            let figure = match of.first() {
                Some(r) if r.kind.figure == TRAINING_STEP => "step time",
                _ => "tokens/s",
            };
            SpeedGroup {
                summary: summary(
                    &name,
                    figure,
                    of.iter().map(|r| (r.id, r.error_pct, r.source)),
                ),
                in_band: of.iter().filter(|r| r.in_band == Some(true)).count(),
                banded: of.iter().filter(|r| r.in_band.is_some()).count(),
            }
        })
        .collect()
}

/// Which group's rows stand for one of an estimate's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedPick {
    /// `decode_tokens_per_s`, … or [`TRAIN_STEP`].
    pub figure: &'static str,
    /// The figure in words: "decode tokens/s", "training step time".
    pub label: &'static str,
    /// The estimate's own kind.
    pub kind: String,
    /// The kind whose rows are shown: `kind`, or a broader one when it has too few.
    pub shown: String,
    /// Said when the rows shown are a broader kind's, or too few.
    pub note: Option<String>,
}

/// A speed figure's key in words, as a table shows it.
fn label(figure: &str) -> &'static str {
    match figure {
        "prefill_tokens_per_s" => "prefill tokens/s",
        "decode_tokens_per_s" => "decode tokens/s",
        "output_tokens_per_s" => "output tokens/s",
        _ => "training step time",
    }
}

/// "1 held-out row", "3 held-out rows".
fn held_out_rows(n: usize) -> String {
    format!("{n} held-out row{}", if n == 1 { "" } else { "s" })
}

/// The narrowest breadth of `kind` with at least [`FEW_ROWS`] held-out rows (`rows_of` counts
/// a name's), else the one with the most; `None` when no held-out row is of its runtime and
/// figure.
fn pick(
    figure: &'static str,
    kind: &SpeedKind,
    rows_of: &dyn Fn(&str) -> usize,
) -> Option<SpeedPick> {
    let exact = kind.name(Breadth::Exact);
    let counted = BREADTHS.map(|b| (kind.name(b), rows_of(&kind.name(b))));
    let (shown, rows) = counted
        .iter()
        .find(|(_, rows)| *rows >= FEW_ROWS)
        // Else the one with the most, narrowest first.
        .or(counted
            .iter()
            .rev()
            .filter(|(_, rows)| *rows > 0)
            .max_by_key(|(_, rows)| *rows))?;
    let own = counted[0].1;
    let rows_of_own = match own {
        0 => format!("No held-out row of {exact}"),
        n => format!("Only {} of {exact}", held_out_rows(n)),
    };
    let note = match (shown == &exact, *rows >= FEW_ROWS) {
        (true, true) => None,
        (true, false) => Some(format!("{rows_of_own}: too few to state its accuracy.")),
        (false, true) => Some(format!(
            "{rows_of_own} (fewer than {FEW_ROWS}): shown for {shown}."
        )),
        (false, false) => Some(format!(
            "{rows_of_own} (fewer than {FEW_ROWS}): shown for {shown}, which has only {}.",
            held_out_rows(*rows)
        )),
    };
    Some(SpeedPick {
        figure,
        label: label(figure),
        kind: exact,
        shown: shown.clone(),
        note,
    })
}

/// The groups that stand for each of `e`'s speed figures the published rows of its runtime
/// measure (prefill, decode, output; or the training step), by the held-out row counts
/// `rows_of` gives each kind's name; and, when there is none, why.
pub fn speed_picks(
    e: &Estimate,
    rows_of: &dyn Fn(&str) -> usize,
) -> (Vec<SpeedPick>, Option<String>) {
    let picks: Vec<SpeedPick> = match e.speed.as_ref() {
        None => {
            return (
                Vec::new(),
                Some("The estimate has no speed, so no speed accuracy.".into()),
            )
        }
        Some(t) if t.training().is_some() => pick(TRAIN_STEP, &SpeedKind::of_training(e), rows_of)
            .into_iter()
            .collect(),
        Some(t) => FIGURES
            .iter()
            .filter(|(figure, _)| {
                *figure != "prefill_tokens_per_s"
                    || t.inference()
                        .is_some_and(|s| s.prefill_tokens_per_s.is_some())
            })
            .filter_map(|&(figure, _)| pick(figure, &SpeedKind::of(e, figure), rows_of))
            .collect(),
    };
    let note = picks.is_empty().then(|| {
        let kind = match e.speed.as_ref().and_then(|t| t.training()) {
            Some(_) => SpeedKind::of_training(e),
            None => SpeedKind::of(e, "decode_tokens_per_s"),
        };
        format!(
            "No held-out published speed measurement validates {} runs yet: their speed accuracy is unknown.",
            kind.runtime
        )
    });
    (picks, note)
}

/// What the published speeds say about an estimate's kind of run: `vramfit estimate --accuracy`'s
/// `accuracy.speed`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedAccuracy<'a> {
    pub figures: Vec<SpeedFigure<'a>>,
    /// Said when no figure has held-out rows.
    pub note: Option<String>,
}

/// One figure's pick and its group's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpeedFigure<'a> {
    #[serde(flatten)]
    pub pick: SpeedPick,
    pub group: &'a SpeedGroup,
}

impl<'a> SpeedAccuracy<'a> {
    pub fn of(groups: &'a [SpeedGroup], e: &Estimate) -> SpeedAccuracy<'a> {
        let find = |name: &str| groups.iter().find(|g| g.summary.kind == name);
        let (picks, note) = speed_picks(e, &|name| find(name).map_or(0, |g| g.summary.rows));
        let figures = picks
            .into_iter()
            .filter_map(|pick| {
                Some(SpeedFigure {
                    group: find(&pick.shown)?,
                    pick,
                })
            })
            .collect();
        SpeedAccuracy { figures, note }
    }
}

/// The held-out groups of every speed kind at every breadth, from the published speeds and
/// training rates: what `cargo xtask accuracy` counts per kind, for [`SpeedAccuracy::of`].
pub fn speed_validation(
    measured_csv: &str,
    scenarios_csv: &str,
    training_csv: &str,
) -> Vec<SpeedGroup> {
    let (speeds, _) = compare_speed(measured_csv, scenarios_csv);
    let (training, _) = compare_training_speed(training_csv);
    let inference = speeds.iter().filter(|r| r.fit.is_none()).map(|r| HeldOut {
        kind: &r.kind,
        id: &r.id,
        error_pct: r.error_pct,
        source: &r.source,
        in_band: r.in_band,
    });
    let training = training
        .iter()
        .filter(|r| r.fit.is_none())
        .map(HeldOut::of_training);
    speed_groups(&inference.chain(training).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::scenario_from_query;

    fn estimate_of(query: &str) -> Estimate {
        let (scenario, errors) = scenario_from_query(query);
        assert!(errors.is_empty(), "{errors:?}");
        crate::estimate::estimate(&scenario).unwrap()
    }

    #[test]
    fn a_kind_with_too_few_rows_is_widened_and_named() {
        let e = estimate_of("model=llama-3.1-8b&mode=inference&runtime=llama.cpp&gpu=rtx-4090");
        let decode = SpeedKind::of(&e, "decode_tokens_per_s");
        let exact = decode.name(Breadth::Exact);
        assert_eq!(
            exact,
            "llama.cpp CUDA decode, memory-bound, dense, consumer"
        );
        let any_card = decode.name(Breadth::AnyCard);
        assert_eq!(
            any_card,
            "llama.cpp CUDA decode, memory-bound, dense, any card"
        );
        // Its own kind has 2 rows, any card 7: the narrowest with enough is shown.
        let rows = |name: &str| match name {
            n if n == exact => 2,
            n if n == any_card => FEW_ROWS + 2,
            _ => 40,
        };
        let (picks, none) = speed_picks(&e, &rows);
        assert_eq!(none, None);
        let figures: Vec<&str> = picks.iter().map(|p| p.figure).collect();
        assert_eq!(
            figures,
            [
                "prefill_tokens_per_s",
                "decode_tokens_per_s",
                "output_tokens_per_s"
            ]
        );
        let pick = &picks[1];
        assert_eq!(
            (pick.kind.as_str(), pick.shown.as_str()),
            (exact.as_str(), any_card.as_str())
        );
        assert_eq!(
            pick.note.as_deref(),
            Some("Only 2 held-out rows of llama.cpp CUDA decode, memory-bound, dense, consumer (fewer than 5): shown for llama.cpp CUDA decode, memory-bound, dense, any card.")
        );
        assert_eq!(picks[0].note, None);
        // Too few everywhere: the breadth with the most, narrowest first, said to be too few.
        let (picks, _) = speed_picks(&e, &|name| usize::from(name != exact) * 3);
        assert_eq!(picks[1].shown, any_card);
        assert!(picks[1]
            .note
            .as_deref()
            .unwrap()
            .ends_with("which has only 3 held-out rows."));
        // No row of the runtime at all: said, never silent.
        let (picks, none) = speed_picks(&e, &|_| 0);
        assert!(picks.is_empty());
        assert_eq!(
            none.as_deref(),
            Some("No held-out published speed measurement validates llama.cpp CUDA runs yet: their speed accuracy is unknown.")
        );
    }

    #[test]
    fn training_rows_are_grouped_by_method_model_and_card() {
        let e = estimate_of("model=llama-3.1-8b&mode=qlora&gpu=rtx-4090");
        let kind = SpeedKind::of_training(&e);
        assert_eq!(kind.name(Breadth::Exact), "qlora training, dense, consumer");
        assert_eq!(
            kind.name(Breadth::AnyModelOrCard),
            "qlora training, any model or card"
        );
        let (picks, _) = speed_picks(&e, &|_| FEW_ROWS);
        assert_eq!(picks.len(), 1);
        assert_eq!(
            (picks[0].figure, picks[0].note.as_ref()),
            (TRAIN_STEP, None)
        );
    }
}
