//! The refinement check (`fencesim check --code P --refine`): every step
//! the code-level search explores, mapped into the protocol's abstract
//! model, is a stutter or one model action. Every protocol the code checker
//! drives passes at small bounds; deliberately broken copies of the code
//! (`broken.rs`'s wrappers) diverge, at the step that breaks the model,
//! and the report names it; bounds the mapping is not exact at are refused.

use super::broken::{faithful, forgetful, harness, weakened, zk_harness};
use super::conditional::store_ignoring_if_match;
use fencesim::codecheck::refine::Expected;
use fencesim::codecheck::state::State;
use fencesim::codecheck::{
    builtin, explore, is_lock_server, is_replicated, model_for, model_of, prove, refine,
    refine_protocol, refine_protocol_with, supported, Action, Bounds, Builtin, Finding, Harness,
    Observer, Options, Refinement, Topology,
};
use fencesim::model::to_scenario::simulator_protocol;
use fencesim::model::Protocol;
use fencesim::protocol::zookeeper::ZkMsg;
use fencesim::protocol::{Msg, ProtocolKind};
use fencesim::report::code_check::render_refinement;

fn refused(kind: ProtocolKind, bounds: Bounds) -> String {
    match refine_protocol(kind, bounds) {
        Ok(_) => panic!("{}: mapped at {}", kind.id(), bounds.label()),
        Err(why) => why,
    }
}

pub(super) fn passes(r: &Refinement) -> bool {
    r.passed() && r.counts.steps > 0
}

/// A divergence at a write's delivery, on a shortest path: its length and
/// the model step closest to what the code did.
pub(super) fn diverges_delivering_a_write(r: Refinement) -> (usize, Expected) {
    let d = r
        .divergence
        .expect("the broken copy diverges from the model");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Write { .. })),
        "the step delivers a write: {last:?}"
    );
    (d.path.len(), d.expected.expect("the closest model step"))
}

/// The small bounds with one message loss instead of the pause.
fn one_loss() -> Bounds {
    Bounds {
        losses: 1,
        pauses: 0,
        ..super::small()
    }
}

#[test]
fn every_protocol_the_code_checker_drives_refines_its_model_at_small_bounds() {
    // Replicated coordinators (incr-beside-lease refines in
    // incr_refine.rs, consensus-generation in quorum_refine.rs, at bounds
    // of their own) are not run here. etcd's two Mutexes run at their
    // defaults (their faults, unfenced twins and broken copies:
    // etcd_refine.rs). Redlock runs at 3 in flight and 14 ms (its split
    // votes and faults: redlock_refine.rs). Conditional writes (object-store-cas,
    // cache-lease) refine the conditional-write model; single-db, whose
    // store is its lock, the store-lock model; queue-claim the queue-claim
    // model (its other bounds and a broken copy: queue.rs); DynamoDB's lock
    // item and PostgreSQL's advisory lock no-fence (`server_lock.rs`). A
    // lock server runs at its own defaults (2 in flight, 12 ms:
    // zk-sequential 1.5 s, dynamodb-heartbeat 1 s, pg-advisory-lock 2 s).
    // The effect sinks refine their models in `effect_refine.rs` (12 s each
    // at these bounds; the outbox dispatcher at 2 in flight).
    for id in supported() {
        let kind = ProtocolKind::from_id(id).expect("a catalogue id");
        if is_replicated(kind) || model_of(kind).is_err() || kind.has_effect_sink() {
            continue;
        }
        let bounds = if kind == ProtocolKind::Redlock {
            Bounds {
                in_flight_max: 3,
                horizon_ms: 14,
                max_states: 3_000_000,
                ..Bounds::for_protocol(kind)
            }
        } else if is_lock_server(kind) {
            Bounds {
                max_states: 3_000_000,
                ..Bounds::for_protocol(kind)
            }
        } else {
            super::small()
        };
        let (_, r) = refine_protocol(kind, bounds).expect("mapped at these bounds");
        assert!(passes(&r), "{id}: {:?}", r.divergence);
        let [acquire, expire, send, deliver, ..] = r.counts.by_action;
        // The pair has no lease to expire: a belief ends by a step-down
        // (its last slot, with the dropped writes); etcd's keys are deleted.
        let ended = match kind {
            ProtocolKind::Github2012Pair => r.counts.by_action[7],
            ProtocolKind::EtcdMutex | ProtocolKind::EtcdMutexNoRecheck => r.counts.by_action[6],
            _ => expire,
        };
        assert!(
            acquire > 0 && ended > 0 && send > 0 && deliver > 0,
            "{id}: the model's actions were all matched somewhere: {:?}",
            r.counts
        );
        assert!(
            r.counts.stutters < r.counts.steps,
            "{id}: not every step was a stutter: {:?}",
            r.counts
        );
        if kind == ProtocolKind::ZkSequential {
            let [.., create_node, delete_node, _] = r.counts.by_action;
            assert!(
                create_node > 0 && delete_node > 0,
                "{id}: nodes were created, and a waiter's deleted: {:?}",
                r.counts
            );
        }
        if kind == ProtocolKind::QueueClaim {
            // Jobs deleted (DeleteJob, among the other actions); the same
            // states as its proof (the mapping splits none).
            assert_eq!(r.outcome.unique_states, 735_973, "{id}");
            assert!(r.counts.by_action[7] > 0, "{id}: {:?}", r.counts);
        }
        if matches!(
            kind,
            ProtocolKind::DynamodbHeartbeat | ProtocolKind::PgAdvisoryLock
        ) {
            // A paused client decides after its lock ended: a grant whose
            // lease already ended (Acquire, then Expire).
            assert!(r.counts.late_grants > 0, "{id}: {:?}", r.counts);
            let c = r
                .outcome
                .counterexample
                .as_ref()
                .expect("the search met it");
            assert_eq!(c.finding.kind.name(), "stale_write");
        }
        if kind == ProtocolKind::RedisSetNx {
            // Its stale write is the no-fence model's: the code's judge and
            // the model's own stale_write bit agree on that step.
            let c = r.outcome.counterexample.expect("the search met it");
            assert_eq!(c.finding.kind.name(), "stale_write");
        }
    }
}

#[test]
fn the_refinement_check_sees_every_transition_the_proof_explores() {
    let bounds = Bounds {
        pauses: 0,
        ..super::small()
    };
    let (h, r) = refine_protocol(ProtocolKind::FencedCas, bounds).expect("mapped");
    let proof = prove(&h);
    assert!(passes(&r), "{:?}", r.divergence);
    assert_eq!(r.outcome.unique_states, proof.unique_states);
    assert_eq!(r.outcome.transitions, proof.transitions);
    assert!(
        r.counts.steps <= r.outcome.transitions,
        "cut steps are not steps"
    );
}

#[test]
fn a_paused_worker_that_holds_its_inputs_refines_the_model_when_it_resumes() {
    // The resume runs every input the worker held in one code step; the
    // model may match it by a chain of its actions (none needed here: a
    // built-in worker's held inputs lead to one write at most).
    for kind in [
        ProtocolKind::FencedCas,
        ProtocolKind::FencedCheckThenWrite,
        ProtocolKind::RedisSetNx,
    ] {
        let holds = Bounds {
            pause_holds: true,
            horizon_ms: 13,
            ..super::small()
        };
        let (h, r) = refine_protocol(kind, holds).expect("mapped with holds");
        assert!(passes(&r), "{}: {:?}", kind.id(), r.divergence);
        let proof = prove(&h);
        if proof.proved() {
            // An unsafe protocol's proof stops at its first violation.
            assert_eq!(
                r.outcome.unique_states,
                proof.unique_states,
                "{}",
                kind.id()
            );
        }
        let (_, delaying) = refine_protocol(
            kind,
            Bounds {
                pause_holds: false,
                ..holds
            },
        )
        .expect("mapped");
        assert!(
            r.outcome.unique_states > delaying.outcome.unique_states,
            "{}: the holding pause adds states: {} vs {}",
            kind.id(),
            r.outcome.unique_states,
            delaying.outcome.unique_states
        );
    }
}

#[test]
fn a_coordinator_crash_maps_to_the_lease_expiring_and_the_counter_survives_it() {
    let bounds = Bounds {
        crashes: 1,
        pauses: 0,
        horizon_ms: 14,
        ..super::small()
    };
    let (_, r) = refine_protocol(ProtocolKind::FencedCas, bounds).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
}

#[test]
fn a_write_lost_in_flight_maps_to_a_write_that_never_arrives() {
    let (h, r) = refine_protocol(ProtocolKind::FencedCas, one_loss()).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    // The history of handed writes splits a lost write from a handled one:
    // more states than the proof's, whose transitions are all among them.
    let proof = prove(&h);
    assert!(
        r.outcome.unique_states > proof.unique_states,
        "{} vs {}",
        r.outcome.unique_states,
        proof.unique_states
    );
}

#[test]
fn a_resource_whose_fence_is_off_by_one_diverges_where_it_accepts_a_write_below_the_fence() {
    let h = harness(weakened);
    let r = refine(&h).expect("mapped");
    let text = render_refinement("fenced-cas", &h, &r);
    assert!(
        text.contains("fenced-cas: DIVERGENCE at step")
            && text.contains("1 divergences")
            && text.contains("expected (the closest model step): resource rejects"),
        "{text}"
    );
    let (steps, expected) = diverges_delivering_a_write(r);
    assert_eq!(steps, 16, "the stale write's delivery");
    assert!(
        expected.step.contains("rejects"),
        "the model rejects that write: {expected:?}"
    );
    assert!(
        expected.differences.iter().any(|f| f.starts_with("value")),
        "{expected:?}"
    );
}

#[test]
fn the_same_wrapper_without_the_weakening_refines_the_model() {
    let mut h = harness(faithful);
    h.bounds.pauses = 0;
    let r = refine(&h).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
}

#[test]
fn a_coordinator_that_forgets_its_counter_diverges_where_it_reissues_a_token() {
    let h = forgetful();
    let r = refine(&h).expect("mapped");
    let d = r
        .divergence
        .expect("the reissued token diverges from the model");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    assert_eq!(d.path.len(), 5, "grant, crash, grant again: {:?}", d.path);
    let coord = h.topology.coord;
    assert!(
        d.path.iter().any(|(a, _)| *a == Action::Crash(coord)),
        "the coordinator crashed on the way: {:?}",
        d.path
    );
    let (last, _) = d.path.last().expect("a path");
    assert!(
        matches!(last, Action::Deliver(p) if p.to == coord && matches!(p.msg, Msg::Acquire { .. })),
        "the step is the grant after the restart: {last:?}"
    );
    let expected = d.expected.expect("the closest model step");
    assert!(
        expected.step.contains("with token 2"),
        "the model grants the next token: {expected:?}"
    );
}

#[test]
fn bounds_the_mapping_is_not_exact_at_are_refused_with_the_reason() {
    let duplicating = Bounds {
        duplicates: 1,
        ..super::small()
    };
    let err = refused(ProtocolKind::RedisSetNx, duplicating);
    assert!(
        err.contains("redis-set-nx") && err.contains("the value goes back"),
        "{err}"
    );
    let err = refused(ProtocolKind::CacheLease, duplicating);
    assert!(
        err.contains("cache-lease") && err.contains("a second copy of a read"),
        "{err}"
    );
    let crashing = Bounds {
        crashes: 1,
        ..super::small()
    };
    let err = refused(ProtocolKind::FencedCheckThenWrite, crashing);
    assert!(err.contains("checked"), "{err}");
    let jumping = Bounds {
        jumps: 1,
        ..super::small()
    };
    let err = refused(ProtocolKind::SingleDb, jumping);
    assert!(
        err.contains("single-db") && err.contains("revives a transaction"),
        "{err}"
    );
    let err = refused(ProtocolKind::QueueClaim, jumping);
    assert!(
        err.contains("queue-claim") && err.contains("visibility timeout"),
        "{err}"
    );
    // Mapped, the lease coordinator's clock jumping back 11 ms at 10 ms
    // made the lease that ran out at 10 ms live again (step 7), which no
    // model step does.
    let err = refused(ProtocolKind::FencedCas, jumping);
    assert!(
        err.contains("fenced-cas") && err.contains("revives a lease record"),
        "{err}"
    );
}

#[test]
fn each_driven_protocol_maps_to_the_model_the_models_name_for_it_or_says_why() {
    for id in supported() {
        let kind = ProtocolKind::from_id(id).expect("a catalogue id");
        if is_replicated(kind)
            && !matches!(
                kind,
                ProtocolKind::IncrBesideLease | ProtocolKind::ConsensusGeneration
            )
        {
            let why = model_of(kind).expect_err("no mapping for a replicated coordinator");
            assert!(
                why.starts_with(&format!("{id}: no refinement mapping: "))
                    && why.contains("no model step"),
                "{why}"
            );
            continue;
        }
        if kind == ProtocolKind::ZkSequential {
            let of = model_of(kind).expect("zk-sequential's nodes are mapped");
            assert_eq!(simulator_protocol(of.protocol), Some(kind));
            let unfenced = model_for(kind, false).expect("checked against no-fence");
            assert_eq!(unfenced.protocol.id(), "no-fence");
            assert!(unfenced
                .note
                .is_some_and(|n| n.contains("lowest-node rule is not checked")));
            continue;
        }
        if matches!(
            kind,
            ProtocolKind::DynamodbHeartbeat | ProtocolKind::PgAdvisoryLock
        ) {
            let of = model_of(kind).expect("the server's lock is mapped");
            assert_eq!(of.protocol.id(), "no-fence");
            assert!(of.note.is_some_and(|n| n.contains("no model of its own")));
            let fenced = model_for(kind, true).expect_err("refused with the reason");
            assert!(fenced.contains("a lower token"), "{fenced}");
            continue;
        }
        if kind == ProtocolKind::Redlock {
            let of = model_of(kind).expect("Redlock's validity is mapped");
            assert_eq!(of.protocol.id(), "no-fence");
            assert!(of.note.is_some_and(|n| n.contains("validity")));
            continue;
        }
        if matches!(
            kind,
            ProtocolKind::EtcdMutex | ProtocolKind::EtcdMutexNoRecheck
        ) {
            // Its own model, fenced and (`fence = false`) not.
            let of = model_of(kind).expect("etcd's keys are mapped");
            assert_eq!(simulator_protocol(of.protocol), Some(kind));
            assert_eq!(model_for(kind, false), Ok(of));
            continue;
        }
        if is_lock_server(kind) {
            let why = model_of(kind).expect_err("no mapping for a lock server's protocol");
            assert!(
                why.starts_with(&format!("{id}: no ")) && why.contains("decide"),
                "{why}"
            );
            let refused = refine_protocol(kind, Bounds::for_protocol(kind)).err();
            assert_eq!(refused.as_ref(), Some(&why), "{id}");
            continue;
        }
        let of = model_of(kind).expect("every other unreplicated driven protocol has a model");
        assert!(
            simulator_protocol(of.protocol) == Some(kind) || of.note.is_some(),
            "{id}: {of:?}"
        );
    }
    let cbw = model_of(ProtocolKind::CheckBeforeWrite).expect("mapped");
    assert!(cbw.note.is_some_and(|n| n.contains("no model of its own")));
    for kind in [ProtocolKind::ObjectStoreCas, ProtocolKind::CacheLease] {
        let of = model_of(kind).expect("conditional writes are mapped");
        assert_eq!(of.protocol, Protocol::ConditionalWrite, "{}", kind.id());
        assert_eq!(of.spec, "models/conditional-write.toml");
    }
    let queue = model_of(ProtocolKind::QueueClaim).expect("the queue-claim model");
    assert_eq!(queue.protocol, Protocol::QueueClaim);
    assert_eq!(queue.spec, "models/queue-claim.toml");
    let db = model_of(ProtocolKind::SingleDb).expect("the store-lock model");
    assert_eq!(db.protocol, Protocol::StoreLock);
    assert_eq!(db.spec, "models/store-lock.toml");
    assert_eq!(
        simulator_protocol(db.protocol),
        Some(ProtocolKind::SingleDb)
    );
}

#[test]
fn single_db_refines_the_store_lock_model_with_a_lost_message_too() {
    // A lost answer leaves a transaction its worker never uses: it idles
    // out (the model's Expire) or its write is refused.
    let (_, r) = refine_protocol(ProtocolKind::SingleDb, one_loss()).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    let [_, expire, _, deliver, ..] = r.counts.by_action;
    assert!(expire > 0 && deliver > 0, "{:?}", r.counts);
}

#[test]
fn conditional_writes_refine_their_model_with_a_lost_message_too() {
    // A lost read answer leaves a read the store served and the worker
    // never used: the history of served reads keeps it, as the model does.
    for kind in [ProtocolKind::ObjectStoreCas, ProtocolKind::CacheLease] {
        let (_, r) = refine_protocol(kind, one_loss()).expect("mapped");
        assert!(passes(&r), "{}: {:?}", kind.id(), r.divergence);
        let rejections = r.counts.by_action[3];
        assert!(rejections > 0, "{}: {:?}", kind.id(), r.counts);
    }
}

#[test]
fn a_store_that_ignores_if_match_diverges_where_it_applies_a_write_the_model_rejects() {
    let h = super::harness_of(
        ProtocolKind::ObjectStoreCas,
        super::small(),
        store_ignoring_if_match,
    );
    let r = refine(&h).expect("mapped");
    let text = render_refinement("object-store-cas", &h, &r);
    let (steps, expected) = diverges_delivering_a_write(r);
    assert_eq!(steps, 16, "the overtaken write's delivery");
    assert!(
        expected
            .step
            .contains("resource rejects the write of generation")
            && expected
                .step
                .contains("(it read the initial value, now the value of generation"),
        "the model rejects that write: {expected:?}\n{text}"
    );
    assert!(
        expected
            .differences
            .iter()
            .any(|f| f.starts_with("value (generation)")),
        "{expected:?}"
    );
}

#[test]
fn zk_sequential_without_the_fence_refines_no_fence_and_meets_its_stale_write() {
    let kind = ProtocolKind::ZkSequential;
    let options = Options {
        fence: Some(false),
        ..Options::default()
    };
    let bounds = Bounds {
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    };
    let (_, r) = refine_protocol_with(kind, options, bounds).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
    assert_eq!(r.of.protocol.id(), "no-fence");
    let c = r.outcome.counterexample.expect("the search met it");
    assert_eq!(c.finding.kind.name(), "stale_write");
}

#[test]
fn a_zk_client_that_takes_the_lock_without_being_lowest_diverges_at_its_decision() {
    let h = zk_harness(true);
    let r = refine(&h).expect("mapped");
    let text = render_refinement("zk-sequential", &h, &r);
    let d = r
        .divergence
        .expect("the early decision diverges from the model");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Zk(ZkMsg::Children { .. }))),
        "the step is the zk_children answer the client decides on: {last:?}\n{text}"
    );
    assert_eq!(d.path.len(), 7, "both create, B lists and decides: {text}");
    let from = d.from.expect("the model state before");
    let nodes: Vec<u8> = from
        .clients
        .iter()
        .map(|c| c.node)
        .filter(|&n| n != 0)
        .collect();
    assert!(nodes.contains(&1), "A's node 1 lives below B's: {text}");
    let expected = d.expected.expect("the closest model step");
    assert!(
        expected
            .step
            .contains("is granted generation 1 with token 1")
            && expected
                .differences
                .iter()
                .any(|f| f.contains("code [g1/t2]")),
        "the model grants the lowest node only: {expected:?}\n{text}"
    );
}

#[test]
fn the_same_zk_wrapper_without_the_jump_refines_the_model() {
    let r = refine(&zk_harness(false)).expect("mapped");
    assert!(passes(&r), "{:?}", r.divergence);
}

/// Stops at the first state where a decision's token is below an earlier
/// one's (the tokens in issue order, kept).
pub struct LateDecision(pub Option<Vec<u64>>);

impl Observer<Builtin> for LateDecision {
    fn step(
        &mut self,
        _: &State<Builtin>,
        _: Action,
        to: &State<Builtin>,
        _: Option<&Finding>,
    ) -> bool {
        let tokens: Vec<u64> = to.judge.issued().iter().map(|g| g.1).collect();
        if tokens.windows(2).any(|w| w[1] < w[0]) {
            self.0 = Some(tokens);
        }
        self.0.is_none()
    }
}

#[test]
fn etcds_mutex_decides_on_an_older_revision_after_a_newer_one_which_only_its_own_model_allows() {
    // A client acts on its "you are first" whenever it arrives, so it may
    // decide after its key was deleted and the next key's client decided.
    // zk-sequential's Acquire needs the lowest live node (its client's age
    // check rules such a decision out); etcd's own model has the step, and
    // the code refines it (`every_protocol_…`, `etcd_refine.rs`).
    let kind = ProtocolKind::EtcdMutex;
    let bounds = Bounds {
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    };
    let h = Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing).expect("supported"),
        factory: builtin,
        bounds,
    };
    let mut probe = LateDecision(None);
    let (_, path) = explore(&h, &mut probe);
    let tokens = probe.0.expect("a late decision within the default bounds");
    assert!(path.is_some(), "the search stopped there");
    assert!(tokens.len() == 2 && tokens[1] < tokens[0], "{tokens:?}");
    let of = model_of(kind).expect("mapped onto its own model");
    assert_eq!(of.spec, "models/etcd-mutex.toml");
    assert_ne!(of.protocol, Protocol::ZkSequential);
}

#[test]
fn zk_sequential_with_a_duplicated_message_refines_its_model_behind_its_atomic_fence() {
    let kind = ProtocolKind::ZkSequential;
    let bounds = Bounds {
        duplicates: 1,
        pauses: 0,
        max_states: 3_000_000,
        ..Bounds::for_protocol(kind)
    };
    let (_, r) = refine_protocol(kind, bounds).expect("copies are mapped under the fence");
    assert!(passes(&r), "{:?}", r.divergence);
    let unfenced = Options {
        fence: Some(false),
        ..Options::default()
    };
    let err = refine_protocol_with(kind, unfenced, bounds)
        .err()
        .expect("no-fence applies a copy again");
    assert!(err.contains("the value goes back"), "{err}");
}
