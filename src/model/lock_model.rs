//! The atomic-step model of a lease-and-fencing-token lock, as a stateright `Model`.
//!
//! Each protocol action is one atomic step and all nondeterminism is in the action's
//! parameters: which client acquires, which majority answered, which in-flight write the
//! resource processes next. Time is abstracted away: `Expire` may end the live lease at any
//! moment, which covers every pause, clock skew and TTL choice at once (a lease's expiry
//! appears in no safety definition; it only enables the next grant). Packet delay is the
//! in-flight write set: a sent write reaches the resource whenever the checker chooses.
//!
//! Protocols (DESIGN.md's catalogue ids):
//! - `no-fence`: grants carry no ordered token, the resource accepts everything.
//! - `fenced-cas`: token = generation; the resource accepts `token >= fence` and writes in the
//!   same step. With `reads`, each grant reads the value first; with `fence_reads` the read
//!   carries the token and raises the fence, which closes the lost-update window.
//! - `fenced-check-then-write`: as `fenced-cas`, but `DeliverWrite` only compares and
//!   `CommitWrite` later writes the body and sets the fence to its own token.
//! - `incr-beside-lease`: the token is `INCR` on a primary that replicates its counter and
//!   its lease to its backup asynchronously (`Replicate`: a state the primary had, arriving
//!   late and in any order); `Failover` promotes the backup with whatever it had: a counter
//!   that may lack the last `INCR`s, and its copy of a lease, which may be one the primary has
//!   since released or let expire, still live (or none live).
//! - `consensus-generation`: proposals are states of their own (`quorum.rs`): the leader
//!   proposes generation + 1, voters store proposals in flight above their own one at a time,
//!   the leader grants once a majority accepted (the token: that generation) or gives the
//!   proposal up, having raised some voters (the next token skips a number); `Failover` stops
//!   the leader, and the next one learns the highest generation answer by answer while the old
//!   leader's proposals are still in flight.
//! - `zk-sequential`: `CreateNode` appends a sequential node; the lowest node's client is
//!   granted with its sequence number as token; expiry deletes the holder's ephemeral node,
//!   and `DeleteNode` a waiter's (its session expired or was closed before it held the lock:
//!   the next node up may then be the lowest).
//! - `conditional-write`: `no-fence`'s lease (no token), but each grant reads before it
//!   writes and its write carries the version read; `DeliverWrite` applies it iff that
//!   version is still current (If-Match on the object generation, memcached's `cas`), else
//!   rejects it. As in the history checker, an older generation's write whose condition held
//!   is not stale: it overwrote exactly the value it read.
//! - `store-lock`: no coordinator; the store owns the lease and the data (single-db's row
//!   lock). Grants carry no ordered token (a transaction id only names its grant); a read or
//!   write is served only if its grant still holds the lease, and `DeliverWrite` of the live
//!   grant's write (UPDATE + COMMIT) applies it and frees the lease in one step. While a lease
//!   is live its grant is the latest one (a grant needs the lease free), so "still holds" is
//!   `holder != NO_HOLDER && gen == grants`.
//! - `queue-claim`: no coordinator; the store is a durable job queue (SQS). A grant is a claim,
//!   a delivery of the head job (no ordered token: the delivery number only names it); the
//!   claim is the lease. `DeliverWrite` keeps a result iff it is the first for the head job —
//!   its generation is above `job_from` and `job_done` is unset — whether or not its claim is
//!   still live, else refuses it; `DeleteJob` (the live claim's holder acks a job that has a
//!   result) ends the claim and makes the next job the head. A job is done twice, stored once.
//!
//! - `effect-naive`, `effect-idempotency-key`, `effect-outbox`: `fenced-cas`, and an effect sink
//!   that cannot compare tokens. Each accepted write owes its effect (`EFFECT_OWED`); a request
//!   for an owed effect may go to the sink any number of times (`SendEffect`: the worker's call,
//!   its retry after a timeout, a network copy, the outbox dispatcher's delivery and its
//!   retransmissions), at most `effect_requests_max` in flight at once, and `DeliverEffect`
//!   hands one to the sink. The naive sink performs every request; with an idempotency key
//!   (the key variant, and the outbox's dispatcher, whose key is the entry id) it performs a
//!   generation's effect once and answers repeats from its record. `duplicate_effect`: the
//!   sink performs an effect it already performed (`check::effects`' definition). Who sends
//!   the request (a worker under its grant, or the dispatcher) is not modelled, so
//!   `superseded_effect` is not a model property.
//!
//! - `active-passive`: no coordinator and no lease: a pair's nodes promote themselves
//!   (GitHub's 2012 file servers: dead time, STONITH, no storage fence). The dead time and the
//!   STONITH travel the network a partition cuts, so they promise nothing: `Acquire` makes an
//!   idle client active at any moment (a slot per node's belief "I am active", with no token),
//!   beside an active one; `StepDown` ends a belief. An active writes any number of times under
//!   its promotion (`SendWrite` keeps the grant; one write of a generation in flight at once,
//!   as the storage's ordered session leaves it), the storage accepts every write, and a write
//!   in flight may vanish (`DropWrite`: lost, or discarded behind its sender's later command).
//! - `etcd-mutex`, `etcd-mutex-no-recheck` (`etcd_step`): no coordinator and no lease holder.
//!   An acquisition puts its key at the store's global revision (`CreateNode`: `counter`, which
//!   every deletion takes too, `DeleteNode` — the key's lease expired or was revoked, at any
//!   moment); the server answers it "you are first" (`Answer`) while no key below its own
//!   lives — and, with the re-check, while its own does; the client acts on that answer
//!   whenever it arrives (`Acquire`, its key's revision the token: after its key was deleted
//!   and a newer key's client decided, too), loses it (`DropAnswer`) or gives up (`Abandon`).
//!   A slot is an acquisition: `token` its key's revision while it lasts, `node` the key while
//!   it lives, `read` 1 while it holds an answer. Grants rank by (token, generation), as the
//!   history checker ranks decisions that all carry tokens (`accepted_token`); `fence = false`
//!   is the twin whose resource compares nothing.
//!
//! Violating states are terminal (no successors) for the properties in `terminal_mask`, so
//! every discovery path ends at its first violation.

use super::action::{describe, Action, Event, Outcome, UNKNOWN_CLIENT};
use super::spec::{Bounds, Protocol, Violation};
use super::state::{
    Client, State, Write, EFFECT_OWED, EFFECT_PERFORMED, EFFECT_REQUESTS, GENERATIONS_CAP,
    NO_HOLDER, STAGE_CHECKED, STAGE_IN_FLIGHT,
};
use stateright::{Model, Property};

pub const PROPERTY_WRITE_ACCEPTED: &str = "write_accepted";
pub const PROPERTY_STALE_ATTEMPT: &str = "stale_attempt_reaches_resource";
/// Conditional writes: a write whose read is no longer current is in flight. Its delivery, a
/// rejection, is enabled at once (the conditional model has no terminal state while safe), so
/// reaching this witnesses that the condition refuses a write.
pub const PROPERTY_CONDITION_FAILS: &str = "condition_fails_at_resource";
/// Store-lock: a write whose grant no longer holds the lease is in flight. Its delivery, a
/// refusal, is enabled at once, so reaching this witnesses that the store refuses a write
/// under an ended grant.
pub const PROPERTY_GRANT_ENDED: &str = "ended_grant_refused_at_resource";
/// Queue-claim: a result for a job that already has one (or was deleted) is in flight. Its
/// delivery, a refusal, is enabled at once, so reaching this witnesses that the queue refuses
/// a second result.
pub const PROPERTY_SECOND_RESULT: &str = "second_result_refused_at_queue";
/// Effect sinks: a request for an effect the sink already performed is in flight. Its
/// delivery (a duplicate without a key, a deduplication with one) is enabled at once, so
/// reaching this witnesses that the repeat a duplicate comes from happens.
pub const PROPERTY_EFFECT_REPEATED: &str = "repeated_effect_request_reaches_sink";

/// etcd's Mutex: a client decided on an old answer after a newer key's client decided (a
/// grant below the greatest token decided is pending). Reaching it witnesses the decisions
/// on stale answers the model is for.
pub const PROPERTY_LATE_DECISION: &str = "decision_below_a_newer_token";

/// Requests for one effect in flight at once, unless `with_effect_requests` says otherwise:
/// two are enough for a duplicate.
pub const EFFECT_REQUESTS_DEFAULT: u8 = 2;

#[derive(Clone, Debug)]
pub struct LockModel {
    pub bounds: Bounds,
    /// Violation bits that make a state terminal.
    pub terminal_mask: u8,
    /// queue-claim's broken twin: every result for the head job is kept, the last one
    /// overwriting (`ON CONFLICT DO UPDATE`), not only the first.
    results_overwritten: bool,
    /// Effect sinks: requests for one effect in flight at most (`EFFECT_REQUESTS_DEFAULT`).
    pub effect_requests_max: u8,
    /// consensus-generation: the highest generation a proposal may have (`with_generations`).
    pub generations_max: u8,
    /// consensus-generation's broken twin: the leader grants on its own acceptance.
    pub(super) early_commit: bool,
}

impl LockModel {
    /// A model whose violating states are all terminal.
    pub fn new(bounds: Bounds) -> LockModel {
        LockModel {
            bounds,
            terminal_mask: u8::MAX,
            results_overwritten: false,
            effect_requests_max: EFFECT_REQUESTS_DEFAULT,
            generations_max: (bounds.grants_max + bounds.failovers_max).min(GENERATIONS_CAP),
            early_commit: false,
        }
    }

    /// consensus-generation: proposals up to generation `max` (at most `GENERATIONS_CAP`);
    /// by default the grants bound plus the failovers bound (a proposal given up per failover).
    pub fn with_generations(mut self, max: u8) -> LockModel {
        assert!(
            (1..=GENERATIONS_CAP).contains(&max),
            "1..={GENERATIONS_CAP}"
        );
        self.generations_max = max;
        self
    }

    /// consensus-generation without its majority: the leader grants a generation on its own
    /// acceptance (the twin its safe verdict is measured against).
    pub fn with_early_commit(mut self) -> LockModel {
        self.early_commit = true;
        self
    }

    /// Only states violating one of `violations` are terminal: searching for a stale write in
    /// incr-beside-lease must continue past the token regression that causes it.
    pub fn with_terminal(mut self, violations: &[Violation]) -> LockModel {
        self.terminal_mask = violations.iter().fold(0, |mask, v| mask | v.bit());
        self
    }

    /// queue-claim without its "first result per job" rule: a result for the head job is
    /// kept even if the job has one already (the twin its safe verdict is measured against).
    pub fn with_results_overwritten(mut self) -> LockModel {
        self.results_overwritten = true;
        self
    }

    /// At most `max` requests for one effect in flight (the refinement check's code search
    /// may have more than the default's two: the outbox dispatcher retransmits).
    pub fn with_effect_requests(mut self, max: u8) -> LockModel {
        assert!(
            (1..=EFFECT_REQUESTS).contains(&max),
            "1..={EFFECT_REQUESTS} requests"
        );
        self.effect_requests_max = max;
        self
    }

    /// The safety properties this model can violate, in reporting order.
    pub fn violations(&self) -> Vec<Violation> {
        let b = &self.bounds;
        Violation::ALL
            .into_iter()
            .filter(|v| match v {
                Violation::TokenOrder => b.protocol.issues_tokens(),
                Violation::StaleWrite => true,
                Violation::LostUpdate => b.reads,
                Violation::DuplicateEffect => b.protocol.has_effect_sink(),
            })
            .collect()
    }

    /// The `sometimes` properties a safe verdict needs reached (vacuity witnesses).
    pub fn witnesses(&self) -> Vec<&'static str> {
        let mut witnesses = vec![PROPERTY_WRITE_ACCEPTED, PROPERTY_STALE_ATTEMPT];
        if self.bounds.protocol.has_revisions() {
            witnesses.push(PROPERTY_LATE_DECISION);
        }
        if self.bounds.protocol.writes_are_conditional() {
            witnesses.push(PROPERTY_CONDITION_FAILS);
        }
        if self.bounds.protocol.store_is_lock() {
            witnesses.push(PROPERTY_GRANT_ENDED);
        }
        if self.bounds.protocol.has_jobs() {
            witnesses.push(PROPERTY_SECOND_RESULT);
        }
        if self.bounds.protocol.has_effect_sink() {
            witnesses.push(PROPERTY_EFFECT_REPEATED);
        }
        witnesses
    }

    fn clients(&self) -> u8 {
        self.bounds.clients
    }

    /// With symmetry on, identical slots are sorted next to each other and yield identical
    /// successors; offering the action for the first of them only saves the duplicate work.
    fn is_duplicate_slot(&self, s: &State, c: u8) -> bool {
        self.bounds.symmetry
            && c > 0
            && s.clients[c as usize] == s.clients[c as usize - 1]
            && s.holder != c
            && s.holder != c - 1
    }

    fn lowest_node(&self, s: &State) -> Option<u8> {
        s.clients[..self.clients() as usize]
            .iter()
            .map(|c| c.node)
            .filter(|&n| n != 0)
            .min()
    }

    /// Applies `action` without canonicalising. `None` when the action is not enabled.
    pub fn step(&self, s: &State, action: Action) -> Option<(State, Event)> {
        let b = &self.bounds;
        let mut n = *s;
        if b.protocol.has_revisions() {
            if let Some(event) = self.etcd_step(s, &mut n, action) {
                self.forget_dead_data(&mut n);
                return event.map(|e| (n, e));
            }
        }
        let event = match action {
            Action::Acquire { client, quorum } => self.acquire(s, &mut n, client, quorum)?,
            Action::Answer { .. } | Action::DropAnswer { .. } | Action::Abandon { .. } => {
                return None
            }
            Action::CreateNode { client } => {
                let c = client as usize;
                let slot = s.clients[c];
                if b.protocol != Protocol::ZkSequential
                    || slot.node != 0
                    || !slot.is_idle()
                    || s.counter >= b.grants_max
                {
                    return None;
                }
                n.counter = s.counter + 1;
                n.clients[c].node = n.counter;
                Event::NodeCreated {
                    client,
                    seq: n.counter,
                }
            }
            Action::DeleteNode { client } => {
                let node = s.clients[client as usize].node;
                if b.protocol != Protocol::ZkSequential || node == 0 || s.holder == client {
                    return None;
                }
                n.clients[client as usize].node = 0;
                Event::NodeDeleted { client, seq: node }
            }
            Action::Expire => {
                if s.holder == NO_HOLDER {
                    return None;
                }
                if b.protocol == Protocol::ZkSequential {
                    // The session's ephemeral node goes with it.
                    n.clients[s.holder as usize].node = 0;
                }
                n.holder = NO_HOLDER;
                Event::LeaseExpired { client: s.holder }
            }
            Action::Read { client } => self.read(s, &mut n, client)?,
            Action::SendWrite { client } => self.send_write(s, &mut n, client)?,
            Action::DeliverWrite { gen } => self.deliver_write(s, &mut n, gen)?,
            Action::CommitWrite { gen } => self.commit_write(s, &mut n, gen)?,
            Action::DeleteJob => {
                if !b.protocol.has_jobs() || s.holder == NO_HOLDER || !s.job_done {
                    return None;
                }
                n.holder = NO_HOLDER;
                n.job_from = s.grants;
                n.job_done = false;
                Event::JobDeleted { client: s.holder }
            }
            Action::Replicate { counter, lease } => self.replicate(s, &mut n, counter, lease)?,
            Action::Failover {
                uncommitted: 0,
                quorum,
            } if b.protocol == Protocol::IncrBesideLease => self.promote(s, &mut n, quorum)?,
            Action::Failover {
                uncommitted,
                quorum: 0,
            } if b.protocol == Protocol::ConsensusGeneration => {
                self.stop_leader(s, &mut n, uncommitted)?
            }
            Action::Failover { .. } => return None,
            Action::Propose { client } => self.propose(s, &mut n, client)?,
            Action::Accept { replica, gen, last } => {
                self.accept_proposal(s, &mut n, replica, gen, last)?
            }
            Action::Ack { replica, client } => self.ack(s, &mut n, replica, client)?,
            Action::GiveUp => self.give_up(s, &mut n)?,
            Action::Report { replica } => self.answer(s, &mut n, replica)?,
            Action::Heard { replica, gen } => self.heard(s, &mut n, replica, gen)?,
            Action::StepDown { .. } | Action::DropWrite { .. } => {
                self.pair_step(s, &mut n, action)?
            }
            Action::SendEffect { gen } => self.send_effect(s, &mut n, gen)?,
            Action::DeliverEffect { gen } => self.deliver_effect(s, &mut n, gen)?,
        };
        self.forget_dead_data(&mut n);
        Some((n, event))
    }

    /// active-passive's own steps: a node's belief ends, a write in flight vanishes.
    fn pair_step(&self, s: &State, n: &mut State, action: Action) -> Option<Event> {
        if !self.bounds.protocol.is_pair() {
            return None;
        }
        match action {
            Action::StepDown { client } => {
                if s.clients[client as usize].is_idle() {
                    return None;
                }
                n.clients[client as usize] = Client::default();
                Some(Event::SteppedDown { client })
            }
            Action::DropWrite { gen } => {
                let i = s.write_index(gen)?;
                n.remove_write(i);
                Some(Event::WriteDropped { generation: gen })
            }
            _ => None,
        }
    }

    /// `Acquire`: the free lease granted to `client`, with the protocol's token.
    fn acquire(&self, s: &State, n: &mut State, client: u8, quorum: u8) -> Option<Event> {
        let b = &self.bounds;
        let c = client as usize;
        let lease_taken = s.holder != NO_HOLDER && !b.protocol.is_pair();
        if lease_taken || s.grants >= b.grants_max || !s.clients[c].is_idle() {
            return None;
        }
        let token = match b.protocol {
            Protocol::NoFence
            | Protocol::ConditionalWrite
            | Protocol::StoreLock
            | Protocol::QueueClaim
            | Protocol::ActivePassive => 0,
            Protocol::FencedCas
            | Protocol::FencedCheckThenWrite
            | Protocol::EffectNaive
            | Protocol::EffectIdempotencyKey
            | Protocol::EffectOutbox => s.grants + 1,
            Protocol::IncrBesideLease => {
                n.counter = s.counter + 1;
                n.counter
            }
            // Its grants come from a majority's acceptances (`quorum.rs`: Ack).
            Protocol::ConsensusGeneration => return None,
            // Their decisions are `etcd_step`'s.
            Protocol::EtcdMutex | Protocol::EtcdMutexNoRecheck => return None,
            Protocol::ZkSequential => {
                let node = s.clients[c].node;
                if node == 0 || self.lowest_node(s) != Some(node) {
                    return None;
                }
                node
            }
        };
        self.grant(s, n, client, token, quorum)
    }

    /// The free lease granted to idle `client` with `token` (the grant's bookkeeping shared by
    /// `Acquire` and consensus-generation's committing `Ack`).
    pub(super) fn grant(
        &self,
        s: &State,
        n: &mut State,
        client: u8,
        token: u8,
        quorum: u8,
    ) -> Option<Event> {
        let b = &self.bounds;
        let c = client as usize;
        if s.holder != NO_HOLDER || s.grants >= b.grants_max || !s.clients[c].is_idle() {
            return None;
        }
        if b.protocol.token_source_is_monotonic() && !self.early_commit {
            assert!(
                token > s.token_max,
                "{} issued token {token} after {}",
                b.protocol.id(),
                s.token_max
            );
        }
        if b.protocol.issues_tokens() && s.grants > 0 && token <= s.token_max {
            n.violations |= Violation::TokenOrder.bit();
        }
        n.grants = s.grants + 1;
        n.token_max = s.token_max.max(token);
        n.clients[c] = Client {
            gen: n.grants,
            token,
            read: 0,
            node: s.clients[c].node,
        };
        if !b.protocol.is_pair() {
            n.holder = client;
        }
        Some(Event::Granted {
            client,
            generation: n.grants,
            token,
            quorum,
        })
    }

    /// `Read`: `client` reads under its grant (refused under `fence_reads` if superseded).
    fn read(&self, s: &State, n: &mut State, client: u8) -> Option<Event> {
        let b = &self.bounds;
        let slot = s.clients[client as usize];
        if !b.reads || slot.is_idle() || slot.read != 0 {
            return None;
        }
        let rejected = (b.fence_reads && slot.token < s.fence)
            || (b.protocol.store_is_lock() && !holds_lease(s, slot.gen));
        if rejected {
            // The resource refuses a superseded reader, so this grant can do nothing.
            n.clients[client as usize] = Client {
                node: slot.node,
                ..Client::default()
            };
        } else {
            if b.fence_reads {
                n.fence = s.fence.max(slot.token);
            }
            n.clients[client as usize].read = s.value + 1;
        }
        Some(Event::ValueRead {
            client,
            generation: slot.gen,
            token: slot.token,
            value: s.value,
            rejected,
        })
    }

    /// `SendWrite`: `client`'s one write goes in flight.
    fn send_write(&self, s: &State, n: &mut State, client: u8) -> Option<Event> {
        let b = &self.bounds;
        let slot = s.clients[client as usize];
        if slot.is_idle() || (b.reads && slot.read == 0) {
            return None;
        }
        if b.protocol.is_pair() && s.write_index(slot.gen).is_some() {
            return None; // its session's earlier write is still live
        }
        n.push_write(Write {
            gen: slot.gen,
            token: slot.token,
            read: slot.read,
            stage: STAGE_IN_FLIGHT,
        });
        if !b.protocol.is_pair() {
            // The grant has done its work; forgetting it keeps equivalent states equal (an
            // active keeps writing under its promotion).
            n.clients[client as usize] = Client {
                node: slot.node,
                ..Client::default()
            };
        }
        let read_value = if b.reads { Some(slot.read - 1) } else { None };
        Some(Event::WriteSent {
            client,
            generation: slot.gen,
            token: slot.token,
            read_value,
        })
    }

    /// `DeliverWrite`: the resource processes the in-flight write of generation `gen`.
    fn deliver_write(&self, s: &State, n: &mut State, gen: u8) -> Option<Event> {
        let b = &self.bounds;
        let i = s.write_index(gen)?;
        let w = s.writes[i];
        if w.stage != STAGE_IN_FLIGHT {
            return None;
        }
        // etcd: grants rank by token, so a superseded write is one below a decided token.
        let superseded = if b.protocol.has_revisions() {
            w.token < s.token_max
        } else {
            w.gen < s.grants
        };
        if superseded {
            n.stale_attempt_seen = true;
        }
        let outcome = match b.protocol {
            _ if b.protocol.has_revisions() && !b.fences() => {
                self.accept(n, &w);
                Outcome::Accepted
            }
            Protocol::NoFence | Protocol::ActivePassive => {
                self.accept(n, &w);
                Outcome::Accepted
            }
            Protocol::ConditionalWrite if w.read == s.value + 1 => {
                self.accept(n, &w);
                Outcome::ConditionHeld { read: w.read - 1 }
            }
            Protocol::ConditionalWrite => Outcome::ConditionFailed {
                read: w.read - 1,
                current: s.value,
            },
            Protocol::StoreLock if holds_lease(s, w.gen) => {
                self.accept(n, &w);
                n.holder = NO_HOLDER; // COMMIT releases the row lock
                Outcome::Committed
            }
            Protocol::StoreLock => Outcome::GrantEnded,
            Protocol::QueueClaim if self.keeps_result(s, w.gen) => {
                self.accept(n, &w);
                n.job_done = true;
                Outcome::FirstResult
            }
            Protocol::QueueClaim => Outcome::JobDone,
            _ if w.token < s.fence => Outcome::Rejected,
            Protocol::FencedCheckThenWrite => Outcome::CheckPassed,
            _ => {
                assert!(w.token >= s.fence);
                self.accept(n, &w);
                n.fence = w.token;
                if b.protocol.has_effect_sink() {
                    // The worker calls the sink once it hears; the outbox entry rides in
                    // the same commit.
                    n.effects[gen as usize - 1] |= EFFECT_OWED;
                }
                Outcome::Accepted
            }
        };
        if outcome == Outcome::CheckPassed {
            n.writes[i].stage = STAGE_CHECKED;
        } else {
            n.remove_write(i);
        }
        Some(Event::WriteDelivered {
            client: UNKNOWN_CLIENT,
            generation: gen,
            token: w.token,
            fence_before: s.fence,
            outcome,
        })
    }

    /// `CommitWrite`: a checked write's body is written (fenced-check-then-write).
    fn commit_write(&self, s: &State, n: &mut State, gen: u8) -> Option<Event> {
        let b = &self.bounds;
        let i = s.write_index(gen)?;
        let w = s.writes[i];
        if w.stage != STAGE_CHECKED {
            return None;
        }
        assert!(b.protocol == Protocol::FencedCheckThenWrite);
        self.accept(n, &w);
        // The article's broken code: `updateDocument(id, body, token)` sets the fence to
        // its own token, even if a newer one landed since the check.
        n.fence = w.token;
        n.remove_write(i);
        Some(Event::WriteCommitted {
            client: UNKNOWN_CLIENT,
            generation: gen,
            token: w.token,
            fence_before: s.fence,
        })
    }

    /// `SendEffect`: one more request for generation `gen`'s owed effect goes to the sink.
    fn send_effect(&self, s: &State, n: &mut State, gen: u8) -> Option<Event> {
        if !self.bounds.protocol.has_effect_sink() || gen == 0 || gen > s.grants {
            return None;
        }
        let e = s.effect(gen);
        let copies = (e & EFFECT_REQUESTS) + 1;
        if e & EFFECT_OWED == 0 || copies > self.effect_requests_max {
            return None;
        }
        n.effects[gen as usize - 1] = (e & !EFFECT_REQUESTS) | copies;
        Some(Event::EffectRequested {
            generation: gen,
            copies,
        })
    }

    /// `DeliverEffect`: the sink handles one request for generation `gen`'s effect.
    fn deliver_effect(&self, s: &State, n: &mut State, gen: u8) -> Option<Event> {
        if !self.bounds.protocol.has_effect_sink() || gen == 0 || gen > s.grants {
            return None;
        }
        let e = s.effect(gen);
        if e & EFFECT_REQUESTS == 0 {
            return None;
        }
        let done = e & EFFECT_PERFORMED != 0;
        let performed = !(done && self.bounds.protocol.effect_keyed());
        if performed && done {
            n.violations |= Violation::DuplicateEffect.bit();
        }
        n.effects[gen as usize - 1] = (e - 1) | EFFECT_PERFORMED;
        Some(Event::EffectDelivered {
            generation: gen,
            performed,
        })
    }

    /// etcd's Mutex: the steps of the etcd protocols' own (`None`: not one of them; the
    /// shared steps — writes, their delivery — are `step`'s). `Some(None)`: not enabled.
    fn etcd_step(&self, s: &State, n: &mut State, action: Action) -> Option<Option<Event>> {
        let slot = |client: u8| s.clients[client as usize];
        let event = match action {
            Action::CreateNode { client } => {
                // Each key takes two revisions (its put, its deletion): 2 × grants_max bounds
                // the keys created at grants_max or more.
                let free = slot(client) == Client::default();
                if !free || s.counter >= 2 * self.bounds.grants_max {
                    return Some(None);
                }
                n.counter = s.counter + 1;
                let c = &mut n.clients[client as usize];
                (c.node, c.token) = (n.counter, n.counter);
                Event::KeyCreated {
                    client,
                    rev: n.counter,
                }
            }
            Action::DeleteNode { client } => {
                let rev = slot(client).node;
                if rev == 0 {
                    return Some(None);
                }
                n.counter = s.counter + 1;
                n.clients[client as usize].node = 0;
                Event::KeyDeleted {
                    client,
                    rev,
                    at: n.counter,
                }
            }
            Action::Answer { client } => {
                let c = slot(client);
                let below = |o: &Client| o.node != 0 && o.node < c.token;
                let live = c.node != 0;
                let recheck = self.bounds.protocol == Protocol::EtcdMutex;
                let waiting = c.token != 0 && c.read == 0 && c.gen == 0;
                if !waiting || (recheck && !live) || s.clients.iter().any(below) {
                    return Some(None);
                }
                n.clients[client as usize].read = 1;
                Event::Answered {
                    client,
                    rev: c.token,
                    live,
                }
            }
            Action::DropAnswer { client } => {
                let c = slot(client);
                if c.read == 0 || c.gen != 0 {
                    return Some(None);
                }
                n.clients[client as usize].read = 0;
                Event::AnswerLost {
                    client,
                    rev: c.token,
                }
            }
            Action::Abandon { client } => {
                let c = slot(client);
                if c.token == 0 || c.gen != 0 {
                    return Some(None);
                }
                (
                    n.clients[client as usize].token,
                    n.clients[client as usize].read,
                ) = (0, 0);
                Event::Abandoned {
                    client,
                    rev: c.token,
                }
            }
            Action::Acquire { client, .. } => {
                let c = slot(client);
                if c.read == 0 || c.gen != 0 || s.grants >= self.bounds.grants_max {
                    return Some(None);
                }
                // Tokens are create revisions, each key's own: no decision repeats one.
                n.grants = s.grants + 1;
                n.token_max = s.token_max.max(c.token);
                let d = &mut n.clients[client as usize];
                (d.gen, d.read) = (n.grants, 0);
                Event::Decided {
                    client,
                    generation: n.grants,
                    token: c.token,
                    newer: if s.token_max > c.token {
                        s.token_max
                    } else {
                        0
                    },
                }
            }
            Action::Expire => return Some(None),
            _ => return None,
        };
        Some(Some(event))
    }

    /// Queue-claim: whether the queue keeps a result of generation `gen`: the first for the
    /// head job, or (the broken twin) any for the head job.
    fn keeps_result(&self, s: &State, gen: u8) -> bool {
        first_result(s, gen) || (self.results_overwritten && gen > s.job_from)
    }

    /// incr-beside-lease's `Replicate`: the backup takes a state the primary had — a
    /// counter `counter` it went through and, with it, no lease or the lease of the grant
    /// that `INCR` issued (a live lease is the latest grant's, so a state the primary had
    /// holds one of those two). Since the last failover each grant has raised the counter
    /// and `grants` together, so that grant's generation is `counter + grants - s.counter`
    /// (the state keeps no record of the counter at the last failover, so with a second
    /// failover left a counter from before it is offered too: more than the code does).
    fn replicate(&self, s: &State, n: &mut State, counter: u8, lease: u8) -> Option<Event> {
        let b = &self.bounds;
        if b.protocol != Protocol::IncrBesideLease || s.failovers >= b.failovers_max {
            return None; // no failover left to read the backup
        }
        let issued_then = (counter + s.grants).checked_sub(s.counter)?;
        if counter > s.counter || (lease != 0 && (counter == 0 || lease != issued_then)) {
            return None;
        }
        if (counter, lease) == (s.backup, s.backup_lease) {
            return None;
        }
        n.backup = counter;
        n.backup_lease = lease;
        Some(Event::Replicated { counter, lease })
    }

    /// incr-beside-lease's `Failover`: the backup is promoted with its counter (the `INCR`s
    /// not yet replicated are lost) and, with `keeps_lease` 1, its copy of a lease, still
    /// live: the slot of that grant if it has not written yet, else an idle slot (none in
    /// an abstract model with fewer clients than grants, all busy: then a live copy only
    /// blocks grants until it expires, which the failover without it followed by no grant
    /// covers). With 0 the promoted backup holds no live lease (none, or its copy expired).
    fn promote(&self, s: &State, n: &mut State, keeps_lease: u8) -> Option<Event> {
        let b = &self.bounds;
        if s.failovers >= b.failovers_max || keeps_lease > 1 {
            return None;
        }
        n.failovers = s.failovers + 1;
        n.counter = s.backup;
        n.backup_lease = 0; // the old primary rejoins as the backup with no lease
        let event = if keeps_lease == 1 {
            let generation = s.backup_lease;
            let slots = &s.clients[..self.clients() as usize];
            let holder = slots
                .iter()
                .position(|c| generation != 0 && c.gen == generation)
                .or_else(|| slots.iter().position(Client::is_idle))
                .filter(|_| generation != 0)?;
            n.holder = holder as u8;
            Event::PromotedWithLease {
                counter_before: s.counter,
                counter_after: n.counter,
                generation,
            }
        } else {
            n.holder = NO_HOLDER;
            Event::FailedOver {
                counter_before: s.counter,
                counter_after: n.counter,
                uncommitted: 0,
                quorum: 0,
            }
        };
        Some(event)
    }

    /// Resets what no future step can read, so that states differing only there are one
    /// state. Both rules are exact (the reachable behaviours and properties are unchanged).
    fn forget_dead_data(&self, n: &mut State) {
        let b = &self.bounds;
        // incr's backup is only read by a failover.
        if b.protocol == Protocol::IncrBesideLease && n.failovers >= b.failovers_max {
            n.backup = 0;
            n.backup_lease = 0;
        }
        // An atomic fence never decreases, so a write below it will be rejected whenever it
        // arrives; once a stale attempt has been seen, its arrival changes nothing.
        if b.fences() && b.protocol != Protocol::FencedCheckThenWrite && n.stale_attempt_seen {
            let fence = n.fence;
            let doomed = |w: &Write| w.gen != 0 && w.stage == STAGE_IN_FLIGHT && w.token < fence;
            if n.writes.iter().any(doomed) {
                for w in n.writes.iter_mut().filter(|w| doomed(w)) {
                    *w = Write::default();
                }
                n.sort_writes();
            }
        }
    }

    /// The resource applies a write's body. A conditional write whose condition held is not
    /// stale (the history checker's `condition_held`): it overwrote exactly what it read.
    fn accept(&self, n: &mut State, w: &Write) {
        if self.bounds.protocol.has_revisions() {
            // Ranked by (token, generation): a late decision on an older key stays older.
            let rank = (w.token, w.gen);
            let top = (n.accepted_token, n.accepted_gen_max);
            if rank < top {
                n.violations |= Violation::StaleWrite.bit();
            } else {
                (n.accepted_token, n.accepted_gen_max) = rank;
            }
            n.value = w.gen;
            return;
        }
        let condition_held = self.bounds.protocol.writes_are_conditional() && w.read == n.value + 1;
        if w.gen < n.accepted_gen_max && !condition_held {
            n.violations |= Violation::StaleWrite.bit();
        }
        if self.bounds.reads && w.read != n.value + 1 {
            n.violations |= Violation::LostUpdate.bit();
        }
        n.accepted_gen_max = n.accepted_gen_max.max(w.gen);
        n.value = w.gen;
    }
}

/// Queue-claim: whether a result of generation `gen` is the first for the head job.
fn first_result(s: &State, gen: u8) -> bool {
    gen > s.job_from && !s.job_done
}

/// Store-lock: whether generation `gen`'s grant still holds the lease (a live lease is
/// always the latest grant's).
fn holds_lease(s: &State, gen: u8) -> bool {
    s.holder != NO_HOLDER && gen == s.grants
}

fn violated(s: &State, v: Violation) -> bool {
    s.violations & v.bit() != 0
}

impl Model for LockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State::initial()]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        if s.violations & self.terminal_mask != 0 {
            return;
        }
        for client in 0..self.clients() {
            if self.is_duplicate_slot(s, client) {
                continue;
            }
            if b.protocol == Protocol::ConsensusGeneration {
                actions.push(Action::Propose { client });
            } else {
                actions.push(Action::Acquire { client, quorum: 0 });
            }
            if b.protocol == Protocol::ZkSequential || b.protocol.has_revisions() {
                actions.push(Action::CreateNode { client });
                actions.push(Action::DeleteNode { client });
            }
            if b.protocol.has_revisions() {
                actions.push(Action::Answer { client });
                actions.push(Action::DropAnswer { client });
                actions.push(Action::Abandon { client });
            }
            if b.reads {
                actions.push(Action::Read { client });
            }
            actions.push(Action::SendWrite { client });
            if b.protocol.is_pair() {
                actions.push(Action::StepDown { client });
            }
        }
        actions.push(Action::Expire);
        for w in s.writes_in_flight() {
            actions.push(if w.stage == STAGE_CHECKED {
                Action::CommitWrite { gen: w.gen }
            } else {
                Action::DeliverWrite { gen: w.gen }
            });
            if b.protocol.is_pair() {
                actions.push(Action::DropWrite { gen: w.gen });
            }
        }
        if b.protocol.has_effect_sink() {
            for gen in 1..=s.grants {
                let e = s.effect(gen);
                if e & EFFECT_OWED != 0 {
                    actions.push(Action::SendEffect { gen });
                }
                if e & EFFECT_REQUESTS != 0 {
                    actions.push(Action::DeliverEffect { gen });
                }
            }
        }
        match b.protocol {
            Protocol::IncrBesideLease if s.failovers < b.failovers_max => {
                for counter in 0..=s.counter {
                    let issued_then = counter + s.grants - s.counter;
                    actions.push(Action::Replicate { counter, lease: 0 });
                    if counter > 0 {
                        actions.push(Action::Replicate {
                            counter,
                            lease: issued_then,
                        });
                    }
                }
                for keeps_lease in [0, 1] {
                    actions.push(Action::Failover {
                        uncommitted: 0,
                        quorum: keeps_lease,
                    });
                }
            }
            Protocol::ConsensusGeneration => self.quorum_actions(s, actions),
            Protocol::QueueClaim => actions.push(Action::DeleteJob),
            _ => {}
        }
        // Candidates only: `step` checks each guard and next_state returns None for a
        // disabled action, which stateright skips. Filtering here would run every step twice.
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let (mut n, _) = self.step(s, action)?;
        if self.bounds.symmetry {
            n.canonicalize(self.clients() as usize);
        }
        Some(n)
    }

    fn format_step(&self, s: &State, action: Action) -> Option<String> {
        let (n, event) = self.step(s, action)?;
        Some(describe(&event, n.violations & !s.violations))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = Vec::new();
        for v in self.violations() {
            properties.push(match v {
                Violation::TokenOrder => {
                    Property::always(v.name(), |_, s| !violated(s, Violation::TokenOrder))
                }
                Violation::StaleWrite => {
                    Property::always(v.name(), |_, s| !violated(s, Violation::StaleWrite))
                }
                Violation::LostUpdate => {
                    Property::always(v.name(), |_, s| !violated(s, Violation::LostUpdate))
                }
                Violation::DuplicateEffect => {
                    Property::always(v.name(), |_, s| !violated(s, Violation::DuplicateEffect))
                }
            });
        }
        properties.push(Property::sometimes(
            PROPERTY_WRITE_ACCEPTED,
            |_, s: &State| s.accepted_gen_max > 0,
        ));
        properties.push(Property::sometimes(
            PROPERTY_STALE_ATTEMPT,
            |_, s: &State| s.stale_attempt_seen,
        ));
        if self.bounds.protocol.has_revisions() {
            properties.push(Property::sometimes(
                PROPERTY_LATE_DECISION,
                |_, s: &State| {
                    s.clients
                        .iter()
                        .any(|c| c.gen != 0 && c.token < s.token_max)
                },
            ));
        }
        if self.bounds.protocol.writes_are_conditional() {
            properties.push(Property::sometimes(
                PROPERTY_CONDITION_FAILS,
                |_, s: &State| s.writes_in_flight().any(|w| w.read != s.value + 1),
            ));
        }
        if self.bounds.protocol.has_effect_sink() {
            properties.push(Property::sometimes(
                PROPERTY_EFFECT_REPEATED,
                |_, s: &State| {
                    s.effects
                        .iter()
                        .any(|&e| e & EFFECT_PERFORMED != 0 && e & EFFECT_REQUESTS != 0)
                },
            ));
        }
        if self.bounds.protocol.store_is_lock() {
            properties.push(Property::sometimes(PROPERTY_GRANT_ENDED, |_, s: &State| {
                s.writes_in_flight().any(|w| !holds_lease(s, w.gen))
            }));
        }
        if self.bounds.protocol.has_jobs() {
            properties.push(Property::sometimes(
                PROPERTY_SECOND_RESULT,
                |_, s: &State| s.writes_in_flight().any(|w| !first_result(s, w.gen)),
            ));
        }
        properties
    }
}
