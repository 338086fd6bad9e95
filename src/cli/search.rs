//! `fencesim search FILE --faults K`: every placement of up to K faults
//! at the protocol events of a simulated scenario ([`super::search_sim`]),
//! or of real faults in a live scenario's trials ([`super::live_search`]).
//! The file decides which; a flag that only the other mode uses is refused
//! (exit 2) rather than silently ignored.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::live_search::{self, LiveSearch};
use super::search_args::SearchArgs;
use super::{search_sim, BadInput};

pub fn cmd(args: SearchArgs) -> Result<ExitCode> {
    let path: &Path = &args.path;
    if std::fs::read_to_string(path).is_ok_and(|src| live_search::is_live(&src)) {
        refuse(
            path,
            &simulated_only(&args),
            "a simulated scenario's",
            "a live",
        )?;
        return live_search::cmd(LiveSearch {
            path,
            faults: args.faults,
            worker_cmd: args.worker_cmd.clone(),
            timeout_ms: args.timeout_ms.unwrap_or(20_000),
            confirm: args.confirm.unwrap_or(5),
            out: args.out.as_deref(),
            chaos: args.chaos,
            chaos_trials: args.chaos_trials.unwrap_or(20),
            // Live trials are real processes on real servers: one at a
            // time unless asked (each job starts its own servers).
            jobs: args.jobs.jobs.unwrap_or(1),
            json: args.json.as_deref(),
            junit: args.junit.as_deref(),
            report: args.report.as_deref(),
        });
    }
    refuse(path, &live_only(&args), "a live scenario's", "a simulated")?;
    search_sim::cmd(&args)
}

/// The flags given that only a simulated scenario's search uses.
fn simulated_only(a: &SearchArgs) -> Vec<&'static str> {
    let given = [
        ("--seed", a.seed.is_some()),
        ("--node", !a.nodes.is_empty()),
        ("--step-timeout-ms", a.step_timeout_ms.is_some()),
        ("--no-shrink", a.no_shrink),
        ("--shard", a.shard.is_some()),
        ("--merge", !a.merge.is_empty()),
    ];
    given.iter().filter(|(_, g)| *g).map(|(f, _)| *f).collect()
}

/// The flags given that only a live scenario's search uses.
fn live_only(a: &SearchArgs) -> Vec<&'static str> {
    let given = [
        ("--junit", a.junit.is_some()),
        ("--report", a.report.is_some()),
        ("--worker-cmd", a.worker_cmd.is_some()),
        ("--timeout-ms", a.timeout_ms.is_some()),
        ("--confirm", a.confirm.is_some()),
        ("--chaos", a.chaos.is_some()),
        ("--chaos-trials", a.chaos_trials.is_some()),
    ];
    given.iter().filter(|(_, g)| *g).map(|(f, _)| *f).collect()
}

/// Bad input when flags of the other mode were given: what they are for,
/// and what this file is.
fn refuse(path: &Path, flags: &[&str], theirs: &str, mine: &str) -> Result<()> {
    if flags.is_empty() {
        return Ok(());
    }
    Err(BadInput(format!(
        "{}: {} {} for {theirs} search; this is {mine} scenario, whose search does not use {}",
        path.display(),
        flags.join(", "),
        if flags.len() == 1 { "is" } else { "are" },
        if flags.len() == 1 { "it" } else { "them" }
    ))
    .into())
}
