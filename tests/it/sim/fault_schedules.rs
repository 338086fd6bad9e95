//! Property: under any fault schedule — pauses, per-message delay and loss,
//! crash/restart of every node including coordinator and resource —
//! `fenced-cas` never yields a stale write or a token-order violation, while
//! the same schedules find stale writes in `ttl-lease-del` in a clear share
//! of cases (so the generator really produces dangerous schedules).

use std::cell::Cell;

use fencesim::check::{self, ViolationKind};
use fencesim::protocol::{NodeId, ProtocolKind};
use fencesim::sim::{self, Fault, When};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const BASE: &str = r#"
schema_version = 1
name = "proptest-base"
max_time_ms = 90_000
[protocol]
kind = "fenced-cas"
[lease]
ttl_ms = 3_000
[workload]
retry_ms = 200
work_ms = 1_000
think_ms = 50
request_timeout_ms = 800
max_retries = 2
[[worker]]
name = "A"
ops = 2
[[worker]]
name = "B"
start_ms = 300
ops = 2
[[worker]]
name = "C"
start_ms = 600
ops = 2
[expect]
"#;

const NODES: u16 = 5; // workers A, B, C; coord/0; resource/0
const MS: u64 = 1_000_000;

fn fault() -> impl Strategy<Value = Fault> {
    let node = (0..NODES).prop_map(NodeId);
    let link =
        (0..NODES, 1..NODES).prop_map(|(from, step)| (NodeId(from), NodeId((from + step) % NODES)));
    prop_oneof![
        3 => (node.clone(), 0..8_000u64, 1_000..10_000u64).prop_map(|(node, at, d)| Fault::Pause {
            node,
            when: When::At(at * MS),
            duration_ns: d * MS
        }),
        1 => (node, 0..8_000u64, 100..5_000u64).prop_map(|(node, at, r)| Fault::Crash {
            node,
            when: When::At(at * MS),
            restart_after_ns: Some(r * MS)
        }),
        2 => (link.clone(), 1..5u32, 0..12_000u64).prop_map(|((from, to), nth, d)| Fault::Delay {
            from,
            to,
            nth,
            delay_ns: d * MS
        }),
        1 => (link, 1..6u32).prop_map(|((from, to), nth)| Fault::Drop { from, to, nth }),
    ]
}

fn schedule() -> impl Strategy<Value = (Vec<Fault>, u64, u32)> {
    (prop::collection::vec(fault(), 1..8), any::<u64>(), 0..5u32)
}

#[test]
fn fenced_cas_survives_a_thousand_fault_schedules_that_break_ttl_leases() {
    let base = fencesim::scenario::parse(BASE, "proptest-base.toml").expect("base scenario parses");
    let cases = 1_000;
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let unfenced_stale = Cell::new(0u32);
    let ran = Cell::new(0u32);
    let result = runner.run(&schedule(), |(faults, seed, loss_percent)| {
        let mut fenced = base.options.clone();
        fenced.faults = faults;
        fenced.network.loss_probability = loss_percent as f64 / 100.0;
        let out = sim::run(&fenced, seed, false);
        let report = check::check(&out.history);
        prop_assert_eq!(
            report.count(ViolationKind::StaleWrite),
            0,
            "stale write under fencing: {:?}",
            report.violations
        );
        prop_assert_eq!(
            report.count(ViolationKind::TokenOrder),
            0,
            "token order under fencing: {:?}",
            report.violations
        );

        let mut unfenced = fenced.clone();
        let mut p = unfenced.protocol;
        p.kind = ProtocolKind::TtlLeaseDel;
        unfenced.set_protocol(p);
        let broken = check::check(&sim::run(&unfenced, seed, false).history);
        unfenced_stale
            .set(unfenced_stale.get() + (broken.count(ViolationKind::StaleWrite) > 0) as u32);
        ran.set(ran.get() + 1);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(ran.get() >= cases, "ran {} cases", ran.get());
    let share = unfenced_stale.get() as f64 / ran.get() as f64;
    assert!(
        share >= 0.12,
        "ttl-lease-del broke in only {:.1}% of schedules",
        share * 100.0
    );
    eprintln!(
        "ttl-lease-del stale_write share: {:.1}% of {} schedules",
        share * 100.0,
        ran.get()
    );
}
