//! The command-line front end: parse, call the library, map verdicts to
//! exit codes. Exit codes: 0 every expectation met (or history clean),
//! 1 an expectation failed (or violations found), 2 bad input.

pub mod args;
// `fencesim check` (model checking); named apart from `crate::check`, the history checker.
mod check_history;
#[path = "check.rs"]
mod check_models;
mod explore;
mod replay;
mod run;

use std::process::ExitCode;

use anyhow::Result;

use crate::{check, history, scenario};
use args::Command;

pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

/// Errors that are the user's input, not a failed expectation.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

pub fn run(cli: args::Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run {
            paths,
            seeds,
            seed_start,
            jobs,
            report,
        } => run::cmd_run(&paths, seeds, seed_start, jobs, report),
        Command::Replay {
            path,
            seed,
            history,
            no_trace,
            emit_scenario,
            report,
        } => replay::cmd_replay(&path, seed, history, !no_trace, emit_scenario, report),
        Command::CheckHistory { path } => check_history::cmd_check_history(&path),
        Command::Check {
            paths,
            threads,
            emit_scenario,
        } => check_models::cmd_check(&paths, threads, emit_scenario),
        Command::Explore { path, port } => explore::cmd_explore(&path, port),
        Command::List => {
            print!("{}", catalogue());
            Ok(ExitCode::from(EXIT_OK))
        }
    }
}

pub(crate) fn load(path: &std::path::Path) -> Result<scenario::Scenario> {
    scenario::load(path).map_err(|e| BadInput(e.to_string()).into())
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn catalogue() -> String {
    use std::fmt::Write as _;
    let mut s = String::from("protocols:\n");
    for k in crate::protocol::ProtocolKind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.id(), k.summary());
    }
    s.push_str("faults:\n");
    for (name, doc) in [
        (
            "pause",
            "process pause (GC, SIGSTOP): inputs and due timers wait until resume",
        ),
        (
            "crash",
            "crash, optional restart from synced storage; buffered writes lost",
        ),
        (
            "partition",
            "full or one-way partition between two node groups, on a schedule",
        ),
        (
            "delay",
            "one message (nth on a link) held in the network for extra time",
        ),
        ("drop", "one message (nth on a link) lost"),
        (
            "network.loss/delay",
            "random per-message loss and delay spikes",
        ),
        (
            "clock",
            "per-node wall offset, drift (ppm) and jumps; monotonic drift",
        ),
        ("random", "per-seed random pauses, crashes, partitions"),
    ] {
        let _ = writeln!(s, "  {name:<28} {doc}");
    }
    s.push_str("checkers:\n");
    for k in check::ViolationKind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.name(), k.doc());
    }
    s.push_str("history kinds:\n");
    for k in history::Kind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.name(), k.doc());
    }
    s
}
