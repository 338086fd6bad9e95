//! The DynamoDB lock client (dynamodb-heartbeat): the RVN is no fence, an
//! owner-change counter in the same conditional put is one, and a waiter
//! whose clock runs fast takes over a live holder's lock.

use crate::common;

use fencesim::check::ViolationKind;
use fencesim::scenario::Scenario;
use fencesim::suite;

fn scenario(name: &str) -> Scenario {
    common::load(&common::scenario_path(&format!("real-systems/{name}.toml")))
}

#[test]
fn with_the_owner_change_counter_as_fence_ten_thousand_seeds_are_clean_and_not_vacuous() {
    let r = suite::run_scenario(
        &scenario("dynamodb-heartbeat-gc-pause-fenced"),
        0..10_000,
        2,
    );
    assert!(r.met(), "{:?}", r.problems);
    assert_eq!(r.agg.failing_seeds, [0; fencesim::check::VIOLATION_KINDS]);
    assert_eq!(r.agg.seeds_with_stale_attempts, 10_000);
}

#[test]
fn the_rvn_alone_lets_a_paused_holder_overwrite_the_new_one() {
    let r = suite::run_scenario(&scenario("dynamodb-heartbeat-gc-pause"), 0..200, 2);
    assert!(r.met(), "{:?}", r.problems);
    assert_eq!(r.agg.failing_seeds[ViolationKind::StaleWrite as usize], 200);
}

#[test]
fn a_fast_waiter_clock_takes_over_early_and_a_true_one_does_not() {
    let fast = scenario("dynamodb-heartbeat-clock-drift");
    let mut true_clock = fast.clone();
    for node in &mut true_clock.options.nodes {
        node.clock.drift_ppm = 0;
    }
    let early = suite::run_scenario(&fast, 0..200, 2);
    let on_time = suite::run_scenario(&true_clock, 0..200, 2);
    assert_eq!(
        early.agg.failing_seeds[ViolationKind::StaleWrite as usize],
        200
    );
    assert_eq!(
        on_time.agg.failing_seeds,
        [0; fencesim::check::VIOLATION_KINDS]
    );
    assert_eq!(
        on_time.agg.seeds_with_stale_attempts, 0,
        "no takeover while the holder is alive"
    );
}
