//! Scenario files as users write them: error snapshots, bad input, fuzzed
//! input.

mod bad_input;
mod errors;
mod fuzz_inputs;
