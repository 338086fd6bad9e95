//! The sweep benchmark's work without criterion, for an instruction
//! profiler: `SWEEPS` sweeps (default 1) of the GC-pause scenario over 200
//! seeds on one thread, checker on — exactly what `benches/sweep.rs` times.
//! Instructions per event are the difference between two sweep counts
//! divided by one sweep's events, so loading and warm-up cancel out:
//!
//!     cargo build --release --example sweep_profile
//!     for n in 1 3; do SWEEPS=$n valgrind --tool=callgrind \
//!         --callgrind-out-file=cg.$n target/release/examples/sweep_profile; done
//!     # (Ir of cg.3 - Ir of cg.1) / (2 * events)
//!
//! `BASELINE=1` runs the bench's baseline instead — a `BinaryHeap` of 8
//! pending events popped and pushed once per event with nothing handled —
//! over the same number of events, so the floor is counted the same way.
//!
//! (docs/reproducing.md, "Where an event's instructions go").

use std::hint::black_box;
use std::path::Path;

#[path = "../benches/common/baseline.rs"]
mod baseline;
use baseline::baseline;

use fencesim::scenario;
use fencesim::suite;

const SEEDS: u64 = 200;

fn main() {
    let sweeps: u64 = std::env::var("SWEEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/article/gc-pause-stale-write.toml");
    let s = scenario::load(&path).expect("bundled scenario loads");
    let mut events = (0..SEEDS)
        .map(|seed| suite::run_seed(&s, seed).events)
        .sum::<u64>();
    if std::env::var_os("BASELINE").is_some() {
        for _ in 0..sweeps {
            black_box(baseline(events));
        }
        println!("{sweeps} baseline loops of {events} events");
        return;
    }
    for _ in 1..sweeps {
        events = (0..SEEDS)
            .map(|seed| suite::run_seed(&s, seed).events)
            .sum::<u64>();
    }
    println!("{sweeps} sweeps of {SEEDS} seeds, {events} events per sweep");
}
