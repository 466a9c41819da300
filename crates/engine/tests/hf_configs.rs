//! Real published config.json files (tests/fixtures/hf-configs, provenance in its SOURCES.md)
//! read as a user pastes them: the parameter count against the model card, the active count for
//! a mixture of experts, the weights against the checkpoint's published size, and no "fits"
//! where the weights alone exceed the card.

use vramfit_engine::estimate::breakdown;
use vramfit_engine::gpu_catalogue::GPUS;
use vramfit_engine::model::{parse_hf_config, HfConfig};
use vramfit_engine::scenario::Scenario;
use vramfit_engine::Verdict;

/// How a card counts a mixture of experts' active parameters.
#[derive(Clone, Copy)]
enum Active {
    /// With the input embedding (Mistral, Qwen).
    WithEmbedding(f64),
    /// Without it (OpenAI, DeepSeek, Moonshot, Meta, NVIDIA).
    WithoutEmbedding(f64),
    /// Only a size-class label ("A3B"), not a count to test against.
    Label,
}

struct Fixture {
    file: &'static str,
    /// The published total: the card's figure, or the safetensors index's `total_size` / 2 for a
    /// bf16 checkpoint whose card only names a size class ("8B").
    total: f64,
    active: Option<Active>,
    /// The checkpoint's published tensor bytes (`total_size`), where found.
    checkpoint_bytes: Option<f64>,
}

const fn fixture(
    file: &'static str,
    total: f64,
    active: Option<Active>,
    checkpoint_bytes: Option<f64>,
) -> Fixture {
    Fixture {
        file,
        total,
        active,
        checkpoint_bytes,
    }
}

use Active::{Label, WithEmbedding, WithoutEmbedding};

/// Sources for every figure are in tests/fixtures/hf-configs/SOURCES.md.
const FIXTURES: &[Fixture] = &[
    fixture(
        "llama-3.1-8b.json",
        8_030_261_248.0,
        None,
        Some(16_060_522_496.0),
    ),
    fixture(
        "llama-3.1-70b-instruct.json",
        70_553_706_496.0,
        None,
        Some(141_107_412_992.0),
    ),
    fixture(
        "llama-3.3-70b-instruct.json",
        70_553_706_496.0,
        None,
        Some(141_107_412_992.0),
    ),
    fixture(
        "llama-3.2-1b-instruct.json",
        1_235_814_400.0,
        None,
        Some(2_471_628_800.0),
    ),
    fixture(
        "llama-3.2-3b.json",
        3_212_749_824.0,
        None,
        Some(6_425_499_648.0),
    ),
    fixture(
        "mistral-7b-v0.1.json",
        7_241_732_096.0,
        None,
        Some(14_483_464_192.0),
    ),
    fixture("phi-4.json", 14_659_507_200.0, None, Some(29_319_014_400.0)),
    fixture("smollm2-135m.json", 134_515_008.0, None, None),
    fixture(
        "qwen2.5-3b.json",
        3_085_938_688.0,
        None,
        Some(6_171_877_376.0),
    ),
    fixture("qwen2.5-7b.json", 7.61e9, None, Some(15_231_233_024.0)),
    fixture(
        "qwen2.5-14b.json",
        14_770_033_664.0,
        None,
        Some(29_540_067_328.0),
    ),
    fixture(
        "qwen2.5-32b.json",
        32_763_876_352.0,
        None,
        Some(65_527_752_704.0),
    ),
    fixture(
        "qwen2.5-72b-instruct.json",
        72.7e9,
        None,
        Some(145_412_407_296.0),
    ),
    fixture("qwen3-0.6b.json", 0.6e9, None, None),
    fixture(
        "qwen3-4b.json",
        4_022_468_096.0,
        None,
        Some(8_044_936_192.0),
    ),
    fixture("qwen3-8b.json", 8.2e9, None, Some(16_381_470_720.0)),
    fixture(
        "qwen3-14b.json",
        14_768_307_200.0,
        None,
        Some(29_536_614_400.0),
    ),
    fixture("qwen3-32b.json", 32.8e9, None, Some(65_524_246_528.0)),
    fixture(
        "qwen3-32b-awq.reserialized.json",
        32.8e9,
        None,
        Some(19_325_298_688.0),
    ),
    fixture(
        "gemma-2-2b-it.json",
        2_614_341_888.0,
        None,
        Some(5_228_683_776.0),
    ),
    fixture("gemma-3-27b-it.json", 27_433e6, None, None),
    fixture(
        "mixtral-8x7b-v0.1.json",
        46.7e9,
        Some(WithEmbedding(12.9e9)),
        Some(93_405_585_408.0),
    ),
    fixture(
        "qwen3-30b-a3b.json",
        30.5e9,
        Some(WithEmbedding(3.3e9)),
        Some(61_064_245_248.0),
    ),
    fixture(
        "qwen3-235b-a22b-instruct-2507.json",
        235e9,
        Some(WithEmbedding(22e9)),
        Some(470_187_269_120.0),
    ),
    fixture(
        "gpt-oss-20b.json",
        21e9,
        Some(WithoutEmbedding(3.6e9)),
        Some(13_761_264_768.0),
    ),
    fixture(
        "gpt-oss-120b.json",
        117e9,
        Some(WithoutEmbedding(5.1e9)),
        None,
    ),
    fixture(
        "llama-4-scout-17b-16e-instruct.json",
        109e9,
        Some(WithoutEmbedding(17e9)),
        None,
    ),
    fixture(
        "llama-4-maverick-17b-128e-instruct.json",
        400e9,
        Some(WithoutEmbedding(17e9)),
        None,
    ),
    // The checkpoint also holds the multi-token-prediction layer the estimate leaves out (a
    // warning says so): 2.2% of the bytes.
    fixture(
        "deepseek-r1-0528.json",
        671e9,
        Some(WithoutEmbedding(36.6e9)),
        Some(688_586_727_753.0),
    ),
    fixture(
        "kimi-k2-instruct.json",
        1_026_408_232_448.0,
        Some(WithoutEmbedding(32e9)),
        Some(1_029_173_249_888.0),
    ),
    fixture(
        "qwen3-next-80b-a3b-thinking.json",
        80e9,
        // "3B activated" is the A3B label: the routed, shared, attention and linear-attention
        // weights a token uses come to 3.2B without the embeddings.
        Some(Label),
        None,
    ),
    fixture(
        "nemotron-3-nano-30b-a3b.json",
        31.6e9,
        Some(WithoutEmbedding(3.2e9)),
        None,
    ),
];

/// Cards round to two or three digits; a total within 1% and an active count within the
/// rounding of a two-digit figure (Qwen3-30B-A3B's 3.353B is printed "3.3B").
const TOTAL_TOLERANCE: f64 = 0.01;
const ACTIVE_TOLERANCE: f64 = 0.02;
/// Weights against the checkpoint's bytes.
const CHECKPOINT_TOLERANCE: f64 = 0.03;

fn read(file: &str) -> HfConfig {
    let path = format!(
        "{}/tests/fixtures/hf-configs/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_hf_config(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The scenario a user gets by pasting the config: inference of one 2048-token sequence.
fn pasted(config: &HfConfig, gpu: &str) -> Scenario {
    let mut s = Scenario::default();
    s.set("mode", "inference").unwrap();
    s.set("gpu", gpu).unwrap();
    for (key, value) in config.pairs() {
        s.set(key, &value)
            .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    }
    s
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

#[test]
fn every_fixture_counts_within_one_percent_of_its_card() {
    let mut failures = Vec::new();
    for f in FIXTURES {
        let config = read(f.file);
        let total = config.arch.param_count();
        let error = relative(total, f.total);
        eprintln!(
            "{}: {:.4}B vs {:.4}B ({:+.2}%)",
            f.file,
            total / 1e9,
            f.total / 1e9,
            error * 100.0
        );
        if error > TOTAL_TOLERANCE {
            failures.push(format!("{}: {total} vs {}", f.file, f.total));
        }
        let active = config.arch.active_param_count();
        let embedding = f64::from(config.arch.vocab) * f64::from(config.arch.hidden);
        match (f.active, active) {
            (None, None) => {}
            (Some(published), Some(active)) => {
                let (counted, published) = match published {
                    WithEmbedding(p) => (active, p),
                    WithoutEmbedding(p) => (active - embedding, p),
                    Label => continue,
                };
                let error = relative(counted, published);
                eprintln!(
                    "  active {:.4}B vs {:.4}B ({:+.2}%)",
                    counted / 1e9,
                    published / 1e9,
                    error * 100.0
                );
                if error > ACTIVE_TOLERANCE {
                    failures.push(format!("{} active: {counted} vs {published}", f.file));
                }
            }
            (expected, got) => failures.push(format!(
                "{}: mixture of experts expected {}, read {}",
                f.file,
                expected.is_some(),
                got.is_some()
            )),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_fixtures_weights_match_its_checkpoint_within_three_percent() {
    let mut failures = Vec::new();
    for f in FIXTURES {
        let Some(checkpoint) = f.checkpoint_bytes else {
            continue;
        };
        let config = read(f.file);
        let b = breakdown(&pasted(&config, "h200")).unwrap_or_else(|e| panic!("{}: {e:?}", f.file));
        let weights: f64 = ["weights", "quant_constants", "vision"]
            .iter()
            .map(|id| b.bytes_of(id).0 as f64)
            .sum();
        let error = relative(weights, checkpoint);
        eprintln!(
            "{}: {:.3} GB vs {:.3} GB ({:+.2}%)",
            f.file,
            weights / 1e9,
            checkpoint / 1e9,
            error * 100.0
        );
        if error > CHECKPOINT_TOLERANCE {
            failures.push(format!("{}: {weights} vs {checkpoint}", f.file));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn no_fixture_fits_a_card_its_weights_alone_exceed() {
    for f in FIXTURES {
        let config = read(f.file);
        for gpu in GPUS {
            let b = breakdown(&pasted(&config, gpu.id)).unwrap();
            let weights = b.bytes_of("weights").0 + b.bytes_of("quant_constants").0;
            if weights > gpu.capacity().0 {
                assert!(
                    !matches!(b.verdict(), Verdict::Fits | Verdict::Tight),
                    "{} on {}: {:?}",
                    f.file,
                    gpu.id,
                    b.verdict()
                );
            }
        }
    }
}

#[test]
fn every_fixture_names_what_it_does_not_model() {
    let deepseek = read("deepseek-r1-0528.json");
    assert!(
        deepseek
            .warnings
            .iter()
            .any(|w| w.starts_with("num_nextn_predict_layers")),
        "{:?}",
        deepseek.warnings
    );
    let llama = read("llama-3.1-8b.json");
    assert!(llama.warnings.is_empty(), "{:?}", llama.warnings);
}
