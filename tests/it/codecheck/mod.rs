//! The code-level checker (`src/codecheck/`): the shipped nodes of a safe
//! protocol are proved at small bounds, its unsafe twins are found with
//! shortest counterexamples, a deliberately broken copy of the resource is
//! found by the same search, conditional writes are judged as the history
//! checker judges them, clock drift and wall-clock jumps are searched
//! too, `fencesim check --code` exits as `check`, and every explored step
//! of the code refines the protocol's abstract model.

mod broken;
mod cli;
mod clocks;
mod conditional;
mod effect_refine;
mod effects;
mod emit;
mod etcd_refine;
mod holds;
mod incr_refine;
mod lock_server;
mod pair;
mod queue;
mod quorum_refine;
mod redlock_refine;
mod refine;
mod replicated;
mod server_lock;
mod store_lock;
mod to_live;

use fencesim::check::ViolationKind;
use fencesim::codecheck::{check_protocol, Action, Bounds, Harness, Outcome, Topology};
use fencesim::protocol::ProtocolKind;
use fencesim::protocol::Role;

/// 2 workers, 2 grants, one pause, no other fault, horizon 16 ms.
pub fn small() -> Bounds {
    Bounds {
        max_states: 3_000_000,
        ..Bounds::default()
    }
}

/// `kind` proved at `bounds`, not vacuously: a write was accepted and one
/// acting on an older grant reached the store (and was refused).
fn proved(kind: ProtocolKind, bounds: Bounds) {
    let out = run(kind, bounds);
    assert!(out.proved(), "{}: {out:?}", kind.id());
    assert!(out.vacuity_ok(), "{}: {out:?}", kind.id());
    assert!(out.unique_states > 100_000, "{}: {out:?}", kind.id());
}

/// `kind`'s topology at `bounds`, its nodes built by `factory` (a
/// deliberately broken copy of one of them, say).
fn harness_of<N>(kind: ProtocolKind, bounds: Bounds, factory: fn(&Role) -> N) -> Harness<N> {
    Harness {
        topology: Topology::lease(kind, bounds.workers, bounds.timing).expect("supported"),
        factory,
        bounds,
    }
}

fn run(kind: ProtocolKind, bounds: Bounds) -> Outcome {
    check_protocol(kind, bounds)
        .expect("a supported protocol")
        .1
}

#[test]
fn fenced_cas_is_proved_at_two_workers_two_grants_and_one_pause() {
    let out = run(ProtocolKind::FencedCas, small());
    assert!(
        out.proved(),
        "no violation and the space exhausted: {out:?}"
    );
    assert!(
        out.vacuity_ok(),
        "a write was accepted and a stale one reached the resource: {out:?}"
    );
    assert!(out.unique_states > 10_000, "{out:?}");
}

#[test]
fn fenced_cas_is_proved_with_one_lost_message_and_with_one_crash() {
    for bounds in [
        Bounds {
            losses: 1,
            pauses: 0,
            ..small()
        },
        Bounds {
            crashes: 1,
            pauses: 0,
            horizon_ms: 14,
            ..small()
        },
    ] {
        let out = run(ProtocolKind::FencedCas, bounds);
        assert!(
            out.proved() && out.vacuity_ok(),
            "{}: {out:?}",
            bounds.label()
        );
    }
}

#[test]
fn redis_set_nx_without_a_fence_has_a_shortest_stale_write_of_sixteen_steps() {
    let out = run(ProtocolKind::RedisSetNx, small());
    let c = out.counterexample.expect("the unfenced twin is unsafe");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "the BFS finished: no shorter path exists");
    assert_eq!(c.steps.len(), 16, "{c:?}");
    // The last step delivers the older holder's delayed write.
    assert!(
        matches!(c.steps.last(), Some((Action::Deliver(p), _)) if p.msg.name() == "write"),
        "{c:?}"
    );
}

#[test]
fn the_unfenced_plain_del_lease_is_found_unsafe_too() {
    let out = run(ProtocolKind::TtlLeaseDel, small());
    let c = out.counterexample.expect("unsafe");
    assert!(
        matches!(
            c.finding.kind,
            ViolationKind::StaleWrite | ViolationKind::UnsafeRelease
        ),
        "{c:?}"
    );
}

#[test]
fn fenced_check_then_write_has_a_shortest_stale_write_of_twenty_steps() {
    // Its BFS outgrows its level bound: the shortest path comes from
    // bisecting the depth-limited DFS instead.
    let out = run(ProtocolKind::FencedCheckThenWrite, small());
    let c = out.counterexample.expect("the two-step fence is unsafe");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
    assert_eq!(c.steps.len(), 20, "{c:?}");
}

#[test]
fn a_search_stopped_by_its_state_bound_proves_nothing() {
    let out = run(
        ProtocolKind::FencedCas,
        Bounds {
            max_states: 1_000,
            ..small()
        },
    );
    assert!(out.hits.max_states, "{out:?}");
    assert!(!out.proved(), "{out:?}");
}

#[test]
fn every_catalogue_protocol_is_driven_at_the_code_level() {
    let all: Vec<&str> = ProtocolKind::ALL.iter().map(|k| k.id()).collect();
    assert_eq!(fencesim::codecheck::supported(), all);
}
