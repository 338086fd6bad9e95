//! The built-in worker process's command line (`fencesim live-worker`,
//! hidden): what the trial tells each worker it starts.

use std::path::PathBuf;

use crate::live::fault::Point;
use crate::live::zk::lane::WatchMode;
use crate::live::{LockKind, WriteKind};

#[derive(clap::Args, Debug, Clone)]
pub struct WorkerArgs {
    #[arg(long)]
    pub name: String,
    /// redis://127.0.0.1:PORT/ (unused with `--lock none`); a comma-separated
    /// list after a failover-capable set-up: primary first, then the replica
    /// the worker moves to when the primary stops answering.
    #[arg(long, default_value = "")]
    pub redis: String,
    /// A libpq-style connection string (sslmode=disable).
    #[arg(long)]
    pub postgres: String,
    #[arg(long, value_enum)]
    pub lock: LockKind,
    #[arg(long, value_enum)]
    pub write: WriteKind,
    #[arg(long)]
    pub ttl_ms: u64,
    #[arg(long)]
    pub retry_ms: u64,
    #[arg(long, default_value_t = 0)]
    pub work_ms: u64,
    /// 1-based worker index: op ids are `index * 1000 + n` (the simulator's rule).
    #[arg(long)]
    pub index: u16,
    /// Operations this worker runs.
    #[arg(long, default_value_t = 1)]
    pub ops: u32,
    /// The document row it locks and writes (its lock key and token counter follow it).
    #[arg(long, default_value_t = 1)]
    pub document: u32,
    /// Stop and wait for the harness after this step (`read_ok`, `fence_checked`, `write_sent`).
    #[arg(long, value_parser = parse_point)]
    pub gate: Option<Point>,
    /// The machine retransmits a request unanswered for this long.
    #[arg(long, default_value_t = 2_000)]
    pub request_timeout_ms: u64,
    /// Where the machine's synced record lives across a crash and restart.
    #[arg(long)]
    pub state_file: Option<PathBuf>,
    /// Prefix of every Redis key (a run against a user's Redis owns only its prefix).
    #[arg(long, default_value = "")]
    pub key_prefix: String,
    /// PostgreSQL schema holding the run's tables (search_path).
    #[arg(long)]
    pub schema: Option<String>,
    /// etcd or ZooKeeper client endpoints, comma-separated, this worker's own member first.
    #[arg(long, default_value = "")]
    pub cluster: String,
    /// ZooKeeper: what a waiter watches (the recipe's predecessor, or the herd's directory).
    #[arg(long, value_enum, default_value = "predecessor")]
    pub zk_watch: WatchMode,
    /// Give up (error) when the workload is not done after this long.
    #[arg(long, default_value_t = 15_000)]
    pub give_up_ms: u64,
}

fn parse_point(name: &str) -> Result<Point, String> {
    Point::from_name(name).ok_or_else(|| format!("unknown protocol point {name:?}"))
}
