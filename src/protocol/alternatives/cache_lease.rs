//! A best-effort lease in front of a cache refresh — the article's
//! "Duplicate cache refresh is only wasted work: a simple best-effort lease
//! may be enough". The lease (Redis `SET NX PX`, no fence) only keeps most
//! refreshers from recomputing the same entry at once (a thundering herd);
//! correctness does not rest on it.
//!
//! What does: the refresh is a compare-and-set on the entry it read —
//! memcached's `gets` / `cas` (the cas-unique of the entry the refresher
//! saw). The cache remembers, per refresh (op), which entry version its
//! `gets` returned; the `cas` stores only if the entry is still that
//! version. A refresher that was paused past its lease while another
//! refreshed the entry finds it changed: its fill is dropped. The
//! recomputation was wasted work (`wasted_work`), nothing is corrupted.
//!
//! The ticket is the version the op's *first* `gets` was served — a
//! retransmitted `gets` never replaces it, so a refresher that computed
//! from an earlier answer can only be refused, never wrongly accepted.
//! Entries and tickets are persisted (synced) together, so a restart keeps
//! both (a cache that forgot tickets would have to refuse every refill).

use std::collections::BTreeMap;

use crate::protocol::msg::{Key, Msg, OpId, Token};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Node};
use crate::protocol::single_db::{serve, Server};

#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct CasCache {
    entries: BTreeMap<Key, u64>,
    /// op -> the entry version its `gets` returned (memcached's cas unique).
    tickets: BTreeMap<OpId, u64>,
}

impl CasCache {
    pub fn new() -> Self {
        CasCache::default()
    }

    /// `key`'s entry: the op id that filled it (`OpId::INITIAL` if none); a
    /// getter for checkers.
    pub fn entry(&self, key: Key) -> OpId {
        OpId(self.entries.get(&key).copied().unwrap_or(0))
    }

    /// The entry version `op`'s first `gets` was served (its `cas`
    /// ticket), if it made one.
    pub fn ticket(&self, op: OpId) -> Option<OpId> {
        self.tickets.get(&op).copied().map(OpId)
    }

    /// `entry count u32 ++ (key u16, version u64)* ++ (op u64, version u64)*`.
    fn persist(&self, fx: &mut Vec<Effect>) {
        let mut record = (self.entries.len() as u32).to_le_bytes().to_vec();
        for (key, v) in &self.entries {
            record.extend_from_slice(&key.0.to_le_bytes());
            record.extend_from_slice(&v.to_le_bytes());
        }
        for (op, v) in &self.tickets {
            record.extend_from_slice(&op.0.to_le_bytes());
            record.extend_from_slice(&v.to_le_bytes());
        }
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: record.into(),
        });
    }

    fn recover(&mut self, b: &[u8]) {
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let n = u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as usize;
        let (entries, tickets) = b[4..].split_at(n * 10);
        assert_eq!(tickets.len() % 16, 0, "cache record is malformed");
        for c in entries.chunks_exact(10) {
            self.entries
                .insert(Key(u16::from_le_bytes([c[0], c[1]])), word(&c[2..10]));
        }
        for c in tickets.chunks_exact(16) {
            self.tickets.insert(OpId(word(&c[..8])), word(&c[8..]));
        }
    }

    fn on_message(&mut self, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        Some(match msg {
            Msg::Read { req, key, op, .. } => {
                let value = self.entries.get(&key).copied().unwrap_or(0);
                if let std::collections::btree_map::Entry::Vacant(slot) = self.tickets.entry(op) {
                    slot.insert(value);
                    self.persist(fx);
                }
                Msg::ReadOk {
                    req,
                    key,
                    op,
                    value: OpId(value),
                }
            }
            Msg::Write {
                req,
                key,
                op,
                value,
                ..
            } => {
                let current = self.entries.get(&key).copied().unwrap_or(0);
                let redelivery = current == value.0;
                if self.tickets.get(&op) != Some(&current) && !redelivery {
                    // The entry changed since this refresher's `gets`: `cas` fails.
                    let fence = Token(0);
                    return Some(Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence,
                    });
                }
                if !redelivery {
                    self.entries.insert(key, value.0);
                    self.persist(fx);
                }
                Msg::WriteOk { req, key, op }
            }
            _ => return None,
        })
    }
}

impl Server for CasCache {
    fn reset(&mut self, recovered: Option<&[u8]>) {
        self.entries.clear();
        self.tickets.clear();
        if let Some(b) = recovered {
            self.recover(b);
        }
    }

    fn answer(&mut self, _clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        self.on_message(msg, fx)
    }
}

impl Node for CasCache {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        serve(self, clocks, input, fx);
    }
}
