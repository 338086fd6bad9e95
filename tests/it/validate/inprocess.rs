//! The in-process example (examples/inprocess_node.rs) as a test: a node
//! written outside fencesim, against the public `Node` trait, runs under
//! `sim::run_with` and the checker — its fenced form clean, its unfenced
//! twin caught on the same scenario.

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
