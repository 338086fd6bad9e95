//! Raw command-line arguments, as close to the flags as possible; resolved
//! into library calls in `cli/mod.rs`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "fencesim",
    version,
    about = "Deterministic simulation and verification of lease + fencing-token locks"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// A seed in decimal (`7`) or hex (`0x7`).
pub fn parse_seed(s: &str) -> Result<u64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse::<u64>(),
    };
    parsed.map_err(|_| format!("{s:?} is not a seed; expected a decimal or 0x-prefixed hex u64"))
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenario files (or directories of them) over their seeds and check every run.
    Run {
        /// Scenario files or directories (searched recursively for *.toml).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Override each scenario's seed count.
        #[arg(long)]
        seeds: Option<u64>,
        /// Override each scenario's first seed.
        #[arg(long, value_parser = parse_seed)]
        seed_start: Option<u64>,
        /// Worker threads (default: all cores). Results do not depend on it.
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write a report directory: index.html (SVG timelines), summary.md, results.json.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Re-run one seed of a scenario and show its timeline, trace, violations and hash.
    Replay {
        path: PathBuf,
        #[arg(long, value_parser = parse_seed)]
        seed: u64,
        /// Write the run's history as JSON lines to this file.
        #[arg(long)]
        history: Option<PathBuf>,
        /// Omit the per-event trace (timeline and verdict only).
        #[arg(long)]
        no_trace: bool,
        /// Write this run as a fully scripted scenario (random faults resolved).
        #[arg(long)]
        emit_scenario: Option<PathBuf>,
        /// Also write a report directory: index.html (SVG timeline), summary.md, results.json.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Check a history written by anyone (JSON lines, docs/history.md).
    CheckHistory { path: PathBuf },
    /// Print the catalogue: protocols, faults, checkers, history kinds.
    List,
    /// Model-check specs (models/*.toml) exhaustively within their bounds: prove them safe or
    /// find shortest counterexamples.
    Check {
        /// Model spec files or directories of them (*.toml).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Threads for the exhaustive proofs (default: all cores). Counterexample searches are
        /// single-threaded so that they are shortest and deterministic.
        #[arg(long)]
        threads: Option<usize>,
        /// Write every counterexample as a fully scripted simulator scenario and run it: a
        /// `.toml` path for a single counterexample, else a directory (created) that receives
        /// `<model>-<violation>.toml` files.
        #[arg(long, value_name = "PATH")]
        emit_scenario: Option<PathBuf>,
    },
    /// Serve stateright's web explorer for one model spec on 127.0.0.1.
    Explore {
        path: PathBuf,
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
}
