//! What every lock server's room gives a user-program trial: where each
//! worker's lock-server proxies forward to (Redis masters, or the members
//! of an etcd or ZooKeeper cluster), how their connections are decoded
//! ([`super::wire`]), the environment that tells the program where its
//! servers are, and the server's own account of the lock.
//!
//! Everything else of a user-program trial — the start gate, the faults at
//! the grant, the read and the write, PostgreSQL's audit, the history and
//! its verdict — is the same for every lock server: a room only says what
//! the lock did, as [`LockFact`]s on the one monotonic clock (a grant with
//! its worker, its token as a `Token` fact of the same worker right after,
//! releases, expiries), and what each worker's connections carried.

use anyhow::Result;

use super::fact::LockFact;
use super::wire::Wire;

/// What the servers' account of a finished trial says.
pub(crate) struct Finished {
    pub(crate) facts: Vec<LockFact>,
    /// Why the account cannot be trusted (empty: it can).
    pub(crate) problems: Vec<String>,
    /// What the account found rather than was told (the lock key a
    /// program used, its token counter), as lines to print: the same in
    /// every trial, so printed with the first.
    pub(crate) notes: Vec<String>,
    /// What happened to the account in this trial alone (its etcd watch
    /// moved to another member), printed under the trial's line.
    pub(crate) this_trial: Vec<String>,
}

/// The server's own account of the lock during one trial.
pub(crate) trait ServerAccount: Send + Sync {
    /// The grants `worker` holds or held so far, once the account caught up
    /// with everything the server did before now (`upstream`: the proxy's
    /// upstream whose reply is being held). Err: it could not catch up (the
    /// trial cannot be judged).
    fn grants_of(&self, upstream: usize, worker: usize) -> Result<Vec<u64>>;
    /// Closes the account: the lock's facts, and every reason not to trust them.
    fn finish(&self) -> Finished;
}

/// A worker's program's environment for its lock server, from its index
/// and its proxies' ports.
pub(crate) type Env = Box<dyn Fn(usize, &[u16]) -> Vec<(&'static str, String)> + Send + Sync>;

/// One lock server's part of a user-program trial.
pub(crate) struct Backend {
    /// The server's name in a message ("Redis", "etcd", "ZooKeeper").
    pub name: &'static str,
    /// `host:port` each worker's lock-server proxies forward to, one proxy per upstream.
    pub upstreams: Vec<String>,
    pub account: std::sync::Arc<dyn ServerAccount>,
    /// The decoders of each worker connection.
    pub wire: Wire,
    /// The program's environment for its lock server, from the worker and
    /// its proxies' ports (in `upstreams`' order).
    pub env: Env,
    /// The bytes that name the lock (key, path or prefix) and its token
    /// counter (empty: none).
    pub keys: [String; 2],
}
