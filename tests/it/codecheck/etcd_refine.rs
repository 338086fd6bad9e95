//! etcd's Mutex refines its own model (`fencesim check --code etcd-mutex
//! --refine`, `models/etcd-mutex.toml` and `etcd-mutex-no-recheck.toml`):
//! the server's keys are the model's nodes at the global revision, a reply
//! the client would decide on is the model's answer in hand, a Lock
//! transaction that puts the key and answers "first" is `CreateNode` then
//! `Answer`, and one lease check deletes several keys. At the abstract
//! level the two Mutexes reach the same states; step by step they differ,
//! and the refinement tells them apart: etcd 3.4.3's client, checked
//! against the fixed Mutex's model, diverges where the server answers a
//! waiter whose own key is gone. A client that takes its own key for the
//! first diverges at its decision.

use fencesim::codecheck::{
    builtin, refine, refine_protocol, refine_protocol_with, Action, Bounds, Builtin, Harness,
    Options, Refinement, Topology, Wraps,
};
use fencesim::model::Protocol;
use fencesim::protocol::client::LockKind;
use fencesim::protocol::etcd::EtcdMsg;
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, ProtocolKind, Role};
use fencesim::report::code_check::render_refinement;

use super::refine::passes;

fn defaults(kind: ProtocolKind) -> Bounds {
    Bounds {
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    }
}

/// The model actions `r` matched, by name.
fn matched(r: &Refinement, name: &str) -> u64 {
    let i = fencesim::codecheck::refine::ACTIONS
        .iter()
        .position(|&a| a == name)
        .expect("an action name");
    r.counts.by_action[i]
}

#[test]
fn both_mutexes_refine_their_own_models_with_a_loss_or_a_crash_and_the_fixed_one_with_a_duplicate_or_a_jump(
) {
    // Each fault alone, without the pause, to 10 ms: 0.4–0.9 M states each.
    // The two differ in their client only, which a loss or a crash reaches.
    for kind in [ProtocolKind::EtcdMutex, ProtocolKind::EtcdMutexNoRecheck] {
        let base = Bounds {
            pauses: 0,
            horizon_ms: 10,
            ..defaults(kind)
        };
        for (fault, bounds) in [
            ("a loss", Bounds { losses: 1, ..base }),
            ("a crash", Bounds { crashes: 1, ..base }),
            (
                "a duplicate",
                Bounds {
                    duplicates: 1,
                    ..base
                },
            ),
            ("a jump", Bounds { jumps: 1, ..base }),
        ] {
            if kind == ProtocolKind::EtcdMutexNoRecheck && matches!(fault, "a duplicate" | "a jump")
            {
                continue;
            }
            let (_, r) = refine_protocol(kind, bounds).expect("mapped");
            assert!(passes(&r), "{} with {fault}: {:?}", kind.id(), r.divergence);
            assert_eq!(r.of.protocol.id(), kind.id());
            assert!(
                matched(&r, "create_node") > 0
                    && matched(&r, "delete_node") > 0
                    && matched(&r, "acquire") > 0
                    && r.counts.server_chains > 0,
                "{} with {fault}: keys put, deleted, decided on, and a Lock transaction that answers first: {:?}",
                kind.id(),
                r.counts
            );
        }
    }
}

#[test]
fn the_unfenced_mutex_refines_its_twin_and_meets_the_models_stale_write() {
    let kind = ProtocolKind::EtcdMutexNoRecheck;
    let unfenced = Options {
        fence: Some(false),
        ..Options::default()
    };
    let (_, r) = refine_protocol_with(kind, unfenced, defaults(kind)).expect("its twin");
    assert!(passes(&r), "{:?}", r.divergence);
    // The step into it matched the model's own stale_write bit.
    let c = r.outcome.counterexample.expect("the search met it");
    assert_eq!(c.finding.kind.name(), "stale_write");
}

/// etcd-mutex's topology (the fixed Mutex's model) whose workers run
/// etcd 3.4.3's client: no re-check of the own key after waitDeletes.
fn no_recheck(role: &Role) -> Builtin {
    let mut role = *role;
    if let Role::Worker(cfg) = &mut role {
        if let LockKind::Etcd(client) = &mut cfg.lock {
            client.recheck = false;
        }
    }
    builtin(&role)
}

#[test]
fn the_3_4_3_mutex_diverges_from_the_fixed_mutexs_model_where_a_waiter_whose_key_is_gone_is_answered(
) {
    let kind = ProtocolKind::EtcdMutex;
    let bounds = defaults(kind);
    let h = Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing).expect("supported"),
        factory: no_recheck,
        bounds,
    };
    let r = refine(&h).expect("mapped");
    let text = render_refinement("etcd-mutex", &h, &r);
    assert_eq!(r.of.protocol, Protocol::EtcdMutex);
    let d = r
        .divergence
        .expect("3.4.3's answer with its own key gone is no step of the fixed Mutex");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Etcd(EtcdMsg::WaitDeletes { .. }))),
        "the server's waitDeletes read answers \"none below\": {last:?}\n{text}"
    );
    let from = d.from.expect("the model state before");
    assert!(
        from.clients
            .iter()
            .any(|c| c.token != 0 && c.node == 0 && c.gen == 0 && c.read == 0),
        "a waiting acquisition whose key is gone: {text}"
    );
    let to = d.to.expect("the code's state after");
    assert!(
        to.clients
            .iter()
            .any(|c| c.token != 0 && c.node == 0 && c.gen == 0 && c.read == 1),
        "…that the code answers \"first\": {text}"
    );
    // The same code against 3.4.3's own model refines it at the same
    // bounds: `every_protocol_the_code_checker_drives_refines_its_model_at_small_bounds`.
}

/// An etcd client that takes its own key for the first: the real worker
/// behind a wrapper that rewrites each `etcd_txn_result` it receives so
/// that the lowest key is its own. With `jumps` false it only forwards.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Jumper {
    inner: Builtin,
    jumps: bool,
}

impl Node for Jumper {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let input = match input {
            Input::Message {
                from,
                msg:
                    Msg::Etcd(EtcdMsg::TxnResult {
                        req, key, my_rev, ..
                    }),
            } if self.jumps && my_rev != 0 => Input::Message {
                from,
                msg: Msg::Etcd(EtcdMsg::TxnResult {
                    req,
                    key,
                    my_rev,
                    owner_rev: my_rev,
                }),
            },
            other => other,
        };
        self.inner.handle(clocks, input, fx);
    }
}

impl Wraps for Jumper {
    fn wrapped(&self) -> &Builtin {
        &self.inner
    }
}

fn jumper(role: &Role) -> Jumper {
    Jumper {
        inner: builtin(role),
        jumps: matches!(role, Role::Worker(_)),
    }
}

fn forwarder(role: &Role) -> Jumper {
    Jumper {
        jumps: false,
        ..jumper(role)
    }
}

/// etcd-mutex without the pause, to 10 ms: the jump needs neither.
fn jumper_harness(factory: fn(&Role) -> Jumper) -> Harness<Jumper> {
    let kind = ProtocolKind::EtcdMutex;
    let bounds = Bounds {
        pauses: 0,
        horizon_ms: 10,
        ..defaults(kind)
    };
    Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing).expect("supported"),
        factory,
        bounds,
    }
}

#[test]
fn an_etcd_client_that_takes_its_own_key_for_the_first_diverges_at_its_decision() {
    let h = jumper_harness(jumper);
    let r = refine(&h).expect("mapped");
    let text = render_refinement("etcd-mutex", &h, &r);
    let d = r.divergence.expect("a decision with no answer in hand");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Etcd(EtcdMsg::TxnResult { .. }))),
        "the client decides on its Lock transaction's answer: {last:?}\n{text}"
    );
    let from = d.from.expect("the model state before");
    let live: Vec<u8> = from
        .clients
        .iter()
        .map(|c| c.node)
        .filter(|&n| n != 0)
        .collect();
    assert_eq!(live.len(), 2, "both keys live, the decider's above: {text}");
    let ok = refine(&jumper_harness(forwarder)).expect("mapped");
    assert!(
        passes(&ok),
        "the wrapper alone refines: {:?}",
        ok.divergence
    );
}
