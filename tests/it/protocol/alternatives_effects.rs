//! Irreversible effects: the naive provider call sends the same email twice
//! under faults that the idempotency key and the transactional outbox
//! survive — and the checker's evidence names the two performances.

use crate::common;

use fencesim::check::{self, ViolationKind};
use fencesim::history::Kind;
use fencesim::{sim, suite};

fn run(rel: &str, seed: u64) -> (fencesim::history::History, check::Report) {
    let s = common::load(&common::scenario_path(rel));
    let out = sim::run(&s.options, seed, false);
    let report = check::check(&out.history);
    (out.history, report)
}

#[test]
fn naive_provider_call_performs_one_operations_effect_twice() {
    let (h, r) = run("alternatives/effect-naive.toml", 0);
    assert_eq!(r.count(ViolationKind::DuplicateEffect), 1);
    let v = r
        .violations
        .iter()
        .find(|v| v.kind == ViolationKind::DuplicateEffect)
        .expect("the duplicate effect is reported");
    let performed: Vec<_> = v
        .evidence
        .iter()
        .filter_map(|&s| h.by_seq(s))
        .filter(|e| e.kind == Kind::EffectPerformed)
        .collect();
    assert_eq!(performed.len(), 2, "evidence names both performances");
    assert_eq!(performed[0].op_id, performed[1].op_id, "of the same op");
    assert!(
        performed[1].t_true_ns > 10_000_000_000,
        "the retry came after the lease ran out"
    );
    assert_eq!(
        r.count(ViolationKind::StaleWrite),
        0,
        "the document itself stays fenced"
    );
}

#[test]
fn idempotency_key_and_outbox_survive_the_same_faults() {
    for rel in [
        "alternatives/effect-idempotency-key.toml",
        "alternatives/effect-outbox.toml",
    ] {
        let (h, r) = run(rel, 0);
        assert!(r.is_clean(), "{rel}: {:?}", r.violations);
        let deduplicated = h
            .events
            .iter()
            .filter(|e| e.kind == Kind::EffectDeduplicated)
            .count();
        assert!(
            deduplicated >= 1,
            "{rel}: the retry reached the provider and was recognised"
        );
        assert_eq!(
            r.info.fence_rejected_total, 1,
            "{rel}: the stale holder met the fence"
        );
    }
}

#[test]
fn a_stale_holder_whose_write_is_rejected_never_enqueues_its_effect() {
    let (h, _) = run("alternatives/effect-outbox.toml", 0);
    let rejected: Vec<u64> = h
        .events
        .iter()
        .filter(|e| e.kind == Kind::WriteRejected)
        .filter_map(|e| e.op_id)
        .collect();
    assert_eq!(
        rejected,
        vec![2001],
        "B's stale write is the one fenced off"
    );
    assert!(
        !h.events
            .iter()
            .any(|e| e.kind == Kind::EffectSent && e.op_id == Some(2001)),
        "no effect for a write the fence rejected"
    );
    let accepted_ops = h
        .events
        .iter()
        .filter(|e| e.kind == Kind::WriteAccepted)
        .count();
    let performed = h
        .events
        .iter()
        .filter(|e| e.kind == Kind::EffectPerformed)
        .count();
    assert_eq!(
        performed, accepted_ops,
        "every accepted update's effect goes out exactly once"
    );
}

#[test]
fn random_faults_make_the_naive_call_duplicate_and_leave_the_twins_clean() {
    let naive = common::load(&common::scenario_path(
        "alternatives/random-faults-effect-naive.toml",
    ));
    let broken = suite::run_scenario(&naive, 0..100, 2);
    assert!(broken.agg.failing_seeds[ViolationKind::DuplicateEffect as usize] >= 20);
    for rel in [
        "alternatives/random-faults-effect-idempotency-key.toml",
        "alternatives/random-faults-effect-outbox.toml",
    ] {
        let s = common::load(&common::scenario_path(rel));
        let r = suite::run_scenario(&s, 0..100, 2);
        assert_eq!(
            r.agg.failing_seeds[ViolationKind::DuplicateEffect as usize],
            0,
            "{rel}"
        );
    }
}
