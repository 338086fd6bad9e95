//! Hand-written histories for the checker defects of issue #11 (and the
//! checker items of #18): each history is the smallest one that showed the
//! defect, and each test pins both sides of the verdict — the corrected
//! verdict, and a near twin whose verdict must stay the other way.

use crate::common;

use fencesim::check::{check, Report, ViolationKind};
use fencesim::history::validate::validate;
use fencesim::history::{jsonl, Event, History, Kind};
use fencesim::oracle;

const A: u16 = 0;
const B: u16 = 1;
const COORD: u16 = 2;
const RES: u16 = 3;
const RES2: u16 = 4;
const COORD2: u16 = 5;
const SINK: u16 = 6;
const MS: u64 = 1_000_000;

struct H(History);

impl H {
    fn new() -> H {
        H(History {
            nodes: [
                "worker/A",
                "worker/B",
                "coord/0",
                "resource/0",
                "resource/1",
                "coord/1",
                "sink/0",
            ]
            .map(String::from)
            .to_vec(),
            keys: vec!["doc".into()],
            events: vec![],
        })
    }
    fn push(&mut self, node: u16, kind: Kind, f: impl FnOnce(&mut Event)) -> u64 {
        let seq = self.0.events.len() as u64 + 1;
        let mut e = Event::new(seq, seq * MS, node, kind);
        e.key = Some(0);
        f(&mut e);
        self.0.events.push(e);
        seq
    }
    fn acquire(&mut self, node: u16) -> u64 {
        self.push(node, Kind::AcquireSent, |_| {})
    }
    fn issued_by(&mut self, coord: u16, grant: u64, token: Option<u64>) -> u64 {
        self.push(coord, Kind::GrantIssued, |e| {
            e.grant_id = Some(grant);
            e.token = token;
        })
    }
    fn issued(&mut self, grant: u64, token: Option<u64>) -> u64 {
        self.issued_by(COORD, grant, token)
    }
    fn received(&mut self, node: u16, grant: u64, token: Option<u64>) -> u64 {
        self.push(node, Kind::GrantReceived, |e| {
            e.grant_id = Some(grant);
            e.token = token;
        })
    }
    /// A client-decided grant: the worker concludes it holds the lock.
    fn decided(&mut self, node: u16, grant: u64, token: u64) -> u64 {
        self.push(node, Kind::GrantIssued, |e| {
            e.grant_id = Some(grant);
            e.token = Some(token);
        });
        self.received(node, grant, Some(token))
    }
    fn read_ok(&mut self, node: u16, op: u64, value: u64) -> u64 {
        self.push(node, Kind::ReadOk, |e| {
            e.op_id = Some(op);
            e.value = Some(value);
        })
    }
    fn sent(&mut self, node: u16, op: u64, token: Option<u64>) -> u64 {
        self.push(node, Kind::WriteSent, |e| {
            e.op_id = Some(op);
            e.token = token;
            e.value = Some(op);
        })
    }
    fn at(&mut self, res: u16, kind: Kind, op: u64, token: Option<u64>) -> u64 {
        self.push(res, kind, |e| {
            e.op_id = Some(op);
            e.token = token;
            e.value = Some(op);
        })
    }
    fn accepted(&mut self, op: u64, token: Option<u64>) -> u64 {
        self.at(RES, Kind::WriteAccepted, op, token)
    }
    fn rejected(&mut self, op: u64, token: Option<u64>) -> u64 {
        self.at(RES, Kind::WriteRejected, op, token)
    }
    fn grant_event(&mut self, node: u16, kind: Kind, grant: u64) -> u64 {
        self.push(node, kind, |e| e.grant_id = Some(grant))
    }
    fn op_event(&mut self, node: u16, kind: Kind, op: u64) -> u64 {
        self.push(node, kind, |e| e.op_id = Some(op))
    }
    fn life(&mut self, node: u16, kind: Kind) -> u64 {
        self.push(node, kind, |e| e.key = None)
    }
    /// Checks, after making sure the history is valid input and the second
    /// checker agrees on every kind.
    fn check(&self) -> Report {
        validate(&self.0).unwrap_or_else(|r| panic!("valid input expected: {r}"));
        let r = check(&self.0);
        for kind in ViolationKind::ALL {
            let theirs = oracle::check(&self.0)
                .iter()
                .filter(|f| f.kind == kind.name())
                .count() as u64;
            assert_eq!(r.count(kind), theirs, "{kind}: check and oracle disagree");
            // A violation is its kind's hazard happening unprotected.
            let counted = r.info.hazards[kind as usize] > 0;
            assert!(
                r.count(kind) == 0 || counted || kind == ViolationKind::TwoActives,
                "{kind} found but its hazard ({}) not counted",
                kind.hazard()
            );
        }
        r
    }
}

fn only(r: &Report, kind: ViolationKind) -> Vec<u64> {
    r.violations
        .iter()
        .filter(|v| v.kind == kind)
        .flat_map(|v| v.evidence.last().copied())
        .collect()
}

// ---- 1. a write's generation ---------------------------------------------

#[test]
fn a_late_grant_the_worker_never_asked_for_does_not_hide_its_stale_write() {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    // The answer to an acquire A had already given up on: A ignores it.
    h.issued(3, None);
    h.received(A, 3, None);
    h.sent(A, 1001, None);
    let stale = h.accepted(1001, None);
    let r = h.check();
    assert_eq!(
        only(&r, ViolationKind::StaleWrite),
        vec![stale],
        "{:?}",
        r.violations
    );

    // The twin: A asked again, so grant 3 is what it acts on.
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    h.acquire(A);
    h.issued(3, None);
    h.received(A, 3, None);
    h.sent(A, 1001, None);
    h.accepted(1001, None);
    assert!(h.check().is_clean());
}

#[test]
fn a_duplicated_old_grant_does_not_make_a_current_write_stale() {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.received(A, 1, None); // a network duplicate
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(r.info.stale_attempts, 0);
}

/// A gives up acquire #1, B holds grant 2 and writes, A asks again (after a
/// crash and restart if `restart`); `before_ask` runs just before A's new
/// ask, `rest` after it: the late answer to #1 (grant 1, issued before the
/// new ask), and what follows.
fn late_answer(restart: bool, before_ask: impl FnOnce(&mut H), rest: impl FnOnce(&mut H)) -> H {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    if restart {
        h.life(A, Kind::Crash);
    }
    h.grant_event(COORD, Kind::LeaseExpired, 1);
    h.op_event(A, Kind::OpAbandoned, 1000);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    h.grant_event(COORD, Kind::LeaseExpired, 2);
    if restart {
        h.life(A, Kind::Restart);
    }
    before_ask(&mut h);
    h.acquire(A);
    rest(&mut h);
    h
}

fn late_answer_then(rest: impl FnOnce(&mut H)) -> H {
    late_answer(false, |_| {}, rest)
}

/// Grant 3 is issued after A's new ask; A receives grant 1, then `then`.
fn late_then_fresh(restart: bool, then: impl FnOnce(&mut H)) -> H {
    late_answer(
        restart,
        |_| {},
        |h| {
            h.issued(3, None);
            h.received(A, 1, None);
            then(h);
        },
    )
}

fn stale_writes(h: &H) -> u64 {
    let r = h.check();
    r.count(ViolationKind::StaleWrite)
}

#[test]
fn a_late_answer_adopted_before_a_fresher_grant_is_replaced_by_it() {
    // audit h/1a, and h/1g (A crashed and restarted in between): grant 3
    // answers the acquire A is waiting on.
    for restart in [false, true] {
        let h = late_then_fresh(restart, |h| {
            h.received(A, 3, None);
            h.sent(A, 1001, None);
            h.accepted(1001, None);
        });
        let r = h.check();
        assert!(r.is_clean(), "{:?}", r.violations);
        assert_eq!(r.info.stale_attempts, 0);
    }
}

#[test]
fn a_provisional_adoption_stands_when_no_fresher_grant_comes() {
    // A re-sent grant is not recorded as issued again: grant 1 may be the
    // real answer, and A's write under it lands after generation 2's.
    let h = late_answer_then(|h| {
        h.received(A, 1, None);
        h.sent(A, 1001, None);
        h.accepted(1001, None);
    });
    assert_eq!(stale_writes(&h), 1);
}

#[test]
fn a_write_settles_a_provisional_adoption_before_a_fresher_grant_arrives() {
    // A wrote under grant 1 before grant 3 reached it: that write is stale.
    let h = late_then_fresh(false, |h| {
        h.sent(A, 1001, None);
        h.received(A, 3, None);
        h.accepted(1001, None);
    });
    assert_eq!(stale_writes(&h), 1);

    // An effect request settles it the same way.
    let h = late_then_fresh(false, |h| {
        h.push(A, Kind::EffectSent, |e| e.op_id = Some(1001));
        h.received(A, 3, None);
        h.sent(A, 1001, None);
        h.accepted(1001, None);
    });
    assert_eq!(stale_writes(&h), 1);

    // A grant issued before A's new ask does not replace one either: only
    // an answer to that ask is fresher.
    let h = late_answer(
        false,
        |h| {
            h.issued(3, None);
        },
        |h| {
            h.received(A, 1, None);
            h.received(A, 3, None);
            h.sent(A, 1001, None);
            h.accepted(1001, None);
        },
    );
    assert_eq!(stale_writes(&h), 1);
}

#[test]
fn a_client_that_acts_late_on_an_older_token_stays_older() {
    // B's decision comes first in true time under token 5; A, paused, then
    // decides on its older znode (token 3). Serial by token: the fence
    // refusing A is the protection working, not a token regression.
    let mut h = H::new();
    h.decided(B, 1, 5);
    h.sent(B, 2001, Some(5));
    h.accepted(2001, Some(5));
    h.decided(A, 2, 3);
    h.sent(A, 1001, Some(3));
    h.rejected(1001, Some(3));
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);
    assert_eq!(
        r.info.fence_rejected_total, 1,
        "A's refusal is a prevented corruption"
    );

    // Its twin with the fence missing: A's older write lands — stale.
    let mut h = H::new();
    h.decided(B, 1, 5);
    h.sent(B, 2001, Some(5));
    h.accepted(2001, Some(5));
    h.decided(A, 2, 3);
    h.sent(A, 1001, Some(3));
    let landed = h.accepted(1001, Some(3));
    let r = h.check();
    assert_eq!(only(&r, ViolationKind::StaleWrite), vec![landed]);
    assert_eq!(r.count(ViolationKind::TokenOrder), 0);
}

#[test]
fn two_clients_deciding_under_one_token_is_a_token_order_violation() {
    let mut h = H::new();
    let first = h.decided(B, 1, 5) - 1;
    let second = h.decided(A, 2, 5) - 1;
    let r = h.check();
    let v = r
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::TokenOrder)
        .expect("token_order");
    assert_eq!(v.evidence, vec![first, second]);
}

#[test]
fn a_resource_side_log_judges_writes_by_the_grant_that_issued_their_token() {
    let mut h = H::new();
    let g1 = h.issued(1, Some(1));
    let g2 = h.issued(2, Some(2));
    let newer = h.accepted(2001, Some(2));
    let stale = h.accepted(1001, Some(1));
    let r = h.check();
    let v = r
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::StaleWrite)
        .expect("stale");
    assert_eq!(v.evidence, vec![g1, g2, newer, stale]);

    let mut h = H::new();
    h.issued(1, Some(1));
    h.issued(2, Some(2));
    h.accepted(1001, Some(1));
    h.accepted(2001, Some(2));
    assert!(
        h.check().is_clean(),
        "in token order: no generation 0, nothing stale"
    );
}

// ---- 2. order and identity ---------------------------------------------

#[test]
fn time_going_backwards_is_refused_with_the_record_and_rule() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.0.events[1].t_true_ns = 0;
    let r = validate(&h.0).expect_err("refused");
    assert_eq!((r.record, r.rule), (2, "time-order"));
    // No panic either when the checker is handed it anyway.
    let _ = check(&h.0);

    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.0.events[1].t_true_ns = h.0.events[0].t_true_ns; // a tie is not backwards
    assert!(validate(&h.0).is_ok());
}

#[test]
fn metrics_and_overlap_do_not_panic_when_time_runs_backwards_in_memory() {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.push(A, Kind::ReleaseSent, |e| e.grant_id = Some(1));
    for (i, e) in h.0.events.iter_mut().enumerate() {
        e.t_true_ns = 1_000_000 - i as u64 * 1000;
    }
    let r = check(&h.0);
    assert!(r.metrics.acquisition_wait_ns.iter().all(|&w| w == 0));
    assert_eq!(r.info.overlaps, 1);
}

#[test]
fn a_grant_id_reused_by_a_new_primary_or_held_twice_is_refused() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.issued(1, Some(1)); // a re-send: fine
    h.issued_by(COORD2, 1, Some(1));
    let r = validate(&h.0).expect_err("refused");
    assert_eq!((r.record, r.rule), (4, "grant-identity"));
    assert!(
        r.message.contains("coord/1") && r.message.contains("coord/0"),
        "{r}"
    );

    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.received(A, 1, Some(1)); // a duplicate: fine
    h.received(B, 1, Some(1));
    let r = validate(&h.0).expect_err("refused");
    assert_eq!((r.record, r.rule), (4, "grant-holder"));
}

/// audit h/5c: coord/0 crashes and restarts, then issues grant 1 / token 1
/// again, to B; A's older token-1 write lands after B's.
fn reissued_after(lapse: &[Kind]) -> H {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.sent(A, 1001, Some(1));
    for &kind in lapse {
        h.life(COORD, kind);
    }
    h.acquire(B);
    h.issued(1, Some(1));
    h.sent(B, 2001, Some(1));
    h.accepted(2001, Some(1));
    h.accepted(1001, Some(1));
    h
}

#[test]
fn a_grant_id_issued_again_after_its_issuer_crashed_is_refused_as_input() {
    for lapse in [
        &[Kind::Crash, Kind::Restart][..],
        &[Kind::Crash],
        &[Kind::Restart],
    ] {
        let h = reissued_after(lapse);
        let r = validate(&h.0).expect_err("a reused id after a crash is refused");
        assert_eq!(
            (r.record, r.rule),
            (6 + lapse.len(), "grant-identity"),
            "{r}"
        );
        assert!(
            r.message.contains("coord/0") && r.message.contains("record 2"),
            "{r}"
        );
    }
    // Its twin with no crash: the same record is a re-send, judged clean.
    let h = reissued_after(&[]);
    assert!(h.check().is_clean());
    // Another node's crash does not make the issuer's re-send a new grant.
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.life(A, Kind::Crash);
    h.life(A, Kind::Restart);
    h.issued(1, Some(1));
    assert!(validate(&h.0).is_ok());
    // A restarted issuer that gives its grant a fresh id is judged: token 1
    // again is a token regression.
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.life(COORD, Kind::Crash);
    h.life(COORD, Kind::Restart);
    h.issued(2, Some(1));
    assert_eq!(h.check().count(ViolationKind::TokenOrder), 1);
}

#[test]
fn check_history_refuses_a_reused_grant_id_after_a_restart_with_file_line_and_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("5c.jsonl");
    let mut text = Vec::new();
    jsonl::write(&reissued_after(&[Kind::Crash, Kind::Restart]).0, &mut text).expect("write");
    std::fs::write(&path, text).expect("write");
    let out = common::fencesim(&["check-history", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let err = common::stderr(&out);
    assert!(err.contains("5c.jsonl:8:1: rule grant-identity"), "{err}");
}

#[test]
fn a_compare_and_set_loop_is_judged_by_the_read_it_retried_with() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.read_ok(A, 1001, 0);
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    h.read_ok(A, 1001, 2001); // the loop re-reads
    h.sent(A, 1001, None);
    h.accepted(1001, None);
    assert_eq!(h.check().count(ViolationKind::LostUpdate), 0);

    // Without the re-read, the same write loses op 2001's update.
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.read_ok(A, 1001, 0);
    h.sent(B, 2001, None);
    h.accepted(2001, None);
    h.sent(A, 1001, None);
    let lost = h.accepted(1001, None);
    assert_eq!(only(&h.check(), ViolationKind::LostUpdate), vec![lost]);
}

#[test]
fn a_retry_under_a_new_grant_is_judged_by_the_grant_it_was_sent_under() {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.sent(A, 1001, Some(1)); // lost
    h.acquire(B);
    h.issued(2, Some(2));
    h.received(B, 2, Some(2));
    h.sent(B, 2001, Some(2));
    h.accepted(2001, Some(2));
    h.acquire(A);
    h.issued(3, Some(3));
    h.received(A, 3, Some(3));
    h.sent(A, 1001, Some(3)); // the retry, under grant 3
    h.accepted(1001, Some(3));
    assert!(h.check().is_clean());

    // The first send, delivered late, is the stale one.
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.sent(A, 1001, Some(1));
    h.acquire(B);
    h.issued(2, Some(2));
    h.received(B, 2, Some(2));
    h.sent(B, 2001, Some(2));
    h.accepted(2001, Some(2));
    h.acquire(A);
    h.issued(3, Some(3));
    h.received(A, 3, Some(3));
    h.sent(A, 1001, Some(3));
    let stale = h.accepted(1001, Some(1));
    assert_eq!(only(&h.check(), ViolationKind::StaleWrite), vec![stale]);
}

#[test]
fn two_stores_sharing_a_key_name_are_two_documents() {
    let mut h = H::new();
    h.read_ok(A, 1001, 0);
    h.read_ok(B, 2001, 0);
    h.sent(A, 1001, None);
    h.at(RES, Kind::WriteAccepted, 1001, None);
    h.sent(B, 2001, None);
    h.at(RES2, Kind::WriteAccepted, 2001, None);
    assert!(h.check().is_clean());

    let mut h = H::new();
    h.read_ok(A, 1001, 0);
    h.read_ok(B, 2001, 0);
    h.sent(A, 1001, None);
    h.at(RES, Kind::WriteAccepted, 1001, None);
    h.sent(B, 2001, None);
    let lost = h.at(RES, Kind::WriteAccepted, 2001, None);
    assert_eq!(only(&h.check(), ViolationKind::LostUpdate), vec![lost]);
}

// ---- 3. new kinds ---------------------------------------------------------

#[test]
fn renewing_a_lease_already_expired_and_granted_again_is_an_expired_renewal() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    let expired = h.grant_event(COORD, Kind::LeaseExpired, 1);
    let g2 = h.issued(2, Some(2));
    h.received(B, 2, Some(2));
    let renewed = h.grant_event(COORD, Kind::RenewOk, 1);
    let r = h.check();
    let v = r
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::ExpiredRenewal)
        .expect("kept");
    assert_eq!(v.evidence, vec![expired, g2, renewed]);

    // Renewed after expiry but nobody else was granted: not a violation.
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.grant_event(COORD, Kind::LeaseExpired, 1);
    h.grant_event(COORD, Kind::RenewOk, 1);
    assert!(h.check().is_clean());
}

#[test]
fn an_effect_performed_for_a_superseded_holder_is_a_superseded_effect() {
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.op_event(A, Kind::EffectSent, 1001);
    h.acquire(B);
    h.issued(2, Some(2));
    h.received(B, 2, Some(2));
    let late = h.op_event(SINK, Kind::EffectPerformed, 1001);
    assert_eq!(
        only(&h.check(), ViolationKind::SupersededEffect),
        vec![late]
    );

    // Performed before the takeover: fine.
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.op_event(A, Kind::EffectSent, 1001);
    h.op_event(SINK, Kind::EffectPerformed, 1001);
    h.acquire(B);
    h.issued(2, Some(2));
    h.received(B, 2, Some(2));
    assert!(h.check().is_clean());
}

#[test]
fn a_write_accepted_with_a_token_nobody_issued_is_an_unissued_token() {
    let mut h = H::new();
    h.issued(1, Some(1));
    h.received(A, 1, Some(1));
    h.sent(A, 1001, Some(1));
    h.accepted(1001, Some(1));
    h.sent(B, 2001, Some(99));
    let forged = h.accepted(2001, Some(99));
    assert_eq!(only(&h.check(), ViolationKind::UnissuedToken), vec![forged]);
}

/// A holds grant 1 (token 5) until its lease ends at the server's position
/// 7; B holds grant 2 (token 6, its create revision) from then on, and the
/// history never ends B's ownership.
fn b_holds_from_position_seven(h: &mut H) {
    h.acquire(A);
    h.issued(1, Some(5));
    h.received(A, 1, Some(5));
    h.acquire(B);
    h.push(COORD, Kind::LeaseExpired, |e| {
        e.grant_id = Some(1);
        e.order = Some(7);
    });
    h.issued(2, Some(6));
    h.received(B, 2, Some(6));
}

#[test]
fn a_position_of_the_servers_order_within_the_holders_ownership_is_a_token_it_was_issued() {
    // B fences with the revision at which it became the owner (7): between
    // its create revision and the last position the history records.
    let mut h = H::new();
    b_holds_from_position_seven(&mut h);
    h.sent(B, 2001, Some(7));
    h.accepted(2001, Some(7));
    assert!(h.check().is_clean());

    // Its own create revision, as before.
    let mut h = H::new();
    b_holds_from_position_seven(&mut h);
    h.sent(B, 2001, Some(6));
    h.accepted(2001, Some(6));
    assert!(h.check().is_clean());
}

#[test]
fn a_position_outside_the_writers_own_ownership_is_an_unissued_token() {
    // Below B's grant (4 < 6): a position from before B held the lock.
    let mut h = H::new();
    b_holds_from_position_seven(&mut h);
    h.sent(B, 2001, Some(4));
    let early = h.accepted(2001, Some(4));
    assert_eq!(only(&h.check(), ViolationKind::UnissuedToken), vec![early]);

    // Past every position the history records (B's ownership is open).
    let mut h = H::new();
    b_holds_from_position_seven(&mut h);
    h.sent(B, 2001, Some(8));
    let ahead = h.accepted(2001, Some(8));
    assert_eq!(only(&h.check(), ViolationKind::UnissuedToken), vec![ahead]);

    // A, woken after its lease ended at 7, draws 8 beside it: within B's
    // ownership, not A's (the INCR-beside-a-lease catch).
    let mut h = H::new();
    b_holds_from_position_seven(&mut h);
    h.push(COORD, Kind::RenewOk, |e| {
        e.grant_id = Some(2);
        e.value = Some(0);
    });
    h.sent(B, 2001, Some(6));
    h.accepted(2001, Some(6));
    h.push(COORD, Kind::ReleaseApplied, |e| {
        e.grant_id = Some(2);
        e.removed_grant_id = Some(2);
        e.order = Some(9);
    });
    h.push(A, Kind::WriteSent, |e| {
        e.op_id = Some(1001);
        e.grant_id = Some(1);
        e.token = Some(8);
        e.value = Some(1001);
    });
    let beside = h.accepted(1001, Some(8));
    let r = h.check();
    assert_eq!(only(&r, ViolationKind::UnissuedToken), vec![beside]);
    assert_eq!(r.count(ViolationKind::StaleWrite), 1);
}

#[test]
fn the_new_kinds_are_listed_by_the_cli() {
    let out = common::fencesim(&["list"]);
    let text = common::stdout(&out);
    for kind in ["expired_renewal", "superseded_effect", "unissued_token"] {
        assert!(
            text.contains(kind),
            "`fencesim list` misses {kind}:\n{text}"
        );
    }
}

// ---- 4. liveness and vacuity ------------------------------------------------

#[test]
fn a_worker_still_paused_at_the_end_is_not_a_liveness_failure() {
    let mut h = H::new();
    h.life(A, Kind::Pause);
    h.life(A, Kind::Unfinished);
    assert!(h.check().is_clean());

    let mut h = H::new();
    h.life(A, Kind::Pause);
    h.life(A, Kind::Resume);
    let stuck = h.life(A, Kind::Unfinished);
    assert_eq!(only(&h.check(), ViolationKind::Liveness), vec![stuck]);
}

#[test]
fn a_release_by_an_expired_holder_exercises_the_release_hazard() {
    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.grant_event(COORD, Kind::LeaseExpired, 1);
    h.push(COORD, Kind::ReleaseApplied, |e| {
        e.grant_id = Some(1);
        e.removed_grant_id = None;
    });
    let r = h.check();
    assert!(r.is_clean());
    assert!(
        r.info.hazard_reached() && r.hazard_seen(ViolationKind::UnsafeRelease),
        "a compare-and-delete was put to the test"
    );
    assert!(!r.hazard_seen(ViolationKind::StaleWrite), "no write at all");

    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.grant_event(COORD, Kind::ReleaseApplied, 1);
    assert!(
        !h.check().info.hazard_reached(),
        "a timely release is no hazard"
    );
}

#[test]
fn a_conditional_write_whose_condition_held_is_not_stale() {
    // object-store-cas: untokened lease; the write names the object
    // generation (the op id of the value) it read.
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.read_ok(B, 2001, 0);
    h.sent(B, 2001, Some(0));
    h.accepted(2001, Some(0));
    h.read_ok(A, 1001, 2001); // A, superseded, reads B's value
    h.sent(A, 1001, Some(2001));
    h.accepted(1001, Some(2001));
    let r = h.check();
    assert!(r.is_clean(), "{:?}", r.violations);

    // The same older write naming a generation that is not current is stale.
    let mut h = H::new();
    h.acquire(A);
    h.issued(1, None);
    h.received(A, 1, None);
    h.acquire(B);
    h.issued(2, None);
    h.received(B, 2, None);
    h.read_ok(B, 2001, 0);
    h.sent(B, 2001, Some(0));
    h.accepted(2001, Some(0));
    h.read_ok(A, 1001, 0);
    h.sent(A, 1001, Some(0));
    let stale = h.accepted(1001, Some(0));
    assert_eq!(only(&h.check(), ViolationKind::StaleWrite), vec![stale]);
}

// ---- 5. check-history -------------------------------------------------------

#[test]
fn check_history_refuses_an_empty_history_and_backwards_time_with_the_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").expect("write");
    let out = common::fencesim(&["check-history", empty.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("nonempty"),
        "{}",
        common::stderr(&out)
    );

    let mut h = H::new();
    h.issued(1, None);
    h.received(A, 1, None);
    h.0.events[1].t_true_ns = 0;
    let mut text = Vec::new();
    jsonl::write(&h.0, &mut text).expect("write");
    let back = dir.path().join("back.jsonl");
    // A blank line first: the error names the file's line, not the record.
    std::fs::write(&back, [b"\n".as_slice(), &text].concat()).expect("write");
    let out = common::fencesim(&["check-history", back.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    assert!(err.contains("back.jsonl:3:1: rule time-order"), "{err}");

    h.0.events[1].t_true_ns = h.0.events[0].t_true_ns;
    let mut text = Vec::new();
    jsonl::write(&h.0, &mut text).expect("write");
    std::fs::write(&back, text).expect("write");
    let out = common::fencesim(&["check-history", back.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
}

#[test]
fn lost_update_evidence_names_the_overwritten_writes_after_the_value_read() {
    let mut h = H::new();
    h.read_ok(A, 1001, 2001);
    let mut between = vec![];
    for op in [2001, 3001, 4001, 5001] {
        h.sent(B, op, None);
        between.push(h.accepted(op, None));
    }
    let read = h.read_ok(A, 1001, 2001);
    h.sent(A, 1001, None);
    let lost = h.accepted(1001, None);
    let r = h.check();
    let v = r
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::LostUpdate)
        .expect("lost");
    // In record order: the read came after the writes it missed.
    assert_eq!(
        v.evidence,
        vec![between[1], between[2], between[3], read, lost]
    );
}

#[test]
fn object_store_conditional_writes_are_clean_under_random_faults_and_their_unfenced_twin_is_not() {
    // The catalogue calls object-store-cas safe: an If-Match write lands
    // only if the generation it read is current, so it is serializable.
    let scenario = |name: &str| common::load(&common::scenario_path(&format!("{name}.toml")));
    let cas = common::with_random_faults(scenario("real-systems/object-store-cas-gc-pause"));
    let plain = common::with_random_faults(scenario("article/gc-pause-redis-set-nx"));
    let clean = fencesim::suite::run_scenario(&cas, 0..400, 2);
    let broken = fencesim::suite::run_scenario(&plain, 0..400, 2);
    for kind in ViolationKind::ALL {
        assert_eq!(
            clean.agg.failing_seeds[kind as usize], 0,
            "{kind} in object-store-cas"
        );
    }
    assert!(
        clean.agg.seeds_with_stale_attempts >= 40,
        "the hazard was exercised: {}",
        clean.agg.seeds_with_stale_attempts
    );
    assert!(broken.agg.failing_seeds[ViolationKind::StaleWrite as usize] > 0);
}

#[test]
fn the_vacuity_guard_judges_each_expected_kind_by_its_own_hazard_and_names_it() {
    use fencesim::scenario::expect::Expectation;
    use fencesim::suite::{vacuity, Aggregate};
    let mut agg = Aggregate {
        seeds: 200,
        ..Aggregate::default()
    };
    // A release hazard in every seed, no stale or late write in any.
    agg.seeds_with_hazard[ViolationKind::UnsafeRelease as usize] = 200;
    agg.seeds_with_hazard[ViolationKind::TokenOrder as usize] = 200;
    let release = Expectation {
        must_find: vec![(ViolationKind::UnsafeRelease, 1)],
        ..Expectation::default()
    };
    assert_eq!(
        vacuity(&release, &agg),
        None,
        "the release was put to the test"
    );
    let clean = Expectation::default();
    assert_eq!(
        vacuity(&clean, &agg),
        None,
        "a clean scenario judges releases too"
    );

    let stale = Expectation {
        must_find: vec![(ViolationKind::StaleWrite, 1)],
        ..Expectation::default()
    };
    let msg = vacuity(&stale, &agg).expect("no stale or late write: vacuous");
    assert!(
        msg.contains("a stale or late write reached the resource (stale_write) in 0/200"),
        "{msg}"
    );
    assert!(
        !msg.contains("release"),
        "only the expected kind is judged: {msg}"
    );

    // Two grants of a key in every seed do not make a clean scenario meaningful.
    agg.seeds_with_hazard[ViolationKind::UnsafeRelease as usize] = 19;
    let msg = vacuity(&clean, &agg).expect("19/200 is under 10%");
    assert!(
        msg.contains("a release was applied for an expired lease (unsafe_release) in 19/200"),
        "{msg}"
    );
    agg.seeds_with_hazard[ViolationKind::UnsafeRelease as usize] = 20;
    assert_eq!(vacuity(&clean, &agg), None);
}

#[test]
fn a_redelivered_conditional_write_the_document_absorbed_is_not_stale() {
    // Op 3002 read 2001 (current) and its cas stored 3002 although an older
    // grant: a conditional write whose condition held. Its retransmission is
    // accepted again with nothing changed: still not a stale write.
    let h = r#"{"schema_version":1,"seq":1,"t_true_ns":1,"node":"coord/0","kind":"grant_issued","grant_id":1,"key":"doc"}
{"schema_version":1,"seq":2,"t_true_ns":2,"node":"worker/A","kind":"grant_received","grant_id":1,"key":"doc"}
{"schema_version":1,"seq":3,"t_true_ns":3,"node":"coord/0","kind":"grant_issued","grant_id":2,"key":"doc"}
{"schema_version":1,"seq":4,"t_true_ns":4,"node":"worker/B","kind":"grant_received","grant_id":2,"key":"doc"}
{"schema_version":1,"seq":5,"t_true_ns":5,"node":"worker/B","kind":"read_ok","op_id":2001,"key":"doc","value":0}
{"schema_version":1,"seq":6,"t_true_ns":6,"node":"worker/B","kind":"write_sent","op_id":2001,"key":"doc","value":2001}
{"schema_version":1,"seq":7,"t_true_ns":7,"node":"resource/0","kind":"write_accepted","op_id":2001,"key":"doc","value":2001}
{"schema_version":1,"seq":8,"t_true_ns":8,"node":"worker/A","kind":"read_ok","op_id":3002,"key":"doc","value":2001}
{"schema_version":1,"seq":9,"t_true_ns":9,"node":"worker/A","kind":"write_sent","op_id":3002,"key":"doc","token":2001,"value":3002}
{"schema_version":1,"seq":10,"t_true_ns":10,"node":"resource/0","kind":"write_accepted","op_id":3002,"key":"doc","token":2001,"value":3002}
{"schema_version":1,"seq":11,"t_true_ns":11,"node":"worker/A","kind":"write_sent","op_id":3002,"key":"doc","token":2001,"value":3002}
{"schema_version":1,"seq":12,"t_true_ns":12,"node":"resource/0","kind":"write_accepted","op_id":3002,"key":"doc","token":2001,"value":3002}
"#;
    let history = jsonl::read(h, "h.jsonl").expect("parses");
    validate(&history).expect("a valid history");
    let main = check(&history);
    assert_eq!(main.count(ViolationKind::StaleWrite), 0, "{main:?}");
    let oracle = oracle::check(&history);
    assert!(
        oracle.iter().all(|f| f.kind != "stale_write"),
        "the second checker agrees: {oracle:?}"
    );
}
