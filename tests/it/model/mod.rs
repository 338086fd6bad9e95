//! The stateright models (`src/model/`): bundled expectations, the CLI,
//! Ctrl-C, and agreement with the simulator.

mod bundled;
mod cli;
mod etcd;
mod interrupt;
mod queue;
mod quorum;
mod scenarios;
