//! The binary as a user meets it: exit codes, seeds and replay commands,
//! the deploy recipes.

mod commands;
mod deploy;
mod seeds;
