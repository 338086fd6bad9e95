//! The proof search: a multi-threaded depth-first search over a stateright `Model`, with
//! stateright's fingerprints and counts, without its generic bookkeeping.
//!
//! Why not `checker().spawn_dfs()`: profiled on fenced-cas at 5 clients / 10 grants (2
//! threads, 89.5 M transitions, 12.4 M unique states), stateright's DFS spent about 70 % of its
//! time in its `DashSet` of fingerprints (hashbrown probes that miss the cache twice per
//! transition, behind a shard lock), 10 % in its loop (a path vector copied for every new
//! state, one shared atomic counter bumped by both threads per transition) and 4 % looking up
//! property names in its discovery map (SipHash, per property per state; a `sometimes`
//! property re-records its discovery at every state satisfying it). The model's own code was
//! 12 %. A proof only needs to know which properties have a discovery, not a path to it (the
//! counterexample comes from `checker`'s BFS), so this search keeps none and does the rest
//! with per-thread counts and an open-addressing table of fingerprints.
//!
//! What it shares with stateright, so that the counts are the same: the `Model` (actions,
//! next_state, within_boundary, properties), the fingerprint (ahash with stateright's fixed
//! keys over the state's `Hash`; a state is new iff its fingerprint is), transitions counted
//! as stateright's `state_count` (initial states plus every successor within the boundary),
//! depth as stateright's (initial states at 1, a successor one deeper than its state). The
//! order differs, and with it the depth reported: states are popped from the top of a stack
//! `BATCH` at a time, and their successors new to the table pushed in action order. A property is checked on every state popped: `always` fails
//! where its condition is false, `sometimes` is reached where it is true. The search ends when
//! every state is expanded, an `always` property fails, or `stop` is set.
//!
//! Threads share the fingerprint table and a pool of stacks: a thread whose stack runs dry
//! waits in the pool; a busy thread that sees one waiting gives it the bottom half of its
//! stack (the states nearest the root, with the most work below them).

use stateright::{Expectation, Model};
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

/// stateright 0.31's fingerprint (`stateright::fingerprint`, private there): ahash with these
/// fixed keys, never zero.
const FINGERPRINT_KEYS: [u64; 4] = [123_456_789_987_654_321, 98_765_432_123_456_789, 0, 0];

fn fingerprint_hasher() -> ahash::RandomState {
    let [k0, k1, k2, k3] = FINGERPRINT_KEYS;
    ahash::RandomState::with_seeds(k0, k1, k2, k3)
}

/// States expanded between two looks at the pool (work sharing, progress counts).
const BLOCK: usize = 512;

/// States popped and expanded together: the first slots of all their successors are loaded
/// together, so that more cache misses overlap.
const BATCH: usize = 4;

/// Per-thread counts, published after every block (for progress) and at the end.
#[derive(Default)]
#[repr(align(128))]
struct Published {
    transitions: AtomicUsize,
    max_depth: AtomicUsize,
}

/// Counts and discoveries of a search.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// stateright's `state_count`: initial states plus every successor generated.
    pub transitions: usize,
    pub unique: usize,
    pub max_depth: usize,
    /// Properties with a discovery: failed `always`, reached `sometimes`.
    pub discovered: Vec<&'static str>,
    /// `stop` ended the search before it was complete.
    pub stopped: bool,
}

/// A running search, shared by its threads and the thread that watches it.
pub(crate) struct Search<'m, M: Model> {
    model: &'m M,
    threads: usize,
    fingerprints: Fingerprints,
    pool: Mutex<Pool<M::State>>,
    work_ready: Condvar,
    /// Threads waiting in the pool: a busy thread shares when this is not zero.
    hungry: AtomicUsize,
    /// Set by `request_stop` or by a failed `always` property.
    stop: AtomicBool,
    /// Set once the search ended by itself: everything expanded, or a failure.
    finished: AtomicBool,
    published: Vec<Published>,
    discovered: Mutex<Vec<&'static str>>,
    initial: usize,
}

struct Pool<S> {
    stacks: Vec<Vec<(S, usize)>>,
    idle: usize,
    done: bool,
}

impl<'m, M> Search<'m, M>
where
    M: Model + Sync,
    M::State: Hash + Send,
{
    pub(crate) fn new(model: &'m M, threads: usize) -> Self {
        let threads = threads.max(1);
        assert!(
            model
                .properties()
                .iter()
                .all(|p| p.expectation != Expectation::Eventually),
            "the proof search checks `always` and `sometimes` properties only"
        );
        let fingerprints = Fingerprints::new();
        let hasher = fingerprint_hasher();
        let mut initial = 0;
        let mut stack = Vec::new();
        for state in model.init_states() {
            if !model.within_boundary(&state) {
                continue;
            }
            initial += 1;
            if fingerprints.insert_alone(fingerprint(&hasher, &state)) {
                stack.push((state, 1));
            }
        }
        Search {
            model,
            threads,
            fingerprints,
            pool: Mutex::new(Pool {
                stacks: vec![stack],
                idle: 0,
                done: false,
            }),
            work_ready: Condvar::new(),
            hungry: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            finished: AtomicBool::new(false),
            published: (0..threads).map(|_| Published::default()).collect(),
            discovered: Mutex::new(Vec::new()),
            initial,
        }
    }

    /// Runs the search on `threads` threads; `watch` runs on the calling thread meanwhile,
    /// about every `period`, until the search has finished (it may call `request_stop`).
    pub(crate) fn run(&self, period: std::time::Duration, mut watch: impl FnMut(&Self)) -> Outcome {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.threads)
                .map(|t| {
                    std::thread::Builder::new()
                        .name(format!("checker-{t}"))
                        .spawn_scoped(scope, move || self.work(t))
                        .expect("spawn a checker thread")
                })
                .collect();
            while !workers.iter().all(|w| w.is_finished()) {
                std::thread::sleep(period);
                watch(self);
            }
            for w in workers {
                if let Err(panic) = w.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        let mut discovered = self.discovered.lock().expect("no thread panicked").clone();
        discovered.sort();
        discovered.dedup();
        Outcome {
            transitions: self.transitions(),
            unique: self.unique(),
            max_depth: self.max_depth(),
            discovered,
            stopped: !self.finished.load(Ordering::Relaxed),
        }
    }

    /// Transitions so far (exact once the search has ended).
    pub(crate) fn transitions(&self) -> usize {
        self.initial
            + self
                .published
                .iter()
                .map(|p| p.transitions.load(Ordering::Relaxed))
                .sum::<usize>()
    }

    /// Unique states so far (exact once the search has ended).
    pub(crate) fn unique(&self) -> usize {
        self.fingerprints.len.load(Ordering::Relaxed)
    }

    pub(crate) fn max_depth(&self) -> usize {
        self.published
            .iter()
            .map(|p| p.max_depth.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    /// Ends the search soon: threads leave at their next state.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut pool = self.pool.lock().expect("no thread panicked");
        pool.done = true;
        self.work_ready.notify_all();
    }

    fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
        self.request_stop();
    }

    /// One thread: take a stack from the pool, expand it block by block, share, repeat.
    fn work(&self, thread: usize) {
        let model = self.model;
        let properties = model.properties();
        let hasher = fingerprint_hasher();
        let mut found = vec![false; properties.len()];
        let mut actions = Vec::new();
        let mut successors: Vec<(M::State, u64, u64, usize)> = Vec::new();
        let mut transitions = 0usize;
        let mut max_depth = 0usize;
        let mut inserted = 0usize;
        let published = &self.published[thread];
        while let Some(mut stack) = self.take_stack() {
            while !stack.is_empty() && !self.stop.load(Ordering::Relaxed) {
                let table = self.fingerprints.table.read().expect("no thread panicked");
                for _ in 0..BLOCK / BATCH {
                    if stack.is_empty()
                        || self.stop.load(Ordering::Relaxed)
                        || self.fingerprints.wants_growth()
                    {
                        break;
                    }
                    let mut failed = false;
                    for _ in 0..BATCH {
                        let Some((state, depth)) = stack.pop() else {
                            break;
                        };
                        max_depth = max_depth.max(depth);
                        if self.discover(&properties, &mut found, &state) {
                            failed = true;
                            break;
                        }
                        model.actions(&state, &mut actions);
                        for action in actions.drain(..) {
                            let Some(next) = model.next_state(&state, action) else {
                                continue;
                            };
                            if !model.within_boundary(&next) {
                                continue;
                            }
                            let fp = fingerprint(&hasher, &next);
                            successors.push((next, fp, 0, depth + 1));
                        }
                    }
                    if failed {
                        self.finish();
                        break;
                    }
                    transitions += successors.len();
                    // All first slots are loaded before any is compared, so that the misses
                    // overlap instead of queueing one behind each successor's work.
                    for (_, fp, first, _) in successors.iter_mut() {
                        *first = table.first_slot(*fp);
                    }
                    for (next, fp, first, depth) in successors.drain(..) {
                        if first != fp && table.insert(fp) {
                            inserted += 1;
                            stack.push((next, depth));
                        }
                    }
                    if inserted >= 64 {
                        self.fingerprints
                            .count(std::mem::take(&mut inserted), &table);
                    }
                }
                self.fingerprints
                    .count(std::mem::take(&mut inserted), &table);
                drop(table);
                self.fingerprints.grow_if_wanted();
                published.transitions.store(transitions, Ordering::Relaxed);
                published.max_depth.store(max_depth, Ordering::Relaxed);
                if stack.len() > 1 && self.hungry.load(Ordering::Relaxed) > 0 {
                    self.share(&mut stack);
                }
            }
        }
    }

    /// Checks `state` against the properties this thread has no discovery for yet, records
    /// new discoveries, and returns whether an `always` property failed.
    fn discover(
        &self,
        properties: &[stateright::Property<M>],
        found: &mut [bool],
        state: &M::State,
    ) -> bool {
        let mut failed = false;
        for (p, found) in properties.iter().zip(found.iter_mut()) {
            if *found {
                continue;
            }
            let holds = (p.condition)(self.model, state);
            let discovery = match p.expectation {
                Expectation::Always => !holds,
                Expectation::Sometimes => holds,
                Expectation::Eventually => unreachable!("refused by Search::new"),
            };
            if discovery {
                *found = true;
                failed |= p.expectation == Expectation::Always;
                let mut discovered = self.discovered.lock().expect("no thread panicked");
                discovered.push(p.name);
            }
        }
        failed
    }

    /// Gives the bottom half of `stack` to the pool.
    fn share(&self, stack: &mut Vec<(M::State, usize)>) {
        let half: Vec<_> = stack.drain(..stack.len() / 2).collect();
        let mut pool = self.pool.lock().expect("no thread panicked");
        if pool.done {
            return;
        }
        pool.stacks.push(half);
        self.work_ready.notify_one();
    }

    /// A stack to expand, or `None` once the search is over: stopped, or every thread idle
    /// with nothing left to share.
    fn take_stack(&self) -> Option<Vec<(M::State, usize)>> {
        let mut pool = self.pool.lock().expect("no thread panicked");
        loop {
            if pool.done {
                return None;
            }
            if let Some(stack) = pool.stacks.pop() {
                return Some(stack);
            }
            pool.idle += 1;
            if pool.idle == self.threads {
                drop(pool);
                self.finish();
                return None;
            }
            self.hungry.fetch_add(1, Ordering::Relaxed);
            pool = self.work_ready.wait(pool).expect("no thread panicked");
            self.hungry.fetch_sub(1, Ordering::Relaxed);
            pool.idle -= 1;
        }
    }
}

fn fingerprint<S: Hash>(hasher: &ahash::RandomState, state: &S) -> u64 {
    // std's `hash_one`: build_hasher, hash, finish, as stateright does.
    let fp = BuildHasher::hash_one(hasher, state);
    // stateright's `Fingerprint` is a NonZeroU64 and panics the same way.
    assert!(fp != 0, "hasher returned zero, an invalid fingerprint");
    fp
}

/// The set of fingerprints seen: open addressing with linear probing, split into shards by
/// the fingerprint's top bits (a shard is the unit of growth, so growing needs little more
/// memory than the grown table). Inserting is lock-free; growing waits for every thread to
/// leave its block (threads hold `table` for reading while they expand a block).
struct Fingerprints {
    table: RwLock<Table>,
    /// Fingerprints inserted, counted by each thread in batches.
    len: AtomicUsize,
    grow_wanted: AtomicBool,
}

struct Table {
    shards: Vec<Box<[AtomicU64]>>,
}

const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;
const SHARD_SLOTS_MIN: usize = 1 << 10;

/// Grow when the table is this full (numerator / denominator): at 12.4 M states, 2^24 slots
/// hold them at 0.74, 10.9 bytes per state.
const LOAD_MAX: (usize, usize) = (4, 5);

impl Table {
    fn capacity(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    fn slot(&self, fp: u64) -> (&[AtomicU64], usize) {
        let shard = &self.shards[(fp >> (64 - SHARD_BITS)) as usize];
        (shard, fp as usize & (shard.len() - 1))
    }

    /// What `fp`'s first slot holds: `fp` when it is there without probing.
    fn first_slot(&self, fp: u64) -> u64 {
        let (shard, i) = self.slot(fp);
        shard[i].load(Ordering::Relaxed)
    }

    /// Adds `fp`; true if it was not there.
    fn insert(&self, fp: u64) -> bool {
        let (shard, mut i) = self.slot(fp);
        for _ in 0..shard.len() {
            let seen = shard[i].load(Ordering::Relaxed);
            if seen == fp {
                return false;
            }
            if seen == 0 {
                match shard[i].compare_exchange(0, fp, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return true,
                    Err(won) if won == fp => return false,
                    Err(_) => {}
                }
            }
            i = (i + 1) & (shard.len() - 1);
        }
        panic!("fingerprint shard full: growth did not keep up");
    }
}

impl Fingerprints {
    fn new() -> Self {
        Fingerprints {
            table: RwLock::new(Table {
                shards: (0..SHARDS).map(|_| empty_shard(SHARD_SLOTS_MIN)).collect(),
            }),
            len: AtomicUsize::new(0),
            grow_wanted: AtomicBool::new(false),
        }
    }

    /// Inserts before any thread runs.
    fn insert_alone(&self, fp: u64) -> bool {
        let table = self.table.read().expect("no thread panicked");
        let new = table.insert(fp);
        if new {
            self.count(1, &table);
        }
        drop(table);
        self.grow_if_wanted();
        new
    }

    fn wants_growth(&self) -> bool {
        self.grow_wanted.load(Ordering::Relaxed)
    }

    /// Adds `inserted` to the count and asks for growth past the load limit.
    fn count(&self, inserted: usize, table: &Table) {
        if inserted == 0 {
            return;
        }
        let len = self.len.fetch_add(inserted, Ordering::Relaxed) + inserted;
        if len * LOAD_MAX.1 > table.capacity() * LOAD_MAX.0 {
            self.grow_wanted.store(true, Ordering::Relaxed);
        }
    }

    /// Doubles every shard, one at a time, once no thread holds the table.
    fn grow_if_wanted(&self) {
        if !self.wants_growth() {
            return;
        }
        let mut table = self.table.write().expect("no thread panicked");
        while self.len.load(Ordering::Relaxed) * LOAD_MAX.1 > table.capacity() * LOAD_MAX.0 {
            for shard in table.shards.iter_mut() {
                let mut grown = empty_shard(shard.len() * 2);
                let mask = grown.len() - 1;
                for fp in std::mem::take(shard).iter_mut().map(|s| *s.get_mut()) {
                    if fp == 0 {
                        continue;
                    }
                    let mut i = fp as usize & mask;
                    while *grown[i].get_mut() != 0 {
                        i = (i + 1) & mask;
                    }
                    *grown[i].get_mut() = fp;
                }
                *shard = grown;
            }
        }
        self.grow_wanted.store(false, Ordering::Relaxed);
    }
}

fn empty_shard(slots: usize) -> Box<[AtomicU64]> {
    assert!(slots.is_power_of_two());
    (0..slots).map(|_| AtomicU64::new(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{load, LockModel, Verdict};
    use stateright::Checker;

    fn run<M: Model + Sync>(model: &M, threads: usize) -> Outcome
    where
        M::State: Hash + Send,
    {
        Search::new(model, threads).run(std::time::Duration::from_millis(1), |_| {})
    }

    /// The search is written twice: here and in stateright. On every bundled spec, with and
    /// without symmetry, both count the same transitions and unique states and discover the
    /// same properties when the model is safe, and both find a failure when it is not.
    #[test]
    fn counts_and_discoveries_agree_with_stateright_on_every_bundled_spec() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("models/")
            .map(|e| e.expect("entry").path())
            .collect();
        paths.sort();
        for path in paths {
            let spec = load(&path).unwrap_or_else(|err| panic!("{err}"));
            for symmetry in [false, true] {
                let mut bounds = spec.bounds;
                bounds.symmetry = symmetry;
                let model = LockModel::new(bounds);
                let theirs = model
                    .clone()
                    .checker()
                    .threads(2)
                    .finish_when(stateright::HasDiscoveries::AnyFailures)
                    .spawn_dfs()
                    .join();
                let mut their_discoveries: Vec<_> = theirs.discoveries().into_keys().collect();
                their_discoveries.sort();
                for threads in [1, 2] {
                    let ours = run(&model, threads);
                    let what = format!("{} symmetry={symmetry} threads={threads}", spec.name);
                    assert!(!ours.stopped, "{what}");
                    let failed =
                        |d: &[&str]| model.violations().iter().any(|v| d.contains(&v.name()));
                    if spec.expected.verdict == Verdict::Safe {
                        assert_eq!(ours.transitions, theirs.state_count(), "{what}");
                        assert_eq!(ours.unique, theirs.unique_state_count(), "{what}");
                        assert_eq!(ours.discovered, their_discoveries, "{what}");
                        assert!(!failed(&ours.discovered), "{what}");
                    } else {
                        assert!(failed(&ours.discovered), "{what}");
                        assert!(failed(&their_discoveries), "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_stop_request_ends_the_search_with_partial_counts() {
        let spec =
            load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/fenced-cas.toml"))
                .expect("bundled spec");
        let mut bounds = spec.bounds;
        bounds.clients = 5;
        bounds.grants_max = 10;
        let model = LockModel::new(bounds);
        let search = Search::new(&model, 2);
        let outcome = search.run(std::time::Duration::from_millis(5), |s| {
            if s.unique() > 0 {
                s.request_stop();
            }
        });
        assert!(outcome.stopped);
        assert!(outcome.unique > 0 && outcome.unique < 12_372_251);
    }

    #[test]
    fn the_table_keeps_every_fingerprint_once_through_growth() {
        let set = Fingerprints::new();
        let hasher = fingerprint_hasher();
        let count = 300_000u64;
        for round in 0..2 {
            for n in 0..count {
                let new = set.insert_alone(fingerprint(&hasher, &n));
                assert_eq!(new, round == 0, "{n}");
            }
        }
        assert_eq!(set.len.load(Ordering::Relaxed), count as usize);
        let table = set.table.read().unwrap();
        let stored: usize = table
            .shards
            .iter()
            .map(|s| s.iter().filter(|f| f.load(Ordering::Relaxed) != 0).count())
            .sum();
        assert_eq!(stored, count as usize);
        assert!(table.capacity() * LOAD_MAX.0 >= count as usize * LOAD_MAX.1);
    }
}
