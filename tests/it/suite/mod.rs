//! Sweeps over the bundled scenarios: expectations, campaigns, chaos, swarm, the TTL
//! trade-off, the determinism self-check.

pub(crate) mod campaign;
mod chaos;
mod determinism_check;
mod scenarios;
mod swarm;
mod tradeoff;
