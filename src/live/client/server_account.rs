//! The one thing every lock server's part of a user-program trial must
//! offer the rest of the trial: its own account of the lock (which grants a
//! worker holds, once caught up; at the end, the lock's facts and every
//! reason not to trust them). A file of its own, below the backends and
//! the shared trial state that both ask it, so neither imports the other.

use anyhow::Result;

use crate::live::account::majority::LockFact;

/// What the servers' account of a finished trial says.
pub(super) struct Finished {
    pub(super) facts: Vec<LockFact>,
    /// Why the account cannot be trusted (empty: it can).
    pub(super) problems: Vec<String>,
}

/// The server's own account of the lock during one trial.
pub(super) trait ServerAccount: Send + Sync {
    /// The grants `worker` holds or held so far, once the account caught up
    /// with everything the server did before now (`upstream`: the proxy's
    /// upstream whose reply is being held). Err: it could not catch up (the
    /// trial cannot be judged).
    fn grants_of(&self, upstream: usize, worker: usize) -> Result<Vec<u64>>;
    /// Closes the account: the lock's facts, and every reason not to trust them.
    fn finish(&self) -> Finished;
}
