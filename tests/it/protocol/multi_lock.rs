//! Multi-lock operations: two workers taking the same two locks in
//! opposite orders deadlock (the liveness checker names both, each waiting
//! for the lock the other holds); one global order makes progress under the
//! same workers, heartbeats and pause; and without heartbeats the TTL breaks
//! the deadlock by handing out locks whose old holders still act on them.

use crate::common;

use expect_test::{expect, Expect};
use fencesim::check::{self, ViolationKind};
use fencesim::protocol::{ProtocolKind, Role};
use fencesim::scenario::Scenario;
use fencesim::{sim, suite};

fn scenario(name: &str) -> Scenario {
    common::load(&common::scenario_path(&format!("real-systems/{name}.toml")))
}

fn failing(r: &suite::ScenarioResult, kind: ViolationKind) -> u64 {
    r.agg.failing_seeds[kind as usize]
}

#[test]
fn the_inconsistent_order_deadlock_names_both_workers_each_waiting_for_the_others_lock() {
    let s = scenario("multi-lock-inconsistent-order");
    let out = sim::run(&s.options, 0, false);
    assert!(out.hit_max_time, "a deadlock runs until max_time_ms");
    let report = check::check(&out.history);
    let h = &out.history;
    let mut stuck: Vec<(String, String, String)> = report
        .violations
        .iter()
        .filter(|v| v.kind == ViolationKind::Liveness)
        .map(|v| {
            let last = h.by_seq(v.evidence[0]).expect("evidence names a record");
            (
                h.node_name(last.node).to_string(),
                last.kind.name().to_string(),
                h.key_name(v.key).to_string(),
            )
        })
        .collect();
    stuck.sort();
    assert_eq!(
        stuck,
        [
            ("worker/A".into(), "acquire_sent".into(), "b".into()),
            ("worker/B".into(), "acquire_sent".into(), "a".into()),
        ],
        "A holds a and asks for b, B holds b and asks for a"
    );
    assert_eq!(report.count(ViolationKind::Liveness), 2);
    assert!(report.kinds().all(|k| k == ViolationKind::Liveness));
}

#[test]
fn the_twins_differ_only_in_the_order_their_workers_take_the_locks() {
    let consistent = scenario("multi-lock-consistent-order");
    let inconsistent = scenario("multi-lock-inconsistent-order");
    let (a, b) = (&consistent.options, &inconsistent.options);
    assert_eq!(a.protocol, b.protocol);
    assert_eq!(a.faults, b.faults);
    assert_eq!(a.network, b.network);
    assert_eq!(a.max_time_ns, b.max_time_ns);
    assert_eq!(consistent.seeds, inconsistent.seeds);
    assert_eq!(a.nodes.len(), b.nodes.len());
    let mut differ = 0;
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        match (x.role, y.role) {
            (Role::Worker(mut wx), Role::Worker(wy)) => {
                let lx: Vec<&str> = wx.locks().map(|k| a.keys[k.0 as usize].as_str()).collect();
                let ly: Vec<&str> = wy.locks().map(|k| b.keys[k.0 as usize].as_str()).collect();
                let (mut sx, mut sy) = (lx.clone(), ly.clone());
                sx.sort_unstable();
                sy.sort_unstable();
                assert_eq!(sx, sy, "{} takes the same locks in both", x.name);
                assert_eq!(lx, sx, "consistent order: sorted");
                differ += (lx != ly) as usize;
                (wx.key, wx.more_locks) = (wy.key, wy.more_locks);
                assert_eq!(wx, wy, "{}: same timings", x.name);
            }
            (rx, ry) => assert_eq!(rx, ry),
        }
    }
    assert_eq!(
        differ, 1,
        "exactly one worker takes them in the other order"
    );
}

#[test]
fn a_consistent_order_makes_progress_where_the_inconsistent_one_deadlocks() {
    let consistent = suite::run_scenario(&scenario("multi-lock-consistent-order"), 0..200, 2);
    let inconsistent = suite::run_scenario(&scenario("multi-lock-inconsistent-order"), 0..200, 2);
    assert_eq!(
        consistent.agg.failing_seeds,
        [0; check::VIOLATION_KINDS],
        "every worker finishes, nothing corrupts"
    );
    assert!(
        consistent.agg.seeds_with_stale_attempts >= 100,
        "the fence is exercised: {} seeds",
        consistent.agg.seeds_with_stale_attempts
    );
    assert!(
        failing(&inconsistent, ViolationKind::Liveness) >= 180,
        "deadlocked in {} of 200 seeds",
        failing(&inconsistent, ViolationKind::Liveness)
    );
}

/// The inconsistent-order scenario with heartbeats off, under `kind`.
fn without_renewal(kind: ProtocolKind) -> Scenario {
    let mut s = scenario("multi-lock-inconsistent-order");
    let mut p = s.options.protocol;
    p.renew_every_ns = None;
    p.kind = kind;
    s.options.set_protocol(p);
    s
}

#[test]
fn without_heartbeats_the_ttl_breaks_the_deadlock_and_the_fence_stops_the_stale_holder() {
    let r = suite::run_scenario(&without_renewal(ProtocolKind::FencedCas), 0..200, 2);
    assert_eq!(
        failing(&r, ViolationKind::Liveness),
        0,
        "nobody stays stuck"
    );
    assert_eq!(r.agg.failing_seeds, [0; check::VIOLATION_KINDS]);
    assert_eq!(
        r.agg.seeds_with_stale_attempts, 200,
        "after the TTL both workers believe they hold both locks"
    );
}

#[test]
fn without_heartbeats_or_a_fence_the_stale_holder_overwrites_the_new_one() {
    let r = suite::run_scenario(&without_renewal(ProtocolKind::RedisSetNx), 0..200, 2);
    assert_eq!(failing(&r, ViolationKind::Liveness), 0);
    assert!(
        failing(&r, ViolationKind::StaleWrite) >= 180,
        "stale writes in {} of 200 seeds",
        failing(&r, ViolationKind::StaleWrite)
    );
}

const BASE: &str = r#"schema_version = 1
name = "t"
max_time_ms = 1000
[protocol]
kind = "fenced-cas"
[lease]
ttl_ms = 100
[workload]
lock_order = "sorted"
[[worker]]
name = "A"
locks = ["a", "b"]
[[worker]]
name = "B"
[expect]
"#;

fn rejected(edit: impl Fn(&str) -> String, expected: Expect) {
    let err = fencesim::scenario::parse(&edit(BASE), "broken.toml").expect_err("must be rejected");
    expected.assert_eq(&err.to_string());
}

#[test]
fn a_multi_lock_file_resolves_each_lock_to_a_named_key() {
    let s = fencesim::scenario::parse(BASE, "good.toml").expect("valid");
    assert_eq!(s.options.keys, ["doc", "a", "b"]);
    let locks: Vec<Vec<u16>> = s
        .options
        .workers()
        .map(|(_, n)| match n.role {
            Role::Worker(w) => w.locks().map(|k| k.0).collect(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(locks, [vec![1, 2], vec![0]], "B keeps the one lock `doc`");
}

#[test]
fn a_lock_listed_twice_is_rejected_where_it_is_listed() {
    rejected(
        |s| s.replace(r#"["a", "b"]"#, r#"["a", "a"]"#),
        expect![[r#"
            broken.toml:12:15: lock "a" is listed twice
              |
              | locks = ["a", "a"]
              |               ^"#]],
    );
}

#[test]
fn an_unknown_lock_order_names_the_ones_expected() {
    rejected(
        |s| s.replace(r#""sorted""#, r#""random""#),
        expect![[r#"
            broken.toml:9:14: unknown lock_order "random"; expected "as-listed" or "sorted"
              |
              | lock_order = "random"
              |              ^"#]],
    );
}

#[test]
fn a_lock_order_without_multi_lock_workers_is_rejected() {
    rejected(
        |s| s.replace("locks = [\"a\", \"b\"]\n", ""),
        expect![[r#"
            broken.toml:9:14: lock_order applies to multi-lock workers; no [[worker]] lists `locks`
              |
              | lock_order = "sorted"
              |              ^"#]],
    );
}

#[test]
fn multi_lock_is_refused_for_a_client_decided_protocol() {
    let source = BASE.replace("fenced-cas", "zk-sequential");
    let err = fencesim::scenario::parse(&source, "broken.toml")
        .expect_err("must be rejected")
        .to_string();
    // The list of protocols that do support it grows with the catalogue.
    assert!(
        err.starts_with("broken.toml:12:9: locks (multi-lock operations) needs a lease coordinator and a plain store; zk-sequential is not one (expected one of ttl-lease-del, "),
        "{err}"
    );
}

#[test]
fn too_many_ops_for_the_op_id_space_are_rejected() {
    rejected(
        |s| {
            s.replace(
                "locks = [\"a\", \"b\"]",
                "locks = [\"a\", \"b\"]\nops = 600",
            )
        },
        expect![[r#"
            broken.toml:13:7: an operation taking 2 locks is 2 ops in the history; ops must be at most 499
              |
              | ops = 600
              |       ^"#]],
    );
}

#[test]
fn validate_refuses_an_external_worker_for_multi_lock_scenarios() {
    let out = common::fencesim(&[
        "validate",
        "--node",
        "worker=true",
        "scenarios/real-systems/multi-lock-consistent-order.toml",
    ]);
    assert_eq!(out.status.code(), Some(2), "bad input");
    assert!(
        common::stderr(&out).contains("take several locks per operation"),
        "{}",
        common::stderr(&out)
    );
}

/// Three workers over three locks, one of them taking all three, with 20
/// ops each under random pauses, worker crashes, partitions, loss,
/// duplication and delay spikes.
const RANDOM: &str = r#"schema_version = 1
name = "multi-lock-random"
max_time_ms = 200_000

[protocol]
kind = "fenced-cas"
renew_every_ms = 3_000
fence_reads = true

[lease]
ttl_ms = 10_000

[workload]
retry_ms = 300
work_ms = 500
think_ms = 200
lock_order = "sorted"

[network]
loss_probability = 0.02
duplicate_probability = 0.02
delay_probability = 0.02
delay_max_ms = 3000

[[worker]]
name = "A"
locks = ["b", "a"]
ops = 20

[[worker]]
name = "B"
locks = ["c", "b"]
ops = 20

[[worker]]
name = "C"
locks = ["c", "a", "b"]
ops = 20

[random]
window_ms = 20_000
pause_probability = 0.5
pause_min_ms = 1_000
pause_max_ms = 15_000
crash_probability = 0.2
restart_min_ms = 500
restart_max_ms = 3_000
crash_nodes = ["worker/A", "worker/B", "worker/C"]
partition_probability = 0.2
partition_min_ms = 1_000
partition_max_ms = 12_000

[expect]
"#;

#[test]
fn under_random_faults_a_global_order_stays_live_and_fenced_while_the_listed_order_deadlocks() {
    let sorted = fencesim::scenario::parse(RANDOM, "random.toml").expect("valid");
    let listed = fencesim::scenario::parse(
        &RANDOM.replace(r#"lock_order = "sorted""#, r#"lock_order = "as-listed""#),
        "random-listed.toml",
    )
    .expect("valid");
    let mut unfenced = sorted.clone();
    let mut p = unfenced.options.protocol;
    (p.kind, p.fence_reads) = (ProtocolKind::RedisSetNx, false);
    unfenced.options.set_protocol(p);

    let seeds = 0..500;
    let r = suite::run_scenario(&sorted, seeds.clone(), 2);
    assert_eq!(r.agg.failing_seeds, [0; check::VIOLATION_KINDS]);
    assert!(
        r.agg.seeds_with_stale_attempts >= 400,
        "the fence is exercised"
    );
    let r = suite::run_scenario(&listed, seeds.clone(), 2);
    assert!(
        failing(&r, ViolationKind::Liveness) >= 300,
        "A takes b then a, C takes a then b: deadlocked in {} of 500 seeds",
        failing(&r, ViolationKind::Liveness)
    );
    let r = suite::run_scenario(&unfenced, seeds, 2);
    assert!(
        failing(&r, ViolationKind::StaleWrite) >= 300,
        "the global order is no substitute for the fence: {} of 500 seeds",
        failing(&r, ViolationKind::StaleWrite)
    );
}
