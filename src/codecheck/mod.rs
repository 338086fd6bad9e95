//! Code-level model checking: an exhaustive search over the *shipped*
//! sans-IO nodes of a protocol (`src/protocol/`), not over an abstract model
//! of them (`src/model/`). A state is the real node structs (hashed as they
//! are), their synced records, their timers on one true-time line, the
//! messages in flight and a fault budget; the transitions are what the
//! simulator's event loop and its faults can do, each computed by the
//! node's own `handle`. Properties are judged along each path with the
//! history checker's definitions. Safe protocols are proved at stated
//! bounds; unsafe ones get a shortest counterexample.
//!
//! - `topology`: the nodes at a scenario's addresses, built from a protocol
//!   (a lease coordinator, or lock servers whose clients decide).
//! - `bounds`: every bound of a search (and the memory bound).
//! - `state`: the hashed state.
//! - `clock`: a node's clocks under drift and wall-clock jumps.
//! - `harness`: the transitions (deliver, lose, duplicate, timers, pause,
//!   crash, failover of a replicated coordinator, clock drift and jumps).
//! - `hold`: the simulator's pause (a paused worker holds its inputs).
//! - `judge`: the properties, incrementally.
//! - `own`: a user's own `Node` beside the built-in ones.
//! - `search`: the BFS, proofs and shortest counterexamples.
//! - `to_scenario`: a counterexample as a scripted simulator scenario.
//! - `abstraction`: the refinement mapping, a code-level state as a state
//!   of the protocol's atomic-step model (`src/model/`).
//! - `refine`: the refinement check, every explored step against the model.

pub mod abstraction;
pub mod bounds;
pub mod clock;
pub mod effect_map;
pub mod harness;
pub mod hold;
pub mod judge;
pub mod own;
pub mod refine;
pub mod search;
pub mod state;
pub mod to_scenario;
pub mod topology;

pub use abstraction::{
    model_for, model_of, Abstraction, Inspect, ModelOf, QueueView, StoreView, Wraps,
};
pub use bounds::{Bounds, MAX_STATES_DEFAULT};
pub use harness::{Action, Harness};
pub use judge::Finding;
pub use own::Own;
pub use refine::{refine, refine_protocol, refine_protocol_with, Divergence, Refinement};
pub use search::{check, explore, prove, search, Counterexample, Hits, Observer, Outcome};
pub use topology::{
    builtin, is_lock_server, is_replicated, is_supported, supported, Builtin, Options, Timing,
    Topology, MASTERS_DEFAULT,
};

use crate::protocol::ProtocolKind;

/// Checks a catalogue protocol's built-in nodes within `bounds`; the
/// harness comes back too, to describe the counterexample's steps.
pub fn check_protocol(
    kind: ProtocolKind,
    bounds: Bounds,
) -> Result<(Harness<Builtin>, Outcome), String> {
    check_protocol_with(kind, Options::default(), bounds)
}

/// [`check_protocol`] with protocol options set against the catalogue's
/// defaults (`fence = false`, say).
pub fn check_protocol_with(
    kind: ProtocolKind,
    options: Options,
    bounds: Bounds,
) -> Result<(Harness<Builtin>, Outcome), String> {
    let topology = Topology::new(kind, options, bounds.workers, bounds.timing)?;
    let harness = Harness {
        topology,
        factory: builtin,
        bounds,
    };
    let outcome = check(&harness);
    Ok((harness, outcome))
}
