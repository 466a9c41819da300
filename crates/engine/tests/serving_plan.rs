//! The serving plan's answers for runtimes without a shared pool: llama.cpp gives each request a
//! slot of its own (`-np`, with `-c` the context of every slot together), and MLX serves one
//! request at a time, so "how many requests of this context" is the most slots that fit, not a
//! pool divided by the context.

use vramfit_engine::estimate::breakdown;
use vramfit_engine::runtime::ContextLength;
use vramfit_engine::serving_plan::plan_serving;
use vramfit_engine::Scenario;

fn scenario(pairs: &[(&str, &str)]) -> Scenario {
    let (s, errors) = Scenario::from_pairs(pairs.iter().copied());
    assert!(errors.is_empty(), "{errors:?}");
    s
}

/// llama-server with `slots` slots of `tokens` each fits the GPU, with every layer on it.
fn llama_server_fits(base: &Scenario, slots: u32, tokens: u32) -> bool {
    let mut s = base.clone();
    s.parallel = slots;
    s.ctx_size = Some(ContextLength::Tokens(slots * tokens));
    s.fit = Some(false);
    breakdown(&s).is_ok_and(|b| b.verdict().fits())
}

#[test]
fn llama_cpp_serves_each_request_in_a_slot_of_its_own() {
    let s = scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", "rtx-4090"),
    ]);
    let plan = plan_serving(&s, Some(4), None).unwrap();
    // The longest context four slots hold: four of it fit, four a little longer do not.
    let longest = plan.max_context.expect("four short requests fit on 24 GB");
    assert!(llama_server_fits(&s, 4, longest));
    assert!(!llama_server_fits(&s, 4, longest + 512), "{longest}");
    // Each point of the curve is the most slots of its context that fit.
    assert!(plan.curve.len() > 3, "{:?}", plan.curve);
    for &(tokens, requests) in &plan.curve {
        let slots = requests as u32;
        assert_eq!(f64::from(slots), requests);
        assert!(llama_server_fits(&s, slots, tokens), "{tokens}: {slots}");
        assert!(
            !llama_server_fits(&s, slots + 1, tokens),
            "{tokens}: {slots}"
        );
    }
    assert!(plan.curve.windows(2).all(|w| w[1].1 <= w[0].1));
    // Four requests of the scenario's context fit a smaller card than the 4090.
    let smallest = plan.smallest_gpu.expect("a catalogue GPU serves four");
    assert_ne!(smallest, "rtx-4090");
    assert_eq!(plan.fewest_gpus, Some(1));
}

#[test]
fn without_users_the_plan_keeps_the_scenarios_own_slots() {
    let s = scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "llama.cpp"),
        ("gpu", "rtx-4090"),
        ("parallel", "8"),
        ("ctx-size", "65536"),
    ]);
    let given = plan_serving(&s, None, None).unwrap();
    assert_eq!(given.max_concurrency, 8.0);
    assert_eq!(given.context_tokens, 8192);
    // One request of 8k needs less than eight do.
    let one = plan_serving(&s, Some(1), None).unwrap();
    let fits_on = |id: &Option<String>| {
        vramfit_engine::gpu_catalogue::find(id.as_deref().unwrap())
            .unwrap()
            .advertised_gib
    };
    assert!(fits_on(&one.smallest_gpu) <= fits_on(&given.smallest_gpu));
}

#[test]
fn mlx_serves_one_request_whose_cache_holds_the_context() {
    let s = scenario(&[
        ("model", "llama-3.1-8b"),
        ("mode", "inference"),
        ("runtime", "mlx"),
        ("mlx-bits", "4"),
        ("gpu", "m4-16"),
    ]);
    let plan = plan_serving(&s, Some(1), None).unwrap();
    let longest = plan
        .max_context
        .expect("a 4-bit 8B model leaves room on 16 GB");
    let at = |seq: u32| {
        let mut c = s.clone();
        c.seq = seq;
        breakdown(&c).is_ok_and(|b| b.verdict().fits())
    };
    assert!(at(longest) && !at(longest + 256), "{longest}");
    assert!(plan.curve.iter().all(|&(_, requests)| requests == 1.0));
    assert_eq!(plan_serving(&s, Some(2), None).unwrap().max_context, None);
}
