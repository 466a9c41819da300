//! The runtime registry: each runtime's rules behind one trait, registered once in
//! [`Runtime::rules`]. The form's groups, the resolver, the accuracy kinds, the serving plan, the
//! page's serving panel and the CLI ask a runtime through it rather than naming runtimes, so a
//! new runtime is its module, its field-table entries and its registration line.

use super::launch::Launch;
use super::{llamacpp, mlx, sglang, transformers, vllm, Deployment, Serving};
use crate::dtype::Dtype;
use crate::estimate::links::Parallel;
use crate::estimate::speed::{Efficiency, TensorPath};
use crate::estimate::stack::Stack;
use crate::gpu_catalogue::{Datasheet, Gpu};
use crate::runtime::{Release, Runtime};
use crate::scenario::{FieldError, Group, Resolved, Scenario};
use crate::units::Bytes;

/// What a runtime is, as data: what the form, the plan, the accuracy table, the page and the CLI
/// read of it without running its rules. Each runtime's module holds one, built over
/// [`Facts::server`] or [`Facts::library`], which take the names every runtime must have.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    /// The name people know it by: "vLLM".
    pub name: &'static str,
    /// The accuracy panel's name for its kind of run.
    pub accuracy_label: &'static str,
    /// A serving runtime: inference only, with memory rules of its own that replace
    /// transformers' cache, logits and allocator.
    pub serves: bool,
    /// How it holds the requests it serves at once.
    pub requests: Requests,
    /// The form's group that holds its own settings, shown only while it is chosen.
    pub settings_group: Option<Group>,
    /// It reads a GGUF file's tensors (`gguf-weights`) rather than sizing weights from the shape.
    pub reads_gguf_weights: bool,
    /// It runs on a Mac's GPU through Metal (vLLM and SGLang need CUDA or ROCm).
    pub runs_on_metal: bool,
    /// It places layers itself (a GGUF file's quantization, `-ngl`), so the serving plan also
    /// answers the best quantization and the most GPU layers that fit.
    pub places_layers: bool,
    /// How its pool is spoken of: the page's serving panel reads these.
    pub pool_words: PoolWords,
    /// Its serving benchmark's command up to the workload's flags, for a server whose benchmark
    /// runs random prompts (`vllm bench serve`); `None` without one.
    pub serving_bench: Option<&'static str>,
    /// How its launch command is written and read: the program, the model's flag and one table
    /// of scenario fields and their flags. `None` for a library (transformers).
    pub launch: Option<&'static Launch>,
    /// The figures its startup log prints that calibration/runtime-logs.csv compares, and where
    /// the estimate holds each, beside those every server with a pool prints
    /// ([`Facts::figures`]).
    pub logged_figures: &'static [LoggedFigure],
}

impl Facts {
    /// A serving runtime with a KV pool, no settings, benchmark, launch command or logged figures
    /// yet: the base a server's facts are written over.
    pub const fn server(name: &'static str, accuracy_label: &'static str) -> Facts {
        Facts {
            name,
            accuracy_label,
            serves: true,
            requests: Requests::Pool,
            settings_group: None,
            reads_gguf_weights: false,
            runs_on_metal: false,
            places_layers: false,
            pool_words: PoolWords {
                pool: "KV pool per GPU",
                tokens: "KV tokens",
            },
            serving_bench: None,
            launch: None,
            logged_figures: &[],
        }
    }

    /// A library that runs inside the user's program (transformers): no pool of its own.
    pub const fn library(name: &'static str, accuracy_label: &'static str) -> Facts {
        Facts {
            serves: false,
            requests: Requests::One,
            ..Facts::server(name, accuracy_label)
        }
    }

    /// Every figure its log prints: a server with a pool prints the weights it loaded and the
    /// pool's bytes and tokens at start (vLLM's "Model loading took", "Available KV cache
    /// memory" and "GPU KV cache size"; SGLang's "Load weight end" and "KV Cache is
    /// allocated"), then its own.
    pub fn figures(&self) -> impl Iterator<Item = &'static LoggedFigure> {
        let pooled: &'static [LoggedFigure] = if self.pools_kv() { &POOL_FIGURES } else { &[] };
        pooled.iter().chain(self.logged_figures)
    }

    /// It sizes a KV pool once at start and serves many requests from it.
    pub fn pools_kv(&self) -> bool {
        self.requests == Requests::Pool
    }

    /// The figure of that name its log prints, if it prints one.
    pub fn logged(&self, name: &str) -> Option<&'static LoggedFigure> {
        self.figures().find(|f| f.name == name)
    }
}

/// How a runtime holds the requests it serves at once: what the serving plan sets to ask for
/// `n` requests of `t` tokens each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// One KV pool sized at start for requests of `max-model-len` tokens, whose concurrency says
    /// how many it holds.
    Pool,
    /// A slot (`-np`, `parallel`) per request, `ctx-size` the cells of every slot together.
    Slots,
    /// One request at a time, its cache `seq` tokens.
    One,
}

/// What every server with a pool logs: see [`Facts::figures`].
const POOL_FIGURES: [LoggedFigure; 3] = [
    LoggedFigure::new("weights", Reads::Gpu(crate::estimate::LogFigure::ModelLoad)),
    LoggedFigure::new("kv_pool", Reads::PoolBytes),
    LoggedFigure::new("kv_tokens", Reads::PoolTokens),
];

/// What one runtime does with the GPU: its facts and the rules that size its memory and speed.
pub trait RuntimeRules: Sync {
    fn facts(&self) -> &'static Facts;

    /// What it does when the GPUs of a tensor-parallel group differ, as its source shows, given
    /// the smallest and largest GPU's memory; `None` where that source was not read.
    fn unlike_gpus(&self, _smallest: Bytes, _largest: Bytes) -> Option<String> {
        None
    }

    /// The recurrent state's format when neither the checkpoint nor `ssm-dtype` says.
    fn default_state_dtype(&self, _act_dtype: Dtype) -> Dtype {
        Dtype::Fp32
    }

    /// Combinations of settings it refuses, beyond what every serving runtime refuses.
    fn check(&self, _s: &Scenario, _errors: &mut Vec<FieldError>) {}

    /// The release whose rules the scenario asks for (`vllm-version`, `sglang-version`); `None`
    /// for a runtime without release rules.
    fn release(&self, _s: &Scenario) -> Option<Release> {
        None
    }

    /// Whether it runs fp8 weights weight-only through Marlin on the scenario's card, keeping
    /// their block scales expanded to one per 128 inputs of each output column (the weights
    /// module's `FP8_MARLIN_GROUP`).
    fn fp8_marlin(&self, _r: &Resolved) -> bool {
        false
    }

    /// Pushes its components onto the stack and returns what it does with its pool; `None` for
    /// transformers, whose cache the detailed method sizes per sequence.
    fn push(&self, build: Build<'_>) -> Option<Serving>;
}

/// A runtime's speed: what it reaches of a card's peaks and the command that measures it. Its
/// own trait, registered beside [`RuntimeRules`] ([`Runtime::speed`]), so that a build that
/// answers memory only (the page's shell) links none of it through the rules' table.
pub trait RuntimeSpeed: RuntimeRules {
    /// What it reaches of the card's peak bandwidth in decode and peak tensor throughput in
    /// prefill (the speed model's only tuned constants), on the scenario's GPU.
    fn efficiency(&self, _s: &Scenario, _r: &Resolved) -> Efficiency {
        llamacpp::LLAMA_CPP_CUDA
    }

    /// What its constant `eff` becomes under the scenario's settings (llama.cpp: a shorter time
    /// per layer under flash attention); [`RuntimeSpeed::efficiency`] returns its constant so
    /// adjusted, and a fit of the constant times each row through this.
    fn at_settings(&self, _s: &Scenario, eff: Efficiency) -> Efficiency {
        eff
    }

    /// The tensor throughput its matmuls run at on this card, and the share of it they reach:
    /// the weights' format's peak at [`RuntimeSpeed::efficiency`]'s compute share.
    fn tensor_path(&self, s: &Scenario, r: &Resolved, sheet: &Datasheet) -> TensorPath {
        let peak = match r.weights {
            Dtype::Fp8 if sheet.fp8_flops_per_s > 0.0 => sheet.fp8_flops_per_s,
            Dtype::Mxfp4 if sheet.fp4_flops_per_s > 0.0 => sheet.fp4_flops_per_s,
            Dtype::Int8 if sheet.int8_ops_per_s > 0.0 => sheet.int8_ops_per_s,
            _ => sheet.half_flops_per_s,
        };
        TensorPath {
            peak,
            share: self.efficiency(s, r).compute,
            dequantizes: false,
        }
    }

    /// How a step spreads over the scenario's GPUs: tensor-parallel ranks and pipeline stages as
    /// `--tensor-parallel-size` and `--pipeline-parallel-size` set them, as many batches in
    /// flight as stages (vLLM's virtual engines), activations in the model's dtype; a pipeline's
    /// fullest stage holds one embedding table, where the first and last stages hold one each.
    fn parallel(&self, s: &Scenario, r: &Resolved) -> Parallel {
        served_in_stages(s, r)
    }

    /// The backend it ran a speed row on, where it has more than one for a card (" CUDA"), as
    /// the accuracy table groups speed rows; empty where the card decides it.
    fn backend(&self, _s: &Scenario, _gpu: &Gpu) -> &'static str {
        ""
    }

    /// The benchmark command that measures the speed estimate's figures for this scenario, with
    /// `prompt` tokens in and `output` out at `concurrency` requests: by default the serving
    /// benchmark over as many random prompts.
    fn bench_command(
        &self,
        prompt: u32,
        output: u32,
        concurrency: u32,
        _s: &Scenario,
    ) -> Option<String> {
        self.facts()
            .serving_bench
            .map(|tool| random_prompts_bench(tool, prompt, output, concurrency))
    }
}

/// [`RuntimeSpeed::parallel`]'s default: the deployment's ranks and stages, as many batches in
/// flight as stages.
pub(super) fn served_in_stages(s: &Scenario, r: &Resolved) -> Parallel {
    let d = Deployment::new(s, r);
    let table = crate::estimate::parallel::table_bytes(r);
    Parallel {
        tp: d.tp,
        stages: d.pp,
        in_flight: d.pp,
        activation_bytes: r.act_dtype.bytes(),
        overcount_bytes: f64::from(d.pp.saturating_sub(2)) * table,
    }
}

/// How a runtime's pool is spoken of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolWords {
    /// The pool's bytes: "KV pool per GPU".
    pub pool: &'static str,
    /// Its size in tokens: "KV tokens".
    pub tokens: &'static str,
}

/// A figure a runtime's log prints, by its name in calibration/runtime-logs.csv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedFigure {
    pub name: &'static str,
    pub reads: Reads,
}

impl LoggedFigure {
    pub const fn new(name: &'static str, reads: Reads) -> LoggedFigure {
        LoggedFigure { name, reads }
    }
}

/// Where the estimate holds a logged figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// The GPU's components that this log figure holds (`ComponentId::logged_in`).
    Gpu(crate::estimate::LogFigure),
    /// The same in system RAM (`Host::components`).
    Host(crate::estimate::LogFigure),
    /// The GPU's and system RAM's together.
    GpuAndHost(crate::estimate::LogFigure),
    /// Every component on the GPU: a peak that counts every array (MLX's `get_peak_memory`).
    Total,
    /// The pool's bytes, tokens or concurrency.
    PoolBytes,
    PoolTokens,
    Concurrency,
    /// A count the runtime chooses at start, as the estimate resolves that setting (llama.cpp's
    /// `--fit` placement: `n-gpu-layers`, `n-cpu-moe`).
    Setting(&'static str),
}

/// What a runtime's rules read, and the stack and notes they add to: opaque outside the engine.
pub struct Build<'a> {
    pub(super) s: &'a Scenario,
    pub(super) r: &'a Resolved,
    pub(super) d: Deployment,
    pub(super) stack: &'a mut Stack,
    pub(super) notes: &'a mut Vec<String>,
}

/// The registry: each runtime with the module that implements its rules and its speed, one line
/// each, from which [`Runtime::rules`] and [`Runtime::speed`] are written.
macro_rules! registry {
    ($($runtime:ident => $module:ident::$rules:ident,)*) => {
        impl Runtime {
            /// Its memory rules.
            pub fn rules(self) -> &'static dyn RuntimeRules {
                match self {
                    $(Runtime::$runtime => &$module::$rules,)*
                }
            }

            /// Its speed, from the same module as its rules.
            pub fn speed(self) -> &'static dyn RuntimeSpeed {
                match self {
                    $(Runtime::$runtime => &$module::$rules,)*
                }
            }
        }
    };
}

registry! {
    Transformers => transformers::Transformers,
    Vllm => vllm::Vllm,
    Sglang => sglang::Sglang,
    LlamaCpp => llamacpp::LlamaCpp,
    Mlx => mlx::Mlx,
}

impl Runtime {
    /// The wire names of the registered runtimes whose facts pass `has`, as a message offers
    /// them: "llama.cpp or mlx".
    pub fn names_where(has: impl Fn(&Facts) -> bool) -> String {
        let names: Vec<&str> = Runtime::ALL
            .iter()
            .filter(|r| has(r.rules().facts()))
            .map(|r| r.as_str())
            .collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The runtime whose own settings a form group holds, if any.
    pub fn owning(group: Group) -> Option<Runtime> {
        Runtime::ALL
            .iter()
            .copied()
            .find(|r| r.rules().facts().settings_group == Some(group))
    }
}

/// A serving benchmark of random prompts, as vLLM's `vllm bench serve` and SGLang's
/// `bench_serving` both take it: `prompt` tokens in and `output` out per request, `concurrency`
/// at once, ten rounds of requests.
fn random_prompts_bench(tool: &str, prompt: u32, output: u32, concurrency: u32) -> String {
    format!(
        "{tool} --dataset-name random --random-input-len {prompt} --random-output-len {output} \
         --max-concurrency {concurrency} --num-prompts {}",
        concurrency * 10
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::RunKind;
    use crate::scenario::FIELDS;

    /// Every registered runtime is found where a person meets it: its settings' group in the
    /// form with fields of its own, a kind of run in the accuracy table, a name, and the
    /// messages that offer the runtimes for serving and for a Mac.
    #[test]
    fn every_runtime_is_found_in_each_place_that_lists_runtimes() {
        let scenario = |pairs: &[(&str, &str)]| Scenario::from_pairs(pairs.iter().copied()).0;
        let runtime_error = |errors: Vec<FieldError>| {
            errors
                .into_iter()
                .find(|e| e.field == "runtime")
                .unwrap()
                .message
        };
        let transformers = scenario(&[("mode", "inference")]);
        let for_serving = runtime_error(
            crate::serving_plan::plan_serving(&transformers, None, None).unwrap_err(),
        );
        let vllm_on_a_mac = [
            ("mode", "inference"),
            ("runtime", "vllm"),
            ("gpu", "m2-max-64"),
        ];
        let for_a_mac = runtime_error(scenario(&vllm_on_a_mac).validate());
        for &runtime in Runtime::ALL {
            let offered = |message: &str| message.contains(&format!(" {runtime}"));
            assert_eq!(offered(&for_serving), runtime.rules().facts().serves);
            assert_eq!(offered(&for_a_mac), runtime.rules().facts().runs_on_metal);
            let rules = runtime.rules();
            assert!(!rules.facts().name.is_empty());
            if let Some(group) = rules.facts().settings_group {
                assert!(
                    Group::ALL.contains(&group),
                    "{runtime}'s group is in the form"
                );
                assert_eq!(Runtime::owning(group), Some(runtime));
                assert!(
                    FIELDS.iter().any(|f| f.group == group),
                    "{runtime}'s group has fields"
                );
            }
            if rules.facts().serves {
                assert!(
                    RunKind::all().contains(&RunKind::Serving(runtime)),
                    "{runtime} has an accuracy kind"
                );
                assert!(
                    rules.facts().figures().next().is_some(),
                    "{runtime}'s log figures"
                );
            }
        }
    }

    /// Each row of the runtime logs names a figure its runtime's log prints.
    #[test]
    fn every_calibration_log_row_names_a_figure_of_its_runtime() {
        let rows =
            crate::accuracy::records(include_str!("../../../../../calibration/runtime-logs.csv"));
        assert!(rows.len() > 100);
        for row in rows {
            let runtime = Runtime::parse(&row["runtime"]).unwrap();
            let figure = &row["figure"];
            assert!(
                runtime.rules().facts().logged(figure).is_some(),
                "{runtime} logs no `{figure}`"
            );
        }
    }
}
