//! The etcd Mutex models (`models/etcd-mutex*.toml`): keys whose create
//! revisions come from the store's global revision (a deletion takes one
//! too), a client answered "you are first" that acts on the answer
//! whenever it arrives — after its key was deleted and a newer key's
//! client decided. Behind the fence both Mutexes are proved safe (a late
//! decision's write carries the older revision and is rejected); without
//! it the late decision's write lands after the newer holder's: the
//! unfenced twin writes stale, with the re-check and without it.

use super::bundled_spec as spec;
use super::walk;
use fencesim::model::{
    prove, shortest_counterexample, Action, Event, LockModel, Outcome, Protocol, Violation,
};
use std::path::Path;
use Action::*;

fn model(protocol: Protocol, fence: bool) -> LockModel {
    let mut bounds = spec("etcd-mutex").bounds;
    bounds.protocol = protocol;
    bounds.fence = fence;
    bounds.symmetry = false;
    LockModel::new(bounds)
}

/// A puts key 1 and B key 2; A is answered "first"; A's key is deleted
/// (its lease expired while the answer was in flight: revision 3); B is
/// answered and decides (generation 1, token 2); then A acts on its old
/// answer (generation 2, token 1). B's write lands, then A's.
fn late_decision_writes_last() -> Vec<Action> {
    let (a, b) = (0, 1);
    vec![
        CreateNode { client: a },
        CreateNode { client: b },
        Answer { client: a },
        DeleteNode { client: a },
        Answer { client: b },
        Acquire {
            client: b,
            quorum: 0,
        },
        Acquire {
            client: a,
            quorum: 0,
        },
        SendWrite { client: b },
        DeliverWrite { gen: 1 },
        SendWrite { client: a },
        DeliverWrite { gen: 2 },
    ]
}

#[test]
fn a_late_decision_on_an_older_revision_is_rejected_behind_the_fence_and_stale_without_it() {
    for protocol in [Protocol::EtcdMutex, Protocol::EtcdMutexNoRecheck] {
        let (events, fenced) = walk(&model(protocol, true), &late_decision_writes_last());
        assert!(
            matches!(
                events[6],
                Event::Decided {
                    generation: 2,
                    token: 1,
                    newer: 2,
                    ..
                }
            ),
            "{:?}",
            events[6]
        );
        assert!(
            matches!(
                events[10],
                Event::WriteDelivered {
                    outcome: Outcome::Rejected,
                    fence_before: 2,
                    ..
                }
            ),
            "{:?}",
            events[10]
        );
        assert_eq!(fenced.violations, 0);
        let (_, unfenced) = walk(&model(protocol, false), &late_decision_writes_last());
        assert_eq!(unfenced.violations, Violation::StaleWrite.bit());
    }
}

#[test]
fn every_put_and_every_deletion_takes_the_next_revision() {
    let m = model(Protocol::EtcdMutex, true);
    let path = [
        CreateNode { client: 0 },
        DeleteNode { client: 0 },
        Abandon { client: 0 },
        CreateNode { client: 1 },
    ];
    let (events, s) = walk(&m, &path);
    assert!(matches!(events[1], Event::KeyDeleted { rev: 1, at: 2, .. }));
    assert!(matches!(events[3], Event::KeyCreated { rev: 3, .. }));
    assert_eq!(
        (s.counter, s.clients[1].node, s.clients[1].token),
        (3, 3, 3)
    );
    // A slot whose key lives, or whose acquisition waits, puts no second key.
    assert!(m.step(&s, CreateNode { client: 1 }).is_none());
}

#[test]
fn the_recheck_refuses_an_answer_to_a_client_whose_key_is_gone_and_3_4_3_gives_it() {
    // A's key 1 expires while A waits behind nothing: the fixed Mutex's
    // re-check finds it gone (ErrSessionExpired); 3.4.3's waitDeletes
    // returns success (Jepsen's etcd 3.4.3 bug).
    let path = [CreateNode { client: 0 }, DeleteNode { client: 0 }];
    let fixed = model(Protocol::EtcdMutex, true);
    let (_, s) = walk(&fixed, &path);
    assert!(fixed.step(&s, Answer { client: 0 }).is_none());
    let old = model(Protocol::EtcdMutexNoRecheck, true);
    let (_, s) = walk(&old, &path);
    let (_, event) = old.step(&s, Answer { client: 0 }).expect("answered");
    assert!(matches!(event, Event::Answered { live: false, .. }));
    // Neither answers a client with a live key below its own.
    for m in [fixed, old] {
        let (_, s) = walk(&m, &[CreateNode { client: 0 }, CreateNode { client: 1 }]);
        assert!(m.step(&s, Answer { client: 1 }).is_none());
        assert!(m.step(&s, Answer { client: 0 }).is_some());
    }
}

#[test]
fn behind_the_fence_both_mutexes_are_safe_and_without_it_both_write_stale() {
    let _heavy = crate::common::heavy();
    for name in ["etcd-mutex", "etcd-mutex-no-recheck"] {
        let model = LockModel::new(spec(name).bounds);
        let proof = prove(&model, 2, None);
        assert!(proof.violated.is_empty(), "{name}: {:?}", proof.violated);
        assert_eq!(proof.reached.len(), model.witnesses().len(), "{name}");
        assert!(proof.reached.contains(&"decision_below_a_newer_token"));
        let mut bounds = spec(name).bounds;
        bounds.fence = false;
        let twin = LockModel::new(bounds);
        let search = shortest_counterexample(&twin, Violation::StaleWrite, None);
        let c = search
            .counterexample
            .expect("the unfenced twin writes stale");
        // B is answered only once A's key is gone: a deletion is on every path.
        assert!(
            c.steps
                .iter()
                .any(|s| matches!(s.event, Event::KeyDeleted { .. })),
            "{name}: {c:?}"
        );
    }
    assert!(!spec("etcd-mutex-unfenced").bounds.fence);
}

#[test]
fn at_this_abstraction_the_recheck_changes_no_reachable_state() {
    // 3.4.3's answer with its own key gone is, state for state, the fixed
    // Mutex's answer acted on after its key was deleted: the re-check
    // narrows when the server answers, not what a client may do with an
    // answer it holds. (Mutual exclusion, what Jepsen found broken, is no
    // model property; stale_write is the fence's.)
    let _heavy = crate::common::heavy();
    let count = |name: &str| {
        let proof = prove(&LockModel::new(spec(name).bounds), 2, None);
        assert!(proof.violated.is_empty(), "{name}");
        proof.stats.unique_states
    };
    assert_eq!(count("etcd-mutex"), count("etcd-mutex-no-recheck"));
    // Not one model twice: the fixed Mutex refuses the answer 3.4.3 gives.
    let path = [CreateNode { client: 0 }, DeleteNode { client: 0 }];
    let (fixed, old) = (
        model(Protocol::EtcdMutex, true),
        model(Protocol::EtcdMutexNoRecheck, true),
    );
    assert!(fixed
        .step(&walk(&fixed, &path).1, Answer { client: 0 })
        .is_none());
    assert!(old
        .step(&walk(&old, &path).1, Answer { client: 0 })
        .is_some());
}

#[test]
fn the_fence_knob_is_the_etcd_models_only_and_etcd_has_no_reads() {
    let text = |protocol: &str, extra: &str| {
        format!("schema_version = 1\nprotocol = \"{protocol}\"\nclients = 2\ngrants_max = 2\n{extra}\n[expect]\nverdict = \"safe\"\n")
    };
    let file = Path::new("m.toml");
    let err =
        fencesim::model::parse(file, "m", &text("fenced-cas", "fence = false\n")).unwrap_err();
    assert_eq!(err.line, Some(5));
    assert!(
        err.message.contains("knob of the etcd models only"),
        "{err}"
    );
    let err = fencesim::model::parse(file, "m", &text("etcd-mutex", "reads = true\n")).unwrap_err();
    assert!(err.message.contains("reads are not modelled"), "{err}");
    let spec = fencesim::model::parse(file, "m", &text("etcd-mutex-no-recheck", "fence = false\n"))
        .expect("valid");
    assert!(!spec.bounds.fences() && spec.bounds.protocol.issues_tokens());
}
