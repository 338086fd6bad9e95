//! Replicated coordinators at the code level: incr-beside-lease's
//! async-replicated Redis pair and consensus-generation's quorum of three,
//! their shipped coordinator replicas driven with the failover the
//! simulator injects (the primary crashes for good, the next replica is
//! told `Promote`) as a bounded fault. The unsafe one is found with a
//! shortest counterexample that replays in the simulator; the safe one is
//! proved at stated bounds, and a copy of its coordinator that counts one
//! acceptance before it arrives is found by the same search at the same
//! bounds.

use fencesim::check::ViolationKind;
use fencesim::codecheck::search::timed;
use fencesim::codecheck::to_scenario::{replays, to_scenario};
use fencesim::codecheck::{
    builtin, check, check_protocol, Action, Bounds, Builtin, Counterexample, Harness, Outcome,
    Topology,
};
use fencesim::protocol::coordinator::{Coordinator, Replication};
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, NodeId, ProtocolKind, Role};

use super::small;
use crate::common::{fencesim, stderr, stdout};

/// One failover, the other faults as in [`small`].
fn with_failover() -> Bounds {
    Bounds {
        failovers: 1,
        ..small()
    }
}

/// consensus-generation's test bounds: 2 workers, 2 grants, 1 failover,
/// no pause, 4 in flight, horizon 6 ms (the CLI's default horizon is
/// 8 ms: about 4x the states, measured in docs/model-checking.md).
fn quorum_bounds() -> Bounds {
    Bounds {
        pauses: 0,
        horizon_ms: 6,
        ..with_failover()
    }
}

enum Expected {
    /// Proved, vacuity witnesses reached, at least this many states.
    Proved { states_min: usize },
    /// This violation, by a shortest path of this many steps.
    Found { kind: ViolationKind, steps: usize },
}

fn verdict_is(kind: ProtocolKind, bounds: Bounds, expected: &Expected, out: &Outcome) {
    let label = format!("{} at {}", kind.id(), bounds.label());
    match *expected {
        Expected::Proved { states_min } => {
            assert!(out.proved(), "{label}: proved: {out:?}");
            assert!(out.vacuity_ok(), "{label}: not vacuous: {out:?}");
            assert!(out.unique_states >= states_min, "{label}: {out:?}");
        }
        Expected::Found { kind: found, steps } => {
            let c = out.counterexample.as_ref().unwrap_or_else(|| {
                panic!("{label}: a violation: {out:?}");
            });
            assert_eq!(c.finding.kind, found, "{label}: {c:?}");
            assert!(c.shortest, "{label}: {c:?}");
            assert_eq!(c.steps.len(), steps, "{label}: {c:?}");
        }
    }
}

#[test]
fn replicated_coordinators_meet_their_expected_verdicts_at_stated_bounds() {
    let cases = [
        // The promoted replica never saw the INCR: token 1 again.
        (
            ProtocolKind::IncrBesideLease,
            with_failover(),
            Expected::Found {
                kind: ViolationKind::TokenOrder,
                steps: 5,
            },
        ),
        // Without a failover the replica is never asked: as fenced-cas
        // (replication messages in flight; horizon 10 ms to stay small).
        (
            ProtocolKind::IncrBesideLease,
            Bounds {
                horizon_ms: 10,
                ..small()
            },
            Expected::Proved {
                states_min: 500_000,
            },
        ),
        (
            ProtocolKind::ConsensusGeneration,
            quorum_bounds(),
            Expected::Proved {
                states_min: 1_000_000,
            },
        ),
        // The old primary may rejoin as a replica with what it accepted
        // (10x the states at one horizon: 3 ms here, 5 ms in the docs).
        (
            ProtocolKind::ConsensusGeneration,
            Bounds {
                rejoins: 1,
                horizon_ms: 3,
                ..quorum_bounds()
            },
            Expected::Proved {
                states_min: 1_000_000,
            },
        ),
    ];
    for (kind, bounds, expected) in cases {
        let (_, out) = check_protocol(kind, bounds).expect("supported");
        verdict_is(kind, bounds, &expected, &out);
    }
}

#[test]
fn incr_beside_lease_loses_its_token_to_the_failover_and_replays_as_a_failover_fault() {
    let (h, out) =
        check_protocol(ProtocolKind::IncrBesideLease, with_failover()).expect("supported");
    let c = out.counterexample.expect("unsafe");
    let failover_at = c
        .steps
        .iter()
        .position(|(a, _)| matches!(a, Action::Failover { .. }))
        .expect("the path fails over");
    // Both grants' acquires: the first before the failover, the second
    // (to the promoted replica) after it.
    assert!(
        matches!(c.steps[failover_at + 2].0, Action::Deliver(p) if p.to == NodeId(h.topology.coord.0 + 1)),
        "{c:?}"
    );
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    assert!(text.contains("replicas = 2"), "{text}");
    // B starts (its acquire goes to the group address) after the failover,
    // so the simulator routes it to coord/1 as the search did.
    let after = |prefix: &str| -> i64 {
        let at = text
            .find(prefix)
            .unwrap_or_else(|| panic!("{prefix:?} in {text}"));
        let rest = &text[at + prefix.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().expect("a number")
    };
    let failover_ms = after("kind = \"failover\"\nat_ms = ");
    let b_start_ms = after("name = \"B\"\nstart_ms = ");
    assert!(b_start_ms > failover_ms, "{text}");
    token_order_on_every_seed(&text);
}

/// The simulator runs the emitted scenario: token_order on every seed,
/// and its expectations met.
fn token_order_on_every_seed(text: &str) {
    let s = fencesim::scenario::parse(text, "emitted").expect("valid scenario");
    let r = fencesim::suite::run_scenario(&s, s.seeds.clone(), 2);
    assert_eq!(
        r.agg.failing_seeds[ViolationKind::TokenOrder as usize],
        r.agg.seeds,
        "{text}"
    );
    assert!(r.met(), "{:?}\n{text}", r.problems);
}

/// The real quorum coordinator, except that a primary counts the first
/// peer's acceptance of each proposal the moment it proposes (a majority
/// count off by one: its own ack twice).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum EagerQuorum {
    Builtin(Builtin),
    Coordinator(Coordinator),
}

impl Node for EagerQuorum {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let c = match self {
            EagerQuorum::Builtin(n) => return n.handle(clocks, input, fx),
            EagerQuorum::Coordinator(c) => c,
        };
        let before = fx.len();
        c.handle(clocks, input, fx);
        let proposed = fx[before..].iter().find_map(|e| match *e {
            Effect::Send {
                to,
                msg: Msg::Propose { gen },
            } => Some((to, gen)),
            _ => None,
        });
        if let Some((peer, gen)) = proposed {
            let ack = Input::Message {
                from: peer,
                msg: Msg::Accepted { gen, ok: true },
            };
            c.handle(clocks, ack, fx);
        }
    }
}

pub fn eager(role: &Role) -> EagerQuorum {
    match *role {
        Role::Coordinator(cfg) if cfg.replication == Replication::Quorum => {
            EagerQuorum::Coordinator(Coordinator::new(cfg))
        }
        _ => EagerQuorum::Builtin(builtin(role)),
    }
}

#[test]
fn a_quorum_that_counts_an_acceptance_before_it_arrives_reissues_a_generation_after_failover() {
    let bounds = quorum_bounds();
    let h = Harness {
        topology: Topology::lease(
            ProtocolKind::ConsensusGeneration,
            bounds.workers,
            bounds.timing,
        )
        .expect("supported"),
        factory: eager,
        bounds,
    };
    let out = check(&h);
    let c = out.counterexample.expect("the miscounted quorum is found");
    assert_eq!(c.finding.kind, ViolationKind::TokenOrder, "{c:?}");
    assert!(
        c.steps
            .iter()
            .any(|(a, _)| matches!(a, Action::Failover { .. })),
        "{c:?}"
    );
}

#[test]
fn failovers_are_refused_without_replicas_and_refinement_is_refused_with_the_reason() {
    let out = fencesim(&["check", "--code", "fenced-cas", "--failovers", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("--failovers 1"), "{}", stderr(&out));
    let out = fencesim(&["check", "--code", "incr-beside-lease", "--rejoins", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("--rejoins 2"), "{}", stderr(&out));
    let out = fencesim(&[
        "check",
        "--code",
        "etcd-mutex",
        "--refine",
        "--fence",
        "false",
        "--duplicates",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("etcd-mutex: no refinement with duplicates")
            && stderr(&out).contains("the value goes back"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_code_proves_consensus_generation_with_a_failover_at_a_short_horizon() {
    let out = fencesim(&[
        "check",
        "--code",
        "consensus-generation",
        "--horizon-ms",
        "5",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    for line in [
        "at 2w/2g/0loss/0dup/0crash/0pause/1failover/4inflight/5ms",
        "consensus-generation: safe: proved at these bounds (vacuity ok)",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

#[test]
fn a_failed_over_primary_that_rejoins_is_scripted_as_the_failovers_restart_and_replays() {
    // The shortest path with the old primary rejoining right after the
    // failover: the same violation, and the scenario's failover restarts it.
    let bounds = Bounds {
        rejoins: 1,
        pauses: 0,
        ..with_failover()
    };
    let (h, out) = check_protocol(ProtocolKind::IncrBesideLease, bounds).expect("supported");
    let c = out.counterexample.expect("unsafe");
    let mut path: Vec<Action> = c.steps.iter().map(|(a, _)| *a).collect();
    let at = path
        .iter()
        .position(|a| matches!(a, Action::Failover { .. }))
        .expect("a failover");
    path.insert(at + 1, Action::Rejoin(h.topology.coord));
    let rejoined = Counterexample {
        finding: c.finding.clone(),
        steps: timed(&h, &path),
        shortest: false,
    };
    let text = to_scenario(&h, &rejoined, &mut |t| replays(t, 2)).expect("scripted");
    assert!(
        text.contains("kind = \"failover\"") && text.contains("restart_after_ms = "),
        "{text}"
    );
    token_order_on_every_seed(&text);
}
