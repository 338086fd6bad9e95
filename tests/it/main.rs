//! The integration tests as one crate (one binary to build and link), with
//! one module per room of `src/` and one helper kit (`common`). Tests read
//! as sentences; each module's `//!` says what its room promises.

mod common;

mod architecture;

mod check;
mod cli;
mod codecheck;
mod live;
mod model;
mod protocol;
mod report;
mod scenario;
mod search;
mod shrink;
mod sim;
mod suite;
mod test_runner;
mod validate;
