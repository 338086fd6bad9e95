//! The refinement check: the models and the code cannot drift. Every
//! transition the code-level search generates — the whole space within the
//! bounds, violating states terminal but the search going on past them —
//! is mapped into the protocol's atomic-step model (`abstraction.rs`), and
//! the model must allow it: either the model state does not change (a
//! stutter: a read, an acquire answered `Busy`, a timer that re-arms) or
//! one action of the model's transition relation leads from the mapped
//! source to the mapped target. A step that fires a timer is checked as
//! two: time advancing to the deadline (a lease may run out: the model's
//! `Expire`), then the node's handling at that instant. zk-sequential's
//! server may end several sessions in one step (deadlines at one instant):
//! that is one `Expire` or `DeleteNode` per session. A DynamoDB or
//! PostgreSQL client may decide on a lock already gone (it acts on an
//! answer whenever it arrives): a grant whose lease has ended, `Acquire`
//! then `Expire` (after the previous holder's `Expire`). etcd's server may
//! put a key and answer "you are first" in one Lock transaction, delete
//! several keys in one lease check, and end an acquisition whose client
//! never learnt its key's revision by deleting the key: a chain of the
//! model's `CreateNode`, `Answer`, `DeleteNode` and `Abandon`. The first step the
//! model does not allow stops the search and is reported with a path to it
//! (a level-by-level search then finds a shortest one, bounded as the BFS
//! is) and the model step closest to what the code did.

use std::hash::Hash;

use stateright::Model as _;

use super::abstraction::{Abstraction, Inspect, ModelOf};
use super::bounds::Bounds;
use super::harness::{Action, Harness};
use super::judge::Finding;
use super::search::{explore, explore_shortest, timed, Observer, Outcome};
use super::state::State;
use super::topology::{Builtin, Options, Topology, MS};
use crate::model::action::UNKNOWN_CLIENT;
use crate::model::state::{State as Model, CLIENTS_CAP, NO_HOLDER};
use crate::model::Action as ModelAction;
use crate::protocol::{Node, NodeId, ProtocolKind};

/// What a refinement check found.
#[derive(Clone, Debug)]
pub struct Refinement {
    pub of: ModelOf,
    /// The exploration: unique states (each one mapped), transitions,
    /// bounds hit, and the first violation met (not a divergence).
    pub outcome: Outcome,
    pub counts: Counts,
    pub divergence: Option<Divergence>,
}

impl Refinement {
    /// No divergence, and the whole space within the bounds was checked.
    pub fn passed(&self) -> bool {
        self.divergence.is_none() && !self.outcome.hits.max_states
    }
}

/// The model's actions the steps were matched to, in [`Counts::by_action`].
pub const ACTIONS: [&str; 8] = [
    "acquire",
    "expire",
    "send_write",
    "deliver_write",
    "commit_write",
    "create_node",
    "delete_node",
    "other",
];

/// Steps checked, and what each was.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Counts {
    /// Transitions checked (cut ones are not transitions).
    pub steps: u64,
    /// Steps that left the model state as it was.
    pub stutters: u64,
    /// Model actions matched, by [`ACTIONS`] (a timer step may match two:
    /// the expiry its time advance causes, then its own; a resume matched
    /// by a chain counts each of its actions).
    pub by_action: [u64; 8],
    /// Resumes (`--pause-holds`) matched by a chain of model actions.
    pub chains: u64,
    /// Lock servers' decisions matched by a grant whose lease had ended
    /// (`Acquire`, `Expire`; after the previous holder's `Expire`).
    pub late_grants: u64,
    /// etcd server steps matched by a chain of its keys' actions (a Lock
    /// transaction's put and answer, one lease check's deletions).
    pub server_chains: u64,
}

impl Counts {
    fn note(&mut self, action: ModelAction) {
        let i = match action {
            ModelAction::Acquire { .. } => 0,
            ModelAction::Expire => 1,
            ModelAction::SendWrite { .. } => 2,
            ModelAction::DeliverWrite { .. } => 3,
            ModelAction::CommitWrite { .. } => 4,
            ModelAction::CreateNode { .. } => 5,
            ModelAction::DeleteNode { .. } => 6,
            _ => 7,
        };
        self.by_action[i] += 1;
    }
}

/// A step of the code the model does not allow.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The search's path to the step, the step last, with each instant.
    pub path: Vec<(Action, u64)>,
    /// The path is a shortest one (the BFS's); false: the DFS's.
    pub shortest: bool,
    /// Which part of the step: `the step`, or the time advance before it.
    pub part: String,
    /// The model states before and after (None where the state has none).
    pub from: Option<Model>,
    pub to: Option<Model>,
    /// Why a state has no model state, if that is the divergence.
    pub unmapped: Option<String>,
    pub expected: Option<Expected>,
}

/// The model step closest to the code's (fewest differing fields).
#[derive(Clone, Debug)]
pub struct Expected {
    /// As the model's counterexamples word it, or `no change (stutter)`.
    pub step: String,
    /// `field: model …, code …`, one per field that differs.
    pub differences: Vec<String>,
}

/// Checks every transition of `h`'s search against its protocol's model;
/// Err: the mapping would not be exact at these bounds (refused).
///
/// The search runs with the write history kept (`Bounds::write_history`):
/// the same states as the proof's unless messages are lost.
pub fn refine<N: Node + Clone + Hash + Eq + Inspect>(h: &Harness<N>) -> Result<Refinement, String> {
    let h = &Harness {
        topology: h.topology.clone(),
        factory: h.factory,
        bounds: Bounds {
            write_history: true,
            ..h.bounds
        },
    };
    let abstraction = Abstraction::new(&h.topology, &h.bounds)?;
    let mut checker = Checker {
        abstraction: &abstraction,
        counts: Counts::default(),
        divergence: None,
    };
    if let Some(d) = initial_divergence(&abstraction, &h.initial()) {
        return Ok(Refinement {
            of: abstraction.of,
            outcome: Outcome::unexplored(),
            counts: Counts::default(),
            divergence: Some(d),
        });
    }
    let (outcome, stopped) = explore(h, &mut checker);
    let mut divergence = checker.divergence;
    if let (Some(d), Some(path)) = (divergence.as_mut(), stopped) {
        d.path = timed(h, &path);
        if let Some(shortest) = shortest_divergence(h, &abstraction) {
            *d = shortest;
        }
    }
    Ok(Refinement {
        of: abstraction.of,
        outcome,
        counts: checker.counts,
        divergence,
    })
}

/// The first divergence in breadth-first order, with a shortest path to
/// it; None if the BFS's state bound stops it first (the DFS's path
/// stands then).
fn shortest_divergence<N: Node + Clone + Hash + Eq + Inspect>(
    h: &Harness<N>,
    abstraction: &Abstraction,
) -> Option<Divergence> {
    let mut checker = Checker {
        abstraction,
        counts: Counts::default(),
        divergence: None,
    };
    let (_, stopped) = explore_shortest(h, &mut checker);
    let mut d = checker.divergence?;
    d.path = timed(h, &stopped?);
    d.shortest = true;
    Some(d)
}

/// The initial state must map to the model's (no grant, no lease, no write).
fn initial_divergence<N: Inspect>(
    abstraction: &Abstraction,
    init: &State<N>,
) -> Option<Divergence> {
    let initial = Model::initial();
    let (to, unmapped) = match abstraction.map(init, init.now_ns, None) {
        Ok(a) if abstraction.project(&a) == abstraction.project(&initial) => return None,
        Ok(a) => (Some(a), None),
        Err(why) => (None, Some(why)),
    };
    Some(Divergence {
        path: Vec::new(),
        shortest: false,
        part: "the initial state (the model's is empty)".into(),
        from: Some(initial),
        to,
        unmapped,
        expected: None,
    })
}

/// [`refine`] for a catalogue protocol's built-in nodes.
pub fn refine_protocol(
    kind: ProtocolKind,
    bounds: Bounds,
) -> Result<(Harness<Builtin>, Refinement), String> {
    refine_protocol_with(kind, Options::default(), bounds)
}

/// [`refine_protocol`] with protocol options set (`--fence`).
pub fn refine_protocol_with(
    kind: ProtocolKind,
    options: Options,
    bounds: Bounds,
) -> Result<(Harness<Builtin>, Refinement), String> {
    let harness = Harness {
        topology: Topology::new(kind, options, bounds.workers, bounds.timing)?,
        factory: super::topology::builtin,
        bounds,
    };
    let refinement = refine(&harness)?;
    Ok((harness, refinement))
}

/// The search's observer: maps both ends of each step and matches them.
struct Checker<'a> {
    abstraction: &'a Abstraction,
    counts: Counts,
    divergence: Option<Divergence>,
}

impl<N: Inspect> Observer<N> for Checker<'_> {
    fn step(
        &mut self,
        from: &State<N>,
        action: Action,
        to: &State<N>,
        finding: Option<&Finding>,
    ) -> bool {
        self.counts.steps += 1;
        let server = self
            .abstraction
            .server_steps_chain()
            .is_some_and(|coord| step_node(action) == Some(coord));
        match self.check(from, to, finding, chain_len(from, action), server) {
            Ok(()) => true,
            Err(d) => {
                self.divergence = Some(*d);
                false
            }
        }
    }
}

impl Checker<'_> {
    fn check<N: Inspect>(
        &mut self,
        from: &State<N>,
        to: &State<N>,
        finding: Option<&Finding>,
        chain_len: usize,
        server: bool,
    ) -> Result<(), Box<Divergence>> {
        let map = |s: &State<N>, now_ns: u64, finding, part: &str, before: Option<Model>| {
            self.abstraction.map(s, now_ns, finding).map_err(|why| {
                Box::new(Divergence {
                    path: Vec::new(),
                    shortest: false,
                    part: part.to_string(),
                    from: before,
                    to: None,
                    unmapped: Some(why),
                    expected: None,
                })
            })
        };
        let mut a = map(from, from.now_ns, None, "the state before the step", None)?;
        let mut moved = false;
        if to.now_ns > from.now_ns {
            let part = format!("time advancing to {} ms, before the step", to.now_ns / MS);
            let mid = map(from, to.now_ns, None, &part, Some(a))?;
            moved |= self.pair(&a, &mid, &part, 1, false, false)?;
            a = mid;
        }
        let b = map(to, to.now_ns, finding, "the step", Some(a))?;
        let decision = to.judge.grants() > from.judge.grants();
        let late = decision && self.abstraction.grants_may_be_late();
        moved |= self.pair(&a, &b, "the step", chain_len, late, server)?;
        if !moved {
            self.counts.stutters += 1;
        }
        Ok(())
    }

    /// Ok(false): a stutter; Ok(true): one model action, or a chain of at
    /// most `chain_len` (a resume), or with `late` (a lock server's client
    /// deciding) a grant whose lease already ended, or with `server` (a step
    /// of etcd's server) a chain of its keys' puts, answers and deletions
    /// ([`Abstraction::server_steps_chain`]); Err: none of these.
    fn pair(
        &mut self,
        a: &Model,
        b: &Model,
        part: &str,
        chain_len: usize,
        late: bool,
        server: bool,
    ) -> Result<bool, Box<Divergence>> {
        let abs = self.abstraction;
        let target = abs.project(b);
        if abs.project(a) == target {
            return Ok(false);
        }
        let mut actions = Vec::new();
        abs.model.actions(a, &mut actions);
        for &action in &actions {
            let next = abs.model.next_state(a, action);
            if next.is_some_and(|n| abs.project(&n) == target) {
                self.counts.note(action);
                return Ok(true);
            }
        }
        let session_end =
            |x: ModelAction| matches!(x, ModelAction::Expire | ModelAction::DeleteNode { .. });
        if abs.ends_sessions_at_once() {
            // At most one session per model slot ends.
            if let Some(ends) = chain_to(abs, a, &target, CLIENTS_CAP, session_end) {
                ends.into_iter().for_each(|action| self.counts.note(action));
                return Ok(true);
            }
        }
        if server {
            // Each key is put once, answered once and deleted once, and
            // each acquisition abandoned once: two per slot at most.
            let keys = |x: ModelAction| {
                matches!(
                    x,
                    ModelAction::CreateNode { .. }
                        | ModelAction::Answer { .. }
                        | ModelAction::DeleteNode { .. }
                        | ModelAction::Abandon { .. }
                )
            };
            if let Some(chain) = chain_to(abs, a, &target, 2 * CLIENTS_CAP, keys) {
                self.counts.server_chains += 1;
                chain
                    .into_iter()
                    .for_each(|action| self.counts.note(action));
                return Ok(true);
            }
        }
        if late {
            // The previous holder's lease ends (if it still held), the
            // decision is granted, and its lease has ended already.
            let lease =
                |x: ModelAction| matches!(x, ModelAction::Acquire { .. } | ModelAction::Expire);
            if let Some(chain) = chain_to(abs, a, &target, 3, lease) {
                self.counts.late_grants += 1;
                chain
                    .into_iter()
                    .for_each(|action| self.counts.note(action));
                return Ok(true);
            }
        }
        if let Some(chain) = chain_to(abs, a, &target, chain_len, |_| true) {
            self.counts.chains += 1;
            chain
                .into_iter()
                .for_each(|action| self.counts.note(action));
            return Ok(true);
        }
        Err(Box::new(Divergence {
            path: Vec::new(),
            shortest: false,
            part: part.to_string(),
            from: Some(*a),
            to: Some(*b),
            unmapped: None,
            expected: Some(closest(abs, a, &target, &actions)),
        }))
    }
}

/// How many model steps one code step may be: one, except a holding
/// pause's resume, which runs every input the worker held (each a model
/// step at most: a held grant or reply changes nothing the model has, the
/// write it leads to is one `SendWrite`).
fn chain_len<N>(from: &State<N>, action: Action) -> usize {
    match action {
        Action::Resume(node) => from
            .held
            .iter()
            .find(|h| h.node == node)
            .map_or(1, |h| h.inputs.len().max(1)),
        _ => 1,
    }
}

/// The node a step runs (a delivery's receiver, a timer's owner, a
/// crashed node), if one.
fn step_node(action: Action) -> Option<NodeId> {
    match action {
        Action::Deliver(p) => Some(p.to),
        Action::Fire { node, .. } | Action::Crash(node) => Some(node),
        _ => None,
    }
}

/// A shortest chain of at most `len` model actions, each one `allowed`,
/// from `a` to a state whose projection is `target` (breadth-first, each
/// model state once), if any.
fn chain_to(
    abs: &Abstraction,
    a: &Model,
    target: &Model,
    len: usize,
    allowed: impl Fn(ModelAction) -> bool,
) -> Option<Vec<ModelAction>> {
    let mut level: Vec<(Model, Vec<ModelAction>)> = vec![(*a, Vec::new())];
    let mut seen = std::collections::HashSet::from([abs.project(a)]);
    let mut actions = Vec::new();
    for _ in 0..len {
        let mut next_level = Vec::new();
        for (state, chain) in &level {
            actions.clear();
            abs.model.actions(state, &mut actions);
            for &action in actions.iter().filter(|&&x| allowed(x)) {
                let Some(next) = abs.model.next_state(state, action) else {
                    continue;
                };
                let mut longer = chain.clone();
                longer.push(action);
                let projected = abs.project(&next);
                if projected == *target {
                    return Some(longer);
                }
                if seen.insert(projected) {
                    next_level.push((next, longer));
                }
            }
        }
        level = next_level;
    }
    None
}

/// The model's step from `a` nearest to `target` (the first of the
/// nearest, in the model's action order), or its stutter if that is
/// strictly nearer (a rejected write changes what the projection hides
/// only, and ties with the stutter: the action is named).
fn closest(abs: &Abstraction, a: &Model, target: &Model, actions: &[ModelAction]) -> Expected {
    let mut best = Expected {
        step: "no change (stutter)".into(),
        differences: differences(&abs.project(a), target),
    };
    let mut nearest: Option<Expected> = None;
    for &action in actions {
        let Some(next) = abs.model.next_state(a, action) else {
            continue;
        };
        let differences = differences(&abs.project(&next), target);
        if nearest
            .as_ref()
            .is_none_or(|n| differences.len() < n.differences.len())
        {
            // A write's model event does not know its client: "the write".
            let step = abs
                .model
                .format_step(a, action)
                .map(|line| line.replace(&format!("client {UNKNOWN_CLIENT}'s write"), "the write"));
            nearest = Some(Expected {
                step: step.unwrap_or_else(|| format!("{action:?}")),
                differences,
            });
        }
    }
    if let Some(n) = nearest.filter(|n| n.differences.len() <= best.differences.len()) {
        best = n;
    }
    best
}

/// `field: model …, code …` for each field of the two states that differs.
fn differences(model: &Model, code: &Model) -> Vec<String> {
    let fields: [(&str, String, String); 17] = [
        ("grants", show_clients(model), show_clients(code)),
        ("acquisitions", show_waiting(model), show_waiting(code)),
        ("nodes", show_nodes(model), show_nodes(code)),
        (
            "node counter",
            model.counter.to_string(),
            code.counter.to_string(),
        ),
        ("holder", show_holder(model), show_holder(code)),
        ("writes", show_writes(model), show_writes(code)),
        (
            "grants issued",
            model.grants.to_string(),
            code.grants.to_string(),
        ),
        (
            "token_max",
            model.token_max.to_string(),
            code.token_max.to_string(),
        ),
        ("fence", model.fence.to_string(), code.fence.to_string()),
        (
            "value (generation)",
            model.value.to_string(),
            code.value.to_string(),
        ),
        (
            "accepted_gen_max",
            model.accepted_gen_max.to_string(),
            code.accepted_gen_max.to_string(),
        ),
        ("effects", show_effects(model), show_effects(code)),
        ("violations", show_violations(model), show_violations(code)),
        ("head job", show_job(model), show_job(code)),
        (
            "failovers",
            model.failovers.to_string(),
            code.failovers.to_string(),
        ),
        ("backup", show_backup(model), show_backup(code)),
        ("quorum", show_quorum(model), show_quorum(code)),
    ];
    fields
        .into_iter()
        .filter(|(_, m, c)| m != c)
        .map(|(name, m, c)| format!("{name}: model {m}, code {c}"))
        .collect()
}

/// A model state in one line: grants pending a write, the holder, the
/// writes, the resource.
pub fn summary(a: &Model) -> String {
    let nodes = if a.counter == 0 {
        String::new()
    } else {
        format!(", nodes {} (last {})", show_nodes(a), a.counter)
    };
    let waiting = show_waiting(a);
    let nodes = if waiting == "[]" {
        nodes
    } else {
        format!("{nodes}, acquisitions waiting {waiting}")
    };
    let jobs = if a.job_from == 0 && !a.job_done {
        String::new()
    } else {
        format!(", head job {}", show_job(a))
    };
    format!(
        "{} grants issued (token max {}), pending {}{nodes}{jobs}, holder {}, writes {}, fence {}, value of generation {}, accepted up to generation {}, violations {}",
        a.grants,
        a.token_max,
        show_clients(a),
        show_holder(a),
        show_writes(a),
        a.fence,
        a.value,
        a.accepted_gen_max,
        show_violations(a)
    )
}

fn show_clients(a: &Model) -> String {
    let pending: Vec<String> = a
        .clients
        .iter()
        .filter(|c| !c.is_idle())
        .map(|c| format!("g{}/t{}", c.gen, c.token))
        .collect();
    format!("[{}]", pending.join(" "))
}

/// etcd's Mutex: the acquisitions not decided yet, by their key's create
/// revision (the model's: etcd's minus one), `*` where the acquisition
/// holds an answer "you are first" it has not acted on.
fn show_waiting(a: &Model) -> String {
    let mut waiting: Vec<(u8, bool)> = a
        .clients
        .iter()
        .filter(|c| c.is_idle() && c.token != 0)
        .map(|c| (c.token, c.read != 0))
        .collect();
    waiting.sort_unstable();
    let waiting: Vec<String> = waiting
        .iter()
        .map(|&(t, answered)| format!("k{t}{}", if answered { "*" } else { "" }))
        .collect();
    format!("[{}]", waiting.join(" "))
}

/// zk-sequential: the live nodes' sequence numbers, lowest first.
fn show_nodes(a: &Model) -> String {
    let mut nodes: Vec<u8> = a
        .clients
        .iter()
        .map(|c| c.node)
        .filter(|&n| n != 0)
        .collect();
    nodes.sort_unstable();
    let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    format!("[{}]", nodes.join(" "))
}

fn show_holder(a: &Model) -> String {
    match a.clients.get(a.holder as usize) {
        _ if a.holder == NO_HOLDER => "none".into(),
        Some(c) if !c.is_idle() => format!("g{}", c.gen),
        _ => "a client whose write went".into(),
    }
}

fn show_writes(a: &Model) -> String {
    let writes: Vec<String> = a
        .writes_in_flight()
        .map(|w| {
            let stage = if w.stage == crate::model::state::STAGE_CHECKED {
                " checked"
            } else {
                ""
            };
            format!("g{}/t{}{stage}", w.gen, w.token)
        })
        .collect();
    format!("[{}]", writes.join(" "))
}

/// queue-claim: where the head job's deliveries start, and its result.
fn show_job(a: &Model) -> String {
    let result = if a.job_done { "a result" } else { "no result" };
    format!("deliveries after generation {}, {result}", a.job_from)
}

/// Effect sinks: per generation whose effect is owed, `g<gen>` with its
/// requests in flight (`×n`) and `performed`.
fn show_effects(a: &Model) -> String {
    use crate::model::state::{EFFECT_OWED, EFFECT_PERFORMED, EFFECT_REQUESTS};
    let effects: Vec<String> = (1..=a.effects.len())
        .filter(|&g| a.effects[g - 1] != 0)
        .map(|g| {
            let e = a.effects[g - 1];
            let owed = if e & EFFECT_OWED != 0 {
                ""
            } else {
                " not owed"
            };
            let done = if e & EFFECT_PERFORMED != 0 {
                " performed"
            } else {
                ""
            };
            format!("g{g}{owed} ×{}{done}", e & EFFECT_REQUESTS)
        })
        .collect();
    format!("[{}]", effects.join(" "))
}

/// incr-beside-lease's backup: its counter and the generation of its
/// lease copy.
fn show_backup(a: &Model) -> String {
    match a.backup_lease {
        0 => format!("counter {}, no lease", a.backup),
        g => format!("counter {}, g{g}'s lease", a.backup),
    }
}

/// consensus-generation's voters and the leader's round: each voter's
/// generation, the open proposal and its acceptances (or the query's
/// answers heard), the proposals and answers in flight.
fn show_quorum(a: &Model) -> String {
    let answers: Vec<String> = a
        .answers
        .iter()
        .enumerate()
        .filter(|(_, &x)| x != 0)
        .map(|(i, &x)| format!("r{i}:{}", x - 1))
        .collect();
    format!(
        "voters {:?}, {}, proposal {} acks {:#b}, proposing {:#b}, answers [{}] (heard max {})",
        a.replicas,
        if a.ready { "ready" } else { "not ready" },
        a.proposal,
        a.acks,
        a.proposing,
        answers.join(" "),
        a.heard_max
    )
}

fn show_violations(a: &Model) -> String {
    let names: Vec<&str> = crate::model::Violation::ALL
        .into_iter()
        .filter(|v| a.violations & v.bit() != 0)
        .map(|v| v.name())
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fenced-cas model behind the default bounds' mapping.
    fn fenced_cas() -> Abstraction {
        let bounds = Bounds::default();
        let topology = Topology::lease(ProtocolKind::FencedCas, bounds.workers, bounds.timing)
            .expect("fenced-cas has a lease topology");
        Abstraction::new(&topology, &bounds).expect("fenced-cas is mapped")
    }

    #[test]
    fn a_resume_may_be_matched_by_a_chain_of_model_actions_but_not_a_longer_one_than_it_held() {
        let abs = fenced_cas();
        let start = Model::initial();
        let mut actions = Vec::new();
        abs.model.actions(&start, &mut actions);
        let granted = actions
            .iter()
            .find_map(|&a| abs.model.next_state(&start, a).map(|n| (a, n)))
            .filter(|(a, _)| matches!(a, ModelAction::Acquire { .. }));
        let (acquire, granted) = granted.expect("the empty model can grant");
        actions.clear();
        abs.model.actions(&granted, &mut actions);
        let (send, sent) = actions
            .iter()
            .filter(|a| matches!(a, ModelAction::SendWrite { .. }))
            .find_map(|&a| abs.model.next_state(&granted, a).map(|n| (a, n)))
            .expect("the holder can send its write");
        let target = abs.project(&sent);
        assert_eq!(chain_to(&abs, &start, &target, 1, |_| true), None);
        assert_eq!(
            chain_to(&abs, &start, &target, 2, |_| true),
            Some(vec![acquire, send])
        );
        let mut checker = Checker {
            abstraction: &abs,
            counts: Counts::default(),
            divergence: None,
        };
        assert!(checker
            .pair(&start, &sent, "the step", 1, false, false)
            .is_err());
        assert_eq!(
            checker
                .pair(&start, &sent, "the step", 2, false, false)
                .ok(),
            Some(true)
        );
        assert_eq!(checker.counts.chains, 1);
        assert_eq!(checker.counts.by_action[0..3], [1, 0, 1]);
    }
}
