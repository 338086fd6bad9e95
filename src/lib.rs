//! fencesim: a deterministic simulation and verification harness for
//! distributed locks built from leases and fencing tokens.
//!
//! Layers (see ARCHITECTURE.md, enforced by `tests/it/architecture.rs`):
//! `lookup` (point-lookup tables with no iteration) → [`protocol`] (sans-IO state machines) → [`history`] (the observation
//! schema) → [`sim`] (deterministic event loop, faults, history recording)
//! → [`check`] (violations with evidence) → [`oracle`] → [`scenario`] (TOML
//! files, validation) → [`suite`] (running a seed, sweeps, expectations) →
//! [`model`] / [`shrink`] / [`search`] → [`validate`] → [`report`] (every
//! renderer) → [`live`] → `cli`.

pub mod check;
pub mod cli;
pub mod codecheck;
pub mod history;
pub mod live;
pub(crate) mod lookup;
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
