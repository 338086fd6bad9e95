//! The command-line front end: parse, call the library, map verdicts to
//! exit codes. Exit codes: 0 every expectation met (or history clean),
//! 1 an expectation failed (or violations found), 2 bad input,
//! 3 implementation error (a run panicked, or `--check-determinism` found
//! a seed that ran differently twice, or an implementation under
//! `validate` broke the wire protocol).

pub mod args;
mod campaign;
pub(crate) mod flags;
// `fencesim check` (model checking); named apart from `crate::check`, the history checker.
mod check_code;
mod check_history;
mod check_live;
#[path = "check.rs"]
mod check_models;
mod explore;
mod interrupt;
pub(crate) mod live;
mod live_search;
mod merge;
mod out_paths;
mod replay;
mod run;
mod search;
mod search_args;
mod search_sim;
mod shrink;
mod tradeoff;
mod validate;

use std::process::ExitCode;

use anyhow::Result;

use crate::scenario;
use args::Command;

pub use crate::suite::exit::{
    Verdict, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK,
};

/// Errors that are the user's input, not a failed expectation.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Parses nothing and decides nothing: hands each subcommand its flags.
pub fn run(cli: args::Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(a) => run::cmd(a),
        Command::Shrink(a) => shrink::cmd(a),
        Command::Campaign(a) => campaign::cmd(a),
        Command::Merge(a) => merge::cmd(a),
        Command::Replay(a) => replay::cmd(a),
        Command::CheckHistory(a) => check_history::cmd(a),
        Command::Tradeoff(a) => tradeoff::cmd(a),
        Command::Validate(a) => validate::cmd(a),
        Command::Check(a) => check_models::cmd(a),
        Command::Search(a) => search::cmd(a),
        Command::Explore(a) => explore::cmd(a),
        Command::Live(a) => live::cmd_live(a),
        Command::LiveWorker(a) => live::cmd_worker(a),
        Command::List => {
            print!("{}", crate::report::catalogue::render());
            print!(
                "{}",
                crate::report::catalogue::validate_scenarios(&bundled_scenarios())
            );
            Ok(Verdict::Met.into())
        }
    }
}

/// The bundled scenarios (`scenarios/` under the current directory, as
/// `run scenarios/` reads it), each with the kinds it tolerates: what
/// `list` tells a `validate` user. Files that do not load are left out;
/// none when there is no such directory.
fn bundled_scenarios() -> Vec<(String, Vec<&'static str>)> {
    let dir = std::path::PathBuf::from("scenarios");
    if !dir.is_dir() {
        return Vec::new();
    }
    let files = scenario::collect(&[dir]).unwrap_or_default();
    files
        .iter()
        .filter_map(|f| scenario::load(f).ok())
        .map(|s| {
            let kinds = s.expect.tolerated().iter().map(|k| k.name()).collect();
            (s.path.display().to_string(), kinds)
        })
        .collect()
}

pub(crate) fn load(path: &std::path::Path) -> Result<scenario::Scenario> {
    scenario::load(path).map_err(|e| BadInput(e.to_string()).into())
}

/// Fails now, before a long sweep, if `file` cannot be written later.
/// Creates it (empty) if it does not exist; the sweep overwrites it.
pub(crate) fn check_writable_file(flag: &str, file: &std::path::Path) -> Result<(), BadInput> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
        .map(drop)
        .map_err(|e| {
            BadInput(format!(
                "{flag} {}: {e}; expected a writable file path",
                file.display()
            ))
        })
}

/// As [`check_writable_file`] for a directory the report is written into.
pub(crate) fn check_writable_dir(flag: &str, dir: &std::path::Path) -> Result<(), BadInput> {
    let probe = dir.join(".fencesim-write-check");
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            BadInput(format!(
                "{flag} {}: {e}; expected a writable directory",
                dir.display()
            ))
        })
}
