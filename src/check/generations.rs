//! Generations: the order the checker judges writes by, and which grant
//! each write (or effect) actually acted on.
//!
//! A grant is named by its `grant_id`; `history::validate` refuses an id
//! reused by another issuer, for another key or token, or received by a
//! second node, so an id here names one grant. Re-sends (the same
//! `grant_issued` again) are not new grants.
//!
//! **A grant's generation** is its rank among its key's grants. Normally
//! the rank follows the issue order (`grant_issued` records). When every
//! grant of the key is *client-decided* (its issuer is the node that
//! receives it: ZooKeeper's recipe, etcd's mutex, DynamoDB's lock client)
//! and carries a token, the rank follows (token, issue order) instead: the
//! client decides late, but it decides on the lock state its token names,
//! so a paused client acting late on an older znode stays old. The ranks
//! are computed up front from the whole history.
//!
//! **The grant a write acted on** (`write_sent`, in this order of evidence):
//! 1. the record's own `grant_id`, if it names a known grant;
//! 2. its token: the grant of that key and token the sender received most
//!    recently, else the one issued most recently (a resource-side log has
//!    no `grant_received`);
//! 3. otherwise the grant the sender most recently *adopted* for the key: a
//!    `grant_received` counts only if the grant is client-decided, or the
//!    node had an `acquire_sent` for the key outstanding (sent since its
//!    last adoption), or the node never records `acquire_sent` at all and
//!    the grant is of a higher generation than the one it acts on. A
//!    duplicate of a grant, or the late answer to an acquire already
//!    answered, is received but not adopted, and raises nothing.
//!
//!    An adoption is *provisional* when the grant's latest `grant_issued`
//!    precedes the node's latest `acquire_sent` for the key (the late
//!    answer to an acquire the node gave up on, arriving while it waits on
//!    a new one): until the node's next `write_sent`, `effect_sent` or
//!    `release_sent` for the key, a grant it receives that was issued after
//!    that `acquire_sent` replaces it. With no such grant the provisional
//!    adoption stands (a re-sent grant is not recorded as issued again).
//!
//! A write with none of these has generation 0. A `write_accepted` with no
//! `write_sent` before it (a resource-side log) is attributed by its own
//! token the same way (rule 2 without a sender).

use super::node_map::NodeMap;
use super::KindSet;
use crate::history::{Event, History, Kind};
use crate::lookup::{Lookup, LookupSet};

#[derive(Clone, Copy, Debug)]
pub struct GrantInfo {
    pub key: u16,
    pub generation: u64,
    pub issued_seq: u64,
    pub issuer: u16,
    pub token: Option<u64>,
}

/// One `write_sent`, with what its sender acted on at that moment.
#[derive(Clone, Copy, Debug)]
pub struct WriteInfo {
    pub generation: u64,
    pub grant_id: Option<u64>,
    pub sent_seq: u64,
    pub node: u16,
    pub token: Option<u64>,
    /// The value and `read_ok` seq of the op's latest read before this send.
    pub read: Option<(u64, u64)>,
}

/// A grant's first issue, as [`Generations::start`] collects them.
#[derive(Clone, Copy, Debug)]
struct FirstIssue {
    key: u16,
    seq: u64,
    id: u64,
    issuer: u16,
    token: Option<u64>,
}

#[derive(Default)]
pub struct Generations {
    /// Every grant of the history with its rank, computed up front.
    pub grants: Lookup<u64, GrantInfo>,
    /// How many grants rank above their key's first (the token_order hazard).
    pub later_grants: u64,
    /// Keys whose grants are ranked by token (all client-decided, tokened).
    pub ranked_by_token: LookupSet<u16>,
    /// Grants issued so far (the stream has passed their `grant_issued`).
    issued: LookupSet<u64>,
    /// key -> highest generation issued so far.
    issued_max: Lookup<u16, u64>,
    /// (key, token) -> the latest grant issued so far with that token.
    by_token: Lookup<(u16, u64), u64>,
    /// Keys with a tokened grant issued so far.
    tokened_keys: LookupSet<u16>,
    /// (node, key, token) -> grant of that token the node received last.
    received_token: Lookup<(u16, u16, u64), u64>,
    /// (node, key) -> grant the node adopted last.
    adopted: Lookup<(u16, u16), u64>,
    /// Nodes that record `acquire_sent` at all.
    asks: NodeMap<()>,
    /// grant -> seq of its latest `grant_issued` (re-sends included).
    last_issue: Lookup<u64, u64>,
    /// (node, key) -> seq of the node's latest `acquire_sent` for the key,
    /// and whether it is still pending (not yet answered by an adoption).
    /// One table for both: every `acquire_sent` sets both at once.
    last_acquire: Lookup<(u16, u16), (u64, bool)>,
    /// (node, key) -> the `acquire_sent` seq a provisional adoption predates,
    /// until the node's next write, effect or release request for the key.
    provisional: Lookup<(u16, u16), u64>,
    /// key -> highest generation any node has received so far.
    received_max: Lookup<u16, (u64, u64)>,
    /// op id -> its sends, in order.
    pub sends: Lookup<u64, Vec<WriteInfo>>,
    /// op id -> (value, read_ok seq) of its latest read so far.
    pub reads: Lookup<u64, (u64, u64)>,
    /// The lock server's order, where the history records it
    /// ([`Self::within_ownership`]): grant -> the `order` of its first end
    /// (`None`: that end carries none), and key -> the highest position
    /// the history records for it.
    ends: Lookup<u64, Option<u64>>,
    order_max: Lookup<u16, u64>,
    /// Scratch for [`Self::start`]: first issues in history order, and
    /// grant -> its index there / its first receiver.
    first: Vec<FirstIssue>,
    first_index: Lookup<u64, usize>,
    receivers: Lookup<u64, u16>,
}

/// The records [`Generations::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[
    Kind::GrantIssued,
    Kind::BecameActive,
    Kind::GrantReceived,
    Kind::AcquireSent,
    Kind::EffectSent,
    Kind::ReleaseSent,
    Kind::ReadOk,
    Kind::WriteSent,
]);

impl Generations {
    /// Forgets everything (keeping the tables) and ranks every grant of
    /// `h` (see the module doc).
    pub fn start(&mut self, h: &History) {
        self.clear();
        for e in &h.events {
            match e.kind {
                Kind::GrantIssued | Kind::BecameActive => {
                    if let (Some(id), Some(key)) = (e.grant_id, e.key) {
                        if !self.first_index.contains_key(&id) {
                            self.first_index.insert(id, self.first.len());
                            self.first.push(FirstIssue {
                                key,
                                seq: e.seq,
                                id,
                                issuer: e.node,
                                token: e.token,
                            });
                        }
                    }
                    if e.kind == Kind::BecameActive {
                        if let Some(id) = e.grant_id {
                            self.receivers.or_insert_with(id, || e.node);
                        }
                    }
                }
                Kind::GrantReceived => {
                    if let Some(id) = e.grant_id {
                        self.receivers.or_insert_with(id, || e.node);
                    }
                }
                Kind::AcquireSent => {
                    self.asks.insert(e.node, ());
                }
                Kind::LeaseExpired | Kind::ReleaseApplied => self.ended(e),
                _ => {}
            }
        }
        // Per key, in issue order (seqs are unique, so the order is total).
        self.first.sort_unstable_by_key(|f| (f.key, f.seq));
        let mut first = std::mem::take(&mut self.first);
        for list in first.chunk_by_mut(|a, b| a.key == b.key) {
            let key = list[0].key;
            let by_token = list
                .iter()
                .all(|f| f.token.is_some() && self.receivers.get(&f.id) == Some(&f.issuer));
            if by_token {
                self.ranked_by_token.insert(key);
                // Stable: equal tokens keep issue order.
                list.sort_by_key(|f| f.token);
            }
            for (rank, f) in list.iter().enumerate() {
                if let (Some(t), Some(max)) = (f.token, self.order_max.get_mut(&key)) {
                    *max = (*max).max(t);
                }
                self.later_grants += (rank > 0) as u64;
                self.grants.insert(
                    f.id,
                    GrantInfo {
                        key,
                        generation: rank as u64 + 1,
                        issued_seq: f.seq,
                        issuer: f.issuer,
                        token: f.token,
                    },
                );
            }
        }
        self.first = first;
    }

    /// Empties every table, keeping its allocation (each field named, so a
    /// new one cannot be forgotten here).
    fn clear(&mut self) {
        let Generations {
            grants,
            later_grants,
            ranked_by_token,
            issued,
            issued_max,
            by_token,
            tokened_keys,
            received_token,
            adopted,
            asks,
            last_issue,
            last_acquire,
            provisional,
            received_max,
            sends,
            reads,
            ends,
            order_max,
            first,
            first_index,
            receivers,
        } = self;
        grants.clear();
        *later_grants = 0;
        ranked_by_token.clear();
        issued.clear();
        issued_max.clear();
        by_token.clear();
        tokened_keys.clear();
        received_token.clear();
        adopted.clear();
        asks.clear();
        last_issue.clear();
        last_acquire.clear();
        provisional.clear();
        received_max.clear();
        sends.clear();
        reads.clear();
        ends.clear();
        order_max.clear();
        first.clear();
        first_index.clear();
        receivers.clear();
    }

    pub fn observe(&mut self, e: &Event) {
        match e.kind {
            Kind::GrantIssued => self.issue(e),
            Kind::BecameActive => {
                self.issue(e);
                self.receive(e);
            }
            Kind::GrantReceived => self.receive(e),
            Kind::AcquireSent => {
                if let Some(key) = e.key {
                    self.last_acquire.insert((e.node, key), (e.seq, true));
                }
            }
            Kind::EffectSent | Kind::ReleaseSent => self.settle(e),
            Kind::ReadOk => {
                if let (Some(op), Some(value)) = (e.op_id, e.value) {
                    self.reads.insert(op, (value, e.seq));
                }
            }
            Kind::WriteSent => {
                self.settle(e);
                let (Some(op), Some(key)) = (e.op_id, e.key) else {
                    return;
                };
                let grant = self.acted_on(Some(e.node), key, e.grant_id, e.token);
                let send = self.write_info(e, op, grant);
                self.sends.or_default(op).push(send);
            }
            _ => {}
        }
    }

    fn issue(&mut self, e: &Event) {
        let (Some(id), Some(key)) = (e.grant_id, e.key) else {
            return;
        };
        let Some(info) = self.grants.get(&id).copied() else {
            return;
        };
        self.last_issue.insert(id, e.seq);
        if !self.issued.insert(id) {
            return; // a re-send
        }
        let max = self.issued_max.or_insert_with(key, || 0);
        *max = (*max).max(info.generation);
        if let Some(t) = info.token {
            self.by_token.insert((key, t), id);
            self.tokened_keys.insert(key);
        }
    }

    fn receive(&mut self, e: &Event) {
        let Some(id) = e.grant_id else { return };
        let Some(info) = self.grants.get(&id).copied() else {
            return;
        };
        if !self.issued.contains(&id) {
            return; // received before anyone issued it: not evidence of a grant
        }
        let key = info.key;
        if let Some(t) = info.token {
            self.received_token.insert((e.node, key, t), id);
        }
        let self_issued = info.issuer == e.node;
        let current = self.adopted.get(&(e.node, key)).copied();
        // A node that never records asking keeps its newest grant: a
        // delayed reply for an older grant does not move it back.
        let newer = current.and_then(|c| self.generation_of(c)) < Some(info.generation);
        let issued_at = self.last_issue.get(&id).copied().unwrap_or(0);
        // A fresher answer replaces a provisional adoption (module doc).
        let fresher = self
            .provisional
            .get(&(e.node, key))
            .is_some_and(|&asked| issued_at > asked);
        if current != Some(id)
            && (self_issued
                || self.answer_pending(e.node, key)
                || (!self.asks.contains(e.node) && newer)
                || fresher)
        {
            self.adopted.insert((e.node, key), id);
            match self.last_acquire.get(&(e.node, key)) {
                Some(&(asked, _)) if issued_at < asked => {
                    self.provisional.insert((e.node, key), asked);
                }
                _ => {
                    self.provisional.remove(&(e.node, key));
                }
            }
        }
        let max = self.received_max.or_insert_with(key, || (0, 0));
        if info.generation > max.0 {
            *max = (info.generation, e.seq);
        }
    }

    /// Whether `node` has an unanswered `acquire_sent` for `key`; it is
    /// answered now.
    fn answer_pending(&mut self, node: u16, key: u16) -> bool {
        self.last_acquire
            .get_mut(&(node, key))
            .is_some_and(|(_, pending)| std::mem::replace(pending, false))
    }

    /// A write, effect or release request settles its node's provisional
    /// adoption for the key: what it acted on is what it adopted.
    fn settle(&mut self, e: &Event) {
        let key = e
            .key
            .or_else(|| e.grant_id.and_then(|g| self.grants.get(&g)).map(|i| i.key));
        if let Some(key) = key {
            self.provisional.remove(&(e.node, key));
        }
    }

    /// The grant a write (or effect) by `sender` on `key` acts on now.
    pub fn acted_on(
        &self,
        sender: Option<u16>,
        key: u16,
        explicit: Option<u64>,
        token: Option<u64>,
    ) -> Option<u64> {
        if let Some(g) = explicit.filter(|g| self.issued.contains(g)) {
            return Some(g);
        }
        if let Some(t) = token {
            let received = sender.and_then(|n| self.received_token.get(&(n, key, t)));
            if let Some(&g) = received {
                return Some(g);
            }
            if let Some(&g) = self.by_token.get(&(key, t)) {
                return Some(g);
            }
        }
        sender.and_then(|n| self.adopted.get(&(n, key)).copied())
    }

    /// The send of `op` a resource record with `token` answers: the latest
    /// send carrying that token, else the latest send.
    pub fn judged_send(&self, op: u64, token: Option<u64>) -> Option<WriteInfo> {
        let sends = self.sends.get(&op)?;
        token
            .and_then(|t| sends.iter().rev().find(|s| s.token == Some(t)))
            .or(sends.last())
            .copied()
    }

    /// What a resource record (`write_accepted` / `write_rejected`) is
    /// judged as: its send, or, with no send, its own token's grant.
    pub fn judged(&self, e: &Event, op: u64, key: u16) -> WriteInfo {
        self.judged_send(op, e.token).unwrap_or_else(|| {
            let grant = self.acted_on(None, key, None, e.token);
            self.write_info(e, op, grant)
        })
    }

    /// `e` as a write of `op` acting on `grant`, after the op's latest read.
    fn write_info(&self, e: &Event, op: u64, grant: Option<u64>) -> WriteInfo {
        WriteInfo {
            generation: grant.and_then(|g| self.generation_of(g)).unwrap_or(0),
            grant_id: grant,
            sent_seq: e.seq,
            node: e.node,
            token: e.token,
            read: self.reads.get(&op).copied(),
        }
    }

    /// Whether any grant of `key` issued so far carries `token`.
    pub fn token_issued(&self, key: u16, token: u64) -> bool {
        self.by_token.contains_key(&(key, token))
    }

    /// A `lease_expired` or `release_applied` record: the first end of the
    /// grant whose lease it ended, and where the server's order stood.
    fn ended(&mut self, e: &Event) {
        let grant = match e.kind {
            Kind::ReleaseApplied => e.removed_grant_id.or(e.grant_id),
            _ => e.grant_id,
        };
        let Some(g) = grant else { return };
        self.ends.or_insert_with(g, || e.order);
        if let (Some(key), Some(order)) = (e.key, e.order) {
            let max = self.order_max.or_insert_with(key, || order);
            *max = (*max).max(order);
        }
    }

    /// Whether `token` is a position of the lock server's own order within
    /// `grant`'s ownership of `key`: on a key whose history records that
    /// order (an `order` on an end), at least the grant's own token (its
    /// create revision, czxid, first counter value) and at most the `order`
    /// its ownership ended at — or, for a grant the history never ends, the
    /// highest position the history records for the key.
    pub fn within_ownership(&self, key: u16, grant: Option<u64>, token: u64) -> bool {
        let Some(info) = grant.and_then(|g| self.grants.get(&g).map(|i| (g, i))) else {
            return false;
        };
        let (g, info) = info;
        let (Some(start), Some(&max)) = (info.token, self.order_max.get(&key)) else {
            return false;
        };
        let end = match self.ends.get(&g) {
            Some(&end) => end,
            None => Some(max),
        };
        info.key == key && end.is_some_and(|end| (start..=end).contains(&token))
    }

    /// Whether any grant of `key` issued so far carries a token.
    pub fn key_is_tokened(&self, key: u16) -> bool {
        self.tokened_keys.contains(&key)
    }

    /// Highest generation issued so far for `key`.
    pub fn issued_max(&self, key: u16) -> u64 {
        self.issued_max.get(&key).copied().unwrap_or(0)
    }

    /// Highest generation any node has received so far for `key`.
    pub fn received_max(&self, key: u16) -> u64 {
        self.received_max.get(&key).map_or(0, |m| m.0)
    }

    /// The `grant_received` record that set [`Self::received_max`].
    pub fn received_max_seq(&self, key: u16) -> Option<u64> {
        self.received_max.get(&key).map(|m| m.1)
    }

    pub fn generation_of(&self, grant: u64) -> Option<u64> {
        self.grants.get(&grant).map(|g| g.generation)
    }

    pub fn is_issued(&self, grant: u64) -> bool {
        self.issued.contains(&grant)
    }
}
