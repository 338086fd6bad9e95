//! ZooKeeper's lock recipe (zk-sequential): the sequence number fences a
//! holder whose session expired, the same recipe without it does not, and
//! the herd variant costs watch notifications the predecessor watch saves.

use crate::common;

use fencesim::check::ViolationKind;
use fencesim::scenario::Scenario;
use fencesim::suite;

fn scenario(name: &str) -> Scenario {
    common::load(&common::scenario_path(&format!("real-systems/{name}.toml")))
}

#[test]
fn the_fenced_recipe_is_clean_across_ten_thousand_seeds_and_not_vacuous() {
    let s = scenario("zk-sequential-gc-pause-fenced");
    let r = suite::run_scenario(&s, 0..10_000, 2);
    assert!(r.met(), "{:?}", r.problems);
    assert_eq!(r.agg.failing_seeds, [0; fencesim::check::VIOLATION_KINDS]);
    assert_eq!(r.agg.seeds_with_stale_attempts, 10_000);
}

#[test]
fn the_recipe_without_the_sequence_number_is_found_unsafe_under_the_same_pause() {
    let r = suite::run_scenario(&scenario("zk-sequential-gc-pause"), 0..200, 2);
    assert!(r.met(), "{:?}", r.problems);
    assert_eq!(r.agg.failing_seeds[ViolationKind::StaleWrite as usize], 200);
}

#[test]
fn under_random_faults_the_fence_keeps_every_seed_clean_and_its_absence_does_not() {
    // Tokens on reads too: write-only fencing still lets a stale write land
    // between the new holder's read and write (gc-pause-write-fence-lost-update).
    let mut fenced = common::with_random_faults(scenario("zk-sequential-gc-pause-fenced"));
    let mut p = fenced.options.protocol;
    p.fence_reads = true;
    fenced.options.set_protocol(p);
    let unfenced = common::with_random_faults(scenario("zk-sequential-gc-pause"));
    let clean = suite::run_scenario(&fenced, 0..2_000, 2);
    let broken = suite::run_scenario(&unfenced, 0..2_000, 2);
    // Safety only: random crashes of the ZooKeeper server (which forgets its
    // sessions on restart) can leave waiters stuck — a liveness finding this
    // test does not judge.
    for kind in ViolationKind::ALL
        .into_iter()
        .filter(|k| *k != ViolationKind::Liveness)
    {
        assert_eq!(
            clean.agg.failing_seeds[kind as usize], 0,
            "{kind}: replay seed {:?}",
            clean.replay_seed
        );
    }
    assert!(
        clean.agg.seeds_with_stale_attempts >= 100,
        "the fence was tested"
    );
    assert!(broken.agg.failing_seeds[ViolationKind::StaleWrite as usize] >= 100);
}

#[test]
fn the_herd_wakes_every_waiter_and_the_predecessor_watch_one_per_handover() {
    let notifications = |name: &str| {
        let s = scenario(name);
        (0..20)
            .map(|seed| suite::run_seed(&s, seed).report.info.watch_notifications)
            .collect::<Vec<_>>()
    };
    let herd = notifications("zk-sequential-herd");
    let predecessor = notifications("zk-sequential-predecessor-watch");
    // Five workers, five handovers (A's expiry and four releases) but only
    // four with someone waiting: the predecessor watch wakes one each.
    assert!(predecessor.iter().all(|&n| n == 4), "{predecessor:?}");
    assert!(herd.iter().all(|&n| n >= 10), "{herd:?}");
}
