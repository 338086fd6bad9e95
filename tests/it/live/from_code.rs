//! `fencesim check --code P --expect unsafe --emit-live DIR` on real
//! servers: the code-level shortest counterexample, written as a live
//! scenario on the protocol's live recipe, shows the same violation in
//! its reruns (it reproduces: at least four in five), and the written
//! file is one `fencesim live` runs.

use std::path::{Path, PathBuf};

use super::cluster_kit::present;
use crate::common::{fencesim_command, live_servers_present, live_shared, run_text};
use fencesim::live::cluster::ClusterKind;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fencesim-from-code-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `check --code <args…> --expect unsafe --emit-live <out> --live-reruns N`.
fn emit_live(args: &[&str], out: &Path, reruns: &str) -> (i32, String) {
    let mut all = vec!["check", "--code"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--expect", "unsafe", "--emit-live"]);
    all.push(out.to_str().expect("utf-8"));
    all.extend_from_slice(&["--live-reruns", reruns]);
    run_text(fencesim_command().args(&all))
}

/// The line that says how many reruns showed `kind`.
fn shown_line<'t>(text: &'t str, kind: &str) -> &'t str {
    text.lines()
        .find(|l| l.contains("live scenario written to") && l.contains(kind))
        .unwrap_or_else(|| panic!("a rerun line for {kind}:\n{text}"))
}

#[test]
fn redis_set_nx_shortest_counterexample_becomes_a_live_scenario_that_finds_the_stale_write() {
    if !live_servers_present("check --code --emit-live, redis-set-nx") {
        return;
    }
    let _one = live_shared();
    let out = scratch("redis");
    let (code, text) = emit_live(&["redis-set-nx"], &out, "3");
    assert_eq!(code, 0, "unsafe as expected, and reproduced live:\n{text}");
    let line = shown_line(&text, "stale_write");
    assert!(line.ends_with(": reproduces"), "{line}");
    let file = out.join("live-code-redis-set-nx-stale-write.toml");
    let written = std::fs::read_to_string(&file).expect("the live scenario");
    assert!(
        written.contains("kind = \"delay\"") && written.contains("until = \"other_op_done\""),
        "the late write is a held UPDATE:\n{written}"
    );
    let (code, rerun) = run_text(fencesim_command().args([
        "live",
        file.to_str().expect("utf-8"),
        "--trials",
        "2",
        "--jobs",
        "1",
        "--out",
        out.to_str().expect("utf-8"),
    ]));
    assert_eq!(code, 0, "the written file meets its expectation:\n{rerun}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn incr_beside_lease_failover_becomes_the_live_failover_whose_promoted_replica_reissues_the_token()
{
    if !live_servers_present("check --code --emit-live, incr-beside-lease") {
        return;
    }
    let _one = live_shared();
    let out = scratch("incr");
    let (code, text) = emit_live(&["incr-beside-lease"], &out, "3");
    assert_eq!(code, 0, "unsafe as expected, and reproduced live:\n{text}");
    let line = shown_line(&text, "token_order");
    assert!(line.ends_with(": reproduces"), "{line}");
    let file = out.join("live-code-incr-beside-lease-token-order.toml");
    let written = std::fs::read_to_string(&file).expect("the live scenario");
    assert!(
        written.contains("kind = \"failover\"") && !written.contains("kind = \"pause\""),
        "the failover alone:\n{written}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn fenced_check_then_write_default_path_falls_back_to_the_holding_pause_and_finds_the_stale_write_live(
) {
    // At the default bounds the shortest path pauses the other worker,
    // which has no live form; the shortest path under the simulator's
    // holding pause stalls the stale worker between check and update
    // (the `--pauses 0` path's form: `to_live.rs`).
    if !live_servers_present("check --code --emit-live, fenced-check-then-write") {
        return;
    }
    let _one = live_shared();
    let out = scratch("check-then-update");
    let (code, text) = emit_live(&["fenced-check-then-write"], &out, "3");
    assert_eq!(code, 0, "unsafe as expected, and reproduced live:\n{text}");
    assert!(
        text.contains("has no live form: step 8 (worker/1 pauses")
            && text.contains("when a pause holds what reaches the worker (--pause-holds: 22 steps"),
        "{text}"
    );
    assert!(
        text.contains("write check-then-update")
            && text.contains("pause of worker/A after fence_checked"),
        "{text}"
    );
    assert!(
        shown_line(&text, "stale_write").ends_with(": reproduces"),
        "{text}"
    );
    let file = out.join("live-code-fenced-check-then-write-stale-write.toml");
    let written = std::fs::read_to_string(&file).expect("the live scenario");
    assert!(
        written.starts_with("# the search's shortest path ("),
        "{written}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn etcd_mutex_without_fence_becomes_a_paused_holder_on_the_etcd_cluster_that_finds_the_stale_write()
{
    if !present(ClusterKind::Etcd, "check --code --emit-live, etcd-mutex") {
        return;
    }
    let _one = live_shared();
    let out = scratch("etcd");
    let (code, text) = emit_live(&["etcd-mutex", "--fence", "false"], &out, "2");
    assert_eq!(code, 0, "unsafe as expected, and reproduced live:\n{text}");
    assert!(
        text.contains("pause of worker/A after write_sent"),
        "the pause after the write went out:\n{text}"
    );
    let line = shown_line(&text, "stale_write");
    assert!(line.contains("shown in 2/2 reruns"), "{line}");
    let _ = std::fs::remove_dir_all(&out);
}
