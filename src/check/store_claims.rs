//! The store under test held to its own claims.
//!
//! Every write carries a unique value (its op id), and the resource answers
//! every request in one order — the order in which its answers leave it,
//! which the harness records. So each `write_accepted` (the resource said
//! "write_ok") claims: from here until the next accepted write on this
//! document, reads of it return this value. A document is (resource node,
//! key), as in docs/history.md: two stores that share a key name are two
//! documents, each held to its own answers. Three ways to break that, each
//! with evidence:
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
//! - `fence_rule_broken`: the store accepted a write that the fence rule it
//!   was configured with refuses — `strict`: its token must be above every
//!   token it accepted before (`fence < token`), else not below (`<=`); with
//!   `fence_reads`, also not below any token a served read carried; a
//!   fenced store accepts no write without a token. Judged directly on every
//!   accepted write, so it needs no coordinator reissuing a token to show.
//!
//! A store may say it did *not* apply a write it answers `write_ok` (a
//! recognised duplicate: `applied: false`, recorded as `write_deduplicated`).
//! That claim is held like the others: the row is unchanged, so reads after
//! it must still return the latest applied value — a store that says so but
//! re-applied the old value shows up as `stale_read` or `acked_write_lost`.
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
    FenceRuleBroken,
}

impl ClaimKind {
    pub const ALL: [ClaimKind; 4] = [
        ClaimKind::AckedWriteLost,
        ClaimKind::StaleRead,
        ClaimKind::RejectedWriteVisible,
        ClaimKind::FenceRuleBroken,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ClaimKind::AckedWriteLost => "acked_write_lost",
            ClaimKind::StaleRead => "stale_read",
            ClaimKind::RejectedWriteVisible => "rejected_write_visible",
            ClaimKind::FenceRuleBroken => "fence_rule_broken",
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
            ClaimKind::FenceRuleBroken => {
                "the store accepted a write its configured fence rule (strict or not) refuses"
            }
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
    /// The store whose claim broke (its node index in the history).
    pub resource: u16,
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
    pub counts: [u64; 4],
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
}

/// The fence rule a store was configured with (`init`'s `role.config`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FenceRule {
    /// One write per token: accepted only if `fence < token`; else `fence <= token`.
    pub strict: bool,
    /// Reads that carry a token raise the fence too.
    pub fence_reads: bool,
}

/// The fence a store had on one key, by its own answers: the greatest token
/// it accepted a write of, and that a served read carried, with the records.
#[derive(Clone, Copy, Default)]
struct Fence {
    write: Option<(u64, u64)>,
    read: Option<(u64, u64)>,
}

/// A document: (resource node, key).
type Doc = (u16, u16);

/// A read that returned something other than the acknowledged value.
struct Suspect {
    doc: Doc,
    read_seq: u64,
    read_value: u64,
    /// The acknowledged write it should have seen: (accept seq, value).
    acked: (u64, u64),
}

#[derive(Default)]
struct Claims {
    /// op id -> value, from the first `write_sent`.
    sent_value: BTreeMap<u64, u64>,
    /// document -> latest acknowledged (accept seq, value).
    acked: BTreeMap<Doc, (u64, u64)>,
    /// (document, value) of every accepted write.
    accepted_values: BTreeSet<(Doc, u64)>,
    /// (document, value) -> seq of the first rejection of a write carrying it.
    rejected: BTreeMap<(Doc, u64), u64>,
    /// (document, value) some read of the document returned.
    seen: BTreeSet<(Doc, u64)>,
    suspects: Vec<Suspect>,
    /// (read seq, reject seq, document, value) of reads returning a rejected value.
    rejected_reads: Vec<(u64, u64, Doc, u64)>,
    rule: Option<FenceRule>,
    /// document -> its fence.
    fences: BTreeMap<Doc, Fence>,
    /// op id -> the token its read carried, from the first `read_sent`.
    read_token: BTreeMap<u64, u64>,
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
            Kind::ReadSent => {
                if let Some(t) = e.token {
                    self.read_token.entry(op).or_insert(t);
                }
            }
            Kind::WriteAccepted => {
                self.judge_fence(e, key, report);
                let value = e.value.unwrap_or(op);
                self.acked.insert((e.node, key), (e.seq, value));
                self.accepted_values.insert(((e.node, key), value));
            }
            Kind::WriteRejected => {
                // The record's value is the fence; the written value is the request's.
                let value = self.sent_value.get(&op).copied().unwrap_or(op);
                self.rejected.entry(((e.node, key), value)).or_insert(e.seq);
            }
            Kind::ReadServed if e.outcome == Some(Outcome::Ok) => {
                let Some(value) = e.value else { return };
                report.reads_judged += 1;
                self.seen.insert(((e.node, key), value));
                if self.rule.is_some_and(|r| r.fence_reads) {
                    if let Some(&t) = self.read_token.get(&op) {
                        let fence = self.fences.entry((e.node, key)).or_default();
                        if fence.read.is_none_or(|(f, _)| t > f) {
                            fence.read = Some((t, e.seq));
                        }
                    }
                }
                if let Some(&reject_seq) = self.rejected.get(&((e.node, key), value)) {
                    self.rejected_reads
                        .push((e.seq, reject_seq, (e.node, key), value));
                }
                match self.acked.get(&(e.node, key)) {
                    Some(&(_, acked_value)) if acked_value == value => {}
                    Some(&acked) => self.suspects.push(Suspect {
                        doc: (e.node, key),
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

    /// An accepted write against the fence rule the store was given.
    fn judge_fence(&mut self, e: &Event, key: u16, report: &mut ClaimsReport) {
        let Some(rule) = self.rule else { return };
        let fence = self.fences.entry((e.node, key)).or_default();
        let Some(t) = e.token else {
            report.push(ClaimViolation {
                kind: ClaimKind::FenceRuleBroken,
                resource: e.node,
                key,
                evidence: vec![e.seq],
                explanation: format!(
                    "the store is fenced but accepted a write without a token (#{})",
                    e.seq
                ),
            });
            return;
        };
        let write_refuses = |(f, _): (u64, u64)| if rule.strict { t <= f } else { t < f };
        let broken = match (fence.write.filter(|&w| write_refuses(w)), fence.read) {
            (Some((f, seq)), _) => Some((f, seq, "a write", if rule.strict { "<" } else { "<=" })),
            (None, Some((f, seq))) if t < f => Some((f, seq, "a read", "<=")),
            _ => None,
        };
        if let Some((f, seq, what, op)) = broken {
            report.push(ClaimViolation {
                kind: ClaimKind::FenceRuleBroken,
                resource: e.node,
                key,
                evidence: vec![seq, e.seq],
                explanation: format!(
                    "accepted token {t} (#{}) although {what} with token {f} (#{seq}) had set the fence; \
                     the store was configured {} and must accept only fence {op} token",
                    e.seq,
                    if rule.strict { "strict" } else { "non-strict" }
                ),
            });
        }
        if fence.write.is_none_or(|(f, _)| t > f) {
            fence.write = Some((t, e.seq));
        }
    }

    fn finish(self, report: &mut ClaimsReport) {
        let mut lost_reported = BTreeSet::new();
        for s in &self.suspects {
            let (accept_seq, acked_value) = s.acked;
            // A value the store never acknowledged nor refused: not a claim either way.
            let known = s.read_value == 0
                || self.accepted_values.contains(&(s.doc, s.read_value))
                || self.rejected.contains_key(&(s.doc, s.read_value));
            if !known {
                continue;
            }
            if !self.seen.contains(&(s.doc, acked_value)) {
                if lost_reported.insert((s.doc, acked_value)) {
                    report.push(ClaimViolation {
                        kind: ClaimKind::AckedWriteLost,
                        resource: s.doc.0,
                        key: s.doc.1,
                        evidence: vec![accept_seq, s.read_seq],
                        explanation: format!(
                            "write of value {acked_value} was acknowledged (#{accept_seq}), but the next read returned {} (#{}) and no read ever returned {acked_value}",
                            s.read_value, s.read_seq
                        ),
                    });
                }
            } else if !self.rejected.contains_key(&(s.doc, s.read_value))
                || self.accepted_values.contains(&(s.doc, s.read_value))
            {
                report.push(ClaimViolation {
                    kind: ClaimKind::StaleRead,
                    resource: s.doc.0,
                    key: s.doc.1,
                    evidence: vec![accept_seq, s.read_seq],
                    explanation: format!(
                        "read returned {} (#{}) after the store acknowledged value {acked_value} (#{accept_seq})",
                        s.read_value, s.read_seq
                    ),
                });
            }
        }
        for &(read_seq, reject_seq, (resource, key), value) in &self.rejected_reads {
            if self.accepted_values.contains(&((resource, key), value)) {
                continue; // refused once (a duplicate), accepted on another delivery
            }
            report.push(ClaimViolation {
                kind: ClaimKind::RejectedWriteVisible,
                resource,
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
    check_with_rule(history, None)
}

/// [`check`], and every accepted write against `rule`, the fence rule the
/// store was configured with (`None`: an unfenced store, no rule).
pub fn check_with_rule(history: &History, rule: Option<FenceRule>) -> ClaimsReport {
    let mut claims = Claims {
        rule,
        ..Claims::default()
    };
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

    fn with_tokens(kinds: &[(Kind, u64, u64)]) -> History {
        // (kind, op, token); values are the op ids.
        let mut h = history(
            &kinds
                .iter()
                .map(|&(k, op, _)| (k, op, op, (k == Kind::ReadServed).then_some(Outcome::Ok)))
                .collect::<Vec<_>>(),
        );
        for (e, &(_, _, token)) in h.events.iter_mut().zip(kinds) {
            e.token = Some(token);
        }
        h
    }

    const STRICT: Option<FenceRule> = Some(FenceRule {
        strict: true,
        fence_reads: false,
    });
    const NON_STRICT: Option<FenceRule> = Some(FenceRule {
        strict: false,
        fence_reads: false,
    });

    #[test]
    fn an_equal_token_accepted_breaks_the_strict_rule_but_not_the_non_strict_one() {
        let h = with_tokens(&[
            (Kind::WriteAccepted, 1001, 1),
            (Kind::WriteAccepted, 1002, 1),
        ]);
        let strict = check_with_rule(&h, STRICT);
        assert_eq!(strict.count(ClaimKind::FenceRuleBroken), 1);
        assert_eq!(strict.violations[0].evidence, vec![1, 2]);
        assert!(check_with_rule(&h, NON_STRICT).is_clean());
        assert!(check(&h).is_clean(), "no rule: an unfenced store");
    }

    #[test]
    fn a_lower_token_accepted_breaks_either_rule_and_a_tokenless_write_breaks_a_fenced_store() {
        let lower = with_tokens(&[
            (Kind::WriteAccepted, 1001, 2),
            (Kind::WriteAccepted, 1002, 1),
        ]);
        assert_eq!(
            check_with_rule(&lower, NON_STRICT).count(ClaimKind::FenceRuleBroken),
            1
        );
        let rising = with_tokens(&[
            (Kind::WriteAccepted, 1001, 1),
            (Kind::WriteAccepted, 1002, 2),
        ]);
        assert!(check_with_rule(&rising, STRICT).is_clean());
        let mut tokenless = with_tokens(&[(Kind::WriteAccepted, 1001, 1)]);
        tokenless.events[0].token = None;
        assert_eq!(
            check_with_rule(&tokenless, NON_STRICT).count(ClaimKind::FenceRuleBroken),
            1
        );
    }

    #[test]
    fn with_fence_reads_a_write_below_a_served_reads_token_breaks_the_rule() {
        let h = with_tokens(&[
            (Kind::ReadSent, 2001, 2),
            (Kind::ReadServed, 2001, 2),
            (Kind::WriteAccepted, 1001, 1),
        ]);
        let rule = Some(FenceRule {
            strict: false,
            fence_reads: true,
        });
        let r = check_with_rule(&h, rule);
        assert_eq!(r.count(ClaimKind::FenceRuleBroken), 1);
        assert_eq!(r.violations[0].evidence, vec![2, 3]);
        assert!(check_with_rule(&h, NON_STRICT).is_clean());
    }

    #[test]
    fn a_duplicate_not_applied_leaves_the_latest_value_but_one_that_was_reapplied_is_caught() {
        // A's write, B's write, A's late duplicate answered "applied: false".
        let honest = history(&[
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::ReadServed, 2001, 1001, OK),
            (Kind::WriteAccepted, 2001, 2001, None),
            (Kind::WriteDeduplicated, 1001, 1001, None),
            (Kind::ReadServed, 3001, 2001, OK),
        ]);
        assert!(check(&honest).is_clean(), "{:?}", check(&honest));
        // The same claim, but the store did overwrite B's value with A's.
        let lying = history(&[
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::ReadServed, 2001, 1001, OK),
            (Kind::WriteAccepted, 2001, 2001, None),
            (Kind::WriteDeduplicated, 1001, 1001, None),
            (Kind::ReadServed, 3001, 1001, OK),
        ]);
        let r = check(&lying);
        assert_eq!(r.count(ClaimKind::AckedWriteLost), 1, "{r:?}");
        assert_eq!(r.violations[0].evidence, vec![3, 5]);
    }

    #[test]
    fn two_stores_sharing_a_key_name_are_two_documents_each_held_to_its_own_answers() {
        // resource/0 and resource/1 each hold a `doc`; each read returns its
        // own store's acknowledged value.
        let mut h = history(&[
            (Kind::WriteAccepted, 1001, 1001, None),
            (Kind::WriteAccepted, 1002, 1002, None),
            (Kind::ReadServed, 2001, 1001, OK),
            (Kind::ReadServed, 2002, 0, OK),
        ]);
        h.nodes.push("resource/1".into());
        h.events[1].node = 1;
        h.events[3].node = 1;
        let r = check(&h);
        assert_eq!(r.count(ClaimKind::AckedWriteLost), 1, "{r:?}");
        assert_eq!(r.count(ClaimKind::StaleRead), 0, "{r:?}");
        assert_eq!(
            r.violations[0].evidence,
            vec![2, 4],
            "resource/1's write and read"
        );
        h.events.pop();
        assert!(check(&h).is_clean(), "{:?}", check(&h));
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
