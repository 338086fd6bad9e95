//! The op-id rule of every live history: worker i's (0-based) n-th
//! operation (1-based) is `(i + 1) * 1000 + n` — the simulator's rule
//! (`protocol::worker`, `index * 1000 + n` with a 1-based index), so a live
//! history reads like a simulated one and an op id names its worker.

/// Op ids a worker may use: at most this many operations each.
pub(crate) const OPS_PER_WORKER: u64 = 1000;

/// The op id of worker `worker`'s `n`-th operation.
pub(crate) fn op_id(worker: usize, n: u64) -> u64 {
    (worker as u64 + 1) * OPS_PER_WORKER + n
}

/// The worker an op id belongs to (0-based).
pub(crate) fn worker_of(op: u64) -> usize {
    (op / OPS_PER_WORKER).saturating_sub(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_id_names_its_worker() {
        assert_eq!(op_id(0, 1), 1001);
        assert_eq!(op_id(2, 7), 3007);
        assert_eq!(worker_of(op_id(2, 7)), 2);
        assert_eq!(worker_of(0), 0);
    }
}
