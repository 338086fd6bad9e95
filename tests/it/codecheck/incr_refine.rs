//! incr-beside-lease refines its model (`fencesim check --code
//! incr-beside-lease --refine`): the shipped Redis pair — a primary that
//! ships its counter and its lease to the replica after the lag, the
//! messages arriving late and in any order, and a failover that promotes
//! the replica with whatever it had — maps onto the model's `Replicate`
//! (a state the primary had) and `Failover` (the backup's counter, and its
//! copy of a lease live or not). The code reaches a failover whose promoted
//! replica holds a lease the old primary had already released or let
//! expire, and the model allows it; a replica that promotes itself with a
//! counter it was never sent diverges at the failover.

use fencesim::codecheck::state::State;
use fencesim::codecheck::{
    builtin, explore, refine, refine_protocol, Action, Bounds, Builtin, Finding, Harness, Inspect,
    Observer, Refinement, Topology,
};
use fencesim::model::Protocol;
use fencesim::protocol::coordinator::Coordinator;
use fencesim::protocol::resource::Resource;
use fencesim::protocol::{Clocks, Effect, Input, Key, Msg, Node, NodeId, ProtocolKind, Role};

const KIND: ProtocolKind = ProtocolKind::IncrBesideLease;

/// incr-beside-lease's default bounds (one failover) without the pause
/// and to 10 ms, the lease's TTL: 661,691 states, ~4 s. The defaults
/// (a pause, 16 ms) refine too, past the 20 M-state bound: 60,772,608
/// states, 8 min of CPU (docs/model-checking.md).
fn ci_bounds() -> Bounds {
    Bounds {
        pauses: 0,
        horizon_ms: 10,
        ..Bounds::for_protocol(KIND)
    }
}

#[test]
fn incr_beside_lease_refines_its_model_with_a_failover_to_the_leases_ttl() {
    let (_, r) = refine_protocol(KIND, ci_bounds()).expect("mapped");
    assert_eq!(r.of.protocol, Protocol::IncrBesideLease);
    assert_eq!(r.of.spec, "models/incr-beside-lease.toml");
    assert!(r.passed() && r.divergence.is_none(), "{:?}", r.divergence);
    assert_eq!(r.outcome.unique_states, 661_691, "{:?}", r.outcome);
    let [acquire, expire, send, deliver, .., other] = r.counts.by_action;
    assert!(
        acquire > 0 && expire > 0 && send > 0 && deliver > 0 && other > 0,
        "grants, expiries, writes, replication and failovers matched: {:?}",
        r.counts
    );
    // The code's token regression is the model's token_order.
    let c = r.outcome.counterexample.expect("the search met it");
    assert_eq!(c.finding.kind.name(), "token_order");
}

/// Stops at the first failover whose promoted replica holds a live lease
/// the old primary no longer held live.
struct StaleLeasePromoted(bool);

fn live_lease(s: &State<Builtin>, node: NodeId) -> Option<u64> {
    let wall_ns = s.clock(node).read(s.now_ns).wall_ns;
    let c = s.nodes[node.0 as usize].coordinator()?;
    c.lease(Key(0))
        .filter(|l| wall_ns < l.expires_wall_ns)
        .map(|l| l.owner)
}

impl Observer<Builtin> for StaleLeasePromoted {
    fn step(
        &mut self,
        from: &State<Builtin>,
        action: Action,
        to: &State<Builtin>,
        _: Option<&Finding>,
    ) -> bool {
        if let Action::Failover { from: old, to: new } = action {
            let promoted = live_lease(to, new);
            self.0 |= promoted.is_some() && promoted != live_lease(from, old);
        }
        !self.0
    }
}

#[test]
fn a_promoted_replica_may_hold_a_lease_the_old_primary_had_ended_which_the_model_allows() {
    let bounds = ci_bounds();
    let h = Harness {
        topology: Topology::lease(KIND, bounds.workers, bounds.timing).expect("supported"),
        factory: builtin,
        bounds,
    };
    let mut probe = StaleLeasePromoted(false);
    let (_, path) = explore(&h, &mut probe);
    assert!(
        probe.0 && path.is_some(),
        "within the bounds the refinement covers"
    );
    // The refinement above covers that step: the model's Failover keeps
    // the backup's copy live (its PromotedWithLease event).
}

/// The real coordinator, except that a replica told `Promote` first takes
/// the counter one above the one it was sent (as if it had heard of an
/// INCR it never received); `bump` off: the real one.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Hasty {
    Builtin(Builtin),
    Coordinator(Coordinator, bool),
}

impl Node for Hasty {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let (c, bump) = match self {
            Hasty::Builtin(n) => return n.handle(clocks, input, fx),
            Hasty::Coordinator(c, bump) => (c, *bump),
        };
        if let Input::Message {
            from,
            msg: Msg::Promote,
        } = input
        {
            if bump && c.counter() > 0 {
                let lease = c.lease(Key(0)).copied();
                let own = Input::Message {
                    from,
                    msg: Msg::Replicate {
                        key: Key(0),
                        counter: c.counter() + 1,
                        owner: lease.map_or(0, |l| l.owner),
                        token: lease.and_then(|l| l.token),
                        expires_wall_ns: lease.map_or(0, |l| l.expires_wall_ns),
                    },
                };
                c.handle(clocks, own, fx);
            }
        }
        c.handle(clocks, input, fx);
    }
}

impl Inspect for Hasty {
    fn coordinator(&self) -> Option<&Coordinator> {
        match self {
            Hasty::Builtin(n) => n.coordinator(),
            Hasty::Coordinator(c, _) => Some(c),
        }
    }
    fn resource(&self) -> Option<&Resource> {
        match self {
            Hasty::Builtin(n) => n.resource(),
            Hasty::Coordinator(..) => None,
        }
    }
}

fn hasty(role: &Role) -> Hasty {
    match *role {
        Role::Coordinator(cfg) => Hasty::Coordinator(Coordinator::new(cfg), true),
        _ => Hasty::Builtin(builtin(role)),
    }
}

fn faithful(role: &Role) -> Hasty {
    match hasty(role) {
        Hasty::Coordinator(c, _) => Hasty::Coordinator(c, false),
        other => other,
    }
}

/// To 8 ms: the failover and the replication before it, 152,078 states.
fn refine_with(factory: fn(&Role) -> Hasty) -> Refinement {
    let bounds = Bounds {
        horizon_ms: 8,
        ..ci_bounds()
    };
    let h = Harness {
        topology: Topology::lease(KIND, bounds.workers, bounds.timing).expect("supported"),
        factory,
        bounds,
    };
    refine(&h).expect("mapped")
}

#[test]
fn a_replica_that_promotes_itself_with_a_counter_it_was_never_sent_diverges_at_the_failover() {
    let r = refine_with(hasty);
    let d = r
        .divergence
        .expect("the bumped counter diverges from the model");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Failover { .. }),
        "the step is the failover: {:?}",
        d.path
    );
    let expected = d.expected.expect("the closest model step");
    assert!(
        expected
            .step
            .contains("the backup is promoted with counter")
            && expected.differences.len() == 1
            && expected.differences[0].starts_with("node counter"),
        "the model promotes the counter the backup had: {expected:?}"
    );
    let same = refine_with(faithful);
    assert!(same.passed(), "the wrapper alone: {:?}", same.divergence);
}
