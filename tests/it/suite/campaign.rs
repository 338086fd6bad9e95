//! Campaigns as a library: a rare failure is found and kept once with its
//! fastest seed (checked against every draw run by hand), slices and
//! batches and resumptions find exactly what one uninterrupted run finds.

use std::sync::atomic::{AtomicBool, Ordering};

use fencesim::scenario::Scenario;
use fencesim::suite::campaign::{self, Budget, Control, Findings, Progress, Slice, Stop};
use fencesim::suite::{seed, signature, RunSeed, Shard};

const CAMPAIGN_SEED: u64 = 7;
const DRAWS: u64 = 3_000;

/// `random-faults-fenced-cas` without its `allow = ["lost_update"]`: write-
/// only fencing lets a lost update through in about one run in 600, so
/// the campaign has a rare, unexpected failure to find.
pub fn rare_scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let source = std::fs::read_to_string(crate::common::scenario_path(
        "random/random-faults-fenced-cas.toml",
    ))
    .unwrap();
    let allow = "allow = [\"lost_update\"]\n";
    assert!(source.contains(allow));
    let path = dir.join("rare.toml");
    std::fs::write(&path, source.replace(allow, "")).unwrap();
    path
}

fn slice(shard: Option<Shard>) -> Slice {
    Slice {
        campaign_seed: CAMPAIGN_SEED,
        budget: Budget::Seeds(DRAWS),
        shard,
    }
}

/// Runs `slice` from `progress` with `jobs` threads, stopping after
/// `stop_after` batches if given.
fn run(
    scenarios: &[Scenario],
    slice: &Slice,
    progress: &mut Progress,
    jobs: usize,
    stop_after: Option<u32>,
) -> Stop {
    let interrupted = AtomicBool::new(false);
    let mut batches = 0;
    let mut after_batch = |_: &Progress| {
        batches += 1;
        if stop_after == Some(batches) {
            interrupted.store(true, Ordering::Relaxed);
        }
    };
    campaign::run(
        scenarios,
        slice,
        progress,
        Control {
            jobs,
            interrupted: &interrupted,
            after_batch: &mut after_batch,
        },
    )
}

fn whole(scenarios: &[Scenario]) -> Progress {
    let mut p = Progress::default();
    assert_eq!(run(scenarios, &slice(None), &mut p, 2, None), Stop::Budget);
    p
}

#[test]
fn a_campaign_finds_a_rare_failure_once_with_the_seed_that_fails_fastest() {
    let dir = tempfile::tempdir().unwrap();
    let s = fencesim::scenario::load(&rare_scenario(dir.path())).unwrap();
    let p = whole(std::slice::from_ref(&s));
    assert_eq!((p.done, p.found.runs), (DRAWS, DRAWS));
    let unexpected: Vec<_> = p.found.failures.values().filter(|f| !f.expected).collect();
    assert_eq!(unexpected.len(), 1, "{:#?}", p.found.failures);
    let kept = unexpected[0];
    assert_eq!(kept.kinds, ["lost_update"]);
    assert!(
        p.found.failing_runs * 100 < p.found.runs,
        "rare: {} of {} runs",
        p.found.failing_runs,
        p.found.runs
    );
    // Every draw by hand: the kept seed is the fastest of its signature, and
    // its hits are every run that failed that way.
    let how = RunSeed {
        terse: true,
        ..RunSeed::default()
    };
    let mut same = Vec::new();
    for draw in 0..DRAWS {
        let seed_d = campaign::seed_of(CAMPAIGN_SEED, draw);
        let run = seed::run(&s.options, seed_d, how);
        let failed = s.expect.failed_metrics(&run.report);
        if run.report.is_clean() && failed.is_empty() {
            continue;
        }
        let sig = signature::of(&run.report, &run.outcome.history, &failed);
        if sig.text == kept.shape {
            same.push((run.outcome.events, draw, seed_d));
        }
    }
    same.sort();
    assert_eq!(kept.hits, same.len() as u64);
    assert_eq!((kept.events, kept.draw, kept.seed), same[0]);
}

#[test]
fn slices_batches_and_a_resumed_run_find_what_one_whole_run_finds() {
    let dir = tempfile::tempdir().unwrap();
    let rare = fencesim::scenario::load(&rare_scenario(dir.path())).unwrap();
    let other = crate::common::load(&crate::common::scenario_path(
        "random/random-faults-ttl-lease-del.toml",
    ));
    let scenarios = [rare, other];
    let base = whole(&scenarios);
    assert!(base.found.failures.len() > 3, "{:#?}", base.found.failures);
    // One thread: other batches, same findings.
    let mut one = Progress::default();
    run(&scenarios, &slice(None), &mut one, 1, None);
    assert_eq!(one.found, base.found);
    // Three slices, merged in any order.
    let parts: Vec<Findings> = (0..3)
        .map(|index| {
            let mut p = Progress::default();
            run(
                &scenarios,
                &slice(Some(Shard { index, count: 3 })),
                &mut p,
                2,
                None,
            );
            p.found
        })
        .collect();
    let merged = parts
        .iter()
        .cloned()
        .fold(Findings::default(), Findings::merge);
    let reversed = parts
        .into_iter()
        .rev()
        .fold(Findings::default(), Findings::merge);
    assert_eq!(merged, base.found);
    assert_eq!(reversed, base.found);
    // Stopped after two batches, then resumed from where it stood.
    let mut p = Progress::default();
    assert_eq!(
        run(&scenarios, &slice(None), &mut p, 2, Some(2)),
        Stop::Interrupted
    );
    assert!(0 < p.done && p.done < DRAWS, "stopped midway: {}", p.done);
    run(&scenarios, &slice(None), &mut p, 2, None);
    assert_eq!((p.done, &p.found), (DRAWS, &base.found));
}
