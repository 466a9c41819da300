//! One model shape: whatever a shape comes from (a preset, a pasted config.json, a GGUF header),
//! the scenario fields it writes resolve to the same `Architecture`, so nothing a reader finds is
//! lost on the way to the formulas.

use vramfit_engine::estimate::{estimate, ComponentId};
use vramfit_engine::model::{parse_hf_config, preset, read_gguf, Architecture, PRESETS};
use vramfit_engine::workload::Mode;
use vramfit_engine::Scenario;

/// The shape an inference scenario resolves to once `pairs` are set, as the CLI and the page
/// apply them (inference, since a checkpoint's format may be one that cannot be trained).
fn resolved<K: AsRef<str>>(pairs: impl IntoIterator<Item = (K, String)>) -> Architecture {
    let mut scenario = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    for (key, value) in pairs {
        let key = key.as_ref();
        scenario
            .set(key, &value)
            .unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    }
    scenario.resolve().unwrap().arch
}

#[test]
fn every_preset_resolves_to_its_own_shape_by_name_and_by_its_fields() {
    for p in PRESETS {
        let named = Scenario {
            model: Some(p.id.to_string()),
            ..Scenario::default()
        };
        assert_eq!(named.resolve().unwrap().arch, p.arch, "{} by name", p.id);
        assert_eq!(resolved(p.arch.pairs()), p.arch, "{} by its fields", p.id);
    }
}

#[test]
fn every_config_fixture_resolves_to_the_shape_it_was_read_as() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let files = ["hf-configs", "qwen3.5"].iter().flat_map(|sub| {
        std::fs::read_dir(format!("{dir}/{sub}"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
    });
    let mut read = 0;
    for path in files.filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let config = parse_hf_config(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(resolved(config.pairs()), config.arch, "{}", path.display());
        read += 1;
    }
    assert!(read >= 40, "only {read} config fixtures");
}

#[test]
fn the_gguf_fixture_resolves_to_the_shape_its_header_gives() {
    let bytes =
        include_bytes!("../../gguf/tests/fixtures/llama-3.1-8b-instruct-q4_k_m.header.gguf");
    let model = read_gguf(bytes).unwrap();
    assert_eq!(resolved(model.pairs()), model.arch);
}

/// Phi-4's preset and its own config.json are one shape, so llama.cpp's compute buffer (which
/// reads the fused QKV projection) is the same from either.
#[test]
fn phi_4_by_name_and_by_its_config_give_the_same_estimate() {
    let path = format!(
        "{}/tests/fixtures/hf-configs/phi-4.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let config = parse_hf_config(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(config.arch.fused_qkv);
    let llama_cpp = |s: &mut Scenario| {
        for (key, value) in [
            ("mode", "inference"),
            ("runtime", "llama.cpp"),
            ("flash-attn", "false"),
            ("quant", "Q4_K_M"),
            ("ctx-size", "4096"),
        ] {
            s.set(key, value).unwrap();
        }
    };
    let mut by_name = Scenario {
        model: Some("phi-4".to_string()),
        ..Scenario::default()
    };
    llama_cpp(&mut by_name);
    let mut by_config = Scenario::default();
    for (key, value) in config.pairs() {
        by_config.set(key, &value).unwrap();
    }
    llama_cpp(&mut by_config);
    assert_eq!(preset("phi-4").unwrap().arch, config.arch);
    let (a, b) = (estimate(&by_name).unwrap(), estimate(&by_config).unwrap());
    assert_eq!(
        a.bytes_of(ComponentId::ComputeBuffer),
        b.bytes_of(ComponentId::ComputeBuffer)
    );
    assert_eq!(a.total_bytes, b.total_bytes);
}
