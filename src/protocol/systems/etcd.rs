//! etcd's lock: an etcd server with a global revision counter, leases and
//! watches, and the client that runs the clientv3 `concurrency.Mutex`.
//!
//! The Mutex (etcd `clientv3/concurrency/mutex.go`, `key.go`), run in a
//! `concurrency.Session` whose lease is kept alive by the client:
//!
//! 1. `LeaseGrant(TTL)` — the session;
//! 2. `Lock`: one transaction — if `prefix/<leaseID>` does not exist, put it
//!    bound to the lease — returning its create revision and the key under
//!    the prefix with the lowest create revision; if that is the own key,
//!    the lock is held;
//! 3. otherwise `waitDeletes`: get the key with the highest create revision
//!    below the own one, watch it (from the revision of that read) until it
//!    is deleted, and repeat until no lower key is left.
//!
//! Lease expiry on the server deletes the keys bound to the lease and
//! notifies their watchers. The create revision is the fencing token
//! Jepsen's etcd 3.4.3 analysis recommends ("use the revision as a fencing
//! token", jepsen.io/analyses/etcd-3.4.3).
//!
//! The bug Jepsen found there (locks not mutually exclusive): `waitDeletes`
//! only waits for the *lower* keys to go; nothing in it looks at the own
//! key. A waiter paused past its lease loses its key (the server expires
//! the lease), the lower keys go, and `Lock` still returns success — while
//! a later client, whose key is now the lowest, holds the lock too. etcd
//! PR #11408 ("concurrency: make lock more reliable") re-reads the own key
//! after the wait and returns `ErrSessionExpired` if it is gone. `recheck`
//! selects the fixed Mutex (`etcd-mutex`); without it the 3.4.3 one
//! (`etcd-mutex-no-recheck`).
//!
//! Modelling decisions:
//! - Every acquisition is a new session: the lease ID is the acquisition
//!   nonce (`LeaseGrant` accepts a client-chosen ID), released by
//!   `LeaseRevoke`, which deletes the key — `Unlock` plus `Session.Close`
//!   in one request.
//! - `waitDeletes`' read and its watch are one request: a watch that starts
//!   at the read's revision sees every deletion after the read, so the two
//!   steps behave as one atomic step.
//! - A watch rides a gRPC stream that clientv3 re-creates from its revision
//!   when it breaks, so no delete event is lost for good. Here an event is
//!   one message the network can drop; a waiter that has heard nothing for
//!   a request timeout reads and watches again, which is what the resumed
//!   stream would deliver.
//! - The application does not watch `Session.Done()` (etcd's own Mutex
//!   example does not): keep-alive answers are not awaited and a lost lease
//!   is never reported to the worker. Keep-alives go every third of the TTL
//!   (clientv3's period) unless `renew_every_ms` says otherwise.
//! - Revisions start at 1 as in etcd; puts, deletions and lease-expiry
//!   deletions each take the next one.
//! - No age check on answers (ZooKeeper's client here has one): clientv3
//!   acts on a reply whenever it arrives. A pause between the server's
//!   "you are first" (or, with the re-check, "your key is there") and the
//!   client acting on it still lets a client decide after a newer holder,
//!   with an older revision — `token_order`, harmless only behind the fence.
//!   Under random faults the re-check makes that rare, not impossible
//!   (tests/it/protocol/etcd.rs).
//! - The server is durable (see [`crate::protocol::record`]): a crash stands for the
//!   cluster's, whose raft log keeps every key and lease; lease TTLs start
//!   over at the restart, as under a new leader.
//! - Not modelled: compaction, auth.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::catalogue::{ProtocolConfig, ProtocolKind};
use crate::protocol::msg::{Key, Msg, ReqId, Token};
use crate::protocol::node::{Clocks, Effect, Input, Nanos, Node, NodeId, Observation, TimerId};
use crate::protocol::record::{persist_if_changed, RecordReader, RecordWriter};
use crate::protocol::systems::base::{
    ClientBase, LockEvent, LockSystem, Requests, Timeout, CLIENT_REQUEST, CLIENT_TIMER_A,
    CLIENT_TIMER_B,
};
use crate::protocol::systems::SystemWire;

crate::protocol::msg::system_msgs! {
    /// etcd's messages (`Msg::Etcd`). A lease id is the client's acquisition
    /// nonce (`LeaseGrant` lets the client choose the ID); a revision is the
    /// store's global revision counter.
    pub enum EtcdMsg {
        /// `LeaseGrant(TTL, ID)`: the lock session's lease.
        LeaseGrant = (70, "etcd_lease_grant", Acquire) { req: ReqId => "req", key: Key => "", lease: u64 => "lease" Hex, ttl_ns: u64 => "ttl_ns" },
        /// `ttl_ns` 0: refused (the ID belonged to a lease that is gone).
        LeaseGranted = (71, "etcd_lease_granted", Acquire) { req: ReqId => "req", key: Key => "", lease: u64 => "lease" Hex, ttl_ns: u64 => "ttl_ns" },
        /// The Mutex's Lock transaction: if `prefix/<lease>` does not exist, put
        /// it bound to the lease; read its create revision and the lowest create
        /// revision under the prefix (the owner).
        LockTxn = (72, "etcd_lock_txn", Acquire) { req: ReqId => "req", key: Key => "", lease: u64 => "lease" Hex },
        /// `my_rev` 0: the put failed, the lease was not found.
        TxnResult = (73, "etcd_txn_result", Acquire) { req: ReqId => "req", key: Key => "", my_rev: u64 => "my_rev", owner_rev: u64 => "owner_rev" },
        /// waitDeletes: `Get(prefix, WithLastCreate, WithMaxCreateRev(my_rev - 1))`
        /// and a watch, from that read's revision, on the key it returns.
        WaitDeletes = (74, "etcd_wait_deletes", Acquire) { req: ReqId => "req", key: Key => "", my_rev: u64 => "my_rev" },
        /// The create revision of the key just before mine (0: none left —
        /// waitDeletes returns).
        Predecessor = (75, "etcd_predecessor", Acquire) { req: ReqId => "req", key: Key => "", pred_rev: u64 => "pred_rev" },
        /// A watch event: the key created at `rev` was deleted.
        DeleteEvent = (76, "etcd_delete_event", Acquire) { key: Key => "", rev: u64 => "deleted_rev" } => WatchNotified,
        /// The re-check of etcd PR #11408: `Get(prefix/<lease>)`.
        GetOwn = (77, "etcd_get_own", Acquire) { req: ReqId => "req", key: Key => "", lease: u64 => "lease" Hex },
        /// The own key's create revision (0: it is gone).
        OwnKey = (78, "etcd_own_key", Acquire) { req: ReqId => "req", key: Key => "", create_rev: u64 => "create_rev" },
        /// `LeaseKeepAlive`.
        KeepAlive = (79, "etcd_keepalive", Replica) { key: Key => "", lease: u64 => "lease" Hex },
        /// `LeaseRevoke`, deleting the keys bound to the lease: Unlock and
        /// Session.Close in one request.
        Revoke = (80, "etcd_revoke", Release) { req: ReqId => "req", key: Key => "", lease: u64 => "lease" Hex } => Release(lease),
        Revoked = (81, "etcd_revoked", Release) { req: ReqId => "req", key: Key => "" },
    }
}

/// etcd in the registry (`Msg::Etcd`): one server, the Mutex client (with
/// or without the re-check, by protocol).
pub struct Etcd;

impl SystemWire for Etcd {
    type Msg = EtcdMsg;
}

impl LockSystem for Etcd {
    type ServerConfig = ();
    type Server = EtcdServer;
    type ClientConfig = EtcdClientConfig;
    type Client = EtcdClient;

    fn server_config(_p: &ProtocolConfig, _first: NodeId, _index: u8) {}

    fn server(_cfg: ()) -> EtcdServer {
        EtcdServer::new()
    }

    fn client_config(p: &ProtocolConfig, _first: NodeId) -> EtcdClientConfig {
        EtcdClientConfig {
            server: NodeId::COORD_GROUP,
            lease_ttl_ns: p.lease_ttl_ns,
            // clientv3 keeps a lease alive every third of its TTL.
            keepalive_every_ns: p.renew_every_ns.unwrap_or(p.lease_ttl_ns / 3).max(1),
            recheck: p.kind == ProtocolKind::EtcdMutex,
        }
    }

    fn client(cfg: EtcdClientConfig, base: ClientBase) -> EtcdClient {
        EtcdClient::new(cfg, base)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EtcdClientConfig {
    pub server: NodeId,
    pub lease_ttl_ns: Nanos,
    pub keepalive_every_ns: Nanos,
    /// etcd PR #11408: after waiting, re-read the own key before returning.
    pub recheck: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    Idle,
    Granting,
    Locking,
    /// A waitDeletes read is in flight.
    Querying,
    /// Waiting for the delete event of the predecessor `waiting_on`.
    Watching,
    Rechecking,
    Holding,
    Revoking,
}

const KEEPALIVE: TimerId = CLIENT_TIMER_A;
/// While watching: resume the watch (read again and re-register it).
const WATCH_RESUME: TimerId = CLIENT_TIMER_B;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct EtcdClient {
    cfg: EtcdClientConfig,
    base: ClientBase,
    requests: Requests,
    phase: Phase,
    lease: u64,
    /// Create revision of the own key: the fencing token.
    my_rev: u64,
    waiting_on: u64,
    /// Delete events that arrived while a waitDeletes read was in flight
    /// (the network does not keep order: an event can overtake the reply).
    deleted_meanwhile: BTreeSet<u64>,
}

impl EtcdClient {
    pub fn new(cfg: EtcdClientConfig, base: ClientBase) -> Self {
        assert!(cfg.lease_ttl_ns > 0, "a lease needs a TTL");
        assert!(cfg.keepalive_every_ns > 0, "keep-alives need a period");
        EtcdClient {
            cfg,
            base,
            requests: Requests::new(base),
            phase: Phase::Idle,
            lease: 0,
            my_rev: 0,
            waiting_on: 0,
            deleted_meanwhile: BTreeSet::new(),
        }
    }

    fn send(&mut self, clocks: Clocks, phase: Phase, msg: Msg, fx: &mut Vec<Effect>) {
        self.phase = phase;
        self.requests.send(clocks, self.cfg.server, msg, fx);
    }

    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        self.lease = owner;
        self.my_rev = 0;
        self.waiting_on = 0;
        self.deleted_meanwhile.clear();
        let msg = Msg::Etcd(EtcdMsg::LeaseGrant {
            req: self.requests.take_req(),
            key: self.base.key,
            lease: owner,
            ttl_ns: self.cfg.lease_ttl_ns,
        });
        self.send(clocks, Phase::Granting, msg, fx);
    }

    pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let msg = Msg::Etcd(EtcdMsg::Revoke {
            req: self.requests.take_req(),
            key: self.base.key,
            lease: self.lease,
        });
        self.send(clocks, Phase::Revoking, msg, fx);
    }

    fn wait_deletes(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.deleted_meanwhile.clear();
        let msg = Msg::Etcd(EtcdMsg::WaitDeletes {
            req: self.requests.take_req(),
            key: self.base.key,
            my_rev: self.my_rev,
        });
        self.send(clocks, Phase::Querying, msg, fx);
    }

    fn acquired(&mut self) -> LockEvent {
        debug_assert!(self.my_rev > 0, "a held lock has a key");
        self.phase = Phase::Holding;
        LockEvent::Acquired {
            token: Some(Token(self.my_rev)),
            valid_ns: self.cfg.lease_ttl_ns,
        }
    }

    /// The session is over for us: stop keeping the lease alive.
    fn end_session(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Idle;
        self.requests.forget(fx);
        fx.push(Effect::CancelTimer { timer: KEEPALIVE });
    }

    /// `Lock` returned an error (lease gone, session expired).
    fn fail(&mut self, fx: &mut Vec<Effect>) -> LockEvent {
        self.end_session(fx);
        LockEvent::Busy
    }

    /// The acquisition under way and not decided yet, as the refinement
    /// check reads it (`codecheck::abstraction`): its lease and its key's
    /// create revision once this client knows it (0: not yet). None while
    /// no key can be its (idle, granting its session, revoking) or once it
    /// holds the lock (its decision is the judge's).
    pub fn acquisition(&self) -> Option<(u64, u64)> {
        match self.phase {
            Phase::Locking | Phase::Querying | Phase::Watching | Phase::Rechecking => {
                Some((self.lease, self.my_rev))
            }
            Phase::Idle | Phase::Granting | Phase::Holding | Phase::Revoking => None,
        }
    }

    /// The create revision `msg` tells this client its key has, if it is
    /// the answer to its Lock transaction now outstanding.
    pub fn revision_in(&self, msg: Msg) -> Option<u64> {
        match (self.phase, msg) {
            (Phase::Locking, Msg::Etcd(EtcdMsg::TxnResult { req, my_rev, .. }))
                if self.requests.answers(req) && my_rev != 0 =>
            {
                Some(my_rev)
            }
            _ => None,
        }
    }

    /// Whether `msg`, delivered now, makes this client decide it holds the
    /// lock: the answer "you are first" of the refinement check's model
    /// (asked of a copy, so the answer is the code's own).
    pub fn decides_on(&self, clocks: Clocks, msg: Msg) -> bool {
        let mut copy = self.clone();
        let mut fx = Vec::new();
        matches!(
            copy.on_message(clocks, msg, &mut fx),
            LockEvent::Acquired { .. }
        )
    }

    pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        match (self.phase, msg) {
            (Phase::Granting, Msg::Etcd(EtcdMsg::LeaseGranted { req, ttl_ns, .. }))
                if self.requests.answers(req) =>
            {
                self.requests.forget(fx);
                if ttl_ns == 0 {
                    return self.fail(fx);
                }
                fx.push(Effect::SetTimer {
                    timer: KEEPALIVE,
                    after_ns: self.cfg.keepalive_every_ns,
                });
                let msg = Msg::Etcd(EtcdMsg::LockTxn {
                    req: self.requests.take_req(),
                    key: self.base.key,
                    lease: self.lease,
                });
                self.send(clocks, Phase::Locking, msg, fx);
            }
            (
                Phase::Locking,
                Msg::Etcd(EtcdMsg::TxnResult {
                    req,
                    my_rev,
                    owner_rev,
                    ..
                }),
            ) if self.requests.answers(req) => {
                self.requests.forget(fx);
                if my_rev == 0 {
                    return self.fail(fx); // "requested lease not found"
                }
                self.my_rev = my_rev;
                if owner_rev == my_rev {
                    // The put ran under the live lease in this transaction.
                    return self.acquired();
                }
                self.wait_deletes(clocks, fx);
            }
            (Phase::Querying, Msg::Etcd(EtcdMsg::Predecessor { req, pred_rev, .. }))
                if self.requests.answers(req) =>
            {
                self.requests.forget(fx);
                if pred_rev == 0 {
                    // waitDeletes returned: no lower key is left.
                    if !self.cfg.recheck {
                        return self.acquired(); // etcd 3.4.3
                    }
                    let msg = Msg::Etcd(EtcdMsg::GetOwn {
                        req: self.requests.take_req(),
                        key: self.base.key,
                        lease: self.lease,
                    });
                    self.send(clocks, Phase::Rechecking, msg, fx);
                } else if self.deleted_meanwhile.contains(&pred_rev) {
                    self.wait_deletes(clocks, fx);
                } else {
                    self.phase = Phase::Watching;
                    self.waiting_on = pred_rev;
                    fx.push(Effect::SetTimer {
                        timer: WATCH_RESUME,
                        after_ns: self.base.request_timeout_ns,
                    });
                }
            }
            (Phase::Querying, Msg::Etcd(EtcdMsg::DeleteEvent { rev, .. })) => {
                self.deleted_meanwhile.insert(rev);
            }
            (Phase::Watching, Msg::Etcd(EtcdMsg::DeleteEvent { rev, .. }))
                if rev == self.waiting_on =>
            {
                fx.push(Effect::CancelTimer {
                    timer: WATCH_RESUME,
                });
                self.wait_deletes(clocks, fx);
            }
            (
                Phase::Rechecking,
                Msg::Etcd(EtcdMsg::OwnKey {
                    req, create_rev, ..
                }),
            ) if self.requests.answers(req) => {
                self.requests.forget(fx);
                if create_rev != self.my_rev {
                    return self.fail(fx); // ErrSessionExpired
                }
                return self.acquired();
            }
            (Phase::Revoking, Msg::Etcd(EtcdMsg::Revoked { req, .. }))
                if self.requests.answers(req) =>
            {
                self.end_session(fx);
                return LockEvent::Released;
            }
            _ => {}
        }
        LockEvent::Pending
    }

    pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
        if timer == WATCH_RESUME && self.phase == Phase::Watching {
            self.wait_deletes(clocks, fx);
            return LockEvent::Pending;
        }
        if timer == KEEPALIVE && self.phase != Phase::Idle {
            let msg = Msg::Etcd(EtcdMsg::KeepAlive {
                key: self.base.key,
                lease: self.lease,
            });
            fx.push(Effect::Send {
                to: self.cfg.server,
                msg,
            });
            fx.push(Effect::SetTimer {
                timer: KEEPALIVE,
                after_ns: self.cfg.keepalive_every_ns,
            });
            return LockEvent::Pending;
        }
        if timer != CLIENT_REQUEST {
            return LockEvent::Pending;
        }
        match self.requests.on_timeout(fx) {
            Timeout::Idle | Timeout::Retransmitted => LockEvent::Pending,
            // The lease, unrevoked, expires on the server and takes the key.
            Timeout::GaveUp(_) if self.phase == Phase::Revoking => {
                self.end_session(fx);
                LockEvent::Released
            }
            // Stop the keep-alives: the server expires the lease and its key.
            Timeout::GaveUp(_) => self.fail(fx),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Lease {
    ttl_ns: Nanos,
    expires_mono_ns: Nanos,
    /// The lock key bound to it, with its create revision.
    key: Option<(Key, u64)>,
}

const LEASE_CHECK: TimerId = TimerId(0);

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct EtcdServer {
    /// The store's revision: the last one any put or delete took.
    revision: u64,
    /// Keys under each lock prefix, by create revision -> bound lease.
    keys: BTreeMap<(Key, u64), u64>,
    leases: BTreeMap<u64, Lease>,
    /// Leases that expired or were revoked: an ID is never granted twice.
    dead: BTreeSet<u64>,
    /// Delete watches: (lock key, watched create revision, watcher).
    watches: BTreeSet<(Key, u64, NodeId)>,
    /// When the lease check timer fires (None: not armed).
    check_at_mono_ns: Option<Nanos>,
    /// The durable record last persisted (see [`crate::protocol::record`]).
    persisted: Vec<u8>,
}

impl Default for EtcdServer {
    fn default() -> Self {
        Self::new()
    }
}

impl EtcdServer {
    pub fn new() -> Self {
        EtcdServer {
            revision: 1,
            keys: BTreeMap::new(),
            leases: BTreeMap::new(),
            dead: BTreeSet::new(),
            watches: BTreeSet::new(),
            check_at_mono_ns: None,
            persisted: Vec::new(),
        }
    }

    /// What etcd keeps across a member crash (its raft log): the revision,
    /// the keys, the leases with their TTLs (not their deadlines), the dead
    /// lease ids and the watches (clientv3 re-creates a watch on reconnect;
    /// modelled as it surviving).
    fn record(&self) -> Vec<u8> {
        let mut w = RecordWriter::default();
        w.word(self.revision);
        w.list(self.keys.iter(), |w, ((k, rev), lease)| {
            w.word(k.0 as u64).word(*rev).word(*lease);
        });
        w.list(self.leases.iter(), |w, (id, l)| {
            let (key, rev) = l.key.map_or((u16::MAX, 0), |(k, rev)| (k.0, rev));
            w.word(*id).word(l.ttl_ns).word(key as u64).word(rev);
        });
        w.list(self.dead.iter(), |w, id| {
            w.word(*id);
        });
        w.list(self.watches.iter(), |w, (k, rev, node)| {
            w.word(k.0 as u64).word(*rev).word(node.0 as u64);
        });
        w.finish()
    }

    /// Rebuilds the state from `record`; every lease's remaining TTL starts
    /// over (etcd refreshes leases when a new leader takes over).
    fn recover(&mut self, clocks: Clocks, record: &[u8], fx: &mut Vec<Effect>) {
        let mut r = RecordReader::new(record);
        let key = |w: u64| Key(w as u16);
        self.revision = r.word();
        r.list(|r| {
            let (k, rev, lease) = (key(r.word()), r.word(), r.word());
            self.keys.insert((k, rev), lease);
        });
        r.list(|r| {
            let (id, ttl_ns, k, rev) = (r.word(), r.word(), r.word(), r.word());
            let lease = Lease {
                ttl_ns,
                expires_mono_ns: clocks.mono_ns.saturating_add(ttl_ns),
                key: (k != u16::MAX as u64).then_some((key(k), rev)),
            };
            self.leases.insert(id, lease);
        });
        r.list(|r| {
            self.dead.insert(r.word());
        });
        r.list(|r| {
            let (k, rev, node) = (key(r.word()), r.word(), r.word());
            self.watches.insert((k, rev, NodeId(node as u16)));
        });
        assert!(r.is_done(), "an etcd record with trailing bytes");
        self.persisted = record.to_vec();
        self.arm(clocks, fx);
    }

    fn arm(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        let Some(next) = self.leases.values().map(|l| l.expires_mono_ns).min() else {
            return;
        };
        if self.check_at_mono_ns.is_some_and(|at| at <= next) {
            return;
        }
        self.check_at_mono_ns = Some(next);
        fx.push(Effect::SetTimer {
            timer: LEASE_CHECK,
            after_ns: next.saturating_sub(clocks.mono_ns),
        });
    }

    fn on_lease_check(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        self.check_at_mono_ns = None;
        let due: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.expires_mono_ns <= clocks.mono_ns)
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            if let Some((key, _)) = self.leases[&id].key {
                fx.push(Effect::Observe(Observation::LeaseExpired {
                    key,
                    owner: id,
                }));
            }
            self.end_lease(id, fx);
        }
        self.arm(clocks, fx);
    }

    /// Expiry or revocation: the lease goes, and with it its key.
    fn end_lease(&mut self, id: u64, fx: &mut Vec<Effect>) {
        let Some(lease) = self.leases.remove(&id) else {
            return;
        };
        self.dead.insert(id);
        if let Some((key, rev)) = lease.key {
            let removed = self.keys.remove(&(key, rev));
            debug_assert_eq!(removed, Some(id), "a lease's key is bound to it");
            self.revision += 1;
            let fired: Vec<_> = self
                .watches
                .range((key, rev, NodeId(0))..=(key, rev, NodeId(u16::MAX)))
                .copied()
                .collect();
            for w in fired {
                self.watches.remove(&w);
                fx.push(Effect::Send {
                    to: w.2,
                    msg: Msg::Etcd(EtcdMsg::DeleteEvent { key, rev }),
                });
            }
        }
    }

    /// The store's revision (etcd's starts at 1): the refinement check's
    /// model counter is it minus one.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// `key`'s live lock keys as (create revision, bound lease), oldest
    /// first: what the refinement check reads as the model's nodes.
    pub fn lock_keys(&self, key: Key) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.keys
            .range((key, 0)..=(key, u64::MAX))
            .map(|(&(_, rev), &lease)| (rev, lease))
    }

    fn live(&self, lease: u64) -> Option<&Lease> {
        self.leases.get(&lease)
    }

    fn on_request(&mut self, clocks: Clocks, from: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        let reply = match msg {
            Msg::Etcd(EtcdMsg::LeaseGrant {
                req,
                key,
                lease,
                ttl_ns,
            }) => {
                let granted = if self.dead.contains(&lease) || ttl_ns == 0 {
                    0
                } else {
                    // A retransmitted grant finds its lease and leaves it be.
                    self.leases.entry(lease).or_insert(Lease {
                        ttl_ns,
                        expires_mono_ns: clocks.mono_ns + ttl_ns,
                        key: None,
                    });
                    self.arm(clocks, fx);
                    ttl_ns
                };
                Msg::Etcd(EtcdMsg::LeaseGranted {
                    req,
                    key,
                    lease,
                    ttl_ns: granted,
                })
            }
            Msg::Etcd(EtcdMsg::LockTxn { req, key, lease }) => {
                let my_rev = match self.live(lease).map(|l| l.key) {
                    None => 0,
                    // Else branch: the key exists, read its create revision.
                    Some(Some((k, rev))) => {
                        debug_assert_eq!(k, key, "one lock key per session");
                        rev
                    }
                    Some(None) => {
                        self.revision += 1;
                        let rev = self.revision;
                        self.keys.insert((key, rev), lease);
                        if let Some(l) = self.leases.get_mut(&lease) {
                            l.key = Some((key, rev));
                        }
                        rev
                    }
                };
                let owner_rev = self.lock_keys(key).next().map_or(0, |(rev, _)| rev);
                Msg::Etcd(EtcdMsg::TxnResult {
                    req,
                    key,
                    my_rev,
                    owner_rev,
                })
            }
            Msg::Etcd(EtcdMsg::WaitDeletes { req, key, my_rev }) => {
                // A plain read: it does not ask whether the reader's lease lives.
                let pred_rev = self
                    .keys
                    .range((key, 0)..(key, my_rev))
                    .next_back()
                    .map_or(0, |(&(_, rev), _)| rev);
                if pred_rev != 0 {
                    self.watches.insert((key, pred_rev, from));
                }
                Msg::Etcd(EtcdMsg::Predecessor { req, key, pred_rev })
            }
            Msg::Etcd(EtcdMsg::GetOwn { req, key, lease }) => {
                let create_rev = match self.live(lease).and_then(|l| l.key) {
                    Some((k, rev)) if k == key => rev,
                    _ => 0,
                };
                Msg::Etcd(EtcdMsg::OwnKey {
                    req,
                    key,
                    create_rev,
                })
            }
            Msg::Etcd(EtcdMsg::KeepAlive { lease, .. }) => {
                // An expired lease stays expired: keep-alives cannot revive it.
                if let Some(l) = self.leases.get_mut(&lease) {
                    l.expires_mono_ns = clocks.mono_ns + l.ttl_ns;
                }
                return;
            }
            Msg::Etcd(EtcdMsg::Revoke { req, key, lease }) => {
                self.end_lease(lease, fx);
                Msg::Etcd(EtcdMsg::Revoked { req, key })
            }
            _ => return,
        };
        fx.push(Effect::Send {
            to: from,
            msg: reply,
        });
    }
}

impl Node for EtcdServer {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered: None } => {}
            Input::Start {
                recovered: Some(record),
            } => self.recover(clocks, record, fx),
            Input::Message { from, msg } => self.on_request(clocks, from, msg, fx),
            Input::Timer { .. } => self.on_lease_check(clocks, fx),
        }
        let record = self.record();
        persist_if_changed(&mut self.persisted, record, fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testkit::{at, sent};

    const T: Nanos = 1_000;
    const SERVER: NodeId = NodeId(9);

    /// Delivers `msg` from node `client` and returns what the server sent.
    fn ask(s: &mut EtcdServer, now: Nanos, client: u16, msg: Msg) -> Vec<(NodeId, Msg)> {
        let mut fx = Vec::new();
        let from = NodeId(client);
        s.handle(at(now), Input::Message { from, msg }, &mut fx);
        sent(&fx)
    }

    /// A client's session and Lock transaction: (my_rev, owner_rev).
    fn lock(s: &mut EtcdServer, now: Nanos, client: u16, lease: u64) -> (u64, u64) {
        let key = Key(0);
        ask(
            s,
            now,
            client,
            Msg::Etcd(EtcdMsg::LeaseGrant {
                req: 1,
                key,
                lease,
                ttl_ns: 10 * T,
            }),
        );
        match ask(
            s,
            now,
            client,
            Msg::Etcd(EtcdMsg::LockTxn { req: 2, key, lease }),
        )[..]
        {
            [(
                _,
                Msg::Etcd(EtcdMsg::TxnResult {
                    my_rev, owner_rev, ..
                }),
            )] => (my_rev, owner_rev),
            ref other => panic!("expected etcd_txn_result, got {other:?}"),
        }
    }

    fn wait_deletes(s: &mut EtcdServer, now: Nanos, client: u16, my_rev: u64) -> u64 {
        let msg = Msg::Etcd(EtcdMsg::WaitDeletes {
            req: 3,
            key: Key(0),
            my_rev,
        });
        match ask(s, now, client, msg)[..] {
            [(_, Msg::Etcd(EtcdMsg::Predecessor { pred_rev, .. }))] => pred_rev,
            ref other => panic!("expected etcd_predecessor, got {other:?}"),
        }
    }

    fn expire_due(s: &mut EtcdServer, now: Nanos) -> Vec<Effect> {
        let mut fx = Vec::new();
        s.handle(at(now), Input::Timer { timer: LEASE_CHECK }, &mut fx);
        fx
    }

    #[test]
    fn waiters_are_ordered_by_create_revision_and_a_repeated_txn_puts_no_second_key() {
        let mut s = EtcdServer::new();
        assert_eq!(lock(&mut s, 0, 1, 11), (2, 2), "first put takes revision 2");
        assert_eq!(lock(&mut s, 0, 2, 22), (3, 2), "B waits behind A");
        assert_eq!(lock(&mut s, T, 2, 22), (3, 2), "same lease, same key");
        assert_eq!(
            wait_deletes(&mut s, T, 2, 3),
            2,
            "B's predecessor is A's key"
        );
        assert_eq!(wait_deletes(&mut s, T, 1, 2), 0, "nothing below the owner");
    }

    #[test]
    fn an_expired_lease_deletes_its_key_and_wakes_the_watcher_of_that_key_only() {
        let mut s = EtcdServer::new();
        lock(&mut s, 0, 1, 11);
        lock(&mut s, 0, 2, 22);
        lock(&mut s, 0, 3, 33);
        assert_eq!(wait_deletes(&mut s, T, 2, 3), 2);
        assert_eq!(wait_deletes(&mut s, T, 3, 4), 3);
        for (client, lease) in [(2u16, 22u64), (3, 33)] {
            let msg = Msg::Etcd(EtcdMsg::KeepAlive { key: Key(0), lease });
            assert!(ask(&mut s, 8 * T, client, msg).is_empty());
        }
        let fx = expire_due(&mut s, 10 * T);
        let events: Vec<(NodeId, Msg)> = sent(&fx);
        assert_eq!(
            events,
            vec![(
                NodeId(2),
                Msg::Etcd(EtcdMsg::DeleteEvent {
                    key: Key(0),
                    rev: 2
                })
            )],
            "only A's successor is woken"
        );
        assert!(fx.iter().any(|e| matches!(
            e,
            Effect::Observe(Observation::LeaseExpired { owner: 11, .. })
        )));
        let msg = Msg::Etcd(EtcdMsg::KeepAlive {
            key: Key(0),
            lease: 11,
        });
        ask(&mut s, 10 * T, 1, msg);
        let get = Msg::Etcd(EtcdMsg::GetOwn {
            req: 4,
            key: Key(0),
            lease: 11,
        });
        assert!(
            matches!(
                ask(&mut s, 10 * T, 1, get)[..],
                [(_, Msg::Etcd(EtcdMsg::OwnKey { create_rev: 0, .. }))]
            ),
            "a keep-alive after expiry does not bring the key back"
        );
    }

    /// Drives a client through its requests with a scripted server.
    struct Script {
        client: EtcdClient,
        fx: Vec<Effect>,
    }

    impl Script {
        fn new(recheck: bool) -> Self {
            let cfg = EtcdClientConfig {
                server: SERVER,
                lease_ttl_ns: 10 * T,
                keepalive_every_ns: 3 * T,
                recheck,
            };
            let base = ClientBase {
                key: Key(0),
                request_timeout_ns: 100 * T,
                max_retries: 2,
                incarnation: 0,
            };
            let mut s = Script {
                client: EtcdClient::new(cfg, base),
                fx: Vec::new(),
            };
            s.client.acquire(at(0), 22, &mut s.fx);
            s
        }

        /// The request the client sent last.
        fn last_request(&self) -> Msg {
            sent(&self.fx).last().expect("a request was sent").1
        }

        fn reply(&mut self, msg: Msg) -> LockEvent {
            self.fx.clear();
            self.client.on_message(at(T), msg, &mut self.fx)
        }

        fn req(&self) -> u32 {
            self.last_request().words()[0] as u32
        }
    }

    /// B is granted a lease, puts its key at revision 3 behind A's 2, and
    /// asks for its predecessor.
    fn querying(recheck: bool) -> Script {
        let mut s = Script::new(recheck);
        let key = Key(0);
        let granted = Msg::Etcd(EtcdMsg::LeaseGranted {
            req: s.req(),
            key,
            lease: 22,
            ttl_ns: 10 * T,
        });
        assert_eq!(s.reply(granted), LockEvent::Pending);
        let txn = Msg::Etcd(EtcdMsg::TxnResult {
            req: s.req(),
            key,
            my_rev: 3,
            owner_rev: 2,
        });
        assert_eq!(s.reply(txn), LockEvent::Pending);
        assert!(matches!(
            s.last_request(),
            Msg::Etcd(EtcdMsg::WaitDeletes { my_rev: 3, .. })
        ));
        s
    }

    /// ... waits on A's key, which goes; waitDeletes reads again.
    fn waiting_behind_a(recheck: bool) -> Script {
        let mut s = querying(recheck);
        let key = Key(0);
        let pred = Msg::Etcd(EtcdMsg::Predecessor {
            req: s.req(),
            key,
            pred_rev: 2,
        });
        assert_eq!(s.reply(pred), LockEvent::Pending);
        assert_eq!(
            s.reply(Msg::Etcd(EtcdMsg::DeleteEvent { key, rev: 2 })),
            LockEvent::Pending
        );
        assert!(matches!(
            s.last_request(),
            Msg::Etcd(EtcdMsg::WaitDeletes { my_rev: 3, .. })
        ));
        s
    }

    #[test]
    fn expired_waiter_is_told_it_holds_the_lock_without_recheck() {
        let mut s = waiting_behind_a(false);
        let none_left = Msg::Etcd(EtcdMsg::Predecessor {
            req: s.req(),
            key: Key(0),
            pred_rev: 0,
        });
        // Whether or not its own key survived: 3.4.3 never looks.
        assert_eq!(
            s.reply(none_left),
            LockEvent::Acquired {
                token: Some(Token(3)),
                valid_ns: 10 * T
            }
        );
    }

    #[test]
    fn with_the_recheck_an_expired_waiter_gets_session_expired_and_a_live_one_the_lock() {
        for (create_rev, expected) in [
            (0, LockEvent::Busy),
            (
                3,
                LockEvent::Acquired {
                    token: Some(Token(3)),
                    valid_ns: 10 * T,
                },
            ),
        ] {
            let mut s = waiting_behind_a(true);
            let none_left = Msg::Etcd(EtcdMsg::Predecessor {
                req: s.req(),
                key: Key(0),
                pred_rev: 0,
            });
            assert_eq!(s.reply(none_left), LockEvent::Pending);
            assert!(matches!(
                s.last_request(),
                Msg::Etcd(EtcdMsg::GetOwn { lease: 22, .. })
            ));
            let own = Msg::Etcd(EtcdMsg::OwnKey {
                req: s.req(),
                key: Key(0),
                create_rev,
            });
            assert_eq!(s.reply(own), expected, "own key revision {create_rev}");
        }
    }

    #[test]
    fn a_delete_event_that_overtakes_the_read_reply_is_not_lost() {
        let mut s = querying(false);
        let key = Key(0);
        let req = s.req();
        assert_eq!(
            s.reply(Msg::Etcd(EtcdMsg::DeleteEvent { key, rev: 2 })),
            LockEvent::Pending
        );
        let pred = Msg::Etcd(EtcdMsg::Predecessor {
            req,
            key,
            pred_rev: 2,
        });
        assert_eq!(s.reply(pred), LockEvent::Pending);
        assert!(
            matches!(s.last_request(), Msg::Etcd(EtcdMsg::WaitDeletes { .. })),
            "reads again instead of waiting for an event already seen"
        );
    }

    #[test]
    fn a_waiter_whose_delete_event_was_lost_reads_again_after_a_request_timeout() {
        let mut s = querying(false);
        let pred = Msg::Etcd(EtcdMsg::Predecessor {
            req: s.req(),
            key: Key(0),
            pred_rev: 2,
        });
        assert_eq!(s.reply(pred), LockEvent::Pending);
        assert!(s.fx.iter().any(|e| matches!(
            e,
            Effect::SetTimer {
                timer: WATCH_RESUME,
                ..
            }
        )));
        s.fx.clear();
        let event = s.client.on_timer(at(200 * T), WATCH_RESUME, &mut s.fx);
        assert_eq!(event, LockEvent::Pending);
        assert!(matches!(
            s.last_request(),
            Msg::Etcd(EtcdMsg::WaitDeletes { my_rev: 3, .. })
        ));
    }

    #[test]
    fn a_restarted_etcd_member_keeps_its_revision_keys_and_leases() {
        let mut s = EtcdServer::new();
        assert_eq!(lock(&mut s, 0, 1, 11), (2, 2));
        let record = s.record();
        let mut restarted = EtcdServer::new();
        let mut fx = Vec::new();
        restarted.handle(
            at(3 * T),
            Input::Start {
                recovered: Some(&record),
            },
            &mut fx,
        );
        assert_eq!(restarted.record(), record, "the record round-trips");
        assert_eq!(
            lock(&mut restarted, 3 * T, 2, 22),
            (3, 2),
            "A still owns the lock; B's key takes the next revision"
        );
    }
}
