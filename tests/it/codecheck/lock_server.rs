//! Lock servers at the code level: zk-sequential's ZooKeeper server and
//! recipe client, etcd's server and Mutex client (with and without the
//! re-check of etcd PR #11408), DynamoDB's lock table and lock client,
//! PostgreSQL's advisory-lock sessions and Redlock's Redis masters, their
//! shipped nodes driven through every interleaving within the bounds. No
//! server issues these locks: a grant is a worker's own decision that it
//! holds the lock (its `Observation::Acquired`, as the simulator's
//! recorder takes it), ranked by its token. Each fenced protocol is
//! proved, and the same search with `fence = false` finds the stale write
//! the fence stops; Redlock, which has no fence, is proved only while its
//! keys live on a majority (a master that answers every `SET` OK breaks
//! that at the same bounds; so does a master restarted without fsync,
//! where `fsync = "always"` is proved) and found unsafe after. The shortest
//! counterexamples of etcd, DynamoDB and PostgreSQL replay in the simulator
//! on every seed, and so do zk-sequential's (the shortest path in the
//! simulator's timer order) and Redlock's at the default bounds and at 3 in
//! flight and 14 ms, its validity timer placed as the simulator's client
//! computes it.

use fencesim::check::ViolationKind;
use fencesim::codecheck::harness::Next;
use fencesim::codecheck::to_scenario::{replays, to_scenario};
use fencesim::codecheck::{
    builtin, check, check_protocol_with, Action, Bounds, Builtin, Harness, Options, Outcome,
    Topology,
};
use fencesim::protocol::redlock::RedisMsg;
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, ProtocolKind, Role};

use crate::common::{fencesim, stdout};

/// The defaults for a lock server's protocol (9 ms TTL, 2 workers, 2
/// grants, 1 pause, 2 in flight, 12 ms), under a 3,000,000-state bound.
fn bounds(kind: ProtocolKind) -> Bounds {
    Bounds {
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    }
}

fn run(kind: ProtocolKind, fence: Option<bool>, bounds: Bounds) -> Outcome {
    check_protocol_with(
        kind,
        Options {
            fence,
            ..Options::default()
        },
        bounds,
    )
    .expect("a supported protocol")
    .1
}

/// Proved with the fence (`fence = true`: the default of etcd and
/// ZooKeeper, an option of DynamoDB and PostgreSQL), found without it, by
/// the same search: the
/// shortest stale write, `steps` long.
fn proved_with_the_fence_and_found_without(
    kind: ProtocolKind,
    bounds: Bounds,
    steps: usize,
) -> Outcome {
    let fenced = run(kind, Some(true), bounds);
    assert!(
        fenced.proved() && fenced.vacuity_ok(),
        "{}: {fenced:?}",
        kind.id()
    );
    let unfenced = run(kind, Some(false), bounds);
    let c = unfenced.counterexample.expect("unsafe without the fence");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
    assert_eq!(c.steps.len(), steps, "{c:?}");
    fenced
}

#[test]
fn etcd_mutex_is_proved_with_its_revision_fence_and_the_same_search_finds_its_stale_write_without()
{
    let kind = ProtocolKind::EtcdMutex;
    let out = proved_with_the_fence_and_found_without(kind, bounds(kind), 24);
    assert!(out.unique_states > 1_000_000, "{out:?}");
    assert!(out.hits.horizon && !out.hits.grants, "{out:?}");
}

#[test]
fn the_3_4_3_etcd_mutex_is_found_without_the_fence_and_proved_with_it() {
    // The fence makes the missing re-check harmless (the simulator's
    // etcd-mutex-no-recheck-fenced scenario); the stale write without it
    // is found at the same bounds.
    let kind = ProtocolKind::EtcdMutexNoRecheck;
    proved_with_the_fence_and_found_without(kind, bounds(kind), 24);
}

#[test]
fn zk_sequential_is_proved_with_its_sequence_number_fence_and_found_without() {
    let kind = ProtocolKind::ZkSequential;
    let out = proved_with_the_fence_and_found_without(kind, bounds(kind), 26);
    assert!(out.unique_states > 100_000, "{out:?}");
}

#[test]
fn the_unfenced_etcd_dynamodb_and_postgresql_counterexamples_replay_in_the_simulator_on_every_seed()
{
    // zk-sequential's shortest paths have no script (their own test below).
    for kind in [
        ProtocolKind::EtcdMutexNoRecheck,
        ProtocolKind::DynamodbHeartbeat,
        ProtocolKind::PgAdvisoryLock,
    ] {
        let unfenced = Options {
            fence: Some(false),
            ..Options::default()
        };
        let (h, out) = check_protocol_with(kind, unfenced, bounds(kind)).expect("supported");
        let c = out.counterexample.expect("unsafe");
        let text = to_scenario(&h, &c, &mut |t| replays(t, 2))
            .unwrap_or_else(|e| panic!("{}: {e}", kind.id()));
        // The catalogue's default is written only where it differs.
        let fence_line = kind.def().fence_default.then_some("fence = false");
        assert!(fence_line.is_none_or(|l| text.contains(l)), "{text}");
        let s = fencesim::scenario::parse(&text, "emitted").expect("valid scenario");
        let r = fencesim::suite::run_scenario(&s, s.seeds.clone(), 2);
        assert_eq!(
            r.agg.failing_seeds[c.finding.kind as usize],
            r.agg.seeds,
            "{}: {} on every seed\n{text}",
            kind.id(),
            c.finding.kind
        );
        assert_eq!(r.agg.seeds, 20, "{text}");
    }
}

#[test]
fn zk_sequentials_stale_write_is_scripted_from_the_shortest_path_in_the_simulators_timer_order() {
    // Every shortest path fires B's second ping (3 ms, re-armed at 3) before
    // B's request timeout (6 ms), both armed when B's acquisition started
    // and due at 6, and handles B's zk_created between them: the simulator
    // fires the timeout first (armed first), so no schedule replays. The
    // BFS with one node's timers of one instant in arming order finds a
    // path as short that the simulator follows: the timeout fires (the
    // cancelled ping, due at the same instant, is not run), B retries with
    // a new session and writes while A's delayed write is in flight.
    let kind = ProtocolKind::ZkSequential;
    let unfenced = Options {
        fence: Some(false),
        ..Options::default()
    };
    let (h, out) = check_protocol_with(kind, unfenced, bounds(kind)).expect("supported");
    let c = out.counterexample.expect("unsafe");
    assert_eq!(c.steps.len(), 26, "{c:?}");
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    assert!(
        text.contains("The search's shortest path (26 steps) has no schedule")
            && text.contains("fires them in that order (26 steps"),
        "{text}"
    );
    replays_on_every_seed(&text, c.finding.kind);
    // In arming order the search's own path stops at its step 13: at 6 ms
    // only B's request timeout (armed first) may fire, not its second ping.
    let strict = h.in_arming_order();
    let mut s = strict.initial();
    let refused = c.steps.iter().position(|&(a, _)| {
        if !strict.actions(&s, &mut None).contains(&a) {
            return true;
        }
        match strict.next(&s, a) {
            Next::State(next, _) => {
                s = next;
                false
            }
            _ => true,
        }
    });
    assert_eq!(refused, Some(12), "{c:?}");
    assert!(
        matches!(c.steps[12], (Action::Fire { node, .. }, 6_000_000) if node.0 == 1),
        "{c:?}"
    );
}

#[test]
fn dynamodb_heartbeat_is_proved_with_the_owner_change_counter_and_found_without_it() {
    // A's heartbeat stops with its pause; B's reread after one lease of
    // no change takes the lock over while A's write is in flight.
    let kind = ProtocolKind::DynamodbHeartbeat;
    let b = bounds(kind);
    assert_eq!((b.timing.lease_ttl_ms, b.pause_ms), (10, 11), "{b:?}");
    let out = proved_with_the_fence_and_found_without(kind, b, 22);
    assert!(out.unique_states > 100_000 && out.hits.horizon, "{out:?}");
}

#[test]
fn pg_advisory_lock_is_proved_with_the_nextval_token_and_found_without_it() {
    // A's keepalives stop with its pause; the server ends its session at
    // the timeout and B's next try-lock wins while A's write is in flight.
    // 11 ms: B's write goes out at 11 (half the space of the default 12).
    let kind = ProtocolKind::PgAdvisoryLock;
    let b = Bounds {
        horizon_ms: 11,
        ..bounds(kind)
    };
    let out = proved_with_the_fence_and_found_without(kind, b, 19);
    assert!(out.unique_states > 150_000, "{out:?}");
}

/// The built-in nodes, except that every Redis master answers each `SET
/// NX` OK, held key or not (as if it dropped `NX`): the refusal a majority
/// rests on is gone.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct EveryoneOk(Builtin);

impl Node for EveryoneOk {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let before = fx.len();
        self.0.handle(clocks, input, fx);
        if !matches!(self.0, Builtin::Server(_)) {
            return;
        }
        for effect in &mut fx[before..] {
            if let Effect::Send {
                msg: Msg::Redis(RedisMsg::SetNxResult { ok, .. }),
                ..
            } = effect
            {
                *ok = true;
            }
        }
    }
}

fn everyone_ok(role: &Role) -> EveryoneOk {
    EveryoneOk(builtin(role))
}

/// Redlock at its code-level defaults (3 masters, 4 in flight) to 4 ms:
/// before any key expires (9 ms), with both clients' `SET`s overlapping.
fn redlock_before_expiry() -> Bounds {
    Bounds {
        horizon_ms: 4,
        ..bounds(ProtocolKind::Redlock)
    }
}

#[test]
fn redlock_is_proved_while_its_keys_live_and_a_master_answering_every_set_ok_is_found() {
    let kind = ProtocolKind::Redlock;
    let b = redlock_before_expiry();
    let (h, real) = check_protocol_with(kind, Options::default(), b).expect("supported");
    assert_eq!(h.topology.replicas, 3, "three masters by default");
    assert!(real.proved() && real.write_accepted, "{real:?}");
    assert!(
        real.unique_states > 10_000 && real.hits.in_flight,
        "{real:?}"
    );
    let broken = Harness {
        topology: Topology::new(kind, Options::default(), b.workers, b.timing).expect("supported"),
        factory: everyone_ok,
        bounds: b,
    };
    let out = check(&broken);
    let c = out.counterexample.expect("two majorities at once");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.steps.iter().all(|&(_, at)| at <= 2_000_000), "{c:?}");
}

/// Kleppmann's second failure (the simulator's redlock-restart-no-fsync):
/// no pause, one crash-and-restart of any node, to 4 ms — before any key
/// expires, so a second majority can only come from a master that
/// restarted without its key.
fn redlock_restart() -> Bounds {
    Bounds {
        pauses: 0,
        crashes: 1,
        ..redlock_before_expiry()
    }
}

#[test]
fn redlock_with_fsync_always_keeps_one_majority_through_a_master_restart() {
    let synced = Options {
        fsync_always: Some(true),
        ..Options::default()
    };
    let (_, out) =
        check_protocol_with(ProtocolKind::Redlock, synced, redlock_restart()).expect("supported");
    assert!(out.proved() && out.write_accepted, "{out:?}");
    assert!(out.unique_states > 100_000, "{out:?}");
}

#[test]
fn redlock_with_a_restart_delay_of_one_ttl_keeps_one_majority_through_a_master_restart() {
    // antirez's answer: the master restarted without its key (fsync =
    // "never") answers nothing for a TTL, by which time every key it forgot
    // has expired on the others.
    let delayed = Options {
        restart_delay_ms: Some(9),
        ..Options::default()
    };
    let (_, out) =
        check_protocol_with(ProtocolKind::Redlock, delayed, redlock_restart()).expect("supported");
    assert!(out.proved() && out.write_accepted, "{out:?}");
}

#[test]
fn a_redlock_master_restarting_without_fsync_gives_a_second_majority_and_a_stale_write() {
    // The masters' default, fsync = "never": the restarted master forgot
    // the first holder's key and says OK to the other client's SET.
    let (h, out) =
        check_protocol_with(ProtocolKind::Redlock, Options::default(), redlock_restart())
            .expect("supported");
    let c = out.counterexample.expect("unsafe without fsync");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
    assert_eq!(c.steps.len(), 23, "{c:?}");
    let masters = h.topology.coord.0..h.topology.coord.0 + 3;
    assert!(
        c.steps
            .iter()
            .any(|(a, _)| matches!(a, Action::Crash(n) if masters.contains(&n.0))),
        "{c:?}"
    );
}

#[test]
fn redlock_without_a_fence_is_found_unsafe_after_its_keys_expire_and_replays_with_the_clients_own_validity(
) {
    // 3 in flight and 14 ms: B's attempts at 0, 4 and 8 ms are refused
    // one after the other, the one at 12 ms wins; the default 4 in flight
    // and 12 ms find a 25-step path (slower: the next test).
    let kind = ProtocolKind::Redlock;
    let b = Bounds {
        in_flight_max: 3,
        horizon_ms: 14,
        ..bounds(kind)
    };
    let (h, out) = check_protocol_with(kind, Options::default(), b).expect("supported");
    let c = out.counterexample.expect("no fence: unsafe");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
    assert_eq!(c.steps.len(), 49, "{c:?}");
    // The validity timer (TTL − elapsed − 1 % − 2 ms) is placed where the
    // simulator's client puts it at the script's scale: TTL − 1 % − 2 ms
    // after the acquisition's start, its 2 ms unscaled.
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    replays_on_every_seed(&text, c.finding.kind);
}

#[test]
fn redlocks_25_step_stale_write_at_the_default_bounds_replays_with_the_steps_after_its_validity_unwindowed(
) {
    // A's validity fires (2K − 2) ms later in the simulator than K × the
    // search's instant; the timer A arms there (1 ms) fires as much later,
    // so its step, like the validity's, is ordered by A's steps and
    // messages, not by its instant's window.
    let kind = ProtocolKind::Redlock;
    let (h, out) = check_protocol_with(kind, Options::default(), bounds(kind)).expect("supported");
    let c = out.counterexample.expect("no fence: unsafe");
    assert_eq!(c.steps.len(), 25, "{c:?}");
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    assert!(text.contains("Timing × 100;"), "{text}");
    replays_on_every_seed(&text, c.finding.kind);
}

/// The simulator runs an emitted scenario: `kind` on all of its 20 seeds.
fn replays_on_every_seed(text: &str, kind: ViolationKind) {
    let s = fencesim::scenario::parse(text, "emitted").expect("valid scenario");
    let r = fencesim::suite::run_scenario(&s, s.seeds.clone(), 2);
    assert_eq!(r.agg.seeds, 20, "{text}");
    assert_eq!(
        r.agg.failing_seeds[kind as usize], r.agg.seeds,
        "{kind} on every seed\n{text}"
    );
    assert!(r.met(), "{:?}\n{text}", r.problems);
}

#[test]
fn check_code_takes_the_fence_option_and_refine_takes_it_only_where_that_variant_has_a_model() {
    let out = fencesim(&[
        "check",
        "--code",
        "etcd-mutex-no-recheck",
        "--fence",
        "false",
        "--expect",
        "unsafe",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("unsafe: stale_write"), "{text}");
    for refused in [
        &["check", "--code", "redlock", "--masters", "0"][..],
        &["check", "--code", "redlock", "--masters", "16"],
        &["check", "--code", "etcd-mutex", "--masters", "3"],
        &["check", "--code", "etcd-mutex", "--fsync", "always"],
        &["check", "--code", "redlock", "--refine", "--masters", "16"],
    ] {
        let out = fencesim(refused);
        assert_eq!(out.status.code(), Some(2), "{refused:?}: {}", stdout(&out));
    }
    let fenced_refine = fencesim(&[
        "check",
        "--code",
        "fenced-cas",
        "--refine",
        "--fence",
        "true",
    ]);
    assert_eq!(fenced_refine.status.code(), Some(2));
    let unfenced_zk = fencesim(&[
        "check",
        "--code",
        "zk-sequential",
        "--refine",
        "--fence",
        "false",
    ]);
    let text = stdout(&unfenced_zk);
    assert_eq!(unfenced_zk.status.code(), Some(0), "{text}");
    assert!(
        text.contains("against the no-fence model") && text.contains("0 divergences"),
        "{text}"
    );
}
