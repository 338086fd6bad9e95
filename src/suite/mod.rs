//! Running a scenario over its seeds and judging the result against the
//! scenario's expectation.
//!
//! Seeds run in parallel on the process's rayon pool of `jobs` threads
//! ([`pool`]); each run is
//! single-threaded and independent, and per-seed results are folded into an
//! [`Aggregate`] whose merge is commutative and associative, so the outcome
//! — including the suite digest of all trace hashes — is identical for any
//! job count, and for any split into shards merged afterwards
//! (`fencesim merge`). Memory stays flat in the number of seeds: an
//! aggregate holds counters, the [`KEPT_FAILING`] lowest failing seeds in
//! detail, and at most 32 swarm mixes.
//!
//! Per-seed variations of a sweep ([`SweepConfig`]): `--swarm` (see
//! [`swarm`]), `--check-determinism` (every seed twice, trace hashes
//! compared; see [`determinism`]) and `--shard I/N` (see [`Shard`]).

pub mod campaign;
pub mod determinism;
pub(crate) mod exit;
pub(crate) mod histogram;
pub(crate) mod pool;
pub(crate) mod production;
pub mod seed;
pub(crate) mod seed_stats;
pub mod shard;
pub mod signature;
pub mod swarm;
pub mod tradeoff;

pub use seed::{RunSeed, SeedRun};
pub use shard::Shard;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::check::{self, ViolationKind, VIOLATION_KINDS};
use crate::scenario::expect::VACUITY_MIN_FRACTION;
use crate::scenario::Scenario;
use crate::sim;
use swarm::Mix;

/// How many failing seeds an aggregate keeps in detail (the lowest ones).
pub const KEPT_FAILING: usize = 16;

/// What varies a sweep beyond the seed range. Each option is part of the
/// run's identity: a failing seed found with `swarm` replays with `--swarm`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepConfig {
    pub swarm: bool,
    pub check_determinism: bool,
    pub shard: Option<Shard>,
}

/// What one seed contributes.
#[derive(Clone, Debug)]
pub struct SeedResult {
    pub seed: u64,
    pub report: check::Report,
    pub trace_hash: u64,
    pub events: u64,
    pub unfinished: usize,
    /// The run stopped at the simulator's event budget, not at its end.
    pub hit_event_budget: bool,
    pub failed_metrics: Vec<String>,
    /// The swarm mix this seed ran, under `--swarm`.
    pub mix: Option<Mix>,
    /// Under `--check-determinism`: the second run's trace hash differed.
    pub diverged: bool,
}

/// The options seed `seed` of `scenario` runs with (swarmed or as written),
/// and the swarm mix drawn (see [`seed::options`]).
pub fn seed_options(
    scenario: &Scenario,
    seed: u64,
    swarm: bool,
) -> (Cow<'_, sim::Options>, Option<Mix>) {
    seed::options(&scenario.options, seed, swarm)
}

pub fn run_seed(scenario: &Scenario, seed: u64) -> SeedResult {
    run_seed_with(scenario, seed, &SweepConfig::default())
}

pub fn run_seed_with(scenario: &Scenario, seed: u64, cfg: &SweepConfig) -> SeedResult {
    // The sweep judges by counts: its reports need no explanation text.
    let how = RunSeed {
        keep_trace: false,
        swarm: cfg.swarm,
        terse: true,
    };
    let SeedRun {
        outcome: out,
        report,
        mix,
    } = seed::run(&scenario.options, seed, how);
    let diverged = cfg.check_determinism && {
        let again = seed::run(&scenario.options, seed, how).outcome;
        (again.trace_hash, again.events) != (out.trace_hash, out.events)
    };
    let failed_metrics = scenario.expect.failed_metrics(&report);
    let result = SeedResult {
        seed,
        report,
        trace_hash: out.trace_hash,
        events: out.events,
        unfinished: out.unfinished.len(),
        hit_event_budget: out.hit_event_budget,
        failed_metrics,
        mix,
        diverged,
    };
    seed::recycle(out.history);
    result
}

/// One failing seed, in enough detail to replay and triage it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailingSeed {
    pub seed: u64,
    pub kinds: Vec<ViolationKind>,
    pub failed_metrics: Vec<String>,
    pub trace_hash: u64,
    pub events: u64,
    pub mix: Option<Mix>,
}

/// Seeds and violations of one swarm mix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MixStats {
    pub seeds: u64,
    /// Seeds in which each violation kind appeared.
    pub failing_seeds: [u64; VIOLATION_KINDS],
}

/// Order-independent summary of many seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    pub seeds: u64,
    pub events: u64,
    /// Seeds in which each violation kind appeared.
    pub failing_seeds: [u64; VIOLATION_KINDS],
    /// Lowest seed in which each kind appeared.
    pub first_seed: [Option<u64>; VIOLATION_KINDS],
    /// Seeds where a stale or late write reached the resource
    /// ([`Info::hazard_reached`](crate::check::Info::hazard_reached); vacuity guard).
    pub seeds_with_stale_attempts: u64,
    /// Per violation kind: seeds whose run reached the kind's hazard
    /// ([`Report::hazard_seen`](crate::check::Report::hazard_seen); vacuity guard).
    pub seeds_with_hazard: [u64; VIOLATION_KINDS],
    pub fence_rejected_total: u64,
    pub seeds_with_unfinished: u64,
    /// Seeds cut short by the event budget (their liveness says nothing).
    pub seeds_at_event_budget: u64,
    pub metric_failures: u64,
    /// (seed, message) of the lowest seed failing a metric assertion.
    pub first_metric_failure: Option<(u64, String)>,
    /// Wrapping sum of FNV(seed, trace hash): equal iff (almost surely) every
    /// seed produced the same trace, in any order of completion.
    pub digest: u64,
    /// The lowest [`KEPT_FAILING`] seeds with a violation or failed metric,
    /// ascending.
    pub failing: Vec<FailingSeed>,
    /// Under `--swarm`: per mix, seeds run and violations found.
    pub mixes: BTreeMap<Mix, MixStats>,
    /// Under `--check-determinism`: seeds whose two runs differed.
    pub diverged_seeds: u64,
    pub first_diverged: Option<u64>,
    /// The article's production metrics over all seeds.
    pub production: production::Production,
    /// Per-seed distributions of the checker's metrics (the report's charts).
    pub seed_stats: seed_stats::SeedStats,
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Merges two ascending lists of failing seeds, keeping the lowest.
fn merge_failing(a: Vec<FailingSeed>, b: Vec<FailingSeed>) -> Vec<FailingSeed> {
    let mut all = a;
    all.extend(b);
    all.sort_by_key(|f| f.seed);
    all.dedup_by_key(|f| f.seed);
    all.truncate(KEPT_FAILING);
    all
}

impl Aggregate {
    // Folds in one seed's result, not another aggregate: `ops::Add` would
    // promise `Aggregate + Aggregate`, which is `merge`.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, r: &SeedResult) -> Aggregate {
        self.seeds += 1;
        self.events += r.events;
        for kind in r.report.kinds() {
            let i = kind as usize;
            self.failing_seeds[i] += 1;
            self.first_seed[i] = min_opt(self.first_seed[i], Some(r.seed));
        }
        self.seeds_with_stale_attempts += r.report.info.hazard_reached() as u64;
        for kind in ViolationKind::ALL {
            self.seeds_with_hazard[kind as usize] += r.report.hazard_seen(kind) as u64;
        }
        self.fence_rejected_total += r.report.info.fence_rejected_total;
        self.seeds_with_unfinished += (r.unfinished > 0) as u64;
        self.seeds_at_event_budget += r.hit_event_budget as u64;
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
        h.word(r.seed);
        h.word(r.trace_hash);
        self.digest = self.digest.wrapping_add(h.finish());
        let fails = !r.report.is_clean() || !r.failed_metrics.is_empty();
        let worth_keeping = self.failing.len() < KEPT_FAILING
            || self.failing.last().is_some_and(|l| r.seed < l.seed);
        if fails && worth_keeping {
            let detail = FailingSeed {
                seed: r.seed,
                kinds: r.report.kinds().collect(),
                failed_metrics: r.failed_metrics.clone(),
                trace_hash: r.trace_hash,
                events: r.events,
                mix: r.mix,
            };
            self.failing = merge_failing(std::mem::take(&mut self.failing), vec![detail]);
        }
        if let Some(mix) = r.mix {
            let m = self.mixes.entry(mix).or_default();
            m.seeds += 1;
            for kind in r.report.kinds() {
                m.failing_seeds[kind as usize] += 1;
            }
        }
        if r.diverged {
            self.diverged_seeds += 1;
            self.first_diverged = min_opt(self.first_diverged, Some(r.seed));
        }
        self.production.add(&r.report.metrics);
        self.seed_stats.add_mut(r.seed, &r.report);
        self
    }

    pub fn merge(mut self, o: Aggregate) -> Aggregate {
        self.seeds += o.seeds;
        self.events += o.events;
        for i in 0..VIOLATION_KINDS {
            self.failing_seeds[i] += o.failing_seeds[i];
            self.first_seed[i] = min_opt(self.first_seed[i], o.first_seed[i]);
        }
        self.seeds_with_stale_attempts += o.seeds_with_stale_attempts;
        for i in 0..VIOLATION_KINDS {
            self.seeds_with_hazard[i] += o.seeds_with_hazard[i];
        }
        self.fence_rejected_total += o.fence_rejected_total;
        self.seeds_with_unfinished += o.seeds_with_unfinished;
        self.seeds_at_event_budget += o.seeds_at_event_budget;
        self.metric_failures += o.metric_failures;
        self.first_metric_failure = match (self.first_metric_failure, o.first_metric_failure) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.digest = self.digest.wrapping_add(o.digest);
        self.failing = merge_failing(self.failing, o.failing);
        for (mix, stats) in o.mixes {
            let m = self.mixes.entry(mix).or_default();
            m.seeds += stats.seeds;
            for i in 0..VIOLATION_KINDS {
                m.failing_seeds[i] += stats.failing_seeds[i];
            }
        }
        self.diverged_seeds += o.diverged_seeds;
        self.first_diverged = min_opt(self.first_diverged, o.first_diverged);
        self.production.merge(&o.production);
        self.seed_stats = self.seed_stats.merge(o.seed_stats);
        self
    }
}

/// A scenario's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioResult {
    pub name: String,
    pub path: String,
    pub protocol: String,
    /// FNV-1a of the scenario file, for the repro line.
    pub source_hash: u64,
    /// The seed range swept (before any sharding).
    pub seeds: Range<u64>,
    pub cfg: SweepConfig,
    pub agg: Aggregate,
    /// Why the expectation was not met (empty: met).
    pub problems: Vec<String>,
    /// The seed to replay first: the lowest seed with an unexpected
    /// violation or failed assertion, else the lowest with any violation.
    pub replay_seed: Option<u64>,
    /// Under `--check-determinism`: the first differing event of the lowest
    /// diverging seed.
    pub divergence: Option<String>,
}

impl ScenarioResult {
    pub fn met(&self) -> bool {
        self.problems.is_empty()
    }

    /// The one command that reproduces `seed` of this scenario exactly.
    pub fn repro(&self, seed: u64) -> String {
        repro_command(&self.path, seed, self.cfg.swarm, self.source_hash)
    }
}

/// The one command that reproduces `seed` of the scenario at `path`: with
/// `--swarm` when the seed ran swarmed (it changes the run), and the
/// version and file hash it ran with, so `replay` can warn when either
/// differs and the replay may not be the same run.
pub fn repro_command(path: &str, seed: u64, swarm: bool, source_hash: u64) -> String {
    format!(
        "fencesim replay {} --seed {seed}{} --expect-version {} --expect-hash {source_hash:016x}",
        shell_quote(path),
        if swarm { " --swarm" } else { "" },
        env!("CARGO_PKG_VERSION"),
    )
}

/// `path` as one shell word: unchanged when it is plain, single-quoted else.
pub fn shell_quote(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=,@".contains(c));
    if plain {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', "'\\''"))
    }
}

/// Runs `seeds` of `scenario` on `jobs` threads and judges them.
pub fn run_scenario(scenario: &Scenario, seeds: Range<u64>, jobs: usize) -> ScenarioResult {
    sweep(scenario, seeds, jobs, &SweepConfig::default(), &|| {})
}

/// Runs the seeds of `seeds` that fall in `cfg.shard` on `jobs` threads,
/// calling `tick` once per seed finished (a progress bar), and judges them.
pub fn sweep(
    scenario: &Scenario,
    seeds: Range<u64>,
    jobs: usize,
    cfg: &SweepConfig,
    tick: &(dyn Fn() + Sync),
) -> ScenarioResult {
    let start = seeds.start;
    let agg = pool::install(jobs, || {
        seeds
            .clone()
            .into_par_iter()
            .filter(|&seed| shard::runs(cfg.shard, start, seed))
            .fold(Aggregate::default, |acc, seed| {
                let r = run_seed_with(scenario, seed, cfg);
                tick();
                acc.add(&r)
            })
            .reduce(Aggregate::default, Aggregate::merge)
    });
    let divergence = agg
        .first_diverged
        .map(|seed| determinism::explain(scenario, seed, cfg.swarm));
    judge_sweep(scenario, seeds, cfg, agg, divergence)
}

pub fn judge(scenario: &Scenario, agg: Aggregate) -> ScenarioResult {
    judge_sweep(
        scenario,
        scenario.seeds.clone(),
        &SweepConfig::default(),
        agg,
        None,
    )
}

/// The kinds a clean scenario's vacuity guard judges when it names none
/// (`must_find`): those whose hazard puts a protection to the test (a fence,
/// a compare-and-delete, an idempotency key, STONITH, a lease server's
/// expiry). A write with a token, a second grant or a crash happens in
/// nearly every run, so `unissued_token`, `token_order` and `liveness`
/// hazards alone do not make a run meaningful.
pub const VACUITY_KINDS: [ViolationKind; 7] = [
    ViolationKind::StaleWrite,
    ViolationKind::LostUpdate,
    ViolationKind::UnsafeRelease,
    ViolationKind::DuplicateEffect,
    ViolationKind::TwoActives,
    ViolationKind::ExpiredRenewal,
    ViolationKind::SupersededEffect,
];

/// The vacuity guard: the kinds the scenario expects (its `must_find`
/// kinds, else [`VACUITY_KINDS`]) are judged by their own hazards; a result
/// means something only if one of those hazards happened in at least
/// [`VACUITY_MIN_FRACTION`] of the seeds. The problem names each hazard.
pub fn vacuity(expect: &crate::scenario::expect::Expectation, agg: &Aggregate) -> Option<String> {
    let kinds: Vec<ViolationKind> = if expect.must_find.is_empty() {
        VACUITY_KINDS.to_vec()
    } else {
        expect.must_find.iter().map(|&(k, _)| k).collect()
    };
    let seeds = agg.seeds.max(1);
    let reached = |k: ViolationKind| agg.seeds_with_hazard[k as usize];
    if kinds
        .iter()
        .any(|&k| reached(k) as f64 / seeds as f64 >= VACUITY_MIN_FRACTION)
    {
        return None;
    }
    let hazards: Vec<String> = kinds
        .iter()
        .map(|&k| format!("{} ({k}) in {}/{seeds}", k.hazard(), reached(k)))
        .collect();
    Some(format!(
        "vacuous: no hazard its checks judge happened in {:.0}% of seeds — {} — so a clean result proves nothing",
        VACUITY_MIN_FRACTION * 100.0,
        hazards.join("; ")
    ))
}

pub fn judge_sweep(
    scenario: &Scenario,
    seeds: Range<u64>,
    cfg: &SweepConfig,
    agg: Aggregate,
    divergence: Option<String>,
) -> ScenarioResult {
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
    // A shard sees a fraction of the seeds: thresholds over all seeds
    // (`must_find` counts, the vacuity guard) are judged by `merge`; what
    // one seed proves wrong (unexpected kinds, metrics) fails a shard too.
    let whole = cfg.shard.is_none();
    for &(kind, min) in expect.must_find.iter().filter(|_| whole) {
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
    if whole && agg.seeds > 0 {
        if let Some(problem) = vacuity(expect, &agg) {
            problems.push(problem);
        }
    }
    if agg.seeds_at_event_budget > 0 {
        problems.push(format!(
            "{} seeds stopped at the event budget of {} events per run, before max_time_ms: shorten max_time_ms or slow the timers (an unfinished worker there is no liveness evidence)",
            agg.seeds_at_event_budget,
            sim::EVENTS_MAX
        ));
    }
    if let Some(seed) = agg.first_diverged {
        problems.push(format!(
            "nondeterministic: {} seeds ran differently twice (seed {seed}: {})",
            agg.diverged_seeds,
            divergence.as_deref().unwrap_or("not re-run")
        ));
    }
    if replay_seed.is_none() {
        replay_seed = agg.first_seed.iter().flatten().min().copied();
    }
    ScenarioResult {
        name: scenario.name.clone(),
        path: scenario.path.display().to_string(),
        protocol: protocol_label(scenario),
        source_hash: scenario.source_hash,
        seeds,
        cfg: *cfg,
        agg,
        problems,
        replay_seed,
        divergence,
    }
}

/// Combines per-scenario digests in suite order into one number.
pub fn suite_digest(results: &[ScenarioResult]) -> u64 {
    results
        .iter()
        .fold(0u64, |d, r| d.wrapping_mul(31).wrapping_add(r.agg.digest))
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
    if p.fence != crate::protocol::ProtocolConfig::new(p.kind, p.lease_ttl_ns).fence {
        label.push_str(if p.fence { "+fence" } else { "+no_fence" });
    }
    if p.lock_delay_ns > 0 {
        label.push_str("+lock_delay");
    }
    if p.fsync_always {
        label.push_str("+fsync");
    }
    if p.restart_delay_ns > 0 {
        label.push_str("+restart_delay");
    }
    label
}
