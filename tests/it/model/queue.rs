//! The queue-claim model (`models/queue-claim.toml`): a redelivered job's
//! second result is refused whether or not its claim is live, a result
//! for a deleted job too, and the job is deleted only by a live claim once
//! it has a result. Its twin keeping every result for the head job (the
//! last one overwriting, `ON CONFLICT DO UPDATE`) writes stale and loses
//! updates, so the safe verdict is the "first result per job" rule's.

use super::walk;
use fencesim::model::state::NO_HOLDER;
use fencesim::model::{
    shortest_counterexample, Action, Event, LockModel, ModelSpec, Outcome, Violation,
};
use Action::*;

fn spec() -> ModelSpec {
    super::bundled_spec("queue-claim")
}

fn model() -> LockModel {
    super::unsymmetric_model("queue-claim")
}

/// Client 0 claims the job and reads; its claim runs out; the job is
/// redelivered to client 1, which reads, and whose result is kept; then
/// client 0's result arrives.
fn redelivered_job_done_twice() -> Vec<Action> {
    vec![
        Acquire {
            client: 0,
            quorum: 0,
        },
        Read { client: 0 },
        Expire,
        Acquire {
            client: 1,
            quorum: 0,
        },
        Read { client: 1 },
        SendWrite { client: 1 },
        DeliverWrite { gen: 2 },
        SendWrite { client: 0 },
        DeliverWrite { gen: 1 },
    ]
}

fn outcome(event: &Event) -> Option<Outcome> {
    match *event {
        Event::WriteDelivered { outcome, .. } => Some(outcome),
        _ => None,
    }
}

#[test]
fn a_redelivered_jobs_second_result_is_refused_and_a_live_claim_then_deletes_the_job() {
    let model = model();
    let (events, state) = walk(&model, &redelivered_job_done_twice());
    assert_eq!(outcome(&events[6]), Some(Outcome::FirstResult));
    assert_eq!(outcome(&events[8]), Some(Outcome::JobDone));
    assert_eq!((state.value, state.violations), (2, 0), "stored once");
    assert!(state.job_done && state.job_from == 0, "{state:?}");
    // Client 1's claim is still live: it deletes the job, and the next
    // delivery is of the next job.
    let (deleted, event) = model.step(&state, DeleteJob).expect("enabled");
    assert!(matches!(event, Event::JobDeleted { .. }), "{event:?}");
    assert_eq!(
        (deleted.holder, deleted.job_from, deleted.job_done),
        (NO_HOLDER, 2, false)
    );
    // An expired claim deletes nothing, and a job without a result is not
    // deleted: DeleteJob is not enabled.
    let mut expired = redelivered_job_done_twice();
    expired.push(Expire);
    let (_, after_expiry) = walk(&model, &expired);
    assert!(model.step(&after_expiry, DeleteJob).is_none());
    let (_, claimed) = walk(&model, &expired[..2]);
    assert!(model.step(&claimed, DeleteJob).is_none());
    assert!(model
        .witnesses()
        .contains(&"second_result_refused_at_queue"));
}

#[test]
fn a_result_whose_claim_ran_out_is_still_kept_if_it_is_the_first_for_the_job() {
    let path = [
        Acquire {
            client: 0,
            quorum: 0,
        },
        Read { client: 0 },
        SendWrite { client: 0 },
        Expire,
        DeliverWrite { gen: 1 },
    ];
    let (events, state) = walk(&model(), &path);
    assert_eq!(outcome(&events[4]), Some(Outcome::FirstResult));
    assert_eq!((state.value, state.holder), (1, NO_HOLDER));
}

#[test]
fn the_queue_keeping_every_result_for_the_head_job_writes_stale_and_loses_updates() {
    let twin = model().with_results_overwritten();
    let (events, state) = walk(&twin, &redelivered_job_done_twice());
    assert_eq!(outcome(&events[8]), Some(Outcome::FirstResult));
    assert_eq!(
        state.violations,
        Violation::StaleWrite.bit() | Violation::LostUpdate.bit()
    );
    // The bundled bounds, symmetry as in the spec: both found, shortest
    // paths of 9 steps; the model itself finds neither.
    let bounds = spec().bounds;
    for violation in [Violation::StaleWrite, Violation::LostUpdate] {
        let twin = LockModel::new(bounds).with_results_overwritten();
        let search = shortest_counterexample(&twin, violation, None);
        let c = search
            .counterexample
            .unwrap_or_else(|| panic!("the twin has no {violation}"));
        assert_eq!(c.steps.len(), 9, "{violation}: {:?}", c.actions());
        let safe = shortest_counterexample(&LockModel::new(bounds), violation, None);
        assert!(safe.counterexample.is_none(), "{violation}");
    }
}
