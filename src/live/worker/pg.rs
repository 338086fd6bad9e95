//! The built-in worker's lane to PostgreSQL: its read of the document and
//! its write in the scenario's form (plain, fenced, check-then-update, or
//! `SELECT … FOR UPDATE` in one transaction when the database is the
//! lock), each recorded for the history, with the worker's gate after the
//! step it stops at.
//!
//! Where the resource's semantics live in PostgreSQL, not in the worker:
//! `check-then-update` is the resource's non-atomic check (a `SELECT` of
//! the fence, then the plain `UPDATE`, two statements), and with
//! `select-for-update` the row lock is taken by the read's `SELECT … FOR
//! UPDATE`, committed with the write.

use anyhow::{Context, Result};

use super::setup::Setup;
use crate::live::emit::emit;
use crate::live::fault::Point;
use crate::live::record::{Record, WriteOutcome};
use crate::live::WriteKind;
use crate::protocol::msg::{Key, Msg, OpId, ReqId, Token};

/// One connection to PostgreSQL, owned by a lane thread.
pub(super) struct PgLane {
    pg: Option<postgres::Client>,
    /// A transaction is open (`select-for-update`: from the read to the write).
    in_tx: bool,
}

impl PgLane {
    /// A lane connected now (`connected`: set-up is not part of the
    /// trial), or at its first request.
    pub(super) fn new(s: &Setup, connected: bool) -> Result<PgLane> {
        let pg = match connected {
            true => Some(s.connect_pg()?),
            false => None,
        };
        Ok(PgLane { pg, in_tx: false })
    }

    /// Executes one request; Ok(None): not one for the database.
    pub(super) fn execute(&mut self, s: &Setup, msg: Msg) -> Result<Option<Msg>> {
        if self.pg.is_none() {
            self.pg = Some(s.connect_pg()?);
        }
        match msg {
            Msg::Read {
                req,
                key,
                op,
                token,
            } => self.read(s, (req, key, op), token).map(Some),
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => self.write(s, (req, key, op), token, value).map(Some),
            _ => Ok(None),
        }
    }

    /// A failed connection: reconnect on the next request.
    pub(super) fn reset(&mut self) {
        self.pg = None;
        self.in_tx = false;
    }

    /// The read of the document (in a transaction, `FOR UPDATE`, when the
    /// database is the lock); the gate after `read_ok`.
    fn read(&mut self, s: &Setup, (req, key, op): Step, token: Option<Token>) -> Result<Msg> {
        let doc = document(s)?;
        let one_db = s.args.write == WriteKind::SelectForUpdate;
        let pg = self.pg.as_mut().context("connection")?;
        emit(Record::ReadSent {
            op: op.0,
            token: token.map(|t| t.0),
        });
        let select = if one_db {
            if self.in_tx {
                pg.batch_execute("ROLLBACK")?;
            }
            pg.batch_execute("BEGIN")?;
            self.in_tx = true;
            "SELECT body FROM documents WHERE id = $1 FOR UPDATE"
        } else {
            "SELECT body FROM documents WHERE id = $1"
        };
        let seen: i64 = pg.query_one(select, &[&doc]).context("read")?.get(0);
        let value = u64::try_from(seen).ok();
        emit(Record::ReadOk { op: op.0, value });
        s.gate(Point::ReadOk)?;
        Ok(Msg::ReadOk {
            req,
            key,
            op,
            value: OpId(seen as u64),
        })
    }

    /// The write: the gate after `write_sent`, check-then-update's check
    /// (and its gate after `fence_checked`), then the `UPDATE` (committed
    /// when a transaction is open).
    fn write(
        &mut self,
        s: &Setup,
        (req, key, op): Step,
        token: Option<Token>,
        value: OpId,
    ) -> Result<Msg> {
        let doc = document(s)?;
        let token_sql = token.map_or(0, |t| t.0 as i64);
        let token = token.map(|t| t.0);
        emit(Record::WriteSent {
            op: op.0,
            token,
            value: Some(value.0),
            grant: None,
        });
        s.gate(Point::WriteSent)?;
        if s.args.write == WriteKind::CheckThenUpdate {
            let pg = self.pg.as_mut().context("connection")?;
            let fence: i64 = pg
                .query_one("SELECT fencing_token FROM documents WHERE id = $1", &[&doc])
                .context("fence check")?
                .get(0);
            emit(Record::FenceChecked {
                op: op.0,
                value: fence,
            });
            if fence >= token_sql {
                let outcome = WriteOutcome::Rejected;
                emit(Record::WriteAcked {
                    op: op.0,
                    token,
                    outcome,
                });
                let fence = Token(fence as u64);
                return Ok(Msg::WriteRejected {
                    req,
                    key,
                    op,
                    fence,
                });
            }
            s.gate(Point::FenceChecked)?;
        }
        let sql = match s.args.write {
            WriteKind::Fenced => {
                "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2"
            }
            _ => "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3",
        };
        let pg = self.pg.as_mut().context("connection")?;
        let rows = pg
            .execute(sql, &[&(value.0 as i64), &token_sql, &doc])
            .context("write")?;
        if self.in_tx {
            pg.batch_execute("COMMIT").context("COMMIT")?;
            self.in_tx = false;
        }
        let ok = rows == 1;
        let outcome = match ok {
            true => WriteOutcome::Ok,
            false => WriteOutcome::Rejected,
        };
        emit(Record::WriteAcked {
            op: op.0,
            token,
            outcome,
        });
        Ok(match ok {
            true => Msg::WriteOk { req, key, op },
            false => Msg::WriteRejected {
                req,
                key,
                op,
                fence: Token(token_sql as u64),
            },
        })
    }
}

/// A read's or a write's request id, key and op.
type Step = (ReqId, Key, OpId);

/// The document row the worker writes.
fn document(s: &Setup) -> Result<i32> {
    i32::try_from(s.args.document).context("--document")
}
