//! The live mode on a real three-member ZooKeeper ensemble: the paused
//! holder's plain UPDATE is found stale, the fenced one (czxid as the
//! token) refused; a leader killed or SIGSTOPped while B waits leaves the fence holding
//! and the tokens in order; the holder's member cut off from the majority
//! loses it its session, its late plain UPDATE is found stale and the
//! fenced one refused; five workers watching the lock directory (the
//! herd) get more watch notifications than the same five watching their
//! predecessors (and each file's own bound on the count holds); the
//! *leader* cut off with the holder on it, slow peer links, a leader
//! killed while a lock request is in flight leave the fence holding; a
//! client's connection cut while its session lives is no alarm; nothing
//! the run started outlives it.
//!
//! Needs Debian's `zookeeper` (3.8, with a Java runtime) and the
//! Redis/PostgreSQL of the live mode; without them the test prints one loud
//! line saying what it skipped and why (`.ci/run` installs the packages so
//! CI always runs it). One ensemble serves every scenario of the run: the
//! tests that read it share one `fencesim live` run.

use std::sync::OnceLock;

use super::cluster_kit::{
    assert_bad_input, assert_killed_harness_leaves_nothing, cell, present, run_and_check, Table,
};
use fencesim::live::cluster::ClusterKind;

/// The one run of every ZooKeeper scenario (None: the servers are missing).
fn zk_run() -> Option<&'static Table> {
    static RUN: OnceLock<Option<Table>> = OnceLock::new();
    RUN.get_or_init(|| {
        present(ClusterKind::Zk, "ZooKeeper live scenarios").then(|| {
            run_and_check(
                ClusterKind::Zk,
                &[
                    "live/zk-gc-pause-plain-update.toml",
                    "live/zk-gc-pause-fenced-update.toml",
                    "live/zk-leader-killed-during-grant.toml",
                    "live/zk-leader-paused-during-grant.toml",
                    "live/zk-partitioned-holder-plain-update.toml",
                    "live/zk-partitioned-holder-fenced.toml",
                    "live/zk-predecessor-watch.toml",
                    "live/zk-herd-watch.toml",
                    "live/zk-partitioned-leader-fenced.toml",
                    "live/zk-delayed-peers-fenced.toml",
                    "live/zk-client-cut-session-lives.toml",
                    "live/zk-member-crash-during-acquire.toml",
                ],
                &[
                    "live-zk-gc-pause-plain-update",
                    "live-zk-partitioned-holder-plain-update",
                ],
                &[
                    "live-zk-gc-pause-fenced-update",
                    "live-zk-leader-killed-during-grant",
                    "live-zk-leader-paused-during-grant",
                    "live-zk-partitioned-holder-fenced",
                    "live-zk-predecessor-watch",
                    "live-zk-herd-watch",
                    "live-zk-partitioned-leader-fenced",
                    "live-zk-delayed-peers-fenced",
                    "live-zk-member-crash-during-acquire",
                ],
            )
        })
    })
    .as_ref()
}

#[test]
fn zk_lock_is_found_stale_unfenced_and_fenced_through_pause_leader_death_and_partition() {
    // run_and_check asserts every scenario's verdict.
    let Some(table) = zk_run() else { return };
    assert!(cell(table, "live-zk-partitioned-holder-fenced", "none").is_some());
}

#[test]
fn a_client_connection_cut_while_the_session_lives_is_no_alarm_and_the_holder_keeps_the_lock() {
    // Clean in both trials and (the file's max_fence_rejected = 0, which
    // the run's exit status holds) no write refused: B never owned the
    // lock while A's session lived.
    let Some(table) = zk_run() else { return };
    assert_eq!(
        cell(table, "live-zk-client-cut-session-lives", "none"),
        Some("2/2")
    );
    assert_eq!(
        cell(table, "live-zk-client-cut-session-lives", "fence_rejected"),
        None
    );
}

#[test]
fn five_waiters_watching_the_lock_directory_get_more_notifications_than_watching_predecessors() {
    let Some(table) = zk_run() else { return };
    let per_trial = |s: &str| -> f64 {
        let v = cell(table, s, "watch_notified/trial");
        v.and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{s}: no watch_notified/trial row: {table:?}"))
    };
    let (herd, predecessor) = (
        per_trial("live-zk-herd-watch"),
        per_trial("live-zk-predecessor-watch"),
    );
    // Four waiters: the recipe wakes each about once; the herd wakes every
    // waiter on every create and delete (at least 4 + 3 + 2 + 1).
    assert!(predecessor >= 1.0, "predecessor {predecessor}");
    assert!(
        herd > predecessor && herd >= 10.0,
        "herd {herd} per trial vs predecessor {predecessor}"
    );
}

#[test]
fn a_member_beyond_the_three_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [[fault]]\nkind = \"crash\"\nnode = \"member/3\"\nat_ms = 10\n[expect]\n",
        "unknown member \"member/3\"",
    );
}

#[test]
fn a_watch_count_bound_on_an_etcd_lock_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"etcd-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [expect]\nmin_watch_notified = 8\n",
        "watch notifications are counted on a ZooKeeper lock (zk-lock); this scenario's lock is etcd-lock",
    );
}

#[test]
fn a_maximum_watch_count_below_the_minimum_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [expect]\nmin_watch_notified = 8\nmax_watch_notified = 6\n",
        "bad.toml:11:22: max_watch_notified = 6 is below min_watch_notified = 8",
    );
}

#[test]
fn a_negative_watch_count_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [expect]\nmax_watch_notified = -1\n",
        "bad.toml:10:",
    );
}

#[test]
fn a_cut_of_the_lock_connection_on_a_redis_lock_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"redis-set-nx-del\"\nwrite = \"plain\"\nttl_ms = 100\n[[worker]]\nname = \"A\"\n\
         [[fault]]\nkind = \"cut\"\nnode = \"worker/A\"\nmessage = \"lock\"\nafter = \"read_ok\"\n[expect]\n",
        "message = \"lock\" goes with kind = \"cut\" on an etcd or ZooKeeper lock",
    );
}

#[test]
fn an_unknown_zk_watch_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"zk-lock\"\nzk_watch = \"everyone\"\nwrite = \"plain\"\nttl_ms = 1000\n\
         [[worker]]\nname = \"A\"\n[expect]\n",
        "unsupported zk_watch \"everyone\"; the live mode supports: predecessor, herd",
    );
}

#[test]
fn a_killed_harness_takes_its_zookeeper_members_with_it_and_the_next_run_sweeps_its_directory() {
    if !present(
        ClusterKind::Zk,
        "a killed harness leaves no ZooKeeper member",
    ) {
        return;
    }
    assert_killed_harness_leaves_nothing(ClusterKind::Zk, "live/zk-gc-pause-plain-update.toml");
}
