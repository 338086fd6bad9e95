//! ZooKeeper's lock recipe: a ZooKeeper server with sessions, ephemeral
//! sequential znodes and one-shot watches, and the client that runs the
//! recipe.
//!
//! Documented in the ZooKeeper manual, "ZooKeeper Recipes and Solutions" →
//! Locks (zookeeper.apache.org/doc/current/recipes.html), and implemented
//! by Apache Curator's `InterProcessMutex`:
//!
//! 1. `create(lock/lock-, EPHEMERAL_SEQUENTIAL)`;
//! 2. `getChildren(lock)` (no watch); the lowest sequence number owns;
//! 3. otherwise `exists(predecessor, watch = true)`: watch only the next
//!    lower node, and on its deletion go back to 2.
//!
//! Every acquisition runs in its own session (the acquisition nonce is the
//! session id). The client pings every third of the session timeout; the
//! server expires a session it has not heard from for the whole timeout
//! and deletes its ephemeral node — which is how a paused or partitioned
//! holder loses the lock without knowing it. The sequence number is the
//! fencing token (the article: "ZooKeeper's zxid or znode version").
//!
//! `herd`: the naive variant in which every waiter sets a watch on the lock
//! node's children (`getChildren(lock, watch = true)`) and re-lists on any
//! change — each create and delete wakes every waiter (the recipe page's
//! "herd effect"). Watch notifications are counted (`watch_notified`).
//!
//! The client only trusts a "you are lowest" answer that came back within
//! two thirds of the session timeout of asking (ZooKeeper's client read
//! timeout): the server saw the session alive when it answered, so no one
//! else can hold the lock before the session could have expired. An older
//! answer (the client was paused with the reply queued) is asked again.
//!
//! Watch notifications travel on the session's connection. ZooKeeper sends
//! them in order over TCP, and a client whose connection broke reconnects,
//! re-registers its watches and is told of every change it missed — a
//! notification is never silently lost while the session lives. Messages
//! here are datagrams that can be lost, so the session is modelled by its
//! effect: a waiter re-checks what it waits on (its predecessor, or the
//! children under `herd`) every ping period, as a reconnect would; the
//! server keeps one watch per (session, node), so a re-check never doubles
//! a notification. A lost session is noticed by the next request's
//! `session expired` answer, and the client starts a new acquisition.
//!
//! The server is durable (see [`crate::protocol::record`]): a crash of the simulated
//! server stands for the ensemble's, whose committed znodes and sessions
//! survive; session timeouts start over at the restart.

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
    /// ZooKeeper's messages (`Msg::Zk`). A session is the client's
    /// acquisition nonce; any request from it keeps it alive.
    pub enum ZkMsg {
        /// `create(lock/lock-, EPHEMERAL_SEQUENTIAL)`; idempotent per session
        /// (Curator's protected mode), so a retransmission makes no second node.
        Create = (21, "zk_create", Acquire) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex },
        Created = (22, "zk_created", Acquire) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex, seq: u64 => "seq" },
        /// `getChildren(lock, watch)` as seen by the owner of node `seq`.
        GetChildren = (23, "zk_get_children", Acquire) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex, seq: u64 => "seq", watch: bool => "watch" },
        /// The children as the recipe reads them: the lowest sequence, the
        /// highest one below `seq` (0: none), and whether `seq` still exists.
        Children = (24, "zk_children", Acquire) { req: ReqId => "req", key: Key => "", lowest: u64 => "lowest", pred: u64 => "pred", mine: bool => "mine" },
        /// `exists(lock/<seq>, watch = true)`.
        Exists = (25, "zk_exists", Acquire) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex, seq: u64 => "seq" },
        Stat = (26, "zk_stat", Acquire) { req: ReqId => "req", key: Key => "", seq: u64 => "seq", exists: bool => "exists" },
        /// A watch fired: node `seq` was deleted (a child of the lock node changed).
        Watch = (27, "zk_watch", Acquire) { key: Key => "", seq: u64 => "deleted" } => WatchNotified,
        /// Client heartbeat.
        Ping = (28, "zk_ping", Replica) { key: Key => "", session: u64 => "session" Hex },
        /// `delete(lock/<seq>)` and close the session: the release.
        Delete = (29, "zk_delete", Release) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex, seq: u64 => "seq" } => Release(session),
        Deleted = (30, "zk_deleted", Release) { req: ReqId => "req", key: Key => "" },
        /// The session expired on the server: its ephemeral nodes are gone.
        SessionExpired = (31, "zk_session_expired", Rejected) { req: ReqId => "req", key: Key => "", session: u64 => "session" Hex },
    }
}

/// ZooKeeper in the registry (`Msg::Zk`): one server, the recipe's client.
pub struct ZooKeeper;

impl SystemWire for ZooKeeper {
    type Msg = ZkMsg;
}

impl LockSystem for ZooKeeper {
    type ServerConfig = ZkServerConfig;
    type Server = ZkServer;
    type ClientConfig = ZkClientConfig;
    type Client = ZkClient;

    fn server_config(p: &ProtocolConfig, _first: NodeId, _index: u8) -> ZkServerConfig {
        ZkServerConfig {
            session_timeout_ns: p.lease_ttl_ns,
        }
    }

    fn server(cfg: ZkServerConfig) -> ZkServer {
        ZkServer::new(cfg)
    }

    fn client_config(p: &ProtocolConfig, _first: NodeId) -> ZkClientConfig {
        ZkClientConfig {
            server: NodeId::COORD_GROUP,
            session_timeout_ns: p.lease_ttl_ns,
            herd: p.herd,
        }
    }

    fn client(cfg: ZkClientConfig, base: ClientBase) -> ZkClient {
        ZkClient::new(cfg, base)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ZkClientConfig {
    pub server: NodeId,
    pub session_timeout_ns: Nanos,
    /// Every waiter watches the lock node's children (the herd effect).
    pub herd: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    Idle,
    Creating,
    Listing,
    Checking,
    Waiting,
    Holding,
    Deleting,
}

const PING: TimerId = CLIENT_TIMER_A;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ZkClient {
    cfg: ZkClientConfig,
    base: ClientBase,
    requests: Requests,
    phase: Phase,
    session: u64,
    seq: u64,
    /// The predecessor being waited on (0: none, or `herd`).
    pred: u64,
    /// A watch fired while a request was in flight: list again before waiting.
    changed: bool,
}

impl ZkClient {
    pub fn new(cfg: ZkClientConfig, base: ClientBase) -> Self {
        assert!(cfg.session_timeout_ns >= 3, "a session needs a timeout");
        ZkClient {
            cfg,
            base,
            requests: Requests::new(base),
            phase: Phase::Idle,
            session: 0,
            seq: 0,
            pred: 0,
            changed: false,
        }
    }

    fn ping_every_ns(&self) -> Nanos {
        self.cfg.session_timeout_ns / 3
    }

    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        self.session = owner;
        self.seq = 0;
        self.changed = false;
        self.phase = Phase::Creating;
        let req = self.requests.take_req();
        let msg = Msg::Zk(ZkMsg::Create {
            req,
            key: self.base.key,
            session: owner,
        });
        self.requests.send(clocks, self.cfg.server, msg, fx);
        fx.push(Effect::SetTimer {
            timer: PING,
            after_ns: self.ping_every_ns(),
        });
    }

    pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.phase = Phase::Deleting;
        let req = self.requests.take_req();
        let msg = Msg::Zk(ZkMsg::Delete {
            req,
            key: self.base.key,
            session: self.session,
            seq: self.seq,
        });
        self.requests.send(clocks, self.cfg.server, msg, fx);
    }

    fn list(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.phase = Phase::Listing;
        self.changed = false;
        let req = self.requests.take_req();
        let msg = Msg::Zk(ZkMsg::GetChildren {
            req,
            key: self.base.key,
            session: self.session,
            seq: self.seq,
            watch: self.cfg.herd,
        });
        self.requests.send(clocks, self.cfg.server, msg, fx);
    }

    /// The session is over for us (closed, expired or given up).
    fn end_session(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Idle;
        self.requests.forget(fx);
        fx.push(Effect::CancelTimer { timer: PING });
    }

    /// `exists(predecessor, watch = true)`.
    fn check_predecessor(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.phase = Phase::Checking;
        let req = self.requests.take_req();
        let msg = Msg::Zk(ZkMsg::Exists {
            req,
            key: self.base.key,
            session: self.session,
            seq: self.pred,
        });
        self.requests.send(clocks, self.cfg.server, msg, fx);
    }

    fn wait(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        if self.changed {
            self.list(clocks, fx);
        } else {
            self.phase = Phase::Waiting;
        }
    }

    pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        match (self.phase, msg) {
            (Phase::Creating, Msg::Zk(ZkMsg::Created { req, seq, .. }))
                if self.requests.answers(req) =>
            {
                self.requests.forget(fx);
                self.seq = seq;
                self.list(clocks, fx);
            }
            (
                Phase::Listing,
                Msg::Zk(ZkMsg::Children {
                    req,
                    lowest,
                    pred,
                    mine,
                    ..
                }),
            ) => {
                let Some(sent) = self.requests.answer(req, fx) else {
                    return LockEvent::Pending;
                };
                if !mine {
                    // Our node is gone: the session expired under us.
                    self.end_session(fx);
                    return LockEvent::Busy;
                }
                if lowest == self.seq {
                    let age_ns = clocks.mono_ns.saturating_sub(sent.first_sent_mono_ns);
                    if age_ns >= self.cfg.session_timeout_ns / 3 * 2 {
                        self.list(clocks, fx); // too old to trust: ask again
                        return LockEvent::Pending;
                    }
                    self.phase = Phase::Holding;
                    return LockEvent::Acquired {
                        token: Some(Token(self.seq)),
                        valid_ns: self.cfg.session_timeout_ns,
                    };
                }
                if self.cfg.herd {
                    self.wait(clocks, fx); // the children watch is set
                } else {
                    self.pred = pred;
                    self.check_predecessor(clocks, fx);
                }
            }
            (Phase::Checking, Msg::Zk(ZkMsg::Stat { req, exists, .. }))
                if self.requests.answers(req) =>
            {
                self.requests.forget(fx);
                if exists {
                    self.wait(clocks, fx);
                } else {
                    self.list(clocks, fx);
                }
            }
            (Phase::Waiting, Msg::Zk(ZkMsg::Watch { .. })) => self.list(clocks, fx),
            (Phase::Listing | Phase::Checking, Msg::Zk(ZkMsg::Watch { .. })) => self.changed = true,
            (Phase::Deleting, Msg::Zk(ZkMsg::Deleted { req, .. }))
                if self.requests.answers(req) =>
            {
                self.end_session(fx);
                return LockEvent::Released;
            }
            (_, Msg::Zk(ZkMsg::SessionExpired { req, .. })) if self.requests.answers(req) => {
                let released = self.phase == Phase::Deleting;
                self.end_session(fx);
                return if released {
                    LockEvent::Released
                } else {
                    LockEvent::Busy
                };
            }
            _ => {}
        }
        LockEvent::Pending
    }

    pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
        match timer {
            CLIENT_REQUEST => match self.requests.on_timeout(fx) {
                Timeout::Idle | Timeout::Retransmitted => LockEvent::Pending,
                Timeout::GaveUp(_) => {
                    // Stop pinging: the server expires the session and its node.
                    let released = self.phase == Phase::Deleting;
                    self.end_session(fx);
                    if released {
                        LockEvent::Released
                    } else {
                        LockEvent::Busy
                    }
                }
            },
            PING if self.phase != Phase::Idle => {
                fx.push(Effect::Send {
                    to: self.cfg.server,
                    msg: Msg::Zk(ZkMsg::Ping {
                        key: self.base.key,
                        session: self.session,
                    }),
                });
                fx.push(Effect::SetTimer {
                    timer: PING,
                    after_ns: self.ping_every_ns(),
                });
                // The session's re-check: a notification lost on the way
                // is noticed within one ping period (see the module doc).
                if self.phase == Phase::Waiting {
                    if self.cfg.herd {
                        self.list(clocks, fx);
                    } else {
                        self.check_predecessor(clocks, fx);
                    }
                }
                LockEvent::Pending
            }
            _ => LockEvent::Pending,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ZkServerConfig {
    pub session_timeout_ns: Nanos,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Session {
    expires_mono_ns: Nanos,
    /// Its ephemeral node, if it created one.
    node: Option<(Key, u64)>,
}

/// A one-shot watch: on node `seq` (data watch) or, with `seq == 0`, on the
/// children of `key`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Watch {
    client: NodeId,
    session: u64,
    key: Key,
    seq: u64,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ZkServer {
    cfg: ZkServerConfig,
    /// The lock node's cversion: next sequence number per key.
    last_seq: BTreeMap<Key, u64>,
    /// (key, seq) -> owning session.
    nodes: BTreeMap<(Key, u64), u64>,
    sessions: BTreeMap<u64, Session>,
    expired: BTreeSet<u64>,
    watches: Vec<Watch>,
    check: SessionCheck,
    /// The durable record last persisted (see [`crate::protocol::record`]).
    persisted: Vec<u8>,
}

impl ZkServer {
    pub fn new(cfg: ZkServerConfig) -> Self {
        ZkServer {
            cfg,
            last_seq: BTreeMap::new(),
            nodes: BTreeMap::new(),
            sessions: BTreeMap::new(),
            expired: BTreeSet::new(),
            watches: Vec::new(),
            check: SessionCheck::default(),
            persisted: Vec::new(),
        }
    }

    /// What the ensemble keeps across a server crash: the znodes and
    /// sequence counters, the sessions (not their deadlines), the expired
    /// session ids and the watches (a client re-registers its watches on
    /// the server it reconnects to; that is modelled as them surviving).
    fn record(&self) -> Vec<u8> {
        let mut w = RecordWriter::default();
        w.list(self.last_seq.iter(), |w, (k, seq)| {
            w.word(k.0 as u64).word(*seq);
        });
        w.list(self.nodes.iter(), |w, ((k, seq), session)| {
            w.word(k.0 as u64).word(*seq).word(*session);
        });
        w.list(self.sessions.iter(), |w, (id, s)| {
            let (key, seq) = s.node.map_or((u16::MAX, 0), |(k, seq)| (k.0, seq));
            w.word(*id).word(key as u64).word(seq);
        });
        w.list(self.expired.iter(), |w, id| {
            w.word(*id);
        });
        w.list(self.watches.iter(), |w, watch| {
            w.word(watch.client.0 as u64)
                .word(watch.session)
                .word(watch.key.0 as u64)
                .word(watch.seq);
        });
        w.finish()
    }

    /// Rebuilds the state from `record`; every session gets a fresh timeout
    /// from now (as ZooKeeper does when a new leader takes over).
    fn recover(&mut self, clocks: Clocks, record: &[u8], fx: &mut Vec<Effect>) {
        let mut r = RecordReader::new(record);
        let key = |w: u64| Key(w as u16);
        r.list(|r| {
            let (k, seq) = (key(r.word()), r.word());
            self.last_seq.insert(k, seq);
        });
        r.list(|r| {
            let (k, seq, session) = (key(r.word()), r.word(), r.word());
            self.nodes.insert((k, seq), session);
        });
        let expires_mono_ns = clocks.mono_ns.saturating_add(self.cfg.session_timeout_ns);
        r.list(|r| {
            let (id, k, seq) = (r.word(), r.word(), r.word());
            let node = (k != u16::MAX as u64).then_some((key(k), seq));
            self.sessions.insert(
                id,
                Session {
                    expires_mono_ns,
                    node,
                },
            );
        });
        r.list(|r| {
            self.expired.insert(r.word());
        });
        r.list(|r| {
            let (client, session, k, seq) = (r.word(), r.word(), r.word(), r.word());
            self.watches.push(Watch {
                client: NodeId(client as u16),
                session,
                key: key(k),
                seq,
            });
        });
        assert!(r.is_done(), "a ZooKeeper record with trailing bytes");
        self.persisted = record.to_vec();
        if !self.sessions.is_empty() {
            self.check.arm(clocks, expires_mono_ns, fx);
        }
    }

    /// The sequence numbers of `key`'s children (the live ephemeral
    /// nodes), lowest first: what the refinement check reads as the model's
    /// nodes.
    pub fn znodes(&self, key: Key) -> impl Iterator<Item = u64> + '_ {
        self.nodes
            .range((key, 1)..=(key, u64::MAX))
            .map(|(&(_, seq), _)| seq)
    }

    /// The last sequence number `key` gave a child (0: none yet): the
    /// model's node counter.
    pub fn last_seq(&self, key: Key) -> u64 {
        self.last_seq.get(&key).copied().unwrap_or(0)
    }

    /// Any request from a session keeps it alive. Returns false if the
    /// session already expired.
    fn touch(&mut self, clocks: Clocks, session: u64, fx: &mut Vec<Effect>) -> bool {
        if self.expired.contains(&session) {
            return false;
        }
        let expires_mono_ns = self.check.touch(clocks, self.cfg.session_timeout_ns, fx);
        self.sessions
            .entry(session)
            .and_modify(|s| s.expires_mono_ns = expires_mono_ns)
            .or_insert(Session {
                expires_mono_ns,
                node: None,
            });
        true
    }

    fn on_session_check(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let expires = |s: &Session| s.expires_mono_ns;
        for id in self.check.due(clocks, &self.sessions, expires) {
            let s = self.sessions.remove(&id).expect("due session exists");
            self.expired.insert(id);
            self.watches.retain(|w| w.session != id);
            if let Some((key, seq)) = s.node {
                fx.push(Effect::Observe(Observation::LeaseExpired {
                    key,
                    owner: id,
                }));
                self.delete_node(key, seq, fx);
            }
        }
        self.check.rearm(clocks, &self.sessions, expires, fx);
    }

    /// Sets `w` unless the session already watches that node: a client's
    /// re-check registers nothing twice.
    fn watch(&mut self, w: Watch) {
        if !self.watches.contains(&w) {
            self.watches.push(w);
        }
    }

    /// Fires (and removes) every watch the change of `(key, seq)` triggers.
    fn fire(&mut self, key: Key, seq: u64, fx: &mut Vec<Effect>) {
        let mut kept = Vec::with_capacity(self.watches.len());
        for w in self.watches.drain(..) {
            if w.key == key && (w.seq == seq || w.seq == 0) {
                fx.push(Effect::Send {
                    to: w.client,
                    msg: Msg::Zk(ZkMsg::Watch { key, seq }),
                });
            } else {
                kept.push(w);
            }
        }
        self.watches = kept;
    }

    fn delete_node(&mut self, key: Key, seq: u64, fx: &mut Vec<Effect>) {
        if self.nodes.remove(&(key, seq)).is_some() {
            self.fire(key, seq, fx);
        }
    }

    fn on_request(&mut self, clocks: Clocks, from: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        let (req, key, session) = match msg {
            Msg::Zk(ZkMsg::Create { req, key, session })
            | Msg::Zk(ZkMsg::GetChildren {
                req, key, session, ..
            })
            | Msg::Zk(ZkMsg::Exists {
                req, key, session, ..
            })
            | Msg::Zk(ZkMsg::Delete {
                req, key, session, ..
            }) => (req, key, session),
            Msg::Zk(ZkMsg::Ping { session, .. }) => {
                self.touch(clocks, session, fx);
                return;
            }
            _ => return,
        };
        if !self.touch(clocks, session, fx) {
            fx.push(Effect::Send {
                to: from,
                msg: Msg::Zk(ZkMsg::SessionExpired { req, key, session }),
            });
            return;
        }
        let reply = match msg {
            Msg::Zk(ZkMsg::Create { .. }) => Msg::Zk(ZkMsg::Created {
                req,
                key,
                session,
                seq: self.create(key, session, fx),
            }),
            Msg::Zk(ZkMsg::GetChildren { seq, watch, .. }) => {
                self.children(from, (req, key, session), seq, watch)
            }
            Msg::Zk(ZkMsg::Exists { seq, .. }) => {
                let exists = self.nodes.contains_key(&(key, seq));
                if exists {
                    self.watch(Watch {
                        client: from,
                        session,
                        key,
                        seq,
                    });
                }
                Msg::Zk(ZkMsg::Stat {
                    req,
                    key,
                    seq,
                    exists,
                })
            }
            Msg::Zk(ZkMsg::Delete { seq, .. }) => {
                if self.nodes.get(&(key, seq)) == Some(&session) {
                    self.delete_node(key, seq, fx);
                }
                // Closing the session: its watches go with it, and a late
                // copy of one of its requests cannot bring it back (a closed
                // session id answers `session expired`, as in ZooKeeper).
                self.sessions.remove(&session);
                self.expired.insert(session);
                self.watches.retain(|w| w.session != session);
                Msg::Zk(ZkMsg::Deleted { req, key })
            }
            _ => unreachable!("only requests reach here"),
        };
        fx.push(Effect::Send {
            to: from,
            msg: reply,
        });
    }

    /// `session`'s ephemeral sequential node under `key`: its existing
    /// one (a retried create), or the next in sequence, which fires the
    /// watches on `key`.
    fn create(&mut self, key: Key, session: u64, fx: &mut Vec<Effect>) -> u64 {
        if let Some((_, seq)) = self.sessions[&session].node {
            return seq;
        }
        let last = self.last_seq.entry(key).or_insert(0);
        *last += 1;
        let seq = *last;
        self.nodes.insert((key, seq), session);
        if let Some(s) = self.sessions.get_mut(&session) {
            s.node = Some((key, seq));
        }
        self.fire(key, seq, fx);
        seq
    }

    /// The children of `key` as node `seq` sees them (the lowest, its
    /// predecessor, whether its own is there), watching `key` if asked.
    fn children(
        &mut self,
        from: NodeId,
        (req, key, session): (ReqId, Key, u64),
        seq: u64,
        watch: bool,
    ) -> Msg {
        let mut children = self.nodes.range((key, 1)..=(key, u64::MAX));
        let lowest = children.clone().next().map_or(0, |(&(_, s), _)| s);
        let pred = children
            .rfind(|(&(_, s), _)| s < seq)
            .map_or(0, |(&(_, s), _)| s);
        if watch {
            self.watch(Watch {
                client: from,
                session,
                key,
                seq: 0,
            });
        }
        Msg::Zk(ZkMsg::Children {
            req,
            key,
            lowest,
            pred,
            mine: self.nodes.contains_key(&(key, seq)),
        })
    }
}

impl Node for ZkServer {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered: None } => {}
            Input::Start {
                recovered: Some(record),
            } => self.recover(clocks, record, fx),
            Input::Message { from, msg } => self.on_request(clocks, from, msg, fx),
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

    fn create(s: &mut ZkServer, now: Nanos, client: u16, session: u64) -> u64 {
        let mut fx = Vec::new();
        let msg = Msg::Zk(ZkMsg::Create {
            req: 1,
            key: Key(0),
            session,
        });
        s.handle(
            at(now),
            Input::Message {
                from: NodeId(client),
                msg,
            },
            &mut fx,
        );
        match sent(&fx).last() {
            Some((_, Msg::Zk(ZkMsg::Created { seq, .. }))) => *seq,
            other => panic!("expected zk_created, got {other:?}"),
        }
    }

    #[test]
    fn sequence_numbers_grow_and_a_retransmitted_create_makes_no_second_node() {
        let mut s = ZkServer::new(ZkServerConfig {
            session_timeout_ns: 10 * T,
        });
        assert_eq!(create(&mut s, 0, 1, 11), 1);
        assert_eq!(create(&mut s, 0, 2, 22), 2);
        assert_eq!(create(&mut s, 1, 1, 11), 1, "same session, same node");
    }

    #[test]
    fn an_expired_session_loses_its_node_and_wakes_only_its_successor() {
        let mut s = ZkServer::new(ZkServerConfig {
            session_timeout_ns: 10 * T,
        });
        create(&mut s, 0, 1, 11);
        create(&mut s, 0, 2, 22);
        create(&mut s, 0, 3, 33);
        let mut fx = Vec::new();
        for (client, session, pred) in [(2u16, 22u64, 1u64), (3, 33, 2)] {
            let msg = Msg::Zk(ZkMsg::Exists {
                req: 2,
                key: Key(0),
                session,
                seq: pred,
            });
            s.handle(
                at(T),
                Input::Message {
                    from: NodeId(client),
                    msg,
                },
                &mut fx,
            );
            // The waiters keep pinging; session 11 does not.
            s.handle(
                at(8 * T),
                Input::Message {
                    from: NodeId(client),
                    msg: Msg::Zk(ZkMsg::Ping {
                        key: Key(0),
                        session,
                    }),
                },
                &mut fx,
            );
        }
        fx.clear();
        s.handle(
            at(10 * T),
            Input::Timer {
                timer: SESSION_CHECK,
            },
            &mut fx,
        );
        let watches: Vec<NodeId> = sent(&fx)
            .into_iter()
            .filter(|(_, m)| matches!(m, Msg::Zk(ZkMsg::Watch { .. })))
            .map(|(to, _)| to)
            .collect();
        assert_eq!(watches, vec![NodeId(2)], "only the successor is notified");
        assert!(fx.iter().any(|e| matches!(
            e,
            Effect::Observe(Observation::LeaseExpired { owner: 11, .. })
        )));
    }

    #[test]
    fn a_restarted_zookeeper_server_keeps_its_znodes_sessions_and_sequence() {
        let cfg = ZkServerConfig {
            session_timeout_ns: 10 * T,
        };
        let mut s = ZkServer::new(cfg);
        assert_eq!(create(&mut s, 0, 1, 11), 1);
        let record = s.record();
        let mut fx = Vec::new();
        let mut restarted = ZkServer::new(cfg);
        restarted.handle(
            at(5 * T),
            Input::Start {
                recovered: Some(&record),
            },
            &mut fx,
        );
        assert_eq!(restarted.record(), record, "the record round-trips");
        assert_eq!(
            create(&mut restarted, 5 * T, 2, 22),
            2,
            "the sequence continues: no second znode 1"
        );
        // Session 11's timeout starts over at the restart: it expires at 15 T.
        fx.clear();
        restarted.handle(
            at(15 * T),
            Input::Timer {
                timer: SESSION_CHECK,
            },
            &mut fx,
        );
        assert!(fx.iter().any(|e| matches!(
            e,
            Effect::Observe(Observation::LeaseExpired { owner: 11, .. })
        )));
    }

    #[test]
    fn a_waiting_client_rechecks_its_predecessor_every_ping_so_a_lost_notification_is_noticed() {
        let server = NodeId(9);
        let mut c = ZkClient::new(
            ZkClientConfig {
                server,
                session_timeout_ns: 30 * T,
                herd: false,
            },
            ClientBase {
                key: Key(0),
                request_timeout_ns: 5 * T,
                max_retries: 2,
                incarnation: 0,
            },
        );
        let mut fx = Vec::new();
        c.acquire(at(0), 7, &mut fx);
        let answer = |c: &mut ZkClient, fx: &mut Vec<Effect>, msg| {
            fx.clear();
            c.on_message(at(T), msg, fx);
            sent(fx)
        };
        let req = |fx: &Vec<Effect>| match sent(fx).last() {
            Some((_, m)) => m.words()[0] as u32,
            None => panic!("nothing sent"),
        };
        let r = req(&fx);
        answer(
            &mut c,
            &mut fx,
            Msg::Zk(ZkMsg::Created {
                req: r,
                key: Key(0),
                session: 7,
                seq: 2,
            }),
        );
        let r = req(&fx);
        let check = answer(
            &mut c,
            &mut fx,
            Msg::Zk(ZkMsg::Children {
                req: r,
                key: Key(0),
                lowest: 1,
                pred: 1,
                mine: true,
            }),
        );
        assert!(matches!(
            check[..],
            [(_, Msg::Zk(ZkMsg::Exists { seq: 1, .. }))]
        ));
        let r = req(&fx);
        answer(
            &mut c,
            &mut fx,
            Msg::Zk(ZkMsg::Stat {
                req: r,
                key: Key(0),
                seq: 1,
                exists: true,
            }),
        );
        assert_eq!(c.phase, Phase::Waiting);
        // The predecessor's deletion notice is lost; the next ping re-checks.
        fx.clear();
        c.on_timer(at(11 * T), PING, &mut fx);
        let again = sent(&fx);
        assert!(
            matches!(
                again[..],
                [
                    (_, Msg::Zk(ZkMsg::Ping { .. })),
                    (_, Msg::Zk(ZkMsg::Exists { seq: 1, .. }))
                ]
            ),
            "{again:?}"
        );
        let r = req(&fx);
        let relist = answer(
            &mut c,
            &mut fx,
            Msg::Zk(ZkMsg::Stat {
                req: r,
                key: Key(0),
                seq: 1,
                exists: false,
            }),
        );
        assert!(matches!(
            relist[..],
            [(_, Msg::Zk(ZkMsg::GetChildren { .. }))]
        ));
    }

    #[test]
    fn a_closed_session_is_not_revived_by_a_late_copy_of_its_create() {
        let mut s = ZkServer::new(ZkServerConfig {
            session_timeout_ns: 10 * T,
        });
        assert_eq!(create(&mut s, 0, 1, 11), 1);
        let mut fx = Vec::new();
        let delete = Msg::Zk(ZkMsg::Delete {
            req: 2,
            key: Key(0),
            session: 11,
            seq: 1,
        });
        s.handle(
            at(T),
            Input::Message {
                from: NodeId(1),
                msg: delete,
            },
            &mut fx,
        );
        fx.clear();
        let late = Msg::Zk(ZkMsg::Create {
            req: 1,
            key: Key(0),
            session: 11,
        });
        s.handle(
            at(2 * T),
            Input::Message {
                from: NodeId(1),
                msg: late,
            },
            &mut fx,
        );
        assert!(matches!(
            sent(&fx)[..],
            [(_, Msg::Zk(ZkMsg::SessionExpired { .. }))]
        ));
        assert!(
            s.nodes.is_empty(),
            "no orphan znode that no one pings or deletes"
        );
    }
}
