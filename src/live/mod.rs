//! Live mode: the article's lock recipes against a real Redis and a real
//! PostgreSQL, with real processes and real faults.
//!
//! Everything else in fencesim reasons about models of these servers; this
//! module asks whether the models tell the truth. The harness starts its own
//! `redis-server` and PostgreSQL ([`servers`]), runs each worker as a real
//! process of this same binary ([`worker`], `fencesim live-worker`) with its
//! own connections, freezes a worker with SIGSTOP at a protocol point, and
//! builds the documented history ([`crate::history`]) from the workers'
//! invocations and completions (one system-wide monotonic clock) plus the
//! writes PostgreSQL actually committed, as recorded by an audit trigger
//! ([`trial`]). The verdict comes from the same checker as every simulated
//! run ([`crate::check`]). Live runs are not deterministic: each scenario is
//! run for N trials and reported as found/N beside its simulated twin.

pub(crate) mod client;
pub mod cluster;
pub(crate) mod decode;
pub(crate) mod etcd;
pub(crate) mod proxy;
pub mod scenario;
pub mod servers;
pub(crate) mod trial;
pub mod worker;
pub(crate) mod zk;

/// Nanoseconds on CLOCK_MONOTONIC: one clock shared by every process on the
/// machine, so worker and harness records can be merged into one order.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The one document row every live scenario writes.
pub const DOC_ID: i32 = 1;
/// The Redis key of the lock and of the fencing-token counter beside it.
pub const LOCK_KEY: &str = "lock:doc";
pub const TOKEN_KEY: &str = "fence:doc";

/// The lock recipe on Redis (or none: the database is the lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LockKind {
    /// `SET key owner NX PX ttl`, released with a plain `DEL`.
    RedisSetNxDel,
    /// `SET key owner NX PX ttl`, released with a Lua compare-and-delete.
    RedisSetNxCad,
    /// No lock server: `SELECT … FOR UPDATE` and the update in one transaction.
    None,
    /// A three-member etcd cluster: a lease with keep-alive and the
    /// server-side lock (`/v3/lock/lock`); token = the lock key's create revision.
    EtcdLock,
    /// A three-member ZooKeeper ensemble: the lock recipe (ephemeral
    /// sequential znode, lowest owns, watch the predecessor); token = its czxid.
    ZkLock,
}

/// How the worker writes the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WriteKind {
    /// `UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3`.
    Plain,
    /// The article's `… WHERE id = $3 AND fencing_token < $2`.
    Fenced,
    /// Read the fence in one statement, then the plain update in another
    /// (READ COMMITTED): the "subtly broken" check-then-write.
    CheckThenUpdate,
    /// `SELECT … FOR UPDATE` then the update in the same transaction.
    SelectForUpdate,
}

impl LockKind {
    pub const NAMES: [(&'static str, LockKind); 5] = [
        ("redis-set-nx-del", LockKind::RedisSetNxDel),
        ("redis-set-nx-cad", LockKind::RedisSetNxCad),
        ("none", LockKind::None),
        ("etcd-lock", LockKind::EtcdLock),
        ("zk-lock", LockKind::ZkLock),
    ];

    /// The consensus cluster this lock runs on, if any (Redis is not one).
    pub fn cluster(self) -> Option<cluster::ClusterKind> {
        match self {
            LockKind::EtcdLock => Some(cluster::ClusterKind::Etcd),
            LockKind::ZkLock => Some(cluster::ClusterKind::Zk),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

impl WriteKind {
    pub const NAMES: [(&'static str, WriteKind); 4] = [
        ("plain", WriteKind::Plain),
        ("fenced", WriteKind::Fenced),
        ("check-then-update", WriteKind::CheckThenUpdate),
        ("select-for-update", WriteKind::SelectForUpdate),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Ctrl-C (SIGINT) and SIGTERM end the run through the normal error path,
/// so every Drop guard stops its server or worker and removes its directory.
pub fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}
