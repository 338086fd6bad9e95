//! Seeds per second of the article's GC-pause scenario (fenced), under
//! madsim and under fencesim's simulator, side by side in one run. Both
//! sides pay per-seed setup (a fresh madsim runtime and nodes / a fresh
//! simulator), the run, and checking the history. Prints the ratio.
//!
//! Two figures: criterion's means, measured one side after the other, and
//! rounds that alternate the two sides (a slice of madsim seeds, then a
//! slice of fencesim seeds of about the same duration), each round giving
//! one ratio. On a shared virtual machine the speed of the host drifts by
//! 10-20 % within a minute, and sequential means carry that drift into the
//! ratio; alternating rounds see the same drift on both sides, so the
//! median of their ratios is the steadier figure. Both are printed.
//!
//! ./run-bench.sh   (RUSTFLAGS="--cfg madsim", this crate's target dir)

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use fencesim::{check, scenario, suite};

const GROUP: &str = "gc_pause_fenced_seed";

/// Alternating rounds, and seeds per side per round (about 25 ms each).
const ROUNDS: usize = 21;
const MADSIM_SEEDS_PER_ROUND: u64 = 200;
const FENCESIM_SEEDS_PER_ROUND: u64 = 2_000;

fn load() -> scenario::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/article/gc-pause-fenced-cas.toml");
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// One madsim seed, set up, run and checked.
fn madsim_seed(s: &scenario::Scenario, seed: u64) -> check::Report {
    let h = madsim_lock::run_seed(&s.options, seed);
    let r = check::check(&h);
    assert_eq!(r.info.fence_rejected_total, 1);
    r
}

/// One fencesim seed, as a sweep's thread runs it: the history's buffer
/// goes back to the thread's scratch once the seed is judged.
fn fencesim_seed(s: &scenario::Scenario, seed: u64) -> check::Report {
    let run = suite::seed::run(&s.options, seed, suite::RunSeed::default());
    suite::seed::recycle(run.outcome.history);
    assert_eq!(run.report.info.fence_rejected_total, 1);
    run.report
}

/// Time per seed of `seeds` consecutive seeds from `*next`.
fn per_seed(
    s: &scenario::Scenario,
    next: &mut u64,
    seeds: u64,
    one: fn(&scenario::Scenario, u64) -> check::Report,
) -> Duration {
    let start = Instant::now();
    for _ in 0..seeds {
        *next += 1;
        std::hint::black_box(one(s, *next));
    }
    start.elapsed() / seeds as u32
}

/// The median, lowest and highest of the alternating rounds' ratios
/// (madsim's time per seed over fencesim's).
fn alternating_rounds(s: &scenario::Scenario) -> (f64, f64, f64) {
    let (mut next_madsim, mut next_fencesim) = (1_000_000u64, 1_000_000u64);
    let mut ratios: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let m = per_seed(s, &mut next_madsim, MADSIM_SEEDS_PER_ROUND, madsim_seed);
            let f = per_seed(
                s,
                &mut next_fencesim,
                FENCESIM_SEEDS_PER_ROUND,
                fencesim_seed,
            );
            m.as_secs_f64() / f.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[ROUNDS / 2], ratios[0], ratios[ROUNDS - 1])
}

fn bench(c: &mut Criterion) {
    let s = load();
    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    g.bench_function("madsim", |b| {
        b.iter(|| {
            seed += 1;
            madsim_seed(&s, seed)
        })
    });
    let mut seed = 0u64;
    g.bench_function("fencesim", |b| {
        b.iter(|| {
            seed += 1;
            fencesim_seed(&s, seed)
        })
    });
    g.finish();
}

fn mean_ns(dir: &Path, name: &str) -> Option<f64> {
    let file = dir.join(GROUP).join(name).join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").to_string());
    let dir = Path::new(&target).join("criterion");
    if let (Some(m), Some(f)) = (mean_ns(&dir, "madsim"), mean_ns(&dir, "fencesim")) {
        println!(
            "\ngc-pause-fenced-cas, per seed incl. setup + check: madsim {:.0} seeds/s, fencesim {:.0} seeds/s, ratio fencesim/madsim = {:.1}x (target >= 10x)",
            1e9 / m,
            1e9 / f,
            m / f
        );
    }
    let (median, lo, hi) = alternating_rounds(&load());
    println!(
        "alternating rounds ({ROUNDS} x {MADSIM_SEEDS_PER_ROUND} madsim seeds / {FENCESIM_SEEDS_PER_ROUND} fencesim seeds): ratio fencesim/madsim median {median:.1}x (rounds {lo:.1}x-{hi:.1}x; target >= 10x)"
    );
}
