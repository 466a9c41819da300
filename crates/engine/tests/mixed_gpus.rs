//! Unlike GPUs (`devices`): llama.cpp's layer split placed slot by slot as its `load_tensors`
//! does, each GPU judged against its own memory, and the smallest GPU deciding for runtimes that
//! size every rank alike (vLLM's `get_kv_cache_configs`).

use vramfit_engine::estimate::{estimate, ComponentId, Estimate, Verdict};
use vramfit_engine::Scenario;

fn scenario(query: &str) -> Result<Scenario, String> {
    let mut s = Scenario::default();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap();
        s.set(k, v)
            .map_err(|e| format!("{}: {}", e.field, e.message))?;
    }
    Ok(s)
}

fn run(query: &str) -> Estimate {
    estimate(&scenario(query).unwrap()).expect("a valid scenario")
}

/// Which fields a scenario is refused for.
fn refused(query: &str) -> Vec<String> {
    match scenario(query) {
        Err(e) => vec![e],
        Ok(s) => estimate(&s)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.field.to_string())
            .collect(),
    }
}

/// Llama-3.1-8B: 32 blocks, so `-ngl` 33 offloads 33 slots, the output layer last.
const LLAMA: &str =
    "mode=inference&runtime=llama.cpp&model=llama-3.1-8b&quant=Q4_K_M&ctx-size=8192\
                     &sharding=pipeline";

fn placement(e: &Estimate) -> Vec<(Option<u32>, bool)> {
    e.devices
        .iter()
        .map(|d| (d.blocks, d.output_layer))
        .collect()
}

#[test]
fn a_4090_and_a_3090_split_by_free_memory_as_llama_cpp_places_layers() {
    // Free memory (capacity less the 512 MiB context): 24564 − 512 = 24052 MiB on the 4090,
    // 24576 − 512 = 24064 MiB on the 3090. The 4090's share ends at 24052 / 48116 = 0.499875;
    // slot j of 33 goes to it while j / 33 < 0.499875, i.e. j ≤ 16: 17 blocks. The 3090 takes
    // slots 17–32: 15 blocks and the output layer.
    let e = run(&format!("{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2"));
    assert_eq!(placement(&e), [(Some(17), false), (Some(15), true)]);
    let names: Vec<&str> = e.devices.iter().map(|d| d.gpu.as_str()).collect();
    assert_eq!(names, ["rtx-4090", "rtx-3090"]);
    // Split or not, the same tensors and cache are on the GPUs.
    let one = run(&format!("{LLAMA}&gpu=rtx-4090").replace("&sharding=pipeline", ""));
    let sum = |f: fn(&vramfit_engine::estimate::DevicePlan) -> u64| -> u64 {
        e.devices.iter().map(f).sum()
    };
    let weights = sum(|d| d.weights_bytes.0) as i64;
    assert!((weights - one.bytes_of(ComponentId::Weights).0 as i64).abs() <= 2);
    let kv = sum(|d| d.kv_cache_bytes.0) as i64;
    assert!((kv - one.bytes_of(ComponentId::KvCache).0 as i64).abs() <= 2);
    // The summary is the fuller device's, named.
    let worst = e.devices.iter().min_by_key(|d| d.headroom_bytes).unwrap();
    assert_eq!(e.total_bytes, worst.total_bytes);
    assert_eq!(e.gpu_name, worst.gpu_name);
}

#[test]
fn tensor_split_proportions_place_layers_by_upper_bound() {
    // --tensor-split 3,1: the first share ends at 0.75; j / 33 < 0.75 for j ≤ 24, so 25 blocks
    // on the 4090 and 7 blocks with the output layer on the 3090.
    let e = run(&format!(
        "{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2&tensor-split=3,1"
    ));
    assert_eq!(placement(&e), [(Some(25), false), (Some(7), true)]);
    // A 12 GB 3060 beside a 4090, by free memory: 11776 / (11776 + 24052) = 0.32868, so slots
    // j ≤ 10 (11 blocks) on the 3060 and 21 blocks with the output layer on the 4090.
    let e = run(&format!("{LLAMA}&devices=rtx-3060,rtx-4090&gpus=2"));
    assert_eq!(placement(&e), [(Some(11), false), (Some(21), true)]);
    // With -ngl 9 the 9 slots are the last 8 blocks and the output layer: 9 × 0.32868 = 2.96,
    // so 3 blocks on the 3060 and 5 blocks with the output layer on the 4090.
    let e = run(&format!(
        "{LLAMA}&devices=rtx-3060,rtx-4090&gpus=2&n-gpu-layers=9"
    ));
    assert_eq!(placement(&e), [(Some(3), false), (Some(5), true)]);
}

#[test]
fn each_device_is_judged_against_its_own_memory_and_the_worst_is_the_verdict() {
    // 70B at Q4_K_M is about 40 GiB: split 1:1 over a 4090 and a 3060, the 3060's half does not
    // fit its 12 GB while the 4090's does (tightly).
    let e = run(
        "mode=inference&runtime=llama.cpp&model=llama-3.1-70b&quant=Q4_K_M&ctx-size=4096\
         &devices=rtx-4090,rtx-3060&gpus=2&tensor-split=1,1&sharding=pipeline",
    );
    let verdicts: Vec<Verdict> = e.devices.iter().map(|d| d.verdict).collect();
    assert!(
        verdicts[0].fits() && verdicts[1] == Verdict::Oom,
        "{verdicts:?}"
    );
    assert_eq!(e.verdict, Verdict::Oom);
    assert_eq!(e.gpu_name, "GeForce RTX 3060 12GB");
}

#[test]
fn vllm_sizes_every_rank_by_the_smallest_gpu_and_says_so() {
    let e = run(
        "mode=inference&runtime=vllm&model=llama-3.1-8b&devices=rtx-4090,rtx-3060&gpus=2&sharding=tensor",
    );
    let note = e
        .notes
        .iter()
        .find(|n| n.starts_with("Unlike GPUs"))
        .expect("a note on unlike GPUs");
    assert!(
        note.contains("smallest GPU, GeForce RTX 3060 12GB"),
        "{note}"
    );
    assert!(note.contains("get_kv_cache_configs"), "{note}");
    // Every rank holds the same: the 3060's plan, judged on each card.
    assert_eq!(e.devices[0].total_bytes, e.devices[1].total_bytes);
    assert!(e.devices[0].headroom_bytes > e.devices[1].headroom_bytes);
    assert_eq!(e.gpu_name, "GeForce RTX 3060 12GB");
    assert_eq!(e.devices[1].blocks, None);
}

#[test]
fn sglang_budgets_the_smallest_free_memory_and_refuses_an_unbalanced_group() {
    let note = |devices: &str| {
        let e = run(&format!(
            "mode=inference&runtime=sglang&model=llama-3.1-8b&devices={devices}&gpus=2&sharding=tensor"
        ));
        e.notes
            .iter()
            .find(|n| n.starts_with("Unlike GPUs"))
            .expect("a note on unlike GPUs")
            .clone()
    };
    // 24 GB and 12 GB: the smaller is under 90% of the larger, which SGLang refuses.
    let unbalanced = note("rtx-4090,rtx-3060");
    assert!(
        unbalanced.contains("smallest GPU, GeForce RTX 3060 12GB"),
        "{unbalanced}"
    );
    assert!(
        unbalanced.contains("all-reduces it with MIN"),
        "{unbalanced}"
    );
    assert!(unbalanced.contains("refuses to start"), "{unbalanced}");
    // Two 24 GB cards of unlike kinds are within a tenth of each other.
    let balanced = note("rtx-4090,rtx-3090");
    assert!(!balanced.contains("refuses"), "{balanced}");
}

#[test]
fn bad_device_lists_are_refused_naming_the_field() {
    assert!(
        refused(&format!("{LLAMA}&devices=rtx-4090,warp-drive&gpus=2"))[0].contains("warp-drive")
    );
    assert!(
        refused(&format!("{LLAMA}&devices=rtx-4090,,rtx-3090&gpus=3"))[0].contains("empty item")
    );
    assert_eq!(
        refused(&format!("{LLAMA}&devices=rtx-4090,rtx-3090")),
        ["gpus"]
    );
    assert_eq!(
        refused(&format!(
            "{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2&tensor-split=1,2,3"
        )),
        ["tensor-split"]
    );
    assert_eq!(
        refused(&format!("{LLAMA}&gpus=2&tensor-split=1,1")),
        ["tensor-split"]
    );
    assert_eq!(
        refused(&format!(
            "{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2&vram=20GiB"
        )),
        ["vram"]
    );
    assert!(refused(&format!(
        "{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2&tensor-split=0,0"
    ))[0]
        .contains("every proportion is 0"));
    assert!(refused(&format!(
        "{LLAMA}&devices=rtx-4090,rtx-3090&gpus=2&tensor-split=1,-1"
    ))[0]
        .contains("not a proportion"));
}

#[test]
fn alike_gpus_have_no_device_plans() {
    let e = run(&format!("{LLAMA}&gpus=2"));
    assert!(e.devices.is_empty());
    let json = serde_json::to_value(&e).unwrap();
    assert!(json.get("devices").is_none());
}

#[test]
fn searches_for_one_kind_of_gpu_take_the_smallest_listed() {
    let mut s = scenario(&format!(
        "{LLAMA}&devices=rtx-4090,rtx-3060&gpus=2&tensor-split=1,1"
    ))
    .unwrap();
    s.make_alike();
    assert_eq!(s.gpu, "rtx-3060");
    assert!(s.devices.is_empty() && s.tensor_split.is_none());
    assert!(estimate(&s).unwrap().devices.is_empty());
}
