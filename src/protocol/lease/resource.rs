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
//!
//! `CheckThenWrite` is the article's "subtly broken" version: read the fence
//! (`SELECT`), compare, and issue the `UPDATE` as a second step
//! `step_ns` later without re-checking. Two writers can both pass the check
//! before either update lands.
//!
//! `reserve` (a pair node's SCSI-3 PREEMPT, see `active_passive`): raises
//! the write fence to the given epoch without writing, only if it is above
//! the fence — strictly, so two nodes that picked the same epoch cannot
//! both hold the reservation. An unfenced store has no reservations and
//! acknowledges it as a no-op.
//!
//! `volatile_fence`: the fence lives only in memory (an in-process cache in
//! front of the store) and is lost on restart, while the document survives.
//!
//! `ordered_sessions`: the storage path of a SAN (iSCSI/FC), where each
//! initiator's commands carry a command sequence number (iSCSI CmdSN, RFC
//! 7143 §3.2.2.1) and the target never executes a command older than one it
//! already executed from that initiator: an out-of-window or duplicate CmdSN
//! is silently discarded. The request id is the sequence number here (the
//! pair node keeps it strictly increasing, across its restarts too); the
//! datagram network's delays and duplicates therefore cannot reorder one
//! node's storage I/O. A lost command is a gap the target accepts (a real
//! session would retransmit it; the initiator here has already given it
//! up). The table is synced with the rows: a real target's restart ends
//! every session, so no command sent before it executes after it; keeping
//! the table has the same effect here, where a delayed datagram can
//! outlive the restart.

use std::collections::BTreeMap;

use crate::protocol::msg::{Key, Msg, OpId, Token};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Node, NodeId, Record, TimerId};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FenceCheck {
    /// Accept every write.
    None,
    /// Atomic compare-and-set on the fence.
    Cas { strict: bool, fence_reads: bool },
    /// Compare, then write `step_ns` later without re-checking.
    CheckThenWrite { step_ns: u64 },
    /// An object store's conditional write: accepted only if the write's
    /// `token` names the object generation stored now (If-Match). The
    /// generation is the op id of the current value (unique per write).
    GenerationMatch,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ResourceConfig {
    pub check: FenceCheck,
    pub volatile_fence: bool,
    /// Discard a request whose id is not above the last one executed from
    /// the same node (iSCSI CmdSN ordering).
    pub ordered_sessions: bool,
}

/// A write that passed the check and waits for its second step.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct PendingWrite {
    timer: TimerId,
    from: NodeId,
    req: u32,
    key: Key,
    op: OpId,
    token: u64,
    value: OpId,
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
    cfg: ResourceConfig,
    rows: BTreeMap<Key, Row>,
    pending: Vec<PendingWrite>,
    next_timer: u16,
    /// `ordered_sessions`: the last request id executed per node.
    last_cmd: BTreeMap<NodeId, u32>,
}

/// What handling a request produced: an answer now (and whether the row
/// changed), or nothing yet (the check-then-write's second step is pending).
type Answer = Option<(Msg, bool)>;

impl Resource {
    pub fn new(cfg: ResourceConfig) -> Self {
        Resource {
            cfg,
            rows: BTreeMap::new(),
            pending: Vec::new(),
            next_timer: 0,
            last_cmd: BTreeMap::new(),
        }
    }

    /// `ordered_sessions`: the last request id executed from `from` (0:
    /// none, or sessions are not ordered): a command of `from` with an id
    /// at or below it will be discarded. A getter for checkers.
    pub fn last_command(&self, from: NodeId) -> u32 {
        self.last_cmd.get(&from).copied().unwrap_or(0)
    }

    /// `key`'s current value (the op id that wrote it; `OpId::INITIAL` if
    /// none) and its fence (the greater of the write and read fences): a
    /// getter for checkers.
    pub fn row(&self, key: Key) -> (OpId, Token) {
        let row = self.rows.get(&key).copied().unwrap_or_default();
        (OpId(row.value), Self::fence(&row))
    }

    /// Check-then-write: the writes that passed the check and wait for
    /// their second step, as (op, token).
    pub fn checked_writes(&self) -> impl Iterator<Item = (OpId, Token)> + '_ {
        self.pending.iter().map(|p| (p.op, Token(p.token)))
    }

    /// The rows (26 bytes each), then with `ordered_sessions` the session
    /// table (node u16, last request u32) and its length u16.
    fn encode(&self) -> Record {
        let mut out = Record::with_capacity(self.rows.len() * 26);
        for (key, row) in &self.rows {
            // One row's 26 bytes laid out, then appended at once.
            let mut bytes = [0u8; 26];
            bytes[0..2].copy_from_slice(&key.0.to_le_bytes());
            bytes[2..10].copy_from_slice(&row.value.to_le_bytes());
            bytes[10..18].copy_from_slice(&row.write_fence.to_le_bytes());
            bytes[18..26].copy_from_slice(&row.read_fence.to_le_bytes());
            out.extend_from_slice(&bytes);
        }
        if self.cfg.ordered_sessions {
            for (node, last) in &self.last_cmd {
                out.extend_from_slice(&node.0.to_le_bytes());
                out.extend_from_slice(&last.to_le_bytes());
            }
            let sessions = u16::try_from(self.last_cmd.len()).expect("fewer than 65536 initiators");
            out.extend_from_slice(&sessions.to_le_bytes());
        }
        out
    }

    /// Splits off and decodes the session table `encode` appends.
    fn decode_sessions(bytes: &[u8]) -> (&[u8], BTreeMap<NodeId, u32>) {
        assert!(bytes.len() >= 2, "resource record lacks its session count");
        let (rest, count) = bytes.split_at(bytes.len() - 2);
        let count = u16::from_le_bytes([count[0], count[1]]) as usize;
        assert!(
            rest.len() >= count * 6,
            "resource record shorter than its session table"
        );
        let (rows, table) = rest.split_at(rest.len() - count * 6);
        let sessions = table
            .chunks_exact(6)
            .map(|c| {
                let node = NodeId(u16::from_le_bytes([c[0], c[1]]));
                (node, u32::from_le_bytes([c[2], c[3], c[4], c[5]]))
            })
            .collect();
        (rows, sessions)
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

    fn on_read(&mut self, req: u32, key: Key, op: OpId, token: Option<Token>) -> Answer {
        let row = self.rows.entry(key).or_default();
        let FenceCheck::Cas {
            fence_reads: true, ..
        } = self.cfg.check
        else {
            return Some((
                Msg::ReadOk {
                    req,
                    key,
                    op,
                    value: OpId(row.value),
                },
                false,
            ));
        };
        let Some(Token(t)) = token else {
            return Some((
                Msg::ReadRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            ));
        };
        if t < row.write_fence || t < row.read_fence {
            return Some((
                Msg::ReadRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            ));
        }
        let raised = t > row.read_fence;
        row.read_fence = t;
        Some((
            Msg::ReadOk {
                req,
                key,
                op,
                value: OpId(row.value),
            },
            raised,
        ))
    }

    fn on_write(&mut self, from: NodeId, w: WriteReq, fx: &mut Vec<Effect>) -> Answer {
        let WriteReq {
            req,
            key,
            op,
            token,
            value,
        } = w;
        let row = self.rows.entry(key).or_default();
        let rejected = |row: &Row| {
            Some((
                Msg::WriteRejected {
                    req,
                    key,
                    op,
                    fence: Self::fence(row),
                },
                false,
            ))
        };
        match self.cfg.check {
            FenceCheck::None => {
                row.value = value.0;
                Some((Msg::WriteOk { req, key, op }, true))
            }
            FenceCheck::Cas { strict, .. } => {
                let Some(Token(t)) = token else {
                    return rejected(row);
                };
                let above_write_fence = if strict {
                    t > row.write_fence
                } else {
                    t >= row.write_fence
                };
                if !above_write_fence || t < row.read_fence {
                    return rejected(row);
                }
                // Pair of the coordinator's "tokens strictly grow": what we accept never goes back.
                assert!(
                    t >= row.write_fence && t >= row.read_fence,
                    "accepted a token below the fence"
                );
                row.write_fence = t;
                row.value = value.0;
                Some((Msg::WriteOk { req, key, op }, true))
            }
            FenceCheck::GenerationMatch => {
                if token != Some(Token(row.value)) {
                    return Some((
                        Msg::WriteRejected {
                            req,
                            key,
                            op,
                            fence: Token(row.value),
                        },
                        false,
                    ));
                }
                row.value = value.0;
                Some((Msg::WriteOk { req, key, op }, true))
            }
            FenceCheck::CheckThenWrite { step_ns } => {
                // Step 1: SELECT fence; compare. The UPDATE follows `step_ns` later.
                let Some(Token(t)) = token.filter(|t| t.0 >= row.write_fence) else {
                    return rejected(row);
                };
                self.next_timer = self.next_timer.wrapping_add(1);
                let timer = TimerId(self.next_timer);
                self.pending.push(PendingWrite {
                    timer,
                    from,
                    req,
                    key,
                    op,
                    token: t,
                    value,
                });
                fx.push(Effect::SetTimer {
                    timer,
                    after_ns: step_ns,
                });
                None
            }
        }
    }

    /// `ordered_sessions`: whether `req` from `from` comes after every
    /// command already executed from that node (and records it if so).
    fn in_order(&mut self, from: NodeId, req: u32) -> bool {
        if !self.cfg.ordered_sessions {
            return true;
        }
        let last = self.last_cmd.entry(from).or_insert(0);
        if req <= *last {
            return false;
        }
        *last = req;
        true
    }

    fn on_reserve(&mut self, req: u32, key: Key, epoch: u64) -> Answer {
        let row = self.rows.entry(key).or_default();
        let fence = Self::fence(row).0;
        let answer = |ok, fence| Msg::Reserved {
            req,
            key,
            ok,
            fence,
        };
        if self.cfg.check == FenceCheck::None {
            return Some((answer(true, 0), false));
        }
        if epoch <= fence {
            return Some((answer(false, fence), false));
        }
        row.write_fence = epoch;
        assert!(
            Self::fence(row).0 == epoch,
            "a reservation leaves its epoch as the fence"
        );
        Some((answer(true, epoch), true))
    }

    /// Step 2 of a check-then-write: the UPDATE, with no second look at the
    /// fence — the bug.
    fn finish_pending(&mut self, timer: TimerId, fx: &mut Vec<Effect>) {
        let Some(i) = self.pending.iter().position(|p| p.timer == timer) else {
            return;
        };
        let p = self.pending.remove(i);
        let row = self.rows.entry(p.key).or_default();
        row.value = p.value.0;
        row.write_fence = p.token;
        self.persist(fx);
        fx.push(Effect::Send {
            to: p.from,
            msg: Msg::WriteOk {
                req: p.req,
                key: p.key,
                op: p.op,
            },
        });
    }
}

#[derive(Clone, Copy)]
struct WriteReq {
    req: u32,
    key: Key,
    op: OpId,
    token: Option<Token>,
    value: OpId,
}

impl Node for Resource {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                let mut rows = recovered;
                self.last_cmd.clear();
                if let (true, Some(bytes)) = (self.cfg.ordered_sessions, recovered) {
                    let (rest, sessions) = Self::decode_sessions(bytes);
                    rows = Some(rest);
                    self.last_cmd = sessions;
                }
                self.rows = rows.map(Self::decode).unwrap_or_default();
                self.pending.clear();
                if self.cfg.volatile_fence {
                    for row in self.rows.values_mut() {
                        row.write_fence = 0;
                        row.read_fence = 0;
                    }
                }
            }
            Input::Message { from, msg } => {
                let req = match msg {
                    Msg::Read { req, .. } | Msg::Reserve { req, .. } | Msg::Write { req, .. } => {
                        req
                    }
                    _ => return,
                };
                if !self.in_order(from, req) {
                    // An ordered session would never deliver it now: dropped, no answer.
                    return;
                }
                let answer = match msg {
                    Msg::Read {
                        req,
                        key,
                        op,
                        token,
                    } => self.on_read(req, key, op, token),
                    Msg::Reserve { req, key, epoch } => self.on_reserve(req, key, epoch),
                    Msg::Write {
                        req,
                        key,
                        op,
                        token,
                        value,
                    } => self.on_write(
                        from,
                        WriteReq {
                            req,
                            key,
                            op,
                            token,
                            value,
                        },
                        fx,
                    ),
                    _ => return,
                };
                let Some((reply, changed)) = answer else {
                    return;
                };
                // With ordered sessions every executed command moved its
                // node's sequence number.
                if changed || self.cfg.ordered_sessions {
                    self.persist(fx);
                }
                fx.push(Effect::Send {
                    to: from,
                    msg: reply,
                });
            }
            Input::Timer { timer } => self.finish_pending(timer, fx),
        }
    }
}
