//! Running the models: proofs, shortest counterexamples, statistics, the web explorer.
//!
//! Two searches, because stateright 0.31 cannot give both answers cheaply in one run:
//! - `prove` runs a multi-threaded DFS (`dfs`: stateright's fingerprints and counts without
//!   its per-state bookkeeping) over the whole bounded space. It is the fastest way to show a
//!   safe model has no violation, and its unique-state count is exact (the tests pin it). It
//!   stops at the first failure and keeps no path: stateright's DFS would give one, but neither
//!   shortest nor deterministic (it keeps the *last* discovery per property), and its
//!   multi-threaded BFS is not level by level either.
//! - `shortest_counterexample` is a single-threaded, level-by-level BFS over the same `Model`
//!   that stops at the first state violating its target property. The first such state found
//!   is at minimal depth, and the search is deterministic (fixed action order), so tests can
//!   assert the exact discovery. Only states violating the target are terminal, because in
//!   incr-beside-lease a stale write is only reachable through an earlier token regression.
//!
//! `check` picks the strategy from the spec's expectation and always reaches a conclusive
//! verdict: expected-unsafe models are searched per property (each search ends at a violation
//! or exhausts the space); expected-safe models are proved, and searched only if the proof fails.
//! The one exception is an interrupt (`CheckOptions::interrupt`, set by `fencesim check` on
//! Ctrl-C): both searches poll it, stop, and the report carries the partial counts and no
//! verdict.

use super::action::Action;
use super::counterexample::{replay, Counterexample};
use super::dfs;
use super::lock_model::LockModel;
use super::spec::{ModelSpec, Verdict, Violation};
use super::state::State;
use anyhow::Context as _;
use stateright::Model;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts of one search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// States generated, including ones already seen.
    pub total_states: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub elapsed: Duration,
}

impl Stats {
    /// Unique states per second of wall time.
    pub fn states_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.unique_states as f64 / secs
        } else {
            0.0
        }
    }
}

/// Which search a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Proof,
    Search(Violation),
}

pub type ProgressFn = Arc<dyn Fn(Phase, &Stats) + Send + Sync>;

#[derive(Clone)]
pub struct CheckOptions {
    /// Threads for the proof (the counterexample search is single-threaded by design).
    pub threads: usize,
    /// Called about once a second while a search runs, and once when it ends.
    pub progress: Option<ProgressFn>,
    /// Polled while a search runs; once set, the search stops and `check` returns a report
    /// with `interrupted` set and no verdict. A static because a signal handler sets it.
    pub interrupt: Option<&'static AtomicBool>,
}

fn is_set(interrupt: Option<&AtomicBool>) -> bool {
    interrupt.is_some_and(|flag| flag.load(Ordering::Relaxed))
}

impl Default for CheckOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        CheckOptions {
            threads,
            progress: None,
            interrupt: None,
        }
    }
}

/// Result of `prove`.
#[derive(Clone, Debug)]
pub struct Proof {
    pub stats: Stats,
    /// Safety properties with a discovery (empty: none violated within the bounds).
    pub violated: Vec<Violation>,
    /// `sometimes` properties that were reached (vacuity check).
    pub reached: Vec<&'static str>,
    /// Stopped by `CheckOptions::interrupt`: `stats` are partial, `violated` means nothing.
    pub interrupted: bool,
}

/// Result of `shortest_counterexample`.
#[derive(Clone, Debug)]
pub struct Search {
    pub violation: Violation,
    pub stats: Stats,
    pub counterexample: Option<Counterexample>,
    /// `sometimes` properties reached before the search stopped.
    pub reached: Vec<&'static str>,
    /// Stopped by `CheckOptions::interrupt`: `stats` are partial, no counterexample.
    pub interrupted: bool,
}

#[derive(Clone, Debug)]
pub struct CheckReport {
    pub spec: ModelSpec,
    pub verdict: Verdict,
    /// Present when the proof ran (expected-safe models).
    pub proof: Option<Proof>,
    /// One per safety property searched, in reporting order.
    pub searches: Vec<Search>,
    /// `sometimes` properties never reached; only reported for safe verdicts, where they make
    /// the model vacuous (an unsafe verdict is its own witness).
    pub unreached: Vec<&'static str>,
    /// How the result differs from the spec's expectation; empty when it meets it.
    pub mismatches: Vec<String>,
    /// A search was interrupted: `verdict` means nothing, the counts are partial, and
    /// `mismatches` says so (an interrupted check never meets its expectation).
    pub interrupted: bool,
}

impl CheckReport {
    pub fn meets_expectation(&self) -> bool {
        self.mismatches.is_empty()
    }

    pub fn violations(&self) -> Vec<Violation> {
        self.counterexamples().map(|c| c.violation).collect()
    }

    pub fn counterexamples(&self) -> impl Iterator<Item = &Counterexample> {
        self.searches
            .iter()
            .filter_map(|s| s.counterexample.as_ref())
    }

    /// The shortest counterexample over all violated properties (ties: reporting order).
    pub fn shortest(&self) -> Option<&Counterexample> {
        self.counterexamples().min_by_key(|c| c.len())
    }
}

/// Checks one spec against its expectation.
pub fn check(spec: &ModelSpec, options: &CheckOptions) -> CheckReport {
    let model = LockModel::new(spec.bounds);
    let progress = options.progress.as_ref();
    let interrupt = options.interrupt;
    let mut proof = None;
    let mut searches = Vec::new();
    let mut reached: Vec<&'static str> = Vec::new();
    let search_all = |searches: &mut Vec<Search>, reached: &mut Vec<&'static str>| {
        for violation in model.violations() {
            let search =
                shortest_counterexample_interruptible(&model, violation, progress, interrupt);
            reached.extend(search.reached.iter().copied());
            let stop = search.interrupted;
            searches.push(search);
            if stop {
                break;
            }
        }
    };
    if spec.expected.verdict == Verdict::Safe {
        let p = prove_interruptible(&model, options.threads, progress, interrupt);
        reached.extend(p.reached.iter().copied());
        let failed = !p.violated.is_empty() && !p.interrupted;
        proof = Some(p);
        if failed {
            search_all(&mut searches, &mut reached);
        }
    } else {
        search_all(&mut searches, &mut reached);
    }
    reached.sort();
    reached.dedup();
    let interrupted =
        proof.as_ref().is_some_and(|p| p.interrupted) || searches.iter().any(|s| s.interrupted);
    if interrupted {
        return CheckReport {
            spec: spec.clone(),
            verdict: spec.expected.verdict,
            proof,
            searches,
            unreached: Vec::new(),
            mismatches: vec!["interrupted: no verdict".to_string()],
            interrupted,
        };
    }

    let found: Vec<Violation> = searches
        .iter()
        .filter(|s| s.counterexample.is_some())
        .map(|s| s.violation)
        .collect();
    let verdict = if found.is_empty() {
        Verdict::Safe
    } else {
        Verdict::Unsafe
    };
    let unreached: Vec<&'static str> = if verdict == Verdict::Safe {
        model
            .witnesses()
            .into_iter()
            .filter(|p| !reached.contains(p))
            .collect()
    } else {
        Vec::new()
    };

    let mut mismatches = Vec::new();
    if verdict != spec.expected.verdict {
        mismatches.push(format!(
            "expected {}, found {}",
            spec.expected.verdict, verdict
        ));
    }
    for v in &spec.expected.violations {
        if !found.contains(v) {
            mismatches.push(format!(
                "expected a {v} violation, none exists within the bounds"
            ));
        }
    }
    for v in &found {
        if !spec.expected.violations.contains(v) {
            mismatches.push(format!("unexpected {v} violation"));
        }
    }
    for p in &unreached {
        mismatches.push(format!(
            "vacuous: `{p}` is never reached, so the safe verdict proves nothing"
        ));
    }
    CheckReport {
        spec: spec.clone(),
        verdict,
        proof,
        searches,
        unreached,
        mismatches,
        interrupted,
    }
}

/// Exhaustive multi-threaded DFS (`dfs`); stops at the first safety violation.
pub fn prove(model: &LockModel, threads: usize, progress: Option<&ProgressFn>) -> Proof {
    prove_interruptible(model, threads, progress, None)
}

/// `prove`, which also stops soon after `interrupt` is set (its threads leave at their next
/// state, and the proof returns partial counts).
pub fn prove_interruptible(
    model: &LockModel,
    threads: usize,
    progress: Option<&ProgressFn>,
    interrupt: Option<&AtomicBool>,
) -> Proof {
    let started = Instant::now();
    let search = dfs::Search::new(model, threads);
    let stats_of = |search: &dfs::Search<LockModel>| Stats {
        total_states: search.transitions(),
        unique_states: search.unique(),
        max_depth: search.max_depth(),
        elapsed: started.elapsed(),
    };
    let mut last_report = Instant::now();
    let outcome = search.run(Duration::from_millis(20), |search| {
        if is_set(interrupt) {
            search.request_stop();
        }
        if let Some(progress) = progress {
            if last_report.elapsed() >= Duration::from_secs(1) {
                last_report = Instant::now();
                progress(Phase::Proof, &stats_of(search));
            }
        }
    });
    let stats = Stats {
        total_states: outcome.transitions,
        unique_states: outcome.unique,
        max_depth: outcome.max_depth,
        elapsed: started.elapsed(),
    };
    if let Some(progress) = progress {
        progress(Phase::Proof, &stats);
    }
    if outcome.stopped {
        return Proof {
            stats,
            violated: Vec::new(),
            reached: Vec::new(),
            interrupted: true,
        };
    }
    let discovered = outcome.discovered;
    Proof {
        stats,
        violated: model
            .violations()
            .into_iter()
            .filter(|v| discovered.contains(&v.name()))
            .collect(),
        reached: model
            .witnesses()
            .into_iter()
            .filter(|p| discovered.contains(p))
            .collect(),
        interrupted: false,
    }
}

/// The fingerprints are already hashes; hashing them again would only cost time.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

fn fingerprint(state: &State) -> u64 {
    // DefaultHasher::new() has fixed keys, so fingerprints (and thus the search) are
    // deterministic across runs.
    let mut hasher = DefaultHasher::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// Single-threaded level-by-level BFS to the first state violating `violation`.
pub fn shortest_counterexample(
    model: &LockModel,
    violation: Violation,
    progress: Option<&ProgressFn>,
) -> Search {
    shortest_counterexample_interruptible(model, violation, progress, None)
}

/// `shortest_counterexample`, which also stops before the next expansion once `interrupt` is
/// set (one relaxed load per state: noise next to hashing it).
pub fn shortest_counterexample_interruptible(
    model: &LockModel,
    violation: Violation,
    progress: Option<&ProgressFn>,
    interrupt: Option<&AtomicBool>,
) -> Search {
    let started = Instant::now();
    let model = model.clone().with_terminal(&[violation]);
    let properties = model.properties();
    let sometimes: Vec<_> = properties
        .iter()
        .filter(|p| p.expectation == stateright::Expectation::Sometimes)
        .map(|p| (p.name, p.condition))
        .collect();
    let mut reached: Vec<&'static str> = Vec::new();

    // Parent links instead of stored paths: (parent index, action into this state).
    let mut parents: Vec<(u32, Option<Action>)> = Vec::new();
    let mut seen: HashMap<u64, (), BuildHasherDefault<IdentityHasher>> = HashMap::default();
    let mut queue: VecDeque<(State, u32, usize)> = VecDeque::new();
    let mut stats = Stats::default();
    let mut last_report = Instant::now();
    let mut actions = Vec::new();
    let mut found: Option<u32> = None;
    let mut interrupted = false;

    for init in model.init_states() {
        if seen.insert(fingerprint(&init), ()).is_none() {
            parents.push((u32::MAX, None));
            queue.push_back((init, (parents.len() - 1) as u32, 0));
        }
    }
    stats.total_states = queue.len();
    'search: while let Some((state, index, depth)) = queue.pop_front() {
        if is_set(interrupt) {
            interrupted = true;
            break;
        }
        stats.max_depth = stats.max_depth.max(depth);
        for &(name, condition) in &sometimes {
            if !reached.contains(&name) && condition(&model, &state) {
                reached.push(name);
            }
        }
        model.actions(&state, &mut actions);
        for action in actions.drain(..) {
            let Some(next) = model.next_state(&state, action) else {
                continue;
            };
            stats.total_states += 1;
            if seen.insert(fingerprint(&next), ()).is_some() {
                continue;
            }
            assert!(
                parents.len() < u32::MAX as usize,
                "search exceeds 2^32 states"
            );
            parents.push((index, Some(action)));
            let next_index = (parents.len() - 1) as u32;
            if next.violations & violation.bit() != 0 {
                // Generated while expanding depth `depth`, and every state of smaller depth
                // was expanded before: no shorter path violates the property.
                found = Some(next_index);
                stats.max_depth = stats.max_depth.max(depth + 1);
                break 'search;
            }
            queue.push_back((next, next_index, depth + 1));
        }
        if let Some(progress) = progress {
            if last_report.elapsed() >= Duration::from_secs(1) {
                last_report = Instant::now();
                stats.unique_states = seen.len();
                stats.elapsed = started.elapsed();
                progress(Phase::Search(violation), &stats);
            }
        }
    }
    stats.unique_states = seen.len();
    stats.elapsed = started.elapsed();
    if let Some(progress) = progress {
        progress(Phase::Search(violation), &stats);
    }

    let counterexample = found.map(|index| path_to(&model, violation, &parents, index));
    Search {
        violation,
        stats,
        counterexample,
        reached,
        interrupted,
    }
}

/// The counterexample ending at state `index`: its path followed back
/// along the parent links, replayed.
fn path_to(
    model: &LockModel,
    violation: Violation,
    parents: &[(u32, Option<Action>)],
    mut index: u32,
) -> Counterexample {
    let mut path = Vec::new();
    while let (parent, Some(action)) = parents[index as usize] {
        path.push(action);
        index = parent;
    }
    path.reverse();
    match replay(model, violation, &path) {
        Ok(counterexample) => counterexample,
        // The path was produced by this very model a moment ago.
        Err(err) => panic!("counterexample does not replay: {err}"),
    }
}

/// Serves stateright's web explorer for `spec` on 127.0.0.1:`port`. Blocks while serving.
pub fn explore(spec: &ModelSpec, port: u16) -> anyhow::Result<()> {
    let address = ("127.0.0.1", port);
    // stateright's server panics when it cannot bind; probing first turns that into an error.
    drop(
        std::net::TcpListener::bind(address)
            .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?,
    );
    let _ = LockModel::new(spec.bounds).checker().serve(address);
    Ok(())
}
