//! Running a scenario over its seeds and judging the result against the
//! scenario's expectation.
//!
//! Seeds run in parallel on a rayon pool of `jobs` threads; each run is
//! single-threaded and independent, and per-seed results are folded into an
//! [`Aggregate`] whose merge is commutative, so the outcome — including the
//! suite digest of all trace hashes — is identical for any job count and
//! memory stays flat in the number of seeds.

use std::ops::Range;

use rayon::prelude::*;

use crate::check::{self, ViolationKind};
use crate::scenario::expect::VACUITY_MIN_FRACTION;
use crate::scenario::Scenario;
use crate::sim;

/// What one seed contributes.
#[derive(Clone, Debug)]
pub struct SeedResult {
    pub seed: u64,
    pub report: check::Report,
    pub trace_hash: u64,
    pub events: u64,
    pub unfinished: usize,
    pub failed_metrics: Vec<String>,
}

pub fn run_seed(scenario: &Scenario, seed: u64) -> SeedResult {
    let out = sim::run(&scenario.options, seed, false);
    let report = check::check(&out.history);
    let failed_metrics = scenario.expect.failed_metrics(&report);
    SeedResult {
        seed,
        report,
        trace_hash: out.trace_hash,
        events: out.events,
        unfinished: out.unfinished.len(),
        failed_metrics,
    }
}

/// Order-independent summary of many seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    pub seeds: u64,
    pub events: u64,
    /// Seeds in which each violation kind appeared.
    pub failing_seeds: [u64; 4],
    /// Lowest seed in which each kind appeared.
    pub first_seed: [Option<u64>; 4],
    /// Seeds where a stale attempt reached the resource (vacuity guard).
    pub seeds_with_stale_attempts: u64,
    pub fence_rejected_total: u64,
    pub seeds_with_unfinished: u64,
    pub metric_failures: u64,
    /// (seed, message) of the lowest seed failing a metric assertion.
    pub first_metric_failure: Option<(u64, String)>,
    /// Wrapping sum of FNV(seed, trace hash): equal iff (almost surely) every
    /// seed produced the same trace, in any order of completion.
    pub digest: u64,
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Aggregate {
    pub fn add(mut self, r: &SeedResult) -> Aggregate {
        self.seeds += 1;
        self.events += r.events;
        for kind in r.report.kinds() {
            let i = kind as usize;
            self.failing_seeds[i] += 1;
            self.first_seed[i] = min_opt(self.first_seed[i], Some(r.seed));
        }
        self.seeds_with_stale_attempts += (r.report.info.stale_attempts > 0) as u64;
        self.fence_rejected_total += r.report.info.fence_rejected_total;
        self.seeds_with_unfinished += (r.unfinished > 0) as u64;
        if !r.failed_metrics.is_empty() {
            self.metric_failures += 1;
            let candidate = (r.seed, r.failed_metrics.join("; "));
            if self
                .first_metric_failure
                .as_ref()
                .is_none_or(|(s, _)| r.seed < *s)
            {
                self.first_metric_failure = Some(candidate);
            }
        }
        let mut h = sim::hash::TraceHasher::new();
        h.u64(r.seed);
        h.u64(r.trace_hash);
        self.digest = self.digest.wrapping_add(h.finish());
        self
    }

    pub fn merge(mut self, o: Aggregate) -> Aggregate {
        self.seeds += o.seeds;
        self.events += o.events;
        for i in 0..4 {
            self.failing_seeds[i] += o.failing_seeds[i];
            self.first_seed[i] = min_opt(self.first_seed[i], o.first_seed[i]);
        }
        self.seeds_with_stale_attempts += o.seeds_with_stale_attempts;
        self.fence_rejected_total += o.fence_rejected_total;
        self.seeds_with_unfinished += o.seeds_with_unfinished;
        self.metric_failures += o.metric_failures;
        self.first_metric_failure = match (self.first_metric_failure, o.first_metric_failure) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.digest = self.digest.wrapping_add(o.digest);
        self
    }
}

/// A scenario's verdict.
#[derive(Clone, Debug)]
pub struct ScenarioResult {
    pub name: String,
    pub path: String,
    pub protocol: String,
    pub agg: Aggregate,
    /// Why the expectation was not met (empty: met).
    pub problems: Vec<String>,
    /// The seed to replay first: the lowest seed with an unexpected
    /// violation or failed assertion, else the lowest with any violation.
    pub replay_seed: Option<u64>,
}

impl ScenarioResult {
    pub fn met(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Runs `seeds` of `scenario` on `jobs` threads and judges them.
pub fn run_scenario(scenario: &Scenario, seeds: Range<u64>, jobs: usize) -> ScenarioResult {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("thread pool");
    let agg = pool.install(|| {
        seeds
            .into_par_iter()
            .fold(Aggregate::default, |acc, seed| {
                acc.add(&run_seed(scenario, seed))
            })
            .reduce(Aggregate::default, Aggregate::merge)
    });
    judge(scenario, agg)
}

pub fn judge(scenario: &Scenario, agg: Aggregate) -> ScenarioResult {
    let expect = &scenario.expect;
    let mut problems = Vec::new();
    let mut replay_seed = None;
    for kind in ViolationKind::ALL {
        let n = agg.failing_seeds[kind as usize];
        if n > 0 && !expect.tolerates(kind) {
            problems.push(format!("unexpected {kind} in {n} seeds"));
            replay_seed = min_opt(replay_seed, agg.first_seed[kind as usize]);
        }
    }
    for &(kind, min) in &expect.must_find {
        // A run over fewer seeds (--seeds) than the file's budget cannot owe more.
        let min = min.min(agg.seeds);
        let n = agg.failing_seeds[kind as usize];
        if n < min {
            problems.push(format!("must find {kind} in >= {min} seeds, found {n}"));
        }
    }
    if let Some((seed, msg)) = &agg.first_metric_failure {
        problems.push(format!(
            "metric assertion failed in {} seeds (seed {seed}: {msg})",
            agg.metric_failures
        ));
        replay_seed = min_opt(replay_seed, Some(*seed));
    }
    if expect.expects_clean() && agg.seeds > 0 {
        let fraction = agg.seeds_with_stale_attempts as f64 / agg.seeds as f64;
        if fraction < VACUITY_MIN_FRACTION {
            problems.push(format!(
                "vacuous: stale attempts reached the resource in {}/{} seeds (< {:.0}%), so a clean result proves nothing",
                agg.seeds_with_stale_attempts,
                agg.seeds,
                VACUITY_MIN_FRACTION * 100.0
            ));
        }
    }
    if replay_seed.is_none() {
        replay_seed = agg.first_seed.iter().flatten().min().copied();
    }
    ScenarioResult {
        name: scenario.name.clone(),
        path: scenario.path.display().to_string(),
        protocol: protocol_label(scenario),
        agg,
        problems,
        replay_seed,
    }
}

pub fn protocol_label(s: &Scenario) -> String {
    let p = &s.options.protocol;
    let mut label = p.kind.id().to_string();
    if p.strict {
        label.push_str("+strict");
    }
    if p.fence_reads {
        label.push_str("+fence_reads");
    }
    label
}
