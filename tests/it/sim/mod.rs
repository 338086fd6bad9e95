//! The simulator's promises: a run is a pure function of (scenario, seed),
//! under any fault schedule, and faster than the same scenario under madsim.

mod determinism;
mod fault_schedules;
mod madsim;
