//! The one thread pool every sweep runs on: `run`'s seeds, `tradeoff`'s
//! TTL grid, `search`'s fault placements and `validate`'s rounds.
//!
//! Building a rayon pool per scenario (as each sweep used to) spawns and
//! joins `jobs` threads every time — dozens of times in `run scenarios/`.
//! Here a pool is built once per process for each `jobs` count asked for
//! (the CLI asks for one; tests compare several) and kept, so the threads,
//! and the per-thread simulator scratch they keep (see
//! [`crate::suite::seed`]), live for the whole process. Results never
//! depend on the pool: every sweep folds commutatively.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::ThreadPool;

static POOLS: OnceLock<Mutex<BTreeMap<usize, Arc<ThreadPool>>>> = OnceLock::new();

/// The process's pool of `jobs` threads (at least one), built on first use.
pub fn pool(jobs: usize) -> Arc<ThreadPool> {
    let jobs = jobs.max(1);
    let pools = POOLS.get_or_init(Default::default);
    let mut pools = pools
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Arc::clone(pools.entry(jobs).or_insert_with(|| {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(jobs)
                .build()
                .expect("thread pool"),
        )
    }))
}

/// Runs `f` on the pool of `jobs` threads.
pub fn install<R: Send>(jobs: usize, f: impl FnOnce() -> R + Send) -> R {
    pool(jobs).install(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_built_once_per_job_count_and_has_that_many_threads() {
        let a = pool(3);
        let b = pool(3);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 3);
        assert_eq!(pool(0).current_num_threads(), 1);
    }
}
