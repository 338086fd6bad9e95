//! The command line: the top-level parser and one variant per subcommand.
//! Each subcommand's flags are a `clap::Args` struct in that subcommand's
//! own file; flags several share (seeds, jobs, format) are declared once in
//! `flags.rs` and flattened in.

use clap::{Parser, Subcommand};

use super::{
    campaign, check_history, check_models, explore, live, merge, replay, run, search_args, shrink,
    tradeoff, validate,
};

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

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenario files (or directories of them) over their seeds and check every run.
    Run(run::RunArgs),
    /// Minimize a failing seed into a small, fully scripted scenario file.
    Shrink(shrink::ShrinkArgs),
    /// Draw fresh seeds from a campaign seed until a seed or time budget is spent; keep each
    /// distinct failure once, with the seed that reproduces it fastest. Resumable, shardable.
    Campaign(campaign::CampaignArgs),
    /// Combine the JSON outputs of `run --shard I/N` into the unsharded report.
    Merge(merge::MergeArgs),
    /// Re-run one seed of a scenario and show its timeline, trace, violations and hash.
    Replay(replay::ReplayArgs),
    /// Run live scenarios (live/) against the harness's own Redis and PostgreSQL (docs/live.md).
    Live(live::LiveArgs),
    /// One live worker process (started by `fencesim live`).
    #[command(hide = true)]
    LiveWorker(crate::live::worker::WorkerArgs),
    /// Check a history written by anyone (JSON lines, docs/history.md).
    CheckHistory(check_history::CheckHistoryArgs),
    /// Sweep a scenario over lease TTLs, with and without fencing: takeover
    /// time, false lease loss, corrupted writes.
    Tradeoff(tradeoff::TradeoffArgs),
    /// Print the catalogue: protocols, faults, checkers, history kinds.
    List,
    /// Run other implementations (JSON lines on stdin/stdout, docs/validate.md)
    /// as simulated nodes under each scenario's faults, and check them.
    Validate(validate::ValidateArgs),
    /// Try every placement of up to K faults at the protocol events of a scenario (exhaustive
    /// fault-placement search); on a violation, write it as a scripted scenario.
    Search(search_args::SearchArgs),
    /// Model-check specs (models/*.toml) exhaustively within their bounds: prove them safe or
    /// find shortest counterexamples.
    Check(check_models::CheckArgs),
    /// Serve stateright's web explorer for one model spec on 127.0.0.1.
    Explore(explore::ExploreArgs),
}
