//! consensus-generation refines its model (`fencesim check --code
//! consensus-generation --refine`): the shipped replica group — a primary
//! that proposes each generation to the others and grants once a majority
//! accepted, gives a proposal up on a refusal or its retry timer, and a
//! promoted replica that learns the highest generation answer by answer
//! while the old primary's proposals are still in flight — maps onto the
//! model's proposals, acceptances and query (`src/model/quorum.rs`). A copy
//! of the primary that counts one acceptance before it arrives (it grants
//! on a minority) diverges at its first grant; crashes, rejoins and losses
//! are refused with the reason.

use super::replicated::{eager, EagerQuorum};
use fencesim::codecheck::{refine, refine_protocol, Action, Bounds, Harness, Inspect, Topology};
use fencesim::model::Protocol;
use fencesim::protocol::coordinator::Coordinator;
use fencesim::protocol::resource::Resource;
use fencesim::protocol::{Msg, ProtocolKind};

use crate::common::{fencesim, stderr, stdout};

const KIND: ProtocolKind = ProtocolKind::ConsensusGeneration;

/// consensus-generation's defaults (2 workers, 2 grants, 1 failover, no
/// pause, 4 in flight) to 3 ms: the failover, a proposal given up at its
/// retry (2.5 ms) and the new primary's query within it; 108,208 states
/// (4 ms: 219,677, docs/model-checking.md).
fn ci_bounds() -> Bounds {
    Bounds {
        horizon_ms: 3,
        ..Bounds::for_protocol(KIND)
    }
}

#[test]
fn consensus_generation_refines_its_model_with_a_failover() {
    let (_, r) = refine_protocol(KIND, ci_bounds()).expect("mapped");
    assert_eq!(r.of.protocol, Protocol::ConsensusGeneration);
    assert_eq!(r.of.spec, "models/consensus-generation.toml");
    assert!(r.passed() && r.divergence.is_none(), "{:?}", r.divergence);
    let [acquire, expire, send, deliver, .., other] = r.counts.by_action;
    assert!(
        acquire == 0 && expire > 0 && send > 0 && deliver > 0 && other > 0,
        "grants come from acknowledgements (other), never Acquire: {:?}",
        r.counts
    );
    assert!(r.outcome.unique_states > 10_000, "{:?}", r.outcome);
}

impl Inspect for EagerQuorum {
    fn coordinator(&self) -> Option<&Coordinator> {
        match self {
            EagerQuorum::Builtin(n) => n.coordinator(),
            EagerQuorum::Coordinator(c) => Some(c),
        }
    }
    fn resource(&self) -> Option<&Resource> {
        match self {
            EagerQuorum::Builtin(n) => n.resource(),
            EagerQuorum::Coordinator(_) => None,
        }
    }
}

#[test]
fn a_primary_granting_before_a_majority_accepted_diverges_at_its_first_grant() {
    let bounds = ci_bounds();
    let h = Harness {
        topology: Topology::lease(KIND, bounds.workers, bounds.timing).expect("supported"),
        factory: eager,
        bounds,
    };
    let r = refine(&h).expect("mapped");
    let d = r
        .divergence
        .expect("the early grant diverges from the model");
    assert!(d.shortest, "the BFS found it: {:?}", d.path);
    let (last, _) = d.path.last().expect("a path to the step");
    assert!(
        matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Acquire { .. })),
        "the step is the acquire the primary grants at once: {:?}",
        d.path
    );
}

/// `fencesim check --code consensus-generation --refine` to 3 ms, and `extra`.
fn refine_cli(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "check",
        "--code",
        "consensus-generation",
        "--refine",
        "--horizon-ms",
        "3",
    ];
    args.extend_from_slice(extra);
    fencesim(&args)
}

#[test]
fn check_code_refines_consensus_generation_and_refuses_what_it_cannot_map() {
    let out = refine_cli(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("0 divergences"), "{}", stdout(&out));
    for (flag, why) in [
        ("--crashes", "no refinement with crashes"),
        ("--rejoins", "no refinement with --rejoins 1"),
        ("--losses", "no refinement with --losses 1"),
    ] {
        let out = refine_cli(&[flag, "1"]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stdout(&out));
        assert!(stderr(&out).contains(why), "{flag}: {}", stderr(&out));
    }
}
