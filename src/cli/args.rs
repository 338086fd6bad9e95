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
    parsed.map_err(|_| format!("{s:?} is not a seed; expected a whole number from 0 to 18446744073709551615, decimal or 0x-prefixed hex"))
}

/// A shard `I/N`, 0-based.
pub fn parse_shard(s: &str) -> Result<crate::suite::Shard, String> {
    s.parse()
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
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
        /// Also write the production metrics as Prometheus text exposition to this file.
        #[arg(long, value_name = "FILE")]
        metrics: Option<PathBuf>,
        /// Swarm testing: each seed switches random fault kinds on/off and scales their rates.
        #[arg(long)]
        swarm: bool,
        /// Run every seed twice and compare trace hashes (exit 3 on divergence).
        #[arg(long)]
        check_determinism: bool,
        /// Output format on stdout.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also write JUnit XML (one test case per scenario) to this file.
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Run only shard I of N (0-based): seeds whose offset from the start is I mod N.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<crate::suite::Shard>,
    },
    /// Minimize a failing seed into a small, fully scripted scenario file.
    Shrink {
        path: PathBuf,
        #[arg(long, value_parser = parse_seed)]
        seed: u64,
        /// The seed was found with `run --swarm`.
        #[arg(long)]
        swarm: bool,
        /// Violation kind to preserve (default: the first unexpected one, else the first found).
        #[arg(long)]
        kind: Option<String>,
        /// Where to write the minimal scenario (default: FILE stem + `-seed-S-shrunk.toml`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Give up after this many candidate runs.
        #[arg(long, default_value_t = 5_000)]
        max_runs: u64,
    },
    /// Combine the JSON outputs of `run --shard I/N` into the unsharded report.
    Merge {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[arg(long)]
        junit: Option<PathBuf>,
        /// Also write the report directory `run --report` writes (its charts come from the
        /// shard files; only each timeline's seed runs again).
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// Accepted for compatibility: the report no longer runs a second pass.
        #[arg(long)]
        jobs: Option<usize>,
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
        /// Replay the seed as `run --swarm` ran it.
        #[arg(long)]
        swarm: bool,
        /// Warn unless this is the fencesim version running (from a repro line).
        #[arg(long)]
        expect_version: Option<String>,
        /// Warn unless the scenario file has this content hash (from a repro line).
        #[arg(long)]
        expect_hash: Option<String>,
    },
    /// Run live scenarios (live/) against the harness's own Redis and PostgreSQL (docs/live.md).
    Live(super::live::LiveArgs),
    /// One live worker process (started by `fencesim live`).
    #[command(hide = true)]
    LiveWorker(crate::live::worker::WorkerArgs),
    /// Check a history written by anyone (JSON lines, docs/history.md).
    CheckHistory { path: PathBuf },
    /// Sweep a scenario over lease TTLs, with and without fencing: takeover
    /// time, false lease loss, corrupted writes.
    Tradeoff {
        /// Base scenario (scenarios/tradeoff/ttl-tradeoff.toml).
        path: PathBuf,
        /// TTLs to try, comma-separated milliseconds.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1000,2000,5000,10000,20000"
        )]
        ttls_ms: Vec<u64>,
        /// Seeds per point (default: the scenario's).
        #[arg(long)]
        seeds: Option<u64>,
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write the chart (tradeoff.svg) and table (tradeoff.md) here.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Print the catalogue: protocols, faults, checkers, history kinds.
    List,
    /// Run other implementations (JSON lines on stdin/stdout, docs/validate.md)
    /// as simulated nodes under each scenario's faults, and check them.
    Validate {
        /// ROLE=COMMAND, ROLE one of coordinator, resource, worker; the command
        /// runs under `sh -c`. Roles not given stay built-in.
        #[arg(long = "node", value_name = "ROLE=CMD", required = true)]
        nodes: Vec<String>,
        /// Scenario files or directories; each seed is also run with the built-in
        /// nodes, and violations the scenario's [expect] allows are reported as the
        /// scenario's, not the implementation's.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Override each scenario's seed count.
        #[arg(long)]
        seeds: Option<u64>,
        /// Override each scenario's first seed.
        #[arg(long, value_parser = parse_seed)]
        seed_start: Option<u64>,
        /// Seeds run in parallel (each with its own processes).
        #[arg(long)]
        jobs: Option<usize>,
        /// Abort a run if a process takes longer than this to answer one input.
        #[arg(long, default_value_t = 5_000)]
        step_timeout_ms: u64,
        /// Run only shard I of N (0-based); `fencesim merge` combines the `--format json` outputs.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<crate::suite::Shard>,
        /// Output format on stdout (json: schema `fencesim-validate`, version 1).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Try every placement of up to K faults at the protocol events of a scenario (exhaustive
    /// fault-placement search); on a violation, write it as a scripted scenario.
    Search {
        path: PathBuf,
        /// Place up to this many faults (K).
        #[arg(long, default_value_t = 2)]
        faults: usize,
        /// The seed every execution runs under (latency jitter).
        #[arg(long, value_parser = parse_seed, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        jobs: Option<usize>,
        /// ROLE=COMMAND: search an implementation, started as `validate --node` starts it.
        #[arg(long = "node", value_name = "ROLE=CMD")]
        nodes: Vec<String>,
        /// Abort a run if a process takes longer than this to answer one input.
        #[arg(long, default_value_t = 5_000)]
        step_timeout_ms: u64,
        /// Where to write a violating execution (a file, or a directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the violating execution as found, without shrinking it.
        #[arg(long)]
        no_shrink: bool,
        /// Run only shard I of N (0-based) of the enumeration; write it with --json, then merge.
        #[arg(long, value_name = "I/N", value_parser = parse_shard)]
        shard: Option<crate::suite::Shard>,
        /// Write this (shard's) runs as JSON, for `--merge`.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Run nothing: merge the --json files of shards 0..N of this scenario's search and
        /// report exactly what the unsharded search reports.
        #[arg(long, value_name = "FILES", num_args = 1..)]
        merge: Vec<PathBuf>,
    },
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
        /// Output format on stdout (json: schema `fencesim-check`, version 1).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Serve stateright's web explorer for one model spec on 127.0.0.1.
    Explore {
        path: PathBuf,
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
}
