//! The consensus-generation model (`models/consensus-generation.toml`):
//! proposals are states of their own. A proposal given up after it raised
//! a voter makes the next grant's token skip a number; a new leader learns
//! the highest generation answer by answer, and an answer may be older
//! than the voter's generation by then. Its twin that grants on the
//! leader's own acceptance (no majority) reissues a token after a
//! failover, so the safe verdict is the majority's.

use super::walk;
use fencesim::model::{
    prove, shortest_counterexample, Action, Event, LockModel, ModelSpec, Violation,
};
use Action::*;

fn spec() -> ModelSpec {
    super::bundled_spec("consensus-generation")
}

fn model() -> LockModel {
    super::unsymmetric_model("consensus-generation")
}

/// The first leader hears voter 1's answer (0) and serves.
const READY: [Action; 2] = [Report { replica: 1 }, Heard { replica: 1, gen: 0 }];

#[test]
fn a_proposal_given_up_after_it_raised_a_voter_makes_the_next_token_skip_a_number() {
    let mut path = READY.to_vec();
    path.extend([
        Propose { client: 0 },
        Accept {
            replica: 1,
            gen: 1,
            last: true,
        },
        GiveUp,
        Propose { client: 0 },
    ]);
    let model = model();
    // Nothing granted without an acceptance heard: voter 2 holds nothing.
    let (_, open) = walk(&model, &path);
    assert!(model
        .step(
            &open,
            Ack {
                replica: 2,
                client: 0
            }
        )
        .is_none());
    path.extend([
        Accept {
            replica: 1,
            gen: 2,
            last: true,
        },
        Ack {
            replica: 1,
            client: 0,
        },
    ]);
    let (events, state) = walk(&model, &path);
    assert!(
        matches!(
            events.last(),
            Some(Event::Granted {
                generation: 1,
                token: 2,
                ..
            })
        ),
        "{events:?}"
    );
    assert_eq!(state.replicas[..3], [2, 2, 0]);
    assert_eq!(state.violations, 0);
}

#[test]
fn a_new_leader_may_hear_an_answer_older_than_the_voters_generation_and_still_reads_a_majority() {
    // Generation 1 committed on voters 0 and 1; voter 2 answers the new
    // leader (voter 1) with 0 before the old leader's proposal reaches it.
    let mut path = READY.to_vec();
    path.extend([
        Propose { client: 0 },
        Accept {
            replica: 1,
            gen: 1,
            last: false,
        },
        Ack {
            replica: 1,
            client: 0,
        },
        Failover {
            uncommitted: 1,
            quorum: 0,
        },
        Report { replica: 2 },
        Accept {
            replica: 2,
            gen: 1,
            last: true,
        },
        Heard { replica: 2, gen: 0 },
    ]);
    let (events, state) = walk(&model(), &path);
    assert!(
        matches!(
            events.last(),
            Some(Event::Heard {
                ready: true,
                counter: 1,
                ..
            })
        ),
        "the leader's own generation is the committed one: {events:?}"
    );
    assert!(state.ready && state.counter == 1);
}

#[test]
fn the_twin_granting_on_the_leaders_own_acceptance_reissues_a_token_after_a_failover() {
    let _heavy = crate::common::heavy();
    let twin = LockModel::new(spec().bounds).with_early_commit();
    let search = shortest_counterexample(&twin, Violation::TokenOrder, None);
    let c = search.counterexample.expect("the twin reissues a token");
    let actions = c.actions();
    assert!(
        actions.iter().any(|a| matches!(a, Failover { .. })),
        "{actions:?}"
    );
    // And the majority's model, at the same bounds, is proved.
    let proof = prove(&LockModel::new(spec().bounds), 2, None);
    assert!(proof.violated.is_empty(), "{:?}", proof.violated);
}
