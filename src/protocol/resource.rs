//! The protected resource: a document store that may or may not enforce a
//! fence.
//!
//! Unfenced, it accepts every write — the store behind a plain lease, which
//! trusts that whoever writes still holds the lock. Fenced, it is the
//! article's PostgreSQL row:
//!
//! ```sql
//! UPDATE documents SET body = $1, fencing_token = $2
//!  WHERE id = $3 AND fencing_token < $2;      -- strict
//! ```
//!
//! The non-strict form (`<=`) lets a holder write more than once under one
//! token. Fence and body change in one atomic, synced step (one persisted
//! record), so a crash cannot separate them.
//!
//! `fence_reads`: a read that carries a token also raises a *read fence*, so
//! once the new holder has read, no older token can write underneath it.
//! Without it, a stale write can land between the new holder's read and its
//! write: no stale write by the checker's definition (generations are still
//! in order at the resource), but the new holder overwrites a value it never
//! saw — a lost update.

use std::collections::BTreeMap;

use super::msg::{Key, Msg, OpId, Token};
use super::node::{Clocks, Durability, Effect, Input, Node};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FenceCheck {
    /// Accept every write.
    None,
    /// Atomic compare-and-set on the fence.
    Cas { strict: bool, fence_reads: bool },
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct Row {
    value: u64,
    /// Greatest token that wrote.
    write_fence: u64,
    /// Greatest token that read (only with `fence_reads`).
    read_fence: u64,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Resource {
    check: FenceCheck,
    rows: BTreeMap<Key, Row>,
}

impl Resource {
    pub fn new(check: FenceCheck) -> Self {
        Resource {
            check,
            rows: BTreeMap::new(),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows.len() * 26);
        for (key, row) in &self.rows {
            out.extend_from_slice(&key.0.to_le_bytes());
            out.extend_from_slice(&row.value.to_le_bytes());
            out.extend_from_slice(&row.write_fence.to_le_bytes());
            out.extend_from_slice(&row.read_fence.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> BTreeMap<Key, Row> {
        assert!(
            bytes.len() % 26 == 0,
            "resource record is {} bytes, not a multiple of 26",
            bytes.len()
        );
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        };
        bytes
            .chunks_exact(26)
            .map(|c| {
                let key = Key(u16::from_le_bytes([c[0], c[1]]));
                (
                    key,
                    Row {
                        value: word(&c[2..10]),
                        write_fence: word(&c[10..18]),
                        read_fence: word(&c[18..26]),
                    },
                )
            })
            .collect()
    }

    fn persist(&self, fx: &mut Vec<Effect>) {
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: self.encode(),
        });
    }

    fn fence(row: &Row) -> Token {
        Token(row.write_fence.max(row.read_fence))
    }

    fn on_read(&mut self, req: u32, key: Key, op: OpId, token: Option<Token>) -> (Msg, bool) {
        let row = self.rows.entry(key).or_default();
        let FenceCheck::Cas {
            fence_reads: true, ..
        } = self.check
        else {
            return (
                Msg::ReadOk {
                    req,
                    key,
                    op,
                    value: OpId(row.value),
                },
                false,
            );
        };
        let Some(Token(t)) = token else {
            return (
                Msg::ReadRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            );
        };
        if t < row.write_fence || t < row.read_fence {
            return (
                Msg::ReadRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            );
        }
        let raised = t > row.read_fence;
        row.read_fence = t;
        (
            Msg::ReadOk {
                req,
                key,
                op,
                value: OpId(row.value),
            },
            raised,
        )
    }

    fn on_write(
        &mut self,
        req: u32,
        key: Key,
        op: OpId,
        token: Option<Token>,
        value: OpId,
    ) -> (Msg, bool) {
        let row = self.rows.entry(key).or_default();
        let FenceCheck::Cas { strict, .. } = self.check else {
            row.value = value.0;
            return (Msg::WriteOk { req, key, op }, true);
        };
        let Some(Token(t)) = token else {
            return (
                Msg::WriteRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            );
        };
        let above_write_fence = if strict {
            t > row.write_fence
        } else {
            t >= row.write_fence
        };
        if !above_write_fence || t < row.read_fence {
            return (
                Msg::WriteRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            );
        }
        // Pair of the coordinator's "tokens strictly grow": what we accept never goes back.
        assert!(
            t >= row.write_fence && t >= row.read_fence,
            "accepted a token below the fence"
        );
        row.write_fence = t;
        row.value = value.0;
        (Msg::WriteOk { req, key, op }, true)
    }
}

impl Node for Resource {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                self.rows = recovered.map(Self::decode).unwrap_or_default();
            }
            Input::Message { from, msg } => {
                let (reply, changed) = match msg {
                    Msg::Read {
                        req,
                        key,
                        op,
                        token,
                    } => self.on_read(req, key, op, token),
                    Msg::Write {
                        req,
                        key,
                        op,
                        token,
                        value,
                    } => self.on_write(req, key, op, token, value),
                    _ => return,
                };
                if changed {
                    self.persist(fx);
                }
                fx.push(Effect::Send {
                    to: from,
                    msg: reply,
                });
            }
            Input::Timer { .. } => {}
        }
    }
}
