//! The scenario flags. They are generated from the engine's list of scenario keys, so every URL
//! query key `k=v` is the flag `--k v` and no key can be missing from one side.

use crate::model_source::{self, HubRepo};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::path::PathBuf;
use vramfit_engine::card::{self, CardTarget};
use vramfit_engine::estimate::ModelSource;
use vramfit_engine::model::RepoModel;
use vramfit_engine::scenario::{FieldError, FIELDS};
use vramfit_engine::smi::Snapshot;
use vramfit_engine::{model, Scenario};

/// The scenario as given on the command line (or to the Python package), applied in the order:
/// `--config`, `--gguf`, `--hf` or `--model-dir` shape, the probed card, then the fields.
#[derive(Clone, Debug, Default)]
pub struct ScenarioArgs {
    /// Scenario keys and their values as typed, in order.
    pub pairs: Vec<(String, String)>,
    pub config: Option<PathBuf>,
    pub gguf: Option<PathBuf>,
    pub hf: Option<String>,
    pub model_dir: Option<PathBuf>,
    pub from_probe: Option<ProbedCard>,
    pub probe_gpu: usize,
    pub probe_mig: Option<usize>,
}

/// Scenario keys and values read from a file or a card.
type Pairs = Vec<(&'static str, String)>;

/// The card to plan on: nvidia-smi's output in a file (`--from-probe FILE`), or a snapshot
/// already read through NVML (the Python package's `gpu="auto"`).
#[derive(Clone, Debug)]
pub enum ProbedCard {
    File(PathBuf),
    Snapshot(Box<Snapshot>),
}

impl Args for ScenarioArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = FIELDS.iter().fold(cmd, |cmd, field| {
            let arg = Arg::new(field.key)
                .long(field.key)
                .value_name("VALUE")
                .help(field.full_help())
                .help_heading("Scenario")
                .allow_hyphen_values(true);
            // A list field (`custom`) takes the flag again for each item, as the URL repeats its key.
            cmd.arg(if field.key == "custom" {
                arg.action(ArgAction::Append)
            } else {
                arg
            })
        });
        cmd.arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("a Hugging Face config.json giving the architecture")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("gguf")
                .long("gguf")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .conflicts_with("config")
                .help("a .gguf file: llama.cpp with its exact tensors and shape (only the header is read)")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("hf")
                .long("hf")
                .value_name("REPO[@REV][:QUANT]")
                .conflicts_with_all(["config", "gguf", "model-dir"])
                .help("a Hugging Face repo: config.json and the safetensors headers, or with :QUANT a GGUF repo's file (headers only), from the HF cache or the Hub at HF_ENDPOINT (HF_TOKEN for gated repos, HF_HUB_OFFLINE=1 for the cache only)")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("model-dir")
                .long("model-dir")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .conflicts_with_all(["config", "gguf"])
                .help("a checkpoint directory: config.json and the *.safetensors headers (the tensors' data is not read)")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("from-probe")
                .long("from-probe")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("plan against a real card: `vramfit probe --json` (or any nvidia-smi output) sets vram and reserved")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("probe-gpu")
                .long("probe-gpu")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .default_value("0")
                .help("which GPU of --from-probe: its index as nvidia-smi prints it (its position where none is printed)")
                .help_heading("Scenario"),
        )
        .arg(
            Arg::new("probe-mig")
                .long("probe-mig")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("plan on that GPU's Nth MIG device (0 = the first listed) instead of the whole GPU")
                .help_heading("Scenario"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for ScenarioArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut pairs = Vec::new();
        for field in FIELDS {
            let key = field.key;
            if let Some(values) = matches.get_many::<String>(key) {
                pairs.extend(values.map(|v| (key.to_string(), v.clone())));
            }
        }
        Ok(ScenarioArgs {
            pairs,
            config: matches.get_one::<PathBuf>("config").cloned(),
            gguf: matches.get_one::<PathBuf>("gguf").cloned(),
            hf: matches.get_one::<String>("hf").cloned(),
            model_dir: matches.get_one::<PathBuf>("model-dir").cloned(),
            from_probe: matches
                .get_one::<PathBuf>("from-probe")
                .cloned()
                .map(ProbedCard::File),
            probe_gpu: matches.get_one::<usize>("probe-gpu").copied().unwrap_or(0),
            probe_mig: matches.get_one::<usize>("probe-mig").copied(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl ScenarioArgs {
    /// The card's real total and what is already taken on it, planned as the page plans a paste,
    /// with notes on what the snapshot could not tell. `--probe-gpu` names the GPU's reported
    /// index; where the snapshot has no indices, its position.
    fn probe_pairs(&self, card: &ProbedCard) -> Result<(Pairs, Vec<String>), String> {
        let (snapshot, origin) = match card {
            ProbedCard::File(path) => (
                crate::parse_smi::read_snapshot(path)?,
                path.display().to_string(),
            ),
            ProbedCard::Snapshot(snapshot) => ((**snapshot).clone(), "the probed GPU".to_string()),
        };
        let position = snapshot
            .gpus
            .iter()
            .position(|g| g.index == u32::try_from(self.probe_gpu).ok())
            .unwrap_or(self.probe_gpu);
        let target = match self.probe_mig {
            Some(mig) => CardTarget::Mig { gpu: position, mig },
            None => CardTarget::Gpu(position),
        };
        let plan = card::plan_on_card(&snapshot, target, &Scenario::default())
            .map_err(|e| format!("{origin}: {e}"))?;
        let notes = plan
            .notes
            .iter()
            .map(|n| format!("{origin}: {n}"))
            .collect();
        Ok((plan.changes, notes))
    }

    /// The checkpoint `--hf` or `--model-dir` names, read; `None` when neither is given.
    fn checkpoint(&self) -> Option<Result<RepoModel, (&'static str, String)>> {
        if let Some(dir) = &self.model_dir {
            let read = model_source::read_dir(dir);
            return Some(read.map_err(|e| ("model-dir", e)));
        }
        let hf = self.hf.as_deref()?;
        let read = HubRepo::parse(hf).and_then(|repo| model_source::read_hub(&repo));
        Some(read.map_err(|e| ("hf", e)))
    }

    /// Where the weights come from, for the launch command: the `--gguf` file, the
    /// `--model-dir` directory, or the `--hf` repo (`REPO:QUANT` for a GGUF repo, as llama.cpp's
    /// `-hf` takes it). A repo at a revision other than `main` is not named, since the commands
    /// load `main`; `None` when the scenario names no source of its own.
    pub fn model_source(&self) -> Option<ModelSource> {
        if let Some(path) = &self.gguf {
            return Some(ModelSource::GgufFile(path.display().to_string()));
        }
        if let Some(dir) = &self.model_dir {
            return Some(ModelSource::Checkpoint(dir.display().to_string()));
        }
        let repo = HubRepo::parse(self.hf.as_deref()?).ok()?;
        Some(match repo.quant {
            _ if repo.revision != "main" => ModelSource::Unknown,
            Some(quant) => ModelSource::GgufRepo(format!("{}:{quant}", repo.id)),
            None => ModelSource::Checkpoint(repo.id),
        })
    }

    /// Builds and validates the scenario, or returns every bad field; what the files did not say
    /// goes to stderr. The config's shape and the probed card come first, so explicit flags
    /// override them.
    pub fn scenario(&self) -> Result<Scenario, Vec<FieldError>> {
        self.scenario_over(&[])
    }

    /// [`ScenarioArgs::scenario`] on top of `defaults`, which every file and flag overrides.
    pub fn scenario_over(&self, defaults: &[(&str, &str)]) -> Result<Scenario, Vec<FieldError>> {
        let (scenario, notes) = self.noted_scenario_over(defaults);
        for note in notes {
            eprintln!("vramfit: {note}");
        }
        scenario
    }

    /// [`ScenarioArgs::scenario_over`], with the notes on what the files did not say (a key not
    /// modelled, a default taken from the model type) returned rather than printed.
    pub fn noted_scenario_over(
        &self,
        defaults: &[(&str, &str)],
    ) -> (Result<Scenario, Vec<FieldError>>, Vec<String>) {
        let mut errors = Vec::new();
        let mut notes = Vec::new();
        let mut pairs: Vec<(String, String)> = defaults
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut add = |read: Result<Vec<(&str, String)>, FieldError>| match read {
            Ok(read) => pairs.extend(read.into_iter().map(|(k, v)| (k.to_string(), v))),
            Err(e) => errors.push(e),
        };
        if let Some(path) = &self.config {
            add(read_config(path, &mut notes));
        }
        if let Some(path) = &self.gguf {
            add(model_source::read_gguf(path)
                .map(|file| {
                    notes.push(format!("{}: {}", path.display(), file.summary()));
                    let warnings = file.warnings.iter();
                    notes.extend(warnings.map(|w| format!("{}: {w}", path.display())));
                    file.pairs()
                })
                .map_err(|message| FieldError::new("gguf", message)));
        }
        if let Some(read) = self.checkpoint() {
            add(read
                .map(|model| {
                    notes.extend(model.messages());
                    model.pairs()
                })
                .map_err(|(key, message)| FieldError::new(key, message)));
        }
        if let Some(card) = &self.from_probe {
            add(self
                .probe_pairs(card)
                .map(|(probed, probe_notes)| {
                    notes.extend(probe_notes);
                    probed
                })
                .map_err(|message| FieldError::new("from-probe", message)));
        }
        pairs.extend(self.pairs.iter().cloned());
        let mut scenario = Scenario::default();
        for (key, value) in &pairs {
            if let Err(e) = scenario.set(key, value) {
                errors.push(e);
            }
        }
        errors.extend(scenario.validate());
        match errors.is_empty() {
            true => (Ok(scenario), notes),
            false => (Err(errors), notes),
        }
    }
}

/// A Hugging Face config.json's shape as scenario pairs, with notes on the keys it warns about
/// and the defaults it took from the model type.
fn read_config(path: &PathBuf, notes: &mut Vec<String>) -> Result<Pairs, FieldError> {
    let config = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|text| model::parse_hf_config(&text).map_err(|e| e.to_string()))
        .map_err(|message| FieldError::new("config", message))?;
    for warning in &config.warnings {
        notes.push(format!("{}: {warning}", path.display()));
    }
    if !config.defaults_used.is_empty() {
        notes.push(format!(
            "{}: not in the file, taken from the {} defaults: {}",
            path.display(),
            config.model_type.as_deref().unwrap_or("family"),
            config.defaults_used.join(", ")
        ));
    }
    Ok(config.pairs())
}
