//! Generations: the order the checker judges writes by.
//!
//! A grant's generation is its position, per key, in the true-time order of
//! the steps that issued it (the order of `grant_issued` records). A write's
//! generation is the highest generation its sender had received for that
//! key when it sent the write (0 if none). Raw tokens are never compared
//! here: a protocol whose tokens disagree with the issue order is exactly
//! what `token_order` and `stale_write` must catch.
//!
//! A pair node's `became_active` is a grant issued to, and received by, the
//! node that recorded it (the harness's record of its own decision).
//!
//! Why the highest and not the most recent receipt: a delayed grant reply
//! for an older grant can arrive after a newer one; the worker keeps acting
//! under the newer grant, and so does the checker.

use std::collections::BTreeMap;

use crate::history::{Event, Kind};

#[derive(Clone, Copy, Debug)]
pub struct GrantInfo {
    pub key: u16,
    pub generation: u64,
    pub issued_seq: u64,
    pub token: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
pub struct WriteInfo {
    pub generation: u64,
    pub grant_id: Option<u64>,
    pub sent_seq: u64,
    pub node: u16,
}

#[derive(Default)]
pub struct Generations {
    pub grants: BTreeMap<u64, GrantInfo>,
    issued_per_key: BTreeMap<u16, u64>,
    /// (node, key) -> (generation, grant id) of the highest grant received.
    held: BTreeMap<(u16, u16), (u64, u64)>,
    /// key -> highest generation any node has received.
    received_max: BTreeMap<u16, u64>,
    /// op id -> the generation its first `write_sent` carried.
    pub writes: BTreeMap<u64, WriteInfo>,
}

impl Generations {
    pub fn observe(&mut self, e: &Event) {
        if e.kind == Kind::BecameActive {
            self.issue(e);
            self.receive(e);
            return;
        }
        match e.kind {
            Kind::GrantIssued => self.issue(e),
            Kind::GrantReceived => self.receive(e),
            Kind::WriteSent => {
                let (Some(op), Some(key)) = (e.op_id, e.key) else {
                    return;
                };
                let (generation, grant) = self.held.get(&(e.node, key)).copied().unwrap_or((0, 0));
                self.writes.entry(op).or_insert(WriteInfo {
                    generation,
                    grant_id: (grant != 0).then_some(grant),
                    sent_seq: e.seq,
                    node: e.node,
                });
            }
            _ => {}
        }
    }

    fn issue(&mut self, e: &Event) {
        let (Some(grant), Some(key)) = (e.grant_id, e.key) else {
            return;
        };
        if self.grants.contains_key(&grant) {
            return;
        }
        let n = self.issued_per_key.entry(key).or_insert(0);
        *n += 1;
        self.grants.insert(
            grant,
            GrantInfo {
                key,
                generation: *n,
                issued_seq: e.seq,
                token: e.token,
            },
        );
    }

    fn receive(&mut self, e: &Event) {
        let Some(info) = e.grant_id.and_then(|g| self.grants.get(&g)).copied() else {
            return;
        };
        let slot = self.held.entry((e.node, info.key)).or_insert((0, 0));
        if info.generation > slot.0 {
            *slot = (info.generation, e.grant_id.unwrap_or(0));
        }
        let max = self.received_max.entry(info.key).or_insert(0);
        *max = (*max).max(info.generation);
    }

    /// Highest generation issued so far for `key`.
    pub fn issued_max(&self, key: u16) -> u64 {
        self.issued_per_key.get(&key).copied().unwrap_or(0)
    }

    /// Highest generation any node has received so far for `key`.
    pub fn received_max(&self, key: u16) -> u64 {
        self.received_max.get(&key).copied().unwrap_or(0)
    }

    /// The generation (and grant) a node currently acts under for `key`.
    pub fn held_by(&self, node: u16, key: u16) -> Option<(u64, u64)> {
        self.held.get(&(node, key)).copied()
    }

    pub fn generation_of(&self, grant: u64) -> Option<u64> {
        self.grants.get(&grant).map(|g| g.generation)
    }
}
