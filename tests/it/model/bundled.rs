//! The bundled models meet their expectations, safe state spaces keep their pinned sizes, and
//! each unsafe model's shortest counterexample is the one we expect, step for step.
//!
//! The pinned counts are not magic: they change whenever the model's semantics or its state
//! encoding change, and that is the point — such a change must be noticed and re-pinned on
//! purpose (with the new count in the commit message).

use fencesim::model::{
    check, load, prove, shortest_counterexample, Action, CheckOptions, Event, LockModel, ModelSpec,
    Outcome, Verdict, Violation,
};
use std::path::{Path, PathBuf};

fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

fn spec(name: &str) -> ModelSpec {
    let path = models_dir().join(format!("{name}.toml"));
    match load(&path) {
        Ok(spec) => spec,
        Err(err) => panic!("{err}"),
    }
}

fn options() -> CheckOptions {
    CheckOptions {
        threads: 2,
        progress: None,
        interrupt: None,
    }
}

fn all_specs() -> Vec<ModelSpec> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(models_dir())
        .expect("models/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| load(path).unwrap_or_else(|err| panic!("{err}")))
        .collect()
}

#[test]
fn every_bundled_model_meets_its_expectation() {
    let _heavy = crate::common::heavy();
    let specs = all_specs();
    assert!(specs.len() >= 8, "the catalogue lost a model");
    for spec in specs {
        let report = check(&spec, &options());
        assert!(
            report.meets_expectation(),
            "{}: {:?}",
            spec.name,
            report.mismatches
        );
        assert_eq!(report.verdict, spec.expected.verdict, "{}", spec.name);
    }
}

#[test]
fn safe_models_explore_exactly_their_pinned_number_of_states() {
    let _heavy = crate::common::heavy();
    let pinned = [
        ("conditional-write", 128_268),
        ("consensus-generation", 432_633),
        ("effect-idempotency-key", 55_313),
        ("effect-outbox", 55_313),
        ("etcd-mutex", 12_058),
        ("etcd-mutex-no-recheck", 12_058),
        ("fenced-cas", 11_193),
        ("fenced-cas-fence-reads", 24_135),
        ("queue-claim", 54_613),
        ("store-lock", 35_399),
        ("zk-sequential", 76_813),
    ];
    for (name, unique_states) in pinned {
        let spec = spec(name);
        assert_eq!(spec.expected.verdict, Verdict::Safe, "{name}");
        let proof = prove(&LockModel::new(spec.bounds), 2, None);
        assert!(proof.violated.is_empty(), "{name}: {:?}", proof.violated);
        assert_eq!(proof.stats.unique_states, unique_states, "{name}");
    }
}

#[test]
fn safe_models_reach_every_vacuity_witness() {
    let _heavy = crate::common::heavy();
    for spec in all_specs()
        .into_iter()
        .filter(|s| s.expected.verdict == Verdict::Safe)
    {
        let model = LockModel::new(spec.bounds);
        let proof = prove(&model, 2, None);
        let witnesses = model.witnesses();
        assert!(witnesses.len() >= 2, "{}", spec.name);
        assert_eq!(
            proof.reached.len(),
            witnesses.len(),
            "{}: reached only {:?} of {witnesses:?}",
            spec.name,
            proof.reached
        );
    }
}

/// Steps `actions` from the initial state of `model`, returning the last
/// step's event and the state it leaves.
fn walk(model: &LockModel, actions: &[Action]) -> (Event, fencesim::model::state::State) {
    let (mut events, state) = super::walk(model, actions);
    (events.pop().expect("a step"), state)
}

/// Client 0 is granted, expires, client 1 is granted, reads and writes;
/// then client 0 reads (`late_read`: after client 1's write landed; else
/// before client 1 was granted) and its write arrives last.
fn older_holder_writes_last(late_read: bool) -> Vec<Action> {
    let (c0, c1) = (0, 1);
    let mut path = vec![Acquire {
        client: c0,
        quorum: 0,
    }];
    if !late_read {
        path.push(Read { client: c0 });
    }
    path.extend([
        Expire,
        Acquire {
            client: c1,
            quorum: 0,
        },
        Read { client: c1 },
        SendWrite { client: c1 },
        DeliverWrite { gen: 2 },
    ]);
    if late_read {
        path.push(Read { client: c0 });
    }
    path.extend([SendWrite { client: c0 }, DeliverWrite { gen: 1 }]);
    path
}

#[test]
fn a_conditional_write_whose_read_was_overtaken_is_rejected() {
    let mut bounds = spec("conditional-write").bounds;
    bounds.symmetry = false;
    let (event, state) = walk(&LockModel::new(bounds), &older_holder_writes_last(false));
    match event {
        Event::WriteDelivered {
            generation: 1,
            outcome:
                Outcome::ConditionFailed {
                    read: 0,
                    current: 2,
                },
            ..
        } => {}
        other => panic!("unexpected last event {other:?}"),
    }
    assert_eq!((state.value, state.violations), (2, 0));
}

#[test]
fn an_older_holders_conditional_write_on_the_value_it_read_is_applied_and_not_stale() {
    // The history checker's definition: its condition held, so it
    // overwrote exactly what it saw. The same path without the condition
    // (no-fence, reads) is a stale write.
    let mut bounds = spec("conditional-write").bounds;
    bounds.symmetry = false;
    let path = older_holder_writes_last(true);
    let (event, state) = walk(&LockModel::new(bounds), &path);
    assert!(
        matches!(
            event,
            Event::WriteDelivered {
                generation: 1,
                outcome: Outcome::ConditionHeld { read: 2 },
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!((state.value, state.violations), (1, 0));
    bounds.protocol = fencesim::model::Protocol::NoFence;
    let (_, unconditional) = walk(&LockModel::new(bounds), &path);
    assert_eq!(unconditional.violations, Violation::StaleWrite.bit());
}

#[test]
fn the_conditional_write_model_without_its_condition_loses_updates_and_writes_stale() {
    assert_its_no_fence_twin_writes_stale_and_loses_updates("conditional-write");
}

/// The bundled model `name` at the same bounds as `no-fence` (its check
/// dropped) finds stale_write and lost_update.
fn assert_its_no_fence_twin_writes_stale_and_loses_updates(name: &str) {
    let _heavy = crate::common::heavy();
    let mut twin = spec(name);
    twin.bounds.protocol = fencesim::model::Protocol::NoFence;
    let report = check(&twin, &options());
    assert_eq!(report.verdict, Verdict::Unsafe, "{name}");
    assert_eq!(
        report.violations(),
        vec![Violation::StaleWrite, Violation::LostUpdate]
    );
}

#[test]
fn a_store_lock_write_whose_grant_expired_is_refused_and_a_live_one_commits_and_frees_the_lease() {
    let mut bounds = spec("store-lock").bounds;
    bounds.symmetry = false;
    let model = LockModel::new(bounds);
    let granted = [
        Acquire {
            client: 0,
            quorum: 0,
        },
        Read { client: 0 },
        SendWrite { client: 0 },
    ];
    let mut expired = granted.to_vec();
    expired.extend([Expire, DeliverWrite { gen: 1 }]);
    let (event, state) = walk(&model, &expired);
    assert!(
        matches!(
            event,
            Event::WriteDelivered {
                generation: 1,
                outcome: Outcome::GrantEnded,
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!((state.value, state.accepted_gen_max), (0, 0));
    let mut live = granted.to_vec();
    live.push(DeliverWrite { gen: 1 });
    let (event, state) = walk(&model, &live);
    assert!(
        matches!(
            event,
            Event::WriteDelivered {
                outcome: Outcome::Committed,
                ..
            }
        ),
        "{event:?}"
    );
    assert_eq!(state.value, 1);
    assert_eq!(
        state.holder,
        fencesim::model::state::NO_HOLDER,
        "COMMIT frees the lock"
    );
    // Without the store's check (no-fence) the expired grant's write lands.
    bounds.protocol = fencesim::model::Protocol::NoFence;
    let (_, unchecked) = walk(&LockModel::new(bounds), &expired);
    assert_eq!(unchecked.value, 1);
}

#[test]
fn the_store_lock_model_without_the_stores_check_loses_updates_and_writes_stale() {
    assert_its_no_fence_twin_writes_stale_and_loses_updates("store-lock");
}

fn shortest(name: &str, violation: Violation) -> Vec<Action> {
    let model = LockModel::new(spec(name).bounds);
    let search = shortest_counterexample(&model, violation, None);
    match search.counterexample {
        Some(c) => c.actions(),
        None => panic!("{name}: no {violation} found"),
    }
}

use Action::*;

#[test]
fn without_a_fence_a_delayed_write_lands_after_the_newer_holders_write() {
    let _heavy = crate::common::heavy();
    let path = shortest("no-fence", Violation::StaleWrite);
    assert_eq!(
        path,
        vec![
            Acquire {
                client: 0,
                quorum: 0
            },
            SendWrite { client: 0 },
            Expire,
            Acquire {
                client: 0,
                quorum: 0
            },
            SendWrite { client: 0 },
            DeliverWrite { gen: 2 },
            DeliverWrite { gen: 1 },
        ]
    );
}

#[test]
fn a_failover_that_loses_an_incr_hands_out_a_token_again() {
    let _heavy = crate::common::heavy();
    let path = shortest("incr-beside-lease", Violation::TokenOrder);
    assert_eq!(
        path,
        vec![
            Acquire {
                client: 0,
                quorum: 0
            },
            Failover {
                uncommitted: 0,
                quorum: 0
            },
            Acquire {
                client: 1,
                quorum: 0
            },
        ]
    );
}

#[test]
fn a_repeated_incr_token_lets_the_older_generations_write_through_the_fence() {
    let _heavy = crate::common::heavy();
    let path = shortest("incr-beside-lease", Violation::StaleWrite);
    assert_eq!(path.len(), 7);
    assert_eq!(
        path[2],
        Failover {
            uncommitted: 0,
            quorum: 0
        }
    );
    assert_eq!(path[6], DeliverWrite { gen: 1 });
}

#[test]
fn check_then_write_lets_an_older_checked_write_commit_after_a_newer_one() {
    let _heavy = crate::common::heavy();
    let path = shortest("fenced-check-then-write", Violation::StaleWrite);
    assert_eq!(path.len(), 9);
    assert_eq!(
        path[5..],
        [
            DeliverWrite { gen: 1 },
            DeliverWrite { gen: 2 },
            CommitWrite { gen: 2 },
            CommitWrite { gen: 1 }
        ]
    );
}

#[test]
fn unfenced_reads_let_a_newer_holder_overwrite_an_update_it_never_saw() {
    let _heavy = crate::common::heavy();
    let model = LockModel::new(spec("fenced-cas-unfenced-reads").bounds);
    let search = shortest_counterexample(&model, Violation::LostUpdate, None);
    let counterexample = search.counterexample.expect("lost update");
    assert_eq!(counterexample.len(), 9);
    // The resource's fence did its job: nothing was stale, yet generation 1's update is lost.
    let last = counterexample.steps.last().expect("non-empty");
    assert_eq!(last.violations, vec![Violation::LostUpdate]);
    match last.event {
        Event::WriteDelivered {
            generation: 2,
            token: 2,
            fence_before: 1,
            outcome: Outcome::Accepted,
            ..
        } => {}
        other => panic!("unexpected last event {other:?}"),
    }
}

#[test]
fn fenced_reads_close_the_lost_update_window_with_more_clients_too() {
    let _heavy = crate::common::heavy();
    let mut bounds = spec("fenced-cas-fence-reads").bounds;
    bounds.clients = 4;
    bounds.grants_max = 5;
    bounds.symmetry = true;
    let proof = prove(&LockModel::new(bounds), 2, None);
    assert!(proof.violated.is_empty(), "{:?}", proof.violated);
}

#[test]
fn counterexamples_are_as_short_as_their_search_depth_and_replay_their_violation() {
    let _heavy = crate::common::heavy();
    for spec in all_specs()
        .into_iter()
        .filter(|s| s.expected.verdict == Verdict::Unsafe)
    {
        let report = check(&spec, &options());
        for search in &report.searches {
            let Some(c) = &search.counterexample else {
                continue;
            };
            assert_eq!(
                c.len(),
                search.stats.max_depth,
                "{}: {}",
                spec.name,
                c.violation
            );
            assert_eq!(
                c.steps.last().map(|s| s.violations.contains(&c.violation)),
                Some(true)
            );
            assert!(c.steps.iter().all(|s| !s.description.is_empty()));
        }
    }
}

#[test]
fn symmetry_keeps_every_verdict_and_counterexample_length_with_fewer_states() {
    let _heavy = crate::common::heavy();
    for spec in all_specs() {
        let mut with = spec.clone();
        with.bounds.symmetry = true;
        let mut without = spec.clone();
        without.bounds.symmetry = false;
        let (a, b) = (check(&with, &options()), check(&without, &options()));
        assert_eq!(a.verdict, b.verdict, "{}", spec.name);
        assert_eq!(a.violations(), b.violations(), "{}", spec.name);
        let lengths = |r: &fencesim::model::CheckReport| {
            r.counterexamples().map(|c| c.len()).collect::<Vec<_>>()
        };
        assert_eq!(lengths(&a), lengths(&b), "{}", spec.name);
        if let (Some(pa), Some(pb)) = (&a.proof, &b.proof) {
            assert!(
                pa.stats.unique_states < pb.stats.unique_states,
                "{}: {} vs {}",
                spec.name,
                pa.stats.unique_states,
                pb.stats.unique_states
            );
        }
    }
}

#[test]
fn a_symmetric_counterexample_uses_stable_client_ids_that_replay_without_symmetry() {
    let _heavy = crate::common::heavy();
    let mut spec = spec("fenced-cas-unfenced-reads");
    spec.bounds.clients = 3;
    spec.bounds.symmetry = true;
    let symmetric = LockModel::new(spec.bounds);
    let c = shortest_counterexample(&symmetric, Violation::LostUpdate, None)
        .counterexample
        .expect("lost update");
    let mut plain_bounds = spec.bounds;
    plain_bounds.symmetry = false;
    let plain = LockModel::new(plain_bounds);
    let mut state = fencesim::model::state::State::initial();
    for step in &c.steps {
        let (next, event) = plain
            .step(&state, step.action)
            .expect("enabled with real client ids");
        // Same step, same values; only write events lack the client until replay fills it.
        match (event, step.event) {
            (
                Event::WriteDelivered { generation: g1, .. },
                Event::WriteDelivered { generation: g2, .. },
            ) => assert_eq!(g1, g2),
            (e1, e2) => assert_eq!(e1, e2),
        }
        state = next;
    }
    assert_ne!(state.violations & Violation::LostUpdate.bit(), 0);
}

#[test]
fn an_unsafe_protocol_expected_safe_is_reported_as_a_mismatch() {
    let _heavy = crate::common::heavy();
    let mut spec = spec("fenced-cas-unfenced-reads");
    spec.expected.verdict = Verdict::Safe;
    spec.expected.violations.clear();
    let report = check(&spec, &options());
    assert_eq!(report.verdict, Verdict::Unsafe);
    assert!(report
        .proof
        .as_ref()
        .is_some_and(|p| p.violated == vec![Violation::LostUpdate]));
    assert!(!report.meets_expectation());
}

#[test]
fn a_model_too_small_for_a_stale_attempt_is_reported_vacuous() {
    let _heavy = crate::common::heavy();
    let mut spec = spec("fenced-cas");
    spec.bounds.clients = 1;
    spec.bounds.grants_max = 1;
    let report = check(&spec, &options());
    assert_eq!(report.verdict, Verdict::Safe);
    assert_eq!(report.unreached, vec!["stale_attempt_reaches_resource"]);
    assert!(!report.meets_expectation());
}
