//! `fencesim search`'s flags: those of a simulated scenario's search, of a
//! live scenario's, and those both use ([`super::search`] refuses a flag
//! the file's mode does not use).

use std::path::PathBuf;

use super::flags::{parse_seed, parse_shard, JobsFlag};

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    pub(super) path: PathBuf,
    /// Place up to this many faults (K).
    #[arg(long, default_value_t = 2)]
    pub(super) faults: usize,
    /// The seed every execution runs under (latency jitter) [default: 0].
    #[arg(long, value_parser = parse_seed)]
    pub(super) seed: Option<u64>,
    #[command(flatten)]
    pub(super) jobs: JobsFlag,
    /// ROLE=COMMAND: search an implementation, started as `validate --node` starts it.
    #[arg(long = "node", value_name = "ROLE=CMD")]
    pub(super) nodes: Vec<String>,
    /// Abort a run if a process takes longer than this to answer one input [default: 5000].
    #[arg(long)]
    pub(super) step_timeout_ms: Option<u64>,
    /// Where to write the violating executions: a directory (created if missing), or a
    /// file when the search finds one violation [default: beside FILE].
    #[arg(long)]
    pub(super) out: Option<PathBuf>,
    /// Write the violating execution as found, without shrinking it.
    #[arg(long)]
    pub(super) no_shrink: bool,
    /// Run only shard I of N (0-based) of the enumeration; write it with --json, then merge.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub(super) shard: Option<crate::suite::Shard>,
    /// Write this (shard's) runs as JSON, for `--merge`; for a live scenario, the
    /// search's coverage and findings (schema `fencesim-live-search`), or with --chaos
    /// the nemesis's trials (`fencesim-live-chaos`; docs/live-search.md).
    #[arg(long, value_name = "FILE")]
    pub(super) json: Option<PathBuf>,
    /// A live scenario: also write JUnit XML (one test case, failed by a finding; with
    /// --chaos one per trial).
    #[arg(long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// A live scenario: also write a report directory (index.html, summary.md, results.json).
    #[arg(long, value_name = "DIR")]
    pub(super) report: Option<PathBuf>,
    /// Run nothing: merge the --json files of shards 0..N of this scenario's search and
    /// report exactly what the unsharded search reports.
    #[arg(long, value_name = "FILES", num_args = 1..)]
    pub(super) merge: Vec<PathBuf>,
    /// A live scenario: run this program (`sh -c CMD`) as every worker (as `live --worker-cmd`).
    #[arg(long, value_name = "CMD")]
    pub(super) worker_cmd: Option<String>,
    /// A live scenario: a trial that has not finished by then is ended [default: 20000].
    #[arg(long, value_name = "MS")]
    pub(super) timeout_ms: Option<u64>,
    /// A live scenario: reruns of each finding's written scenario (it reproduces in ≥ 4 of 5)
    /// [default: 5].
    #[arg(long, value_name = "N")]
    pub(super) confirm: Option<u32>,
    /// A live scenario: the seeded nemesis instead of the enumeration (up to --faults per trial).
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    pub(super) chaos: Option<u64>,
    /// A live scenario: trials of the nemesis [default: 20].
    #[arg(long, value_name = "N")]
    pub(super) chaos_trials: Option<u32>,
}
