//! Redlock: each bundled failure is caused by the fault its scenario names.
//! The same file, the same partitions, the same seeds — with the named
//! fault taken away (no clock jump), or the master configured as the
//! critics' answers say (`fsync = "always"`, a restart delay of at least
//! the TTL), no two clients ever believe they hold the lock at once and no
//! stale write lands. A clean control cannot be a scenario of its own (no
//! stale attempt reaches the resource, so the vacuity guard would refuse
//! it); these tests are the controls, and each asserts the second client
//! did get the lock (after the first released) so "clean" is not "stuck".

use crate::common;

use fencesim::check::{self, ViolationKind};
use fencesim::history::Kind;
use fencesim::scenario::Scenario;
use fencesim::sim;

const SEEDS: u64 = 500;
const MS: u64 = 1_000_000;

fn scenario(name: &str) -> Scenario {
    common::load(&common::scenario_path(&format!("real-systems/{name}.toml")))
}

/// Over `SEEDS` seeds: (seeds with an ownership overlap, seeds with a
/// stale write, seeds in which both workers were granted the lock).
fn sweep(s: &Scenario) -> (u64, u64, u64) {
    let (mut overlapping, mut stale, mut both_granted) = (0, 0, 0);
    for seed in 0..SEEDS {
        let out = sim::run(&s.options, seed, false);
        let report = check::check(&out.history);
        overlapping += (report.info.overlaps > 0) as u64;
        stale += (report.count(ViolationKind::StaleWrite) > 0) as u64;
        let grants = out
            .history
            .events
            .iter()
            .filter(|e| e.kind == Kind::GrantReceived)
            .count();
        both_granted += (grants == 2 && out.unfinished.is_empty()) as u64;
    }
    (overlapping, stale, both_granted)
}

fn with_protocol(s: &Scenario, edit: impl Fn(&mut fencesim::protocol::ProtocolConfig)) -> Scenario {
    let mut s = s.clone();
    let mut p = s.options.protocol;
    edit(&mut p);
    s.options.set_protocol(p);
    s
}

#[test]
fn a_forward_clock_jump_on_one_master_gives_two_clients_the_lock_and_without_it_none_do() {
    let jump = scenario("redlock-clock-jump");
    let mut steady = jump.clone();
    for node in &mut steady.options.nodes {
        node.clock.jumps.clear();
    }
    assert_eq!(sweep(&jump), (SEEDS, SEEDS, SEEDS), "every seed breaks");
    assert_eq!(
        sweep(&steady),
        (0, 0, SEEDS),
        "no jump: B waits for A's release, every seed"
    );
}

#[test]
fn a_master_restarted_without_fsync_gives_two_clients_the_lock_and_with_fsync_none_do() {
    let lossy = scenario("redlock-restart-no-fsync");
    let synced = with_protocol(&lossy, |p| p.fsync_always = true);
    assert_eq!(sweep(&lossy), (SEEDS, SEEDS, SEEDS), "every seed breaks");
    assert_eq!(sweep(&synced), (0, 0, SEEDS));
}

#[test]
fn a_restart_delay_of_one_ttl_keeps_the_forgetful_master_out_and_a_shorter_one_does_not() {
    let lossy = scenario("redlock-restart-no-fsync");
    let ttl_ns = lossy.options.protocol.lease_ttl_ns;
    let delayed = with_protocol(&lossy, |p| p.restart_delay_ns = ttl_ns);
    assert_eq!(sweep(&delayed), (0, 0, SEEDS), "antirez's delayed restart");
    // Two seconds of silence end while A's key would still be live.
    let short = with_protocol(&lossy, |p| p.restart_delay_ns = 2_000 * MS);
    assert_eq!(sweep(&short), (SEEDS, SEEDS, SEEDS));
}

#[test]
fn bad_redlock_knobs_are_refused_with_file_line_and_column() {
    let good = std::fs::read_to_string(common::scenario_path(
        "real-systems/redlock-restart-no-fsync.toml",
    ))
    .unwrap();
    fencesim::scenario::parse(&good, "r.toml").expect("the bundled file is valid");
    let cases = [
        (
            good.replace("fsync = \"never\"", "fsync = \"everysec\""),
            "r.toml:22:9: unknown fsync policy \"everysec\"; expected \"always\" or \"never\"",
        ),
        (
            good.replace("masters = 5", "masters = 16"),
            "r.toml:21:11: redlock takes masters from 1 to 15",
        ),
        (
            good.replace("masters = 5", "replicas = 5"),
            "r.toml:21:12: redlock has independent masters, not replicas: set `masters`",
        ),
        (
            good.replace("kind = \"redlock\"", "kind = \"fenced-cas\""),
            "r.toml:21:11: masters only applies to redlock, not fenced-cas",
        ),
    ];
    for (source, expected) in cases {
        let err = fencesim::scenario::parse(&source, "r.toml").expect_err(expected);
        let text = err.to_string();
        assert!(
            text.starts_with(expected),
            "expected {expected:?}, got:\n{text}"
        );
    }
}
