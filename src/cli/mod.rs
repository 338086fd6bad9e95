//! The command-line front end: parse, call the library, map verdicts to
//! exit codes. Exit codes: 0 every expectation met (or history clean),
//! 1 an expectation failed (or violations found), 2 bad input.

pub mod args;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::{check, history, report, scenario, sim, suite};
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
        Command::Run { paths, seeds, seed_start, jobs } => cmd_run(&paths, seeds, seed_start, jobs),
        Command::Replay { path, seed, history, no_trace, emit_scenario } => {
            cmd_replay(&path, seed, history, !no_trace, emit_scenario)
        }
        Command::CheckHistory { path } => cmd_check_history(&path),
        Command::List => {
            print!("{}", catalogue());
            Ok(ExitCode::from(EXIT_OK))
        }
    }
}

fn load(path: &std::path::Path) -> Result<scenario::Scenario> {
    scenario::load(path).map_err(|e| BadInput(e.to_string()).into())
}

pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn cmd_run(paths: &[PathBuf], seeds: Option<u64>, seed_start: Option<u64>, jobs: Option<usize>) -> Result<ExitCode> {
    let files = scenario::collect(paths).map_err(|e| BadInput(e.to_string()))?;
    // Load everything first: a typo in the last file should not cost a long sweep.
    let scenarios = files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let jobs = jobs.unwrap_or_else(default_jobs).max(1);
    println!("fencesim {} — {} scenarios, jobs {jobs}", env!("CARGO_PKG_VERSION"), scenarios.len());
    let mut results = Vec::with_capacity(scenarios.len());
    for s in &scenarios {
        let start = seed_start.unwrap_or(s.seeds.start);
        let count = seeds.unwrap_or(s.seeds.end - s.seeds.start);
        results.push(suite::run_scenario(s, start..start.saturating_add(count), jobs));
    }
    print!("{}", report::table::render(&results));
    let digest = results.iter().fold(0u64, |d, r| d.wrapping_mul(31).wrapping_add(r.agg.digest));
    println!("\nsuite digest {digest:016x} ({} seeds, {} events)", results.iter().map(|r| r.agg.seeds).sum::<u64>(), results.iter().map(|r| r.agg.events).sum::<u64>());
    let met = results.iter().all(|r| r.met());
    Ok(ExitCode::from(if met { EXIT_OK } else { EXIT_FAILED }))
}

fn cmd_replay(path: &std::path::Path, seed: u64, history_out: Option<PathBuf>, with_trace: bool, emit: Option<PathBuf>) -> Result<ExitCode> {
    let s = load(path)?;
    let out = sim::run(&s.options, seed, true);
    let report = check::check(&out.history);
    print!("{}", report::replay::render(&s, &out, &report, with_trace));
    if let Some(file) = history_out {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&file).with_context(|| format!("creating {}", file.display()))?);
        history::jsonl::write(&out.history, &mut w)?;
        w.flush()?;
        println!("history written to {}", file.display());
    }
    if let Some(file) = emit {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let scripted = scenario::emit::scripted(&text, &s.options, &out.script, seed)
            .map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
        std::fs::write(&file, scripted).with_context(|| format!("writing {}", file.display()))?;
        println!("scripted scenario written to {}", file.display());
    }
    let failing = !report.is_clean() && report.kinds().any(|k| !s.expect.tolerates(k));
    if !report.is_clean() {
        println!("replay: {}", report::table::repro_command(&path.display().to_string(), seed));
    }
    Ok(ExitCode::from(if failing || !s.expect.failed_metrics(&report).is_empty() { EXIT_FAILED } else { EXIT_OK }))
}

fn cmd_check_history(path: &std::path::Path) -> Result<ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let h = history::jsonl::read(&text, &path.display().to_string()).map_err(|e| BadInput(e.to_string()))?;
    let report = check::check(&h);
    println!("fencesim {} — checked {} records from {}", env!("CARGO_PKG_VERSION"), h.events.len(), path.display());
    print!("{}", report::replay::violations(&h, &report));
    Ok(ExitCode::from(if report.is_clean() { EXIT_OK } else { EXIT_FAILED }))
}

pub fn catalogue() -> String {
    use std::fmt::Write as _;
    let mut s = String::from("protocols:\n");
    for k in crate::protocol::ProtocolKind::ALL {
        let _ = writeln!(s, "  {:<28} {}", k.id(), k.summary());
    }
    s.push_str("faults:\n");
    for (name, doc) in [
        ("pause", "process pause (GC, SIGSTOP): inputs and due timers wait until resume"),
        ("crash", "crash, optional restart from synced storage; buffered writes lost"),
        ("partition", "full or one-way partition between two node groups, on a schedule"),
        ("delay", "one message (nth on a link) held in the network for extra time"),
        ("drop", "one message (nth on a link) lost"),
        ("network.loss/delay", "random per-message loss and delay spikes"),
        ("clock", "per-node wall offset, drift (ppm) and jumps; monotonic drift"),
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
