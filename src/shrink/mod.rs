//! Shrinking a failing seed (`fencesim shrink`) into the smallest fully
//! scripted scenario that still shows the same violation kind: fewer
//! faults, shorter pauses, partitions, delays and restarts, fewer workers
//! and operations — a file to commit as a regression test.
//!
//! **Method: deterministic delta debugging, not proptest.** The start is
//! one concrete failing run (its fault script, `RunOutcome::script`),
//! whereas proptest shrinks values it generated itself through its
//! `ValueTree`s, which cannot be seeded with a given value; and a shrinker
//! users run from the CLI must give the same minimal file on every machine
//! and every time, which proptest's RNG-driven search does not promise.
//! So the loop here is Zeller's ddmin on the fault list (remove halves,
//! quarters, … single faults), then one pass per dimension (drop a worker
//! with every fault that names it; cut a worker's ops; binary-search each
//! duration down), repeated until a whole round changes nothing or the run
//! budget is spent. Every candidate is a real scenario file: serialized,
//! parsed and validated by `scenario::parse`, simulated under the seed and
//! checked — a candidate the validator rejects simply does not fail.
//!
//! **Seed independence.** A fully scripted file still has one source of
//! randomness: per-message network latency, drawn from the seed. The
//! shrinker therefore first tries to pin latency (`latency_min_ms =
//! latency_max_ms`, each value of the original range in turn). With
//! latency pinned, random faults gone and loss/delay rates zero, *no* draw
//! of any stream changes the run: every seed replays the same run, so the
//! file fails under any seed. If no pinned latency keeps the violation, the
//! jitter stays, the result says so, and the file is checked against other
//! seeds ([`Shrunk::other_seeds_failing`]).

pub mod campaign;

use toml::{Table, Value};

use crate::check::{self, ViolationKind};
use crate::scenario::{self, Scenario};

/// How big a run is, before and after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub faults: usize,
    pub events: u64,
    pub workers: usize,
    pub ops: u64,
}

#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal scenario, as TOML.
    pub text: String,
    pub kind: ViolationKind,
    pub before: Size,
    pub after: Size,
    /// Candidate runs spent.
    pub runs: u64,
    /// Latency pinned: the file runs identically under every seed.
    pub latency_pinned: bool,
    /// (failing, tried) over the [`CHECK_SEEDS`] seeds after `seed`.
    pub other_seeds_failing: (u64, u64),
    pub hit_budget: bool,
}

/// Seeds the result is checked under, besides the original one.
pub const CHECK_SEEDS: u64 = 16;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShrinkError {
    #[error("{0}")]
    Scenario(String),
    /// A budget of zero candidate runs: nothing could be tried.
    #[error("--max-runs 0: shrinking needs at least one candidate run")]
    NoRunBudget,
    #[error(
        "seed {seed} shows no violation; nothing to shrink (try `fencesim run` for a failing seed)"
    )]
    NotFailing { seed: u64 },
    #[error("seed {seed} shows {found}, not {wanted}")]
    KindAbsent {
        seed: u64,
        wanted: ViolationKind,
        found: String,
    },
    /// The scripted form of the run does not fail the same way: a bug in
    /// emission or in the simulator's determinism, not the user's input.
    #[error("internal: the fully scripted form of seed {seed} no longer shows {kind}")]
    ScriptedDiffers { seed: u64, kind: ViolationKind },
}

/// The violation kind shrinking preserves by default: the first kind the
/// scenario does not tolerate, else the first kind found.
fn default_kind(s: &Scenario, report: &check::Report) -> Option<ViolationKind> {
    report
        .kinds()
        .find(|k| !s.expect.tolerates(*k))
        .or_else(|| report.kinds().next())
}

struct Search {
    seed: u64,
    kind: ViolationKind,
    file: String,
    runs: u64,
    max_runs: u64,
}

impl Search {
    fn spent(&self) -> bool {
        self.runs >= self.max_runs
    }

    /// Events of the run if `doc` still shows the kind under the seed.
    fn fails(&mut self, doc: &Table) -> Option<u64> {
        self.runs += 1;
        fails_under(doc, &self.file, self.seed, self.kind)
    }

    /// Keeps `candidate` if it still fails.
    fn accept(&mut self, doc: &mut Table, candidate: Table) -> bool {
        if self.spent() || self.fails(&candidate).is_none() {
            return false;
        }
        *doc = candidate;
        true
    }
}

fn fails_under(doc: &Table, file: &str, seed: u64, kind: ViolationKind) -> Option<u64> {
    let text = toml::to_string(doc).ok()?;
    let s = scenario::parse(&text, file).ok()?;
    let run = crate::suite::seed::run(&s.options, seed, crate::suite::RunSeed::default());
    (run.report.count(kind) > 0).then_some(run.outcome.events)
}

fn array<'a>(doc: &'a Table, key: &str) -> &'a [Value] {
    doc.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn set_array(doc: &mut Table, key: &str, items: Vec<Value>) {
    if items.is_empty() {
        doc.remove(key);
    } else {
        doc.insert(key.into(), Value::Array(items));
    }
}

fn int(t: &Value, key: &str) -> Option<i64> {
    t.get(key).and_then(Value::as_integer)
}

fn size(doc: &Table, events: u64) -> Size {
    let workers = array(doc, "worker");
    Size {
        faults: array(doc, "fault").len(),
        events,
        workers: workers.len(),
        ops: workers
            .iter()
            .map(|w| int(w, "ops").unwrap_or(1).max(0) as u64)
            .sum(),
    }
}

/// ddmin over the fault list: try removing chunks, halving the chunk size
/// down to single faults.
fn fewer_faults(s: &mut Search, doc: &mut Table) {
    let mut chunk = array(doc, "fault").len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        while i < array(doc, "fault").len() && !s.spent() {
            let mut faults = array(doc, "fault").to_vec();
            let end = (i + chunk).min(faults.len());
            faults.drain(i..end);
            let mut candidate = doc.clone();
            set_array(&mut candidate, "fault", faults);
            if !s.accept(doc, candidate) {
                i += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
}

/// Whether a fault names `node` anywhere.
fn names_node(fault: &Value, node: &str) -> bool {
    let is = |k: &str| fault.get(k).and_then(Value::as_str) == Some(node);
    let after = fault
        .get("after")
        .and_then(Value::as_str)
        .and_then(|a| a.rsplit_once(':'))
        .is_some_and(|(n, _)| n == node);
    is("node") || is("from") || is("to") || after
}

/// `doc` without worker `i`: its faults dropped, its name taken out of
/// partition groups (a group left empty drops the partition), its clock gone.
fn without_worker(doc: &Table, i: usize) -> Option<Table> {
    let mut workers = array(doc, "worker").to_vec();
    let w = workers.remove(i);
    let node = format!("worker/{}", w.get("name")?.as_str()?);
    let mut faults = Vec::new();
    for f in array(doc, "fault") {
        if names_node(f, &node) {
            continue;
        }
        let mut f = f.clone();
        if let Some(Value::Array(groups)) = f.get_mut("groups") {
            for g in groups.iter_mut() {
                if let Value::Array(names) = g {
                    names.retain(|n| n.as_str() != Some(&node));
                }
            }
            if groups
                .iter()
                .any(|g| g.as_array().is_some_and(Vec::is_empty))
            {
                continue;
            }
        }
        faults.push(f);
    }
    let mut out = doc.clone();
    set_array(&mut out, "worker", workers);
    set_array(&mut out, "fault", faults);
    if let Some(Value::Table(clocks)) = out.get_mut("clock") {
        clocks.remove(&node);
    }
    Some(out)
}

fn fewer_workers(s: &mut Search, doc: &mut Table) {
    let mut i = array(doc, "worker").len();
    while i > 0 && array(doc, "worker").len() > 1 && !s.spent() {
        i -= 1;
        if let Some(candidate) = without_worker(doc, i) {
            s.accept(doc, candidate);
        }
    }
}

/// The smallest value of `doc[key][i][field]` in `lo..=current` that still
/// fails, by binary search (assumes "shorter fails less", and verifies
/// every step, so a non-monotone case only costs minimality).
fn shorten(s: &mut Search, doc: &mut Table, key: &str, i: usize, field: &str, lo: i64) {
    let with = |doc: &Table, v: i64| {
        let mut c = doc.clone();
        if let Some(Value::Array(items)) = c.get_mut(key) {
            if let Some(Value::Table(t)) = items.get_mut(i) {
                t.insert(field.into(), Value::Integer(v));
            }
        }
        c
    };
    let Some(current) = array(doc, key).get(i).and_then(|t| int(t, field)) else {
        return;
    };
    let (mut lo, mut hi) = (lo, current);
    while lo < hi && !s.spent() {
        let mid = lo + (hi - lo) / 2;
        let candidate = with(doc, mid);
        if s.accept(doc, candidate) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
}

fn shorter_faults(s: &mut Search, doc: &mut Table) {
    for i in 0..array(doc, "fault").len() {
        for field in ["duration_ms", "delay_ms", "restart_after_ms"] {
            shorten(s, doc, "fault", i, field, 1);
        }
    }
}

fn fewer_ops(s: &mut Search, doc: &mut Table) {
    for i in 0..array(doc, "worker").len() {
        shorten(s, doc, "worker", i, "ops", 1);
    }
}

/// Tries `latency_min_ms = latency_max_ms = v` for each v of the range.
fn pin_latency(s: &mut Search, doc: &mut Table) -> bool {
    let net = doc.get("network").and_then(Value::as_table);
    let lo = net
        .and_then(|n| n.get("latency_min_ms"))
        .and_then(Value::as_integer)
        .unwrap_or(1);
    let hi = net
        .and_then(|n| n.get("latency_max_ms"))
        .and_then(Value::as_integer)
        .unwrap_or(5);
    if lo == hi {
        return true;
    }
    // A bounded number of tries: ranges are a few ms in practice.
    for v in (lo..=hi).take(64) {
        let mut candidate = doc.clone();
        let net = candidate
            .entry("network")
            .or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(n) = net {
            n.insert("latency_min_ms".into(), Value::Integer(v));
            n.insert("latency_max_ms".into(), Value::Integer(v));
        }
        if s.accept(doc, candidate) {
            return true;
        }
    }
    false
}

/// The shrunk file's `[expect]`: if the scenario expected the kind (an
/// unsafe protocol shown unsafe), the file must find it in every seed it
/// runs; if the kind was unexpected (a bug), the original tolerances stay,
/// so the file fails until the bug is fixed — a regression test either way.
/// Metric assertions are dropped: they were about the full workload.
fn expect_table(s: &Scenario, kind: ViolationKind, seeds: i64) -> Value {
    let mut t = Table::new();
    let mut allow: Vec<ViolationKind> = s.expect.allow.clone();
    allow.extend(s.expect.must_find.iter().map(|(k, _)| *k));
    allow.sort();
    allow.dedup();
    if s.expect.tolerates(kind) {
        allow.retain(|k| *k != kind);
        let mut must = Table::new();
        must.insert("kind".into(), Value::String(kind.name().into()));
        must.insert("min_failing_seeds".into(), Value::Integer(seeds));
        t.insert("must_find".into(), Value::Array(vec![Value::Table(must)]));
    } else {
        allow = s.expect.allow.clone();
    }
    let allow = allow
        .iter()
        .map(|k| Value::String(k.name().into()))
        .collect();
    t.insert("allow".into(), Value::Array(allow));
    Value::Table(t)
}

/// Final touches: name, seeds and an expectation that fits the file.
fn finish_doc(
    doc: &mut Table,
    s: &Scenario,
    kind: ViolationKind,
    seed: u64,
    pinned: bool,
) -> Result<(), ShrinkError> {
    let seeds = if pinned { CHECK_SEEDS as i64 } else { 1 };
    doc.insert(
        "name".into(),
        Value::String(format!("{}-seed-{seed}-shrunk", s.name)),
    );
    doc.insert("seeds".into(), Value::Integer(seeds));
    let start = i64::try_from(seed)
        .map_err(|_| ShrinkError::Scenario(format!("seed {seed} does not fit a TOML integer")))?;
    doc.insert("seed_start".into(), Value::Integer(start));
    doc.insert("expect".into(), expect_table(s, kind, seeds));
    Ok(())
}

/// Shrinks seed `seed` of the scenario `source` (read from `file`).
pub fn shrink(
    source: &str,
    file: &str,
    seed: u64,
    swarm: bool,
    kind: Option<ViolationKind>,
    max_runs: u64,
) -> Result<Shrunk, ShrinkError> {
    if max_runs == 0 {
        return Err(ShrinkError::NoRunBudget);
    }
    let scenario =
        scenario::parse(source, file).map_err(|e| ShrinkError::Scenario(e.to_string()))?;
    let crate::suite::SeedRun {
        outcome: out,
        report,
        ..
    } = crate::suite::seed::run(
        &scenario.options,
        seed,
        crate::suite::RunSeed {
            keep_trace: false,
            swarm,
            terse: false,
        },
    );
    let kind = kind_to_keep(&scenario, &report, seed, kind)?;
    let scripted = scenario::emit::scripted(source, &scenario.options, &out.script, seed)
        .map_err(|e| ShrinkError::Scenario(format!("{file}: {e}")))?;
    let mut doc: Table =
        toml::from_str(&scripted).map_err(|e| ShrinkError::Scenario(e.to_string()))?;
    let before = size(&doc, out.events);
    let mut s = Search {
        seed,
        kind,
        file: file.to_string(),
        runs: 0,
        max_runs,
    };
    if s.fails(&doc).is_none() {
        return Err(ShrinkError::ScriptedDiffers { seed, kind });
    }
    let mut pinned = pin_latency(&mut s, &mut doc);
    loop {
        let round_start = doc.clone();
        fewer_faults(&mut s, &mut doc);
        fewer_workers(&mut s, &mut doc);
        fewer_ops(&mut s, &mut doc);
        shorter_faults(&mut s, &mut doc);
        if !pinned {
            pinned = pin_latency(&mut s, &mut doc);
        }
        if doc == round_start || s.spent() {
            break;
        }
    }
    finish_doc(&mut doc, &scenario, kind, seed, pinned)?;
    let events =
        fails_under(&doc, file, seed, kind).ok_or(ShrinkError::ScriptedDiffers { seed, kind })?;
    let failing = (1..=CHECK_SEEDS)
        .filter(|i| fails_under(&doc, file, seed.wrapping_add(*i), kind).is_some())
        .count() as u64;
    let after = size(&doc, events);
    let body = toml::to_string(&doc).map_err(|e| ShrinkError::Scenario(e.to_string()))?;
    let header = format!(
        "# Shrunk by `fencesim shrink {file} --seed {seed}{}`: keeps {kind}.\n# faults {} -> {}, events {} -> {}, workers {} -> {}, ops {} -> {}.\n# Fully scripted (no random faults); {}.\n",
        if swarm { " --swarm" } else { "" },
        before.faults, after.faults, before.events, after.events,
        before.workers, after.workers, before.ops, after.ops,
        if pinned {
            "latency pinned, so every seed runs the same"
        } else {
            "latency jitter kept (no pinned latency reproduces it): seed-dependent"
        }
    );
    Ok(Shrunk {
        text: header + &body,
        kind,
        before,
        after,
        runs: s.runs,
        latency_pinned: pinned,
        other_seeds_failing: (failing, CHECK_SEEDS),
        hit_budget: s.spent(),
    })
}

/// The violation the shrink keeps: the one asked for (which the seed's
/// run must show), else the scenario's default.
fn kind_to_keep(
    scenario: &Scenario,
    report: &check::Report,
    seed: u64,
    kind: Option<ViolationKind>,
) -> Result<ViolationKind, ShrinkError> {
    Ok(match kind {
        Some(k) if report.count(k) > 0 => k,
        Some(wanted) => {
            let found: Vec<&str> = report.kinds().map(|k| k.name()).collect();
            return Err(ShrinkError::KindAbsent {
                seed,
                wanted,
                found: if found.is_empty() {
                    "no violation".into()
                } else {
                    found.join(", ")
                },
            });
        }
        None => default_kind(scenario, report).ok_or(ShrinkError::NotFailing { seed })?,
    })
}
