//! The active/passive pair at the code level (github-2012-pair): its two
//! nodes at the workers' addresses promote themselves by heartbeat, dead
//! time and STONITH. Without a storage fence the passive node takes over
//! while the paused active's write is still in flight, and the storage
//! accepts it while the new active believes it owns the resource
//! (two_actives, GitHub's 2012 outage); with the fence (`fence = true`: a
//! storage reservation) the same search proves it, also with a crash.
//!
//! The unfenced pair refines its own model, active-passive (a promotion at
//! any moment, beside an active; an active writes until it steps down; a
//! write may vanish), also with a crash; a storage
//! whose ordered session is switched off (a given-up write still executes
//! after its sender's next command) diverges, though the search's
//! properties see nothing new there; the storage-fenced pair is refused by
//! name.

use fencesim::check::ViolationKind;
use fencesim::codecheck::{
    builtin, check_protocol_with, model_for, refine, refine_protocol_with, Bounds, Harness,
    Options, Outcome, Refinement, Topology,
};
use fencesim::model::Protocol;
use fencesim::protocol::{ProtocolKind, Role};

const PAIR: ProtocolKind = ProtocolKind::Github2012Pair;

fn pair(fence: bool, bounds: Bounds) -> Outcome {
    let options = Options {
        fence: Some(fence),
        ..Options::default()
    };
    check_protocol_with(ProtocolKind::Github2012Pair, options, bounds)
        .expect("supported")
        .1
}

#[test]
fn the_unfenced_pair_has_two_actives_when_the_active_pauses() {
    let out = pair(false, super::small());
    let c = out.counterexample.expect("two actives");
    assert_eq!(c.finding.kind, ViolationKind::TwoActives, "{c:?}");
    assert!(c.shortest, "{c:?}");
}

#[test]
fn the_pair_with_a_storage_fence_is_proved_also_with_a_crash() {
    for bounds in [
        super::small(),
        Bounds {
            crashes: 1,
            pauses: 0,
            ..super::small()
        },
    ] {
        let out = pair(true, bounds);
        assert!(out.proved() && out.vacuity_ok(), "{out:?}");
    }
}

fn unfenced() -> Options {
    Options {
        fence: Some(false),
        ..Options::default()
    }
}

fn refined(bounds: Bounds) -> Refinement {
    refine_protocol_with(PAIR, unfenced(), bounds)
        .expect("the unfenced pair is mapped")
        .1
}

#[test]
fn the_unfenced_pair_refines_active_passive_and_with_a_crash() {
    // With 1 crash, 1 loss and 1 duplicate (no pause, 12 ms) it passes
    // too: 1,162,606 states, 14 s CPU, in the docs rather than here.
    for bounds in [
        super::small(),
        Bounds {
            crashes: 1,
            pauses: 0,
            horizon_ms: 12,
            ..super::small()
        },
    ] {
        let r = refined(bounds);
        assert!(r.passed(), "{bounds:?}: {:?}", r.divergence);
        assert_eq!(r.of.protocol, Protocol::ActivePassive);
        assert_eq!(r.of.spec, "models/active-passive.toml");
        // Promotions, writes sent and landed, and step-downs or dropped writes.
        let [acquire, _, send, deliver, _, _, _, other] = r.counts.by_action;
        assert!(
            acquire > 0 && send > 0 && deliver > 0 && other > 0,
            "{bounds:?}: {:?}",
            r.counts
        );
    }
}

/// The pair's topology at `bounds`, its storage's ordered session on or off.
fn pair_harness(ordered: bool, bounds: Bounds) -> Harness<fencesim::codecheck::Builtin> {
    let mut topology =
        Topology::new(PAIR, unfenced(), bounds.workers, bounds.timing).expect("supported");
    match &mut topology.roles[topology.resource.0 as usize] {
        Role::Resource(cfg) => {
            assert!(
                cfg.ordered_sessions,
                "the pair's storage is an ordered session"
            );
            cfg.ordered_sessions = ordered;
        }
        other => panic!("resource/0 is the storage: {other:?}"),
    }
    Harness {
        topology,
        factory: builtin,
        bounds,
    }
}

#[test]
fn a_storage_without_its_ordered_session_diverges_where_a_given_up_write_is_still_live() {
    // The copy with the CmdSN check removed: the active gives its write up
    // at the request timeout, reads and writes its next op, and the first
    // write may still execute after the second — the value goes back to
    // the same active's older op, which no judged property names (both
    // writes are one promotion's) and the model has no step for.
    let r = refine(&pair_harness(false, super::small())).expect("mapped");
    let d = r.divergence.expect("two live writes of one promotion");
    let why = d.unmapped.expect("the state has no model state");
    assert!(why.contains("are both live in flight"), "{why}");
    assert!(d.shortest, "the BFS found it");
    // The same harness with the session kept refines the model: the
    // first test's run at these bounds (`refine_protocol_with`).
}

#[test]
fn the_storage_fenced_pair_is_refused_by_name() {
    let why = model_for(PAIR, true).expect_err("refused");
    assert!(
        why.starts_with("github-2012-pair: no refinement with --fence true")
            && why.contains("reservation"),
        "{why}"
    );
    let fenced = Options {
        fence: Some(true),
        ..Options::default()
    };
    let refused = refine_protocol_with(PAIR, fenced, super::small()).err();
    assert_eq!(refused.as_ref(), Some(&why));
}
