//! `results.json`: the machine-readable side of a report directory, and the
//! single source the HTML page and the Markdown summary are rendered from —
//! so the three can never disagree.
//!
//! Serde lives here and nowhere below `report/`: these are plain mirror
//! types filled from the suite, checker and simulator types. The format is
//! documented in `docs/reports.md` (schema version [`SCHEMA_VERSION`]).
//! Nothing machine- or moment-specific goes in (no timestamps, no thread
//! counts), so the same command gives byte-identical files anywhere.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{Report, ViolationKind, METRIC_NAMES};
use crate::history::History;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub fencesim_version: String,
    /// `run` (many seeds per scenario) or `replay` (one seed).
    pub command: String,
    pub scenarios: Vec<ScenarioResults>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioResults {
    pub name: String,
    /// As given on the command line (relative paths stay relative).
    pub path: String,
    pub description: String,
    pub protocol: String,
    pub seed_start: u64,
    pub seeds: u64,
    /// Violation kind -> seeds in which it appeared (every kind listed).
    pub failing_seeds: BTreeMap<String, u64>,
    pub seeds_with_stale_attempts: u64,
    pub fence_rejected_total: u64,
    pub seeds_with_unfinished: u64,
    pub expectation_met: bool,
    /// Why the expectation was not met (empty when met).
    pub problems: Vec<String>,
    pub replay_seed: Option<u64>,
    /// Wrapping sum over seeds of FNV(seed, trace hash), hex.
    pub digest: String,
    pub metrics: Vec<MetricSeries>,
    /// The drawn seed, when there is one worth drawing.
    pub timeline: Option<TimelineResults>,
    /// `fencesim live`: one line per trial (faults, verdict, history file);
    /// absent for simulated runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<String>,
}

/// A metric's distribution over seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSeries {
    pub name: String,
    pub description: String,
    /// (value, seeds with that value), ascending by value.
    pub seeds_per_value: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineResults {
    pub seed: u64,
    /// Why this seed was drawn.
    pub reason: String,
    pub replay_command: String,
    /// Path of the standalone SVG, relative to the report directory.
    pub svg: String,
    pub trace_hash: String,
    pub records: u64,
    pub end_ns: u64,
    /// Every checker metric of this seed, by name.
    pub metrics: BTreeMap<String, u64>,
    pub violations: Vec<ViolationResults>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationResults {
    pub kind: String,
    pub key: String,
    pub explanation: String,
    pub evidence: Vec<EvidenceRecord>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    pub seq: u64,
    pub t_true_ns: u64,
    pub node: String,
    pub kind: String,
    /// `history.describe` of the record.
    pub text: String,
}

/// Every violation kind, zero-filled, so consumers need not guess.
pub fn kinds_map(counts: impl Fn(ViolationKind) -> u64) -> BTreeMap<String, u64> {
    ViolationKind::ALL
        .into_iter()
        .map(|k| (k.name().to_string(), counts(k)))
        .collect()
}

pub fn metrics_map(report: &Report) -> BTreeMap<String, u64> {
    METRIC_NAMES
        .iter()
        .filter_map(|n| Some((n.to_string(), report.metric(n)?)))
        .collect()
}

pub fn violations(h: &History, report: &Report) -> Vec<ViolationResults> {
    report
        .violations
        .iter()
        .map(|v| ViolationResults {
            kind: v.kind.name().to_string(),
            key: h.key_name(v.key).to_string(),
            explanation: v.explanation.clone(),
            evidence: v
                .evidence
                .iter()
                .filter_map(|s| h.by_seq(*s))
                .map(|e| EvidenceRecord {
                    seq: e.seq,
                    t_true_ns: e.t_true_ns,
                    node: h.node_name(e.node).to_string(),
                    kind: e.kind.name().to_string(),
                    text: h.describe(e).trim().to_string(),
                })
                .collect(),
        })
        .collect()
}

/// Pretty JSON with a trailing newline.
pub fn to_json(r: &Results) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("results serialize");
    s.push('\n');
    s
}
