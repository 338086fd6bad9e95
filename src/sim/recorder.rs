//! Builds the history from what crosses the simulated network and from node
//! lifecycle events — the harness's account, not the nodes'.
//!
//! Grant identity is the harness's too: a grant is a distinct (key, owner
//! nonce, token) that a coordinator sent; re-sends of the same triple (an
//! idempotent answer to a retransmitted acquire) are the same grant. Grant
//! ids are numbered 1, 2, 3… in the order they were first sent. A write's
//! token and value, and a release's owner, are taken from the request as it
//! was delivered, so the record of what the resource applied does not depend
//! on what its reply chooses to repeat.
//!
//! In the client-decided protocols (ZooKeeper's recipe, Redlock, DynamoDB's
//! lock client, etcd's mutex, …) no message is a grant: the client concludes it
//! holds the lock. Their few lock-domain messages (a release, a fired watch)
//! say so in their declaration (`LockDomainEvent`); the recorder has no arm
//! per system. The worker's `Acquired` observation marks that step, and
//! becomes a `grant_issued` and a `grant_received` at the worker, so the
//! generation order is the true-time order of the decisions.
//!
//! An active/passive pair node's promotion (`BecameActive`) is such a
//! decision too: one `became_active` record that is both the grant's issue
//! and its receipt, numbered from the same grant ids.

use crate::history::{Event, Kind, Outcome};
use crate::lookup::{Lookup, LookupSet};
use crate::protocol::msg::{system_msg, Key, LockDomainEvent, ReqId, Token};
use crate::protocol::{Msg, NodeId, Observation};

#[derive(Default)]
pub struct Recorder {
    grants: Lookup<(u16, u64, u64), u64>,
    owner_grant: Lookup<u64, u64>,
    next_grant: u64,
    writes_in: Lookup<u64, (Option<u64>, u64)>,
    releases_in: Lookup<(u16, u32), u64>,
    /// owner -> true time its lease runs out, as last granted or renewed.
    expiry: Lookup<u64, u64>,
    /// Fanned-out systems (Redlock): nonces whose acquire / release was
    /// already recorded (one decision goes to N servers as N messages; it
    /// is one record).
    fanned_acquires: LookupSet<u64>,
    fanned_releases: LookupSet<u64>,
    /// (node, key) -> grant id of the pair node's current promotion.
    active: Lookup<(u16, u16), u64>,
}

/// A record without its seq and time, pushed onto `out` and filled in
/// there: the simulator stamps seq and time in the same slot, so a record
/// is built where it stays and never passes through the simulator.
/// (`Vec::resize_with` instead of `push`, to write the blank record into
/// its slot rather than copy it there, counted +8.0 instructions per
/// event: the copy went, but `resize_with` is called, not inlined.)
#[inline(always)]
fn push(out: &mut Vec<Event>, node: NodeId, kind: Kind, f: impl FnOnce(&mut Event)) {
    out.push(Event::new(0, 0, node.0, kind));
    if let Some(e) = out.last_mut() {
        f(e);
    }
}

impl Recorder {
    /// Forgets the last run, keeping the tables (every field named, so a
    /// new one cannot be forgotten here).
    pub fn clear(&mut self) {
        let Recorder {
            grants,
            owner_grant,
            next_grant,
            writes_in,
            releases_in,
            expiry,
            fanned_acquires,
            fanned_releases,
            active,
        } = self;
        grants.clear();
        owner_grant.clear();
        *next_grant = 0;
        writes_in.clear();
        releases_in.clear();
        expiry.clear();
        fanned_acquires.clear();
        fanned_releases.clear();
        active.clear();
    }

    /// What `from` handing `msg` (to `to`) to the network at true time
    /// `now` tells us, pushed onto `out` (one record or none).
    pub fn on_send(&mut self, now: u64, from: NodeId, to: NodeId, msg: &Msg, out: &mut Vec<Event>) {
        let key = Some(msg.key().0);
        match *msg {
            Msg::Granted {
                key: k,
                owner,
                token,
                ttl_ns,
                ..
            } => self.granted(now, from, (k, owner, token, ttl_ns), out),
            Msg::Acquire { .. } => push(out, from, Kind::AcquireSent, |e| e.key = key),
            Msg::Renewed { owner, ttl_ns, .. } => self.renewed(now, from, key, owner, ttl_ns, out),
            Msg::RenewFailed { owner, .. } => push(out, from, Kind::RenewFailed, |e| {
                e.key = key;
                e.grant_id = self.owner_grant.get(&owner).copied();
            }),
            Msg::Read { op, token, .. } => push(out, from, Kind::ReadSent, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.token = token.map(|t| t.0);
            }),
            Msg::ReadOk { op, value, .. } => push(out, from, Kind::ReadServed, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.value = Some(value.0);
                e.outcome = Some(Outcome::Ok);
            }),
            Msg::ReadRejected { op, fence, .. } => push(out, from, Kind::ReadServed, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.value = Some(fence.0);
                e.outcome = Some(Outcome::Rejected);
            }),
            Msg::Write {
                op, token, value, ..
            } => push(out, from, Kind::WriteSent, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.token = token.map(|t| t.0);
                e.value = Some(value.0);
            }),
            Msg::WriteOk { op, .. } => self.write_answered(from, key, op.0, None, out),
            Msg::WriteRejected { op, fence, .. } => {
                self.write_answered(from, key, op.0, Some(fence.0), out)
            }
            Msg::Release { owner, .. } => push(out, from, Kind::ReleaseSent, |e| {
                e.key = key;
                e.grant_id = self.owner_grant.get(&owner).copied();
            }),
            Msg::Released { req, removed, .. } => self.released(from, to, key, req, removed, out),
            // Each system's own messages: its file declares the few that
            // are lock-domain events, the recorder reads that declaration.
            system_msg!() => {
                if let Some(event) = msg.lock_domain_event() {
                    self.system_sent(from, key, event, out)
                }
            }
            Msg::Effect { op, idem_key, .. } => push(out, from, Kind::EffectSent, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.value = idem_key;
            }),
            // The provider's answer says what it did; it is the environment,
            // like the resource whose write_ok records write_accepted.
            Msg::EffectOk { op, performed, .. } => {
                let kind = if performed {
                    Kind::EffectPerformed
                } else {
                    Kind::EffectDeduplicated
                };
                push(out, from, kind, |e| {
                    e.key = key;
                    e.op_id = Some(op.0);
                })
            }
            Msg::Busy { .. }
            | Msg::Renew { .. }
            | Msg::Replicate { .. }
            | Msg::Propose { .. }
            | Msg::Accepted { .. }
            | Msg::QueryMax
            | Msg::MaxIs { .. }
            | Msg::Promote
            | Msg::OutboxPoll { .. }
            | Msg::OutboxEntry { .. }
            | Msg::PairHeartbeat { .. }
            | Msg::Stonith { .. }
            | Msg::Reserve { .. }
            | Msg::Reserved { .. } => {}
        }
    }

    /// The record of resource reply `msg` as node `to` received it, pushed
    /// onto `out` (none for another message).
    fn reply_received(to: NodeId, msg: &Msg, out: &mut Vec<Event>) {
        let key = Some(msg.key().0);
        match *msg {
            Msg::ReadOk { op, value, .. } => push(out, to, Kind::ReadOk, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.value = Some(value.0);
            }),
            Msg::ReadRejected { op, fence, .. } => push(out, to, Kind::ReadRejected, |e| {
                e.key = key;
                e.op_id = Some(op.0);
                e.value = Some(fence.0);
            }),
            Msg::WriteOk { op, .. } | Msg::WriteRejected { op, .. } => {
                push(out, to, Kind::WriteAcked, |e| {
                    e.key = key;
                    e.op_id = Some(op.0);
                    e.outcome = Some(if matches!(msg, Msg::WriteOk { .. }) {
                        Outcome::Ok
                    } else {
                        Outcome::Rejected
                    });
                })
            }
            _ => {}
        }
    }

    /// What `msg` reaching `to` (from `from`) tells us, pushed onto `out`
    /// (one record or none); called before `to` handles it. A node that
    /// `reports_replies` gets no record for a resource reply here: its
    /// [`Observation::ReplyUsed`] is the record of the one it acted on.
    pub fn on_deliver(
        &mut self,
        from: NodeId,
        to: NodeId,
        msg: &Msg,
        reports_replies: bool,
        out: &mut Vec<Event>,
    ) {
        match *msg {
            Msg::Granted {
                key: k,
                owner,
                token,
                ..
            } => {
                let id = self
                    .grants
                    .get(&(k.0, owner, token.map_or(0, |t| t.0)))
                    .copied();
                push(out, to, Kind::GrantReceived, |e| {
                    e.key = Some(k.0);
                    e.grant_id = id;
                    e.token = token.map(|t| t.0);
                })
            }
            Msg::ReadOk { .. }
            | Msg::ReadRejected { .. }
            | Msg::WriteOk { .. }
            | Msg::WriteRejected { .. } => {
                if !reports_replies {
                    Self::reply_received(to, msg, out)
                }
            }
            Msg::Write {
                op, token, value, ..
            } => {
                self.writes_in.insert(op.0, (token.map(|t| t.0), value.0));
            }
            Msg::Release { req, owner, .. } => {
                self.releases_in.insert((from.0, req), owner);
            }
            Msg::Acquire { .. }
            | Msg::Busy { .. }
            | Msg::Released { .. }
            | Msg::Read { .. }
            | Msg::Renew { .. }
            | Msg::Renewed { .. }
            | Msg::RenewFailed { .. }
            | Msg::Replicate { .. }
            | Msg::Propose { .. }
            | Msg::Accepted { .. }
            | Msg::QueryMax
            | Msg::MaxIs { .. }
            | Msg::Promote
            | Msg::Effect { .. }
            | Msg::EffectOk { .. }
            | Msg::OutboxPoll { .. }
            | Msg::OutboxEntry { .. } => {}
            Msg::PairHeartbeat { .. }
            | Msg::Stonith { .. }
            | Msg::Reserve { .. }
            | Msg::Reserved { .. } => {}
            // The systems' replies: a client library reports the decision
            // it draws from them (`Observation`), not each reply.
            system_msg!() => {}
        }
    }

    /// A grant sent: one record per (key, owner, token), the first time
    /// (a re-sent grant repeats it); the owner's lease runs to `ttl_ns`.
    fn granted(
        &mut self,
        now: u64,
        from: NodeId,
        (k, owner, token, ttl_ns): (Key, u64, Option<Token>, u64),
        out: &mut Vec<Event>,
    ) {
        let key = Some(k.0);
        let expiry_ns = now.saturating_add(ttl_ns);
        if self.expiry.get(&owner).is_none_or(|&e| e < expiry_ns) {
            self.expiry.insert(owner, expiry_ns);
        }
        let triple = (k.0, owner, token.map_or(0, |t| t.0));
        if self.grants.contains_key(&triple) {
            return;
        }
        self.next_grant += 1;
        let id = self.next_grant;
        self.grants.insert(triple, id);
        self.owner_grant.insert(owner, id);
        push(out, from, Kind::GrantIssued, |e| {
            e.key = key;
            e.grant_id = Some(id);
            e.token = token.map(|t| t.0);
        })
    }

    /// A renewal granted: its value is the slack the lease had left.
    fn renewed(
        &mut self,
        now: u64,
        from: NodeId,
        key: Option<u16>,
        owner: u64,
        ttl_ns: u64,
        out: &mut Vec<Event>,
    ) {
        let slack_ns = self
            .expiry
            .get(&owner)
            .map_or(0, |&e| e.saturating_sub(now));
        self.expiry.insert(owner, now.saturating_add(ttl_ns));
        push(out, from, Kind::RenewOk, |e| {
            e.key = key;
            e.grant_id = self.owner_grant.get(&owner).copied();
            e.value = Some(slack_ns);
        })
    }

    /// The resource's answer to write `op`: accepted (`fence` `None`; its
    /// value the one the write carried in) or rejected under `fence`.
    fn write_answered(
        &self,
        from: NodeId,
        key: Option<u16>,
        op: u64,
        fence: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        let (token, value) = self.writes_in.get(&op).copied().unwrap_or((None, op));
        let kind = match fence {
            None => Kind::WriteAccepted,
            Some(_) => Kind::WriteRejected,
        };
        push(out, from, kind, |e| {
            e.key = key;
            e.op_id = Some(op);
            e.token = token;
            e.value = Some(fence.unwrap_or(value));
        })
    }

    /// A release applied: the grant its requester held and the one whose
    /// lease record it removed (not the same: an unsafe release).
    fn released(
        &self,
        from: NodeId,
        to: NodeId,
        key: Option<u16>,
        req: ReqId,
        removed: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        let requester = self.releases_in.get(&(to.0, req)).copied();
        push(out, from, Kind::ReleaseApplied, |e| {
            e.key = key;
            e.grant_id = requester.and_then(|o| self.owner_grant.get(&o).copied());
            e.removed_grant_id = removed.and_then(|o| self.owner_grant.get(&o).copied());
        })
    }

    /// A system message that its declaration calls a lock-domain event.
    fn system_sent(
        &mut self,
        from: NodeId,
        key: Option<u16>,
        event: LockDomainEvent,
        out: &mut Vec<Event>,
    ) {
        match event {
            LockDomainEvent::WatchNotified => push(out, from, Kind::WatchNotified, |e| e.key = key),
            LockDomainEvent::Release(nonce) => self.release_sent(from, key, nonce, out),
            LockDomainEvent::FannedAcquire(nonce) => {
                if self.fanned_acquires.insert(nonce) {
                    push(out, from, Kind::AcquireSent, |e| e.key = key)
                }
            }
            LockDomainEvent::FannedRelease(nonce) => {
                let Some(grant) = self.owner_grant.get(&nonce).copied() else {
                    return;
                };
                if self.fanned_releases.insert(nonce) {
                    push(out, from, Kind::ReleaseSent, |e| {
                        e.key = key;
                        e.grant_id = Some(grant);
                    })
                }
            }
        }
    }

    /// A client-decided holder's release of the grant its nonce names.
    fn release_sent(&self, from: NodeId, key: Option<u16>, nonce: u64, out: &mut Vec<Event>) {
        push(out, from, Kind::ReleaseSent, |e| {
            e.key = key;
            e.grant_id = self.owner_grant.get(&nonce).copied();
        })
    }

    /// What a node's observation tells us, pushed onto `out`: usually one
    /// record, two for a client's decision that it holds a lock.
    pub fn on_observe(
        &mut self,
        node: NodeId,
        obs: &Observation,
        worker_key: Option<u16>,
        out: &mut Vec<Event>,
    ) {
        match *obs {
            Observation::Acquired { key, owner, token } => {
                // Each decision is a new grant, even with a token seen before: two
                // clients deciding under one token is exactly what must show.
                self.next_grant += 1;
                let id = self.next_grant;
                self.owner_grant.insert(owner, id);
                for kind in [Kind::GrantIssued, Kind::GrantReceived] {
                    push(out, node, kind, |e| {
                        e.key = Some(key.0);
                        e.grant_id = Some(id);
                        e.token = token.map(|t| t.0);
                    });
                }
            }
            Observation::BecameActive { key, epoch } => {
                self.next_grant += 1;
                let id = self.next_grant;
                self.active.insert((node.0, key.0), id);
                push(out, node, Kind::BecameActive, |e| {
                    e.key = Some(key.0);
                    e.grant_id = Some(id);
                    e.token = epoch.map(|t| t.0);
                })
            }
            Observation::SteppedDown { key, cause } => push(out, node, Kind::SteppedDown, |e| {
                e.key = Some(key.0);
                e.grant_id = self.active.remove(&(node.0, key.0));
                e.detail = Some(cause.name().to_string());
            }),
            Observation::LeaseExpired { key, owner } => push(out, node, Kind::LeaseExpired, |e| {
                e.key = Some(key.0);
                e.grant_id = self.owner_grant.get(&owner).copied();
            }),
            Observation::WorkloadDone => push(out, node, Kind::WorkloadDone, |_| {}),
            Observation::OpAbandoned { op } => push(out, node, Kind::OpAbandoned, |e| {
                e.op_id = Some(op.0);
                e.key = worker_key;
            }),
            Observation::LeaseLost { key, owner } => push(out, node, Kind::LeaseLost, |e| {
                e.key = Some(key.0);
                e.grant_id = self.owner_grant.get(&owner).copied();
            }),
            Observation::ReplyUsed { reply } => Self::reply_received(node, &reply, out),
        }
    }
}

/// A lifecycle record (crash, pause, …) without its seq and time.
pub fn lifecycle(node: NodeId, kind: Kind, detail: Option<String>) -> Event {
    let mut e = Event::new(0, 0, node.0, kind);
    e.detail = detail;
    e
}
