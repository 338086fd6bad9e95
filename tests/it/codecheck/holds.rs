//! The simulator's pause in the code-level search (`--pause-holds`,
//! `src/codecheck/hold.rs`): a paused worker handles nothing; what reaches
//! it is held and run, in arrival order, at the pause's end. Checked on
//! one path by hand, and by the verdicts: the fenced protocols stay
//! proved under it, their unfenced twins are still found, and
//! github-2012-pair's paused active now takes its STONITH after the pause
//! ends, a path the simulator's pause allows, which the emitter scripts.

use fencesim::check::ViolationKind;
use fencesim::codecheck::harness::Next;
use fencesim::codecheck::state::Held;
use fencesim::codecheck::state::State;
use fencesim::codecheck::to_scenario::{replays, to_scenario};
use fencesim::codecheck::{
    builtin, check_protocol, check_protocol_with, Action, Bounds, Builtin, Harness, Options,
};
use fencesim::protocol::{NodeId, ProtocolKind, TimerId};

use super::{harness_of, proved, small};
use crate::common::{fencesim, stderr, stdout};

fn holding() -> Bounds {
    Bounds {
        pause_holds: true,
        ..small()
    }
}

fn step(h: &Harness<Builtin>, s: &State<Builtin>, a: Action) -> State<Builtin> {
    assert!(h.actions(s, &mut None).contains(&a), "{a:?} enabled");
    match h.next(s, a) {
        Next::State(next, _) => next,
        _ => panic!("{a:?}: no successor state"),
    }
}

/// The first enabled action that `pick` accepts.
fn first(h: &Harness<Builtin>, s: &State<Builtin>, pick: impl Fn(&Action) -> bool) -> Action {
    let actions = h.actions(s, &mut None);
    *actions
        .iter()
        .find(|a| pick(a))
        .unwrap_or_else(|| panic!("none of {actions:?}"))
}

#[test]
fn a_grant_that_reaches_a_paused_worker_waits_for_the_pauses_end() {
    let h = harness_of(ProtocolKind::FencedCas, holding(), builtin);
    let a = NodeId(0);
    let coord = h.topology.coord;
    // A asks for the lock, then pauses; the coordinator grants it.
    let mut s = h.initial();
    s = step(
        &h,
        &s,
        first(
            &h,
            &s,
            |x| matches!(x, Action::Fire { node, .. } if *node == a),
        ),
    );
    s = step(
        &h,
        &s,
        first(&h, &s, |x| matches!(x, Action::Deliver(p) if p.to == coord)),
    );
    s = step(&h, &s, Action::Pause(a));
    let paused_at_ns = s.now_ns;
    let grant = first(&h, &s, |x| matches!(x, Action::Deliver(p) if p.to == a));
    let before = s.nodes[0].clone();
    s = step(&h, &s, grant);
    assert_eq!(s.nodes[0], before, "a paused worker handles nothing");
    let Action::Deliver(granted) = grant else {
        unreachable!()
    };
    let held = s.hold(a).expect("paused").inputs.clone();
    assert_eq!(held, vec![Held::Message(granted)]);
    assert!(!s.in_flight.contains(&granted), "held, not in flight");
    // Time runs on until A's pause ends; B's messages are delivered.
    while !h.actions(&s, &mut None).contains(&Action::Resume(a)) {
        let other = |x: &Action| match x {
            Action::Fire { .. } => true,
            Action::Deliver(p) => p.to != a,
            _ => false,
        };
        s = step(&h, &s, first(&h, &s, other));
    }
    // A's request timeout fell due during the pause: held behind the grant.
    let timeout = TimerId(1);
    let held = s.hold(a).expect("paused").inputs.clone();
    assert_eq!(held, vec![Held::Message(granted), Held::Timer(timeout)]);
    s = step(&h, &s, Action::Resume(a));
    assert_eq!(
        s.now_ns,
        paused_at_ns + 11_000_000,
        "the pause lasts TTL + 1 ms"
    );
    assert!(s.hold(a).is_none(), "the pause is over");
    assert_ne!(s.nodes[0], before, "A ran the grant it held");
    assert!(
        s.in_flight
            .iter()
            .any(|p| p.from == a && p.to == h.topology.resource),
        "A, granted, reads the resource: {:?}",
        s.in_flight
    );
    // The grant re-armed the timeout for the read, so the held firing was
    // stale and dropped (the simulator's timer generations): A asks no
    // one for the lock again.
    assert!(
        !s.in_flight.iter().any(|p| p.from == a && p.to == coord),
        "{:?}",
        s.in_flight
    );
    assert!(
        s.timers
            .iter()
            .any(|t| t.node == a && t.timer == timeout && t.deadline_ns > s.now_ns),
        "{:?}",
        s.timers
    );
}

#[test]
fn fenced_protocols_are_proved_with_the_simulators_pause() {
    proved(ProtocolKind::FencedCas, holding());
    let (_, out) = check_protocol_with(
        ProtocolKind::Github2012Pair,
        Options {
            fence: Some(true),
            ..Options::default()
        },
        holding(),
    )
    .expect("supported");
    assert!(out.proved() && out.vacuity_ok(), "{out:?}");
}

#[test]
fn unfenced_twins_are_found_with_the_simulators_pause() {
    for (kind, found) in [
        (ProtocolKind::RedisSetNx, ViolationKind::StaleWrite),
        (ProtocolKind::TtlLeaseDel, ViolationKind::UnsafeRelease),
        (ProtocolKind::CheckBeforeWrite, ViolationKind::StaleWrite),
        (
            ProtocolKind::FencedCheckThenWrite,
            ViolationKind::StaleWrite,
        ),
    ] {
        let (_, with) = check_protocol(kind, holding()).expect("supported");
        let (_, without) = check_protocol(kind, small()).expect("supported");
        let c = with
            .counterexample
            .unwrap_or_else(|| panic!("{}", kind.id()));
        assert_eq!(c.finding.kind, found, "{}", kind.id());
        let d = without.counterexample.expect("unsafe either way");
        assert_eq!(d.finding.kind, found, "{}: as without", kind.id());
    }
}

#[test]
fn github_2012_pairs_paused_active_takes_its_stonith_only_after_its_pause() {
    let unfenced = Options {
        fence: Some(false),
        ..Options::default()
    };
    let (h, out) =
        check_protocol_with(ProtocolKind::Github2012Pair, unfenced, holding()).expect("supported");
    let c = out.counterexample.expect("unsafe");
    assert_eq!(c.finding.kind, ViolationKind::TwoActives, "{c:?}");
    let steps: Vec<Action> = c.steps.iter().map(|(a, _)| *a).collect();
    let paused = steps.iter().position(|a| matches!(a, Action::Pause(_)));
    let resumed = steps.iter().position(|a| matches!(a, Action::Resume(_)));
    let stonith = steps
        .iter()
        .position(|a| matches!(a, Action::Deliver(p) if p.msg.name() == "stonith"));
    let (Some(paused), Some(resumed), Some(stonith)) = (paused, resumed, stonith) else {
        panic!("a pause, its end and a STONITH: {c:?}");
    };
    assert!(paused < resumed && resumed < stonith, "{c:?}");
    // Scripted as the simulator's pause, exactly its length, and replayed.
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    assert!(text.contains("duration_ms = 55"), "11 ms × K = 5: {text}");
}

#[test]
fn check_code_pause_holds_states_it_and_refine_checks_it() {
    let out = fencesim(&["check", "--code", "fenced-cas", "--pause-holds"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("/1pause(holds)/"), "{text}");
    let refine = [
        "check",
        "--code",
        "fenced-cas",
        "--pause-holds",
        "--refine",
        "--horizon-ms",
        "13",
    ];
    let out = fencesim(&refine);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("/1pause(holds)/"), "{text}");
    assert!(text.contains("refines its model"), "{text}");
}
