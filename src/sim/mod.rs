//! The deterministic simulator: virtual time, per-node clocks, a faulty
//! network, crashes and pauses, driving sans-IO nodes and recording the
//! history the checker reads.
//!
//! **Invariant:** no serde, no wall clock, no ambient RNG, no threads, no
//! hash-ordered iteration. A run is a pure function of (`Options`, seed).

pub(crate) mod clock;
pub mod faults;
pub(crate) mod hash;
pub(crate) mod network;
pub(crate) mod options;
pub(crate) mod queue;
pub mod recorder;
pub(crate) mod rng;
pub(crate) mod simulator;
pub mod trace;

pub use clock::ClockSpec;
pub use options::{CalmNetwork, Fault, NetworkOptions, NodeSpec, Options, RandomFaults, When};
pub use simulator::{run, run_in, run_with, NodeFactory, RunOutcome, Scratch, EVENTS_MAX};
