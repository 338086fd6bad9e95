//! The checker on 2 M-event histories of two shapes (issue #18): a clean
//! one, where every write follows a read of the value before it, and a
//! lost-update-dense one, where every write overwrites a value its read
//! never saw (every op read the initial value). The checker must stay
//! O(n log n) on both: the dense shape once rescanned the document's write
//! log per violation and took ~10x the clean time. Target: dense within 2x
//! of clean.
//!
//! `cargo bench --bench checker -- --measurement-time 3 --warm-up-time 1`

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use fencesim::check;
use fencesim::history::{Event, History, Kind};

/// Records per op: grant issued, received, read, write sent, accepted.
const PER_OP: u64 = 5;
const EVENTS: u64 = 2_000_000;

fn history(dense: bool) -> History {
    let mut h = History {
        nodes: ["coord/0", "resource/0", "worker/A", "worker/B"]
            .map(String::from)
            .to_vec(),
        keys: vec!["doc".into()],
        events: Vec::with_capacity(EVENTS as usize),
    };
    let mut seq = 0;
    let mut push = |h: &mut History, node: u16, kind: Kind, f: &dyn Fn(&mut Event)| {
        seq += 1;
        let mut e = Event::new(seq, seq * 1_000, node, kind);
        e.key = Some(0);
        f(&mut e);
        h.events.push(e);
    };
    for i in 0..EVENTS / PER_OP {
        let (grant, op, worker) = (i + 1, 1_000 + i, 2 + (i % 2) as u16);
        let seen = if dense || i == 0 { 0 } else { op - 1 };
        push(&mut h, 0, Kind::GrantIssued, &|e| {
            e.grant_id = Some(grant);
            e.token = Some(grant);
        });
        push(&mut h, worker, Kind::GrantReceived, &|e| {
            e.grant_id = Some(grant)
        });
        push(&mut h, worker, Kind::ReadOk, &|e| {
            e.op_id = Some(op);
            e.value = Some(seen);
        });
        for (node, kind) in [(worker, Kind::WriteSent), (1, Kind::WriteAccepted)] {
            push(&mut h, node, kind, &|e| {
                e.op_id = Some(op);
                e.token = Some(grant);
                e.value = Some(op);
            });
        }
    }
    h
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("check_2M_events");
    g.sample_size(10);
    g.throughput(Throughput::Elements(EVENTS));
    for (name, dense) in [("clean", false), ("lost_update_dense", true)] {
        let h = history(dense);
        let r = check::check(&h);
        let lost = r.count(check::ViolationKind::LostUpdate);
        assert_eq!(
            lost > 0,
            dense,
            "{name}: the shape is what it says ({lost} lost updates)"
        );
        g.bench_function(name, |b| b.iter(|| black_box(check::check(black_box(&h)))));
    }
    g.finish();
}

criterion::criterion_group!(benches, bench);
criterion::criterion_main!(benches);
