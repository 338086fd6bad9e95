//! The live mode on a real three-member etcd cluster: the paused holder's
//! plain UPDATE is found stale, the fenced one refused; a leader killed
//! or SIGSTOPped while B waits, a partition of the holder's member and the
//! leader's peer messages held 150 ms during B's grant leave the fence
//! holding and the revisions in order; a client's connections cut while
//! its lease lives are no alarm; nothing the run started outlives it.
//!
//! Needs Debian's `etcd-server` (and the Redis/PostgreSQL of the live
//! mode); without them the test prints one loud line saying what it
//! skipped and why (`.ci/run` installs the packages so CI always runs it).
//! One cluster serves every scenario of the run (started once, repaired
//! between trials), so its start-up is paid once.

use super::cluster_kit::{
    assert_bad_input, assert_killed_harness_leaves_nothing, cell, present, run_and_check,
};
use fencesim::live::cluster::ClusterKind;

#[test]
fn etcd_lock_is_found_stale_unfenced_and_fenced_through_pause_leader_death_partition_and_slow_peers(
) {
    if !present(ClusterKind::Etcd, "etcd live scenarios") {
        return;
    }
    let table = run_and_check(
        ClusterKind::Etcd,
        &[
            "live/etcd-gc-pause-plain-update.toml",
            "live/etcd-gc-pause-fenced-update.toml",
            "live/etcd-leader-killed-during-grant.toml",
            "live/etcd-leader-paused-during-grant.toml",
            "live/etcd-partitioned-holder-fenced.toml",
            "live/etcd-delayed-peers-fenced.toml",
            "live/etcd-client-cut-lease-lives.toml",
        ],
        &["live-etcd-gc-pause-plain-update"],
        &[
            "live-etcd-gc-pause-fenced-update",
            "live-etcd-leader-killed-during-grant",
            "live-etcd-leader-paused-during-grant",
            "live-etcd-partitioned-holder-fenced",
            "live-etcd-delayed-peers-fenced",
        ],
    );
    // A's connections cut, its lease lived on another member: clean, and
    // (its file's max_fence_rejected = 0, held by the exit status) no refusal.
    assert_eq!(
        cell(&table, "live-etcd-client-cut-lease-lives", "none"),
        Some("2/2")
    );
    // B's grant went through the slow quorum and A's late write was still refused.
    assert_eq!(
        cell(&table, "live-etcd-delayed-peers-fenced", "fence_rejected"),
        Some("2/2")
    );
}

#[test]
fn a_member_fault_in_a_redis_scenario_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"redis-set-nx-del\"\nwrite = \"plain\"\nttl_ms = 50\n[[worker]]\nname = \"A\"\n\
         [[fault]]\nkind = \"partition\"\nnode = \"member/0\"\nafter = \"worker/A:read_ok\"\nduration_ms = 10\n[expect]\n",
        "member/0 is a member of an etcd or ZooKeeper cluster",
    );
}

#[test]
fn a_member_pause_without_duration_ms_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"etcd-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [[fault]]\nkind = \"pause\"\nnode = \"member/leader\"\nat_ms = 10\n[expect]\n",
        "this fault needs `duration_ms`",
    );
}

#[test]
fn a_member_delay_without_for_ms_is_bad_input_naming_the_file() {
    assert_bad_input(
        "lock = \"etcd-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n[[worker]]\nname = \"A\"\n\
         [[fault]]\nkind = \"delay\"\nnode = \"member/leader\"\nat_ms = 0\nby_ms = 100\n[expect]\n",
        "this fault needs `for_ms`",
    );
}

#[test]
fn a_killed_harness_takes_its_etcd_members_with_it_and_the_next_run_sweeps_its_directory() {
    if !present(ClusterKind::Etcd, "a killed harness leaves no etcd member") {
        return;
    }
    assert_killed_harness_leaves_nothing(ClusterKind::Etcd, "live/etcd-gc-pause-plain-update.toml");
}
