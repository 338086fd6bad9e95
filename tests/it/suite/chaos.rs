//! The chaos suite (scenarios/chaos/): every set-up the catalogue calls safe
//! under every fault kind at high rates at once. Its clean scenarios are
//! swept over 10 000 seeds each by `safe_protocols.rs`; here: that each one
//! really carries every fault kind it claims, and that the same faults
//! break its unfenced twin (otherwise clean would prove nothing).

use crate::common;

use std::path::PathBuf;

use fencesim::scenario::{self, Scenario};
use fencesim::sim::Fault;
use fencesim::suite;

const MS: u64 = 1_000_000;

fn chaos(dir: &str) -> Vec<Scenario> {
    let root: PathBuf = common::root().join("scenarios/chaos").join(dir);
    let files = scenario::collect(&[root]).expect("scenarios/chaos is readable");
    files
        .iter()
        .filter(|f| {
            dir == "unfenced" || !f.starts_with(common::root().join("scenarios/chaos/unfenced"))
        })
        .map(|f| common::load(f))
        .collect()
}

#[test]
fn every_chaos_scenario_carries_every_fault_kind_at_high_rates() {
    let _heavy = crate::common::heavy();
    let all = chaos("");
    assert!(all.len() >= 15, "one per safe set-up, found {}", all.len());
    for s in &all {
        let o = &s.options;
        let name = &s.name;
        let ttl_ns = o.protocol.lease_ttl_ns;
        let r = &o.random;
        assert!(o.network.loss_probability >= 0.1, "{name}: 10 % loss");
        assert!(o.network.duplicate_probability > 0.0, "{name}: duplication");
        assert!(
            o.network.delay_probability > 0.0 && o.network.delay_max_ns >= 3 * ttl_ns,
            "{name}: delay spikes of up to 3x the TTL"
        );
        assert!(
            r.pause_probability >= 0.5 && r.pause_max_ns >= 3 * ttl_ns,
            "{name}: pauses up to 3x the TTL"
        );
        assert!(r.crash_probability >= 0.3, "{name}: crashes");
        assert_eq!(
            r.crash_nodes.len(),
            o.nodes.len(),
            "{name}: every node can crash, lock servers included"
        );
        assert!(
            r.restart_max_ns >= 500 * MS,
            "{name}: crashed nodes restart"
        );
        assert!(r.partition_probability >= 0.5, "{name}: two-way partitions");
        assert!(
            o.faults
                .iter()
                .any(|f| matches!(f, Fault::Partition { one_way: true, .. })),
            "{name}: a one-way partition"
        );
        assert!(
            o.nodes.iter().any(|n| n.clock.drift_ppm != 0)
                && o.nodes.iter().any(|n| !n.clock.jumps.is_empty()),
            "{name}: clock drift and jumps"
        );
        if o.protocol.replicas > 1 {
            assert!(r.failover_probability >= 0.5, "{name}: failover");
        }
        assert!(s.expect.must_find.is_empty(), "{name} is expected clean");
    }
}

#[test]
fn the_same_chaos_breaks_every_unfenced_twin() {
    let _heavy = crate::common::heavy();
    let clean = chaos("");
    let twins = chaos("unfenced");
    assert!(twins.len() >= 10, "found {} twins", twins.len());
    for twin in &twins {
        assert!(
            !twin.expect.must_find.is_empty(),
            "{}: a twin must fail",
            twin.name
        );
        let result = suite::run_scenario(twin, twin.seeds.clone(), 2);
        assert!(result.met(), "{}: {:?}", twin.name, result.problems);
    }
    // Every clean scenario names a twin that exists.
    for s in &clean {
        let named = twins
            .iter()
            .any(|t| s.description.contains(&format!("{}.toml", t.name)));
        assert!(
            named,
            "{}: its description names no twin in unfenced/",
            s.name
        );
    }
}
