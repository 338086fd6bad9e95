//! The search: a single-threaded, level-by-level BFS over the harness's
//! transitions, with a set of 64-bit state fingerprints (ahash, fixed keys)
//! and, per unique state, only its parent link and the action that reached
//! it — the full states of one level are all it holds at a time. The first
//! violation met is at minimal depth, and the fixed action order makes it
//! deterministic; its path is rebuilt by replaying the actions from the
//! initial state. A violating state is terminal. Exhausting the space
//! within the bounds proves the properties there.
//!
//! Reductions: messages in flight are a multiset (sorted), copies of one
//! message are one choice, and equal states are explored once. No symmetry
//! between workers: their ids are in their owner nonces and op ids, so two
//! workers are not interchangeable in the code's state without a remapping
//! of those numbers, which is not implemented. No partial-order reduction.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::{Duration, Instant};

use super::bounds::BFS_STATES_MAX;
use super::harness::{Action, Cut, Harness, Next};
use super::judge::Finding;
use super::state::State;
use crate::protocol::Node;

/// The outcome of one code-level check.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub unique_states: usize,
    pub transitions: u64,
    pub max_depth: usize,
    pub hits: Hits,
    /// Some step accepted a write; some write of a superseded generation
    /// reached the resource (the vacuity witnesses).
    pub write_accepted: bool,
    pub stale_attempt: bool,
    pub counterexample: Option<Counterexample>,
    pub elapsed: Duration,
}

/// Which bounds cut some path.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Hits {
    pub horizon: bool,
    pub in_flight: bool,
    pub grants: bool,
    /// The state bound stopped the search: no verdict.
    pub max_states: bool,
}

impl Hits {
    pub fn names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (hit, name) in [
            (self.horizon, "horizon"),
            (self.in_flight, "in-flight"),
            (self.grants, "grants"),
            (self.max_states, "max-states"),
        ] {
            if hit {
                out.push(name);
            }
        }
        out
    }
}

/// A shortest path to a violation: each action with the instant it ran at.
#[derive(Clone, Debug)]
pub struct Counterexample {
    pub finding: Finding,
    pub steps: Vec<(Action, u64)>,
    /// Found by the BFS (no shorter path exists); false: the DFS's path.
    pub shortest: bool,
}

impl Outcome {
    /// Proved: no violation, the space exhausted within the bounds.
    pub fn proved(&self) -> bool {
        self.counterexample.is_none() && !self.hits.max_states
    }

    /// Both vacuity witnesses were reached.
    pub fn vacuity_ok(&self) -> bool {
        self.write_accepted && self.stale_attempt
    }

    pub fn states_per_sec(&self) -> f64 {
        self.unique_states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Fingerprints are already hashes: the set uses them as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 fingerprints are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Runs the BFS to a violation, exhaustion or the state bound.
pub fn search<N: Node + Clone + Hash + Eq>(h: &Harness<N>) -> Outcome {
    bfs(h, None).0
}

/// [`explore`] level by level: the first transition the observer stops
/// at is at minimal depth, and its path (parent links) is a shortest one.
/// Bounded by [`BFS_STATES_MAX`] unique states, as the BFS is.
pub fn explore_shortest<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    observer: &mut dyn Observer<N>,
) -> (Outcome, Option<Vec<Action>>) {
    bfs(h, Some(observer))
}

/// The BFS; with an observer, every transition is shown to it and a
/// violation does not stop the search (see [`explore`]).
fn bfs<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    mut observer: Option<&mut dyn Observer<N>>,
) -> (Outcome, Option<Vec<Action>>) {
    let started = Instant::now();
    let init = h.initial();
    let mut seen: HashSet<u64, BuildHasherDefault<Identity>> = HashSet::default();
    seen.insert(init.fingerprint());
    // parents[i]: (parent index, action) of unique state i; state 0 is the root.
    let mut parents: Vec<(u32, Option<Action>)> = vec![(0, None)];
    let mut level: Vec<(u32, State<N>)> = vec![(0, init)];
    let mut out = Outcome::unexplored();
    let mut stopped = None;
    'levels: while !level.is_empty() {
        let mut next_level = Vec::new();
        for (id, s) in &level {
            let mut cut = None;
            for action in h.actions(s, &mut cut) {
                out.transitions += 1;
                let next = h.next(s, action);
                if observe(observer.as_deref_mut(), s, action, &next) {
                    let mut path = path_to(&parents, *id);
                    path.push(action);
                    stopped = Some(path);
                    break 'levels;
                }
                let (succ, notes) = match next {
                    Next::Cut(c) => {
                        record_cut(&mut out.hits, c);
                        continue;
                    }
                    Next::Violation(finding, notes, _) => {
                        out.write_accepted |= notes.write_accepted;
                        out.stale_attempt |= notes.stale_attempt;
                        let mut path = path_to(&parents, *id);
                        path.push(action);
                        out.max_depth = out.max_depth.max(path.len());
                        if out.counterexample.is_none() {
                            out.counterexample = Some(replay(h, finding, &path));
                        }
                        if observer.is_some() {
                            continue; // exploring: a violating state is terminal
                        }
                        break 'levels;
                    }
                    Next::State(succ, notes) => (succ, notes),
                };
                out.write_accepted |= notes.write_accepted;
                out.stale_attempt |= notes.stale_attempt;
                if !seen.insert(succ.fingerprint()) {
                    continue;
                }
                if parents.len() >= h.bounds.max_states.min(BFS_STATES_MAX) {
                    out.hits.max_states = true;
                    break 'levels;
                }
                let child = parents.len() as u32;
                parents.push((*id, Some(action)));
                next_level.push((child, succ));
            }
            if let Some(c) = cut {
                record_cut(&mut out.hits, c);
            }
        }
        if !next_level.is_empty() {
            out.max_depth += 1;
        }
        level = next_level;
    }
    out.unique_states = parents.len();
    out.elapsed = started.elapsed();
    (out, stopped)
}

/// Shows a transition to the observer, if any: true if it stops there.
fn observe<N>(
    observer: Option<&mut (dyn Observer<N> + '_)>,
    from: &State<N>,
    action: Action,
    next: &Next<N>,
) -> bool {
    let Some(o) = observer else { return false };
    let go_on = match next {
        Next::State(to, _) => o.step(from, action, to, None),
        Next::Violation(f, _, to) => o.step(from, action, to, Some(f)),
        Next::Cut(_) => true,
    };
    !go_on
}

fn record_cut(hits: &mut Hits, cut: Cut) {
    match cut {
        Cut::Horizon => hits.horizon = true,
        Cut::InFlight => hits.in_flight = true,
        Cut::Grants => hits.grants = true,
    }
}

/// The actions from the root to unique state `id`.
fn path_to(parents: &[(u32, Option<Action>)], mut id: u32) -> Vec<Action> {
    let mut path = Vec::new();
    while let (parent, Some(action)) = parents[id as usize] {
        path.push(action);
        id = parent;
    }
    path.reverse();
    path
}

/// The path with each step's instant, replayed from the initial state (the
/// transitions are deterministic, so it reaches the same violation).
fn replay<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    finding: Finding,
    path: &[Action],
) -> Counterexample {
    Counterexample {
        finding,
        steps: timed(h, path),
        shortest: true,
    }
}

/// Each action of a path the search took, with the instant it ran at
/// (replayed from the initial state; the transitions are deterministic).
pub fn timed<N: Node + Clone + Hash + Eq>(h: &Harness<N>, path: &[Action]) -> Vec<(Action, u64)> {
    let mut s = h.initial();
    let mut steps = Vec::with_capacity(path.len());
    for &action in path {
        match h.next(&s, action) {
            Next::State(next, _) => {
                s = next;
                steps.push((action, s.now_ns));
            }
            Next::Violation(_, _, end) => steps.push((action, end.now_ns)),
            Next::Cut(_) => unreachable!("a path the search took was cut on replay"),
        }
    }
    steps
}

/// The proof search: an iterative DFS whose only memory per unique state
/// is its fingerprint (the stack holds the current path's states), so a
/// proof costs ~20 bytes a state. It stops at the first violation, with
/// that (not necessarily shortest) path; [`check`] then asks for a
/// shortest one.
pub fn prove<N: Node + Clone + Hash + Eq>(h: &Harness<N>) -> Outcome {
    dfs(h, None, None).0
}

/// Sees every transition a search generates (the refinement check's hook).
pub trait Observer<N> {
    /// The step from `from` by `action` to `to`; with `finding`, `to` is
    /// the violating state the step left (terminal). False stops the search.
    fn step(
        &mut self,
        from: &State<N>,
        action: Action,
        to: &State<N>,
        finding: Option<&Finding>,
    ) -> bool;
}

/// The whole space within the bounds, every transition shown to
/// `observer`: the proof's DFS, except that a violating state is terminal
/// and the search goes on past it (its first violation, with the DFS's
/// path, is the outcome's counterexample). Stops where the observer says
/// so, returning the path to (and including) that transition.
pub fn explore<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    observer: &mut dyn Observer<N>,
) -> (Outcome, Option<Vec<Action>>) {
    dfs(h, None, Some(observer))
}

/// One frame of the DFS's path: a state, the actions left to try from it,
/// and the action that led to it.
type Frame<N> = (State<N>, std::vec::IntoIter<Action>, Option<Action>);

/// The actions from the root through the top frame, then `last`.
fn path_through<N>(stack: &[Frame<N>], last: Action) -> Vec<Action> {
    let mut path: Vec<Action> = stack.iter().filter_map(|f| f.2).collect();
    path.push(last);
    path
}

/// DFS, optionally depth-limited. With a limit, a state is entered again
/// when reached by a shorter path than before (the set keeps each
/// fingerprint's shallowest depth), so a violation within the limit is
/// found if one exists. With an observer, every transition is shown to it
/// and a violation does not stop the search (see [`explore`]).
fn dfs<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    limit: Option<usize>,
    mut observer: Option<&mut dyn Observer<N>>,
) -> (Outcome, Option<Vec<Action>>) {
    let started = Instant::now();
    let init = h.initial();
    let mut seen: HashMap<u64, u16, BuildHasherDefault<Identity>> = HashMap::default();
    seen.insert(init.fingerprint(), 0);
    let mut out = Outcome::unexplored();
    let mut cut = None;
    let first = h.actions(&init, &mut cut);
    let mut stack: Vec<Frame<N>> = vec![(init, first.into_iter(), None)];
    if let Some(c) = cut {
        record_cut(&mut out.hits, c);
    }
    let mut stopped = None;
    while let Some((s, actions, _)) = stack.last_mut() {
        let Some(action) = actions.next() else {
            stack.pop();
            continue;
        };
        out.transitions += 1;
        let next = h.next(s, action);
        if observe(observer.as_deref_mut(), s, action, &next) {
            stopped = Some(path_through(&stack, action));
            break;
        }
        let (succ, notes) = match next {
            Next::Cut(c) => {
                record_cut(&mut out.hits, c);
                continue;
            }
            Next::Violation(finding, notes, _) => {
                out.write_accepted |= notes.write_accepted;
                out.stale_attempt |= notes.stale_attempt;
                let path = path_through(&stack, action);
                out.max_depth = out.max_depth.max(path.len());
                if out.counterexample.is_none() {
                    let mut c = replay(h, finding, &path);
                    c.shortest = false;
                    out.counterexample = Some(c);
                }
                if observer.is_some() {
                    continue; // exploring: a violating state is terminal
                }
                break;
            }
            Next::State(succ, notes) => (succ, notes),
        };
        out.write_accepted |= notes.write_accepted;
        out.stale_attempt |= notes.stale_attempt;
        let depth = stack.len() as u16;
        match seen.get_mut(&succ.fingerprint()) {
            Some(d) if limit.is_none() || *d <= depth => continue,
            Some(d) => *d = depth,
            None => {
                seen.insert(succ.fingerprint(), depth);
            }
        }
        if seen.len() > h.bounds.max_states {
            out.hits.max_states = true;
            break;
        }
        if limit.is_some_and(|l| depth as usize >= l) {
            continue; // at the limit: its successors would be deeper
        }
        let mut cut = None;
        let next_actions = h.actions(&succ, &mut cut);
        if let Some(c) = cut {
            record_cut(&mut out.hits, c);
        }
        stack.push((succ, next_actions.into_iter(), Some(action)));
        out.max_depth = out.max_depth.max(stack.len() - 1);
    }
    out.unique_states = seen.len();
    out.elapsed = started.elapsed();
    (out, stopped)
}

impl Outcome {
    /// An outcome before its search: one state, nothing seen.
    pub fn unexplored() -> Outcome {
        Outcome {
            unique_states: 1,
            transitions: 0,
            max_depth: 0,
            hits: Hits::default(),
            write_accepted: false,
            stale_attempt: false,
            counterexample: None,
            elapsed: Duration::ZERO,
        }
    }
}

/// A shortest counterexample when the BFS cannot hold its levels: the
/// least depth limit under which the depth-limited DFS still finds a
/// violation, by bisection between 1 and the length of a known path.
fn shortest_by_bisection<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    known: Counterexample,
) -> Option<Counterexample> {
    let (mut lo, mut best) = (0, known);
    while lo + 1 < best.steps.len() {
        let mid = (lo + best.steps.len()) / 2;
        let run = dfs(h, Some(mid), None).0;
        if run.hits.max_states {
            return None;
        }
        match run.counterexample {
            Some(c) => best = c,
            None => lo = mid,
        }
    }
    best.shortest = true;
    Some(best)
}

/// A proof by DFS; if it meets a violation, the BFS's shortest path to
/// one: by BFS while its levels fit in [`BFS_STATES_MAX`] states, else by
/// bisecting a depth-limited DFS (the proof's own path, marked not
/// shortest, if that too hits the state bound). Counts and bounds hit are
/// the proof's.
pub fn check<N: Node + Clone + Hash + Eq>(h: &Harness<N>) -> Outcome {
    let mut proof = prove(h);
    if proof.counterexample.is_none() {
        return proof;
    }
    let started = Instant::now();
    let bfs = search(h);
    match bfs.counterexample {
        Some(c) => proof.counterexample = Some(c),
        None => {
            let known = proof
                .counterexample
                .take()
                .expect("the proof met a violation");
            let fallback = known.clone();
            proof.counterexample = Some(shortest_by_bisection(h, known).unwrap_or(fallback));
        }
    }
    proof.elapsed += started.elapsed();
    proof
}
