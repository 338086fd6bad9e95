//! The flags several subcommands share, declared once and flattened into
//! each subcommand's `Args` (ripgrep-style), and the one place each is
//! resolved: the seed range a scenario runs, the worker-thread count, the
//! seed and shard syntax, the output format.

use std::ops::Range;

use super::BadInput;
use crate::scenario;

/// `--seeds N --seed-start S`: which seeds of each scenario to run.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct SeedFlags {
    /// Override each scenario's seed count.
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Override each scenario's first seed (decimal or 0x-hex).
    #[arg(long, value_parser = parse_seed)]
    pub seed_start: Option<u64>,
}

impl SeedFlags {
    /// The seeds to run for `s`: its own range, overridden by the flags.
    pub fn range(&self, s: &scenario::Scenario) -> Result<Range<u64>, BadInput> {
        seed_range(s, self.seed_start, self.seeds)
    }
}

/// `--jobs N`: worker threads; results never depend on it.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct JobsFlag {
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
}

impl JobsFlag {
    pub fn resolve(&self) -> usize {
        jobs(self.jobs)
    }
}

/// `merge --jobs N`: accepted, hidden, for scripts written when merging
/// re-ran every seed; merging now runs no sweep (the report charts the
/// shard files' totals), so there is nothing to spread over threads.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct IgnoredJobsFlag {
    #[arg(long = "jobs", value_name = "N", hide = true)]
    pub jobs: Option<usize>,
}

impl IgnoredJobsFlag {
    /// Says on stderr that the flag was given and has no effect.
    pub fn resolve(&self) {
        if let Some(n) = self.jobs {
            eprintln!(
                "note: merge --jobs {n} is ignored: merging runs no seeds in parallel (the flag is kept for old scripts)"
            );
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
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

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// More worker threads than this only costs memory and start-up time (each
/// seed is one thread's work); results never depend on the count.
pub const JOBS_MAX: usize = 256;

/// `--jobs` (default: all cores), at least 1 and capped at [`JOBS_MAX`],
/// saying so on stderr when capped.
pub fn jobs(requested: Option<usize>) -> usize {
    let jobs = requested.unwrap_or_else(default_jobs).max(1);
    if jobs > JOBS_MAX {
        eprintln!("note: --jobs {jobs} capped at {JOBS_MAX}");
    }
    jobs.min(JOBS_MAX)
}

/// The seeds to run for `s`: its own range, overridden by `--seed-start` and
/// `--seeds`. Zero seeds, or a range that would run past 2^64 (and so be
/// silently cut short), is bad input: a sweep of nothing must not pass.
fn seed_range(
    s: &scenario::Scenario,
    seed_start: Option<u64>,
    seeds: Option<u64>,
) -> Result<Range<u64>, BadInput> {
    let start = seed_start.unwrap_or(s.seeds.start);
    let count = seeds.unwrap_or(s.seeds.end - s.seeds.start);
    let max = scenario::limits::SEEDS_MAX;
    if count == 0 || count > max {
        return Err(BadInput(format!(
            "--seeds {count}: expected from 1 to {max} seeds"
        )));
    }
    start.checked_add(count).map(|end| start..end).ok_or_else(|| {
        BadInput(format!(
            "{}: seeds {start}.. with {count} seeds pass 2^64 (only {} fit); expected a smaller --seed-start or --seeds",
            s.path.display(),
            u64::MAX - start
        ))
    })
}
