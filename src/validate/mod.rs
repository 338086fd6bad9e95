//! Validating other implementations: a lock service or fenced store
//! written in any language runs as simulated nodes, under the scenario's
//! faults, and is judged by the same checker as the built-in protocols.
//!
//! The simulator already drives every node through the sans-IO [`Node`]
//! trait and builds nodes through a factory, so an external process is just
//! another node ([`process::ProcessNode`]); the history is still built by
//! the harness from what crosses the simulated network, never from the
//! implementation's own account. On top of the foundation's checker, the
//! store is held to its own answers ([`crate::check::store_claims`]).
//!
//! A run is judged only if every process kept the wire protocol
//! (docs/validate.md); otherwise it is an implementation error, never a
//! verdict, and the rest of the suite still runs.
//!
//! Each seed is also run with the built-in nodes (the suite's own
//! [`crate::suite::run_seed`]), the *baseline*: a violation is the
//! scenario's when its `[expect]` allows it or the built-in shows the same
//! kind on the same seed (unfenced scenarios lose updates whatever runs in
//! them), and the implementation's otherwise. Only the implementation's
//! fail a seed.

pub(crate) mod error;
pub(crate) mod process;
pub(crate) mod reaper;
pub mod shard;
pub(crate) mod wire;

/// A scenario stops after this many consecutive seeds end in the same
/// implementation error (a hang would otherwise cost the step timeout on
/// every seed).
pub const IDENTICAL_ERRORS_MAX: usize = 3;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use serde_json::{json, Value};

pub use error::{ImplError, ImplErrorKind};
pub use process::Limits;

use crate::check::{self, store_claims, ViolationKind};
use crate::history::{History, Kind};
use crate::protocol::coordinator::{ReleaseStyle, Replication};
use crate::protocol::resource::{FenceCheck, ResourceConfig};
use crate::protocol::{self, Node, NodeId, Role};
use crate::scenario::Scenario;
use crate::sim::Options;
use process::{Abort, ProcessNode, WriteAcks};
use store_claims::FenceRule;
use wire::Directory;

/// Which roles run as external commands (`sh -c CMD`); `None` = built-in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Implementations {
    pub coordinator: Option<String>,
    pub resource: Option<String>,
    pub worker: Option<String>,
}

impl Implementations {
    pub fn command_for(&self, role: &Role) -> Option<&str> {
        match role {
            Role::Coordinator(_) => self.coordinator.as_deref(),
            Role::Resource(_) => self.resource.as_deref(),
            Role::Worker(_) => self.worker.as_deref(),
            // Client-decided lock servers and the alternatives' nodes are not
            // on the wire (refused by the CLI).
            Role::Server(_) | Role::Alt(_) => None,
        }
    }
}

/// The fence rule a scenario's resource is given (`None`: unfenced), as
/// `init` tells it and as the store-claims check holds the store to it.
pub fn fence_rule(cfg: &ResourceConfig) -> Option<FenceRule> {
    let rule = |strict, fence_reads| {
        Some(FenceRule {
            strict,
            fence_reads,
        })
    };
    match cfg.check {
        FenceCheck::None => None,
        FenceCheck::Cas {
            strict,
            fence_reads,
        } => rule(strict, fence_reads),
        // The catalogue's deliberately broken store; an implementation
        // under test is told only that it should fence.
        FenceCheck::CheckThenWrite { .. } => rule(false, false),
        // If-Match stores are not on the wire yet: told to fence like the others.
        FenceCheck::GenerationMatch => rule(false, false),
    }
}

/// The scenario's configuration of a role, as `init` hands it to a process.
pub fn role_config(dir: &Directory, role: &Role) -> (&'static str, Value) {
    match *role {
        Role::Coordinator(c) => (
            "coordinator",
            json!({
                "lease_ttl_ns": c.lease_ttl_ns,
                "tokens": c.tokens,
                "release": match c.release {
                    ReleaseStyle::Del => "del",
                    ReleaseStyle::CompareAndDelete => "compare_and_delete",
                },
                // Every replica of the group runs as a process; each is told
                // which it is and how the built-in replicas would replicate.
                "replica": c.index,
                "replicas": c.replicas,
                "replica_ids": (0..c.replicas)
                    .map(|i| dir.node_name(NodeId(c.first.0 + i as u16)))
                    .collect::<Vec<_>>(),
                "replication": match c.replication {
                    Replication::None => json!({ "kind": "none" }),
                    Replication::Async { lag_ns } => json!({ "kind": "async", "lag_ns": lag_ns }),
                    Replication::Quorum => json!({ "kind": "quorum" }),
                },
                "lock_delay_ns": c.lock_delay_ns,
            }),
        ),
        Role::Resource(cfg) => {
            let rule = fence_rule(&cfg);
            (
                "resource",
                json!({
                    "fenced": rule.is_some(),
                    "strict": rule.is_some_and(|r| r.strict),
                    "fence_reads": rule.is_some_and(|r| r.fence_reads),
                }),
            )
        }
        Role::Worker(w) => (
            "worker",
            json!({
                "index": w.index,
                "key": dir.keys.get(w.key.0 as usize),
                "coordinator": dir.node_name(w.coordinator),
                "resource": dir.node_name(w.resource),
                "start_ns": w.start_ns,
                "ops": w.ops,
                "work_ns": w.work_ns,
                "think_ns": w.think_ns,
                "retry_ns": w.retry_ns,
                "request_timeout_ns": w.request_timeout_ns,
                "max_retries": w.max_retries,
                "send_token": w.send_token,
                "token_on_reads": w.token_on_reads,
                "renew_every_ns": w.renew_every_ns,
            }),
        ),
        // Never spawned (`command_for` gives none); named for completeness.
        Role::Server(_) | Role::Alt(_) => ("server", json!({})),
    }
}

/// A judged run.
pub struct Judged {
    pub history: History,
    pub trace_hash: u64,
    pub report: check::Report,
    pub claims: store_claims::ClaimsReport,
    /// The run's trace, when `run_seed` was asked to keep it (`search`
    /// anchors message faults at its sends).
    pub trace: Vec<crate::sim::trace::TraceEvent>,
}

impl Judged {
    pub fn is_clean(&self) -> bool {
        self.report.is_clean() && self.claims.is_clean()
    }

    /// Every violation kind found, checker's and store claims', by name.
    pub fn kind_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.report.kinds().map(|k| k.name()).collect();
        names.extend(self.claims.kinds().map(|k| k.name()));
        names
    }
}

pub type SeedVerdict = Result<Judged, Box<ImplError>>;

/// Runs one seed with the roles in `impls` replaced by processes. The store
/// claims are judged when the resource is an implementation (the built-in
/// store keeps them, tested; the catalogue's broken ones break them on purpose).
pub fn run_seed(
    opts: &Options,
    seed: u64,
    impls: &Implementations,
    limits: Limits,
    keep_trace: bool,
) -> SeedVerdict {
    let dir = Arc::new(Directory {
        nodes: opts.nodes.iter().map(|n| n.name.clone()).collect(),
        keys: opts.keys.clone(),
    });
    let acks = WriteAcks::default();
    let mut factory = |id: NodeId, role: &Role| -> Box<dyn Node> {
        let Some(command) = impls.command_for(role) else {
            return protocol::build(role);
        };
        let (kind, config) = role_config(&dir, role);
        let role_json = json!({ "kind": kind, "config": config });
        let spawned = ProcessNode::spawn(
            id,
            Arc::clone(&dir),
            command,
            role_json,
            limits,
            seed,
            Arc::clone(&acks),
        );
        match spawned {
            Ok(node) => Box::new(node),
            Err(e) => process::abort(e),
        }
    };
    let how = crate::suite::RunSeed {
        keep_trace,
        swarm: false,
        terse: false,
    };
    let run = panic::catch_unwind(AssertUnwindSafe(|| {
        crate::suite::seed::run_with(opts, seed, how, &mut factory, &mut |history| {
            let acks = acks.lock().map(|a| a.clone()).unwrap_or_default();
            mark_unapplied(history, &acks);
        })
    }));
    let crate::suite::SeedRun {
        outcome: out,
        report,
        ..
    } = match run {
        Ok(run) => run,
        Err(payload) => match payload.downcast::<Abort>() {
            Ok(abort) => return Err(abort.0),
            Err(other) => panic::resume_unwind(other),
        },
    };
    let claims = if impls.resource.is_some() {
        let rule = opts.nodes.iter().find_map(|n| match &n.role {
            Role::Resource(cfg) => Some(fence_rule(cfg)),
            _ => None,
        });
        store_claims::check_with_rule(&out.history, rule.flatten())
    } else {
        store_claims::ClaimsReport::default()
    };
    Ok(Judged {
        history: out.history,
        trace_hash: out.trace_hash,
        report,
        claims,
        trace: out.trace,
    })
}

/// A `write_ok` that said `applied: false` is recorded by the network as an
/// accepted write like any other; this turns the matching records (per
/// store and op, in send order) into `write_deduplicated`.
fn mark_unapplied(history: &mut History, acks: &[(NodeId, u64, bool)]) {
    use std::collections::{BTreeMap, VecDeque};
    let mut pending: BTreeMap<(u16, u64), VecDeque<bool>> = BTreeMap::new();
    for &(node, op, applied) in acks {
        pending.entry((node.0, op)).or_default().push_back(applied);
    }
    for e in &mut history.events {
        if e.kind != Kind::WriteAccepted {
            continue;
        }
        let Some(op) = e.op_id else { continue };
        let applied = pending.get_mut(&(e.node, op)).and_then(VecDeque::pop_front);
        if applied == Some(false) {
            e.kind = Kind::WriteDeduplicated;
        }
    }
}

/// One judged seed, kept small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedJudgement {
    pub trace_hash: u64,
    /// Violations that are the implementation's: neither allowed by the
    /// scenario's `[expect]` nor shown by the built-in on this seed.
    pub own: Vec<&'static str>,
    /// Violations that are the scenario's.
    pub scenario: Vec<&'static str>,
}

/// What one seed of a scenario came to.
pub struct SeedSummary {
    pub seed: u64,
    pub verdict: Result<SeedJudgement, Box<ImplError>>,
    /// The built-in nodes' violations on the same seed.
    pub baseline: Vec<&'static str>,
}

/// Why a scenario ran fewer seeds than asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The last seed run.
    pub last_seed: u64,
    /// Seeds of the range not run.
    pub skipped: u64,
}

pub struct ScenarioValidation {
    pub name: String,
    pub path: String,
    pub seeds: Vec<SeedSummary>,
    /// The lowest seed with a violation of the implementation's, judged in full.
    pub first_failure: Option<(u64, Judged)>,
    /// Set when repeated identical implementation errors stopped the scenario.
    pub stopped: Option<Stopped>,
}

/// `kind×seeds` for every kind in the lists, in first-seen order.
fn count_kinds<'a>(
    lists: impl Iterator<Item = &'a Vec<&'static str>>,
) -> Vec<(&'static str, usize)> {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for kinds in lists {
        for k in kinds {
            match counts.iter_mut().find(|(n, _)| n == k) {
                Some((_, c)) => *c += 1,
                None => counts.push((k, 1)),
            }
        }
    }
    counts
}

impl ScenarioValidation {
    fn judged(&self) -> impl Iterator<Item = &SeedJudgement> {
        self.seeds.iter().filter_map(|s| s.verdict.as_ref().ok())
    }

    /// Judged seeds without a violation of the implementation's.
    pub fn clean(&self) -> usize {
        self.judged().filter(|j| j.own.is_empty()).count()
    }

    /// Judged seeds with a violation of the implementation's.
    pub fn failing(&self) -> usize {
        self.judged().filter(|j| !j.own.is_empty()).count()
    }

    pub fn impl_errors(&self) -> impl Iterator<Item = (u64, &ImplError)> {
        self.seeds
            .iter()
            .filter_map(|s| s.verdict.as_ref().err().map(|e| (s.seed, e.as_ref())))
    }

    /// The implementation's violations: `kind×seeds`.
    pub fn kind_counts(&self) -> Vec<(&'static str, usize)> {
        count_kinds(self.judged().map(|j| &j.own))
    }

    /// The scenario's violations found in the implementation's runs.
    pub fn scenario_kind_counts(&self) -> Vec<(&'static str, usize)> {
        count_kinds(self.judged().map(|j| &j.scenario))
    }

    /// The built-in nodes' violations over the same seeds.
    pub fn baseline_kind_counts(&self) -> Vec<(&'static str, usize)> {
        count_kinds(self.seeds.iter().map(|s| &s.baseline))
    }
}

/// The kinds these runs could not judge: found in the implementation's
/// runs but the scenario's, so a safe and an unsafe implementation look
/// alike there. Each with why: the built-in reference shows it on a seed
/// where the implementation did (that reason wins, in any scenario), or the
/// scenario's `[expect]` allows it. In first-seen order.
pub fn unjudged_kinds(results: &[ScenarioValidation]) -> Vec<(&'static str, Unjudged)> {
    let mut kinds: Vec<(&'static str, Unjudged)> = Vec::new();
    for s in results.iter().flat_map(|r| &r.seeds) {
        let Ok(j) = &s.verdict else { continue };
        for &k in &j.scenario {
            let why = if s.baseline.contains(&k) {
                Unjudged::BuiltInToo
            } else {
                Unjudged::Allowed
            };
            match kinds.iter_mut().find(|(n, _)| *n == k) {
                Some((_, w)) => *w = (*w).max(why),
                None => kinds.push((k, why)),
            }
        }
    }
    kinds
}

/// Why a violation kind in an implementation's run is the scenario's, not
/// the implementation's: what makes the scenario unable to judge it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Unjudged {
    /// The scenario's `[expect]` allows (or requires) it.
    Allowed,
    /// The built-in reference nodes show it on the same seed.
    BuiltInToo,
}

/// Splits a judged run's violations into the implementation's and the
/// scenario's (allowed by `[expect]`, or shown by the built-in on the seed).
fn attribute(scenario: &Scenario, judged: &Judged, baseline: &[ViolationKind]) -> SeedJudgement {
    let (scenario_kinds, own): (Vec<ViolationKind>, Vec<ViolationKind>) = judged
        .report
        .kinds()
        .partition(|k| scenario.expect.tolerates(*k) || baseline.contains(k));
    let mut own: Vec<&'static str> = own.iter().map(|k| k.name()).collect();
    own.extend(judged.claims.kinds().map(|k| k.name()));
    SeedJudgement {
        trace_hash: judged.trace_hash,
        own,
        scenario: scenario_kinds.iter().map(|k| k.name()).collect(),
    }
}

/// The same implementation error again: same node, kind and detail.
fn same_error(a: &SeedSummary, b: &SeedSummary) -> bool {
    match (&a.verdict, &b.verdict) {
        (Err(x), Err(y)) => (&x.node, &x.kind, &x.detail) == (&y.node, &y.kind, &y.detail),
        _ => false,
    }
}

/// Runs `seeds` (ascending: a range, or one shard of it) of `scenario` on
/// `jobs` threads (each seed has its own processes), each beside the
/// built-in baseline; results are in seed order whatever the job count.
/// Seeds run in rounds of `jobs`; after [`IDENTICAL_ERRORS_MAX`]
/// consecutive identical implementation errors the scenario stops, cut at
/// the same seed for any job count.
pub fn validate_scenario(
    scenario: &Scenario,
    seeds: &[u64],
    impls: &Implementations,
    limits: Limits,
    jobs: usize,
) -> ScenarioValidation {
    use rayon::prelude::*;
    let jobs = jobs.max(1);
    let pool = crate::suite::pool::pool(jobs);
    let mut first_failure = None;
    let mut summaries: Vec<SeedSummary> = Vec::new();
    let mut stopped = None;
    let mut done = 0;
    'rounds: for round in seeds.chunks(jobs) {
        let verdicts: Vec<(u64, SeedVerdict, Vec<ViolationKind>)> = pool.install(|| {
            round
                .par_iter()
                .map(|&seed| {
                    let verdict = run_seed(&scenario.options, seed, impls, limits, false);
                    let baseline = crate::suite::run_seed(scenario, seed)
                        .report
                        .kinds()
                        .collect();
                    (seed, verdict, baseline)
                })
                .collect()
        });
        for (seed, verdict, baseline) in verdicts {
            done += 1;
            let verdict = verdict.map(|judged| {
                let j = attribute(scenario, &judged, &baseline);
                if !j.own.is_empty() && first_failure.is_none() {
                    first_failure = Some((seed, judged));
                }
                j
            });
            summaries.push(SeedSummary {
                seed,
                verdict,
                baseline: baseline.iter().map(|k| k.name()).collect(),
            });
            let tail = &summaries[summaries.len().saturating_sub(IDENTICAL_ERRORS_MAX)..];
            if tail.len() == IDENTICAL_ERRORS_MAX && tail.iter().all(|s| same_error(s, &tail[0])) {
                stopped = Some(Stopped {
                    last_seed: seed,
                    skipped: (seeds.len() - done) as u64,
                });
                break 'rounds;
            }
        }
    }
    ScenarioValidation {
        name: scenario.name.clone(),
        path: scenario.path.display().to_string(),
        seeds: summaries,
        first_failure,
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::coordinator::CoordinatorConfig;

    #[test]
    fn every_coordinator_replica_is_told_its_index_its_group_and_how_replicas_replicate() {
        let dir = Directory {
            nodes: ["worker/A", "coord/0", "coord/1", "coord/2", "resource/0"]
                .map(String::from)
                .to_vec(),
            keys: vec!["doc".into()],
        };
        let mut c = CoordinatorConfig::single(5, ReleaseStyle::CompareAndDelete, true, NodeId(1));
        c.replicas = 3;
        c.index = 1;
        c.replication = Replication::Async { lag_ns: 7 };
        let (kind, config) = role_config(&dir, &Role::Coordinator(c));
        assert_eq!(kind, "coordinator");
        assert_eq!(config["replica"], json!(1));
        assert_eq!(config["replicas"], json!(3));
        assert_eq!(
            config["replica_ids"],
            json!(["coord/0", "coord/1", "coord/2"])
        );
        assert_eq!(
            config["replication"],
            json!({ "kind": "async", "lag_ns": 7 })
        );
        // A single coordinator: index 0 of a group of one.
        let single = CoordinatorConfig::single(5, ReleaseStyle::Del, true, NodeId(1));
        let (_, config) = role_config(&dir, &Role::Coordinator(single));
        assert_eq!(config["replica_ids"], json!(["coord/0"]));
        assert_eq!(config["replication"], json!({ "kind": "none" }));
    }
}
