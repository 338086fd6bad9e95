//! The campaign benchmark: seeds per second per core of a campaign
//! (`fencesim campaign`: drawn seeds, each failure's signature, distinct
//! failures kept with their fastest seed) against a plain sweep of the
//! same scenarios and the same seeds (each seed simulated, checked and
//! folded into the sweep's aggregate, as `fencesim run` does), both on one
//! thread, measured in the same run. The ratio is what the campaign's
//! bookkeeping costs (target: under 5%). Over the chaos suite
//! (`scenarios/chaos`, many unsafe twins: failures on many seeds) and the
//! random suite (`scenarios/random`).
//!
//! `cargo bench --bench campaign`

#[path = "common/timing.rs"]
mod timing;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use fencesim::scenario::{self, Scenario};
use fencesim::suite::campaign::{self, Budget, Control, Progress, Slice};
use fencesim::suite::{self, Aggregate};
use rayon::prelude::*;

const CAMPAIGN_SEED: u64 = 0x5eed;

/// Every sample's time per iteration, by measurement name.
static SAMPLES: Mutex<Vec<(String, Vec<Duration>)>> = Mutex::new(Vec::new());

fn record(name: &str, per_iter: Duration) {
    let mut all = SAMPLES.lock().unwrap();
    match all.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) => v.push(per_iter),
        None => all.push((name.to_string(), vec![per_iter])),
    }
}

/// The median sample of a measurement: on a shared machine a best-of
/// picks one lucky sample, the median moves far less.
fn median(name: &str) -> Option<Duration> {
    let all = SAMPLES.lock().unwrap();
    let (_, v) = all.iter().find(|(n, _)| n == name)?;
    let mut v = v.clone();
    v.sort();
    v.get(v.len() / 2).copied()
}

fn load(dir: &str) -> Vec<Scenario> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let files = scenario::collect(&[root]).expect("bundled scenarios");
    files
        .iter()
        .map(|f| scenario::load(f).expect("bundled scenario loads"))
        .collect()
}

/// The campaign: `draws` draws over `scenarios` on one thread.
fn run_campaign(scenarios: &[Scenario], draws: u64) -> u64 {
    let slice = Slice {
        campaign_seed: CAMPAIGN_SEED,
        budget: Budget::Seeds(draws),
        shard: None,
    };
    let never = AtomicBool::new(false);
    let mut progress = Progress::default();
    campaign::run(
        scenarios,
        &slice,
        &mut progress,
        Control {
            jobs: 1,
            interrupted: &never,
            after_batch: &mut |_| {},
        },
    );
    progress.found.runs
}

/// The plain sweep of the same seeds: per scenario, every drawn seed run
/// and folded into an aggregate, on a pool of one thread as `run --jobs 1`.
fn run_sweep(pool: &rayon::ThreadPool, scenarios: &[Scenario], seeds: &[u64]) -> u64 {
    pool.install(|| {
        scenarios
            .iter()
            .map(|s| {
                seeds
                    .par_iter()
                    .fold(Aggregate::default, |acc, &seed| {
                        acc.add(&suite::run_seed(s, seed))
                    })
                    .reduce(Aggregate::default, Aggregate::merge)
                    .seeds
            })
            .sum()
    })
}

fn timed(name: &str, iters: u64, f: impl FnMut() -> u64) -> Duration {
    let elapsed = timing::time_iters(iters, f);
    record(name, elapsed / iters.max(1) as u32);
    elapsed
}

fn main() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let suites = [
        ("chaos", load("scenarios/chaos"), 40),
        ("random", load("scenarios/random"), 200),
    ];
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    for (name, scenarios, draws) in &suites {
        let seeds: Vec<u64> = (0..*draws)
            .map(|d| campaign::seed_of(CAMPAIGN_SEED, d))
            .collect();
        let runs = draws * scenarios.len() as u64;
        assert_eq!(run_campaign(scenarios, *draws), runs);
        assert_eq!(run_sweep(&pool, scenarios, &seeds), runs);
        let mut g = c.benchmark_group(format!("campaign-{name}"));
        g.throughput(Throughput::Elements(runs));
        g.bench_function("sweep", |b| {
            b.iter_custom(|iters| {
                timed(&format!("{name}/sweep"), iters, || {
                    run_sweep(&pool, scenarios, &seeds)
                })
            })
        });
        g.bench_function("campaign", |b| {
            b.iter_custom(|iters| {
                timed(&format!("{name}/campaign"), iters, || {
                    run_campaign(scenarios, *draws)
                })
            })
        });
        g.finish();
    }
    c.final_summary();
    for (name, scenarios, draws) in &suites {
        let runs = (draws * scenarios.len() as u64) as f64;
        if let (Some(sweep), Some(camp)) = (
            median(&format!("{name}/sweep")),
            median(&format!("{name}/campaign")),
        ) {
            println!(
                "\n{name}: {} scenarios x {draws} seeds on one core (median samples) — sweep {:.0} seeds/s, campaign {:.0} seeds/s; the campaign's bookkeeping costs {:+.1}% (target < 5%)",
                scenarios.len(),
                runs / sweep.as_secs_f64(),
                runs / camp.as_secs_f64(),
                (camp.as_secs_f64() / sweep.as_secs_f64() - 1.0) * 100.0
            );
        }
    }
}
