//! The active/passive pair at the code level (github-2012-pair): its two
//! nodes at the workers' addresses promote themselves by heartbeat, dead
//! time and STONITH. Without a storage fence the passive node takes over
//! while the paused active's write is still in flight, and the storage
//! accepts it while the new active believes it owns the resource
//! (two_actives, GitHub's 2012 outage); with the fence (`fence = true`: a
//! storage reservation) the same search proves it, also with a crash.

use fencesim::check::ViolationKind;
use fencesim::codecheck::{check_protocol_with, Bounds, Options, Outcome};
use fencesim::protocol::ProtocolKind;

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
