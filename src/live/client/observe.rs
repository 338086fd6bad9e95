//! The observers a user's program's proxies run on every chunk before
//! forwarding it: RESP and PostgreSQL messages decoded ([`crate::live::decode`])
//! into what the worker was seen doing ([`Seen`]), and the faults anchored
//! there fired — in the proxy's thread, before the bytes go on, so a pause
//! after the grant stops the program before it learns it holds the lock.

use redis_protocol::resp3::types::OwnedFrame;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::backend::ObserverFactory;
use super::lock_account::LockAccount;
use super::seen::Seen;
use super::shared::Shared;
use crate::live::decode::{pgwire, resp};
use crate::live::fault::{NetMessage, Point};
use crate::live::locked;
use crate::live::proxy::{Flow, Observer};

/// Statements sent and not yet answered, with the token each carried.
type Pending = VecDeque<(pgwire::Statement, Option<i64>)>;

/// Observers for each connection of a worker to a Redis master, which
/// register the connection's address (as the server sees it) with the
/// account of that master's feed. Nothing here reads the shape of a
/// lock command: a command naming the lock key is noted (and the first
/// one waits at the start gate), and after the reply to any command that
/// may have touched the lock — one naming the lock or token key, a
/// script, a function, a transaction's `EXEC` — the server's own account
/// says whether the worker has been granted the lock since it last asked;
/// a new grant is noted and the faults anchored there strike, before the
/// reply goes on to the program.
pub(super) fn redis_observers(account: Arc<LockAccount>) -> ObserverFactory {
    Arc::new(move |shared, worker, master, seen_as| {
        account.register(master, seen_as.to_string(), worker);
        redis_connection(shared, worker, master, account.clone(), seen_as.to_string())
    })
}

/// What a command sent and not yet answered is, for its reply.
#[derive(Clone, Copy, Default)]
struct RedisPending {
    /// It may have touched the lock (the account is asked after its reply).
    may_touch: bool,
    /// A `SET NX` of the lock key outside a transaction: its reply says
    /// whether Redis took the key for it (the account's replay is held to it).
    takes_if_free: bool,
}

fn redis_connection(
    shared: Arc<Shared>,
    worker: usize,
    master: usize,
    account: Arc<LockAccount>,
    seen_as: String,
) -> (Observer, Observer) {
    let pending: Arc<Mutex<VecDeque<RedisPending>>> = Arc::default();
    let (s2, p2) = (shared.clone(), pending.clone());
    let mut in_multi = false;
    let mut up = resp::FrameBuffer::default();
    let mut down = resp::FrameBuffer::default();
    let to_server: Observer = Box::new(move |chunk| {
        for frame in up.push(chunk) {
            let args = resp::command_args(&frame).unwrap_or_default();
            let names = |key: &[u8]| args.iter().skip(1).any(|a| a.as_slice() == key);
            let names_lock = names(&shared.lock_key);
            if names_lock {
                shared.in_start_order(worker);
                // Every master hears the same command: noted once.
                if master == 0 {
                    shared.record(worker, Seen::LockSent);
                }
            }
            let name = args
                .first()
                .map(|a| a.to_ascii_lowercase())
                .unwrap_or_default();
            let takes_if_free =
                names_lock && !in_multi && crate::live::account::keyspace::takes_if_free(&args);
            match name.as_slice() {
                b"multi" => in_multi = true,
                b"exec" | b"discard" => in_multi = false,
                _ => {}
            }
            let may_touch = names_lock
                || names(&shared.token_key)
                || matches!(
                    name.as_slice(),
                    b"exec"
                        | b"eval"
                        | b"evalsha"
                        | b"eval_ro"
                        | b"evalsha_ro"
                        | b"fcall"
                        | b"fcall_ro"
                );
            locked(&pending).push_back(RedisPending {
                may_touch,
                takes_if_free,
            });
        }
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        let mut lost = None;
        for frame in down.push(chunk) {
            let p = locked(&p2).pop_front().unwrap_or_default();
            if p.takes_if_free {
                let took = match &frame {
                    OwnedFrame::Null => Some(false),
                    OwnedFrame::SimpleString { data, .. } => Some(data.eq_ignore_ascii_case(b"OK")),
                    OwnedFrame::Number { data, .. } => Some(*data == 1),
                    _ => None,
                };
                account.replied(master, &seen_as, took);
            }
            if p.may_touch {
                s2.record(worker, Seen::LockReplied);
                lost = lost.or(s2.learn_grants(master, worker));
            }
        }
        match lost {
            // The reply that carried the grant is lost with the rest of
            // its chunk (replies to one program's pipelined commands may
            // share it: they are lost with it, as on a reset connection).
            Some(after_ms) => Flow::Cut {
                forward: 0,
                after_ms,
            },
            None => Flow::Pass,
        }
    });
    (to_server, to_client)
}

/// Observers for one PostgreSQL connection of `worker`.
pub(super) fn pg_observers(shared: Arc<Shared>, worker: usize) -> (Observer, Observer) {
    let pending: Arc<Mutex<Pending>> = Arc::default();
    let (s2, p2) = (shared.clone(), pending.clone());
    let mut up = pgwire::Frontend::default();
    let mut down = pgwire::Backend::default();
    // Stream offset of the chunk being observed.
    let mut stream_at = 0u64;
    let to_server: Observer = Box::new(move |chunk| {
        let chunk_at = stream_at;
        stream_at += chunk.len() as u64;
        for st in up.push(chunk) {
            if st.is_select_of("documents") {
                shared.record(worker, Seen::ReadSent);
            } else if st.is_update_of("documents") {
                shared.record(worker, Seen::WriteSent(st.integers()));
                shared.stall(worker, NetMessage::Update);
                if let Some(after_ms) = shared.strike(worker, Point::FenceChecked) {
                    shared.record(
                        worker,
                        Seen::WriteLost(
                            "the UPDATE never reached the server (a fault lost it)".into(),
                        ),
                    );
                    // Its request is lost from its first byte; what came before goes on.
                    let forward = st
                        .request_at
                        .saturating_sub(chunk_at)
                        .min(chunk.len() as u64);
                    return Flow::Cut {
                        forward: forward as usize,
                        after_ms,
                    };
                }
            }
            locked(&pending).push_back((st, None));
        }
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        // A fault that loses an answer loses it with the rest of its chunk
        // (the earlier messages of the same request's reply; a program's
        // pipelined replies with it, as on a reset connection).
        let mut lost = None;
        for reply in down.push(chunk) {
            match reply {
                pgwire::Reply::BackendPid(pid) => {
                    locked(&s2.backend_pids).insert(pid, worker);
                }
                pgwire::Reply::Row(col) => {
                    if let Some((st, value)) = locked(&p2).front_mut() {
                        *value = col.and_then(|b| pgwire::integer(&b, st.binary_results));
                    }
                }
                pgwire::Reply::Complete(tag) => {
                    let Some((st, value)) = locked(&p2).pop_front() else {
                        continue;
                    };
                    if st.is_select_of("documents") {
                        // An answer a fault loses never reached the program.
                        if !s2.loses_at(worker, Point::ReadOk) {
                            s2.record(worker, Seen::ReadOk(value));
                        }
                        s2.stall(worker, NetMessage::ReadReply);
                        lost = lost.or(s2.strike(worker, Point::ReadOk));
                    } else if st.is_update_of("documents") {
                        let rows = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                        s2.stall(worker, NetMessage::UpdateReply);
                        let seen = if s2.loses_at(worker, Point::WriteAcked) {
                            let why = "the UPDATE ran; a fault lost its answer".to_string();
                            Seen::WriteUnanswered(rows, why)
                        } else {
                            Seen::WriteDone(rows)
                        };
                        s2.record(worker, seen);
                        lost = lost.or(s2.strike(worker, Point::WriteAcked));
                    }
                }
                pgwire::Reply::Error(_) => {
                    if let Some((st, _)) = locked(&p2).pop_front() {
                        if st.is_update_of("documents") {
                            s2.record(worker, Seen::WriteDone(None));
                        }
                    }
                }
                pgwire::Reply::Ready => locked(&p2).clear(),
            }
        }
        match lost {
            Some(after_ms) => Flow::Cut {
                forward: 0,
                after_ms,
            },
            None => Flow::Pass,
        }
    });
    (to_server, to_client)
}
