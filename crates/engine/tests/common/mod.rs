//! What the engine's integration tests share.

use vramfit_engine::Scenario;

/// A scenario from a test file's base pairs and the pairs one test changes, set in order (a later
/// key wins). An invalid pair fails the test, so a typo cannot leave a default in place.
pub fn scenario(base: &[(&str, &str)], changes: &[(&str, &str)]) -> Scenario {
    let (s, errors) = Scenario::from_pairs(base.iter().chain(changes).copied());
    assert!(errors.is_empty(), "{errors:?}");
    s
}
