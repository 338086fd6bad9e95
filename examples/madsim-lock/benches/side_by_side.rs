//! Seeds per second of the article's GC-pause scenario (fenced), under
//! madsim and under fencesim's simulator, side by side in one run. Both
//! sides pay per-seed setup (a fresh madsim runtime and nodes / a fresh
//! simulator), the run, and checking the history. Prints the ratio.
//!
//! ./run-bench.sh   (RUSTFLAGS="--cfg madsim", this crate's target dir)

use std::path::Path;

use criterion::{Criterion, Throughput};
use fencesim::{check, scenario, suite};

const GROUP: &str = "gc_pause_fenced_seed";

fn bench(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/article/gc-pause-fenced-cas.toml");
    let s = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut g = c.benchmark_group(GROUP);
    g.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    g.bench_function("madsim", |b| {
        b.iter(|| {
            seed += 1;
            let h = madsim_lock::run_seed(&s.options, seed);
            let r = check::check(&h);
            assert_eq!(r.info.fence_rejected_total, 1);
            r
        })
    });
    let mut seed = 0u64;
    g.bench_function("fencesim", |b| {
        b.iter(|| {
            seed += 1;
            // As a sweep's thread does: the history's buffer goes back to
            // the thread's scratch once the seed is judged.
            let run = suite::seed::run(&s.options, seed, suite::RunSeed::default());
            suite::seed::recycle(run.outcome.history);
            assert_eq!(run.report.info.fence_rejected_total, 1);
            run.report
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
}
