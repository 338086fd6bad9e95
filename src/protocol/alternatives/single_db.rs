//! One database owning all state: the article's "Sometimes the right lock is
//! no distributed lock" — "One relational database owns all state: row
//! lock, unique constraint, advisory lock, or conditional update in a
//! transaction". Lock and data live in the same node, so there is no
//! coordinator and no gap between them:
//!
//! ```sql
//! BEGIN;
//! SELECT body FROM documents WHERE id = $1 FOR UPDATE;  -- acquire + read
//! -- compute
//! UPDATE documents SET body = $2 WHERE id = $1; COMMIT;  -- write
//! ```
//!
//! The row lock is held by a transaction; a client that stalls inside its
//! transaction is aborted by the database after
//! `idle_in_transaction_session_timeout` (PostgreSQL; here the lease TTL,
//! measured on the database's own clock), and the lock is free again. The
//! aborted transaction's later statements fail *in the database* — the same
//! node that owns the lock — so a paused client can never write, and every
//! write is applied to the value its own transaction read: no stale write,
//! no lost update.
//!
//! The worker is the unchanged read-modify-write worker, pointed at this
//! node for both its lease and its document: `acquire` is `BEGIN … FOR
//! UPDATE` (the grant's token is the transaction id), reads and writes carry
//! that id, `write` is the `UPDATE` plus `COMMIT` (which releases the row
//! lock), and `release` is a `ROLLBACK` of a transaction that never wrote.
//! Transaction ids come from a durable counter saved with the rows.

use std::collections::BTreeMap;

use crate::protocol::msg::{Key, Msg, OpId, Token};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Nanos, Node, Observation};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DbConfig {
    /// `idle_in_transaction_session_timeout`.
    pub txn_timeout_ns: Nanos,
}

/// Who holds a row (a transaction, a queue claim) until when, on the
/// server's own wall clock. Shared with the queue's visibility timeout.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Txn {
    pub owner: u64,
    pub id: u64,
    pub deadline_wall_ns: i64,
}

impl Txn {
    /// `slot`'s holder if it is still within its deadline; an expired one is
    /// dropped (and observed as an expired lease).
    pub fn live(
        slot: &mut Option<Txn>,
        clocks: Clocks,
        key: Key,
        fx: &mut Vec<Effect>,
    ) -> Option<Txn> {
        let txn = (*slot)?;
        if clocks.wall_ns < txn.deadline_wall_ns {
            return Some(txn);
        }
        *slot = None;
        fx.push(Effect::Observe(Observation::LeaseExpired {
            key,
            owner: txn.owner,
        }));
        None
    }

    /// Releases `slot` if `owner` holds it live; returns the owner removed.
    pub fn release(
        slot: &mut Option<Txn>,
        clocks: Clocks,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) -> Option<u64> {
        let live = Txn::live(slot, clocks, key, fx);
        let removed = live.filter(|t| t.owner == owner).map(|t| t.owner);
        if removed.is_some() {
            *slot = None;
        }
        removed
    }

    /// The answer to an acquire from `owner` while `self` holds: the same
    /// grant again (an idempotent retransmission) or busy.
    pub fn answer(&self, clocks: Clocks, req: u32, key: Key, owner: u64) -> Msg {
        if self.owner != owner {
            return Msg::Busy { req, key };
        }
        Msg::Granted {
            req,
            key,
            owner,
            token: Some(Token(self.id)),
            ttl_ns: (self.deadline_wall_ns - clocks.wall_ns).max(0) as u64,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct Row {
    value: u64,
    locked_by: Option<Txn>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Db {
    cfg: DbConfig,
    rows: BTreeMap<Key, Row>,
    /// Last transaction id handed out (durable).
    txns: u64,
}

impl Db {
    pub fn new(cfg: DbConfig) -> Self {
        assert!(cfg.txn_timeout_ns > 0);
        Db {
            cfg,
            rows: BTreeMap::new(),
            txns: 0,
        }
    }

    /// `key`'s row as the refinement mapping reads it: its value and the
    /// transaction holding its lock (one past its deadline included: the
    /// database drops it only when a request next touches the row).
    pub fn row(&self, key: Key) -> (OpId, Option<Txn>) {
        self.rows
            .get(&key)
            .map_or((OpId::INITIAL, None), |r| (OpId(r.value), r.locked_by))
    }

    /// `txns u64 ++ (key u16, value u64)*`: row locks are volatile — a
    /// restarted database has aborted every open transaction.
    fn persist(&self, fx: &mut Vec<Effect>) {
        let mut record = self.txns.to_le_bytes().to_vec();
        for (key, row) in &self.rows {
            record.extend_from_slice(&key.0.to_le_bytes());
            record.extend_from_slice(&row.value.to_le_bytes());
        }
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: record.into(),
        });
    }

    fn recover(&mut self, bytes: &[u8]) {
        assert!(
            bytes.len() >= 8 && (bytes.len() - 8) % 10 == 0,
            "db record is malformed"
        );
        self.txns = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        self.rows = bytes[8..]
            .chunks_exact(10)
            .map(|c| {
                let key = Key(u16::from_le_bytes([c[0], c[1]]));
                let value = u64::from_le_bytes(c[2..10].try_into().expect("8 bytes"));
                (
                    key,
                    Row {
                        value,
                        locked_by: None,
                    },
                )
            })
            .collect();
    }

    /// The row's live transaction, aborting one that idled past the timeout.
    fn live_txn(&mut self, clocks: Clocks, key: Key, fx: &mut Vec<Effect>) -> Option<Txn> {
        Txn::live(
            &mut self.rows.entry(key).or_default().locked_by,
            clocks,
            key,
            fx,
        )
    }

    /// The transaction `token` names, if it is the row's live one.
    fn own_txn(
        &mut self,
        clocks: Clocks,
        key: Key,
        token: Option<Token>,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let live = self.live_txn(clocks, key, fx);
        live.is_some_and(|t| token == Some(Token(t.id)))
    }

    fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        Some(match msg {
            Msg::Acquire { req, key, owner } => match self.live_txn(clocks, key, fx) {
                Some(t) => t.answer(clocks, req, key, owner),
                None => {
                    self.txns += 1;
                    let id = self.txns;
                    let deadline_wall_ns = clocks
                        .wall_ns
                        .saturating_add(self.cfg.txn_timeout_ns as i64);
                    self.rows.entry(key).or_default().locked_by = Some(Txn {
                        owner,
                        id,
                        deadline_wall_ns,
                    });
                    // Durable before the grant leaves: a restart never reuses a transaction id.
                    self.persist(fx);
                    Msg::Granted {
                        req,
                        key,
                        owner,
                        token: Some(Token(id)),
                        ttl_ns: self.cfg.txn_timeout_ns,
                    }
                }
            },
            Msg::Read {
                req,
                key,
                op,
                token,
            } => {
                if self.own_txn(clocks, key, token, fx) {
                    Msg::ReadOk {
                        req,
                        key,
                        op,
                        value: OpId(self.rows[&key].value),
                    }
                } else {
                    Msg::ReadRejected {
                        req,
                        key,
                        op,
                        fence: Token(self.txns),
                    }
                }
            }
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => {
                if !self.own_txn(clocks, key, token, fx) {
                    return Some(Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence: Token(self.txns),
                    });
                }
                // UPDATE + COMMIT: the value changes and the row lock is released together.
                let row = self.rows.get_mut(&key).expect("a locked row exists");
                row.value = value.0;
                row.locked_by = None;
                self.persist(fx);
                Msg::WriteOk { req, key, op }
            }
            Msg::Release { req, key, owner } => {
                let slot = &mut self.rows.entry(key).or_default().locked_by;
                let removed = Txn::release(slot, clocks, key, owner, fx);
                Msg::Released { req, key, removed }
            }
            Msg::Renew { req, key, owner } => Msg::RenewFailed { req, key, owner },
            _ => return None,
        })
    }
}

impl Server for Db {
    fn reset(&mut self, recovered: Option<&[u8]>) {
        self.rows.clear();
        self.txns = 0;
        if let Some(bytes) = recovered {
            self.recover(bytes);
        }
    }

    fn answer(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        self.on_message(clocks, msg, fx)
    }
}

impl Node for Db {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        serve(self, clocks, input, fx);
    }
}

/// A server that answers each request with at most one reply, and boots
/// from its last synced record: the database, the job queue, the cache.
pub trait Server {
    fn reset(&mut self, recovered: Option<&[u8]>);
    fn answer(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg>;
}

/// [`Node::handle`] for a [`Server`].
pub fn serve(server: &mut impl Server, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
    match input {
        Input::Start { recovered } => server.reset(recovered),
        Input::Message { from, msg } => {
            if let Some(reply) = server.answer(clocks, msg, fx) {
                fx.push(Effect::Send {
                    to: from,
                    msg: reply,
                });
            }
        }
        Input::Timer { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(wall_ns: i64) -> Clocks {
        Clocks {
            wall_ns,
            mono_ns: wall_ns as u64,
        }
    }

    fn ask(db: &mut Db, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Msg {
        db.on_message(clocks, msg, fx).expect("the db answers")
    }

    #[test]
    fn an_idle_transaction_is_aborted_and_its_late_update_fails_in_the_database() {
        let mut db = Db::new(DbConfig { txn_timeout_ns: 10 });
        let mut fx = Vec::new();
        let acquire = |owner| Msg::Acquire {
            req: 1,
            key: Key(0),
            owner,
        };
        let Msg::Granted { token: old, .. } = ask(&mut db, at(0), acquire(1), &mut fx) else {
            panic!("a free row is locked");
        };
        assert!(matches!(
            ask(&mut db, at(5), acquire(2), &mut fx),
            Msg::Busy { .. }
        ));
        let Msg::Granted { token: new, .. } = ask(&mut db, at(10), acquire(2), &mut fx) else {
            panic!("the idle transaction was aborted at its timeout");
        };
        assert!(new > old, "transaction ids grow");
        let write = |token| Msg::Write {
            req: 2,
            key: Key(0),
            op: OpId(1001),
            token,
            value: OpId(1001),
        };
        assert!(matches!(
            ask(&mut db, at(11), write(old), &mut fx),
            Msg::WriteRejected { .. }
        ));
        assert!(matches!(
            ask(&mut db, at(11), write(new), &mut fx),
            Msg::WriteOk { .. }
        ));
        // A restart from the last save keeps the counter: no transaction id is reused.
        let record = fx
            .iter()
            .rev()
            .find_map(|e| match e {
                Effect::Persist { record, .. } => Some(record.to_vec()),
                _ => None,
            })
            .expect("saved");
        let mut restarted = Db::new(DbConfig { txn_timeout_ns: 10 });
        restarted.handle(
            at(12),
            Input::Start {
                recovered: Some(&record),
            },
            &mut Vec::new(),
        );
        let Msg::Granted { token, .. } = ask(&mut restarted, at(12), acquire(3), &mut fx) else {
            panic!("after a restart every row lock is gone");
        };
        assert!(token > new);
    }
}
