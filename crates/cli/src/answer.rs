//! `estimate` and `fit`, up to the objects `--json` prints: built once here, printed by the CLI
//! and returned by the Python package, so the two cannot disagree.

use serde::Serialize;
use serde_json::Value;
use vramfit_engine::accuracy::{self, KindAccuracy, RunKind, SpeedAccuracy, SpeedGroup, Summary};
use vramfit_engine::serving_plan::{self, ServingPlan};
use vramfit_engine::solver::{self, Solution};
use vramfit_engine::{estimate, Estimate, FieldError, Scenario};

use crate::scenario_args::ScenarioArgs;

/// The published measurements, runtime logs, speeds and training rates the engine is checked
/// against, built in so `estimate --accuracy` needs no checkout.
const MEASURED: &str = include_str!("../../../calibration/measured-public.csv");
const SCENARIOS: &str = include_str!("../../../calibration/scenarios.csv");
const RUNTIME_LOGS: &str = include_str!("../../../calibration/runtime-logs.csv");
const SPEED_MEASURED: &str = include_str!("../../../calibration/speed-measured.csv");
const SPEED_SCENARIOS: &str = include_str!("../../../calibration/speed-scenarios.csv");
const TRAINING_SPEED: &str = include_str!("../../../calibration/training-speed.csv");

/// The estimate of `scenario`, which `args` describe, its launch command naming their weights.
pub fn estimated(args: &ScenarioArgs, scenario: &Scenario) -> Result<Estimate, Vec<FieldError>> {
    let mut e = estimate(scenario)?;
    name_the_model(args, &mut e);
    Ok(e)
}

/// How close the engine's estimates came to the published measurements: memory figure by
/// figure, and the held-out speeds by kind.
pub struct Validation {
    pub memory: Vec<Summary>,
    pub speed: Vec<SpeedGroup>,
}

/// Every group's figures from the calibration files.
pub fn validation() -> Validation {
    Validation {
        memory: accuracy::validation(MEASURED, SCENARIOS, RUNTIME_LOGS),
        speed: accuracy::speed_validation(SPEED_MEASURED, SPEED_SCENARIOS, TRAINING_SPEED),
    }
}

/// `estimate --accuracy`'s figures for one estimate: its kind of run's memory figures, and its
/// speed figures' kinds under `speed`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accuracy<'a> {
    #[serde(flatten)]
    pub memory: KindAccuracy<'a>,
    pub speed: SpeedAccuracy<'a>,
}

/// The figures of [`validation`] for `e`'s kind of run; `None` only for an estimate whose
/// scenario does not resolve, which `estimate` never returns.
pub fn accuracy_of<'a>(v: &'a Validation, e: &Estimate) -> Option<Accuracy<'a>> {
    Some(Accuracy {
        memory: KindAccuracy::of(&v.memory, RunKind::of(&e.scenario)?),
        speed: SpeedAccuracy::of(&v.speed, e),
    })
}

/// `estimate --json`'s object: the estimate, with an `accuracy` object beside its fields when
/// asked for (`--accuracy`).
pub fn estimate_json(e: &Estimate, accuracy: Option<&Accuracy>) -> Value {
    let mut value = serde_json::to_value(e).unwrap_or_default();
    if let (Value::Object(fields), Some(accuracy)) = (&mut value, accuracy) {
        let accuracy = serde_json::to_value(accuracy).unwrap_or_default();
        fields.insert("accuracy".to_string(), accuracy);
    }
    value
}

/// Writes the launch command again with the weights the command line names (`--hf`, `--gguf`,
/// `--model-dir`), which the scenario does not hold.
fn name_the_model(args: &ScenarioArgs, e: &mut Estimate) {
    if let (Some(source), Some(serving)) = (args.model_source(), e.serving.as_mut()) {
        serving.command = serving.launch_command(&e.scenario, &source);
    }
}

/// What `fit` is asked to reach beyond the scenario.
#[derive(Debug, Clone, Copy, Default)]
pub struct FitGoals {
    /// The effective batch to reach with gradient accumulation (training).
    pub target_batch: Option<u32>,
    /// Concurrent requests to plan for (serving).
    pub users: Option<u32>,
    /// Each request's decode speed to plan for, in tokens/s (serving).
    pub tokens_per_s: Option<f64>,
}

/// `fit`'s answer: the serving plan for a serving runtime, the solver's for training and
/// Transformers inference.
#[derive(Debug, Clone)]
pub enum Fit {
    Serving {
        plan: ServingPlan,
        scenario: Scenario,
        /// The command that starts the planned deployment.
        command: Option<String>,
    },
    Training {
        solution: Solution,
        scenario: Scenario,
    },
}

/// Solves `scenario`, which `args` describe, for `goals`. A scenario that does not resolve is
/// reported with every bad field.
pub fn fit(
    args: &ScenarioArgs,
    scenario: Scenario,
    goals: &FitGoals,
) -> Result<Fit, Vec<FieldError>> {
    if scenario.runtime.rules().facts().serves {
        let plan = serving_plan::plan_serving(&scenario, goals.users, goals.tokens_per_s)?;
        let command = estimate(&scenario).ok().and_then(|mut e| {
            name_the_model(args, &mut e);
            e.serving?.command
        });
        Ok(Fit::Serving {
            plan,
            scenario,
            command,
        })
    } else {
        let solution = solver::solve(&scenario, goals.target_batch)?;
        Ok(Fit::Training { solution, scenario })
    }
}

impl Fit {
    /// `fit --json`'s object: the serving plan with its launch `command`, or the solution.
    pub fn to_json(&self) -> Value {
        match self {
            Fit::Serving { plan, command, .. } => {
                let mut value = serde_json::to_value(plan).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    object.insert("command".into(), command.clone().into());
                }
                value
            }
            Fit::Training { solution, .. } => serde_json::to_value(solution).unwrap_or_default(),
        }
    }
}
