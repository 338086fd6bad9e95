//! The environment a user's program is started with (`--worker-cmd`): the
//! name of every `FENCESIM_*` variable a trial sets for it, whichever lock
//! server it runs on. The values are set where they are known — the lock
//! server's in its room's `backend` (`redis/`, `etcd/`, `zk/`), PostgreSQL's
//! and the worker's in [`super`]'s `start_programs`, the reaper's tag in
//! [`super::program`] — and docs/live-client.md tables them;
//! `tests/it/live/docs.rs` holds that table and every variable the code
//! sets to this list.

/// Every variable a user's program may find in its environment.
pub const PROGRAM_ENV: [&str; 16] = [
    // The lock server's (one room's set per scenario).
    "FENCESIM_REDIS_URL",
    "FENCESIM_REDIS_URLS",
    "FENCESIM_LOCK_KEY",
    "FENCESIM_TOKEN_KEY",
    "FENCESIM_ETCD_ENDPOINTS",
    "FENCESIM_ETCD_LOCK",
    "FENCESIM_ZK_HOSTS",
    "FENCESIM_ZK_LOCK_PATH",
    // PostgreSQL's and the worker's (every scenario).
    "FENCESIM_POSTGRES_URL",
    "FENCESIM_WORKER_ID",
    "FENCESIM_DOC_ID",
    "FENCESIM_OPS",
    "FENCESIM_TTL_MS",
    "FENCESIM_WORK_MS",
    "FENCESIM_TRIAL",
    // The reaper's tag (crate::validate::reaper::TAG_VAR).
    "FENCESIM_PROCESS_TAG",
];
