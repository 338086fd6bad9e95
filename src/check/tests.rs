//! Hand-written histories for every clause, including near misses that must
//! not fire.

use super::*;
use crate::history::{Event, History, Kind};

const A: u16 = 0;
const B: u16 = 1;
const COORD: u16 = 2;
const RES: u16 = 3;

struct H {
    h: History,
}

impl H {
    fn new() -> H {
        H {
            h: History {
                nodes: ["worker/A", "worker/B", "coord/0", "resource/0"]
                    .map(String::from)
                    .to_vec(),
                keys: vec!["doc".into()],
                events: vec![],
            },
        }
    }

    fn push(&mut self, node: u16, kind: Kind, f: impl FnOnce(&mut Event)) -> u64 {
        let seq = self.h.events.len() as u64 + 1;
        let mut e = Event::new(seq, seq * 1_000_000, node, kind);
        e.key = Some(0);
        f(&mut e);
        self.h.events.push(e);
        seq
    }
    fn issued(&mut self, grant: u64, token: Option<u64>) -> u64 {
        self.push(COORD, Kind::GrantIssued, |e| {
            e.grant_id = Some(grant);
            e.token = token;
        })
    }
    fn received(&mut self, node: u16, grant: u64) -> u64 {
        self.push(node, Kind::GrantReceived, |e| e.grant_id = Some(grant))
    }
    fn read_ok(&mut self, node: u16, op: u64, value: u64) -> u64 {
        self.push(node, Kind::ReadOk, |e| {
            e.op_id = Some(op);
            e.value = Some(value);
        })
    }
    fn sent(&mut self, node: u16, op: u64) -> u64 {
        self.push(node, Kind::WriteSent, |e| e.op_id = Some(op))
    }
    fn accepted(&mut self, op: u64) -> u64 {
        self.push(RES, Kind::WriteAccepted, |e| e.op_id = Some(op))
    }
    fn rejected(&mut self, op: u64) -> u64 {
        self.push(RES, Kind::WriteRejected, |e| e.op_id = Some(op))
    }
    fn expired(&mut self, grant: u64) -> u64 {
        self.push(COORD, Kind::LeaseExpired, |e| e.grant_id = Some(grant))
    }
    fn release_applied(&mut self, grant: u64, removed: Option<u64>) -> u64 {
        self.push(COORD, Kind::ReleaseApplied, |e| {
            e.grant_id = Some(grant);
            e.removed_grant_id = removed;
        })
    }
    fn check(&self) -> Report {
        check(&self.h)
    }
}

#[test]
fn older_generation_accepted_after_newer_is_a_stale_write_with_both_grants_as_evidence() {
    let mut h = H::new();
    let g1 = h.issued(1, None);
    h.received(A, 1);
    h.read_ok(A, 1001, 0);
    h.expired(1);
    let g2 = h.issued(2, None);
    h.received(B, 2);
    h.read_ok(B, 2001, 0);
    h.sent(B, 2001);
    let w2 = h.accepted(2001);
    h.sent(A, 1001);
    let w1 = h.accepted(1001);
    let r = h.check();
    assert_eq!(r.count(ViolationKind::StaleWrite), 1);
    assert_eq!(r.violations[0].evidence, vec![g1, g2, w2, w1]);
    assert_eq!(
        r.count(ViolationKind::LostUpdate),
        1,
        "A also overwrote B's value without reading it"
    );
    assert_eq!(r.info.stale_attempts, 1);
}

#[test]
fn late_write_with_no_newer_grant_is_informational_only() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1);
    h.read_ok(A, 1001, 0);
    h.expired(1);
    h.sent(A, 1001);
    h.accepted(1001);
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(r.info.late_writes, 1);
    assert_eq!(r.info.stale_attempts, 0);
}

#[test]
fn duplicate_delivery_of_one_write_is_neither_stale_nor_lost() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1);
    h.read_ok(A, 1001, 0);
    h.sent(A, 1001);
    h.accepted(1001);
    h.accepted(1001);
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(r.info.writes_accepted, 2);
}

#[test]
fn delayed_reply_for_an_older_grant_does_not_lower_the_writers_generation() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.issued(2, Some(2));
    h.received(A, 2);
    h.sent(A, 1001);
    h.accepted(1001);
    h.received(A, 1); // the reply to A's first acquire, stuck in the network
    h.sent(A, 1002);
    h.accepted(1002);
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);
}

#[test]
fn fenced_rejection_of_a_superseded_write_counts_as_prevented_corruption() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1);
    h.issued(2, Some(2));
    h.received(B, 2);
    h.sent(B, 2001);
    h.accepted(2001);
    h.sent(A, 1001);
    h.rejected(1001);
    h.sent(B, 2002);
    h.rejected(2002);
    let r = h.check();
    assert!(r.is_clean());
    assert_eq!(r.info.fence_rejected_total, 1);
    assert_eq!(r.info.fence_rejected_same_generation, 1);
    assert_eq!(r.info.stale_attempts, 1);
}

#[test]
fn stale_write_landing_between_new_holders_read_and_write_is_a_lost_update_not_a_stale_write() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1);
    h.read_ok(A, 1001, 0);
    h.expired(1);
    h.issued(2, Some(2));
    h.received(B, 2);
    let read = h.read_ok(B, 2001, 0);
    h.sent(A, 1001);
    let w1 = h.accepted(1001);
    h.sent(B, 2001);
    let w2 = h.accepted(2001);
    let r = h.check();
    assert_eq!(r.count(ViolationKind::StaleWrite), 0);
    assert_eq!(r.count(ViolationKind::LostUpdate), 1);
    assert_eq!(r.violations[0].evidence, vec![read, w1, w2]);
}

#[test]
fn lost_update_evidence_is_listed_in_record_order_when_the_read_came_after_the_overwrite() {
    // B's read left before A's write landed but its answer (the old value)
    // is recorded after it: the read is not the earliest evidence record.
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1);
    h.read_ok(A, 1001, 0);
    h.sent(A, 1001);
    let w1 = h.accepted(1001);
    h.expired(1);
    h.issued(2, Some(2));
    h.received(B, 2);
    let read = h.read_ok(B, 2001, 0);
    h.sent(B, 2001);
    let w2 = h.accepted(2001);
    let r = h.check();
    assert_eq!(r.count(ViolationKind::LostUpdate), 1, "{r:?}");
    assert!(w1 < read && read < w2);
    assert_eq!(r.violations[0].evidence, vec![w1, read, w2]);
}

#[test]
fn blind_write_and_write_over_the_value_it_read_are_not_lost_updates() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1);
    h.sent(A, 1001);
    h.accepted(1001); // blind: no read
    h.read_ok(A, 1002, 1001);
    h.sent(A, 1002);
    h.accepted(1002);
    assert!(h.check().is_clean());
}

#[test]
fn repeated_or_regressed_token_is_a_token_order_violation() {
    let mut h = H::new();
    let first = h.issued(1, Some(5));
    let dup = h.issued(2, Some(5));
    h.issued(3, Some(6));
    let r = h.check();
    assert_eq!(r.count(ViolationKind::TokenOrder), 1);
    assert_eq!(r.violations[0].evidence, vec![first, dup]);
}

#[test]
fn release_removing_another_grants_lease_is_unsafe_and_own_or_none_is_not() {
    let mut h = H::new();
    h.issued(1, None);
    h.issued(2, None);
    h.release_applied(2, Some(2));
    h.release_applied(1, None);
    assert!(h.check().is_clean());
    let bad = h.release_applied(1, Some(2));
    let r = h.check();
    assert_eq!(r.count(ViolationKind::UnsafeRelease), 1);
    assert!(r.violations[0].evidence.contains(&bad));
}

#[test]
fn write_without_any_grant_after_a_granted_write_is_stale() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1);
    h.sent(A, 1001);
    h.accepted(1001);
    h.sent(B, 2001); // B never received a grant: generation 0
    h.accepted(2001);
    assert_eq!(h.check().count(ViolationKind::StaleWrite), 1);
}

#[test]
fn two_holders_at_once_are_counted_as_an_overlap() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1);
    h.issued(2, None);
    h.received(B, 2);
    h.push(A, Kind::ReleaseSent, |_| {});
    let r = h.check();
    assert_eq!(r.info.overlaps, 1);
    assert_eq!(r.info.overlap_ns, 1_000_000);
}
