//! The in-process example (examples/inprocess_node.rs) as a test: a node
//! written outside fencesim, against the public `Node` trait, runs under
//! `sim::run_with` and the checker — its fenced form clean, its unfenced
//! twin caught on the same scenario; and the same store checked
//! exhaustively at the code level (`codecheck::own`).

#[allow(dead_code)]
#[path = "../../../examples/inprocess_node.rs"]
mod inprocess_node;

use std::path::Path;

#[test]
fn a_user_written_fenced_store_is_clean_and_its_unfenced_twin_writes_stale() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/article/gc-pause-fenced-cas.toml");
    let fenced = inprocess_node::run_with_my_store(&path, true, 0..20);
    assert!(fenced.failing.is_empty(), "{:?}", fenced.failing);
    assert_eq!(
        fenced.fence_rejections, 20,
        "one stale write fenced off per seed"
    );

    let unfenced = inprocess_node::run_with_my_store(&path, false, 0..20);
    assert_eq!(unfenced.failing.len(), 20);
    assert!(unfenced
        .failing
        .iter()
        .all(|(_, kinds)| kinds.contains(&"stale_write")));
}

#[test]
fn a_user_written_store_is_proved_at_the_code_level_and_its_unfenced_twin_gets_a_shortest_stale_write(
) {
    use fencesim::codecheck::{check_protocol, Bounds};
    use fencesim::protocol::ProtocolKind;

    let (_, fenced) = inprocess_node::code_check_my_store(true);
    assert!(fenced.proved() && fenced.vacuity_ok(), "{fenced:?}");
    // MyStore keeps what the shipped resource keeps (value and fence per
    // key), so the space is the built-in fenced-cas's, state for state.
    let kind = ProtocolKind::FencedCas;
    let (_, shipped) = check_protocol(kind, Bounds::for_protocol(kind)).expect("supported");
    assert_eq!(fenced.unique_states, shipped.unique_states);

    let (_, unfenced) = inprocess_node::code_check_my_store(false);
    let c = unfenced
        .counterexample
        .expect("the unfenced store is caught");
    assert_eq!(c.finding.kind.name(), "stale_write");
    assert!(c.shortest, "a shortest path");
    assert_eq!(c.steps.len(), 16, "{c:?}");
}
