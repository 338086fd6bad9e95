//! Exhaustive model checking of token ordering: atomic-step stateright models of the lock
//! protocols, bounded by the specs in `models/*.toml`.
//!
//! The simulator samples runs; this module enumerates every interleaving of grants, lease
//! expiries, replication, coordinator failovers, reads and writes within a spec's bounds, and
//! either proves the safety properties or returns a shortest counterexample. The models are
//! atomic-step abstractions (one step per protocol action, nondeterminism in the action's
//! parameters), not the message-level protocol code, which has ~10^4 times more states.
//! Violations use the history checker's definitions, on generations rather than raw tokens.
//!
//! - `spec`: the spec files (serde, errors with file:line:column).
//! - `state`: the compact state and its symmetry canonicalisation.
//! - `lock_model`: the stateright `Model` — actions, steps, properties.
//! - `quorum`: consensus-generation's steps (proposals, acceptances, a new leader's query).
//! - `checker`: proofs (multi-threaded DFS), shortest counterexamples (single-threaded BFS),
//!   statistics, the web explorer.
//! - `dfs`: the proof's search, a multi-threaded DFS over the stateright `Model` with
//!   stateright's fingerprints and counts (faster than stateright's own DFS; why, in its header).
//! - `action`: the model's vocabulary — actions, the events they produce, a step's one-line
//!   description — below both the model and the replay.
//! - `counterexample`: typed, described steps for timelines and scripted scenarios.
//! - `to_scenario`: a counterexample as a fully scripted simulator scenario, the mechanical
//!   link between the models and the message-level protocol code.

pub(crate) mod action;
pub(crate) mod checker;
pub(crate) mod counterexample;
pub(crate) mod dfs;
pub(crate) mod lock_model;
pub(crate) mod quorum;
pub(crate) mod spec;
pub mod state;
pub mod to_scenario;

pub use action::{Action, Event, Outcome};
pub use checker::{
    check, explore, prove, shortest_counterexample, CheckOptions, CheckReport, Phase, Proof,
    Search, Stats,
};
pub use counterexample::{Counterexample, Step};
pub use lock_model::LockModel;
pub use spec::{load, parse, Bounds, Expected, ModelSpec, Protocol, SpecError, Verdict, Violation};
