//! A campaign's file: its result (`--format json`, `--out FILE`) and its
//! checkpoint are one format, `fencesim-campaign` version 1. A slice
//! stopped early (Ctrl-C, SIGTERM, a killed task's last periodic write) is
//! a file with `complete: false`; rerun with the same campaign seed, budget,
//! shard and scenarios, it continues from its `seeds` on ([`resume`]).
//!
//! Nothing in it depends on timing, job count or batches, but `spent_ms`,
//! which only a time budget has: so the merge of a seed-budget campaign's
//! slices equals the unsharded campaign's file byte for byte.

use serde::{Deserialize, Serialize};

use super::findings::Failure;
use super::{Budget, Findings, Progress, Slice};
use crate::scenario::Scenario;
use crate::suite::shard::ShardJson;
use crate::suite::Shard;

pub const SCHEMA: &str = "fencesim-campaign";
pub const SCHEMA_VERSION: u32 = 1;

/// A scenario a campaign ran, as its file names it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRef {
    pub name: String,
    pub path: String,
    /// FNV-1a of the file, 16 hex digits.
    pub source_hash: String,
}

impl ScenarioRef {
    pub fn of(s: &Scenario) -> ScenarioRef {
        ScenarioRef {
            name: s.name.clone(),
            path: s.path.display().to_string(),
            source_hash: format!("{:016x}", s.source_hash),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CampaignJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    pub campaign_seed: u64,
    pub budget: Budget,
    /// Present when this is one slice of a campaign.
    pub shard: Option<ShardJson>,
    pub scenarios: Vec<ScenarioRef>,
    /// The budget is spent; `false`: a checkpoint to resume.
    pub complete: bool,
    /// Draws run (each over every scenario).
    pub seeds: u64,
    pub runs: u64,
    pub failing_runs: u64,
    pub events: u64,
    /// Milliseconds spent, under a time budget only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_ms: Option<u64>,
    /// Distinct failures, by scenario, then signature.
    pub failures: Vec<Failure>,
    /// Distinct failures no expectation tolerates.
    pub unexpected: u64,
    pub exit_code: u8,
}

impl CampaignJson {
    /// The file of `slice` of a campaign over `scenarios` at `progress`.
    pub fn new(
        slice: &Slice,
        scenarios: Vec<ScenarioRef>,
        progress: &Progress,
        exit_code: u8,
    ) -> CampaignJson {
        let f = &progress.found;
        CampaignJson {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").into(),
            campaign_seed: slice.campaign_seed,
            budget: slice.budget,
            shard: slice.shard.map(|s| ShardJson {
                index: s.index,
                count: s.count,
            }),
            scenarios,
            complete: progress.complete(slice),
            seeds: progress.done,
            runs: f.runs,
            failing_runs: f.failing_runs,
            events: f.events,
            spent_ms: matches!(slice.budget, Budget::Secs(_)).then_some(progress.spent_ms),
            failures: f.failures.values().cloned().collect(),
            unexpected: f.unexpected(),
            exit_code,
        }
    }

    pub fn slice(&self) -> Slice {
        Slice {
            campaign_seed: self.campaign_seed,
            budget: self.budget,
            shard: self.shard.map(|s| Shard {
                index: s.index,
                count: s.count,
            }),
        }
    }

    /// The progress this file records; refuses failures of a scenario it
    /// does not list, and counts that could not come from its draws.
    pub fn progress(&self) -> Result<Progress, String> {
        let mut found = Findings {
            runs: self.runs,
            failing_runs: self.failing_runs,
            events: self.events,
            ..Findings::default()
        };
        if self.runs != self.seeds.saturating_mul(self.scenarios.len() as u64)
            || self.failing_runs > self.runs
        {
            return Err(format!(
                "{} runs ({} failing) cannot come from {} draws over {} scenarios",
                self.runs,
                self.failing_runs,
                self.seeds,
                self.scenarios.len()
            ));
        }
        if let Some(total) = self.slice().draws() {
            if self.seeds > total {
                return Err(format!("{} draws exceed the slice's {total}", self.seeds));
            }
        }
        for f in &self.failures {
            let at = self
                .scenarios
                .iter()
                .position(|s| s.path == f.scenario)
                .ok_or_else(|| format!("a failure of {}, which it does not list", f.scenario))?;
            let hash = u64::from_str_radix(&f.signature, 16)
                .map_err(|_| format!("signature {:?} is not 16 hex digits", f.signature))?;
            found.keep((at, hash), f.clone());
        }
        Ok(Progress {
            done: self.seeds,
            spent_ms: self.spent_ms.unwrap_or(0),
            found,
        })
    }
}

/// Where to pick up `slice` over `scenarios` from `previous` (a file at the
/// `--out` path): its progress when it is this slice's checkpoint or result,
/// an error naming what differs when it belongs to another campaign.
pub fn resume(
    previous: &CampaignJson,
    slice: &Slice,
    scenarios: &[ScenarioRef],
) -> Result<Progress, String> {
    let differs = |what: &str| Err(format!("its {what} differs from this campaign's"));
    if previous.schema != SCHEMA || previous.schema_version != SCHEMA_VERSION {
        return differs("schema");
    }
    if previous.fencesim_version != env!("CARGO_PKG_VERSION") {
        return differs("fencesim version");
    }
    if previous.slice() != *slice {
        return differs("campaign seed, budget or shard");
    }
    if previous.scenarios != scenarios {
        return differs("scenario list (paths, content hashes)");
    }
    previous.progress()
}
