//! The lease server: Redis `SET key value NX PX ttl` with an optional token
//! source beside it, on one node or a replica group.
//!
//! Models the lock services of the article. A lease record is (owner nonce,
//! token, expiry on the server's wall clock — Redis stores absolute expiry
//! times, so a wall-clock jump moves every lease). Release is either a plain
//! `DEL` (removes whatever lease is there, the bug the Redis docs warn
//! about) or compare-and-delete (Lua script / `DELEX IFEQ`). Renewal extends
//! the caller's own lease by a full TTL (DynamoDB lock client heartbeat,
//! Redisson watchdog).
//!
//! Token sources and replication (`Replication`):
//! - `None` + tokens: one durable counter, persisted as *synced* before the
//!   grant leaves, so a restart can never reissue a token (fenced-cas).
//! - `Async`: a Redis primary replicating to its replicas after a lag
//!   (INCR beside the lease). The counter is persisted *buffered* (AOF
//!   everysec). A failover promotes a replica that may not have seen the
//!   last grants: it reissues tokens and forgets leases (incr-beside-lease).
//! - `Quorum`: Chubby-style sequencer. A generation is accepted by a
//!   majority (each acceptor persists it synced) before the grant leaves; a
//!   promoted primary first learns the highest accepted generation from a
//!   majority. Majorities intersect, so generations only grow across
//!   failover. Assumes, as Chubby's master lease does, that a deposed
//!   primary has stopped (fencesim's failover crashes it first).
//!
//! The lease table itself is volatile: a restarted server forgets who held
//! what. Fencing is what keeps data safe through that.
//!
//! Lock-delay (Chubby, Burrows OSDI '06 §2.4): when a lease ends because
//! its TTL ran out — the holder failed or became unreachable, as opposed to
//! releasing — the key is refused to everyone for `lock_delay_ns` more. It
//! is for resources that cannot check sequencers: a holder's delayed
//! message that arrives within the delay lands before anyone else holds the
//! lock. It is a bound, not a proof: a pause or delay longer than TTL plus
//! lock-delay still lets a stale write in. The delay is judged on this
//! server's wall clock and, like the lease table, not replicated.
//!
//! Re-acquiring with the owner nonce that already holds the key answers with
//! the same grant again (without extending it), so a retransmitted acquire
//! is idempotent instead of locking its own sender out.

use std::collections::BTreeMap;

use crate::protocol::msg::{Key, Msg, Token};
use crate::protocol::node::{
    Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation, TimerId,
};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReleaseStyle {
    /// `DEL key`: removes whichever lease is present.
    Del,
    /// `if GET key == value then DEL key`: removes only the caller's lease.
    CompareAndDelete,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Replication {
    /// A single node.
    None,
    /// Primary ships its state to the replicas `lag_ns` after it changes.
    Async { lag_ns: Nanos },
    /// Generations are committed on a majority before they are granted.
    Quorum,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CoordinatorConfig {
    pub lease_ttl_ns: Nanos,
    pub release: ReleaseStyle,
    /// Issue fencing tokens.
    pub tokens: bool,
    pub replication: Replication,
    /// The replica group: ids `first .. first + replicas`; this node is `index`.
    pub first: NodeId,
    pub replicas: u8,
    pub index: u8,
    /// Chubby's lock-delay after a lease *expires* (0: none).
    pub lock_delay_ns: Nanos,
}

impl CoordinatorConfig {
    pub fn single(lease_ttl_ns: Nanos, release: ReleaseStyle, tokens: bool, id: NodeId) -> Self {
        CoordinatorConfig {
            lease_ttl_ns,
            release,
            tokens,
            replication: Replication::None,
            first: id,
            replicas: 1,
            index: 0,
            lock_delay_ns: 0,
        }
    }

    fn majority(&self) -> u32 {
        self.replicas as u32 / 2 + 1
    }

    /// How long a quorum round waits for the answers it lacks before asking
    /// again (`QueryMax`) or giving up (a proposal): messages get lost and
    /// replicas go down, and a primary that waits forever never serves.
    fn quorum_retry_ns(&self) -> Nanos {
        (self.lease_ttl_ns / 4).max(1)
    }
}

/// Quorum: (ready, the open proposal as (generation, acks), the pending
/// query as (acks, highest answer)), see [`Coordinator::quorum_round`].
pub type QuorumRound = (bool, Option<(u64, u8)>, Option<(u8, u64)>);

/// A lease record as the server stores it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Lease {
    pub owner: u64,
    pub token: Option<Token>,
    pub expires_wall_ns: i64,
}

/// An acquire waiting for its generation to reach a majority.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Proposal {
    gen: u64,
    acks: u8,
    from: NodeId,
    req: u32,
    key: Key,
    owner: u64,
}

/// Timer ids: one expiry check per key (`TimerId(key)`), and replication.
const REPLICATE: TimerId = TimerId(u16::MAX);
/// Quorum: a pending `QueryMax` or proposal is looked at again (see
/// [`Coordinator::on_quorum_retry`]).
const QUORUM_RETRY: TimerId = TimerId(u16::MAX - 1);

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Coordinator {
    cfg: CoordinatorConfig,
    leases: BTreeMap<Key, Lease>,
    /// Lock-delay: an expired key is refused until this wall-clock instant.
    delayed_until_wall_ns: BTreeMap<Key, i64>,
    /// Greatest token issued (or, under `Quorum`, generation accepted).
    counter: u64,
    primary: bool,
    /// Quorum: a primary serves only after learning the highest generation.
    ready: bool,
    /// Quorum: replicas that answered `QueryMax`, and the highest answer.
    query: Option<(u8, u64)>,
    proposal: Option<Proposal>,
    replicate_pending: bool,
}

impl Coordinator {
    pub fn new(cfg: CoordinatorConfig) -> Self {
        assert!(cfg.lease_ttl_ns > 0, "a lease needs a positive TTL");
        assert!(cfg.replicas >= 1 && cfg.index < cfg.replicas && cfg.replicas <= 8);
        Coordinator {
            cfg,
            leases: BTreeMap::new(),
            delayed_until_wall_ns: BTreeMap::new(),
            counter: 0,
            primary: false,
            ready: false,
            query: None,
            proposal: None,
            replicate_pending: false,
        }
    }

    /// The lease record of `key`, expired or not (a getter for checkers:
    /// the code-level refinement check reads who holds the lease).
    pub fn lease(&self, key: Key) -> Option<&Lease> {
        self.leases.get(&key)
    }

    /// The counter: the greatest token issued, or the one a replica last
    /// received (a getter for checkers: the refinement check reads a
    /// replica's copy).
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Quorum: whether the primary serves (it learned the highest
    /// generation from a majority), its open proposal as (generation, the
    /// replicas that accepted it, itself included) and its pending
    /// `QueryMax` as (the replicas that answered, itself included, and the
    /// highest answer) — a getter for checkers: the refinement check reads
    /// the quorum rounds.
    pub fn quorum_round(&self) -> QuorumRound {
        (
            self.ready,
            self.proposal.map(|p| (p.gen, p.acks)),
            self.query,
        )
    }

    fn expiry_timer(key: Key) -> TimerId {
        TimerId(key.0)
    }

    fn peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        let (first, me) = (self.cfg.first.0, self.cfg.index as u16);
        (0..self.cfg.replicas as u16)
            .filter(move |&i| i != me)
            .map(move |i| NodeId(first + i))
    }

    fn peer_bit(&self, from: NodeId) -> Option<u8> {
        let i = from.0.checked_sub(self.cfg.first.0)?;
        (i < self.cfg.replicas as u16).then_some(1u8 << i)
    }

    /// Drops `key`'s lease if it ran out on our wall clock. Returns whether
    /// the key is now free.
    fn expire_if_due(&mut self, clocks: Clocks, key: Key, fx: &mut Vec<Effect>) -> bool {
        match self.leases.get(&key) {
            None => true,
            Some(lease) if clocks.wall_ns >= lease.expires_wall_ns => {
                fx.push(Effect::Observe(Observation::LeaseExpired {
                    key,
                    owner: lease.owner,
                }));
                if self.cfg.lock_delay_ns > 0 {
                    let until = lease
                        .expires_wall_ns
                        .saturating_add(self.cfg.lock_delay_ns as i64);
                    self.delayed_until_wall_ns.insert(key, until);
                }
                self.leases.remove(&key);
                self.changed(fx);
                true
            }
            Some(_) => false,
        }
    }

    /// Whether `key` is free but still inside its lock-delay.
    fn lock_delayed(&mut self, clocks: Clocks, key: Key) -> bool {
        match self.delayed_until_wall_ns.get(&key) {
            Some(&until) if clocks.wall_ns < until => true,
            Some(_) => {
                self.delayed_until_wall_ns.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Async replication: ship the new state after the lag.
    fn changed(&mut self, fx: &mut Vec<Effect>) {
        if let Replication::Async { lag_ns } = self.cfg.replication {
            if self.primary && !self.replicate_pending {
                self.replicate_pending = true;
                fx.push(Effect::SetTimer {
                    timer: REPLICATE,
                    after_ns: lag_ns,
                });
            }
        }
    }

    // Each argument is one fact of the grant being issued; a struct for a
    // single private call site would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn grant(
        &mut self,
        clocks: Clocks,
        to: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        token: Option<Token>,
        fx: &mut Vec<Effect>,
    ) {
        let ttl_ns = self.cfg.lease_ttl_ns;
        let expires_wall_ns = clocks.wall_ns.saturating_add(ttl_ns as i64);
        self.leases.insert(
            key,
            Lease {
                owner,
                token,
                expires_wall_ns,
            },
        );
        fx.push(Effect::SetTimer {
            timer: Self::expiry_timer(key),
            after_ns: ttl_ns,
        });
        fx.push(Effect::Send {
            to,
            msg: Msg::Granted {
                req,
                key,
                owner,
                token,
                ttl_ns,
            },
        });
        self.changed(fx);
    }

    fn on_acquire(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        if !self.primary {
            return; // a replica never serves clients; the request is lost with the old route
        }
        if !self.ready {
            fx.push(Effect::Send {
                to: from,
                msg: Msg::Busy { req, key },
            });
            return;
        }
        if !self.expire_if_due(clocks, key, fx) {
            let lease = self.leases[&key];
            let msg = if lease.owner == owner {
                let left_ns = (lease.expires_wall_ns - clocks.wall_ns).max(0) as u64;
                Msg::Granted {
                    req,
                    key,
                    owner,
                    token: lease.token,
                    ttl_ns: left_ns,
                }
            } else {
                Msg::Busy { req, key }
            };
            fx.push(Effect::Send { to: from, msg });
            return;
        }
        if self.lock_delayed(clocks, key) {
            fx.push(Effect::Send {
                to: from,
                msg: Msg::Busy { req, key },
            });
            return;
        }
        if !self.cfg.tokens {
            self.grant(clocks, from, req, key, owner, None, fx);
            return;
        }
        if self.proposal.is_some() {
            fx.push(Effect::Send {
                to: from,
                msg: Msg::Busy { req, key },
            });
            return;
        }
        self.issue_token(clocks, from, req, key, owner, fx);
    }

    /// The next fencing token for a grant of `key` to `owner`: made
    /// durable (or not, per the replication) before the grant leaves, or
    /// first proposed to the replicas under quorum replication.
    fn issue_token(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        let next = self.counter.checked_add(1).expect("token counter overflow");
        assert!(next > self.counter, "issued tokens must strictly grow");
        self.counter = next;
        match self.cfg.replication {
            Replication::None => {
                // Durable before the grant leaves: a restarted server resumes above it.
                fx.push(Effect::Persist {
                    durability: Durability::Synced,
                    record: next.to_le_bytes()[..].into(),
                });
                self.grant(clocks, from, req, key, owner, Some(Token(next)), fx);
            }
            Replication::Async { .. } => {
                // INCR: in memory, fsync'ed "every second" — i.e. not before replying.
                fx.push(Effect::Persist {
                    durability: Durability::Buffered,
                    record: next.to_le_bytes()[..].into(),
                });
                self.grant(clocks, from, req, key, owner, Some(Token(next)), fx);
            }
            Replication::Quorum => {
                fx.push(Effect::Persist {
                    durability: Durability::Synced,
                    record: next.to_le_bytes()[..].into(),
                });
                let me = 1u8 << self.cfg.index;
                self.proposal = Some(Proposal {
                    gen: next,
                    acks: me,
                    from,
                    req,
                    key,
                    owner,
                });
                fx.push(Effect::SetTimer {
                    timer: QUORUM_RETRY,
                    after_ns: self.cfg.quorum_retry_ns(),
                });
                for peer in self.peers().collect::<Vec<_>>() {
                    fx.push(Effect::Send {
                        to: peer,
                        msg: Msg::Propose { gen: next },
                    });
                }
                self.try_commit(clocks, fx);
            }
        }
    }

    fn try_commit(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let Some(p) = self.proposal else { return };
        if p.acks.count_ones() < self.cfg.majority() {
            return;
        }
        self.proposal = None;
        self.grant(
            clocks,
            p.from,
            p.req,
            p.key,
            p.owner,
            Some(Token(p.gen)),
            fx,
        );
    }

    fn on_release(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        if !self.primary {
            return;
        }
        self.expire_if_due(clocks, key, fx);
        let removed = match (self.cfg.release, self.leases.get(&key)) {
            (_, None) => None,
            (ReleaseStyle::Del, Some(lease)) => Some(lease.owner),
            (ReleaseStyle::CompareAndDelete, Some(lease)) if lease.owner == owner => {
                Some(lease.owner)
            }
            (ReleaseStyle::CompareAndDelete, Some(_)) => None,
        };
        if removed.is_some() {
            self.leases.remove(&key);
            fx.push(Effect::CancelTimer {
                timer: Self::expiry_timer(key),
            });
            self.changed(fx);
        }
        if self.cfg.release == ReleaseStyle::CompareAndDelete {
            assert!(
                removed.is_none() || removed == Some(owner),
                "compare-and-delete removed a foreign lease"
            );
        }
        fx.push(Effect::Send {
            to: from,
            msg: Msg::Released { req, key, removed },
        });
    }

    fn on_renew(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        if !self.primary {
            return;
        }
        self.expire_if_due(clocks, key, fx);
        let ttl_ns = self.cfg.lease_ttl_ns;
        let msg = match self.leases.get_mut(&key) {
            Some(lease) if lease.owner == owner => {
                lease.expires_wall_ns = clocks.wall_ns.saturating_add(ttl_ns as i64);
                fx.push(Effect::SetTimer {
                    timer: Self::expiry_timer(key),
                    after_ns: ttl_ns,
                });
                self.changed(fx);
                Msg::Renewed {
                    req,
                    key,
                    owner,
                    ttl_ns,
                }
            }
            _ => Msg::RenewFailed { req, key, owner },
        };
        fx.push(Effect::Send { to: from, msg });
    }

    fn on_expiry_timer(&mut self, clocks: Clocks, key: Key, fx: &mut Vec<Effect>) {
        if self.expire_if_due(clocks, key, fx) {
            return;
        }
        // The wall clock was stepped back since the timer was set: re-arm for what is left.
        let lease = self.leases[&key];
        let left_ns = (lease.expires_wall_ns - clocks.wall_ns).max(1) as u64;
        fx.push(Effect::SetTimer {
            timer: Self::expiry_timer(key),
            after_ns: left_ns,
        });
    }

    fn replicate(&mut self, fx: &mut Vec<Effect>) {
        self.replicate_pending = false;
        if !self.primary {
            return;
        }
        let keys: Vec<Key> = self
            .leases
            .keys()
            .copied()
            .chain(std::iter::once(Key(0)))
            .collect();
        for peer in self.peers().collect::<Vec<_>>() {
            for &key in &keys {
                let lease = self.leases.get(&key);
                let msg = Msg::Replicate {
                    key,
                    counter: self.counter,
                    owner: lease.map_or(0, |l| l.owner),
                    token: lease.and_then(|l| l.token),
                    expires_wall_ns: lease.map_or(0, |l| l.expires_wall_ns),
                };
                fx.push(Effect::Send { to: peer, msg });
                if lease.is_none() {
                    break; // Key(0) with no lease: one message carries the counter
                }
            }
        }
    }

    fn on_peer(&mut self, clocks: Clocks, from: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        match msg {
            Msg::Replicate {
                key,
                counter,
                owner,
                token,
                expires_wall_ns,
            } if !self.primary => {
                self.counter = counter;
                if owner == 0 {
                    self.leases.remove(&key);
                } else {
                    self.leases.insert(
                        key,
                        Lease {
                            owner,
                            token,
                            expires_wall_ns,
                        },
                    );
                }
            }
            Msg::Propose { gen } => {
                let ok = gen > self.counter;
                if ok {
                    self.counter = gen;
                    fx.push(Effect::Persist {
                        durability: Durability::Synced,
                        record: gen.to_le_bytes()[..].into(),
                    });
                }
                fx.push(Effect::Send {
                    to: from,
                    msg: Msg::Accepted { gen, ok },
                });
            }
            Msg::Accepted { gen, ok } => {
                let Some(bit) = self.peer_bit(from) else {
                    return;
                };
                let Some(p) = self.proposal.as_mut() else {
                    return;
                };
                if p.gen != gen {
                    return;
                }
                if ok {
                    p.acks |= bit;
                    self.try_commit(clocks, fx);
                } else {
                    let p = *p;
                    self.proposal = None;
                    fx.push(Effect::Send {
                        to: p.from,
                        msg: Msg::Busy {
                            req: p.req,
                            key: p.key,
                        },
                    });
                }
            }
            Msg::QueryMax => fx.push(Effect::Send {
                to: from,
                msg: Msg::MaxIs { gen: self.counter },
            }),
            Msg::MaxIs { gen } => {
                let Some(bit) = self.peer_bit(from) else {
                    return;
                };
                let Some((acks, max)) = self.query.as_mut() else {
                    return;
                };
                *acks |= bit;
                *max = (*max).max(gen);
                if acks.count_ones() >= self.cfg.majority() {
                    self.counter = self.counter.max(*max);
                    self.query = None;
                    self.ready = true;
                }
            }
            Msg::Promote => self.promote(fx),
            _ => {}
        }
    }

    /// Asks every peer that has not answered the pending `QueryMax` (again),
    /// and looks again after the retry period.
    fn query_missing_peers(&mut self, fx: &mut Vec<Effect>) {
        let Some((acks, _)) = self.query else { return };
        let missing: Vec<NodeId> = self
            .peers()
            .filter(|&p| self.peer_bit(p).is_some_and(|bit| acks & bit == 0))
            .collect();
        for peer in missing {
            fx.push(Effect::Send {
                to: peer,
                msg: Msg::QueryMax,
            });
        }
        fx.push(Effect::SetTimer {
            timer: QUORUM_RETRY,
            after_ns: self.cfg.quorum_retry_ns(),
        });
    }

    /// A quorum round is still open after the retry period. `QueryMax` is a
    /// read and is simply asked again. A proposal is given up and its client
    /// told `Busy` (it retries, and the next proposal takes a higher
    /// generation): re-proposing the same generation is not safe, since a
    /// replica that already accepted it must refuse it a second time — that
    /// refusal is what keeps two primaries from committing one generation.
    fn on_quorum_retry(&mut self, fx: &mut Vec<Effect>) {
        if !self.primary {
            return;
        }
        if let Some(p) = self.proposal.take() {
            fx.push(Effect::Send {
                to: p.from,
                msg: Msg::Busy {
                    req: p.req,
                    key: p.key,
                },
            });
        }
        if self.query.is_some() {
            self.query_missing_peers(fx);
        }
    }

    fn promote(&mut self, fx: &mut Vec<Effect>) {
        self.primary = true;
        self.proposal = None;
        if self.cfg.replication == Replication::Quorum {
            self.ready = false;
            self.query = Some((1u8 << self.cfg.index, self.counter));
            self.query_missing_peers(fx);
            if self.cfg.majority() == 1 {
                self.query = None;
                self.ready = true;
            }
        } else {
            self.ready = true;
        }
        self.changed(fx);
    }
}

impl Node for Coordinator {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                self.leases.clear();
                self.delayed_until_wall_ns.clear();
                self.proposal = None;
                self.query = None;
                self.counter = match recovered {
                    Some(bytes) if bytes.len() == 8 => {
                        let mut word = [0u8; 8];
                        word.copy_from_slice(bytes);
                        u64::from_le_bytes(word)
                    }
                    Some(bytes) => {
                        panic!("coordinator record is {} bytes, expected 8", bytes.len())
                    }
                    None => 0,
                };
                // Every (re)started node is a replica until told otherwise: the harness sends
                // `Promote` to the node the group address points at, at boot and after a restart
                // or failover, the way Sentinel or an election would.
                self.primary = false;
                self.ready = false;
            }
            Input::Message { from, msg } => match msg {
                Msg::Acquire { req, key, owner } => {
                    self.on_acquire(clocks, from, req, key, owner, fx)
                }
                Msg::Release { req, key, owner } => {
                    self.on_release(clocks, from, req, key, owner, fx)
                }
                Msg::Renew { req, key, owner } => self.on_renew(clocks, from, req, key, owner, fx),
                other => self.on_peer(clocks, from, other, fx),
            },
            Input::Timer { timer: REPLICATE } => self.replicate(fx),
            Input::Timer {
                timer: QUORUM_RETRY,
            } => self.on_quorum_retry(fx),
            Input::Timer { timer } => self.on_expiry_timer(clocks, Key(timer.0), fx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testkit::at;

    const SEC: u64 = 1_000_000_000;
    const A: NodeId = NodeId(10);
    const B: NodeId = NodeId(11);
    const KEY: Key = Key(0);

    fn server(lock_delay_ns: Nanos) -> Coordinator {
        let mut cfg =
            CoordinatorConfig::single(10 * SEC, ReleaseStyle::CompareAndDelete, false, NodeId(0));
        cfg.lock_delay_ns = lock_delay_ns;
        let mut c = Coordinator::new(cfg);
        let mut fx = Vec::new();
        c.handle(at(0), Input::Start { recovered: None }, &mut fx);
        c.handle(
            at(0),
            Input::Message {
                from: NodeId(0),
                msg: Msg::Promote,
            },
            &mut fx,
        );
        c
    }

    fn send(c: &mut Coordinator, t_ns: u64, from: NodeId, msg: Msg) -> Vec<Msg> {
        let mut fx = Vec::new();
        c.handle(at(t_ns), Input::Message { from, msg }, &mut fx);
        fx.into_iter()
            .filter_map(|e| match e {
                Effect::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .collect()
    }

    fn acquire(c: &mut Coordinator, t_ns: u64, from: NodeId, owner: u64) -> bool {
        let replies = send(
            c,
            t_ns,
            from,
            Msg::Acquire {
                req: 1,
                key: KEY,
                owner,
            },
        );
        matches!(replies.as_slice(), [Msg::Granted { .. }])
    }

    #[test]
    fn an_expired_lease_keeps_its_key_refused_for_the_lock_delay() {
        let mut c = server(5 * SEC);
        assert!(acquire(&mut c, 0, A, 1));
        // Expired at 10 s, refused until 15 s on the server's wall clock.
        assert!(!acquire(&mut c, 11 * SEC, B, 2));
        assert!(!acquire(&mut c, 15 * SEC - 1, B, 2));
        assert!(acquire(&mut c, 15 * SEC, B, 2));
    }

    #[test]
    fn without_lock_delay_an_expired_key_is_granted_at_once() {
        let mut c = server(0);
        assert!(acquire(&mut c, 0, A, 1));
        assert!(acquire(&mut c, 10 * SEC, B, 2));
    }

    #[test]
    fn a_released_key_is_not_lock_delayed() {
        let mut c = server(5 * SEC);
        assert!(acquire(&mut c, 0, A, 1));
        send(
            &mut c,
            SEC,
            A,
            Msg::Release {
                req: 2,
                key: KEY,
                owner: 1,
            },
        );
        assert!(acquire(&mut c, SEC, B, 2));
    }

    /// Replica 0 of three (`coord` ids 0, 1, 2), promoted; returns what it sent.
    fn quorum_primary() -> (Coordinator, Vec<Msg>) {
        let cfg = CoordinatorConfig {
            replication: Replication::Quorum,
            replicas: 3,
            ..CoordinatorConfig::single(4 * SEC, ReleaseStyle::CompareAndDelete, true, NodeId(0))
        };
        let mut c = Coordinator::new(cfg);
        let mut fx = Vec::new();
        c.handle(at(0), Input::Start { recovered: None }, &mut fx);
        let sent = send(&mut c, 0, NodeId(0), Msg::Promote);
        (c, sent)
    }

    fn fire(c: &mut Coordinator, t_ns: u64, timer: TimerId) -> Vec<Msg> {
        let mut fx = Vec::new();
        c.handle(at(t_ns), Input::Timer { timer }, &mut fx);
        fx.into_iter()
            .filter_map(|e| match e {
                Effect::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_new_primary_asks_again_for_the_highest_generation_until_a_majority_answers() {
        let (mut c, sent) = quorum_primary();
        assert_eq!(sent, [Msg::QueryMax, Msg::QueryMax]);
        // Replica 1 is down and replica 2's answer is lost: not ready yet.
        assert!(
            !acquire(&mut c, SEC, A, 1),
            "not serving before a majority answered"
        );
        let again = fire(&mut c, SEC, QUORUM_RETRY);
        assert_eq!(
            again,
            [Msg::QueryMax, Msg::QueryMax],
            "both peers asked again"
        );
        send(&mut c, SEC, NodeId(2), Msg::MaxIs { gen: 7 });
        // A majority answered: the retry asks no one.
        assert_eq!(fire(&mut c, 2 * SEC, QUORUM_RETRY), []);
        let granted = send(
            &mut c,
            2 * SEC,
            A,
            Msg::Acquire {
                req: 1,
                key: KEY,
                owner: 1,
            },
        );
        assert!(
            matches!(
                granted[..],
                [Msg::Propose { gen: 8 }, Msg::Propose { gen: 8 }]
            ),
            "ready, and above the highest generation learned: {granted:?}"
        );
    }

    #[test]
    fn a_proposal_without_a_majority_is_given_up_so_the_next_acquire_can_be_served() {
        let (mut c, _) = quorum_primary();
        send(&mut c, 0, NodeId(1), Msg::MaxIs { gen: 0 });
        let proposed = send(
            &mut c,
            SEC,
            A,
            Msg::Acquire {
                req: 1,
                key: KEY,
                owner: 1,
            },
        );
        assert_eq!(proposed, [Msg::Propose { gen: 1 }, Msg::Propose { gen: 1 }]);
        // Both acceptances are lost: the client hears Busy at the retry.
        assert_eq!(
            fire(&mut c, 2 * SEC, QUORUM_RETRY),
            [Msg::Busy { req: 1, key: KEY }]
        );
        let next = send(
            &mut c,
            3 * SEC,
            B,
            Msg::Acquire {
                req: 2,
                key: KEY,
                owner: 2,
            },
        );
        assert_eq!(
            next,
            [Msg::Propose { gen: 2 }, Msg::Propose { gen: 2 }],
            "a fresh generation, never the abandoned one again"
        );
    }
}
