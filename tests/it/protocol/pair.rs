//! GitHub's 2012 active/passive pairs (github-2012-pair): a partition that
//! drops heartbeats and the STONITH command leaves two actives, and the old
//! one's writes land; the same pair reserving the storage with its epoch is
//! safe under the same faults, though both nodes still *believe* they are
//! active for a moment.

use crate::common;

use fencesim::check::{self, ViolationKind, VIOLATION_KINDS};
use fencesim::history::Kind;
use fencesim::scenario::Scenario;
use fencesim::{sim, suite};

fn scenario(name: &str) -> Scenario {
    common::load(&common::scenario_path(&format!("real-systems/{name}.toml")))
}

/// The unsafe scenario with storage fencing switched on and nothing else changed.
fn storage_fenced_twin(s: &Scenario) -> Scenario {
    let mut twin = s.clone();
    let mut p = twin.options.protocol;
    p.fence = true;
    twin.options.set_protocol(p);
    twin
}

#[test]
fn a_partition_that_drops_stonith_leaves_two_actives_and_the_old_ones_writes_land() {
    let r = suite::run_scenario(&scenario("github-2012-pair"), 0..100, 2);
    assert!(r.met(), "{:?}", r.problems);
    let failing = |k: ViolationKind| r.agg.failing_seeds[k as usize];
    assert_eq!(failing(ViolationKind::TwoActives), 100);
    assert_eq!(failing(ViolationKind::StaleWrite), 100);
    assert!(failing(ViolationKind::LostUpdate) >= 50);
}

#[test]
fn without_the_partition_the_unfenced_pair_never_has_two_actives() {
    let mut calm = scenario("github-2012-pair");
    calm.options.faults.clear();
    let r = suite::run_scenario(&calm, 0..100, 2);
    assert_eq!(r.agg.failing_seeds, [0; VIOLATION_KINDS]);
    assert_eq!(r.agg.seeds_with_stale_attempts, 0);
}

#[test]
fn the_unsafe_scenario_with_storage_fencing_switched_on_is_the_bundled_safe_twin() {
    let twin = storage_fenced_twin(&scenario("github-2012-pair"));
    let bundled = scenario("github-2012-pair-storage-fenced");
    assert_eq!(twin.options, bundled.options);
}

#[test]
fn the_random_fault_pair_differs_only_in_the_storage_fence() {
    let twin = storage_fenced_twin(&scenario("github-2012-pair-random-faults"));
    let bundled = scenario("github-2012-pair-random-faults-storage-fenced");
    assert_eq!(twin.options, bundled.options);
}

#[test]
fn reserving_the_storage_keeps_ten_thousand_seeds_clean_and_the_fence_is_hit() {
    let r = suite::run_scenario(&scenario("github-2012-pair-storage-fenced"), 0..10_000, 2);
    assert!(r.met(), "{:?}", r.problems);
    assert_eq!(r.agg.failing_seeds, [0; VIOLATION_KINDS]);
    assert!(
        r.agg.seeds_with_stale_attempts >= 9_000,
        "the old active's write reaches the storage after the reservation: {}",
        r.agg.seeds_with_stale_attempts
    );
}

#[test]
fn with_storage_fencing_both_still_believe_they_are_active_but_only_one_writes() {
    let s = scenario("github-2012-pair-storage-fenced");
    let run = sim::run(&s.options, 0, false);
    let report = check::check(&run.history);
    assert!(report.is_clean(), "{:?}", report.violations);
    assert_eq!(
        report.info.overlaps, 1,
        "a belief overlap, reported, not failed"
    );
    assert!(report.info.overlap_ns > 0);
    assert!(report.info.fence_rejected_total >= 1);
    let kinds: Vec<(&str, Kind)> = run
        .history
        .events
        .iter()
        .filter(|e| matches!(e.kind, Kind::BecameActive | Kind::SteppedDown))
        .map(|e| (run.history.node_name(e.node), e.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("worker/A", Kind::BecameActive),
            ("worker/B", Kind::BecameActive),
            ("worker/A", Kind::SteppedDown),
        ]
    );
}

#[test]
fn a_pair_with_three_nodes_is_refused_naming_the_line() {
    let source =
        std::fs::read_to_string(common::scenario_path("real-systems/github-2012-pair.toml"))
            .expect("readable");
    let three = source.replace(
        "[[worker]]\nname = \"B\"\n",
        "[[worker]]\nname = \"B\"\n\n[[worker]]\nname = \"C\"\n",
    );
    assert_ne!(three, source, "the edit applied");
    let err = fencesim::scenario::parse(&three, "pair.toml").expect_err("must be rejected");
    let text = err.to_string();
    assert!(
        text.starts_with("pair.toml:")
            && text.contains("github-2012-pair takes exactly two [[worker]]s"),
        "{text}"
    );
}

#[test]
fn the_storage_grants_each_reservation_epoch_once_and_refuses_writes_below_it() {
    use fencesim::protocol::resource::{FenceCheck, Resource, ResourceConfig};
    use fencesim::protocol::{Clocks, Effect, Input, Key, Msg, Node, NodeId, OpId, Token};

    let mut storage = Resource::new(ResourceConfig {
        check: FenceCheck::Cas {
            strict: false,
            fence_reads: false,
        },
        volatile_fence: false,
        ordered_sessions: false,
    });
    let clocks = Clocks {
        wall_ns: 0,
        mono_ns: 0,
    };
    let mut ask = |from: u16, msg: Msg| -> Msg {
        let mut fx = Vec::new();
        storage.handle(
            clocks,
            Input::Message {
                from: NodeId(from),
                msg,
            },
            &mut fx,
        );
        fx.into_iter()
            .find_map(|e| match e {
                Effect::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .expect("the storage answers")
    };
    let key = Key(0);
    let reserve = |req, epoch| Msg::Reserve { req, key, epoch };
    let write = |op, epoch| Msg::Write {
        req: 9,
        key,
        op: OpId(op),
        token: Some(Token(epoch)),
        value: OpId(op),
    };
    assert!(matches!(
        ask(0, reserve(1, 2)),
        Msg::Reserved {
            ok: true,
            fence: 2,
            ..
        }
    ));
    assert!(
        matches!(
            ask(1, reserve(2, 2)),
            Msg::Reserved {
                ok: false,
                fence: 2,
                ..
            }
        ),
        "a second promotion under the same epoch loses"
    );
    assert!(matches!(ask(1, write(2001, 1)), Msg::WriteRejected { .. }));
    assert!(matches!(ask(0, write(1001, 2)), Msg::WriteOk { .. }));
    assert!(
        matches!(ask(0, write(1002, 2)), Msg::WriteOk { .. }),
        "many writes per epoch"
    );
}

/// The active's write 1001 times out and is given up; op 1002 reads and
/// writes; then a duplicate of 1002's write and 1001's (delayed) arrive,
/// after a storage restart. Returns the stored value and how many of the
/// two late commands the storage answered.
fn late_write_after_the_next_op(ordered_sessions: bool) -> (u64, usize) {
    use fencesim::protocol::active_passive::{PairConfig, PairNode, BOOT, REQUEST, STEP};
    use fencesim::protocol::resource::{FenceCheck, Resource, ResourceConfig};
    use fencesim::protocol::{Clocks, Effect, Input, Key, Msg, Node, NodeId, OpId, TimerId};

    const MS: u64 = 1_000_000;
    let (a_id, b_id, storage_id) = (NodeId(0), NodeId(1), NodeId(2));
    let clocks = Clocks {
        wall_ns: 0,
        mono_ns: 0,
    };
    let resource_cfg = ResourceConfig {
        check: FenceCheck::Cas {
            strict: false,
            fence_reads: false,
        },
        volatile_fence: false,
        ordered_sessions,
    };
    let mut storage = Resource::new(resource_cfg);
    storage.handle(clocks, Input::Start { recovered: None }, &mut Vec::new());
    let mut a = PairNode::new(PairConfig {
        peer: b_id,
        storage: storage_id,
        key: Key(0),
        index: 1,
        starts_active: true,
        start_ns: 0,
        heartbeat_ns: 1_000 * MS,
        failover_after_ns: 10_000 * MS,
        fence_timeout_ns: 5_000 * MS,
        request_timeout_ns: 5_000 * MS,
        work_ns: 300 * MS,
        think_ns: 700 * MS,
        storage_fence: true,
    });
    let to_storage = |fx: Vec<Effect>| -> Vec<Msg> {
        fx.into_iter()
            .filter_map(|e| match e {
                Effect::Send { to, msg } if to == storage_id => Some(msg),
                _ => None,
            })
            .collect()
    };
    let fire = |a: &mut PairNode, timer: TimerId| -> Vec<Msg> {
        let mut fx = Vec::new();
        a.handle(clocks, Input::Timer { timer }, &mut fx);
        to_storage(fx)
    };
    // Delivers `msg` from `from` to the storage: its answers and last record.
    let deliver = |storage: &mut Resource, from: NodeId, msg: Msg| {
        let mut fx = Vec::new();
        storage.handle(clocks, Input::Message { from, msg }, &mut fx);
        let record = fx.iter().rev().find_map(|e| match e {
            Effect::Persist { record, .. } => Some(record.to_vec()),
            _ => None,
        });
        let answers: Vec<Msg> = fx
            .into_iter()
            .filter_map(|e| match e {
                Effect::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .collect();
        (answers, record)
    };
    let mut record = None;
    // Sends the node's one command to the storage and the answer back.
    let mut round_trip = |a: &mut PairNode, storage: &mut Resource, sent: Vec<Msg>| {
        assert_eq!(sent.len(), 1, "one storage command: {sent:?}");
        let (answers, saved) = deliver(storage, a_id, sent[0]);
        record = saved.or(record.take());
        assert_eq!(answers.len(), 1, "answered: {answers:?}");
        let mut fx = Vec::new();
        a.handle(
            clocks,
            Input::Message {
                from: storage_id,
                msg: answers[0],
            },
            &mut fx,
        );
        to_storage(fx)
    };

    a.handle(clocks, Input::Start { recovered: None }, &mut Vec::new());
    let reserve = fire(&mut a, BOOT);
    assert!(round_trip(&mut a, &mut storage, reserve).is_empty());
    let read = fire(&mut a, STEP);
    round_trip(&mut a, &mut storage, read);
    let late = fire(&mut a, STEP);
    assert!(matches!(late[..], [Msg::Write { op: OpId(1001), .. }]));
    assert!(fire(&mut a, REQUEST).is_empty(), "the op is given up");
    let read = fire(&mut a, STEP);
    assert!(matches!(read[..], [Msg::Read { op: OpId(1002), .. }]));
    round_trip(&mut a, &mut storage, read);
    let write = fire(&mut a, STEP);
    assert!(matches!(write[..], [Msg::Write { op: OpId(1002), .. }]));
    round_trip(&mut a, &mut storage, write.clone());

    // The storage restarts (from its last synced record) before the late
    // datagrams arrive.
    let mut storage = Resource::new(resource_cfg);
    storage.handle(
        clocks,
        Input::Start {
            recovered: record.as_deref(),
        },
        &mut Vec::new(),
    );
    let answered = [write[0], late[0]]
        .into_iter()
        .map(|msg| deliver(&mut storage, a_id, msg).0.len())
        .sum();
    let probe = Msg::Read {
        req: 1,
        key: Key(0),
        op: OpId(2001),
        token: None,
    };
    let (answers, _) = deliver(&mut storage, b_id, probe);
    let [Msg::ReadOk { value, .. }] = answers[..] else {
        panic!("the storage serves the probe: {answers:?}");
    };
    (value.0, answered)
}

#[test]
fn a_timed_out_storage_write_of_the_active_never_lands_after_its_next_write() {
    assert_eq!(
        late_write_after_the_next_op(true),
        (1002, 0),
        "the ordered session discards the older write and the duplicate, even across a storage restart"
    );
    // The twin without ordered sessions: the given-up write overwrites its successor.
    assert_eq!(late_write_after_the_next_op(false), (1001, 2));
}
