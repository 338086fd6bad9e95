//! A built-in worker's lanes: each a thread that owns one connection to one
//! server and executes one request at a time — its lock server's lane (the
//! Redis, etcd or ZooKeeper room's, or none when the database is the lock)
//! and its PostgreSQL lane ([`super::pg`]). A request that gets no answer
//! (a dropped or cut connection) is the machine's business: its request
//! timer fires and it retransmits, and the driver then opens a fresh lane
//! (a new connection) rather than queue behind the stuck one.

use std::sync::mpsc;
use std::sync::Arc;

use anyhow::Result;

use super::pg::PgLane;
use super::setup::Setup;
use crate::live::emit::emit;
use crate::live::etcd::lane::EtcdLane;
use crate::live::etcd::ETCD_LOCK_KEY;
use crate::live::record::Record;
use crate::live::redis::lane::RedisLane;
use crate::live::zk::lane::ZkLane;
use crate::live::LockKind;
use crate::protocol::msg::{Msg, Token};
use crate::protocol::node::NodeId;

/// One connection to one server, owned by a lane thread.
pub(super) enum Conn {
    Redis(Box<RedisLane>),
    Pg(Box<PgLane>),
    /// `select-for-update`: the database is the lock, no lock server.
    NoLock,
    /// The etcd cluster (lease, keep-alive, server-side lock).
    Etcd(Box<EtcdLane>),
    /// The ZooKeeper ensemble (the lock recipe).
    Zk(Box<ZkLane>),
}

/// What a lane knows of the operation in progress (for its records).
#[derive(Clone, Copy)]
pub(super) struct Req {
    pub(super) msg: Msg,
    pub(super) op: u64,
}

impl Conn {
    /// The lane to the worker's lock server, connected now when
    /// `connected` (set-up is not part of the trial), else at its first
    /// request.
    pub(super) fn lock(s: &Setup, connected: bool) -> Result<Conn> {
        let endpoints = || -> Vec<String> {
            s.args
                .cluster
                .split(',')
                .filter(|e| !e.is_empty())
                .map(str::to_string)
                .collect()
        };
        Ok(match s.args.lock {
            LockKind::None => Conn::NoLock,
            LockKind::EtcdLock => Conn::Etcd(Box::new(EtcdLane::new(
                endpoints(),
                format!("{}{ETCD_LOCK_KEY}", s.args.key_prefix),
                s.args.ttl_ms,
            )?)),
            LockKind::ZkLock => Conn::Zk(Box::new(ZkLane::new(
                endpoints(),
                &s.args.key_prefix,
                s.args.ttl_ms,
                s.args.zk_watch,
            )?)),
            LockKind::RedisSetNxDel | LockKind::RedisSetNxCad => {
                Conn::Redis(Box::new(RedisLane::new(s.redis.clone(), connected)?))
            }
        })
    }

    /// The lane to PostgreSQL.
    pub(super) fn pg(s: &Setup, connected: bool) -> Result<Conn> {
        Ok(Conn::Pg(Box::new(PgLane::new(s, connected)?)))
    }

    /// Executes one request; `None` is no answer (the machine times out).
    fn execute(&mut self, s: &Setup, req: Req) -> Option<Msg> {
        match self {
            Conn::NoLock => match req.msg {
                Msg::Acquire { req, key, owner } => Some(Msg::Granted {
                    req,
                    key,
                    owner,
                    token: None,
                    ttl_ns: u64::MAX / 4,
                }),
                Msg::Release { req, key, owner } => Some(Msg::Released {
                    req,
                    key,
                    removed: Some(owner),
                }),
                _ => None,
            },
            Conn::Redis(lane) => lane.execute(req.msg, req.op),
            Conn::Etcd(lane) => cluster_execute(req, |acquire| match acquire {
                true => lane.acquire(req.op).map(|(t, _)| Some(t)),
                false => Ok(lane.release().then_some(0)),
            }),
            Conn::Zk(lane) => cluster_execute(req, |acquire| match acquire {
                true => lane.acquire(req.op).map(Some),
                false => Ok(lane.release().then_some(0)),
            }),
            Conn::Pg(lane) => match lane.execute(s, req.msg) {
                Ok(reply) => reply,
                Err(e) => {
                    // A cut or broken connection: reconnect on the next request.
                    io_error(req.op, format!("{e:#}"));
                    lane.reset();
                    None
                }
            },
        }
    }
}

/// Acquire and Release on a consensus cluster: `call(true)` blocks until
/// the lock is held and gives its token; `call(false)` releases it.
fn cluster_execute(req: Req, mut call: impl FnMut(bool) -> Result<Option<u64>>) -> Option<Msg> {
    match req.msg {
        Msg::Acquire {
            req: id,
            key,
            owner,
        } => match call(true) {
            Ok(Some(token)) => Some(Msg::Granted {
                req: id,
                key,
                owner,
                token: Some(Token(token)),
                ttl_ns: u64::MAX / 4,
            }),
            Ok(None) => Some(Msg::Busy { req: id, key }),
            // The client gave up (its sessions kept expiring through an
            // election): it holds nothing, so it is busy, retried after
            // `retry_ms` as a lock client's loop would — not left to the
            // request timeout, which a scenario may set long for another
            // reason (a held UPDATE that must not be retransmitted).
            Err(e) => {
                io_error(req.op, format!("{e:#}"));
                Some(Msg::Busy { req: id, key })
            }
        },
        Msg::Release {
            req: id,
            key,
            owner,
        } => {
            let removed = matches!(call(false), Ok(Some(_)));
            Some(Msg::Released {
                req: id,
                key,
                removed: removed.then_some(owner),
            })
        }
        _ => None,
    }
}

/// A failed request the machine retries (its lane reconnects).
pub(super) fn io_error(op: u64, detail: String) {
    emit(Record::IoError {
        op: Some(op),
        detail,
    });
}

/// A lane: its thread's request queue and whether a request is in flight.
pub(super) struct Lane {
    pub(super) tx: mpsc::Sender<Req>,
    pub(super) busy: bool,
}

/// A reply (or the lack of one) from lane `lane` of server `from`.
pub(super) struct Reply {
    pub(super) from: NodeId,
    pub(super) lane: u64,
    pub(super) msg: Option<Msg>,
}

pub(super) fn spawn_lane(
    setup: &Arc<Setup>,
    from: NodeId,
    id: u64,
    mut conn: Conn,
    replies: &mpsc::Sender<Reply>,
) -> Lane {
    let (tx, rx) = mpsc::channel::<Req>();
    let (setup, replies) = (setup.clone(), replies.clone());
    std::thread::spawn(move || {
        for req in rx {
            let msg = conn.execute(&setup, req);
            if replies
                .send(Reply {
                    from,
                    lane: id,
                    msg,
                })
                .is_err()
            {
                return;
            }
        }
    });
    Lane { tx, busy: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msg::Key;

    fn acquire() -> Req {
        Req {
            msg: Msg::Acquire {
                req: 7,
                key: Key(0),
                owner: 1,
            },
            op: 1001,
        }
    }

    #[test]
    fn a_cluster_acquire_the_client_gave_up_is_busy_not_a_lost_reply() {
        let reply = cluster_execute(acquire(), |_| anyhow::bail!("session expired"));
        assert!(matches!(reply, Some(Msg::Busy { req: 7, .. })), "{reply:?}");
    }

    #[test]
    fn a_cluster_acquire_that_holds_the_lock_is_granted_with_its_token() {
        let reply = cluster_execute(acquire(), |_| Ok(Some(42)));
        assert!(
            matches!(
                reply,
                Some(Msg::Granted {
                    req: 7,
                    token: Some(Token(42)),
                    ..
                })
            ),
            "{reply:?}"
        );
    }
}
