//! Sweeps over the bundled scenarios: expectations, chaos, swarm, the TTL
//! trade-off, the determinism self-check.

mod chaos;
mod determinism_check;
mod scenarios;
mod swarm;
mod tradeoff;
