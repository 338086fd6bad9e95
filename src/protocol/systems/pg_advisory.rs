//! A PostgreSQL session-level advisory lock (`pg_try_advisory_lock(k)`)
//! used as the lock service for *another* store (the resource at
//! `resource/0`): a common way to "just use the database we already have"
//! as a mutex.
//!
//! What PostgreSQL documents (PostgreSQL manual, "Explicit Locking —
//! Advisory Locks" and "Advisory Lock Functions"): a session-level advisory
//! lock is held "until explicitly released or the session ends"; it is not
//! tied to a transaction and has no timeout of its own. The server ends a
//! session whose client it can no longer reach only through TCP keepalives
//! (`tcp_keepalives_idle`, `tcp_keepalives_interval`, `tcp_keepalives_count`:
//! dead after idle + interval × count) or `idle_session_timeout`; ending the
//! session releases its advisory locks, and a waiter's next try-lock
//! succeeds.
//!
//! The model: each acquisition opens a session (the client's acquisition
//! nonce names it) with one `pg_try_advisory_lock`; a failed try closes it.
//! The client sends a keepalive every `keepalive_ns` (the scenario's
//! `renew_every_ms`, default a third of the timeout); the server ends a
//! session silent for `session_timeout_ns` (the scenario's `[lease] ttl_ms`)
//! and releases its lock. A paused worker models a frozen VM or container:
//! its kernel stops too, so no keepalive answers for it. The client has no
//! lease deadline: it believes it holds the lock until a message on its
//! connection is answered "session terminated" (`LockEvent::Lost`) — so a
//! holder frozen longer than the timeout wakes up, writes, and only then
//! learns. `fence = true` draws a token in the same statement as the lock,
//! `SELECT nextval('lock_fence') WHERE pg_try_advisory_lock(k)`, so token
//! order is lock order and the store's fenced compare-and-set refuses the
//! woken holder's write. A restarted server keeps the sequence (it is
//! WAL-logged) but no session: every advisory lock is gone.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::msg::{Key, Msg, ReqId, Token};
use crate::protocol::node::{Clocks, Effect, Input, Nanos, Node, NodeId, Observation, TimerId};
use crate::protocol::record::{persist_if_changed, RecordReader, RecordWriter};
use crate::protocol::systems::base::{
    ClientBase, LockEvent, LockSystem, Requests, SessionCheck, Timeout, CLIENT_REQUEST,
    CLIENT_TIMER_A,
};
use crate::protocol::systems::SystemWire;

crate::protocol::msg::system_msgs! {
    /// The PostgreSQL advisory-lock session's messages (`Msg::PgAdvisory`).
    pub enum PgMsg {
        /// Open session `session` and `pg_try_advisory_lock(key)` in it
        /// (with `fence`: `SELECT nextval('lock_fence') WHERE …`).
        TryLock = (82, "pg_try_lock", Acquire) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex },
        /// `fence`: the sequence value drawn with a granted lock (0: none).
        LockResult = (83, "pg_lock_result", Grant) { req: ReqId => "req", key: Key => "", ok: bool => "ok", fence: u64 => "fence" },
        /// A TCP keepalive on the session's connection.
        Keepalive = (84, "pg_keepalive", Grant) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex },
        Alive = (85, "pg_alive", Grant) { req: ReqId => "req", key: Key => "" },
        /// `pg_advisory_unlock(key)`, then the session closes: the release.
        Unlock = (86, "pg_unlock", Release) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex } => Release(session),
        Unlocked = (87, "pg_unlocked", Release) { req: ReqId => "req", key: Key => "", ok: bool => "ok" },
        /// "terminating connection": the session ended (timeout, restart).
        Terminated = (88, "pg_session_terminated", Rejected) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex },
    }
}

/// PostgreSQL's advisory lock in the registry (`Msg::PgAdvisory`).
pub struct PgAdvisory;

impl SystemWire for PgAdvisory {
    type Msg = PgMsg;
}

impl LockSystem for PgAdvisory {
    type ServerConfig = PgServerConfig;
    type Server = PgServer;
    type ClientConfig = PgClientConfig;
    type Client = PgClient;

    fn server_config(p: &ProtocolConfig, _first: NodeId, _index: u8) -> PgServerConfig {
        PgServerConfig {
            session_timeout_ns: p.lease_ttl_ns,
            fence: p.fence,
        }
    }

    fn server(cfg: PgServerConfig) -> PgServer {
        PgServer::new(cfg)
    }

    fn client_config(p: &ProtocolConfig, _first: NodeId) -> PgClientConfig {
        PgClientConfig {
            server: NodeId::COORD_GROUP,
            keepalive_ns: p.renew_every_ns.unwrap_or(p.lease_ttl_ns / 3).max(1),
            fence: p.fence,
        }
    }

    fn client(cfg: PgClientConfig, base: ClientBase) -> PgClient {
        PgClient::new(cfg, base)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PgClientConfig {
    pub server: NodeId,
    pub keepalive_ns: Nanos,
    /// Send the sequence value drawn with the lock as the fencing token.
    pub fence: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    Idle,
    Locking,
    Holding,
    /// Holding, a keepalive outstanding.
    KeepingAlive,
    Unlocking,
}

const KEEPALIVE: TimerId = CLIENT_TIMER_A;

/// The application's database session: lock, keepalives, unlock.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PgClient {
    cfg: PgClientConfig,
    base: ClientBase,
    requests: Requests,
    phase: Phase,
    session: u64,
}

impl PgClient {
    pub fn new(cfg: PgClientConfig, base: ClientBase) -> Self {
        PgClient {
            cfg,
            base,
            requests: Requests::new(base),
            phase: Phase::Idle,
            session: 0,
        }
    }

    fn send(&mut self, clocks: Clocks, phase: Phase, fx: &mut Vec<Effect>) {
        self.phase = phase;
        let (req, key, session) = (self.requests.take_req(), self.base.key, self.session);
        let msg = match phase {
            Phase::Locking => PgMsg::TryLock { req, key, session },
            Phase::KeepingAlive => PgMsg::Keepalive { req, key, session },
            Phase::Unlocking => PgMsg::Unlock { req, key, session },
            Phase::Idle | Phase::Holding => unreachable!("nothing to send in {phase:?}"),
        };
        self.requests
            .send(clocks, self.cfg.server, Msg::PgAdvisory(msg), fx);
    }

    /// A new session (named by the acquisition nonce) and its try-lock.
    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        self.session = owner;
        self.send(clocks, Phase::Locking, fx);
    }

    pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        fx.push(Effect::CancelTimer { timer: KEEPALIVE });
        self.requests.forget(fx);
        self.send(clocks, Phase::Unlocking, fx);
    }

    fn stop(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Idle;
        self.requests.forget(fx);
        fx.push(Effect::CancelTimer { timer: KEEPALIVE });
    }

    pub fn on_message(&mut self, _clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        let Msg::PgAdvisory(msg) = msg else {
            return LockEvent::Pending;
        };
        if !self.requests.answers(msg.words()[0] as ReqId) {
            return LockEvent::Pending;
        }
        match (self.phase, msg) {
            (
                Phase::Locking,
                PgMsg::LockResult {
                    ok: true, fence, ..
                },
            ) => {
                self.requests.forget(fx);
                self.phase = Phase::Holding;
                fx.push(Effect::SetTimer {
                    timer: KEEPALIVE,
                    after_ns: self.cfg.keepalive_ns,
                });
                // No deadline: the session holds the lock until it ends.
                LockEvent::Acquired {
                    token: self.cfg.fence.then_some(Token(fence)),
                    valid_ns: Nanos::MAX,
                }
            }
            (Phase::Locking, PgMsg::LockResult { ok: false, .. } | PgMsg::Terminated { .. }) => {
                self.stop(fx);
                LockEvent::Busy
            }
            (Phase::KeepingAlive, PgMsg::Alive { .. }) => {
                self.requests.forget(fx);
                self.phase = Phase::Holding;
                LockEvent::Pending
            }
            // The first the application hears of it.
            (Phase::KeepingAlive, PgMsg::Terminated { .. }) => {
                self.stop(fx);
                LockEvent::Lost
            }
            // Unlocked, or the session had already ended: the lock is gone.
            (Phase::Unlocking, PgMsg::Unlocked { .. } | PgMsg::Terminated { .. }) => {
                self.stop(fx);
                LockEvent::Released
            }
            _ => LockEvent::Pending,
        }
    }

    pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
        match (timer, self.phase) {
            (CLIENT_REQUEST, _) => match self.requests.on_timeout(fx) {
                Timeout::Idle | Timeout::Retransmitted => LockEvent::Pending,
                Timeout::GaveUp(_) => match self.phase {
                    // An unanswered keepalive tells the application nothing.
                    Phase::KeepingAlive => {
                        self.phase = Phase::Holding;
                        LockEvent::Pending
                    }
                    Phase::Unlocking => {
                        self.stop(fx);
                        LockEvent::Released
                    }
                    _ => {
                        self.stop(fx);
                        LockEvent::Busy
                    }
                },
            },
            (KEEPALIVE, Phase::Holding | Phase::KeepingAlive) => {
                fx.push(Effect::SetTimer {
                    timer: KEEPALIVE,
                    after_ns: self.cfg.keepalive_ns,
                });
                if self.phase == Phase::Holding {
                    self.send(clocks, Phase::KeepingAlive, fx);
                }
                LockEvent::Pending
            }
            _ => LockEvent::Pending,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PgServerConfig {
    /// A session silent this long is ended (keepalive idle + interval × count).
    pub session_timeout_ns: Nanos,
    /// Draw `nextval('lock_fence')` with every granted lock.
    pub fence: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Session {
    silent_until_mono_ns: Nanos,
    /// The advisory lock it holds.
    holds: Option<Key>,
}

/// The PostgreSQL server: sessions, their advisory locks, one sequence.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PgServer {
    cfg: PgServerConfig,
    sessions: BTreeMap<u64, Session>,
    /// Sessions that ended: a connection is never resurrected, so a late
    /// copy of one of its requests is answered "terminated".
    ended: BTreeSet<u64>,
    /// key -> the session holding its advisory lock.
    locks: BTreeMap<Key, u64>,
    /// `lock_fence`'s last value.
    sequence: u64,
    check: SessionCheck,
    /// The durable record last persisted (see [`crate::protocol::record`]).
    persisted: Vec<u8>,
}

impl PgServer {
    pub fn new(cfg: PgServerConfig) -> Self {
        PgServer {
            cfg,
            sessions: BTreeMap::new(),
            ended: BTreeSet::new(),
            locks: BTreeMap::new(),
            sequence: 0,
            check: SessionCheck::default(),
            persisted: Vec::new(),
        }
    }

    /// The session holding `key`'s advisory lock (None: free): the lease
    /// the refinement check reads (it ends when the server ends the session).
    pub fn lock_holder(&self, key: Key) -> Option<u64> {
        self.locks.get(&key).copied()
    }

    /// What survives a restart: the sequence and which session ids were
    /// used (a restart ends every session; locks live only in sessions).
    fn record(&self) -> Vec<u8> {
        let mut w = RecordWriter::default();
        w.word(self.sequence);
        w.list(self.ended.iter(), |w, id| {
            w.word(*id);
        });
        w.list(self.sessions.keys(), |w, id| {
            w.word(*id);
        });
        w.finish()
    }

    fn recover(&mut self, record: &[u8]) {
        let mut r = RecordReader::new(record);
        self.sequence = r.word();
        for _ in 0..2 {
            r.list(|r| {
                self.ended.insert(r.word());
            });
        }
        assert!(r.is_done(), "a PostgreSQL record with trailing bytes");
        self.persisted = record.to_vec();
    }

    /// Ends `id`: its advisory lock goes with it.
    fn end(&mut self, id: u64) -> Option<Key> {
        let session = self.sessions.remove(&id)?;
        self.ended.insert(id);
        let key = session.holds?;
        if self.locks.get(&key) == Some(&id) {
            self.locks.remove(&key);
        }
        Some(key)
    }

    fn on_session_check(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let silent_until = |s: &Session| s.silent_until_mono_ns;
        for id in self.check.due(clocks, &self.sessions, silent_until) {
            if let Some(key) = self.end(id) {
                fx.push(Effect::Observe(Observation::LeaseExpired {
                    key,
                    owner: id,
                }));
            }
        }
        self.check.rearm(clocks, &self.sessions, silent_until, fx);
    }

    fn on_request(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        let Msg::PgAdvisory(msg) = msg else {
            return None;
        };
        let (req, key, session) = match msg {
            PgMsg::TryLock { req, key, session }
            | PgMsg::Keepalive { req, key, session }
            | PgMsg::Unlock { req, key, session } => (req, key, session),
            _ => return None,
        };
        let known = self.sessions.contains_key(&session);
        let opens = matches!(msg, PgMsg::TryLock { .. }) && !known;
        if self.ended.contains(&session) || !(known || opens) {
            return Some(Msg::PgAdvisory(PgMsg::Terminated { req, key, session }));
        }
        let silent_until_mono_ns = self.check.touch(clocks, self.cfg.session_timeout_ns, fx);
        let s = self.sessions.entry(session).or_insert(Session {
            silent_until_mono_ns,
            holds: None,
        });
        s.silent_until_mono_ns = silent_until_mono_ns;
        Some(Msg::PgAdvisory(match msg {
            PgMsg::TryLock { .. } => {
                let holder = self.locks.get(&key).copied();
                if holder.is_some_and(|h| h != session) {
                    // The application gives up and disconnects.
                    self.end(session);
                    PgMsg::LockResult {
                        req,
                        key,
                        ok: false,
                        fence: 0,
                    }
                } else {
                    if holder.is_none() {
                        self.locks.insert(key, session);
                        if self.cfg.fence {
                            self.sequence += 1;
                        }
                        if let Some(s) = self.sessions.get_mut(&session) {
                            s.holds = Some(key);
                        }
                    }
                    // A retransmitted try-lock of the holder answers again.
                    PgMsg::LockResult {
                        req,
                        key,
                        ok: true,
                        fence: if self.cfg.fence { self.sequence } else { 0 },
                    }
                }
            }
            PgMsg::Keepalive { .. } => PgMsg::Alive { req, key },
            PgMsg::Unlock { .. } => {
                let ok = self.locks.get(&key) == Some(&session);
                self.end(session);
                PgMsg::Unlocked { req, key, ok }
            }
            _ => unreachable!("only requests reach here"),
        }))
    }
}

impl Node for PgServer {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered: None } => {}
            Input::Start {
                recovered: Some(record),
            } => self.recover(record),
            Input::Message { from, msg } => {
                if let Some(reply) = self.on_request(clocks, msg, fx) {
                    fx.push(Effect::Send {
                        to: from,
                        msg: reply,
                    });
                }
            }
            Input::Timer { .. } => self.on_session_check(clocks, fx),
        }
        let record = self.record();
        persist_if_changed(&mut self.persisted, record, fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::systems::base::SESSION_CHECK;
    use crate::protocol::testkit::{at, sent};

    const T: Nanos = 1_000;

    fn server(fence: bool) -> PgServer {
        PgServer::new(PgServerConfig {
            session_timeout_ns: 10 * T,
            fence,
        })
    }

    fn ask(s: &mut PgServer, now: Nanos, msg: PgMsg) -> PgMsg {
        let mut fx = Vec::new();
        s.handle(
            at(now),
            Input::Message {
                from: NodeId(1),
                msg: Msg::PgAdvisory(msg),
            },
            &mut fx,
        );
        match sent(&fx).last() {
            Some((_, Msg::PgAdvisory(reply))) => *reply,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    fn try_lock(session: u64) -> PgMsg {
        PgMsg::TryLock {
            req: 1,
            key: Key(0),
            session,
        }
    }

    fn keepalive(session: u64) -> PgMsg {
        PgMsg::Keepalive {
            req: 2,
            key: Key(0),
            session,
        }
    }

    fn granted(reply: PgMsg) -> Option<u64> {
        match reply {
            PgMsg::LockResult { ok, fence, .. } => ok.then_some(fence),
            other => panic!("expected pg_lock_result, got {other:?}"),
        }
    }

    #[test]
    fn the_lock_is_the_sessions_until_it_falls_silent_then_the_next_try_wins_with_a_higher_token() {
        let mut s = server(true);
        assert_eq!(granted(ask(&mut s, 0, try_lock(11))), Some(1));
        assert_eq!(
            granted(ask(&mut s, T, try_lock(11))),
            Some(1),
            "retransmitted"
        );
        assert_eq!(granted(ask(&mut s, 2 * T, try_lock(22))), None);
        assert!(matches!(
            ask(&mut s, 5 * T, keepalive(11)),
            PgMsg::Alive { .. }
        ));
        let mut fx = Vec::new();
        s.handle(
            at(15 * T),
            Input::Timer {
                timer: SESSION_CHECK,
            },
            &mut fx,
        );
        assert!(matches!(
            ask(&mut s, 16 * T, keepalive(11)),
            PgMsg::Terminated { .. }
        ));
        assert!(matches!(
            ask(&mut s, 16 * T, try_lock(11)),
            PgMsg::Terminated { .. }
        ));
        assert_eq!(granted(ask(&mut s, 16 * T, try_lock(33))), Some(2));
    }

    #[test]
    fn without_the_fence_no_sequence_value_is_drawn() {
        let mut s = server(false);
        assert_eq!(granted(ask(&mut s, 0, try_lock(11))), Some(0));
    }

    #[test]
    fn a_restarted_server_keeps_its_sequence_but_no_session() {
        let mut s = server(true);
        assert_eq!(granted(ask(&mut s, 0, try_lock(11))), Some(1));
        let mut restarted = server(true);
        restarted.recover(&s.record());
        assert!(matches!(
            ask(&mut restarted, T, keepalive(11)),
            PgMsg::Terminated { .. }
        ));
        assert_eq!(granted(ask(&mut restarted, T, try_lock(22))), Some(2));
    }
}
