//! Pipeline parallelism in the detailed method: the GPU that must fit is the fullest stage, with
//! ⌈L/N⌉ whole layers and one embedding table, not an even 1/N of the weights.

mod common;

use vramfit_engine::estimate;
use vramfit_engine::estimate::ComponentId;

fn weights(pairs: &[(&str, &str)]) -> f64 {
    let s = common::scenario(
        &[
            ("model", "llama-2-70b"),
            ("mode", "inference"),
            ("weights", "bf16"),
        ],
        pairs,
    );
    estimate(&s)
        .unwrap()
        .component(ComponentId::Weights)
        .unwrap()
        .bytes
        .as_f64()
}

#[test]
fn the_fullest_stage_holds_its_share_of_layers_and_one_table() {
    let all = weights(&[]);
    // Llama-2-70B: 80 layers, an untied 32000 × 8192 embedding and LM head, in bf16.
    let table = 32000.0 * 8192.0 * 2.0;
    let blocks = all - 2.0 * table;
    for (gpus, fullest_layers) in [("8", 10.0), ("3", 27.0), ("2", 40.0)] {
        let expected = blocks * fullest_layers / 80.0 + table;
        let got = weights(&[("sharding", "pipeline"), ("gpus", gpus)]);
        assert!(
            (got - expected).abs() < 2.0,
            "{gpus} GPUs: {got} vs {expected}"
        );
    }
    // Tensor parallelism still splits every matrix evenly.
    let tensor = weights(&[("sharding", "tensor"), ("gpus", "8")]);
    assert!((tensor - all / 8.0).abs() < 2.0);
}
