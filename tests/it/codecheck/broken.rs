//! A deliberately broken copy of the shipped resource, checked by the same
//! search: a wrapper `Node` around the real `Resource` whose fence
//! comparison is weakened by one (`token + 1 >= fence` instead of
//! `token >= fence`). The same wrapper without the weakening is proved, so
//! the violation is the off-by-one's, not the wrapper's. The wrappers show
//! the real nodes inside them to the refinement check (`refine.rs`).

use fencesim::check::ViolationKind;
use fencesim::codecheck::{
    builtin, check, Action, Bounds, Builtin, Harness, Inspect, Topology, Wraps,
};
use fencesim::protocol::coordinator::Coordinator;
use fencesim::protocol::resource::Resource;
use fencesim::protocol::zookeeper::ZkMsg;
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, ProtocolKind, Role, Token};

/// The real resource, plus the fence it has accepted as the wrapper saw it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct OffByOne {
    inner: Resource,
    fence: u64,
    weakened: bool,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Patched {
    Builtin(Builtin),
    Resource(OffByOne),
}

impl Node for Patched {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let r = match self {
            Patched::Builtin(n) => return n.handle(clocks, input, fx),
            Patched::Resource(r) => r,
        };
        let input = match input {
            // The weakened comparison: a token one below the fence passes,
            // as if it were the fence itself (`t + 1 >= fence`).
            Input::Message {
                from,
                msg:
                    Msg::Write {
                        req,
                        key,
                        op,
                        token: Some(Token(t)),
                        value,
                    },
            } if r.weakened && t + 1 == r.fence => Input::Message {
                from,
                msg: Msg::Write {
                    req,
                    key,
                    op,
                    token: Some(Token(r.fence)),
                    value,
                },
            },
            other => other,
        };
        let accepted = match input {
            Input::Message {
                msg:
                    Msg::Write {
                        token: Some(Token(t)),
                        ..
                    },
                ..
            } => Some(t),
            _ => None,
        };
        let before = fx.len();
        r.inner.handle(clocks, input, fx);
        let ok = fx[before..].iter().any(|e| {
            matches!(
                e,
                Effect::Send {
                    msg: Msg::WriteOk { .. },
                    ..
                }
            )
        });
        if let (true, Some(t)) = (ok, accepted) {
            r.fence = r.fence.max(t);
        }
    }
}

impl Inspect for Patched {
    fn coordinator(&self) -> Option<&Coordinator> {
        match self {
            Patched::Builtin(n) => n.coordinator(),
            Patched::Resource(_) => None,
        }
    }
    fn resource(&self) -> Option<&Resource> {
        match self {
            Patched::Builtin(n) => n.resource(),
            Patched::Resource(r) => Some(&r.inner),
        }
    }
}

pub fn weakened(role: &Role) -> Patched {
    match *role {
        Role::Resource(cfg) => Patched::Resource(OffByOne {
            inner: Resource::new(cfg),
            fence: 0,
            weakened: true,
        }),
        _ => Patched::Builtin(builtin(role)),
    }
}

pub fn faithful(role: &Role) -> Patched {
    match weakened(role) {
        Patched::Resource(r) => Patched::Resource(OffByOne {
            weakened: false,
            ..r
        }),
        other => other,
    }
}

pub fn harness(factory: fn(&Role) -> Patched) -> Harness<Patched> {
    let bounds = super::small();
    Harness {
        topology: Topology::lease(ProtocolKind::FencedCas, bounds.workers, bounds.timing)
            .expect("fenced-cas is supported"),
        factory,
        bounds,
    }
}

/// The real coordinator with its `Persist` effects dropped: a token
/// counter that is never written down.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Forgetful(Builtin);

impl Wraps for Forgetful {
    fn wrapped(&self) -> &Builtin {
        &self.0
    }
}

impl Node for Forgetful {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let before = fx.len();
        self.0.handle(clocks, input, fx);
        if matches!(self.0, Builtin::Coordinator(_)) {
            drop_persists(fx, before);
        }
    }
}

/// Removes the `Persist` effects at `fx[from..]`: a node that never writes
/// its record down (a restart finds the last one that reached the disk).
pub fn drop_persists(fx: &mut Vec<Effect>, from: usize) {
    let kept: Vec<Effect> = fx
        .drain(from..)
        .filter(|e| !matches!(e, Effect::Persist { .. }))
        .collect();
    fx.extend(kept);
}

fn unpersisted(role: &Role) -> Forgetful {
    Forgetful(builtin(role))
}

/// fenced-cas with the forgetful coordinator, one crash, no pause.
pub fn forgetful() -> Harness<Forgetful> {
    let bounds = Bounds {
        crashes: 1,
        pauses: 0,
        ..super::small()
    };
    Harness {
        topology: Topology::lease(ProtocolKind::FencedCas, bounds.workers, bounds.timing)
            .expect("fenced-cas is supported"),
        factory: unpersisted,
        bounds,
    }
}

#[test]
fn a_coordinator_that_never_persists_its_token_counter_reissues_a_token_after_a_crash() {
    let h = forgetful();
    let out = check(&h);
    let c = out.counterexample.expect("the lost counter is found");
    assert_eq!(c.finding.kind, ViolationKind::TokenOrder, "{c:?}");
    assert!(
        c.steps
            .iter()
            .any(|(a, _)| matches!(a, Action::Crash(n) if *n == h.topology.coord)),
        "the coordinator crashed on the way: {c:?}"
    );
}

#[test]
fn a_resource_whose_fence_comparison_is_off_by_one_lets_a_stale_write_through() {
    let out = check(&harness(weakened));
    let c = out.counterexample.expect("the weakened fence is found");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
}

#[test]
fn the_same_wrapper_without_the_weakening_is_proved() {
    let out = check(&harness(faithful));
    assert!(out.proved() && out.vacuity_ok(), "{out:?}");
}

/// A ZooKeeper lock client that takes the lock without being lowest: the
/// real worker (and its real client) behind a wrapper that rewrites each
/// `zk_children` answer its own node is in, so that its node — the
/// sequence number its `zk_created` gave — reads as the lowest. With
/// `jumps` false the wrapper only watches: the real recipe.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Impatient {
    inner: Builtin,
    seq: u64,
    jumps: bool,
}

impl Node for Impatient {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let input = match input {
            Input::Message {
                from,
                msg: msg @ Msg::Zk(ZkMsg::Created { seq, .. }),
            } => {
                self.seq = seq;
                Input::Message { from, msg }
            }
            Input::Message {
                from,
                msg:
                    Msg::Zk(ZkMsg::Children {
                        req,
                        key,
                        pred,
                        mine: true,
                        ..
                    }),
            } if self.jumps => Input::Message {
                from,
                msg: Msg::Zk(ZkMsg::Children {
                    req,
                    key,
                    lowest: self.seq,
                    pred,
                    mine: true,
                }),
            },
            other => other,
        };
        self.inner.handle(clocks, input, fx);
    }
}

impl Wraps for Impatient {
    fn wrapped(&self) -> &Builtin {
        &self.inner
    }
}

fn impatient(role: &Role) -> Impatient {
    Impatient {
        inner: builtin(role),
        seq: 0,
        jumps: matches!(role, Role::Worker(_)),
    }
}

fn patient(role: &Role) -> Impatient {
    Impatient {
        jumps: false,
        ..impatient(role)
    }
}

/// zk-sequential at its default bounds, each node wrapped: the workers'
/// clients take the lock without being lowest (`jumps`), or not.
pub fn zk_harness(jumps: bool) -> Harness<Impatient> {
    let kind = ProtocolKind::ZkSequential;
    let bounds = Bounds {
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    };
    Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing)
            .expect("zk-sequential is supported"),
        factory: if jumps { impatient } else { patient },
        bounds,
    }
}
