//! The sweep benchmark: the GC-pause scenario (`gc-pause-stale-write`)
//! over 200 seeds on one thread with the checker on — what `fencesim run`
//! does per core — against a baseline measured in the same run: a
//! `BinaryHeap<Reverse<(u64, u64)>>` popping and pushing the same number of
//! events with handlers that do nothing, i.e. the cost of the priority queue
//! alone. Prints seeds/s, events/s and the ratio (how many times slower
//! than a bare queue the whole simulator + checker is).
//!
//! `cargo bench --bench sweep`

use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use fencesim::scenario::{self, Scenario};
use fencesim::suite;

mod common;
#[path = "common/timing.rs"]
mod timing;
use common::baseline::baseline;

const SEEDS: u64 = 200;

/// Best (lowest) time per iteration seen by each measurement.
static BEST: Mutex<[Option<Duration>; 2]> = Mutex::new([None, None]);

fn record(which: usize, per_iter: Duration) {
    let mut best = BEST.lock().unwrap();
    best[which] = Some(best[which].map_or(per_iter, |b| b.min(per_iter)));
}

fn gc_pause() -> Scenario {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/article/gc-pause-stale-write.toml"
    );
    scenario::load(std::path::Path::new(path)).expect("bundled scenario loads")
}

/// One sweep: every seed simulated and checked; returns events processed.
fn sweep(s: &Scenario) -> u64 {
    (0..SEEDS).map(|seed| suite::run_seed(s, seed).events).sum()
}

fn timed(which: usize, iters: u64, f: impl FnMut() -> u64) -> Duration {
    let elapsed = timing::time_iters(iters, f);
    record(which, elapsed / iters.max(1) as u32);
    elapsed
}

fn main() {
    let s = gc_pause();
    let events = sweep(&s);
    assert!(events > 0);
    let mut c = Criterion::default()
        .configure_from_args()
        .measurement_time(Duration::from_secs(5));
    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements(events));
    g.bench_function("gc-pause-200-seeds-checked", |b| {
        b.iter_custom(|iters| timed(0, iters, || sweep(&s)))
    });
    g.bench_function("binaryheap-baseline-same-events", |b| {
        b.iter_custom(|iters| timed(1, iters, || baseline(events)))
    });
    g.finish();
    c.final_summary();
    let best = *BEST.lock().unwrap();
    if let [Some(sim), Some(base)] = best {
        let rate = |d: Duration| events as f64 / d.as_secs_f64();
        println!(
            "\nsweep: {SEEDS} seeds, {events} events in {:.3} ms (best) — {:.0} seeds/s, {:.2} M events/s",
            sim.as_secs_f64() * 1e3,
            SEEDS as f64 / sim.as_secs_f64(),
            rate(sim) / 1e6
        );
        println!(
            "baseline BinaryHeap<Reverse<(u64, u64)>> push+pop: {:.2} M events/s",
            rate(base) / 1e6
        );
        println!(
            "ratio: the simulator with checker is {:.2}x the baseline's time per event (target <= 4x)",
            sim.as_secs_f64() / base.as_secs_f64()
        );
    }
}
