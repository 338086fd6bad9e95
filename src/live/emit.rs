//! How a worker process reports to the harness: one JSON line per record on
//! stdout, stamped with CLOCK_MONOTONIC (the one clock every process on the
//! machine shares, so the harness can merge every worker's records into
//! one order).
//!
//! Its own file because the worker ([`super::worker`]) and the lock lanes
//! it drives ([`super::etcd`], [`super::zk`]) all report, and the lanes
//! must not reach back up into the worker for it.

use std::io::Write;

use serde_json::json;

use super::monotonic_ns;

/// One JSON line to the harness, stamped with CLOCK_MONOTONIC.
pub(crate) fn emit(mut record: serde_json::Value) {
    record["t_ns"] = json!(monotonic_ns());
    let out = std::io::stdout();
    let mut lock = out.lock();
    // The harness reading our stdout is the only observer; if it is gone, so are we.
    let _ = writeln!(lock, "{record}");
    let _ = lock.flush();
}
