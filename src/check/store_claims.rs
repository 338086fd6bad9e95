//! The store under test held to its own claims.
//!
//! Every write carries a unique value (its op id), and the resource answers
//! every request in one order — the order in which its answers leave it,
//! which the harness records. So each `write_accepted` (the resource said
//! "write_ok") claims: from here until the next accepted write on this key,
//! reads return this value. Three ways to break that, each with evidence:
//!
//! - `acked_write_lost`: a write was acknowledged, a later read (before any
//!   newer acknowledged write) returned something else, and no read ever
//!   returned the acknowledged value — it vanished (e.g. acknowledged before
//!   it was durable, then the store crashed).
//! - `stale_read`: a read returned a value older than the latest
//!   acknowledged one, which other reads did see (served from a stale copy).
//! - `rejected_write_visible`: a write the store refused (and never
//!   accepted, not even on a retransmission) shows up in a read.
//!
//! Only `read_served` with outcome ok is judged: a fence rejection returns
//! no value. Values that no write carried are not judged here. The built-in
//! resource keeps these claims by construction (fence and value change in
//! one synced step before the answer leaves); they exist for implementations
//! under `fencesim validate`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::history::{Event, History, Kind, Outcome};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ClaimKind {
    AckedWriteLost,
    StaleRead,
    RejectedWriteVisible,
}

impl ClaimKind {
    pub const ALL: [ClaimKind; 3] = [
        ClaimKind::AckedWriteLost,
        ClaimKind::StaleRead,
        ClaimKind::RejectedWriteVisible,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ClaimKind::AckedWriteLost => "acked_write_lost",
            ClaimKind::StaleRead => "stale_read",
            ClaimKind::RejectedWriteVisible => "rejected_write_visible",
        }
    }

    pub fn doc(self) -> &'static str {
        match self {
            ClaimKind::AckedWriteLost => {
                "the store acknowledged a write that no later read ever returned"
            }
            ClaimKind::StaleRead => {
                "a read returned a value older than the latest acknowledged write"
            }
            ClaimKind::RejectedWriteVisible => "a write the store rejected is visible to a read",
        }
    }
}

impl fmt::Display for ClaimKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClaimViolation {
    pub kind: ClaimKind,
    pub key: u16,
    /// `seq` numbers of the records that prove it, ascending.
    pub evidence: Vec<u64>,
    pub explanation: String,
}

/// Kept with full evidence per kind; the rest are only counted.
const KEPT_PER_KIND: usize = 16;

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ClaimsReport {
    pub violations: Vec<ClaimViolation>,
    pub counts: [u64; 3],
    /// Reads judged (served ok after at least one acknowledged write or not).
    pub reads_judged: u64,
}

impl ClaimsReport {
    pub fn count(&self, kind: ClaimKind) -> u64 {
        self.counts[kind as usize]
    }

    pub fn is_clean(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    pub fn kinds(&self) -> impl Iterator<Item = ClaimKind> + '_ {
        ClaimKind::ALL.into_iter().filter(|k| self.count(*k) > 0)
    }

    fn push(&mut self, v: ClaimViolation) {
        let n = &mut self.counts[v.kind as usize];
        *n += 1;
        if *n as usize <= KEPT_PER_KIND {
            self.violations.push(v);
        }
    }

    /// Text like `report::replay::violations`: each violation with its records.
    pub fn render(&self, h: &History) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for v in &self.violations {
            let _ = writeln!(
                s,
                "VIOLATION {} on key {}: {}",
                v.kind,
                h.key_name(v.key),
                v.explanation
            );
            for seq in &v.evidence {
                if let Some(e) = h.by_seq(*seq) {
                    let _ = writeln!(s, "    {}", h.describe(e));
                }
            }
        }
        for k in self.kinds() {
            let kept = self.violations.iter().filter(|v| v.kind == k).count() as u64;
            if self.count(k) > kept {
                let _ = writeln!(s, "({} more {k} not shown)", self.count(k) - kept);
            }
        }
        s
    }
}

/// A read that returned something other than the acknowledged value.
struct Suspect {
    key: u16,
    read_seq: u64,
    read_value: u64,
    /// The acknowledged write it should have seen: (accept seq, value).
    acked: (u64, u64),
}

#[derive(Default)]
struct Claims {
    /// op id -> value, from the first `write_sent`.
    sent_value: BTreeMap<u64, u64>,
    /// key -> latest acknowledged (accept seq, value).
    acked: BTreeMap<u16, (u64, u64)>,
    accepted_values: BTreeSet<u64>,
    /// value -> seq of the first rejection of a write carrying it.
    rejected: BTreeMap<u64, u64>,
    /// Values some read returned.
    seen: BTreeSet<u64>,
    suspects: Vec<Suspect>,
    /// (read seq, reject seq, key, value) of reads returning a rejected value.
    rejected_reads: Vec<(u64, u64, u16, u64)>,
}

impl Claims {
    fn observe(&mut self, e: &Event, report: &mut ClaimsReport) {
        let (Some(key), Some(op)) = (e.key, e.op_id) else {
            return;
        };
        match e.kind {
            Kind::WriteSent => {
                if let Some(v) = e.value {
                    self.sent_value.entry(op).or_insert(v);
                }
            }
            Kind::WriteAccepted => {
                let value = e.value.unwrap_or(op);
                self.acked.insert(key, (e.seq, value));
                self.accepted_values.insert(value);
            }
            Kind::WriteRejected => {
                // The record's value is the fence; the written value is the request's.
                let value = self.sent_value.get(&op).copied().unwrap_or(op);
                self.rejected.entry(value).or_insert(e.seq);
            }
            Kind::ReadServed if e.outcome == Some(Outcome::Ok) => {
                let Some(value) = e.value else { return };
                report.reads_judged += 1;
                self.seen.insert(value);
                if let Some(&reject_seq) = self.rejected.get(&value) {
                    self.rejected_reads.push((e.seq, reject_seq, key, value));
                }
                match self.acked.get(&key) {
                    Some(&(_, acked_value)) if acked_value == value => {}
                    Some(&acked) => self.suspects.push(Suspect {
                        key,
                        read_seq: e.seq,
                        read_value: value,
                        acked,
                    }),
                    None => {}
                }
            }
            _ => {}
        }
    }

    fn finish(self, report: &mut ClaimsReport) {
        let mut lost_reported = BTreeSet::new();
        for s in &self.suspects {
            let (accept_seq, acked_value) = s.acked;
            // A value the store never acknowledged nor refused: not a claim either way.
            let known = s.read_value == 0
                || self.accepted_values.contains(&s.read_value)
                || self.rejected.contains_key(&s.read_value);
            if !known {
                continue;
            }
            if !self.seen.contains(&acked_value) {
                if lost_reported.insert(acked_value) {
                    report.push(ClaimViolation {
                        kind: ClaimKind::AckedWriteLost,
                        key: s.key,
                        evidence: vec![accept_seq, s.read_seq],
                        explanation: format!(
                            "write of value {acked_value} was acknowledged (#{accept_seq}), but the next read returned {} (#{}) and no read ever returned {acked_value}",
                            s.read_value, s.read_seq
                        ),
                    });
                }
            } else if !self.rejected.contains_key(&s.read_value)
                || self.accepted_values.contains(&s.read_value)
            {
                report.push(ClaimViolation {
                    kind: ClaimKind::StaleRead,
                    key: s.key,
                    evidence: vec![accept_seq, s.read_seq],
                    explanation: format!(
                        "read returned {} (#{}) after the store acknowledged value {acked_value} (#{accept_seq})",
                        s.read_value, s.read_seq
                    ),
                });
            }
        }
        for &(read_seq, reject_seq, key, value) in &self.rejected_reads {
            if self.accepted_values.contains(&value) {
                continue; // refused once (a duplicate), accepted on another delivery
            }
            report.push(ClaimViolation {
                kind: ClaimKind::RejectedWriteVisible,
                key,
                evidence: vec![reject_seq.min(read_seq), reject_seq.max(read_seq)],
                explanation: format!(
                    "the store rejected the write of value {value} (#{reject_seq}) but a read returned it (#{read_seq})"
                ),
            });
        }
        report
            .violations
            .sort_by_key(|v| (v.evidence.clone(), v.kind));
    }
}

/// Checks one history against the store's own answers.
pub fn check(history: &History) -> ClaimsReport {
    let mut claims = Claims::default();
    let mut report = ClaimsReport::default();
    for e in &history.events {
        claims.observe(e, &mut report);
    }
    claims.finish(&mut report);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(events: &[(Kind, u64, u64, Option<Outcome>)]) -> History {
        // (kind, op, value, outcome); seq = position + 1.
        let events = events
            .iter()
            .enumerate()
            .map(|(i, &(kind, op, value, outcome))| {
                let mut e = Event::new(i as u64 + 1, i as u64, 0, kind);
                e.key = Some(0);
                e.op_id = Some(op);
                e.value = Some(value);
                e.outcome = outcome;
                e
            })
            .collect();
        History {
            nodes: vec!["resource/0".into()],
            keys: vec!["doc".into()],
            events,
        }
    }

    const OK: Option<Outcome> = Some(Outcome::Ok);

    #[test]
    fn an_acknowledged_write_that_no_read_returns_is_lost_with_both_records_as_evidence() {
        let h = history(&[
            (Kind::WriteSent, 1001, 1001, None),
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::ReadServed, 2001, 0, OK),
        ]);
        let r = check(&h);
        assert_eq!(r.count(ClaimKind::AckedWriteLost), 1);
        assert_eq!(r.count(ClaimKind::StaleRead), 0);
        assert_eq!(r.violations[0].evidence, vec![2, 3]);
    }

    #[test]
    fn a_read_older_than_a_value_others_saw_is_a_stale_read() {
        let h = history(&[
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::WriteAccepted, 2001, 2001, None),
            (Kind::ReadServed, 3001, 2001, OK),
            (Kind::ReadServed, 3002, 1001, OK),
        ]);
        let r = check(&h);
        assert_eq!(r.count(ClaimKind::StaleRead), 1);
        assert_eq!(r.count(ClaimKind::AckedWriteLost), 0);
        assert_eq!(r.violations[0].evidence, vec![2, 4]);
    }

    #[test]
    fn a_rejected_write_that_a_read_returns_is_visible_but_a_rejected_duplicate_is_not() {
        let h = history(&[
            (Kind::WriteSent, 1001, 1001, None),
            (Kind::WriteRejected, 1001, 7, None),
            (Kind::ReadServed, 2001, 1001, OK),
        ]);
        let r = check(&h);
        assert_eq!(r.count(ClaimKind::RejectedWriteVisible), 1);
        assert_eq!(r.violations[0].evidence, vec![2, 3]);

        let dup = history(&[
            (Kind::WriteSent, 1001, 1001, None),
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::WriteRejected, 1001, 1, None),
            (Kind::ReadServed, 2001, 1001, OK),
        ]);
        assert!(check(&dup).is_clean());
    }

    #[test]
    fn reads_that_follow_the_acknowledged_order_are_clean() {
        let h = history(&[
            (Kind::ReadServed, 1001, 0, OK),
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::ReadServed, 2001, 1001, OK),
            (Kind::WriteAccepted, 2001, 2001, None),
            (Kind::ReadServed, 3001, 2001, OK),
        ]);
        let r = check(&h);
        assert!(r.is_clean(), "{r:?}");
        assert_eq!(r.reads_judged, 3);
    }
}
