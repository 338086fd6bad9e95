//! The built-in worker's lane to Redis: the article's recipe on a real
//! connection — `SET key owner NX PX ttl` with an `INCR` of the token
//! counter beside it for a grant, `DEL` or Redis's documented
//! compare-and-delete to release — each call recorded for the history.
//! After a failover it moves to the next server it was given (the
//! promoted replica).

use std::sync::Arc;

use anyhow::{Context, Result};

use crate::live::emit::emit;
use crate::live::monotonic_ns;
use crate::live::record::{Lease, Record};
use crate::protocol::msg::{Key, Msg, ReqId, Token};

/// Redis's documented compare-and-delete release (redis.io, "Distributed
/// Locks with Redis"): delete the key only if it still holds our value.
pub const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// What every Redis lane of one worker shares.
pub(crate) struct RedisConfig {
    /// The primary first, then the replica it moves to when the primary
    /// stops answering.
    pub urls: Vec<String>,
    /// The owner value's prefix: unique per process, so a restarted worker
    /// never releases its previous incarnation's lease by accident.
    pub owner_prefix: String,
    pub lock_key: String,
    pub token_key: String,
    pub ttl_ms: u64,
    /// Release with compare-and-delete (else a plain `DEL`).
    pub compare_and_delete: bool,
}

/// One connection to Redis, owned by a lane thread.
pub(crate) struct RedisLane {
    cfg: Arc<RedisConfig>,
    con: Option<redis::Connection>,
    /// Which of the servers it is on (1: the promoted replica).
    server: usize,
}

/// An acquire's or a release's request id, key and owner.
type Ask = (ReqId, Key, u64);

fn connect(url: &str) -> Result<redis::Connection> {
    redis::Client::open(url)
        .context("redis URL")?
        .get_connection()
        .with_context(|| format!("connecting to Redis at {url}"))
}

impl RedisLane {
    /// A lane on the primary; connected now when `connected` (set-up is
    /// not part of the trial), else at its first request.
    pub(crate) fn new(cfg: Arc<RedisConfig>, connected: bool) -> Result<RedisLane> {
        let con = match connected {
            true => Some(connect(cfg.urls.first().map_or("", String::as_str))?),
            false => None,
        };
        Ok(RedisLane {
            cfg,
            con,
            server: 0,
        })
    }

    /// Executes one request of op `op`; `None` is no answer (the machine
    /// times out and retransmits).
    pub(crate) fn execute(&mut self, msg: Msg, op: u64) -> Option<Msg> {
        loop {
            if self.con.is_none() {
                self.con = connect(self.cfg.urls.get(self.server)?).ok();
            }
            // No connection: no answer (the machine asks again).
            self.con.as_ref()?;
            let answer = match msg {
                Msg::Acquire { req, key, owner } => self.acquire((req, key, owner), op)?,
                // A release that cannot reach its server (killed in a
                // failover) is not the worker's failure: the lease expires
                // by itself.
                Msg::Release { req, key, owner } => {
                    return Some(self.release((req, key, owner), op))
                }
                // Renewal is off in every live scenario (renew_every_ns = None).
                _ => return None,
            };
            match answer {
                Ok(reply) => return Some(reply),
                // The primary is gone: move to the next server (the promoted replica) and ask again.
                Err(e) if self.server + 1 < self.cfg.urls.len() => {
                    self.server += 1;
                    let detail = format!("{e}; now server {}", self.server);
                    emit(Record::Moved { detail });
                    self.con = None;
                }
                Err(e) => {
                    emit(Record::IoError {
                        op: Some(op),
                        detail: e.to_string(),
                    });
                    self.con = None;
                    return None;
                }
            }
        }
    }

    /// `SET … NX PX ttl` and, when it took the key, `INCR` of the token
    /// counter: `Granted` with the token, or `Busy`.
    fn acquire(&mut self, (req, key, owner): Ask, op: u64) -> Option<redis::RedisResult<Msg>> {
        let (cfg, server) = (self.cfg.clone(), self.server);
        let c = self.con.as_mut()?;
        emit(Record::AcquireSent { op: Some(op) });
        let value = format!("{}:{owner}", cfg.owner_prefix);
        let got = redis::cmd("SET")
            .arg(&cfg.lock_key)
            .arg(&value)
            .arg("NX")
            .arg("PX")
            .arg(cfg.ttl_ms)
            .query::<Option<String>>(c)
            .map(|set| set.map(|_| monotonic_ns()))
            .and_then(|set| match set {
                Some(set_ns) => redis::cmd("INCR")
                    .arg(&cfg.token_key)
                    .query::<u64>(c)
                    .map(|t| Some((set_ns, t))),
                None => Ok(None),
            });
        Some(got.map(|got| match got {
            Some((set_ns, t)) => {
                emit(Record::GrantReceived {
                    op: Some(op),
                    token: Some(t),
                    grant: None,
                    server: server as u16,
                    lease: Some(Lease {
                        set_ns,
                        ttl_ms: cfg.ttl_ms,
                    }),
                    holds: None,
                });
                Msg::Granted {
                    req,
                    key,
                    owner,
                    token: Some(Token(t)),
                    ttl_ns: cfg.ttl_ms * 1_000_000,
                }
            }
            None => Msg::Busy { req, key },
        }))
    }

    /// `DEL`, or the compare-and-delete: `Released`, with the owner when
    /// it deleted the key.
    fn release(&mut self, (req, key, owner): Ask, op: u64) -> Msg {
        let Some(c) = self.con.as_mut() else {
            return Msg::Released {
                req,
                key,
                removed: None,
            };
        };
        emit(Record::ReleaseSent {
            op: Some(op),
            grant: None,
        });
        let cfg = &self.cfg;
        let value = format!("{}:{owner}", cfg.owner_prefix);
        let removed: redis::RedisResult<i64> = match cfg.compare_and_delete {
            true => redis::cmd("EVAL")
                .arg(COMPARE_AND_DELETE)
                .arg(1)
                .arg(&cfg.lock_key)
                .arg(&value)
                .query(c),
            false => redis::cmd("DEL").arg(&cfg.lock_key).query(c),
        };
        let (deleted, detail) = match &removed {
            Ok(n) => (Some(*n), None),
            Err(e) => (None, Some(e.to_string())),
        };
        emit(Record::ReleaseDone {
            op: Some(op),
            deleted,
            detail,
        });
        Msg::Released {
            req,
            key,
            removed: deleted.filter(|n| *n > 0).map(|_| owner),
        }
    }
}
