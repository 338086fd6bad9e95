//! The durable state of the lock services (ZooKeeper, etcd, DynamoDB) as a
//! flat record of little-endian `u64` words.
//!
//! Those services commit every change to a replicated log or disk before
//! they answer, so crashing the simulated server must not wipe what it
//! held: each server persists its state as a synced record whenever it
//! changes and rebuilds it from that record at restart. Only what the real
//! service keeps durably goes in (znodes, sessions, leases, items); timers
//! and expiry instants are rebuilt from the restart's clock, the way a new
//! ZooKeeper or etcd leader gives every session or lease a fresh timeout.

use crate::protocol::node::{Durability, Effect};

/// Appends words to a record.
#[derive(Default)]
pub struct RecordWriter {
    bytes: Vec<u8>,
}

impl RecordWriter {
    pub fn word(&mut self, w: u64) -> &mut Self {
        self.bytes.extend_from_slice(&w.to_le_bytes());
        self
    }

    /// A count, then one call of `each` per item.
    pub fn list<T>(
        &mut self,
        items: impl ExactSizeIterator<Item = T>,
        mut each: impl FnMut(&mut Self, T),
    ) {
        self.word(items.len() as u64);
        for item in items {
            each(self, item);
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads back what a [`RecordWriter`] wrote, in the same order. Records
/// come only from the node's own earlier incarnation, so a short one is a
/// bug, not input: it panics.
pub struct RecordReader<'a> {
    bytes: &'a [u8],
}

impl<'a> RecordReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        RecordReader { bytes }
    }

    pub fn word(&mut self) -> u64 {
        let (head, rest) = self.bytes.split_at_checked(8).expect("a truncated record");
        self.bytes = rest;
        let mut w = [0u8; 8];
        w.copy_from_slice(head);
        u64::from_le_bytes(w)
    }

    /// A count written by [`RecordWriter::list`], then `each` that often.
    pub fn list(&mut self, mut each: impl FnMut(&mut Self)) {
        for _ in 0..self.word() {
            each(self);
        }
    }

    pub fn is_done(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Persists `record` (synced) if it differs from the last one persisted,
/// which it then remembers.
pub fn persist_if_changed(last: &mut Vec<u8>, record: Vec<u8>, fx: &mut Vec<Effect>) {
    if *last != record {
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: record[..].into(),
        });
        *last = record;
    }
}
