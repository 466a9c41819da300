//! Feeds arbitrary bytes to `vramfit_engine::query::scenario_from_query` (what a hand-edited URL
//! gives the page), then estimates and solves whatever scenario comes out: none of it may panic,
//! the total must be the sum of its components, no figure may be NaN, the solver's max batch must
//! be the boundary, an OOM scenario must get a ladder, and a scenario that estimates must survive
//! the query round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vramfit_engine::query::{scenario_from_query, scenario_to_query};
use vramfit_engine::{estimate, estimate::total_bytes, solver};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (scenario, _errors) = scenario_from_query(&text);
    let Ok(e) = estimate(&scenario) else {
        return;
    };
    assert!(e.params.is_finite() && e.trainable_params.is_finite());
    let sum = e
        .components
        .iter()
        .fold(0u64, |acc, c| acc.saturating_add(c.bytes.0));
    assert_eq!(sum, e.total_bytes.0);
    assert_eq!(total_bytes(&scenario).ok(), Some(e.total_bytes));
    let target = data.first().map(|b| u32::from(*b) * 16);
    let solution = solver::solve(&scenario, target).expect("a scenario that estimates also solves");
    let fits_at = |batch: u32| {
        let mut c = scenario.clone();
        c.batch = batch;
        estimate(&c).is_ok_and(|e| e.total_bytes <= e.usable_bytes)
    };
    match solution.max_batch {
        Some(max) => {
            assert!(fits_at(max), "max_batch {max} does not fit");
            assert!(
                max >= 10_000_000 || !fits_at(max + 1),
                "max_batch {max} is not the boundary"
            );
        }
        None => assert!(!fits_at(1)),
    }
    // Every OOM scenario gets a ladder whose last step is the only one that may fit (the last
    // step doubles the GPUs, which `set` refuses past 1e7).
    let fits = e.total_bytes <= e.usable_bytes;
    if scenario.gpus <= 5_000_000 {
        assert_eq!(solution.ladder.is_empty(), fits, "{:?}", solution.ladder);
    }
    if let Some((_, before)) = solution.ladder.split_last() {
        assert!(before
            .iter()
            .all(|step| step.verdict == vramfit_engine::Verdict::Oom));
    }
    let (back, errors) = scenario_from_query(&scenario_to_query(&scenario));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(back, scenario);
});
