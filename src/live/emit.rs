//! How a worker process reports to the harness: one JSON line per
//! [`Line`] on stdout — its records stamped with CLOCK_MONOTONIC (the one
//! clock every process on the machine shares, so the harness can merge
//! every worker's records into one order), its readiness, its gate.
//!
//! Its own file because the worker ([`super::worker`]) and the lock lanes
//! it drives (the Redis, etcd and ZooKeeper rooms) all report, and the
//! lanes must not reach back up into the worker for it.

use std::io::Write;

use super::monotonic_ns;
use super::record::{Line, Record, Stamped};

/// One record to the harness, stamped as it is written: under the
/// stdout lock, so a worker's records (its lanes are threads) leave in
/// the order of their stamps.
pub(crate) fn emit(record: Record) {
    let out = std::io::stdout();
    let mut lock = out.lock();
    let t_ns = monotonic_ns();
    write(&mut lock, &Line::Record(Stamped { t_ns, record }));
}

/// One line to the harness.
pub(crate) fn emit_line(line: &Line) {
    write(&mut std::io::stdout().lock(), line);
}

fn write(out: &mut std::io::StdoutLock, line: &Line) {
    let Ok(text) = serde_json::to_string(line) else {
        return;
    };
    // The harness reading our stdout is the only observer; if it is gone, so are we.
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
