//! The properties, judged incrementally along a path with the history
//! checker's definitions (`src/check/`), from the messages the real nodes
//! send and receive — no history is built per state.
//!
//! - A **grant** is a distinct (owner nonce, token) the coordinator sends in
//!   a `Granted` (a re-send of the same pair is the same grant, as the
//!   recorder numbers them); its **generation** is its rank in issue order.
//! - In the lock-server layout no server issues the lock: a grant is a
//!   worker's own *decision* that it holds it — the `Observation::Acquired`
//!   its lock client's verdict makes the worker emit, with the token it
//!   carries — each decision a new grant, issued and received (adopted) by
//!   that worker at that step, exactly as the simulator's recorder records
//!   it (`sim::recorder`, `on_observe`). When every grant is such a
//!   decision and carries a token, grants rank by (token, issue order)
//!   instead (`check::generations`: a client acting late on an older znode
//!   or revision stays old), and `token_order` is a decision carrying a
//!   token another worker's decision already carried
//!   (`check::token_order`: two clients holding under one fence).
//! - **The grant a write acted on**: by its token (once grants carry
//!   tokens: before, a write's token is none of theirs — a conditional
//!   write's names a version), the grant with that token
//!   its sender received last (else the one issued last); without a token,
//!   the grant the sender adopted last — a `Granted` delivered while its
//!   acquire under that owner nonce was outstanding (`check::generations`,
//!   rules 2 and 3, without the provisional case, which needs several locks).
//! - `token_order`: a new grant whose token is ≤ an earlier grant's.
//! - `stale_write`: the resource accepts (answers `WriteOk`) a write of
//!   generation g after it accepted one of g′ > g, unless the current value
//!   is already that op's (a redelivery the document absorbed), or, where
//!   writes are conditional (If-Match, gets/cas) and grants carry no token,
//!   unless its condition held: the token the resource was handed names the
//!   current value's op and that is the value the op's latest read before
//!   the send returned (`check::writes`, `condition_held`) — it overwrote
//!   exactly what it saw.
//! - `unissued_token`: an accepted write whose token no grant carried so far,
//!   once grants carry tokens.
//! - `unsafe_release`: a release on behalf of owner o removed another owner's
//!   lease record.
//! - Where an effect sink stands beside the resource (`check::effects`):
//!   `duplicate_effect`, the sink performing one op's effect a second time
//!   (an `effect_ok` with `performed`); `superseded_effect`, the sink
//!   performing an effect whose request a worker sent under a generation
//!   below the highest any worker had received by then (a request from a
//!   node without a grant, the outbox dispatcher, is not judged).
//! - For an active/passive pair (`check::two_actives`): a node's
//!   `BecameActive` is a grant it issues and holds (issue order ranks them;
//!   no token_order, as the history checker reads it); it believes it is
//!   active until it steps down or crashes; `two_actives` is the resource
//!   accepting a write of generation g from node X while another node
//!   believes it is active under a generation above g.
//!
//! The judge's fields are part of the hashed state (its future verdicts
//! depend on them); the vacuity witnesses are not (they are global facts
//! about the search, reported beside the verdict).

use crate::check::ViolationKind;
use crate::protocol::{Msg, NodeId, Token};

/// The judge's memory along one path (hashed with the nodes).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Judge {
    /// Grants in issue order: (owner nonce, token or 0). Generation = index + 1.
    grants: Vec<(u64, u64)>,
    /// Lock-server layout: per grant, the worker that decided it (parallel
    /// to `grants`); empty while every grant is a coordinator's.
    deciders: Vec<u16>,
    /// Per worker: the owner nonce of the acquire it waits on.
    pending: Vec<Option<u64>>,
    /// Per worker: the generation it adopted last (0: none).
    adopted: Vec<u32>,
    /// (worker, token, generation): the grant of that token it received last.
    received: Vec<(u16, u64, u32)>,
    /// (op, generation, token or 0) of each op's latest write sent.
    sends: Vec<(u64, u32, u64)>,
    /// Conditional writes only (`Some`): per op, the value its latest
    /// `read_ok` the worker used returned, and (parallel to `sends`) the value
    /// the op had read when its latest write was sent. `None` elsewhere, so
    /// the other protocols' states are exactly what they were.
    reads: Option<Reads>,
    /// Effect-sink protocols only (`Some`), as `reads`.
    effects: Option<Effects>,
    /// The active/passive pair only (`Some`), as `reads`.
    pair: Option<Pair>,
    /// Highest generation the resource accepted a write of.
    accepted_max: u32,
    /// Op id of the current value (0: the initial one).
    current_op: u64,
    /// The refinement check's history variable (`Bounds::write_history`;
    /// None: not kept): the ops whose write the resource was handed,
    /// sorted. It tells a write lost in flight from one the resource
    /// handled, which nothing else in the state does.
    handed: Option<Vec<u64>>,
    /// The refinement check's history variable of reads, kept beside
    /// `handed` where writes are conditional: per op (sorted), the
    /// generation its worker had adopted when it sent the read, and the
    /// value the store served its first read (None: not served yet). A
    /// served read the worker never used (its answer lost or late) is
    /// still a read the model made.
    served: Option<Vec<(u64, u32, Option<u64>)>>,
    /// The refinement check's history variable where an effect sink
    /// stands beside the resource (kept beside `handed`): the ops whose
    /// write the resource accepted, sorted — each owes its effect.
    accepted: Option<Vec<u64>>,
}

/// What the effect properties need (see the module doc).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
struct Effects {
    /// Ops whose effect the sink performed, sorted.
    performed: Vec<u64>,
    /// (op, generation its latest request was sent under; 0: no grant).
    sent_under: Vec<(u64, u32)>,
    /// The highest generation any worker has received so far.
    received_max: u32,
}

/// What `two_actives` needs (see the module doc).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
struct Pair {
    /// (node, generation of its promotion) of each node that believes it
    /// is active.
    active: Vec<(u16, u32)>,
    /// (op, node that sent its latest write).
    writers: Vec<(u64, u16)>,
}

/// What a conditional write's judgement needs beside the sends.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
struct Reads {
    /// (op, value) of each op's latest `read_ok` a worker used.
    latest: Vec<(u64, u64)>,
    /// (op, value read before its latest write was sent, if any).
    at_send: Vec<(u64, Option<u64>)>,
}

impl Reads {
    fn latest_of(&self, op: u64) -> Option<u64> {
        self.latest.iter().find(|r| r.0 == op).map(|r| r.1)
    }

    fn set<V>(list: &mut Vec<(u64, V)>, op: u64, v: V) {
        match list.iter_mut().find(|r| r.0 == op) {
            Some(r) => r.1 = v,
            None => list.push((op, v)),
        }
    }
}

/// A property violated by one step.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Finding {
    pub kind: ViolationKind,
    pub detail: String,
}

/// What one step showed besides violations: the vacuity witnesses, and
/// whether it issued a grant (for the grants bound).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Notes {
    pub write_accepted: bool,
    pub stale_attempt: bool,
    pub new_grant: bool,
}

impl Judge {
    /// `conditional`: the protocol's writes carry the version their read
    /// returned (`ProtocolConfig::worker_writes_if_match`).
    /// `effects`: an effect sink stands beside the resource; `pair`: the
    /// workers' addresses hold an active/passive pair.
    pub fn new(
        workers: usize,
        write_history: bool,
        conditional: bool,
        effects: bool,
        pair: bool,
    ) -> Judge {
        Judge {
            grants: Vec::new(),
            deciders: Vec::new(),
            pending: vec![None; workers],
            adopted: vec![0; workers],
            received: Vec::new(),
            sends: Vec::new(),
            accepted_max: 0,
            current_op: 0,
            handed: write_history.then(Vec::new),
            served: (write_history && conditional).then(Vec::new),
            accepted: (write_history && effects).then(Vec::new),
            reads: conditional.then(Reads::default),
            effects: effects.then(Effects::default),
            pair: pair.then(Pair::default),
        }
    }

    /// Grants issued so far.
    pub fn grants(&self) -> usize {
        self.grants.len()
    }

    /// Grants in issue order, as (owner nonce, token or 0): generation =
    /// index + 1 (read by the refinement mapping).
    pub fn issued(&self) -> &[(u64, u64)] {
        &self.grants
    }

    /// The generation and token (or 0) of op `op`'s latest write sent.
    pub fn write_of(&self, op: u64) -> Option<(u32, u64)> {
        self.sends.iter().find(|s| s.0 == op).map(|s| (s.1, s.2))
    }

    /// The writes sent that the resource was not handed yet, as (op,
    /// generation, token or 0); None when the history is not kept.
    pub fn unhanded(&self) -> Option<impl Iterator<Item = (u64, u32, u64)> + '_> {
        let handed = self.handed.as_ref()?;
        Some(
            self.sends
                .iter()
                .filter(move |s| handed.binary_search(&s.0).is_err())
                .copied(),
        )
    }

    /// The reads made so far, as (op, generation adopted when it was
    /// sent, value its first read was served), sorted by op; None unless
    /// writes are conditional and the history is kept.
    pub fn served_reads(&self) -> Option<&[(u64, u32, Option<u64>)]> {
        self.served.as_deref()
    }

    /// Records a read sent by `from` (the generation it adopted last) or
    /// served (its first serving's value), if the history is kept.
    fn on_read(&mut self, from: NodeId, msg: &Msg) {
        let generation = self.worker(from).map_or(0, |w| self.adopted[w]);
        let Some(served) = self.served.as_mut() else {
            return;
        };
        match *msg {
            Msg::Read { op, .. } => {
                if let Err(at) = served.binary_search_by_key(&op.0, |r| r.0) {
                    served.insert(at, (op.0, generation, None));
                }
            }
            Msg::ReadOk { op, value, .. } => {
                if let Ok(at) = served.binary_search_by_key(&op.0, |r| r.0) {
                    served[at].2.get_or_insert(value.0);
                }
            }
            _ => {}
        }
    }

    /// Effect sinks, if the history is kept: the ops whose write the
    /// resource accepted, sorted.
    pub fn accepted_ops(&self) -> Option<&[u64]> {
        self.accepted.as_deref()
    }

    /// Effect sinks: the ops whose effect the sink performed, sorted.
    pub fn performed_effects(&self) -> Option<&[u64]> {
        self.effects.as_ref().map(|fx| fx.performed.as_slice())
    }

    /// Whether some write was sent under generation `generation`.
    pub fn wrote_under(&self, generation: u32) -> bool {
        self.sends.iter().any(|s| s.1 == generation)
    }

    /// The highest generation the resource accepted a write of (0: none).
    pub fn accepted_max(&self) -> u32 {
        self.accepted_max
    }

    fn worker(&self, node: NodeId) -> Option<usize> {
        let i = node.0 as usize;
        (i < self.pending.len()).then_some(i)
    }

    /// The generation of grant (owner, token); 0 if it was never issued.
    pub fn generation(&self, owner: u64, token: Option<Token>) -> u32 {
        let pair = (owner, token.map_or(0, |t| t.0));
        self.grants
            .iter()
            .position(|&g| g == pair)
            .map_or(0, |i| i as u32 + 1)
    }

    fn tokened(&self) -> bool {
        self.grants.iter().any(|&(_, t)| t != 0)
    }

    /// Whether grants rank by token: every one a client's decision, with a
    /// token (`check::generations`, `ranked_by_token`).
    fn ranked_by_token(&self) -> bool {
        !self.grants.is_empty()
            && self.deciders.len() == self.grants.len()
            && self.grants.iter().all(|&(_, t)| t != 0)
    }

    /// What orders generation `generation` (0: none) against the others:
    /// its issue order, or (token, issue order) when grants rank by token.
    fn rank(&self, generation: u32) -> (u64, u32) {
        match generation {
            0 => (0, 0),
            g if self.ranked_by_token() => (self.grants[g as usize - 1].1, g),
            g => (0, g),
        }
    }

    /// The highest-ranked generation issued so far (0: none).
    fn top(&self) -> u32 {
        (1..=self.grants.len() as u32)
            .max_by_key(|&g| self.rank(g))
            .unwrap_or(0)
    }

    /// Worker `from`'s lock client decided it holds the lock under
    /// acquisition `owner` with `token`: a new grant, adopted by `from` at
    /// once (see the module doc).
    pub fn on_decided(
        &mut self,
        from: NodeId,
        owner: u64,
        token: Option<Token>,
        notes: &mut Notes,
    ) -> Option<Finding> {
        let finding = self.issue(owner, token, Some(from), notes);
        let generation = self.grants.len() as u32;
        if let Some(w) = self.worker(from) {
            let t = token.map_or(0, |t| t.0);
            self.received.retain(|r| !(r.0 as usize == w && r.1 == t));
            self.received.push((w as u16, t, generation));
            self.on_received(generation);
            self.adopted[w] = generation;
            self.pending[w] = None;
        }
        finding
    }

    /// A message handed to the network by `from`, which was handling
    /// `input` (the message it received, if the step was a delivery).
    pub fn on_send(
        &mut self,
        from: NodeId,
        input: Option<&Msg>,
        msg: &Msg,
        notes: &mut Notes,
    ) -> Option<Finding> {
        match *msg {
            Msg::Granted { owner, token, .. } => self.on_grant(owner, token, notes),
            Msg::Acquire { owner, .. } => {
                if let Some(w) = self.worker(from) {
                    self.pending[w] = Some(owner);
                }
                None
            }
            Msg::Read { .. } | Msg::ReadOk { .. } => {
                self.on_read(from, msg);
                None
            }
            Msg::Write { op, token, .. } => {
                let generation = self.write_generation(from, token);
                let t = token.map_or(0, |t| t.0);
                match self.sends.iter_mut().find(|s| s.0 == op.0) {
                    Some(s) => *s = (op.0, generation, t),
                    None => self.sends.push((op.0, generation, t)),
                }
                if let Some(reads) = self.reads.as_mut() {
                    let read = reads.latest_of(op.0);
                    Reads::set(&mut reads.at_send, op.0, read);
                }
                if let Some(pair) = self.pair.as_mut() {
                    Reads::set(&mut pair.writers, op.0, from.0);
                }
                None
            }
            Msg::Effect { op, .. } => {
                let generation = match self.worker(from) {
                    Some(_) => self.write_generation(from, None),
                    None => 0,
                };
                if let Some(fx) = self.effects.as_mut() {
                    match fx.sent_under.iter_mut().find(|e| e.0 == op.0) {
                        Some(e) => e.1 = generation,
                        None => fx.sent_under.push((op.0, generation)),
                    }
                }
                None
            }
            Msg::EffectOk {
                op,
                performed: true,
                ..
            } => self.on_performed(op.0),
            Msg::WriteOk { op, .. } => {
                notes.write_accepted = true;
                let handed = match input {
                    Some(&Msg::Write { token, .. }) => token,
                    _ => None,
                };
                self.on_accepted(op.0, handed)
            }
            Msg::Released {
                removed: Some(removed),
                ..
            } => match input {
                Some(&Msg::Release { owner, .. }) if owner != removed => Some(Finding {
                    kind: ViolationKind::UnsafeRelease,
                    detail: format!(
                        "a release on behalf of owner {owner:#x} removed the lease of owner {removed:#x}"
                    ),
                }),
                _ => None,
            },
            _ => None,
        }
    }

    fn on_grant(&mut self, owner: u64, token: Option<Token>, notes: &mut Notes) -> Option<Finding> {
        if self.generation(owner, token) != 0 {
            return None; // a re-send of a grant already issued
        }
        self.issue(owner, token, None, notes)
    }

    /// A new grant (`decider`: the worker whose decision it is), judged:
    /// ranked by token, its token must be no other worker's earlier
    /// decision's; else it must be above every earlier grant's.
    fn issue(
        &mut self,
        owner: u64,
        token: Option<Token>,
        decider: Option<NodeId>,
        notes: &mut Notes,
    ) -> Option<Finding> {
        let t = token.map_or(0, |t| t.0);
        let max = self.grants.iter().map(|&(_, t)| t).max();
        let shared = self
            .grants
            .iter()
            .zip(&self.deciders)
            .find(|&(&(_, gt), &by)| t != 0 && gt == t && Some(NodeId(by)) != decider)
            .map(|(_, &by)| by);
        self.grants.push((owner, t));
        if let Some(d) = decider {
            self.deciders.push(d.0);
        }
        notes.new_grant = true;
        let generation = self.grants.len();
        if self.ranked_by_token() {
            return shared.map(|by| Finding {
                kind: ViolationKind::TokenOrder,
                detail: format!(
                    "worker {} decided it holds grant {generation} with token {t}, which worker {by} already held",
                    decider.map_or(0, |d| d.0)
                ),
            });
        }
        match (token, max) {
            (Some(Token(t)), Some(max)) if t <= max => Some(Finding {
                kind: ViolationKind::TokenOrder,
                detail: format!(
                    "grant {generation} carries token {t}, not above an earlier grant's token {max}"
                ),
            }),
            _ => None,
        }
    }

    /// The grant a write acted on (see the module doc). Only once grants
    /// carry tokens is a write's token one of theirs: before, it is none
    /// (a conditional write's names the version it read, and the history
    /// checker indexes only tokened grants by token), so the write acted
    /// on the grant its sender adopted — not a late answer to an acquire
    /// it gave up on, whose "no token" the version 0 would match.
    fn write_generation(&self, from: NodeId, token: Option<Token>) -> u32 {
        let w = self.worker(from);
        if let Some(Token(t)) = token.filter(|_| self.tokened()) {
            let received = self
                .received
                .iter()
                .rev()
                .find(|r| Some(r.0 as usize) == w && r.1 == t)
                .map(|r| r.2);
            let issued = self
                .grants
                .iter()
                .rposition(|&(_, gt)| gt == t)
                .map(|i| i as u32 + 1);
            if let Some(g) = received.or(issued) {
                return g;
            }
        }
        w.map_or(0, |w| self.adopted[w])
    }

    /// The sink performed `op`'s effect: a second time is a duplicate; one
    /// requested under a generation below the highest received, superseded.
    fn on_performed(&mut self, op: u64) -> Option<Finding> {
        let fx = self.effects.as_mut()?;
        match fx.performed.binary_search(&op) {
            Ok(_) => {
                return Some(Finding {
                    kind: ViolationKind::DuplicateEffect,
                    detail: format!("the sink performed op {op}'s effect a second time"),
                })
            }
            Err(at) => fx.performed.insert(at, op),
        }
        let under = fx.sent_under.iter().find(|e| e.0 == op).map_or(0, |e| e.1);
        let received_max = fx.received_max;
        (under != 0 && self.rank(under) < self.rank(received_max)).then(|| Finding {
            kind: ViolationKind::SupersededEffect,
            detail: format!(
                "the sink performed op {op}'s effect, requested under generation {under}, after generation {received_max} was received"
            ),
        })
    }

    /// Pair node `node` became active (`epoch`: its storage reservation's,
    /// if fenced): a new grant, held by `node` at once.
    pub fn on_became_active(&mut self, node: NodeId, epoch: Option<Token>, notes: &mut Notes) {
        let owner = 1 << 63 | self.grants.len() as u64;
        let t = epoch.map_or(0, |t| t.0);
        self.grants.push((owner, t));
        notes.new_grant = true;
        let generation = self.grants.len() as u32;
        if let Some(w) = self.worker(node) {
            self.received.retain(|r| !(r.0 as usize == w && r.1 == t));
            self.received.push((w as u16, t, generation));
            self.adopted[w] = generation;
        }
        if let Some(pair) = self.pair.as_mut() {
            pair.active.retain(|a| a.0 != node.0);
            pair.active.push((node.0, generation));
        }
    }

    /// The active/passive pair: (node, generation of its promotion) of
    /// each node that believes it is active (empty for other protocols).
    pub fn actives(&self) -> &[(u16, u32)] {
        self.pair.as_ref().map_or(&[], |p| p.active.as_slice())
    }

    /// Pair node `node` stepped down or crashed: it no longer believes it
    /// is active.
    pub fn on_stepped_down(&mut self, node: NodeId) {
        if let Some(pair) = self.pair.as_mut() {
            pair.active.retain(|a| a.0 != node.0);
        }
    }

    /// `two_actives` at the acceptance of `op`'s write of `generation`.
    fn two_actives(&self, op: u64, generation: u32) -> Option<Finding> {
        let pair = self.pair.as_ref()?;
        let writer = pair.writers.iter().find(|w| w.0 == op)?.1;
        let (y, newer) = pair
            .active
            .iter()
            .filter(|a| a.0 != writer && a.1 > generation)
            .max_by_key(|a| a.1)?;
        Some(Finding {
            kind: ViolationKind::TwoActives,
            detail: format!(
                "the resource accepted op {op} from node {writer} (promotion {generation}) while node {y} (promotion {newer}) believed it was active"
            ),
        })
    }

    /// A worker received (or decided) generation `generation`.
    fn on_received(&mut self, generation: u32) {
        let Some(top) = self.effects.as_ref().map(|fx| fx.received_max) else {
            return;
        };
        if self.rank(generation) > self.rank(top) {
            if let Some(fx) = self.effects.as_mut() {
                fx.received_max = generation;
            }
        }
    }

    /// Whether the write of `op` the resource was handed with `handed` is
    /// a conditional one whose condition held (see the module doc): only
    /// where writes are conditional and grants carry no token.
    fn condition_held(&self, op: u64, handed: Option<Token>) -> bool {
        let Some(reads) = &self.reads else {
            return false;
        };
        let read = reads.at_send.iter().find(|r| r.0 == op).and_then(|r| r.1);
        !self.tokened() && handed == Some(Token(self.current_op)) && read == Some(self.current_op)
    }

    /// The resource accepted `op`'s write, handed to it with token `handed`.
    fn on_accepted(&mut self, op: u64, handed: Option<Token>) -> Option<Finding> {
        let (generation, token) = self
            .sends
            .iter()
            .find(|s| s.0 == op)
            .map_or((0, 0), |s| (s.1, s.2));
        let mut finding = None;
        if self.rank(generation) < self.rank(self.accepted_max)
            && self.current_op != op
            && !self.condition_held(op, handed)
        {
            finding = Some(Finding {
                kind: ViolationKind::StaleWrite,
                detail: format!(
                    "the resource accepted op {op} of generation {generation} after a write of generation {}",
                    self.accepted_max
                ),
            });
        } else if token != 0 && self.tokened() && !self.grants.iter().any(|&(_, t)| t == token) {
            finding = Some(Finding {
                kind: ViolationKind::UnissuedToken,
                detail: format!(
                    "the resource accepted op {op} with token {token}, which no grant carried"
                ),
            });
        }
        let finding = finding.or_else(|| self.two_actives(op, generation));
        if let Some(accepted) = self.accepted.as_mut() {
            if let Err(at) = accepted.binary_search(&op) {
                accepted.insert(at, op);
            }
        }
        self.current_op = op;
        if self.rank(generation) > self.rank(self.accepted_max) {
            self.accepted_max = generation;
        }
        finding
    }

    /// A worker used a reply (`Observation::ReplyUsed`, what the
    /// simulator's recorder records as `read_ok`): a copy of an answer it
    /// already had, arriving late, is not a read it acted on.
    pub fn on_reply_used(&mut self, reply: &Msg) {
        if let (Msg::ReadOk { op, value, .. }, Some(reads)) = (reply, self.reads.as_mut()) {
            Reads::set(&mut reads.latest, op.0, value.0);
        }
    }

    /// A message delivered to `to`.
    pub fn on_deliver(&mut self, to: NodeId, msg: &Msg, notes: &mut Notes) {
        match *msg {
            Msg::Granted { owner, token, .. } => {
                let Some(w) = self.worker(to) else { return };
                let generation = self.generation(owner, token);
                let t = token.map_or(0, |t| t.0);
                self.received.retain(|r| !(r.0 as usize == w && r.1 == t));
                self.received.push((w as u16, t, generation));
                self.on_received(generation);
                if self.pending[w] == Some(owner) {
                    self.adopted[w] = generation;
                    self.pending[w] = None;
                }
            }
            Msg::Write { op, .. } => {
                if let Some(handed) = self.handed.as_mut() {
                    if let Err(at) = handed.binary_search(&op.0) {
                        handed.insert(at, op.0);
                    }
                }
                let generation = self.sends.iter().find(|s| s.0 == op.0).map_or(0, |s| s.1);
                if self.rank(generation) < self.rank(self.top()) {
                    notes.stale_attempt = true;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Key, OpId};

    const A: NodeId = NodeId(0);
    const B: NodeId = NodeId(1);

    /// A lease judge over two workers whose writes are conditional; A then
    /// B are granted (no tokens), B's write (op 2) is accepted.
    fn b_wrote_after_a_was_granted() -> Judge {
        let mut j = Judge::new(2, false, true, false, false);
        let mut notes = Notes::default();
        for (w, owner) in [(A, 1), (B, 2)] {
            j.on_send(w, None, &acquire(owner), &mut notes);
            let granted = Msg::Granted {
                req: 1,
                key: Key(0),
                owner,
                token: None,
                ttl_ns: 10,
            };
            assert_eq!(j.on_send(NodeId(2), None, &granted, &mut notes), None);
            j.on_deliver(w, &granted, &mut notes);
        }
        j.on_reply_used(&read_ok(2, 0));
        let b = write(2, Some(0));
        j.on_send(B, None, &b, &mut notes);
        assert_eq!(accept(&mut j, &b), None);
        j
    }

    fn acquire(owner: u64) -> Msg {
        Msg::Acquire {
            req: 1,
            key: Key(0),
            owner,
        }
    }

    fn read_ok(op: u64, value: u64) -> Msg {
        Msg::ReadOk {
            req: 2,
            key: Key(0),
            op: OpId(op),
            value: OpId(value),
        }
    }

    fn write(op: u64, if_match: Option<u64>) -> Msg {
        Msg::Write {
            req: 3,
            key: Key(0),
            op: OpId(op),
            token: if_match.map(Token),
            value: OpId(op),
        }
    }

    /// The resource's `WriteOk` to `w`, handling it.
    fn accept(j: &mut Judge, w: &Msg) -> Option<ViolationKind> {
        let Msg::Write { req, key, op, .. } = *w else {
            unreachable!("a write")
        };
        let ok = Msg::WriteOk { req, key, op };
        j.on_send(NodeId(3), Some(w), &ok, &mut Notes::default())
            .map(|f| f.kind)
    }

    /// A, granted before B, used a read of `used` (and was handed a late
    /// copy of one naming `dropped`, if any) and writes If-Match `if_match`.
    fn a_writes(
        j: &mut Judge,
        used: u64,
        dropped: Option<u64>,
        if_match: u64,
    ) -> Option<ViolationKind> {
        j.on_reply_used(&read_ok(1, used));
        if let Some(v) = dropped {
            j.on_deliver(A, &read_ok(1, v), &mut Notes::default());
        }
        let a = write(1, Some(if_match));
        j.on_send(A, None, &a, &mut Notes::default());
        accept(j, &a)
    }

    #[test]
    fn older_holders_conditional_write_on_the_value_it_read_last_is_not_stale() {
        assert_eq!(
            a_writes(&mut b_wrote_after_a_was_granted(), 2, None, 2),
            None
        );
    }

    #[test]
    fn a_late_copy_of_an_answer_the_worker_did_not_use_does_not_change_its_read() {
        // A used the answer naming B's value; a delayed copy naming the
        // initial value reached it afterwards and was dropped unused (no
        // `ReplyUsed`): the write still acted on B's value.
        assert_eq!(
            a_writes(&mut b_wrote_after_a_was_granted(), 2, Some(0), 2),
            None
        );
    }

    #[test]
    fn older_holders_write_whose_condition_names_a_value_it_never_read_is_stale() {
        let found = a_writes(&mut b_wrote_after_a_was_granted(), 0, None, 2);
        assert_eq!(found, Some(ViolationKind::StaleWrite));
    }

    #[test]
    fn without_conditional_writes_the_same_write_is_stale() {
        let mut j = b_wrote_after_a_was_granted();
        j.reads = None;
        assert_eq!(
            a_writes(&mut j, 2, None, 2),
            Some(ViolationKind::StaleWrite)
        );
    }
}
