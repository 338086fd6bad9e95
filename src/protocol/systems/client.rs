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
//! request/retransmit helper the clients share (all three live in
//! `base.rs`, which the clients import instead of this dispatcher).

pub use super::base::{
    ClientBase, LockEvent, Requests, Sent, Timeout, CLIENT_REQUEST, CLIENT_TIMER_A, CLIENT_TIMER_B,
    CLIENT_TIMER_BASE,
};
use crate::protocol::dynamodb::{DynamoClient, DynamoClientConfig};
use crate::protocol::etcd::{EtcdClient, EtcdClientConfig};
use crate::protocol::msg::Msg;
use crate::protocol::node::{Clocks, Effect, TimerId};
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

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum LockClient {
    Zk(ZkClient),
    Dynamo(DynamoClient),
    Redlock(RedlockClient),
    Etcd(EtcdClient),
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
