//! `fencesim validate --format json` and the merge of `--shard I/N` runs:
//! a versioned wire form of a validation (schema `fencesim-validate`) that
//! keeps every seed's verdict, so shards combine into exactly the report
//! the unsharded run prints.
//!
//! Validation keeps per-seed rows rather than an aggregate because each
//! seed costs process start-ups (sweeps are thousands of seeds, not
//! millions) and because the stop rule — [`IDENTICAL_ERRORS_MAX`]
//! consecutive identical implementation errors end a scenario — is about
//! consecutive seeds, which striding splits across shards: the merge
//! re-applies it in seed order. The one case it cannot make exact is a
//! shard that stopped where the unsharded run would have gone on (the
//! errors repeated within the shard but not between its seeds); the merge
//! then reports the seeds that ran, and the exit code is 3 either way.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::{ScenarioValidation, IDENTICAL_ERRORS_MAX};
use crate::suite::shard::ShardJson;

pub const SCHEMA: &str = "fencesim-validate";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ValidateJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    /// The `--node ROLE=CMD` specs, as given.
    pub nodes: Vec<String>,
    pub step_timeout_ms: u64,
    /// Present when this is one shard of a validation.
    pub shard: Option<ShardJson>,
    pub scenarios: Vec<ScenarioJson>,
    /// Judged runs with a violation of the implementation's.
    pub failing_runs: u64,
    /// Runs ended by an implementation error (not judged).
    pub impl_errors: u64,
    /// The exit code `fencesim validate` returned with this report.
    pub exit_code: u8,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioJson {
    pub name: String,
    pub path: String,
    pub source_hash: String,
    /// The range `start..end` before sharding.
    pub seed_start: u64,
    pub seed_end: u64,
    /// The seeds run, ascending.
    pub seeds: Vec<SeedJson>,
    /// The lowest seed with a violation of the implementation's.
    pub first_failure: Option<FailureJson>,
    pub stopped: Option<StoppedJson>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SeedJson {
    pub seed: u64,
    /// Null when an implementation error ended the run.
    pub trace_hash: Option<String>,
    /// Violations that are the implementation's.
    pub own: Vec<String>,
    /// Violations that are the scenario's.
    pub scenario: Vec<String>,
    /// The built-in nodes' violations on the same seed.
    pub baseline: Vec<String>,
    pub impl_error: Option<ImplErrorJson>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ImplErrorJson {
    pub node: String,
    pub kind: String,
    pub detail: String,
    /// The full diagnostic, as printed.
    pub message: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FailureJson {
    pub seed: u64,
    /// The violations with their evidence, attribution and repro line, as printed.
    pub details: String,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StoppedJson {
    pub last_seed: u64,
    pub skipped: u64,
}

fn names(kinds: &[&'static str]) -> Vec<String> {
    kinds.iter().map(|k| k.to_string()).collect()
}

/// The wire form of one scenario's validation; `details` is the rendered
/// first failure (the CLI renders it, as it prints it).
pub fn scenario_json(
    v: &ScenarioValidation,
    source_hash: u64,
    range: Range<u64>,
    details: Option<String>,
) -> ScenarioJson {
    let seeds = v
        .seeds
        .iter()
        .map(|s| match &s.verdict {
            Ok(j) => SeedJson {
                seed: s.seed,
                trace_hash: Some(format!("{:016x}", j.trace_hash)),
                own: names(&j.own),
                scenario: names(&j.scenario),
                baseline: names(&s.baseline),
                impl_error: None,
            },
            Err(e) => SeedJson {
                seed: s.seed,
                trace_hash: None,
                own: Vec::new(),
                scenario: Vec::new(),
                baseline: names(&s.baseline),
                impl_error: Some(ImplErrorJson {
                    node: e.node.clone(),
                    kind: e.kind.name().to_string(),
                    detail: e.detail.clone(),
                    message: e.to_string(),
                }),
            },
        })
        .collect();
    ScenarioJson {
        name: v.name.clone(),
        path: v.path.clone(),
        source_hash: format!("{source_hash:016x}"),
        seed_start: range.start,
        seed_end: range.end,
        seeds,
        first_failure: v
            .first_failure
            .as_ref()
            .zip(details)
            .map(|((seed, _), details)| FailureJson {
                seed: *seed,
                details,
            }),
        stopped: v.stopped.as_ref().map(|s| StoppedJson {
            last_seed: s.last_seed,
            skipped: s.skipped,
        }),
    }
}

/// (failing runs, implementation errors, exit code) of a validation.
pub fn verdict(scenarios: &[ScenarioJson]) -> (u64, u64, u8) {
    let seeds = || scenarios.iter().flat_map(|s| &s.seeds);
    let errors = seeds().filter(|s| s.impl_error.is_some()).count() as u64;
    let failing = seeds()
        .filter(|s| s.impl_error.is_none() && !s.own.is_empty())
        .count() as u64;
    let code = if errors > 0 {
        crate::suite::exit::EXIT_INTERNAL
    } else if failing > 0 {
        crate::suite::exit::EXIT_FAILED
    } else {
        crate::suite::exit::EXIT_OK
    };
    (failing, errors, code)
}

fn same_error(a: &SeedJson, b: &SeedJson) -> bool {
    match (&a.impl_error, &b.impl_error) {
        (Some(x), Some(y)) => (&x.node, &x.kind, &x.detail) == (&y.node, &y.kind, &y.detail),
        _ => false,
    }
}

/// One scenario's shards (same identity, checked by the caller) as the
/// unsharded run reports it: seeds in order, the stop rule re-applied over
/// the seeds run without a gap, the lowest first failure before the stop.
pub fn merge_scenario(parts: &[ScenarioJson]) -> ScenarioJson {
    let first = &parts[0];
    let mut seeds: Vec<SeedJson> = parts.iter().flat_map(|p| p.seeds.clone()).collect();
    seeds.sort_by_key(|s| s.seed);
    let mut stopped = None;
    for (i, s) in seeds.iter().enumerate() {
        if s.seed != first.seed_start + i as u64 {
            break; // a shard stopped early: the order beyond is unknown
        }
        let Some(from) = (i + 1).checked_sub(IDENTICAL_ERRORS_MAX) else {
            continue;
        };
        let tail = &seeds[from..=i];
        if tail.iter().all(|t| same_error(t, &tail[0])) {
            stopped = Some(StoppedJson {
                last_seed: s.seed,
                skipped: first.seed_end - s.seed - 1,
            });
            break;
        }
    }
    if let Some(stop) = stopped {
        seeds.retain(|s| s.seed <= stop.last_seed);
    } else if let Some(stop) = parts
        .iter()
        .filter_map(|p| p.stopped)
        .min_by_key(|s| s.last_seed)
    {
        // Not exact (module doc): say what did not run.
        stopped = Some(StoppedJson {
            last_seed: stop.last_seed,
            skipped: (first.seed_end - first.seed_start) - seeds.len() as u64,
        });
    }
    let last_run = seeds.last().map_or(first.seed_start, |s| s.seed);
    let first_failure = parts
        .iter()
        .filter_map(|p| p.first_failure.as_ref())
        .filter(|f| f.seed <= last_run)
        .min_by_key(|f| f.seed)
        .cloned();
    ScenarioJson {
        name: first.name.clone(),
        path: first.path.clone(),
        source_hash: first.source_hash.clone(),
        seed_start: first.seed_start,
        seed_end: first.seed_end,
        seeds,
        first_failure,
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(seed: u64, error: Option<&str>, own: &[&str]) -> SeedJson {
        SeedJson {
            seed,
            trace_hash: error.is_none().then(|| format!("{seed:016x}")),
            own: own.iter().map(|s| s.to_string()).collect(),
            scenario: Vec::new(),
            baseline: Vec::new(),
            impl_error: error.map(|d| ImplErrorJson {
                node: "resource/0".into(),
                kind: "step timeout".into(),
                detail: d.into(),
                message: d.into(),
            }),
        }
    }

    fn part(seeds: Vec<SeedJson>, first_failure: Option<u64>) -> ScenarioJson {
        ScenarioJson {
            name: "s".into(),
            path: "s.toml".into(),
            source_hash: "0".repeat(16),
            seed_start: 10,
            seed_end: 20,
            seeds,
            first_failure: first_failure.map(|seed| FailureJson {
                seed,
                details: format!("seed {seed}"),
            }),
            stopped: None,
        }
    }

    #[test]
    fn shards_interleave_into_seed_order_with_the_lowest_first_failure() {
        let a = part(
            (10..20).step_by(2).map(|s| seed(s, None, &[])).collect(),
            None,
        );
        let mut odd: Vec<SeedJson> = (11..20).step_by(2).map(|s| seed(s, None, &[])).collect();
        odd[1] = seed(13, None, &["stale_write"]);
        odd[3] = seed(17, None, &["stale_write"]);
        let b = part(odd, Some(13));
        let merged = merge_scenario(&[b, a]);
        assert_eq!(
            merged.seeds.iter().map(|s| s.seed).collect::<Vec<_>>(),
            (10..20).collect::<Vec<_>>()
        );
        assert_eq!(merged.first_failure.map(|f| f.seed), Some(13));
        assert_eq!(merged.stopped, None);
        assert_eq!(
            verdict(&[merge_scenario(&[part(vec![seed(10, None, &["x"])], None)])]).2,
            1
        );
    }

    #[test]
    fn identical_errors_on_consecutive_seeds_across_shards_stop_the_merged_scenario() {
        // Seeds 12, 13, 14 fail identically, each pair split across the shards.
        let err = |s| seed(s, Some("no step_done"), &[]);
        let a = part(
            vec![
                seed(10, None, &[]),
                err(12),
                err(14),
                seed(16, None, &["x"]),
            ],
            Some(16),
        );
        let b = part(
            vec![seed(11, None, &[]), err(13), seed(15, None, &[])],
            None,
        );
        let merged = merge_scenario(&[a, b]);
        assert_eq!(
            merged.stopped,
            Some(StoppedJson {
                last_seed: 14,
                skipped: 5
            })
        );
        assert_eq!(merged.seeds.last().map(|s| s.seed), Some(14));
        assert_eq!(merged.first_failure, None, "seed 16 ran only in the shard");
        assert_eq!(
            verdict(&[merged]),
            (0, 3, crate::suite::exit::EXIT_INTERNAL)
        );
    }
}
