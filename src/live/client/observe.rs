//! The observers a user's program's proxies run on every chunk before
//! forwarding it: its lock server's messages, as that server's room decodes
//! them ([`crate::live::common::wire`]), and PostgreSQL's
//! ([`crate::live::decode`]), into what the worker was seen doing
//! ([`Seen`]), and the faults anchored there fired — in the proxy's thread,
//! before the bytes go on, so a pause after the grant stops the program
//! before it learns it holds the lock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::seen::Seen;
use super::shared::Shared;
use crate::live::common::wire::{Conversation, Side};
use crate::live::decode::pgwire;
use crate::live::fault::{NetMessage, Point};
use crate::live::locked;
use crate::live::proxy::{Flow, Observer};

/// Statements sent and not yet answered, with the token each carried.
type Pending = VecDeque<(pgwire::Statement, Option<i64>)>;

/// The observers of one connection of `worker` to upstream `upstream` of
/// its lock server (named `server`), whatever the server: the steps every
/// server shares, done once. A request the room calls the worker's first
/// acquisition waits at the start gate, and a lock request is noted; after
/// a reply that may follow a change of the lock the server's own account is
/// asked whether the worker was granted the lock since it last asked — a
/// new grant is noted and the faults anchored there strike before the reply
/// goes on (a fault on the lock reply loses it, with the rest of its chunk:
/// replies to one program's pipelined commands may share it, and are lost
/// with it as on a reset connection). A direction the room stops decoding
/// is reported once: the trial cannot be judged on what it no longer sees.
pub(super) fn lock_observers(
    shared: Arc<Shared>,
    (server, worker, upstream): (&'static str, usize, usize),
    (mut requests, mut replies): Conversation,
) -> (Observer, Observer) {
    let s2 = shared.clone();
    let mut noted = [false; 2];
    let to_server: Observer = Box::new(move |chunk| {
        requests.push(chunk, &mut |r| {
            if r.gate {
                shared.in_start_order(worker);
            }
            if r.note {
                shared.record(worker, Seen::LockSent);
            }
        });
        note_broken(
            &shared,
            (server, worker, "requests"),
            &*requests,
            &mut noted[0],
        );
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        let mut lost = None;
        replies.push(chunk, &mut |r| {
            if let Some(p) = r.problem {
                locked(&s2.account_errors).push(p);
            }
            if r.touches_lock {
                s2.record(worker, Seen::LockReplied);
                lost = lost.or(s2.learn_grants(upstream, worker));
            }
        });
        note_broken(&s2, (server, worker, "responses"), &*replies, &mut noted[1]);
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

/// Notes a direction that stopped decoding, once: a reason the trial
/// cannot be judged.
fn note_broken<T>(
    shared: &Shared,
    (server, worker, side): (&str, usize, &str),
    decoder: &dyn Side<T>,
    noted: &mut bool,
) {
    if let (Some(why), false) = (decoder.broken(), *noted) {
        *noted = true;
        locked(&shared.account_errors).push(format!(
            "worker/{}'s {server} connection ({side}) could not be decoded: {why}",
            shared.names[worker]
        ));
    }
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
