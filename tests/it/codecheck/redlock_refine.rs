//! Redlock refined against no-fence (`abstraction::redlock_lease`): the
//! lease is Redlock's own "held" — the latest decision while its client
//! holds the lock and its validity is left on its own monotonic clock —
//! so a decision while the lease before it is still valid (two clients
//! holding at once) has no model step. The shipped masters and client pass
//! within the algorithm's assumptions (a master restart with fsync always
//! or antirez's delay, drift within the validity's allowance); a client
//! that counts a refusal as an OK and a master whose `SET NX` overwrites a
//! live key diverge; the faults outside those assumptions are refused, and
//! a probe over the plain search measures the overlap that is why.

use fencesim::codecheck::state::State;
use fencesim::codecheck::{
    builtin, explore, refine, refine_protocol_with, Action, Bounds, Builtin, Finding, Harness,
    Observer, Options, Refinement, Topology, Wraps,
};
use fencesim::model::state::NO_HOLDER;
use fencesim::model::Protocol;
use fencesim::protocol::client::LockClient;
use fencesim::protocol::redlock::RedisMsg;
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, NodeId, ProtocolKind, Role, Server};

use super::refine::passes;
use crate::common::{fencesim, stdout};

const KIND: ProtocolKind = ProtocolKind::Redlock;

/// Redlock's code-level defaults (9 ms TTL, 3 masters, 2 workers, 2
/// grants, 1 pause) at 3 in flight: one client's three `SET`s, or its
/// answers, at once, so the other's attempt follows it.
fn three_in_flight(horizon_ms: u64) -> Bounds {
    Bounds {
        in_flight_max: 3,
        horizon_ms,
        max_states: 3_000_000,
        ..Bounds::for_protocol(KIND)
    }
}

fn with(fsync_always: Option<bool>, restart_delay_ms: Option<u64>) -> Options {
    Options {
        fsync_always,
        restart_delay_ms,
        ..Options::default()
    }
}

fn refined(options: Options, bounds: Bounds) -> Refinement {
    let (_, r) = refine_protocol_with(KIND, options, bounds)
        .unwrap_or_else(|why| panic!("mapped at {}: {why}", bounds.label()));
    assert!(passes(&r), "{}: {:?}", bounds.label(), r.divergence);
    assert_eq!(r.of.protocol, Protocol::NoFence);
    assert_eq!(r.counts.late_grants, 0, "its client checks its validity");
    r
}

#[test]
fn redlock_refines_no_fence_and_so_does_a_master_restart_with_fsync_always_or_antirezs_delay() {
    let r = refined(Options::default(), three_in_flight(14));
    let [acquire, expire, send, deliver, ..] = r.counts.by_action;
    assert!(
        acquire > 0 && expire > 0 && send > 0 && deliver > 0,
        "{:?}",
        r.counts
    );
    let c = r.outcome.counterexample.expect("the search met it");
    assert_eq!(c.finding.kind.name(), "stale_write", "no fence: unsafe");
    // A restart of any node (a master's too), no pause, at 4 in flight —
    // two clients' attempts overlap (split votes) — to 3 ms, where a
    // restart without fsync gives two leases at once (measured below): the
    // restarted master kept the key, or (to 12 ms) answers nothing for a TTL.
    let crash = Bounds {
        crashes: 1,
        pauses: 0,
        in_flight_max: 4,
        ..three_in_flight(3)
    };
    let r = refined(with(Some(true), None), crash);
    assert!(r.counts.by_action[1] > 0, "{:?}", r.counts);
    let delayed = Bounds {
        crashes: 1,
        pauses: 0,
        ..three_in_flight(12)
    };
    refined(with(None, Some(9)), delayed);
    // A clock may drift 10 % (the validity allows 13.1 %), to 10 ms: past
    // the first validity's end (6.91 ms, 7.68 ms on a slow clock).
    refined(
        Options::default(),
        Bounds {
            drifts: 1,
            ..three_in_flight(10)
        },
    );
}

/// The faults redlock's mapping refuses, each with the failure it names.
#[test]
fn the_faults_that_break_redlocks_assumptions_are_refused_by_name() {
    let base = three_in_flight(12);
    for (options, bounds, named) in [
        (
            Options::default(),
            Bounds { jumps: 1, ..base },
            "Kleppmann's first failure",
        ),
        (
            Options::default(),
            Bounds { crashes: 1, ..base },
            "Kleppmann's second failure",
        ),
        (
            with(None, Some(8)),
            Bounds { crashes: 1, ..base },
            "a restart delay of 8 ms (below the 9 ms TTL)",
        ),
        (
            Options::default(),
            Bounds {
                drifts: 1,
                drift_ppm: 131_364,
                ..base
            },
            "above 131363 at a 9 ms TTL",
        ),
    ] {
        let why = refine_protocol_with(KIND, options, bounds)
            .err()
            .unwrap_or_else(|| panic!("{} mapped", bounds.label()));
        assert!(
            why.starts_with("redlock: no refinement with") && why.contains(named),
            "{why}"
        );
        assert!(why.contains("two leases at once"), "{why}");
    }
    let out = fencesim(&["check", "--code", "redlock", "--refine", "--jumps", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
}

/// Stops the plain search at a decision made while the decision before it
/// is still held and valid (its client's validity left on its own clock):
/// two leases at once. Records the instant (ms).
struct Overlap(Option<u64>);

fn valid_holder(s: &State<Builtin>, at_ns: u64) -> Option<u64> {
    let &(latest, _) = s.judge.issued().last()?;
    (0..2).find_map(|i| {
        let Builtin::Worker(w) = &s.nodes[i] else {
            return None;
        };
        let Some(LockClient::Redis(c)) = w.client() else {
            return None;
        };
        let (owner, until) = c.holding()?;
        let mono = s.clock(NodeId(i as u16)).read(at_ns).mono_ns;
        (owner == latest && mono < until).then_some(owner)
    })
}

impl Observer<Builtin> for Overlap {
    fn step(
        &mut self,
        from: &State<Builtin>,
        _: Action,
        to: &State<Builtin>,
        _: Option<&Finding>,
    ) -> bool {
        let decided = to.judge.grants() > from.judge.grants();
        if decided && valid_holder(from, to.now_ns).is_some() {
            self.0 = Some(to.now_ns / 1_000_000);
        }
        self.0.is_none()
    }
}

fn overlap(options: Options, bounds: Bounds) -> Option<u64> {
    let h = Harness {
        topology: Topology::new(KIND, options, bounds.workers, bounds.timing).expect("supported"),
        factory: builtin,
        bounds,
    };
    let mut probe = Overlap(None);
    explore(&h, &mut probe);
    probe.0
}

#[test]
fn a_restart_without_fsync_and_a_forward_jump_let_a_client_decide_inside_the_holders_validity() {
    // Measured, as the refusals say: before any key expires (3 ms), the
    // other client decides while the holder's validity runs (with fsync
    // always the refinement passes at these bounds: the first test).
    let early = Bounds {
        pauses: 0,
        in_flight_max: 4,
        ..three_in_flight(3)
    };
    let crash = Bounds {
        crashes: 1,
        ..early
    };
    assert!(overlap(Options::default(), crash).is_some_and(|ms| ms < 3));
    let jump = Bounds { jumps: 1, ..early };
    assert!(overlap(Options::default(), jump).is_some_and(|ms| ms < 3));
}

/// The built-in nodes, or one of them broken: a client that counts a
/// master's refusal (nil) as an OK — it decides on a minority — or a
/// master whose `SET NX` overwrites a live key (the held key is deleted
/// first, as if `NX` were dropped).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RedlockCopy {
    inner: Builtin,
    bug: Bug,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Bug {
    None,
    RefusalCountsAsOk,
    SetOverwrites,
}

impl Node for RedlockCopy {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let input = match (self.bug, &self.inner, input) {
            (
                Bug::RefusalCountsAsOk,
                Builtin::Worker(_),
                Input::Message {
                    from,
                    msg: Msg::Redis(RedisMsg::SetNxResult { req, key, .. }),
                },
            ) => Input::Message {
                from,
                msg: Msg::Redis(RedisMsg::SetNxResult { req, key, ok: true }),
            },
            (
                Bug::SetOverwrites,
                Builtin::Server(server),
                Input::Message {
                    from,
                    msg: msg @ Msg::Redis(RedisMsg::SetNx { key, owner, .. }),
                },
            ) => {
                let Server::Redis(master) = server.as_ref() else {
                    unreachable!("redlock's servers are Redis masters")
                };
                if let Some(held) = master.live(key, clocks.wall_ns).filter(|&o| o != owner) {
                    let cad = Msg::Redis(RedisMsg::Cad {
                        req: 0,
                        key,
                        owner: held,
                    });
                    let msg = Input::Message { from, msg: cad };
                    self.inner.handle(clocks, msg, &mut Vec::new());
                }
                Input::Message { from, msg }
            }
            (_, _, input) => input,
        };
        self.inner.handle(clocks, input, fx);
    }
}

impl Wraps for RedlockCopy {
    fn wrapped(&self) -> &Builtin {
        &self.inner
    }
}

fn copy(role: &Role, bug: Bug) -> RedlockCopy {
    RedlockCopy {
        inner: builtin(role),
        bug,
    }
}

fn copy_harness(factory: fn(&Role) -> RedlockCopy) -> Harness<RedlockCopy> {
    let bounds = Bounds {
        pauses: 0,
        ..three_in_flight(12)
    };
    Harness {
        topology: Topology::lease(KIND, bounds.workers, bounds.timing).expect("supported"),
        factory,
        bounds,
    }
}

/// The broken copy's refinement diverges at a decision (a master's answer
/// delivered to a client, or its request timer) made while the model's
/// lease is held: the model has no grant then.
fn diverges_at_a_decision_inside_a_lease(factory: fn(&Role) -> RedlockCopy) {
    let h = copy_harness(factory);
    let r = refine(&h).expect("mapped");
    let text = fencesim::report::code_check::render_refinement("redlock", &h, &r);
    let d = r.divergence.expect("two leases at once");
    assert!(d.shortest, "the BFS found it: {text}");
    let from = d.from.expect("the model state before");
    assert_ne!(from.holder, NO_HOLDER, "a lease held before: {text}");
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if p.to.0 < 2)
            || matches!(last, Action::Fire { node, .. } if node.0 < 2),
        "the step is a client's decision: {text}"
    );
    let expected = d.expected.expect("the closest model step");
    assert!(
        expected.differences.iter().any(|f| f.starts_with("grants")),
        "{expected:?}\n{text}"
    );
}

#[test]
fn a_client_counting_a_refusal_as_an_ok_decides_on_a_minority_and_diverges() {
    diverges_at_a_decision_inside_a_lease(|role| copy(role, Bug::RefusalCountsAsOk));
    // The same wrapper, faithful, refines the model at the same bounds.
    let r = refine(&copy_harness(|role| copy(role, Bug::None))).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    assert!(r.counts.by_action[0] > 0, "{:?}", r.counts);
}

#[test]
fn a_master_whose_set_nx_overwrites_a_live_key_gives_a_second_majority_and_diverges() {
    diverges_at_a_decision_inside_a_lease(|role| copy(role, Bug::SetOverwrites));
}
