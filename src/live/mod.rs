//! Live mode: the article's lock recipes against a real Redis and a real
//! PostgreSQL, with real processes and real faults.
//!
//! Everything else in fencesim reasons about models of these servers; this
//! module asks whether the models tell the truth. The harness starts its own
//! `redis-server` and PostgreSQL ([`servers`]; etcd and ZooKeeper clusters,
//! [`cluster`]), runs each worker as a real process of this same binary
//! ([`worker`], `fencesim live-worker`) with its own connections — or a
//! user's own program behind decoding proxies ([`client`]) — and applies
//! the faults through one executor ([`fault::executor`]): SIGSTOP at a protocol
//! point, crashes, restarts, failovers, partitions. One builder
//! ([`history`]) makes the documented history ([`crate::history`]) of both
//! modes from the workers' invocations and completions (one system-wide
//! monotonic clock) plus the writes PostgreSQL actually committed, as
//! recorded by an audit trigger. The verdict comes from the same checker as
//! every simulated run ([`crate::check`]). Live runs are not deterministic:
//! each scenario is run for N trials and reported as found/N beside its
//! simulated twin.
//!
//! How it is laid out: one typed fault list ([`fault`]) and one typed
//! worker record ([`record`]) that every part reads and writes; a room per
//! lock server ([`redis`], [`etcd`], [`zk`]: the built-in worker's lane,
//! the server's own account, the decoder of a program's connections)
//! behind the words they share ([`common`]); the two trial modes
//! ([`trial`], [`client`]); the run ([`run`], on [`jobs`]) and the live
//! search ([`search`]), which return data and tell their progress to the
//! command line, which prints; a code-level counterexample as a live
//! scenario ([`from_code`]), confirmed as the search confirms its findings.
//!
//! The files form no circle: the small ones at the bottom ([`process`],
//! [`launch`], [`emit`], [`decode`], [`phases`], [`sockdiag`], [`common`])
//! import none of the rooms, and each file above imports only files below
//! it (checked by `tests/it/architecture.rs`).

pub(crate) mod client;
pub mod cluster;
pub(crate) mod common;
pub(crate) mod decode;
pub(crate) mod emit;
pub(crate) mod etcd;
pub mod fault;
pub mod from_code;
pub(crate) mod history;
pub(crate) mod jobs;
pub(crate) mod launch;
pub mod pg_template;
pub mod phases;
pub(crate) mod process;
pub(crate) mod proxy;
pub(crate) mod record;
pub(crate) mod redis;
pub mod run;
pub mod scenario;
pub mod search;
pub mod servers;
pub(crate) mod sockdiag;
pub(crate) mod trial;
pub mod worker;
pub(crate) mod zk;

/// Every `FENCESIM_*` variable a user's program is started with ([`client`]).
pub use client::PROGRAM_ENV;

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

/// The document row a live scenario's workers write unless a worker names
/// another (`document = N`).
pub const DOC_ID: i32 = 1;
/// The Redis key of document 1's lock and of the fencing-token counter beside it.
pub const LOCK_KEY: &str = "lock:doc";
pub const TOKEN_KEY: &str = "fence:doc";
/// Document rows 1..=this exist in every trial's table.
pub const DOCUMENTS_MAX: u32 = 4;

/// The history's key name of document `doc`, which is also its Redis
/// keys' suffix: `doc` for document 1 (the keys every scenario used before
/// there were more), `doc<N>` for the others.
pub fn doc_key_name(doc: u32) -> String {
    match doc {
        1 => "doc".to_string(),
        n => format!("doc{n}"),
    }
}

/// The Redis key of document `doc`'s lock (`lock:doc`, `lock:doc2`, …).
pub fn lock_key(doc: u32) -> String {
    format!("lock:{}", doc_key_name(doc))
}

/// The Redis key of document `doc`'s token counter (`fence:doc`, `fence:doc2`, …).
pub fn token_key(doc: u32) -> String {
    format!("fence:{}", doc_key_name(doc))
}

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

/// Which consensus service a cluster runs ([`cluster`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterKind {
    Etcd,
    Zk,
}

impl ClusterKind {
    pub fn name(self) -> &'static str {
        match self {
            ClusterKind::Etcd => "etcd",
            ClusterKind::Zk => "ZooKeeper",
        }
    }
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
    pub fn cluster(self) -> Option<ClusterKind> {
        match self {
            LockKind::EtcdLock => Some(ClusterKind::Etcd),
            LockKind::ZkLock => Some(ClusterKind::Zk),
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

/// A mutex's data even when a thread panicked holding it: the trial's
/// shared records stay readable, and a panicking proxy thread does not take
/// the harness down with it.
pub(crate) fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        // A live run writes to sockets whose peer a fault may just have
        // closed (a killed worker, a cut connection): that write must fail
        // with EPIPE where it is made, not end the harness with SIGPIPE
        // (main restores the default for `fencesim run … | head`). Children
        // start with the default again (std's Command resets it).
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
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
