//! The lock server a user's program talks to, as the trial sees it: where
//! each worker's lock-server proxies forward to (Redis masters, or the
//! members of an etcd or ZooKeeper cluster), what the proxies decode on
//! those connections, the environment that tells the program where its
//! servers are, and the server's own account of the lock.
//!
//! Everything else of a user-program trial — the start gate, the faults at
//! the grant, the read and the write, PostgreSQL's audit, the history and
//! its verdict — is the same for every lock server: a backend only says
//! what the lock did, as
//! [`LockFact`](crate::live::account::majority::LockFact)s on the one
//! monotonic clock (a grant with its worker, its token as a `Token` fact
//! of the same worker right after, releases, expiries), and what each
//! worker's connections carried
//! ([`super::seen::Seen::LockSent`] / `LockReplied`, after which it asks
//! [`super::shared::Shared::learn_grants`]).

use std::net::SocketAddr;
use std::sync::Arc;

use super::server_account::ServerAccount;
use super::shared::Shared;
use crate::live::proxy::Observer;

/// Observers for one connection of `worker` to upstream `upstream`, which
/// the server sees as coming from the given address.
pub(super) type ObserverFactory =
    Arc<dyn Fn(Arc<Shared>, usize, usize, SocketAddr) -> (Observer, Observer) + Send + Sync>;

/// One lock server's part of a user-program trial.
pub(super) struct Backend {
    /// `host:port` each worker's lock-server proxies forward to, one proxy per upstream.
    pub upstreams: Vec<String>,
    pub account: Arc<dyn ServerAccount>,
    pub observers: ObserverFactory,
    /// The program's environment for its lock server, from its proxies' ports
    /// (in `upstreams`' order).
    pub env: fn(&[u16]) -> Vec<(&'static str, String)>,
    /// The bytes that name the lock (key, path or prefix) and its token
    /// counter (empty: none), as the observers look for them.
    pub keys: [String; 2],
}
