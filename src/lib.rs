//! fencesim: a deterministic simulation and verification harness for
//! distributed locks built from leases and fencing tokens.
//!
//! Layers (see ARCHITECTURE.md): [`protocol`] (sans-IO state machines) →
//! [`sim`] (deterministic event loop, faults, history recording) →
//! [`history`] (the observation schema) → [`check`] (violations with
//! evidence) → [`scenario`] (TOML files, validation) → [`suite`] (seeds in
//! parallel, expectations) → [`report`] (timelines, tables) → `cli`.

pub mod check;
pub mod cli;
pub mod history;
pub mod live;
pub mod model;
pub mod oracle;
pub mod protocol;
pub mod report;
pub mod scenario;
pub mod search;
pub mod shrink;
pub mod sim;
pub mod suite;
pub mod validate;

/// Where swarm testing lived before it moved under [`suite`] (kept for
/// outside code).
pub use suite::swarm;

/// The TTL trade-off sweep ([`suite::tradeoff`]) and its table, under the
/// path outside code used before they moved.
pub mod tradeoff {
    pub use crate::suite::tradeoff::{sweep, table};
}
