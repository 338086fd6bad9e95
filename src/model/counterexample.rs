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

use super::lock_model::{Action, Event, LockModel, Outcome, UNKNOWN_CLIENT};
use super::spec::Violation;
use super::state::{State, CLIENTS_CAP, GRANTS_CAP};
use std::fmt::Write as _;

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
        let action = match action {
            Action::Acquire { client, quorum } => Action::Acquire {
                client: real(client),
                quorum,
            },
            Action::CreateNode { client } => Action::CreateNode {
                client: real(client),
            },
            Action::Read { client } => Action::Read {
                client: real(client),
            },
            Action::SendWrite { client } => Action::SendWrite {
                client: real(client),
            },
            other => other,
        };
        let event = match event {
            Event::Granted {
                client,
                generation,
                token,
                quorum,
            } => {
                client_of_gen[generation as usize] = real(client);
                Event::Granted {
                    client: real(client),
                    generation,
                    token,
                    quorum,
                }
            }
            Event::NodeCreated { client, seq } => Event::NodeCreated {
                client: real(client),
                seq,
            },
            Event::LeaseExpired { client } => Event::LeaseExpired {
                client: real(client),
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
        };
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

fn value_name(value: u8) -> String {
    if value == 0 {
        "the initial value".to_string()
    } else {
        format!("the value of generation {value}")
    }
}

/// Token 0 is never issued by a token source; it marks a bare lease's grant.
fn token_name(token: u8) -> String {
    if token == 0 {
        "no token".to_string()
    } else {
        format!("token {token}")
    }
}

fn voters(mask: u8) -> String {
    let names: Vec<String> = (0..8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| format!("r{i}"))
        .collect();
    format!("{{{}}}", names.join(","))
}

/// One line for a step; `new_violations` marks the step that broke a property.
pub fn describe(event: &Event, new_violations: u8) -> String {
    let mut line = match *event {
        Event::Granted { client, generation, token: 0, .. } => {
            format!("client {client} acquires the lease (generation {generation}; no ordered token)")
        }
        Event::Granted { client, generation, token, quorum: 0 } => {
            format!("client {client} is granted generation {generation} with token {token}")
        }
        Event::Granted { client, generation, token, quorum } => format!(
            "client {client} is granted generation {generation} with token {token} (committed on voters {})",
            voters(quorum)
        ),
        Event::NodeCreated { client, seq } => format!("client {client} creates sequential node {seq}"),
        Event::LeaseExpired { client } => format!("client {client}'s lease expires; client {client} is not told"),
        Event::ValueRead { client, generation, token, rejected: true, .. } => format!(
            "resource rejects client {client}'s read (generation {generation}, token {token}): a newer token was seen; the grant is abandoned"
        ),
        Event::ValueRead { client, generation, value, .. } => {
            format!("client {client} (generation {generation}) reads {}", value_name(value))
        }
        Event::WriteSent { client, generation, token, read_value } => {
            let based = read_value.map(|v| format!(", computed from {}", value_name(v))).unwrap_or_default();
            format!("client {client} sends its write (generation {generation}, {}{based}); it is in flight", token_name(token))
        }
        Event::WriteDelivered { client, generation, token, fence_before, outcome } => match outcome {
            Outcome::Accepted if token == 0 => {
                format!("resource accepts client {client}'s write of generation {generation} (it checks nothing)")
            }
            Outcome::Accepted => format!(
                "resource accepts client {client}'s write of generation {generation} (token {token}, fence was {fence_before})"
            ),
            Outcome::Rejected => format!(
                "resource rejects client {client}'s write of generation {generation} (token {token} < fence {fence_before})"
            ),
            Outcome::CheckPassed => format!(
                "resource checks client {client}'s write of generation {generation}: token {token} >= fence {fence_before}, body not yet written"
            ),
        },
        Event::WriteCommitted { client, generation, token, fence_before } => format!(
            "resource writes client {client}'s checked write of generation {generation} and sets the fence to {token} (was {fence_before})"
        ),
        Event::Replicated { counter } => format!("backup replicates the counter (now {counter})"),
        Event::FailedOver { counter_before, counter_after, quorum: 0, .. } => format!(
            "primary fails over: the backup is promoted with counter {counter_after} (the primary had {counter_before}); the lease is lost with it"
        ),
        Event::FailedOver { counter_before, counter_after, uncommitted, quorum } => {
            let partial = if uncommitted == 0 {
                String::new()
            } else {
                format!("the old leader left generation {} uncommitted on {}; ", counter_before + 1, voters(uncommitted))
            };
            format!(
                "leader fails over: {partial}the new leader reads majority {} and continues from generation {counter_after}",
                voters(quorum)
            )
        }
    };
    for v in Violation::ALL {
        if new_violations & v.bit() != 0 {
            let _ = write!(line, "  <-- {} violated", v.name());
        }
    }
    line
}
