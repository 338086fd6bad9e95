//! Exhaustive fault-placement search (`fencesim search FILE --faults K`):
//! every placement of up to K faults at the protocol events of a run.
//!
//! Random faults find a bug only as often as a random time lands in its
//! window; a stale write behind a fence check that lasts 5 ms out of a
//! 120 s run shows once in thousands of seeds. Lineage-driven fault
//! injection (Alvaro et al., "Molly", SIGMOD 2015) and systematic testing
//! (CHESS, Coyote) instead enumerate the choices that matter. Here the
//! choices are the anchored faults of `sim::faults`: right after each
//! protocol event (a grant issued or received, a read result, a write sent
//! or accepted, a pair node becoming active) every strike the scenario's
//! fault vocabulary allows there ([`strikes_at`]: pause, pause past the
//! TTL, crash with restart, failover).
//!
//! The search is a tree, level by level: level 0 is the fault-free run
//! (random faults off, scripted faults kept: they are the scenario's
//! premise); level k takes every distinct execution of level k-1 and places
//! one more fault at each event of *that* execution at or after the
//! previous fault's event (an earlier event is the same placement in
//! another order). Executions are deduplicated by trace hash: a placement
//! that changes nothing (a pause of a node with nothing to do) is counted
//! but not expanded. A level's runs go to rayon in parallel; results are
//! collected in enumeration order and deduplicated sequentially, so the
//! result — run counts, which execution is "first" — is the same for any
//! job count. Each run is an ordinary simulation: the placed faults are
//! scripted `When::After` faults, so a violation is written out as a fully
//! scripted scenario that `fencesim run` replays.
//!
//! Not enumerated: message faults (loss, duplication, per-message delay),
//! partitions and clock faults — they have no protocol event to anchor at
//! and multiply the tree — and delivery order: latency jitter comes from
//! the seed (`--seed`), one delivery order per search.

use std::collections::BTreeSet;

pub mod shard;

use rayon::prelude::*;

use crate::history::{History, Kind};
use crate::protocol::NodeId;
use crate::scenario::Scenario;
use crate::sim::faults::{
    message_fault, message_strikes, past_ttl_ns, strike_fault, strikes_at, Strike,
};
use crate::sim::trace::{TraceEvent, What};
use crate::sim::{Fault, Options};

/// One fault placed right after the `nth` `kind` event of `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Placement {
    pub node: NodeId,
    pub kind: Kind,
    pub nth: u32,
    pub strike: Strike,
    /// The node struck (the anchor node, the resource a write went to, or
    /// for a message strike the message's receiver).
    pub target: NodeId,
    /// Message strikes: the message's 1-based number on the link
    /// `node -> target` (0 for node strikes).
    pub link_nth: u32,
}

impl Placement {
    /// `crash coord/0 after coord/0:grant_issued#2`.
    pub fn describe(&self, o: &Options) -> String {
        if self.strike.is_message() {
            return format!(
                "{} {}->{} #{} (sent with {}:{}#{})",
                self.strike.name(),
                o.node_name(self.node),
                o.node_name(self.target),
                self.link_nth,
                o.node_name(self.node),
                self.kind,
                self.nth
            );
        }
        format!(
            "{} {} after {}:{}#{}",
            self.strike.name(),
            o.node_name(self.target),
            o.node_name(self.node),
            self.kind,
            self.nth
        )
    }

    /// The scripted fault: pauses last the scenario's longest random pause
    /// (past-TTL pauses, the TTL and half), crashes restart after the
    /// shortest random restart.
    pub fn fault(&self, o: &Options) -> Fault {
        if self.strike.is_message() {
            return message_fault(o, self.strike, self.node, self.target, self.link_nth);
        }
        let pause_ns = match self.strike {
            Strike::PastTtl => past_ttl_ns(o),
            _ => o.random.pause_max_ns,
        };
        strike_fault(
            o,
            self.strike,
            self.target,
            (self.node, self.kind, self.nth),
            pause_ns,
            o.random.restart_min_ns,
        )
    }
}

/// What a runner reports of one execution.
pub struct Execution {
    pub trace_hash: u64,
    pub history: History,
    /// Names of every violation found (checker kinds, store claims).
    pub violations: Vec<&'static str>,
    /// The message each protocol event sent with it, if any: (history
    /// index, receiver, the message's number on its link). See [`sends`].
    pub sends: Vec<(usize, NodeId, u32)>,
}

/// The message sent in the same step right after each history record: the
/// trace has the record, then the node's `Send` (a write after its
/// `write_sent`, a grant after its `grant_issued`). Message strikes act on
/// exactly that message, by its number on the link, so they replay as
/// ordinary `Drop`/`Delay`/`Duplicate` faults.
pub fn sends(trace: &[TraceEvent]) -> Vec<(usize, NodeId, u32)> {
    trace
        .windows(2)
        .filter_map(|w| match (w[0].what, w[1].what) {
            (What::Record(i), What::Send { to, nth, .. }) if w[0].node == w[1].node => {
                Some((i, to, nth))
            }
            _ => None,
        })
        .collect()
}

/// Runs one execution: the built-in nodes ([`builtin`]) or processes under
/// `validate` (`cli::search` wires `validate::run_seed`). An `Err` is an
/// implementation error and ends the search.
pub type Runner<'a> = dyn Fn(&Options, u64) -> Result<Execution, String> + Sync + 'a;

/// The built-in protocol nodes, judged by the history checker.
pub fn builtin(o: &Options, seed: u64) -> Result<Execution, String> {
    let how = crate::suite::RunSeed {
        keep_trace: true,
        swarm: false,
        terse: false,
    };
    let crate::suite::SeedRun {
        outcome: out,
        report,
        ..
    } = crate::suite::seed::run(o, seed, how);
    Ok(Execution {
        sends: sends(&out.trace),
        trace_hash: out.trace_hash,
        violations: report.kinds().map(|k| k.name()).collect(),
        history: out.history,
    })
}

#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Place up to this many faults (K).
    pub max_faults: usize,
    /// The seed every execution runs under (fixes latency jitter).
    pub seed: u64,
    pub jobs: usize,
}

/// The first execution (in enumeration order) that showed a violation kind.
#[derive(Clone, Debug)]
pub struct Found {
    pub kind: &'static str,
    /// 1-based position in the enumeration (the fault-free run is 1): how
    /// many runs the search needed to reach it.
    pub run: u64,
    pub placements: Vec<Placement>,
    /// The full fault script of that execution (scripted + placed).
    pub script: Vec<Fault>,
}

#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    /// Executions run, duplicates included.
    pub runs: u64,
    /// Distinct executions (trace hashes).
    pub distinct: u64,
    /// Protocol events of the fault-free run.
    pub baseline_events: usize,
    /// Per level (number of faults): (runs, new distinct executions).
    pub levels: Vec<(u64, u64)>,
    /// First execution per violation kind the scenario does not tolerate.
    pub found: Vec<Found>,
    /// Kinds the scenario tolerates that showed up anyway (not failures).
    pub tolerated: Vec<&'static str>,
}

impl SearchResult {
    pub fn is_clean(&self) -> bool {
        self.found.is_empty()
    }
}

/// The scenario with random faults off: what every execution starts from.
pub fn fault_free(o: &Options) -> Options {
    let mut o = o.clone();
    let r = &mut o.random;
    r.pause_probability = 0.0;
    r.crash_probability = 0.0;
    r.partition_probability = 0.0;
    r.failover_probability = 0.0;
    r.anchored_probability = 0.0;
    let n = &mut o.network;
    n.loss_probability = 0.0;
    n.delay_probability = 0.0;
    n.duplicate_probability = 0.0;
    n.calm = None;
    o
}

/// Every placement the vocabulary allows at the events of `history` from
/// record `from` on, each with the record index it anchors at.
pub fn placements(
    vocab: &Options,
    history: &History,
    sent: &[(usize, NodeId, u32)],
    from: usize,
) -> Vec<(usize, Placement)> {
    let mut seen: Vec<(u16, Kind, u32)> = Vec::new();
    let mut out = Vec::new();
    let mut sent = sent.iter().peekable();
    for (i, e) in history.events.iter().enumerate() {
        let node = NodeId(e.node);
        let mut strikes: Vec<(Strike, NodeId, u32)> = strikes_at(vocab, node, e.kind)
            .into_iter()
            .map(|(s, t)| (s, t, 0))
            .collect();
        while sent.next_if(|s| s.0 < i).is_some() {}
        if let Some(&(_, to, link_nth)) = sent.next_if(|s| s.0 == i) {
            strikes.extend(
                message_strikes(vocab, node, e.kind)
                    .into_iter()
                    .map(|s| (s, to, link_nth)),
            );
        }
        if strikes.is_empty() {
            continue;
        }
        let nth = match seen
            .iter_mut()
            .find(|(n, k, _)| *n == e.node && *k == e.kind)
        {
            Some((_, _, c)) => {
                *c += 1;
                *c
            }
            None => {
                seen.push((e.node, e.kind, 1));
                1
            }
        };
        if i < from {
            continue;
        }
        out.extend(strikes.into_iter().map(|(strike, target, link_nth)| {
            (
                i,
                Placement {
                    node,
                    kind: e.kind,
                    nth,
                    strike,
                    target,
                    link_nth,
                },
            )
        }));
    }
    out
}

/// The strikes the scenario's vocabulary allows anywhere, in order.
pub fn placements_vocabulary(vocab: &Options) -> Vec<Strike> {
    let mut strikes: Vec<Strike> = crate::sim::faults::anchored_vocabulary(vocab)
        .into_iter()
        .map(|(_, _, s, _, _)| s)
        .collect();
    for i in 0..vocab.nodes.len() {
        for &kind in Kind::ALL {
            let node = NodeId(i as u16);
            strikes.extend(strikes_at(vocab, node, kind).into_iter().map(|(s, _)| s));
            strikes.extend(message_strikes(vocab, node, kind));
        }
    }
    strikes.sort_unstable();
    strikes.dedup();
    strikes
}

/// One node of the search tree still to expand.
struct Frontier {
    placements: Vec<Placement>,
    /// Record index of the last placement's event.
    from: usize,
    history: History,
    sends: Vec<(usize, NodeId, u32)>,
}

/// One execution of the enumeration, as a shard reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    /// 1-based position in the enumeration (the fault-free run is 1).
    pub position: u64,
    /// Faults placed (the level of the tree).
    pub level: usize,
    pub trace_hash: u64,
    pub violations: Vec<&'static str>,
    /// Kept only for executions with a violation (to write them out).
    pub placements: Vec<Placement>,
}

/// What one shard (`--shard I/N`) ran: the levels below K whole (every
/// shard runs them: they decide what level K expands, and are a small
/// fraction of the runs), and of level K the jobs whose index is I mod N.
/// [`tally`] of all N shards is the unsharded result, exactly: it replays
/// the same sequential deduplication over the same enumeration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardRun {
    pub index: usize,
    pub count: usize,
    pub max_faults: usize,
    pub seed: u64,
    pub baseline_events: usize,
    /// Runs of the whole enumeration, every shard's together.
    pub total_runs: u64,
    pub runs: Vec<Ran>,
}

/// Searches every placement of up to `cfg.max_faults` faults; `tick` is
/// called once per execution (a progress bar).
pub fn search(
    scenario: &Scenario,
    cfg: &Config,
    runner: &Runner<'_>,
    tick: &(dyn Fn() + Sync),
) -> Result<SearchResult, String> {
    let shard = search_shard(scenario, cfg, (0, 1), runner, tick)?;
    tally(scenario, &[shard])
}

/// Runs shard `index` of `count` (0-based) of the search.
pub fn search_shard(
    scenario: &Scenario,
    cfg: &Config,
    (index, count): (usize, usize),
    runner: &Runner<'_>,
    tick: &(dyn Fn() + Sync),
) -> Result<ShardRun, String> {
    if count == 0 || index >= count {
        return Err(format!("shard {index}/{count}: expected 0 <= I < N"));
    }
    let shard = crate::suite::Shard {
        index: index as u64,
        count: count as u64,
    };
    let vocab = &scenario.options;
    let base = fault_free(vocab);
    let pool = crate::suite::pool::pool(cfg.jobs);
    let options_with = |ps: &[Placement]| {
        let mut o = base.clone();
        o.faults.extend(ps.iter().map(|p| p.fault(vocab)));
        o
    };
    let root = runner(&base, cfg.seed)?;
    tick();
    let mut out = ShardRun {
        index,
        count,
        max_faults: cfg.max_faults,
        seed: cfg.seed,
        baseline_events: root.history.events.len(),
        total_runs: 1,
        runs: vec![Ran::of(1, 0, &root, &[])],
    };
    let mut hashes = BTreeSet::from([root.trace_hash]);
    let mut frontier = vec![Frontier {
        placements: Vec::new(),
        from: 0,
        history: root.history,
        sends: root.sends,
    }];
    for level in 1..=cfg.max_faults {
        let last = level == cfg.max_faults;
        let jobs = expand(vocab, &frontier);
        drop(frontier);
        let first_position = out.total_runs + 1;
        out.total_runs += jobs.len() as u64;
        // Level K is the shard's slice; the levels below it, every shard runs.
        let mine = |j: usize| !last || shard.owns_position(j as u64);
        let runs: Vec<Option<Result<Execution, String>>> = pool.install(|| {
            jobs.par_iter()
                .enumerate()
                .map(|(j, (ps, _))| {
                    if !mine(j) {
                        return None;
                    }
                    let ran = runner(&options_with(ps), cfg.seed);
                    tick();
                    // The last level expands nothing: keep no history.
                    Some(ran.map(|mut ex| {
                        if last {
                            ex.history.events = Vec::new();
                            ex.sends = Vec::new();
                        }
                        ex
                    }))
                })
                .collect()
        });
        let mut next = Vec::new();
        for (j, ((ps, from), result)) in jobs.into_iter().zip(runs).enumerate() {
            let Some(result) = result else { continue };
            let ex = result?;
            out.runs
                .push(Ran::of(first_position + j as u64, level, &ex, &ps));
            if !last && hashes.insert(ex.trace_hash) {
                next.push(Frontier {
                    placements: ps,
                    from,
                    history: ex.history,
                    sends: ex.sends,
                });
            }
        }
        frontier = next;
    }
    Ok(out)
}

impl Ran {
    /// Run number `position` at `level` (its placements kept only if it
    /// found a violation).
    fn of(position: u64, level: usize, ex: &Execution, ps: &[Placement]) -> Ran {
        Ran {
            position,
            level,
            trace_hash: ex.trace_hash,
            violations: ex.violations.clone(),
            placements: if ex.violations.is_empty() {
                Vec::new()
            } else {
                ps.to_vec()
            },
        }
    }
}

/// The next level's jobs: each frontier run with one more placement (one
/// it does not have yet) after its own, with where that placement is.
fn expand(vocab: &Options, frontier: &[Frontier]) -> Vec<(Vec<Placement>, usize)> {
    frontier
        .iter()
        .flat_map(|f| {
            placements(vocab, &f.history, &f.sends, f.from)
                .into_iter()
                .filter(|(_, p)| !f.placements.contains(p))
                .map(|(i, p)| {
                    let mut ps = f.placements.clone();
                    ps.push(p);
                    (ps, i)
                })
        })
        .collect()
}

/// The search result of shards `0..N` of one search (any order): every
/// execution in enumeration order, deduplicated by trace hash as the
/// unsharded search does. Refuses shards of different searches, a shard
/// missing or given twice, or shards that disagree on a shared run.
pub fn tally(scenario: &Scenario, shards: &[ShardRun]) -> Result<SearchResult, String> {
    let Some(first) = shards.first() else {
        return Err("no shard to merge".into());
    };
    let same_search = |s: &ShardRun| {
        (
            s.count,
            s.max_faults,
            s.seed,
            s.total_runs,
            s.baseline_events,
        ) == (
            first.count,
            first.max_faults,
            first.seed,
            first.total_runs,
            first.baseline_events,
        )
    };
    if let Some(s) = shards.iter().find(|s| !same_search(s)) {
        return Err(format!(
            "shard {}/{} is of another search than shard {}/{} (shard count, --faults, --seed \
             or the scenario differ)",
            s.index, s.count, first.index, first.count
        ));
    }
    let indices: Vec<u64> = shards.iter().map(|s| s.index as u64).collect();
    crate::suite::shard::complete(&indices, first.count as u64)?;
    let merged = merge_runs(shards, first.total_runs)?;
    let vocab = &scenario.options;
    let nodes = vocab.nodes.len();
    if let Some(r) = merged.iter().find(|r| {
        r.level > first.max_faults
            || r.placements
                .iter()
                .any(|p| usize::from(p.node.0) >= nodes || usize::from(p.target.0) >= nodes)
    }) {
        return Err(format!(
            "run {} places a fault on a node this scenario does not have, or more faults than --faults",
            r.position
        ));
    }
    let base = fault_free(vocab);
    let mut result = SearchResult {
        baseline_events: first.baseline_events,
        levels: vec![(0, 0); first.max_faults + 1],
        ..SearchResult::default()
    };
    let mut hashes = BTreeSet::new();
    for r in merged {
        result.runs += 1;
        result.levels[r.level].0 += 1;
        if !hashes.insert(r.trace_hash) {
            continue;
        }
        result.levels[r.level].1 += 1;
        for &v in &r.violations {
            let tolerated = crate::check::ViolationKind::from_name(v)
                .is_some_and(|k| scenario.expect.tolerates(k));
            if tolerated {
                if !result.tolerated.contains(&v) {
                    result.tolerated.push(v);
                }
            } else if !result.found.iter().any(|f| f.kind == v) {
                let mut o = base.clone();
                o.faults.extend(r.placements.iter().map(|p| p.fault(vocab)));
                result.found.push(Found {
                    kind: v,
                    run: r.position,
                    placements: r.placements.clone(),
                    script: o.faults,
                });
            }
        }
    }
    result.distinct = hashes.len() as u64;
    Ok(result)
}

/// Every shard's runs in position order, each once (shards that both ran a
/// position must agree on its trace), checked to be all `total_runs`.
fn merge_runs(shards: &[ShardRun], total_runs: u64) -> Result<Vec<&Ran>, String> {
    let mut all: Vec<&Ran> = shards.iter().flat_map(|s| &s.runs).collect();
    all.sort_by_key(|r| r.position);
    let mut merged: Vec<&Ran> = Vec::with_capacity(all.len());
    for r in all {
        match merged.last() {
            Some(prev) if prev.position == r.position => {
                if prev.trace_hash != r.trace_hash {
                    return Err(format!(
                        "shards disagree on run {}: trace hash {:016x} vs {:016x} (not the same \
                         scenario, binary or implementation)",
                        r.position, prev.trace_hash, r.trace_hash
                    ));
                }
            }
            _ => merged.push(r),
        }
    }
    if merged.len() as u64 != total_runs || merged.iter().zip(1..).any(|(r, p)| r.position != p) {
        return Err(format!(
            "the shards hold {} of the search's {} runs",
            merged.len(),
            total_runs
        ));
    }
    Ok(merged)
}
