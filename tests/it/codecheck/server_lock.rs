//! The lock servers whose lease is the server's own state — DynamoDB's
//! lock item, PostgreSQL's advisory lock — refined against no-fence
//! (`abstraction::server_lease`). A client that decides after its lock
//! ended (its answer handled late: a pause delays its request timer) is a
//! grant whose lease already ended; a lock table that takes a put without
//! its RVN condition diverges where the old holder's late heartbeat takes
//! the item back from the taker; the fenced variants are refused, and the
//! search shows the decision on a lower token that is why.

use super::refine::LateDecision;
use fencesim::codecheck::{
    builtin, explore, model_for, model_of, refine, refine_protocol, refine_protocol_with, Action,
    Bounds, Builtin, Harness, Inspect, Options, Topology, Wraps,
};
use fencesim::model::Protocol;
use fencesim::protocol::dynamodb::DdbMsg;
use fencesim::protocol::{Clocks, Effect, Input, Key, Msg, Node, ProtocolKind, Role, Server};

const KINDS: [ProtocolKind; 2] = [
    ProtocolKind::DynamodbHeartbeat,
    ProtocolKind::PgAdvisoryLock,
];

fn fenced() -> Options {
    Options {
        fence: Some(true),
        ..Options::default()
    }
}

#[test]
fn dynamodb_and_pg_refine_no_fence_with_a_crash_of_any_node_instead_of_the_pause() {
    // DynamoDB's table is durable (a restart changes no item); a restarted
    // PostgreSQL ends every session, so its lock's end is an Expire, and a
    // client answered before the restart decides after it: a late grant.
    for kind in KINDS {
        let bounds = Bounds {
            crashes: 1,
            pauses: 0,
            ..Bounds::for_protocol(kind)
        };
        let (_, r) = refine_protocol(kind, bounds).expect("mapped with crashes");
        assert!(
            r.passed() && r.counts.steps > 0,
            "{}: {:?}",
            kind.id(),
            r.divergence
        );
        assert_eq!(r.of.protocol, Protocol::NoFence);
        let [acquire, expire, ..] = r.counts.by_action;
        assert!(acquire > 0 && expire > 0, "{}: {:?}", kind.id(), r.counts);
        if kind == ProtocolKind::PgAdvisoryLock {
            assert!(r.counts.late_grants > 0, "{:?}", r.counts);
        }
    }
}

#[test]
fn with_the_fence_a_late_decision_carries_a_lower_token_which_fenced_cas_has_no_step_for() {
    for kind in KINDS {
        let bounds = Bounds::for_protocol(kind);
        let h = Harness {
            topology: Topology::new(kind, fenced(), bounds.workers, bounds.timing)
                .expect("supported"),
            factory: builtin,
            bounds,
        };
        let mut probe = LateDecision(None);
        let (_, path) = explore(&h, &mut probe);
        let tokens = probe.0.expect("a late decision within the default bounds");
        assert!(path.is_some(), "{}: the search stopped there", kind.id());
        assert!(
            tokens.len() == 2 && tokens[1] < tokens[0],
            "{}: {tokens:?}",
            kind.id()
        );
        let why = model_for(kind, true).expect_err("refused");
        assert!(
            why.starts_with(&format!("{}: no refinement with --fence true", kind.id()))
                && why.contains("a lower token")
                && why.contains("no such step"),
            "{why}"
        );
        let refused = refine_protocol_with(kind, fenced(), bounds).err();
        assert_eq!(refused.as_ref(), Some(&why));
        let of = model_of(kind).expect("the catalogue's unfenced variant is mapped");
        assert_eq!(of.protocol, Protocol::NoFence);
        assert!(of.note.is_some_and(|n| n.contains("no model of its own")));
    }
}

/// The real lock table, or one whose conditional put on an existing item
/// holds whatever RVN it expects (`unconditional`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct LockTableCopy {
    inner: Builtin,
    unconditional: bool,
}

impl Node for LockTableCopy {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let current_rvn = match self.inner.lock_server() {
            Some(Server::Dynamo(table)) => table.item(Key(0)).map(|i| i.1),
            _ => None,
        };
        let input = match input {
            Input::Message {
                from,
                msg:
                    Msg::Dynamo(DdbMsg::Put {
                        req,
                        key,
                        owner,
                        rvn,
                        expect_rvn,
                    }),
            } if self.unconditional && expect_rvn != 0 => Input::Message {
                from,
                msg: Msg::Dynamo(DdbMsg::Put {
                    req,
                    key,
                    owner,
                    rvn,
                    expect_rvn: current_rvn.unwrap_or(expect_rvn),
                }),
            },
            other => other,
        };
        self.inner.handle(clocks, input, fx);
    }
}

impl Wraps for LockTableCopy {
    fn wrapped(&self) -> &Builtin {
        &self.inner
    }
}

fn unconditional(role: &Role) -> LockTableCopy {
    LockTableCopy {
        inner: builtin(role),
        unconditional: true,
    }
}

fn conditional(role: &Role) -> LockTableCopy {
    LockTableCopy {
        unconditional: false,
        ..unconditional(role)
    }
}

fn table_harness(factory: fn(&Role) -> LockTableCopy) -> Harness<LockTableCopy> {
    let kind = ProtocolKind::DynamodbHeartbeat;
    let bounds = Bounds::for_protocol(kind);
    Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing).expect("supported"),
        factory,
        bounds,
    }
}

#[test]
fn a_lock_table_without_the_rvn_condition_diverges_where_a_late_heartbeat_takes_the_item_back() {
    let h = table_harness(unconditional);
    let r = refine(&h).expect("mapped");
    let text = fencesim::report::code_check::render_refinement("dynamodb-heartbeat", &h, &r);
    let d = r
        .divergence
        .expect("the lease comes back with no new grant");
    assert!(d.shortest, "the BFS found it: {text}");
    // A's heartbeat put goes out at 3 ms and A pauses; B waited out A's
    // RVN and takes the item over at 10 ms; A's put, expecting the RVN B
    // replaced, lands and takes it back.
    assert_eq!(d.path.len(), 17, "{text}");
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if p.to == h.topology.coord
            && matches!(p.msg, Msg::Dynamo(DdbMsg::Put { .. }))),
        "the step is a put the real table refuses: {text}"
    );
    let from = d.from.expect("the model state before");
    assert_eq!(from.holder, u8::MAX, "no lease before the put: {text}");
    let expected = d.expected.expect("the closest model step");
    assert!(
        expected.differences.iter().any(|f| f.starts_with("holder")),
        "{expected:?}\n{text}"
    );
    // The same wrapper with the condition refines the model.
    let r = refine(&table_harness(conditional)).expect("mapped");
    assert!(r.passed(), "{:?}", r.divergence);
}
