//! The live mode on a real three-member ZooKeeper ensemble: the paused
//! holder's plain UPDATE is found stale, the fenced one (czxid as the
//! token) refused; a leader killed while B waits leaves the fence holding
//! and the tokens in order; nothing the run started outlives it.
//!
//! Needs Debian's `zookeeper` (3.8, with a Java runtime) and the
//! Redis/PostgreSQL of the live mode; without them the test prints one loud
//! line saying what it skipped and why (`.ci/run` installs the packages so
//! CI always runs it). One ensemble serves every scenario of the run.

use super::cluster_kit::{
    assert_bad_input, assert_killed_harness_leaves_nothing, present, run_and_check,
};
use fencesim::live::cluster::ClusterKind;

#[test]
fn zk_lock_is_found_stale_unfenced_and_fenced_through_pause_and_leader_death() {
    if !present(ClusterKind::Zk, "ZooKeeper live scenarios") {
        return;
    }
    run_and_check(
        ClusterKind::Zk,
        &[
            "live/zk-gc-pause-plain-update.toml",
            "live/zk-gc-pause-fenced-update.toml",
            "live/zk-leader-killed-during-grant.toml",
        ],
        "live-zk-gc-pause-plain-update",
        &[
            "live-zk-gc-pause-fenced-update",
            "live-zk-leader-killed-during-grant",
        ],
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
fn a_user_worker_program_with_a_zk_lock_is_bad_input_naming_the_file() {
    assert_bad_input(
        "worker_cmd = \"true\"\nlock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n\
         [[worker]]\nname = \"A\"\n[expect]\n",
        "needs the built-in worker",
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
