//! The JSON report of `fencesim run --format json` (and `fencesim merge`):
//! a stable, versioned schema, documented field by field in
//! `docs/reproducing.md`.
//!
//! These are wire types, separate from [`Aggregate`] on purpose: internal
//! structs may change, the schema changes only with `schema_version`.
//! Hashes and digests are 16-digit lower-case hex strings (JSON numbers lose
//! precision above 2^53 in many readers); per-kind counters are objects
//! keyed by violation kind name. Nothing in it depends on timing, job count
//! or sharding, so a merged report equals the unsharded one byte for byte.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{ViolationKind, VIOLATION_KINDS};
pub use crate::suite::shard::ShardJson;
use crate::suite::{swarm, Aggregate, FailingSeed, MixStats, ScenarioResult, Shard, SweepConfig};

pub const SCHEMA: &str = "fencesim-run";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    pub swarm: bool,
    pub check_determinism: bool,
    /// Present when this is one shard of a sweep.
    pub shard: Option<ShardJson>,
    pub scenarios: Vec<ScenarioJson>,
    pub totals: TotalsJson,
    /// Every expectation met (and, with `check_determinism`, no divergence).
    pub met: bool,
    /// The exit code `fencesim run` returned with this report.
    pub exit_code: u8,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TotalsJson {
    pub seeds: u64,
    pub events: u64,
    pub digest: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioJson {
    pub name: String,
    pub path: String,
    pub source_hash: String,
    pub protocol: String,
    pub seed_start: u64,
    pub seed_end: u64,
    pub met: bool,
    pub problems: Vec<String>,
    pub replay_seed: Option<u64>,
    /// The command reproducing `replay_seed`.
    pub repro: Option<String>,
    pub divergence: Option<String>,
    pub aggregate: AggregateJson,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AggregateJson {
    pub seeds: u64,
    pub events: u64,
    pub failing_seeds: BTreeMap<String, u64>,
    pub first_failing_seed: BTreeMap<String, Option<u64>>,
    pub seeds_with_stale_attempts: u64,
    /// Per kind: seeds that reached the kind's hazard (vacuity guard).
    #[serde(default)]
    pub seeds_with_hazard: BTreeMap<String, u64>,
    pub fence_rejected_total: u64,
    pub seeds_with_unfinished: u64,
    /// Absent in files written before it existed.
    #[serde(default)]
    pub seeds_at_event_budget: u64,
    pub metric_failures: u64,
    pub first_metric_failure: Option<MetricFailureJson>,
    pub digest: String,
    pub failing: Vec<FailingSeedJson>,
    pub swarm_mixes: Vec<MixJson>,
    pub diverged_seeds: u64,
    pub first_diverged_seed: Option<u64>,
    pub production: crate::suite::production::Production,
    /// Per-seed metric histograms (the report's charts); absent in files
    /// written before the sweep kept them.
    #[serde(default)]
    pub seed_stats: crate::suite::seed_stats::SeedStats,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MetricFailureJson {
    pub seed: u64,
    pub message: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FailingSeedJson {
    pub seed: u64,
    pub violations: Vec<String>,
    pub failed_metrics: Vec<String>,
    pub trace_hash: String,
    pub events: u64,
    pub swarm_mix: Option<Vec<String>>,
    pub repro: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MixJson {
    pub faults: Vec<String>,
    pub seeds: u64,
    pub failing_seeds: BTreeMap<String, u64>,
}

pub fn hex(v: u64) -> String {
    format!("{v:016x}")
}

pub fn parse_hex(s: &str) -> Result<u64, String> {
    u64::from_str_radix(s, 16).map_err(|_| format!("{s:?} is not a 16-digit hex hash"))
}

fn per_kind<T: Copy>(v: &[T; VIOLATION_KINDS]) -> BTreeMap<String, T> {
    ViolationKind::ALL
        .iter()
        .map(|k| (k.name().to_string(), v[*k as usize]))
        .collect()
}

fn from_per_kind<T: Copy + Default>(
    m: &BTreeMap<String, T>,
) -> Result<[T; VIOLATION_KINDS], String> {
    let mut out = [T::default(); VIOLATION_KINDS];
    for (name, v) in m {
        let k = ViolationKind::from_name(name)
            .ok_or_else(|| format!("unknown violation kind {name:?}"))?;
        out[k as usize] = *v;
    }
    Ok(out)
}

fn kinds_from(names: &[String]) -> Result<Vec<ViolationKind>, String> {
    names
        .iter()
        .map(|n| ViolationKind::from_name(n).ok_or_else(|| format!("unknown violation kind {n:?}")))
        .collect()
}

fn mix_names(mix: swarm::Mix) -> Vec<String> {
    swarm::names(mix).into_iter().map(String::from).collect()
}

impl AggregateJson {
    pub fn from_agg(a: &Aggregate, r: &ScenarioResult) -> AggregateJson {
        AggregateJson {
            seeds: a.seeds,
            events: a.events,
            failing_seeds: per_kind(&a.failing_seeds),
            first_failing_seed: per_kind(&a.first_seed),
            seeds_with_stale_attempts: a.seeds_with_stale_attempts,
            seeds_with_hazard: per_kind(&a.seeds_with_hazard),
            fence_rejected_total: a.fence_rejected_total,
            seeds_with_unfinished: a.seeds_with_unfinished,
            seeds_at_event_budget: a.seeds_at_event_budget,
            metric_failures: a.metric_failures,
            first_metric_failure: a.first_metric_failure.as_ref().map(|(seed, message)| {
                MetricFailureJson {
                    seed: *seed,
                    message: message.clone(),
                }
            }),
            digest: hex(a.digest),
            failing: a
                .failing
                .iter()
                .map(|f| FailingSeedJson {
                    seed: f.seed,
                    violations: f.kinds.iter().map(|k| k.name().to_string()).collect(),
                    failed_metrics: f.failed_metrics.clone(),
                    trace_hash: hex(f.trace_hash),
                    events: f.events,
                    swarm_mix: f.mix.map(mix_names),
                    repro: r.repro(f.seed),
                })
                .collect(),
            swarm_mixes: a
                .mixes
                .iter()
                .map(|(mix, m)| MixJson {
                    faults: mix_names(*mix),
                    seeds: m.seeds,
                    failing_seeds: per_kind(&m.failing_seeds),
                })
                .collect(),
            diverged_seeds: a.diverged_seeds,
            first_diverged_seed: a.first_diverged,
            production: a.production.clone(),
            seed_stats: a.seed_stats.clone(),
        }
    }

    pub fn to_agg(&self) -> Result<Aggregate, String> {
        let mut mixes = BTreeMap::new();
        for m in &self.swarm_mixes {
            let mix = swarm::from_names(m.faults.iter().map(String::as_str))?;
            let stats = MixStats {
                seeds: m.seeds,
                failing_seeds: from_per_kind(&m.failing_seeds)?,
            };
            mixes.insert(mix, stats);
        }
        let failing = self
            .failing
            .iter()
            .map(|f| {
                Ok(FailingSeed {
                    seed: f.seed,
                    kinds: kinds_from(&f.violations)?,
                    failed_metrics: f.failed_metrics.clone(),
                    trace_hash: parse_hex(&f.trace_hash)?,
                    events: f.events,
                    mix: f
                        .swarm_mix
                        .as_ref()
                        .map(|m| swarm::from_names(m.iter().map(String::as_str)))
                        .transpose()?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Aggregate {
            seeds: self.seeds,
            events: self.events,
            failing_seeds: from_per_kind(&self.failing_seeds)?,
            first_seed: from_per_kind(&self.first_failing_seed)?,
            seeds_with_stale_attempts: self.seeds_with_stale_attempts,
            seeds_with_hazard: from_per_kind(&self.seeds_with_hazard)?,
            fence_rejected_total: self.fence_rejected_total,
            seeds_with_unfinished: self.seeds_with_unfinished,
            seeds_at_event_budget: self.seeds_at_event_budget,
            metric_failures: self.metric_failures,
            first_metric_failure: self
                .first_metric_failure
                .as_ref()
                .map(|m| (m.seed, m.message.clone())),
            digest: parse_hex(&self.digest)?,
            failing,
            mixes,
            diverged_seeds: self.diverged_seeds,
            first_diverged: self.first_diverged_seed,
            production: self.production.clone(),
            seed_stats: self.seed_stats.clone(),
        })
    }
}

impl ScenarioJson {
    pub fn from_result(r: &ScenarioResult) -> ScenarioJson {
        ScenarioJson {
            name: r.name.clone(),
            path: r.path.clone(),
            source_hash: hex(r.source_hash),
            protocol: r.protocol.clone(),
            seed_start: r.seeds.start,
            seed_end: r.seeds.end,
            met: r.met(),
            problems: r.problems.clone(),
            replay_seed: r.replay_seed,
            repro: r.replay_seed.map(|s| r.repro(s)),
            divergence: r.divergence.clone(),
            aggregate: AggregateJson::from_agg(&r.agg, r),
        }
    }
}

/// The whole report for `results` swept under `cfg`.
pub fn report(results: &[ScenarioResult], cfg: &SweepConfig, exit_code: u8) -> RunJson {
    RunJson {
        schema: SCHEMA.to_string(),
        schema_version: SCHEMA_VERSION,
        fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
        swarm: cfg.swarm,
        check_determinism: cfg.check_determinism,
        shard: cfg.shard.map(|s: Shard| ShardJson {
            index: s.index,
            count: s.count,
        }),
        scenarios: results.iter().map(ScenarioJson::from_result).collect(),
        totals: TotalsJson {
            seeds: results.iter().map(|r| r.agg.seeds).sum(),
            events: results.iter().map(|r| r.agg.events).sum(),
            digest: hex(crate::suite::suite_digest(results)),
        },
        met: results.iter().all(|r| r.met()),
        exit_code,
    }
}
