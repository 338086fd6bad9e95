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

pub mod error;
pub mod process;
pub mod reaper;
pub mod wire;

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use serde_json::{json, Value};

pub use error::{ImplError, ImplErrorKind};
pub use process::Limits;

use crate::check::{self, store_claims};
use crate::history::History;
use crate::protocol::coordinator::ReleaseStyle;
use crate::protocol::resource::FenceCheck;
use crate::protocol::{self, Node, NodeId, Role};
use crate::scenario::Scenario;
use crate::sim::{self, Options};
use process::{Abort, ProcessNode};
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

    /// One `role = command` (or `built-in`) line per role.
    pub fn describe(&self) -> String {
        let show = |c: &Option<String>| c.clone().unwrap_or_else(|| "built-in".into());
        format!(
            "  coordinator = {}\n  resource    = {}\n  worker      = {}\n",
            show(&self.coordinator),
            show(&self.resource),
            show(&self.worker)
        )
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
            }),
        ),
        Role::Resource(cfg) => {
            let (fenced, strict, fence_reads) = match cfg.check {
                FenceCheck::None => (false, false, false),
                FenceCheck::Cas {
                    strict,
                    fence_reads,
                } => (true, strict, fence_reads),
                // The catalogue's deliberately broken store; an implementation
                // under test is told only that it should fence.
                FenceCheck::CheckThenWrite { .. } => (true, false, false),
                // If-Match stores are not on the wire yet: told to fence like the others.
                FenceCheck::GenerationMatch => (true, false, false),
            };
            (
                "resource",
                json!({ "fenced": fenced, "strict": strict, "fence_reads": fence_reads }),
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

    /// Violations with their evidence records, then the checker's counters.
    pub fn render(&self) -> String {
        let mut s = self.claims.render(&self.history);
        let checker = crate::report::replay::violations(&self.history, &self.report);
        if self.report.is_clean() && !self.claims.is_clean() {
            // "no violations" would contradict the store-claim lines above.
            s.push_str(checker.trim_start_matches("no violations\n"));
        } else {
            s.push_str(&checker);
        }
        s
    }
}

pub type SeedVerdict = Result<Judged, Box<ImplError>>;

/// Runs one seed with the roles in `impls` replaced by processes.
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
    let mut factory = |id: NodeId, role: &Role| -> Box<dyn Node> {
        let Some(command) = impls.command_for(role) else {
            return protocol::build(role);
        };
        let (kind, config) = role_config(&dir, role);
        let role_json = json!({ "kind": kind, "config": config });
        match ProcessNode::spawn(id, Arc::clone(&dir), command, role_json, limits, seed) {
            Ok(node) => Box::new(node),
            Err(e) => process::abort(e),
        }
    };
    let run = panic::catch_unwind(AssertUnwindSafe(|| {
        sim::run_with(opts, seed, keep_trace, &mut factory)
    }));
    let out = match run {
        Ok(out) => out,
        Err(payload) => match payload.downcast::<Abort>() {
            Ok(abort) => return Err(abort.0),
            Err(other) => panic::resume_unwind(other),
        },
    };
    let report = check::check(&out.history);
    let claims = store_claims::check(&out.history);
    Ok(Judged {
        history: out.history,
        trace_hash: out.trace_hash,
        report,
        claims,
    })
}

/// What one seed of a scenario came to, kept small: histories only for the
/// first failing seed of each scenario.
pub struct SeedSummary {
    pub seed: u64,
    pub verdict: Result<(u64, Vec<&'static str>), Box<ImplError>>,
}

pub struct ScenarioValidation {
    pub name: String,
    pub path: String,
    pub seeds: Vec<SeedSummary>,
    /// The lowest seed with a violation, judged in full.
    pub first_failure: Option<(u64, Judged)>,
}

impl ScenarioValidation {
    pub fn clean(&self) -> usize {
        self.seeds
            .iter()
            .filter(|s| matches!(&s.verdict, Ok((_, k)) if k.is_empty()))
            .count()
    }

    pub fn failing(&self) -> usize {
        self.seeds
            .iter()
            .filter(|s| matches!(&s.verdict, Ok((_, k)) if !k.is_empty()))
            .count()
    }

    pub fn impl_errors(&self) -> impl Iterator<Item = (u64, &ImplError)> {
        self.seeds
            .iter()
            .filter_map(|s| s.verdict.as_ref().err().map(|e| (s.seed, e.as_ref())))
    }

    /// `kind×seeds` for every violation kind found.
    pub fn kind_counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: Vec<(&'static str, usize)> = Vec::new();
        for s in &self.seeds {
            if let Ok((_, kinds)) = &s.verdict {
                for k in kinds {
                    match counts.iter_mut().find(|(n, _)| n == k) {
                        Some((_, c)) => *c += 1,
                        None => counts.push((k, 1)),
                    }
                }
            }
        }
        counts
    }
}

/// Runs `seeds` of `scenario` on `jobs` threads (each seed has its own
/// processes); results are in seed order whatever the job count.
pub fn validate_scenario(
    scenario: &Scenario,
    seeds: Range<u64>,
    impls: &Implementations,
    limits: Limits,
    jobs: usize,
) -> ScenarioValidation {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("thread pool");
    let verdicts: Vec<(u64, SeedVerdict)> = pool.install(|| {
        seeds
            .into_par_iter()
            .map(|seed| {
                (
                    seed,
                    run_seed(&scenario.options, seed, impls, limits, false),
                )
            })
            .collect()
    });
    let mut first_failure = None;
    let mut summaries = Vec::with_capacity(verdicts.len());
    for (seed, verdict) in verdicts {
        let verdict = verdict.map(|judged| {
            let summary = (judged.trace_hash, judged.kind_names());
            if !judged.is_clean() && first_failure.is_none() {
                first_failure = Some((seed, judged));
            }
            summary
        });
        summaries.push(SeedSummary { seed, verdict });
    }
    ScenarioValidation {
        name: scenario.name.clone(),
        path: scenario.path.display().to_string(),
        seeds: summaries,
        first_failure,
    }
}
