//! The one history builder of the live mode: the built-in workers' records
//! ([`super::trial`]) and a user's program's decoded conversation
//! ([`super::client`], turned into the same records) become the documented
//! history ([`crate::history`]) here, with the harness's own records and
//! PostgreSQL's audit rows, and are judged by the same checker as every
//! simulated run.
//!
//! How the history is made honest: invocations and completions come from
//! the workers (CLOCK_MONOTONIC, one clock for all processes); what landed
//! comes from the database (the audit trigger's rows in commit order), not
//! from a worker's belief. A `write_accepted` is placed at the latest of its
//! own `write_sent` and the previous commit's placement: the real commit
//! happened between its send and its answer, after the previous commit, so
//! this placement never runs ahead of reality and keeps commit order.
//! Redis does not report its grants, so `grant_issued` is recorded when the
//! worker's `SET … NX` came back OK (grants numbered in that order), just
//! before that worker's `grant_received`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::common::ops::worker_of;
use super::record::{Record, Stamped, WriteOutcome};
use super::LockKind;
use crate::check::{self, Report};
use crate::history::{Event, History, Kind, Outcome};

/// What one trial did and what the checker made of it.
pub struct TrialResult {
    pub report: Report,
    pub history: History,
    /// One line per applied fault: what, when, how long the stop took to confirm.
    pub faults: Vec<String>,
    /// What the lock server's account found rather than was told (a user's
    /// program's lock key and token key), one line each: the same in every
    /// trial of a scenario.
    pub notes: Vec<String>,
    /// What happened to the lock server's account in this trial alone.
    pub trial_notes: Vec<String>,
}

/// Where a harness record belongs: a worker (by index) or a Redis server
/// (0 = the primary, 1 = the replica).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HarnessNode {
    Worker(usize),
    Coord(u16),
}

/// Something the harness did or saw (pause, resume, crash, restart,
/// failover), with its CLOCK_MONOTONIC time.
#[derive(Clone, Debug)]
pub struct HarnessRecord {
    pub node: HarnessNode,
    pub kind: Kind,
    pub t_ns: u64,
    pub detail: String,
}

/// Builds the history of a finished trial and judges it: the common end of
/// both modes. `audit` is (commit_seq, op_id, token) in commit order.
/// `documents`: each worker's document row (empty: every worker on 1).
pub fn judge(
    workers: &[String],
    documents: &[u32],
    lock: LockKind,
    records: &[(usize, Stamped)],
    harness: &[HarnessRecord],
    audit: &[(i64, i64, i64)],
    faults: Vec<String>,
) -> Result<TrialResult> {
    let history = build_history(workers, documents, lock, records, harness, audit)?;
    let report = check::check(&history);
    Ok(TrialResult {
        report,
        history,
        faults,
        notes: Vec::new(),
        trial_notes: Vec::new(),
    })
}

/// A record before it has its place in the merged order.
struct Pending {
    t_ns: u64,
    /// Tie-break at equal times: issue before receipt, worker records in their own order.
    rank: (u8, u64),
    event: Event,
}

/// A Redis grant's lease, as the worker saw it set.
#[derive(Clone, Copy, Debug)]
struct Lease {
    grant: u64,
    server: u16,
    /// The history's key of its document (each document its own lock key).
    key: u16,
    /// When the `SET … NX`'s reply came back.
    set_ns: u64,
    /// `set_ns` + the PX TTL.
    expiry_ns: u64,
    /// When the `SET … NX` was sent.
    asked_ns: u64,
}

/// A release that deleted the lock key (its reply said 1).
struct Deletion {
    reply_ns: u64,
    asked_ns: u64,
    /// Index of its record, for the order at equal times.
    record: usize,
    /// The grant the releasing worker held.
    mine: Option<u64>,
    server: u16,
    /// The key it deleted (the releasing worker's document).
    key: u16,
}

/// A lease a deletion removed: (when, server, grant).
type Removal = (u64, u16, u64);

/// The lease a delete of `key` on `server`, sent at `asked_ns` and answered
/// at `reply_ns`, removed, and the instant to place that removal at.
///
/// A lease set by its `SET … NX` request at `a` lives at least until
/// `a + ttl` (Redis started its TTL no earlier than the request). If such a
/// lease was alive when the delete was sent and not yet removed, no other
/// `SET … NX` could succeed until the delete ran, so a grant set while the
/// delete was in flight is later than the delete: the delete removed the
/// older lease, just before the newer grant. Without that certainty the
/// newest lease set before the reply is the one removed.
fn deleted_lease(
    leases: &[Lease],
    removals: &[Removal],
    lost_between: &dyn Fn(u16, u64, u64) -> bool,
    server: u16,
    key: u16,
    asked_ns: u64,
    reply_ns: u64,
) -> Option<(u64, u64)> {
    let on_server = || {
        leases
            .iter()
            .filter(move |l| l.server == server && l.key == key)
    };
    let first_in_flight = on_server()
        .filter(|l| l.set_ns > asked_ns && l.set_ns <= reply_ns)
        .min_by_key(|l| l.set_ns);
    let certainly_alive = on_server()
        .filter(|l| l.set_ns <= asked_ns)
        .max_by_key(|l| l.set_ns)
        .filter(|l| {
            let ttl_ns = l.expiry_ns - l.set_ns;
            let removed = removals.iter().any(|r| r.1 == server && r.2 == l.grant);
            first_in_flight.is_some_and(|next| {
                !removed
                    && !lost_between(server, l.set_ns, next.set_ns)
                    && l.asked_ns + ttl_ns >= next.set_ns
            })
        });
    if let (Some(old), Some(next)) = (certainly_alive, first_in_flight) {
        return Some((old.grant, next.set_ns));
    }
    on_server()
        .filter(|l| l.set_ns <= reply_ns)
        .max_by_key(|l| l.set_ns)
        .map(|l| (l.grant, reply_ns))
}

/// The merge in progress: the events placed so far and what later records
/// need to know of earlier ones.
struct Builder {
    lock: LockKind,
    /// Each worker's key (the index of its document among the trial's).
    key_of: Vec<u16>,
    keys: Vec<String>,
    /// Node index of the resource (after the workers) and of coord/0.
    resource: u16,
    coord: u16,
    out: Vec<Pending>,
    grant_id: u64,
    /// op id -> write_sent t / write_acked t, to place the database's commits.
    sent_at: BTreeMap<u64, u64>,
    acked_at: BTreeMap<u64, u64>,
    /// (grant, server) held by each worker, for release records.
    held: BTreeMap<usize, (u64, u16)>,
    leases: Vec<Lease>,
    deletions: Vec<Deletion>,
    /// Each worker's latest acquire and release request.
    asked_at: BTreeMap<usize, u64>,
    release_asked_at: BTreeMap<usize, u64>,
}

/// Merges worker records, the harness's records and audit rows into one
/// history. `audit` is (commit_seq, op_id, token) in commit order.
///
/// What the harness adds because Redis does not report it:
/// - `grant_issued` when a worker's `SET … NX` came back OK;
/// - `release_applied` when a release deleted the key (`DEL`/compare-and-
///   delete returned 1). The delete ran somewhere between its request and
///   its reply, and the proxy sees replies on different connections in an
///   order Redis need not have run them in. So the lease it removed is the
///   one it must have met: a lease still certainly alive when the delete was
///   sent blocked every `SET … NX` until the delete removed it, so a grant
///   set while the delete was in flight came after the delete (the delete is
///   placed just before that grant). Otherwise it is the newest grant set on
///   that server before the reply (only a successful `SET … NX` creates the
///   key);
/// - `lease_expired` at `set_ns + ttl` (the `SET`'s reply time plus the PX
///   TTL, on the one monotonic clock): Redis set the TTL before it replied,
///   so the key is certainly gone by then — unless a release deleted it, or
///   the server that held it crashed or was failed over, first (then it was
///   lost, not expired), or the run ended before that instant.
pub fn build_history(
    workers: &[String],
    documents: &[u32],
    lock: LockKind,
    records: &[(usize, Stamped)],
    harness: &[HarnessRecord],
    audit: &[(i64, i64, i64)],
) -> Result<History> {
    let resource = workers.len() as u16;
    let mut nodes: Vec<String> = workers.iter().map(|w| format!("worker/{w}")).collect();
    nodes.push("resource/0".into());
    nodes.push(if lock == LockKind::None {
        "resource/0-locks".into()
    } else {
        "coord/0".into()
    });
    // The replica, promoted in a failover scenario.
    nodes.push("coord/1".into());
    let mut docs: Vec<u32> = documents.to_vec();
    docs.resize(workers.len().max(docs.len()), 1);
    let mut distinct = docs.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let key_of = docs
        .iter()
        .map(|d| distinct.iter().position(|x| x == d).unwrap_or(0) as u16)
        .collect();
    let mut b = Builder {
        lock,
        key_of,
        keys: distinct.into_iter().map(super::doc_key_name).collect(),
        resource,
        coord: resource + 1,
        out: Vec::new(),
        grant_id: 0,
        sent_at: BTreeMap::new(),
        acked_at: BTreeMap::new(),
        held: BTreeMap::new(),
        leases: Vec::new(),
        deletions: Vec::new(),
        asked_at: BTreeMap::new(),
        release_asked_at: BTreeMap::new(),
    };
    let last_ns = records
        .iter()
        .map(|(_, r)| r.t_ns)
        .chain(harness.iter().map(|h| h.t_ns))
        .max()
        .unwrap_or(0);
    for (n, (i, v)) in records.iter().enumerate() {
        b.worker_record(n, *i, v)?;
    }
    // A server crash or failover loses its leases; it does not expire them.
    let lost_between = |server: u16, from: u64, to: u64| -> bool {
        harness.iter().any(|h| {
            let hits = match (h.kind, h.node) {
                (Kind::Crash, HarnessNode::Coord(s)) => s == server,
                // A failover kills the primary.
                (Kind::Failover, _) => server == 0,
                _ => false,
            };
            hits && h.t_ns > from && h.t_ns < to
        })
    };
    let removals = b.place_releases(&lost_between);
    b.place_expiries(&removals, &lost_between, last_ns);
    b.place_harness(harness);
    b.place_commits(audit)?;
    Ok(b.finish(nodes))
}

impl Builder {
    fn push(&mut self, t_ns: u64, rank: (u8, u64), event: Event) {
        self.out.push(Pending { t_ns, rank, event });
    }

    /// Worker `i`'s key.
    fn key(&self, i: usize) -> u16 {
        self.key_of.get(i).copied().unwrap_or(0)
    }

    /// The key of op `op`'s writer (the op-id rule names it).
    fn key_of_op(&self, op: u64) -> u16 {
        self.key(worker_of(op))
    }

    /// One worker record `n` (of worker `i`) as its event, with what the
    /// servers did that it implies (a grant issued, a write rejected).
    fn worker_record(&mut self, n: usize, i: usize, stamped: &Stamped) -> Result<()> {
        let t_ns = stamped.t_ns;
        let mut e = Event::new(0, t_ns, i as u16, Kind::AcquireSent);
        e.key = Some(self.key(i));
        e.kind = match &stamped.record {
            Record::AcquireSent { op } => {
                self.asked_at.insert(i, t_ns);
                e.op_id = *op;
                Kind::AcquireSent
            }
            Record::GrantReceived {
                token,
                grant: Some(grant),
                server,
                ..
            } => {
                self.held.insert(i, (*grant, (*server).min(1)));
                e.token = *token;
                e.grant_id = Some(*grant);
                Kind::GrantReceived
            }
            Record::GrantReceived {
                token,
                grant: None,
                server,
                lease,
                ..
            } => {
                e.token = *token;
                self.granted(n, i, ((*server).min(1), *lease), t_ns, &mut e);
                Kind::GrantReceived
            }
            Record::ReadSent { op, token } => {
                (e.op_id, e.token) = (Some(*op), *token);
                Kind::ReadSent
            }
            Record::ReadOk { op, value } => {
                (e.op_id, e.value) = (Some(*op), *value);
                Kind::ReadOk
            }
            Record::WriteSent {
                op,
                token,
                value,
                grant,
            } => {
                (e.op_id, e.token, e.value, e.grant_id) = (Some(*op), *token, *value, *grant);
                self.sent_at.entry(*op).or_insert(t_ns);
                Kind::WriteSent
            }
            Record::WriteAcked { op, token, outcome } => {
                (e.op_id, e.token) = (Some(*op), *token);
                self.write_acked(n, *outcome, t_ns, &mut e);
                Kind::WriteAcked
            }
            Record::ReleaseSent { grant, .. } => {
                self.release_asked_at.insert(i, t_ns);
                e.grant_id = grant.or(self.held.get(&i).map(|(g, _)| *g));
                Kind::ReleaseSent
            }
            Record::ReleaseDone {
                deleted: Some(d), ..
            } if *d > 0 && self.lock != LockKind::None => {
                self.deleted(n, i, t_ns);
                return Ok(());
            }
            Record::WorkloadDone => {
                e.key = None;
                Kind::WorkloadDone
            }
            // A ZooKeeper watch fired and woke this worker: the server's notification.
            Record::WatchNotified { detail, .. } => {
                let mut w = Event::new(0, t_ns, self.coord, Kind::WatchNotified);
                w.key = e.key;
                w.detail = Some(detail.clone());
                self.push(t_ns, (1, n as u64), w);
                return Ok(());
            }
            Record::OpAbandoned { op, detail } => {
                (e.op_id, e.detail) = (*op, detail.clone());
                Kind::OpAbandoned
            }
            Record::GrantIssued { .. }
            | Record::RenewOk { .. }
            | Record::ReleaseApplied { .. }
            | Record::LeaseExpired { .. } => {
                self.server_record(n, i, stamped);
                return Ok(());
            }
            // The worker's own log only.
            Record::ReleaseDone { .. }
            | Record::FenceChecked { .. }
            | Record::IoError { .. }
            | Record::Moved { .. }
            | Record::KeepaliveFailed { .. }
            | Record::Restarted => return Ok(()),
        };
        self.push(t_ns, (2, n as u64), e);
        Ok(())
    }

    /// A release of worker `i` that deleted the lock key (its reply said
    /// so), placed later against the leases ([`Builder::place_releases`]).
    fn deleted(&mut self, n: usize, i: usize, t_ns: u64) {
        let mine = self.held.get(&i).map(|(g, _)| *g);
        let server = self.held.get(&i).map_or(0, |(_, s)| *s);
        let asked = self
            .release_asked_at
            .get(&i)
            .copied()
            .unwrap_or(t_ns)
            .min(t_ns);
        self.deletions.push(Deletion {
            reply_ns: t_ns,
            asked_ns: asked,
            record: n,
            mine,
            server,
            key: self.key(i),
        });
    }

    /// What the lock server's own account says it did (a user's program's
    /// trial: [`crate::live::client`]), placed as told on coord/0 — no
    /// inference from the worker's side needed: `grant_issued` (grant,
    /// token), `release_applied` (grant = the releasing worker's own,
    /// removed = whose key it deleted), `lease_expired`, `renew_ok`.
    fn server_record(&mut self, n: usize, i: usize, stamped: &Stamped) {
        let t_ns = stamped.t_ns;
        let mut s = Event::new(0, t_ns, self.coord, Kind::GrantIssued);
        s.key = Some(self.key(i));
        match &stamped.record {
            Record::GrantIssued { grant, token } => {
                (s.grant_id, s.token) = (Some(*grant), *token);
            }
            Record::RenewOk { grant, slack_ns } => {
                s.kind = Kind::RenewOk;
                (s.grant_id, s.value) = (Some(*grant), *slack_ns);
            }
            Record::ReleaseApplied {
                grant,
                removed,
                order,
                detail,
            } => {
                s.kind = Kind::ReleaseApplied;
                (s.grant_id, s.removed_grant_id) = (*grant, Some(*removed));
                (s.order, s.detail) = (*order, Some(detail.clone()));
            }
            Record::LeaseExpired {
                grant,
                order,
                detail,
            } => {
                s.kind = Kind::LeaseExpired;
                (s.grant_id, s.order) = (Some(*grant), *order);
                s.detail = Some(detail.clone());
            }
            _ => return,
        }
        self.push(t_ns, (0, n as u64), s);
    }

    /// A worker's `grant_received` of a grant the harness numbers: its
    /// lease noted (a Redis grant's, when the worker set it), and the
    /// server's `grant_issued` placed just before the receipt.
    fn granted(
        &mut self,
        n: usize,
        i: usize,
        (server, lease): (u16, Option<super::record::Lease>),
        t_ns: u64,
        e: &mut Event,
    ) {
        self.grant_id += 1;
        let grant_id = self.grant_id;
        self.held.insert(i, (grant_id, server));
        if let Some(l) = lease {
            let asked = self
                .asked_at
                .get(&i)
                .copied()
                .unwrap_or(l.set_ns)
                .min(l.set_ns);
            self.leases.push(Lease {
                grant: grant_id,
                server,
                key: self.key(i),
                set_ns: l.set_ns,
                expiry_ns: l.set_ns + l.ttl_ms * 1_000_000,
                asked_ns: asked,
            });
        }
        let mut issued = Event::new(0, t_ns, self.coord + server, Kind::GrantIssued);
        issued.key = e.key;
        issued.grant_id = Some(grant_id);
        issued.token = e.token;
        self.push(t_ns, (0, n as u64), issued);
        e.grant_id = Some(grant_id);
    }

    /// A worker's `write_acked`: its outcome, and for a write the fence
    /// refused, the database's `write_rejected` (zero rows, no trigger).
    fn write_acked(&mut self, n: usize, outcome: WriteOutcome, t_ns: u64, e: &mut Event) {
        let rejected = outcome == WriteOutcome::Rejected;
        e.outcome = Some(if rejected {
            Outcome::Rejected
        } else {
            Outcome::Ok
        });
        let Some(op) = e.op_id else {
            return;
        };
        self.acked_at.insert(op, t_ns);
        if rejected {
            // The database's answer: zero rows updated, no trigger fired.
            let mut r = Event::new(0, t_ns, self.resource, Kind::WriteRejected);
            r.key = e.key;
            r.op_id = Some(op);
            r.token = e.token;
            r.detail = Some("0 rows updated".into());
            self.push(t_ns, (1, n as u64), r);
        }
    }

    /// The key each deletion removed, and when (see [`build_history`]).
    fn place_releases(&mut self, lost_between: &dyn Fn(u16, u64, u64) -> bool) -> Vec<Removal> {
        let mut removals: Vec<Removal> = Vec::new();
        for d in std::mem::take(&mut self.deletions) {
            let (removed, at_ns, rank) = deleted_lease(
                &self.leases,
                &removals,
                lost_between,
                d.server,
                d.key,
                d.asked_ns,
                d.reply_ns,
            )
            .map_or((None, d.reply_ns, 1), |(g, at)| {
                (Some(g), at, if at < d.reply_ns { 0 } else { 1 })
            });
            let mut r = Event::new(0, at_ns, self.coord + d.server, Kind::ReleaseApplied);
            r.key = Some(d.key);
            r.grant_id = d.mine;
            r.removed_grant_id = removed;
            if let Some(g) = removed {
                removals.push((at_ns, d.server, g));
            }
            self.push(at_ns, (rank, d.record as u64), r);
        }
        removals
    }

    /// `lease_expired` of every lease neither removed nor lost first, and
    /// not past the run's end.
    fn place_expiries(
        &mut self,
        removals: &[Removal],
        lost_between: &dyn Fn(u16, u64, u64) -> bool,
        last_ns: u64,
    ) {
        for (n, l) in self.leases.clone().iter().enumerate() {
            let removed_first = removals
                .iter()
                .any(|(t, s, g)| *g == l.grant && *s == l.server && *t < l.expiry_ns);
            if removed_first
                || lost_between(l.server, l.set_ns, l.expiry_ns)
                || l.expiry_ns > last_ns
            {
                continue;
            }
            let mut e = Event::new(0, l.expiry_ns, self.coord + l.server, Kind::LeaseExpired);
            e.key = Some(l.key);
            e.grant_id = Some(l.grant);
            e.detail = Some("PX TTL elapsed since the SET's reply".into());
            self.push(l.expiry_ns, (1, n as u64), e);
        }
    }

    /// The harness's own records (pauses, crashes, restarts, failovers, …).
    fn place_harness(&mut self, harness: &[HarnessRecord]) {
        for h in harness {
            let node = match h.node {
                HarnessNode::Worker(i) => i as u16,
                HarnessNode::Coord(s) => self.coord + s.min(1),
            };
            let mut e = Event::new(0, h.t_ns, node, h.kind);
            e.detail = Some(h.detail.clone());
            self.push(h.t_ns, (2, u64::MAX), e);
        }
    }

    /// The database's commits, in commit order, each placed at the latest
    /// of its own `write_sent` and the previous commit's placement of the
    /// same document (row locks order one row's commits, not two rows').
    fn place_commits(&mut self, audit: &[(i64, i64, i64)]) -> Result<()> {
        let mut placed_of: BTreeMap<u16, u64> = BTreeMap::new();
        for (n, (commit_seq, op, token)) in audit.iter().enumerate() {
            let op = *op as u64;
            let Some(&sent) = self.sent_at.get(&op) else {
                bail!("audit row {commit_seq}: op {op} was never sent by a worker");
            };
            let key = self.key_of_op(op);
            let placed = placed_of.get(&key).copied().unwrap_or(0).max(sent);
            placed_of.insert(key, placed);
            if let Some(&acked) = self.acked_at.get(&op) {
                debug_assert!(placed <= acked, "commit placed after its answer");
            }
            let mut e = Event::new(0, placed, self.resource, Kind::WriteAccepted);
            e.key = Some(key);
            e.op_id = Some(op);
            e.value = Some(op);
            e.token = (*token != 0).then_some(*token as u64);
            e.detail = Some(format!("audit commit_seq {commit_seq}"));
            self.push(placed, (3, n as u64), e);
        }
        Ok(())
    }

    /// Everything in one order, numbered, times from the first event.
    fn finish(mut self, nodes: Vec<String>) -> History {
        self.out.sort_by_key(|p| (p.t_ns, p.rank));
        let base = self.out.first().map_or(0, |p| p.t_ns);
        let events = self
            .out
            .into_iter()
            .enumerate()
            .map(|(seq, mut p)| {
                p.event.seq = seq as u64 + 1;
                p.event.t_true_ns = p.t_ns - base;
                p.event
            })
            .collect();
        History {
            nodes,
            keys: self.keys,
            events,
        }
    }
}

/// Writes a history as JSON lines (docs/history.md).
pub fn write_history(h: &History, path: &PathBuf) -> Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    crate::history::jsonl::write(h, &mut f)?;
    f.flush()?;
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::record::Lease;

    const MS: u64 = 1_000_000;

    fn rec(worker: usize, kind: &str, t_ms: u64) -> (usize, Stamped) {
        let record = match kind {
            "acquire_sent" => Record::AcquireSent { op: None },
            "release_sent" => Record::ReleaseSent {
                op: None,
                grant: None,
            },
            _ => panic!("{kind}"),
        };
        let t_ns = t_ms * MS;
        (worker, Stamped { t_ns, record })
    }

    fn granted(worker: usize, t_ms: u64, token: u64) -> (usize, Stamped) {
        let t_ns = t_ms * MS;
        let record = Record::GrantReceived {
            op: None,
            token: Some(token),
            grant: None,
            server: 0,
            lease: Some(Lease {
                set_ns: t_ns,
                ttl_ms: 300,
            }),
            holds: None,
        };
        (worker, Stamped { t_ns, record })
    }

    fn deleted(worker: usize, t_ms: u64) -> (usize, Stamped) {
        let record = Record::ReleaseDone {
            op: None,
            deleted: Some(1),
            detail: None,
        };
        let t_ns = t_ms * MS;
        (worker, Stamped { t_ns, record })
    }

    fn unsafe_releases(lock: LockKind, records: &[(usize, Stamped)]) -> usize {
        let workers = ["A".to_string(), "B".to_string()];
        let h = build_history(&workers, &[], lock, records, &[], &[]).expect("history");
        check::check(&h)
            .violations
            .iter()
            .filter(|v| v.kind == check::ViolationKind::UnsafeRelease)
            .count()
    }

    /// Seen on real Redis: B's compare-and-delete ran before A's `SET NX`
    /// (which could only succeed once B's key was gone), but its reply
    /// reached the proxy after A's grant.
    #[test]
    fn a_delete_whose_reply_overtakes_the_next_grant_removed_its_own_lease() {
        let records = [
            rec(1, "acquire_sent", 100),
            granted(1, 101, 1),
            rec(1, "release_sent", 200),
            rec(0, "acquire_sent", 200),
            granted(0, 201, 2),
            deleted(1, 202),
            rec(0, "release_sent", 300),
            deleted(0, 301),
        ];
        assert_eq!(unsafe_releases(LockKind::RedisSetNxCad, &records), 0);
    }

    /// Two documents, two lock keys on one Redis: B's compare-and-delete
    /// of its own document's key removed its own lease, not A's newer one
    /// on the other document (judged as one key, it would look like B
    /// deleting A's lock).
    #[test]
    fn a_delete_removes_the_lease_of_its_own_documents_key() {
        let records = [
            rec(1, "acquire_sent", 100),
            granted(1, 101, 1),
            rec(0, "acquire_sent", 150),
            granted(0, 151, 1),
            rec(1, "release_sent", 200),
            deleted(1, 201),
            rec(0, "release_sent", 210),
            deleted(0, 211),
        ];
        let workers = ["A".to_string(), "B".to_string()];
        let h = build_history(
            &workers,
            &[1, 2],
            LockKind::RedisSetNxCad,
            &records,
            &[],
            &[],
        )
        .expect("history");
        assert_eq!(h.keys, ["doc", "doc2"]);
        let removed: Vec<(Option<u16>, Option<u64>, Option<u64>)> = h
            .events
            .iter()
            .filter(|e| e.kind == Kind::ReleaseApplied)
            .map(|e| (e.key, e.grant_id, e.removed_grant_id))
            .collect();
        assert_eq!(
            removed,
            [(Some(1), Some(1), Some(1)), (Some(0), Some(2), Some(2))]
        );
        let report = check::check(&h);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        // The same records on one document: B's delete now meets A's lease.
        assert_eq!(unsafe_releases(LockKind::RedisSetNxCad, &records), 1);
    }

    /// The unsafe twin: B's lease expired, A took the lock, and only then
    /// did B's plain `DEL` go out: it deleted A's lock.
    #[test]
    fn a_delete_sent_after_its_lease_expired_and_the_next_grant_removed_that_grant() {
        let records = [
            rec(1, "acquire_sent", 100),
            granted(1, 101, 1),
            rec(0, "acquire_sent", 402),
            granted(0, 403, 2),
            rec(1, "release_sent", 410),
            deleted(1, 411),
        ];
        assert_eq!(unsafe_releases(LockKind::RedisSetNxDel, &records), 1);
    }
}
