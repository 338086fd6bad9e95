//! Clock faults in the code-level search (`src/codecheck/clock.rs`): a
//! node's clock drifting from time zero, and its wall clock jumping at any
//! step. The fenced protocol stays proved with either; Redlock, whose
//! masters expire keys on their wall clocks, hands its lock to a second
//! client while the first still holds it once one master's wall clock
//! jumps forward (the scenario of the article Redlock was criticised in),
//! where the same bounds without the jump find nothing; and a coordinator
//! that makes its tokens from its wall clock (a millisecond timestamp in
//! the high bits, its own counter in the low ones) is proved without a
//! jump and found out by a backward one. Unfenced DynamoDB lock clients are
//! proved within 11 ms until the waiter's clock runs 10% fast. The
//! emitter scripts jumps and drifts as the simulator's `[clock]` tables,
//! and the simulator replays both counterexamples.

use fencesim::check::ViolationKind;
use fencesim::codecheck::to_scenario::to_scenario;
use fencesim::codecheck::{
    builtin, check, check_protocol, check_protocol_with, Action, Bounds, Builtin, Options,
};
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, ProtocolKind, Role, Token};

use super::emit::{emitted_by_the_cli, replayed};
use super::{harness_of, proved, small};
use crate::common::{fencesim, stderr, stdout};

/// No pause (the clock fault is the only one), to 12 ms.
fn clock_faults_only() -> Bounds {
    Bounds {
        pauses: 0,
        horizon_ms: 12,
        ..small()
    }
}

#[test]
fn fenced_cas_is_proved_with_a_drifting_clock_and_with_a_wall_clock_jump() {
    proved(
        ProtocolKind::FencedCas,
        Bounds {
            drifts: 1,
            ..clock_faults_only()
        },
    );
    proved(
        ProtocolKind::FencedCas,
        Bounds {
            jumps: 1,
            ..clock_faults_only()
        },
    );
}

/// Redlock without pauses, to 4 ms: every key the first holder set is
/// still alive on its master's clock unless that clock jumps.
fn redlock_within_the_ttl(jumps: u8) -> Bounds {
    Bounds {
        pauses: 0,
        horizon_ms: 4,
        jumps,
        ..Bounds::for_protocol(ProtocolKind::Redlock)
    }
}

#[test]
fn a_redlock_masters_forward_wall_clock_jump_lets_a_second_client_take_the_lock_from_a_holder() {
    let (_, before) =
        check_protocol(ProtocolKind::Redlock, redlock_within_the_ttl(0)).expect("supported");
    assert!(
        before.proved(),
        "no violation while the keys live: {before:?}"
    );
    let (h, out) =
        check_protocol(ProtocolKind::Redlock, redlock_within_the_ttl(1)).expect("supported");
    let c = out.counterexample.expect("the jump expires a key early");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert_eq!(c.steps.len(), 23, "the shortest path: {c:?}");
    let masters = h.topology.coord.0..h.topology.coord.0 + h.topology.replicas as u16;
    assert!(
        c.steps.iter().any(|(a, _)| matches!(
            a,
            Action::Jump { node, forward: true } if masters.contains(&node.0)
        )),
        "a master's wall clock jumped forward on the way: {c:?}"
    );
    // Scripted with the jump as the master's `[clock]` jump at its step's
    // instant, by K × the search's 10 ms; the simulator finds the same
    // stale write on every seed.
    let text = replayed(&h, &c);
    let jumped = c.steps.iter().find_map(|(a, _)| match a {
        Action::Jump { node, .. } => Some(h.node_name(*node)),
        _ => None,
    });
    let jumped = jumped.expect("a jump on the path");
    assert!(
        text.contains(&format!("[clock.\"{jumped}\"]\njumps = [{{ at_ms = ")),
        "the jump is the master's clock's: {text}"
    );
}

#[test]
fn a_coordinators_forward_jump_ends_a_lease_early_and_the_scripted_jump_replays() {
    // Without a pause, ttl-lease-del's and effect-naive's shortest paths
    // (8 and 13 steps) jump the coordinator's wall clock past the lease.
    for kind in [ProtocolKind::TtlLeaseDel, ProtocolKind::EffectNaive] {
        let (h, out) = check_protocol(
            kind,
            Bounds {
                jumps: 1,
                ..clock_faults_only()
            },
        )
        .expect("supported");
        let c = out.counterexample.expect("unsafe");
        let coord = h.topology.coord;
        assert!(
            c.steps.iter().any(|(a, _)| matches!(
                a,
                Action::Jump { node, forward: true } if *node == coord
            )),
            "{}: the coordinator's wall clock jumps forward: {c:?}",
            kind.id()
        );
        let text = replayed(&h, &c);
        assert!(
            text.contains("[clock.\"coord/0\"]\njumps = [{ at_ms = "),
            "{text}"
        );
    }
}

#[test]
fn check_code_emits_redlocks_jump_counterexample_as_a_scenario_that_fencesim_run_reproduces() {
    let text = emitted_by_the_cli(
        &[
            "redlock",
            "--pauses",
            "0",
            "--horizon-ms",
            "4",
            "--jumps",
            "1",
        ],
        "code-redlock-stale-write.toml",
    );
    assert!(text.contains("jumps = [{ at_ms = "), "{text}");
}

/// DynamoDB's lock client without a fence, no pause, to 11 ms: proved
/// with every clock keeping pace (the waiter takes over at 10 ms, after
/// the holder's write), not with one drifting 10%.
fn dynamodb_unfenced_within_eleven_ms(drifts: u8) -> (Options, Bounds) {
    let options = Options {
        fence: Some(false),
        ..Options::default()
    };
    let bounds = Bounds {
        pauses: 0,
        horizon_ms: 11,
        drifts,
        ..Bounds::for_protocol(ProtocolKind::DynamodbHeartbeat)
    };
    (options, bounds)
}

#[test]
fn a_waiters_fast_clock_takes_a_dynamodb_lock_early_and_the_scripted_drift_replays() {
    let (options, bounds) = dynamodb_unfenced_within_eleven_ms(0);
    let (_, steady) =
        check_protocol_with(ProtocolKind::DynamodbHeartbeat, options, bounds).expect("supported");
    assert!(steady.proved(), "no drift, no violation: {steady:?}");
    let (options, bounds) = dynamodb_unfenced_within_eleven_ms(1);
    let (h, out) =
        check_protocol_with(ProtocolKind::DynamodbHeartbeat, options, bounds).expect("supported");
    let c = out
        .counterexample
        .expect("the fast waiter takes over early");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    let drifted = c.steps.iter().find_map(|(a, _)| match a {
        Action::Drift { node, fast: true } => Some(*node),
        _ => None,
    });
    let drifted = drifted.expect("a clock ran fast on the way");
    // A worker is named by its letter in a scenario.
    let drifted = match drifted.0 as usize {
        w if w < h.topology.workers => format!("worker/{}", char::from(b'A' + w as u8)),
        _ => h.node_name(drifted),
    };
    // Scripted with the drift as the node's `[clock]` from time zero, at a
    // timing scaled by a multiple of 11 (its timers whole ms at 1.1×).
    let text = replayed(&h, &c);
    assert!(
        text.contains(&format!("[clock.\"{drifted}\"]\ndrift_ppm = 100000\n")),
        "{text}"
    );
    let ttl_ms: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ttl_ms = ")?.parse().ok())
        .expect("a TTL");
    assert_eq!(ttl_ms % (11 * bounds.timing.lease_ttl_ms), 0, "{text}");
}

/// The real nodes, but the coordinator's grants carry a token made from
/// its wall clock: `(ms + 1) << 16 | counter`. Unique and increasing while
/// the clock only moves forward; a clock set back hands out a smaller one.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TimestampTokens(Builtin);

impl Node for TimestampTokens {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let before = fx.len();
        self.0.handle(clocks, input, fx);
        if !matches!(self.0, Builtin::Coordinator(_)) {
            return;
        }
        let stamp = (clocks.wall_ns.max(0) as u64 / 1_000_000 + 1) << 16;
        for effect in &mut fx[before..] {
            if let Effect::Send {
                msg:
                    Msg::Granted {
                        token: Some(Token(t)),
                        ..
                    },
                ..
            } = effect
            {
                *t = stamp | (*t & 0xffff);
            }
        }
    }
}

fn timestamped(role: &Role) -> TimestampTokens {
    TimestampTokens(builtin(role))
}

#[test]
fn tokens_made_from_the_coordinators_wall_clock_are_proved_until_it_is_set_back() {
    let steady = harness_of(ProtocolKind::FencedCas, small(), timestamped);
    let out = check(&steady);
    assert!(out.proved() && out.vacuity_ok(), "{out:?}");
    let jumping = harness_of(
        ProtocolKind::FencedCas,
        Bounds {
            jumps: 1,
            ..clock_faults_only()
        },
        timestamped,
    );
    let c = check(&jumping)
        .counterexample
        .expect("a clock set back issues a smaller token");
    assert_eq!(c.finding.kind, ViolationKind::TokenOrder, "{c:?}");
    let coord = jumping.topology.coord;
    assert!(
        c.steps.iter().any(|(a, _)| matches!(
            a,
            Action::Jump { node, forward: false } if *node == coord
        )),
        "the coordinator's wall clock was set back on the way: {c:?}"
    );
}

#[test]
fn check_code_states_its_clock_faults_and_refuses_a_drift_of_zero_ppm() {
    let out = fencesim(&[
        "check",
        "--code",
        "fenced-cas",
        "--pauses",
        "0",
        "--horizon-ms",
        "8",
        "--drifts",
        "1",
        "--jumps",
        "1",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("/1drift@100000ppm/1jump@11ms/"),
        "the bounds line names the clock faults: {text}"
    );
    let out = fencesim(&[
        "check",
        "--code",
        "fenced-cas",
        "--drifts",
        "1",
        "--drift-ppm",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("--drift-ppm 0"), "{}", stderr(&out));
}

#[test]
fn a_drift_whose_timers_never_take_whole_ms_is_refused_saying_so() {
    // 99,999 ppm fast: a K-ms timer takes K·10^6/1,099,999 ms, whole only
    // at K a multiple of 1,099,999; the simulator's steps are whole ms.
    let (options, bounds) = dynamodb_unfenced_within_eleven_ms(1);
    let bounds = Bounds {
        drift_ppm: 99_999,
        ..bounds
    };
    let (h, out) =
        check_protocol_with(ProtocolKind::DynamodbHeartbeat, options, bounds).expect("supported");
    let c = out
        .counterexample
        .expect("the fast waiter takes over early");
    assert!(
        c.steps
            .iter()
            .any(|(a, _)| matches!(a, Action::Drift { fast: true, .. })),
        "{c:?}"
    );
    let err = to_scenario(&h, &c, &mut |_| true).expect_err("no whole-ms timing");
    assert!(
        err.contains("clock 99999 ppm fast") && err.contains("a multiple of 1099999"),
        "{err}"
    );
}
