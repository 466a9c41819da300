//! Feeds arbitrary bytes to `vramfit_engine::model::parse_hf_config`, which must return (Ok or Err)
//! without panicking; whatever shape it reads is then set on a scenario field by field, as
//! `vramfit --config` does, and estimated and solved, which must not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_engine::model::parse_hf_config;
use vramfit_engine::{estimate, solver, Scenario};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let config = match parse_hf_config(&text) {
        Ok(config) => config,
        Err(message) => {
            assert!(!message.to_string().is_empty());
            return;
        }
    };
    let a = config.arch;
    for value in [a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab] {
        assert!(value > 0, "a zero field from {text:?}");
    }
    let mut scenario = Scenario::default();
    for (key, value) in config.pairs() {
        let _ = scenario.set(key, &value);
    }
    if let Ok(e) = estimate(&scenario) {
        assert!(e.params.is_finite() && e.trainable_params.is_finite());
        let _ = solver::solve(&scenario, Some(64));
    }
});
