//! The lock-client half of the protocols in which the *client* decides it
//! holds the lock: ZooKeeper's recipe, Redlock, the DynamoDB lock client,
//! the etcd mutex. No server hands out "the lock" in those systems; a
//! library in the worker process concludes it from what the servers said.
//!
//! The workload around the lock — read, compute, write, op ids as values,
//! retransmissions — is the [`Worker`](crate::protocol::worker::Worker)'s and is the
//! same for every protocol. The worker hands the lock phases (acquire,
//! release) to a [`LockClient`] and hears back [`LockEvent`]s; at
//! `Acquired` it emits [`Observation::Acquired`](crate::protocol::node::Observation),
//! which the harness records as the grant. [`Requests`] is the one
//! request/retransmit helper the clients share.

use crate::protocol::dynamodb::{DynamoClient, DynamoClientConfig};
use crate::protocol::etcd::{EtcdClient, EtcdClientConfig};
use crate::protocol::msg::{first_req, next_req, Key, Msg, ReqId, Token};
use crate::protocol::node::{Clocks, Effect, Nanos, NodeId, TimerId};
use crate::protocol::redlock::{RedlockClient, RedlockClientConfig};
use crate::protocol::zookeeper::{ZkClient, ZkClientConfig};

/// Which lock client a worker runs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LockKind {
    /// The lease coordinator's own grant (`acquire` -> `acquire_ok`).
    Lease,
    Zk(ZkClientConfig),
    Dynamo(DynamoClientConfig),
    Redlock(RedlockClientConfig),
    Etcd(EtcdClientConfig),
}

/// What a lock client tells the worker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockEvent {
    Pending,
    /// The client decided it holds the lock; `valid_ns` is how long it
    /// believes that stays true (on its own monotonic clock).
    Acquired {
        token: Option<Token>,
        valid_ns: Nanos,
    },
    /// Not this time: back off and try again with a new acquisition.
    Busy,
    /// The client learned it no longer holds the lock.
    Lost,
    Released,
}

/// Timers at or above this id belong to the lock client.
pub const CLIENT_TIMER_BASE: u16 = 8;
/// The client's request timeout.
pub const CLIENT_REQUEST: TimerId = TimerId(CLIENT_TIMER_BASE);
/// Two protocol timers (heartbeats, lease waits).
pub const CLIENT_TIMER_A: TimerId = TimerId(CLIENT_TIMER_BASE + 1);
pub const CLIENT_TIMER_B: TimerId = TimerId(CLIENT_TIMER_BASE + 2);

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum LockClient {
    Zk(ZkClient),
    Dynamo(DynamoClient),
    Redlock(RedlockClient),
    Etcd(EtcdClient),
}

/// What every client needs from the worker's configuration.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ClientBase {
    pub key: Key,
    pub request_timeout_ns: Nanos,
    pub max_retries: u32,
    /// The worker's incarnation (0 on first boot): request ids carry it, so
    /// a restarted client never takes a reply meant for its predecessor.
    pub incarnation: u32,
}

impl LockClient {
    pub fn new(kind: LockKind, base: ClientBase) -> Option<LockClient> {
        match kind {
            LockKind::Lease => None,
            LockKind::Zk(cfg) => Some(LockClient::Zk(ZkClient::new(cfg, base))),
            LockKind::Dynamo(cfg) => Some(LockClient::Dynamo(DynamoClient::new(cfg, base))),
            LockKind::Redlock(cfg) => Some(LockClient::Redlock(RedlockClient::new(cfg, base))),
            LockKind::Etcd(cfg) => Some(LockClient::Etcd(EtcdClient::new(cfg, base))),
        }
    }

    /// Start acquiring under the fresh acquisition nonce `owner`.
    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        match self {
            LockClient::Zk(c) => c.acquire(clocks, owner, fx),
            LockClient::Dynamo(c) => c.acquire(clocks, owner, fx),
            LockClient::Redlock(c) => c.acquire(clocks, owner, fx),
            LockClient::Etcd(c) => c.acquire(clocks, owner, fx),
        }
    }

    pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        match self {
            LockClient::Zk(c) => c.release(clocks, fx),
            LockClient::Dynamo(c) => c.release(clocks, fx),
            LockClient::Redlock(c) => c.release(clocks, fx),
            LockClient::Etcd(c) => c.release(clocks, fx),
        }
    }

    pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        match self {
            LockClient::Zk(c) => c.on_message(clocks, msg, fx),
            LockClient::Dynamo(c) => c.on_message(clocks, msg, fx),
            LockClient::Redlock(c) => c.on_message(clocks, msg, fx),
            LockClient::Etcd(c) => c.on_message(clocks, msg, fx),
        }
    }

    pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
        match self {
            LockClient::Zk(c) => c.on_timer(clocks, timer, fx),
            LockClient::Dynamo(c) => c.on_timer(clocks, timer, fx),
            LockClient::Redlock(c) => c.on_timer(clocks, timer, fx),
            LockClient::Etcd(c) => c.on_timer(clocks, timer, fx),
        }
    }
}

/// A request waiting for its answer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Sent {
    pub to: NodeId,
    pub msg: Msg,
    pub retries: u32,
    /// When it was first sent, on the client's monotonic clock.
    pub first_sent_mono_ns: Nanos,
}

/// One outstanding request at a time, retransmitted unchanged (same
/// request id) on timeout, as the worker does with its own requests.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Requests {
    timeout_ns: Nanos,
    max_retries: u32,
    next_req: ReqId,
    pub outstanding: Option<Sent>,
}

/// What a request timeout came to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Timeout {
    /// Nothing was outstanding.
    Idle,
    Retransmitted,
    /// Retries exhausted; the request is forgotten.
    GaveUp(Sent),
}

impl Requests {
    pub fn new(base: ClientBase) -> Self {
        Requests {
            timeout_ns: base.request_timeout_ns,
            max_retries: base.max_retries,
            next_req: first_req(base.incarnation),
            outstanding: None,
        }
    }

    pub fn take_req(&mut self) -> ReqId {
        let req = self.next_req;
        self.next_req = next_req(req);
        req
    }

    pub fn send(&mut self, clocks: Clocks, to: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        self.outstanding = Some(Sent {
            to,
            msg,
            retries: 0,
            first_sent_mono_ns: clocks.mono_ns,
        });
        fx.push(Effect::Send { to, msg });
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.timeout_ns,
        });
    }

    /// If `req` answers the outstanding request, settle it and return it.
    pub fn answer(&mut self, req: ReqId, fx: &mut Vec<Effect>) -> Option<Sent> {
        let sent = self.outstanding.filter(|_| self.answers(req))?;
        self.forget(fx);
        Some(sent)
    }

    /// Does `req` answer the outstanding request?
    pub fn answers(&self, req: ReqId) -> bool {
        self.outstanding
            .is_some_and(|s| s.msg.words()[0] as ReqId == req)
    }

    pub fn forget(&mut self, fx: &mut Vec<Effect>) {
        if self.outstanding.take().is_some() {
            fx.push(Effect::CancelTimer {
                timer: CLIENT_REQUEST,
            });
        }
    }

    pub fn on_timeout(&mut self, fx: &mut Vec<Effect>) -> Timeout {
        let Some(sent) = self.outstanding else {
            return Timeout::Idle;
        };
        if sent.retries >= self.max_retries {
            self.outstanding = None;
            return Timeout::GaveUp(sent);
        }
        self.outstanding = Some(Sent {
            retries: sent.retries + 1,
            ..sent
        });
        fx.push(Effect::Send {
            to: sent.to,
            msg: sent.msg,
        });
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.timeout_ns,
        });
        Timeout::Retransmitted
    }
}
