//! The binary as a user meets it: exit codes, seeds and replay commands,
//! the deploy recipes (imitated, and Slurm for real).

mod campaign;
mod commands;
mod deploy;
mod seeds;
mod slurm;
