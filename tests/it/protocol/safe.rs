//! Every scenario expected clean stays clean over at least 10 000 seeds —
//! and, in the same sweep, still exercises its fence (the vacuity guard).
//! Its unsafe twins are found unsafe in `scenarios.rs` within their budgets.

use crate::common;

use fencesim::{scenario, suite};

const SEEDS: u64 = 10_000;

#[test]
fn every_safe_scenario_is_clean_across_ten_thousand_seeds() {
    let _heavy = crate::common::heavy();
    let files =
        scenario::collect(&[common::root().join("scenarios")]).expect("scenarios/ is readable");
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let s = common::load(file);
        if !s.expect.must_find.is_empty() {
            continue;
        }
        let result = suite::run_scenario(&s, 0..SEEDS, 2);
        assert_eq!(result.agg.seeds, SEEDS);
        checked += 1;
        if !result.met() {
            failures.push(format!("{}: {:?}", file.display(), result.problems));
        }
    }
    assert!(
        checked >= 10,
        "expected the bundled safe twins, found {checked}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
