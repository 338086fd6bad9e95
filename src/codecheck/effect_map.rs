//! The refinement mapping's effect sink (effect-naive,
//! effect-idempotency-key, effect-outbox, against the models of the same
//! names: fenced-cas and a sink). Each generation's `effects` bits of the
//! model state are read from the code-level state:
//!
//! - *owed*: the resource accepted the write of the op the judge gives
//!   that generation (the judge's history variable of accepted ops, kept
//!   in the refinement search only). The worker calls the sink once it
//!   hears, and the outbox store enqueues the entry in the same commit,
//!   so no request is sent for an op whose write was not accepted;
//! - *requests*: the `effect` messages for that op in flight to the sink
//!   (a worker's call, its retransmission, a network copy, the outbox
//!   dispatcher's delivery and its retransmissions alike: the model does
//!   not say who asks);
//! - *performed*: the sink performed the op's effect (the judge's list,
//!   the `effect_ok … performed` the sink sent).
//!
//! Refused, not approximated: losses. A lost request leaves the flight
//! without reaching the sink, and the model's requests only leave by
//! `DeliverEffect` (the model keeps no history that would tell a lost
//! request from one in flight, as the judge's `handed` does for writes).

use super::bounds::Bounds;
use super::state::State;
use crate::model::state::{
    State as Model, EFFECT_OWED, EFFECT_PERFORMED, EFFECT_REQUESTS, GRANTS_CAP,
};
use crate::model::{LockModel, Protocol};
use crate::protocol::Msg;

/// Why the mapping of an effect protocol would not be exact within
/// `bounds` (see the module doc), if it would not.
pub fn refusal(id: &str, bounds: &Bounds) -> Option<String> {
    (bounds.losses > 0).then(|| {
        format!(
            "{id}: no refinement with losses: a lost request to the effect sink leaves the flight without reaching the sink, and the model's requests leave only when the sink handles them (no history tells a lost request from one in flight)"
        )
    })
}

/// The model the mapping runs: as many requests for one effect in flight
/// as the bits hold (the outbox dispatcher retransmits until answered).
pub fn model(model: LockModel, protocol: Protocol) -> LockModel {
    if protocol.has_effect_sink() {
        model.with_effect_requests(EFFECT_REQUESTS)
    } else {
        model
    }
}

/// Sets `a.effects` from `s` (see the module doc).
pub fn map<N>(s: &State<N>, a: &mut Model) -> Result<(), String> {
    let judge = &s.judge;
    let accepted = judge
        .accepted_ops()
        .ok_or("the state keeps no history of accepted writes (Bounds::write_history)")?;
    let performed = judge
        .performed_effects()
        .ok_or("the judge keeps no effects")?;
    let slot = |op: u64| -> Result<usize, String> {
        let generation = judge
            .write_of(op)
            .map(|w| w.0)
            .filter(|&g| g != 0)
            .ok_or(format!(
                "op {op}'s effect belongs to no write sent under a grant"
            ))?;
        match generation as usize {
            g if g <= GRANTS_CAP => Ok(g - 1),
            g => Err(format!("generation {g} is past the model's {GRANTS_CAP}")),
        }
    };
    for &op in accepted {
        a.effects[slot(op)?] |= EFFECT_OWED;
    }
    for &op in performed {
        a.effects[slot(op)?] |= EFFECT_PERFORMED;
    }
    for packet in &s.in_flight {
        if let Msg::Effect { op, .. } = packet.msg {
            let e = &mut a.effects[slot(op.0)?];
            if *e & EFFECT_REQUESTS == EFFECT_REQUESTS {
                return Err(format!(
                    "more than {EFFECT_REQUESTS} requests for op {}'s effect in flight",
                    op.0
                ));
            }
            *e += 1;
        }
    }
    Ok(())
}
