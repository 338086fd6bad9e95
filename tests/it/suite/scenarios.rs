//! Data-driven: every bundled scenario file meets the expectation written
//! in it (unsafe protocols found unsafe in their seed budget, safe twins
//! clean and not vacuous).

use crate::common;

use fencesim::{scenario, suite};

#[test]
fn every_bundled_scenario_meets_its_expectation() {
    let _heavy = crate::common::heavy();
    let files =
        scenario::collect(&[common::root().join("scenarios")]).expect("scenarios/ is readable");
    assert!(
        files.len() >= 14,
        "expected the bundled suite, found {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let s = common::load(file);
        let result = suite::run_scenario(&s, s.seeds.clone(), 2);
        assert_eq!(result.agg.seeds, s.seeds.end - s.seeds.start);
        if !result.met() {
            failures.push(format!("{}: {:?}", file.display(), result.problems));
        }
    }
    assert!(
        failures.is_empty(),
        "unmet expectations:\n{}",
        failures.join("\n")
    );
}

#[test]
fn safe_twins_are_found_unsafe_without_the_fence() {
    let _heavy = crate::common::heavy();
    // The evidence that fenced-cas being clean means something: the same
    // pause, the same seeds, a lease without a fence, and the checker fires.
    let fenced = common::load(&common::scenario_path("article/gc-pause-fenced-cas.toml"));
    let mut unfenced = fenced.clone();
    let mut p = unfenced.options.protocol;
    p.kind = fencesim::protocol::ProtocolKind::RedisSetNx;
    unfenced.options.set_protocol(p);
    let clean = suite::run_scenario(&fenced, 0..50, 1);
    let broken = suite::run_scenario(&unfenced, 0..50, 1);
    assert_eq!(
        clean.agg.failing_seeds,
        [0; fencesim::check::VIOLATION_KINDS]
    );
    assert_eq!(
        broken.agg.failing_seeds[fencesim::check::ViolationKind::StaleWrite as usize],
        50
    );
}
