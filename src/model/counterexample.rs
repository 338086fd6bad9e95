//! Counterexamples: the path a search found, replayed into typed, self-describing steps.
//!
//! The search works on canonical states, where client slots are re-sorted after every step
//! when symmetry is on, so a raw action path's client indices are not stable client ids.
//! `replay` re-runs the path without canonicalising while tracking the slot permutation, and
//! records for every step the values the protocol produced (generation, token, fence, outcome).
//! That is what a timeline shows (`report::model_check::counterexample`) and what a scripted
//! simulator scenario needs: which client acts, which grant it holds, which write the
//! resource processes and what it decides. A step's `description` is the model's own label
//! for it (stateright's `Model::format_step` asks the model for the same line): data the
//! renderers and the scripted scenario's comments quote, not a rendering of its own.

use super::action::{describe, Action, Event, UNKNOWN_CLIENT};
use super::lock_model::LockModel;
use super::spec::Violation;
use super::state::{State, CLIENTS_CAP, GRANTS_CAP};

/// One step of a counterexample. Client ids are stable across the whole path (0..clients).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub action: Action,
    pub event: Event,
    /// Violations this step caused (empty for all but the last step of the search's target,
    /// though an earlier step may cause a different violation, e.g. token_order before
    /// stale_write).
    pub violations: Vec<Violation>,
    pub description: String,
}

/// A shortest path from the initial state to a first violation of `violation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    pub violation: Violation,
    pub steps: Vec<Step>,
}

impl Counterexample {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn actions(&self) -> Vec<Action> {
        self.steps.iter().map(|s| s.action).collect()
    }
}

/// Replays a path found on canonical states. Errors if the path does not apply, which would
/// mean the model changed between the search and the replay.
pub fn replay(
    model: &LockModel,
    violation: Violation,
    actions: &[Action],
) -> Result<Counterexample, String> {
    let clients = model.bounds.clients as usize;
    let mut state = State::initial();
    let mut real_of_slot: [u8; CLIENTS_CAP] = [0, 1, 2, 3, 4];
    let mut client_of_gen = [UNKNOWN_CLIENT; GRANTS_CAP + 1];
    let mut steps = Vec::with_capacity(actions.len());
    for (i, &action) in actions.iter().enumerate() {
        let (mut next, event) = model
            .step(&state, action)
            .ok_or_else(|| format!("step {} ({action:?}) is not enabled on replay", i + 1))?;
        let real = |slot: u8| real_of_slot[slot as usize];
        let action = relabel_action(action, real);
        if let Event::Granted {
            client, generation, ..
        }
        | Event::Decided {
            client, generation, ..
        } = event
        {
            client_of_gen[generation as usize] = real(client);
        }
        let event = relabel_event(event, real, &client_of_gen);
        let new_bits = next.violations & !state.violations;
        steps.push(Step {
            action,
            event,
            violations: Violation::ALL
                .into_iter()
                .filter(|v| new_bits & v.bit() != 0)
                .collect(),
            description: describe(&event, new_bits),
        });
        if model.bounds.symmetry {
            let perm = next.canonicalize(clients);
            let old = real_of_slot;
            for slot in 0..clients {
                real_of_slot[slot] = old[perm[slot] as usize];
            }
        }
        state = next;
    }
    if state.violations & violation.bit() == 0 {
        return Err(format!(
            "path of {} steps does not end in {violation}",
            actions.len()
        ));
    }
    Ok(Counterexample { violation, steps })
}

/// `action` with its client slot named by the stable client id (`real`).
fn relabel_action(action: Action, real: impl Fn(u8) -> u8) -> Action {
    match action {
        Action::Acquire { client, quorum } => Action::Acquire {
            client: real(client),
            quorum,
        },
        Action::CreateNode { client } => Action::CreateNode {
            client: real(client),
        },
        Action::DeleteNode { client } => Action::DeleteNode {
            client: real(client),
        },
        Action::Read { client } => Action::Read {
            client: real(client),
        },
        Action::SendWrite { client } => Action::SendWrite {
            client: real(client),
        },
        Action::StepDown { client } => Action::StepDown {
            client: real(client),
        },
        Action::Answer { client } => Action::Answer {
            client: real(client),
        },
        Action::DropAnswer { client } => Action::DropAnswer {
            client: real(client),
        },
        Action::Abandon { client } => Action::Abandon {
            client: real(client),
        },
        Action::Propose { client } => Action::Propose {
            client: real(client),
        },
        Action::Ack { replica, client } => Action::Ack {
            replica,
            client: real(client),
        },
        other => other,
    }
}

/// `event` with stable client ids: its client slot mapped by `real`, a
/// delivery's or commit's client found by its generation (`client_of_gen`).
fn relabel_event(event: Event, real: impl Fn(u8) -> u8, client_of_gen: &[u8]) -> Event {
    if let Some(etcd) = relabel_etcd_event(event, &real) {
        return etcd;
    }
    match event {
        Event::Granted {
            client,
            generation,
            token,
            quorum,
        } => Event::Granted {
            client: real(client),
            generation,
            token,
            quorum,
        },
        Event::NodeCreated { client, seq } => Event::NodeCreated {
            client: real(client),
            seq,
        },
        Event::JobDeleted { client } => Event::JobDeleted {
            client: real(client),
        },
        Event::SteppedDown { client } => Event::SteppedDown {
            client: real(client),
        },
        Event::LeaseExpired { client } => Event::LeaseExpired {
            client: real(client),
        },
        Event::NodeDeleted { client, seq } => Event::NodeDeleted {
            client: real(client),
            seq,
        },
        Event::ValueRead {
            client,
            generation,
            token,
            value,
            rejected,
        } => Event::ValueRead {
            client: real(client),
            generation,
            token,
            value,
            rejected,
        },
        Event::WriteSent {
            client,
            generation,
            token,
            read_value,
        } => Event::WriteSent {
            client: real(client),
            generation,
            token,
            read_value,
        },
        Event::WriteDelivered {
            generation,
            token,
            fence_before,
            outcome,
            ..
        } => Event::WriteDelivered {
            client: client_of_gen[generation as usize],
            generation,
            token,
            fence_before,
            outcome,
        },
        Event::WriteCommitted {
            generation,
            token,
            fence_before,
            ..
        } => Event::WriteCommitted {
            client: client_of_gen[generation as usize],
            generation,
            token,
            fence_before,
        },
        other => other,
    }
}

/// etcd's events with stable client ids (None: not one of them).
fn relabel_etcd_event(event: Event, real: &impl Fn(u8) -> u8) -> Option<Event> {
    Some(match event {
        Event::KeyCreated { client, rev } => Event::KeyCreated {
            client: real(client),
            rev,
        },
        Event::KeyDeleted { client, rev, at } => Event::KeyDeleted {
            client: real(client),
            rev,
            at,
        },
        Event::Answered { client, rev, live } => Event::Answered {
            client: real(client),
            rev,
            live,
        },
        Event::AnswerLost { client, rev } => Event::AnswerLost {
            client: real(client),
            rev,
        },
        Event::Abandoned { client, rev } => Event::Abandoned {
            client: real(client),
            rev,
        },
        Event::Decided {
            client,
            generation,
            token,
            newer,
        } => Event::Decided {
            client: real(client),
            generation,
            token,
            newer,
        },
        _ => return None,
    })
}
