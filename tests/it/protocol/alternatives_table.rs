//! The article's "Sometimes the right lock is no distributed lock" table:
//! one database owning all state, a durable queue, a best-effort cache
//! lease — each safe under the faults that make a lease beside a store
//! lose an update, and the duplicates they allow cost only work.

use crate::common;

use fencesim::check::{self, ViolationKind};
use fencesim::{sim, suite};

fn report(rel: &str, seed: u64) -> check::Report {
    let s = common::load(&common::scenario_path(rel));
    check::check(&sim::run(&s.options, seed, false).history)
}

#[test]
fn one_database_owning_lock_and_data_loses_no_update_where_a_lease_beside_the_store_does() {
    let twin = common::load(&common::scenario_path(
        "alternatives/lease-beside-store.toml",
    ));
    let fenced_writes_only = common::load(&common::scenario_path(
        "article/gc-pause-write-fence-lost-update.toml",
    ));
    let single_db = common::load(&common::scenario_path("alternatives/single-db.toml"));
    let lost =
        |s| suite::run_scenario(s, 0..50, 2).agg.failing_seeds[ViolationKind::LostUpdate as usize];
    assert_eq!(lost(&twin), 50);
    assert_eq!(lost(&fenced_writes_only), 50);
    let clean = suite::run_scenario(&single_db, 0..50, 2);
    assert_eq!(clean.agg.failing_seeds, [0; check::VIOLATION_KINDS]);
    assert_eq!(
        clean.agg.seeds_with_stale_attempts, 50,
        "A's late UPDATE reached the database"
    );
}

#[test]
fn a_redelivered_job_is_done_twice_and_stored_once() {
    let r = report("alternatives/queue-claim.toml", 0);
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(
        r.info.wasted_work, 1,
        "B's result for the redelivered job is refused"
    );
    assert_eq!(r.info.writes_accepted, 1, "one result for the one job");
    assert!(
        r.info.stale_attempts >= 1,
        "the paused consumer's result reached the queue"
    );
}

#[test]
fn a_duplicate_cache_refresh_loses_its_cas_and_only_wastes_work() {
    let r = report("alternatives/cache-lease.toml", 0);
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(r.info.wasted_work, 1);
}

#[test]
fn random_faults_never_corrupt_the_alternatives() {
    for rel in [
        "alternatives/random-faults-single-db.toml",
        "alternatives/random-faults-queue-claim.toml",
        "alternatives/random-faults-cache-lease.toml",
    ] {
        let s = common::load(&common::scenario_path(rel));
        let r = suite::run_scenario(&s, 0..300, 2);
        for kind in [
            ViolationKind::LostUpdate,
            ViolationKind::TokenOrder,
            ViolationKind::Liveness,
        ] {
            assert_eq!(r.agg.failing_seeds[kind as usize], 0, "{rel}: {kind}");
        }
    }
    let unsafe_twin = common::load(&common::scenario_path(
        "random/random-faults-redis-set-nx.toml",
    ));
    let r = suite::run_scenario(&unsafe_twin, 0..300, 2);
    assert!(r.agg.failing_seeds[ViolationKind::LostUpdate as usize] > 0);
}
