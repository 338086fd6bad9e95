//! What a worker did, as the one history builder ([`crate::live::history`])
//! reads it: one typed [`Record`] per thing, written by every worker mode —
//! the built-in worker process and its lock lanes (sent to the harness as
//! JSON lines on stdout, [`Line`], the one place these types cross a
//! process boundary), and a user's program's conversation as its proxies
//! saw it with the lock server's own account of the lock
//! ([`crate::live::client`]).
//!
//! A record says what the worker (or, for the `server` ones, the lock
//! server) did; the history builder decides which events of the documented
//! history it implies (a grant issued, a write rejected, a release that
//! deleted a lease). Records only a worker's own log shows (`io_error`,
//! `moved`, …) are kept so the trial can say what happened.

use serde::{Deserialize, Serialize};

use super::fault::Point;

/// How the database answered a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteOutcome {
    Ok,
    /// Zero rows updated: the fence (or the check) refused it.
    Rejected,
}

/// A Redis grant's lease as the built-in worker saw it set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// When the `SET … NX`'s reply came back (CLOCK_MONOTONIC ns).
    pub set_ns: u64,
    /// The PX TTL it asked for.
    pub ttl_ms: u64,
}

/// One thing a worker did (or, the last four, the lock server did for it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// It asked for the lock (the op it is on, when it knows).
    AcquireSent {
        op: Option<u64>,
    },
    /// It learned it holds the lock. `grant`: the number the server's own
    /// account gave it (a user's program); None: the harness numbers it
    /// (the built-in worker). `server`: 0 the primary, 1 the promoted
    /// replica. `lease`: a Redis grant's lease, when the worker set it.
    /// `holds`: what it holds it by (etcd's lease and key, ZooKeeper's
    /// znode), for the worker's log.
    GrantReceived {
        op: Option<u64>,
        token: Option<u64>,
        grant: Option<u64>,
        server: u16,
        lease: Option<Lease>,
        holds: Option<String>,
    },
    /// It asked to release (the grant it released, when known).
    ReleaseSent {
        op: Option<u64>,
        grant: Option<u64>,
    },
    /// Its release was answered: how many keys it deleted, or why it failed.
    ReleaseDone {
        op: Option<u64>,
        deleted: Option<i64>,
        detail: Option<String>,
    },
    ReadSent {
        op: u64,
        token: Option<u64>,
    },
    /// Its read returned: the document's body (the op id of the write it
    /// shows; None when it is no op's).
    ReadOk {
        op: u64,
        value: Option<u64>,
    },
    /// It sent its write (`value`: the body it writes, when known; `grant`:
    /// the server-numbered grant it acts on, a user's program's).
    WriteSent {
        op: u64,
        token: Option<u64>,
        value: Option<u64>,
        grant: Option<u64>,
    },
    /// check-then-update: the fence it read.
    FenceChecked {
        op: u64,
        value: i64,
    },
    WriteAcked {
        op: u64,
        token: Option<u64>,
        outcome: WriteOutcome,
    },
    OpAbandoned {
        op: Option<u64>,
        detail: Option<String>,
    },
    WorkloadDone,
    /// A ZooKeeper watch fired and woke it: the server's notification.
    WatchNotified {
        op: u64,
        detail: String,
    },
    /// A request failed and is retried (the worker's own log).
    IoError {
        op: Option<u64>,
        detail: String,
    },
    /// It moved to the next Redis server (the promoted replica).
    Moved {
        detail: String,
    },
    /// A keep-alive of its etcd lease failed.
    KeepaliveFailed {
        detail: String,
    },
    /// It booted from its state file after a crash.
    Restarted,
    /// The server granted `grant` (a user's program's trial: the server's
    /// own account).
    GrantIssued {
        grant: u64,
        token: Option<u64>,
    },
    /// The server renewed `grant` (`slack_ns`: how much of the lease was
    /// left).
    RenewOk {
        grant: u64,
        slack_ns: Option<u64>,
    },
    /// A command deleted the lock key, removing `removed`; `grant`: the
    /// deleting worker's own grant.
    ReleaseApplied {
        grant: Option<u64>,
        removed: u64,
        /// Where the server's own order stood then (the history's `order`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<u64>,
        detail: String,
    },
    /// `grant`'s lease ran out on the server.
    LeaseExpired {
        grant: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        order: Option<u64>,
        detail: String,
    },
}

impl Record {
    /// Its kind as the JSON line names it.
    #[cfg(test)]
    pub fn name(&self) -> &'static str {
        match self {
            Record::AcquireSent { .. } => "acquire_sent",
            Record::GrantReceived { .. } => "grant_received",
            Record::ReleaseSent { .. } => "release_sent",
            Record::ReleaseDone { .. } => "release_done",
            Record::ReadSent { .. } => "read_sent",
            Record::ReadOk { .. } => "read_ok",
            Record::WriteSent { .. } => "write_sent",
            Record::FenceChecked { .. } => "fence_checked",
            Record::WriteAcked { .. } => "write_acked",
            Record::OpAbandoned { .. } => "op_abandoned",
            Record::WorkloadDone => "workload_done",
            Record::WatchNotified { .. } => "watch_notified",
            Record::IoError { .. } => "io_error",
            Record::Moved { .. } => "moved",
            Record::KeepaliveFailed { .. } => "keepalive_failed",
            Record::Restarted => "restarted",
            Record::GrantIssued { .. } => "grant_issued",
            Record::RenewOk { .. } => "renew_ok",
            Record::ReleaseApplied { .. } => "release_applied",
            Record::LeaseExpired { .. } => "lease_expired",
        }
    }
}

/// A record with the instant it happened (CLOCK_MONOTONIC ns: one clock
/// for every process on the machine, so every worker's records merge into
/// one order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamped {
    pub t_ns: u64,
    pub record: Record,
}

/// One line of the built-in worker process's stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
pub enum Line {
    /// Connected: it waits for `start`.
    Ready,
    /// It stopped right after `point` and waits for the harness to act.
    Gate {
        point: Point,
    },
    Record(Stamped),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back_as_it_was_written() {
        let lines = [
            Line::Ready,
            Line::Gate {
                point: Point::FenceChecked,
            },
            Line::Record(Stamped {
                t_ns: 7,
                record: Record::GrantReceived {
                    op: Some(1001),
                    token: Some(3),
                    grant: None,
                    server: 1,
                    lease: Some(Lease {
                        set_ns: 5,
                        ttl_ms: 300,
                    }),
                    holds: None,
                },
            }),
            Line::Record(Stamped {
                t_ns: 9,
                record: Record::WriteAcked {
                    op: 1001,
                    token: None,
                    outcome: WriteOutcome::Rejected,
                },
            }),
        ];
        for line in lines {
            let text = serde_json::to_string(&line).expect("serializes");
            assert!(!text.contains('\n'), "one line: {text}");
            let back: Line = serde_json::from_str(&text).expect("reads back");
            assert_eq!(back, line, "{text}");
        }
        let gate = serde_json::to_string(&Line::Gate {
            point: Point::ReadOk,
        })
        .expect("serializes");
        assert_eq!(gate, r#"{"line":"gate","point":"read_ok"}"#);
    }
}
