//! The JSON a shard of `fencesim search --shard I/N --json FILE` writes,
//! and its reading back for `fencesim search FILE --merge FILES…`.
//!
//! A search too big for one machine is split across N processes (issue
//! #19's Kubernetes Job runs one per pod). Each writes every run it made —
//! position in the enumeration, trace hash, violations, and for a
//! violating run its placements — so the merge needs neither the
//! implementation nor a re-run: it replays the unsharded search's
//! deduplication over the same enumeration ([`super::tally`]). The file
//! names the scenario by a hash of its text, so shards of different
//! scenarios, K or seed are refused rather than silently mixed.

use serde::{Deserialize, Serialize};

use super::{Placement, Ran, ShardRun};
use crate::check::store_claims::ClaimKind;
use crate::check::ViolationKind;
use crate::history::Kind;
use crate::protocol::NodeId;
use crate::sim::faults::Strike;

/// Format tag; bump on any incompatible change.
pub const FORMAT: &str = "fencesim-search-shard/1";

#[derive(Serialize, Deserialize)]
struct File {
    format: String,
    scenario: String,
    /// FNV-1a of the scenario file's text, hex.
    scenario_hash: String,
    shard: [usize; 2],
    max_faults: usize,
    seed: u64,
    baseline_events: usize,
    total_runs: u64,
    runs: Vec<RanJson>,
}

#[derive(Serialize, Deserialize)]
struct RanJson {
    /// Position, level, trace hash.
    p: u64,
    l: usize,
    h: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    v: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    f: Vec<PlacementJson>,
}

#[derive(Serialize, Deserialize)]
struct PlacementJson {
    node: u16,
    kind: String,
    nth: u32,
    strike: String,
    target: u16,
    #[serde(default)]
    link_nth: u32,
}

/// FNV-1a, 64-bit: a stable fingerprint of the scenario text (the std
/// hasher may change between Rust releases).
pub fn text_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The static name of a violation kind (checker's or store claims').
fn kind_name(name: &str) -> Option<&'static str> {
    ViolationKind::ALL
        .iter()
        .map(|k| k.name())
        .chain(ClaimKind::ALL.iter().map(|k| k.name()))
        .find(|n| *n == name)
}

pub fn to_json(shard: &ShardRun, scenario_path: &str, source: &str) -> String {
    let file = File {
        format: FORMAT.into(),
        scenario: scenario_path.into(),
        scenario_hash: text_hash(source),
        shard: [shard.index, shard.count],
        max_faults: shard.max_faults,
        seed: shard.seed,
        baseline_events: shard.baseline_events,
        total_runs: shard.total_runs,
        runs: shard
            .runs
            .iter()
            .map(|r| RanJson {
                p: r.position,
                l: r.level,
                h: r.trace_hash,
                v: r.violations.iter().map(|v| v.to_string()).collect(),
                f: r.placements
                    .iter()
                    .map(|p| PlacementJson {
                        node: p.node.0,
                        kind: p.kind.name().into(),
                        nth: p.nth,
                        strike: p.strike.name().into(),
                        target: p.target.0,
                        link_nth: p.link_nth,
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string(&file).unwrap_or_else(|e| unreachable!("plain data serializes: {e}"))
}

/// Reads one shard file; `source` is the scenario text it must be of.
/// Errors say what is wrong with which file.
pub fn from_json(text: &str, file: &str, source: &str) -> Result<ShardRun, String> {
    let f: File = serde_json::from_str(text).map_err(|e| {
        format!(
            "{file}:{}:{}: not a search shard file: {e}",
            e.line(),
            e.column()
        )
    })?;
    if f.format != FORMAT {
        return Err(format!(
            "{file}: format {:?}, expected {FORMAT:?}",
            f.format
        ));
    }
    if f.scenario_hash != text_hash(source) {
        return Err(format!(
            "{file}: written for another scenario text ({} hash {}, this one {})",
            f.scenario,
            f.scenario_hash,
            text_hash(source)
        ));
    }
    let runs = f
        .runs
        .into_iter()
        .map(|r| {
            let violations =
                r.v.iter()
                    .map(|v| {
                        kind_name(v).ok_or_else(|| format!("{file}: unknown violation kind {v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
            let placements = r
                .f
                .into_iter()
                .map(|p| {
                    Ok(Placement {
                        node: NodeId(p.node),
                        kind: Kind::from_name(&p.kind)
                            .ok_or_else(|| format!("{file}: unknown event kind {:?}", p.kind))?,
                        nth: p.nth,
                        strike: Strike::from_name(&p.strike)
                            .ok_or_else(|| format!("{file}: unknown strike {:?}", p.strike))?,
                        target: NodeId(p.target),
                        link_nth: p.link_nth,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Ran {
                position: r.p,
                level: r.l,
                trace_hash: r.h,
                violations,
                placements,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if let Some(r) = runs.iter().find(|r| r.level > f.max_faults) {
        return Err(format!(
            "{file}: run {} at level {} of a search with --faults {}",
            r.position, r.level, f.max_faults
        ));
    }
    Ok(ShardRun {
        index: f.shard[0],
        count: f.shard[1],
        max_faults: f.max_faults,
        seed: f.seed,
        baseline_events: f.baseline_events,
        total_runs: f.total_runs,
        runs,
    })
}
