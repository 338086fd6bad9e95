//! Campaigns: fresh seeds, drawn from one campaign seed, run over the given
//! scenarios until a seed or time budget is spent, every distinct failure
//! kept once with the seed that reproduces it fastest (`fencesim campaign`).
//!
//! A sweep reruns seeds `0..N` each night; a campaign draws new ones. Draw
//! `d` of campaign seed `S` is word `d` of the ChaCha stream `campaign` of
//! `S` ([`seed_of`], by [`Rng::seek`]): any draw is reachable on its own,
//! so a slice (`--shard I/N` owns the draws `d ≡ I mod N`) and a resumed
//! run draw exactly the seeds the whole, uninterrupted campaign would.
//! Each draw's seed runs every scenario.
//!
//! Draws run in batches on the process's pool ([`super::pool`]); a batch's
//! findings fold commutatively ([`findings`]), so what a seed budget finds
//! depends on nothing but the campaign seed, the budget and the scenarios.
//! Between batches the caller is told the progress (to print it and write
//! a checkpoint, [`json`]) and the campaign stops if asked to or when its
//! budget is spent. Slices merge with [`merge`]; `--shrink` is
//! `crate::shrink::campaign`'s (shrink/ sits above suite/).

pub mod findings;
pub mod json;
pub mod merge;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::seed::{self, RunSeed};
use super::{pool, repro_command, shard, signature, Shard};
use crate::scenario::Scenario;
use crate::sim::rng::Rng;
pub use findings::{Failure, Findings};

/// How long a campaign runs: draws of the whole campaign, or seconds of
/// each slice.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Budget {
    Seeds(u64),
    Secs(u64),
}

/// The seed of draw `draw` of the campaign seeded `campaign_seed`.
pub fn seed_of(campaign_seed: u64, draw: u64) -> u64 {
    let mut rng = Rng::stream(campaign_seed, "campaign");
    rng.seek(draw);
    rng.next_u64()
}

/// One process's part of a campaign: the whole of it, or one shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub campaign_seed: u64,
    pub budget: Budget,
    pub shard: Option<Shard>,
}

impl Slice {
    /// The campaign draw at `position` (0-based) of this slice's own order.
    pub fn draw_at(&self, position: u64) -> u64 {
        self.shard.map_or(position, |s| s.nth_position(position))
    }

    /// How many draws this slice runs under a seed budget (`None`: a time budget).
    pub fn draws(&self) -> Option<u64> {
        match self.budget {
            Budget::Seeds(n) => Some(shard::seed_count(self.shard, &(0..n))),
            Budget::Secs(_) => None,
        }
    }
}

/// Where a slice stands: how many of its draws are done, the time spent on
/// them (all sessions of a resumed slice), and what they found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub spent_ms: u64,
    pub found: Findings,
}

impl Progress {
    /// Whether the slice has spent its budget.
    pub fn complete(&self, slice: &Slice) -> bool {
        match slice.budget {
            Budget::Seeds(_) => Some(self.done) == slice.draws(),
            Budget::Secs(s) => self.spent_ms >= s.saturating_mul(1000),
        }
    }
}

/// Why [`run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The budget is spent.
    Budget,
    /// `interrupted` was set (Ctrl-C, SIGTERM): the progress holds every
    /// batch finished before.
    Interrupted,
}

/// How [`run`] runs and whom it tells.
pub struct Control<'a> {
    pub jobs: usize,
    /// Set from outside (a signal handler) to stop after the current batch.
    pub interrupted: &'a AtomicBool,
    /// Told the progress after each batch.
    pub after_batch: &'a mut dyn FnMut(&Progress),
}

/// A batch aims to take this long: short enough to stop near a time
/// budget or after Ctrl-C, long enough that the pool stays busy.
const BATCH_TARGET: Duration = Duration::from_millis(500);

/// Runs `slice` of a campaign over `scenarios` from `progress` on, until
/// its budget is spent or it is interrupted.
pub fn run(scenarios: &[Scenario], slice: &Slice, progress: &mut Progress, ctl: Control) -> Stop {
    let start = Instant::now();
    let spent_before = progress.spent_ms;
    let mut batch = ctl.jobs.max(1) as u64;
    loop {
        if progress.complete(slice) {
            return Stop::Budget;
        }
        if ctl.interrupted.load(Ordering::Relaxed) {
            return Stop::Interrupted;
        }
        let mut count = batch;
        if let Some(total) = slice.draws() {
            count = count.min(total - progress.done);
        }
        let began = Instant::now();
        let positions = progress.done..progress.done + count;
        let found = run_batch(scenarios, slice, positions, ctl.jobs);
        progress.found = std::mem::take(&mut progress.found).merge(found);
        progress.done += count;
        progress.spent_ms = spent_before + start.elapsed().as_millis() as u64;
        (ctl.after_batch)(progress);
        // The next batch sized to take about BATCH_TARGET.
        let took = began.elapsed().max(Duration::from_millis(1));
        let scaled = count as f64 * BATCH_TARGET.as_secs_f64() / took.as_secs_f64();
        batch = (scaled as u64).clamp(1, count.saturating_mul(4).max(ctl.jobs as u64));
    }
}

/// Runs the draws at `positions` of `slice` over every scenario,
/// scenario by scenario (a thread's buffers stay sized for one scenario).
fn run_batch(
    scenarios: &[Scenario],
    slice: &Slice,
    positions: Range<u64>,
    jobs: usize,
) -> Findings {
    let width = positions.end - positions.start;
    pool::install(jobs, || {
        (0..width * scenarios.len() as u64)
            .into_par_iter()
            .fold(Findings::default, |mut acc, run| {
                let draw = slice.draw_at(positions.start + run % width);
                let at = (run / width) as usize;
                run_one(&scenarios[at], at, slice.campaign_seed, draw, &mut acc);
                acc
            })
            .reduce(Findings::default, Findings::merge)
    })
}

/// Runs draw `draw`'s seed of `scenario` (position `at`) into `acc`.
fn run_one(scenario: &Scenario, at: usize, campaign_seed: u64, draw: u64, acc: &mut Findings) {
    let seed = seed_of(campaign_seed, draw);
    let how = RunSeed {
        keep_trace: false,
        swarm: false,
        terse: true,
    };
    let run = seed::run(&scenario.options, seed, how);
    let events = run.outcome.events;
    acc.runs += 1;
    acc.events += events;
    let failed_metrics = scenario.expect.failed_metrics(&run.report);
    if !run.report.is_clean() || !failed_metrics.is_empty() {
        acc.failing_runs += 1;
        let (report, history) = (&run.report, &run.outcome.history);
        let hash = signature::hash_of(report, history, &failed_metrics);
        acc.sighting((at, hash), events, draw, || {
            let path = scenario.path.display().to_string();
            Failure {
                replay: repro_command(&path, seed, false, scenario.source_hash),
                scenario: path,
                signature: format!("{hash:016x}"),
                shape: signature::of(report, history, &failed_metrics).text,
                kinds: report.kinds().map(|k| k.name().to_string()).collect(),
                expected: failed_metrics.is_empty()
                    && report.kinds().all(|k| scenario.expect.tolerates(k)),
                seed,
                draw,
                events,
                hits: 1,
                shrunk: None,
            }
        });
    }
    seed::recycle(run.outcome.history);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_draws_every_shard_th_draw_from_its_index() {
        let slice = |shard| Slice {
            campaign_seed: 9,
            budget: Budget::Seeds(10),
            shard,
        };
        let third = slice(Some(Shard { index: 1, count: 3 }));
        assert_eq!(
            (0..3).map(|p| third.draw_at(p)).collect::<Vec<_>>(),
            [1, 4, 7]
        );
        assert_eq!(third.draws(), Some(3));
        assert_eq!(slice(None).draws(), Some(10));
        assert_ne!(seed_of(9, 0), seed_of(9, 1));
        assert_ne!(seed_of(9, 0), seed_of(10, 0));
    }
}
