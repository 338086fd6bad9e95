//! The async implementation under madsim, fenced and unfenced, judged by
//! fencesim's checker from the history its transport recorded.

#![cfg(madsim)]

use std::path::{Path, PathBuf};

use fencesim::check::{self, ViolationKind};
use fencesim::history::{jsonl, Kind};
use fencesim::scenario::{self, Scenario};

fn load(rel: &str) -> Scenario {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path: PathBuf = root.join(rel);
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

const FENCED: &str = "../../scenarios/article/gc-pause-fenced-cas.toml";
const UNFENCED: &str = "../../scenarios/article/gc-pause-stale-write.toml";

#[test]
fn the_fenced_variant_fences_off_the_paused_holder_on_every_seed() {
    let s = load(FENCED);
    for seed in 0..20 {
        let h = madsim_lock::run_seed(&s.options, seed);
        let r = check::check(&h);
        assert!(r.is_clean(), "seed {seed}: {:?}", r.violations);
        assert_eq!(
            r.info.fence_rejected_total, 1,
            "seed {seed}: the stale write reached the store and was refused"
        );
        assert_eq!(r.info.writes_accepted, 1, "seed {seed}");
    }
}

#[test]
fn the_unfenced_variant_lets_the_paused_holder_overwrite_on_every_seed() {
    let s = load(UNFENCED);
    for seed in 0..20 {
        let h = madsim_lock::run_seed(&s.options, seed);
        let r = check::check(&h);
        assert!(
            r.count(ViolationKind::StaleWrite) >= 1,
            "seed {seed}: {:?}",
            r.info
        );
        assert!(r.count(ViolationKind::LostUpdate) >= 1, "seed {seed}");
    }
}

#[test]
fn a_seed_replays_to_the_same_history_and_seeds_differ() {
    let s = load(FENCED);
    let a = madsim_lock::run_seed(&s.options, 7);
    let b = madsim_lock::run_seed(&s.options, 7);
    assert_eq!(a, b);
    let c = madsim_lock::run_seed(&s.options, 8);
    assert_ne!(a.events, c.events, "latencies come from the seed");
}

#[test]
fn crash_restart_pause_and_clogged_links_come_from_the_scenario() {
    let fenced = load("scenarios/crash-and-partition-fenced.toml");
    let unfenced = load("scenarios/crash-and-partition-unfenced.toml");
    for seed in 0..10 {
        let h = madsim_lock::run_seed(&fenced.options, seed);
        for kind in [
            Kind::Pause,
            Kind::Resume,
            Kind::Crash,
            Kind::Restart,
            Kind::Partition,
            Kind::Heal,
        ] {
            assert!(
                h.events.iter().any(|e| e.kind == kind),
                "seed {seed}: no {kind}"
            );
        }
        let r = check::check(&h);
        assert!(r.is_clean(), "seed {seed}: {:?}", r.violations);
        // The restarted coordinator kept counting: tokens never repeat.
        let tokens: Vec<u64> = h
            .events
            .iter()
            .filter(|e| e.kind == Kind::GrantIssued)
            .filter_map(|e| e.token)
            .collect();
        assert!(
            tokens.len() >= 4 && tokens.windows(2).all(|w| w[0] < w[1]),
            "{tokens:?}"
        );

        let r = check::check(&madsim_lock::run_seed(&unfenced.options, seed));
        assert!(
            r.count(ViolationKind::StaleWrite) >= 1,
            "seed {seed}: {:?}",
            r.info
        );
    }
}

#[test]
fn the_history_is_the_foundation_schema_that_check_history_reads() {
    let s = load(UNFENCED);
    let h = madsim_lock::run_seed(&s.options, 3);
    let mut text = Vec::new();
    jsonl::write(&h, &mut text).expect("write");
    let back = jsonl::read(std::str::from_utf8(&text).expect("utf-8"), "madsim.jsonl")
        .unwrap_or_else(|e| panic!("{e}"));
    // Node and key indexes are interned on reading; the records are the same.
    let lines = |h: &fencesim::history::History| -> Vec<String> {
        h.events.iter().map(|e| h.describe(e)).collect()
    };
    assert_eq!(lines(&back), lines(&h));
    let (a, b) = (check::check(&back), check::check(&h));
    assert_eq!((a.counts, a.info), (b.counts, b.info));
    assert!(a.count(ViolationKind::StaleWrite) >= 1);
}

#[test]
fn scenario_features_madsim_cannot_model_are_refused_not_ignored() {
    let s = load("../../scenarios/random/random-faults-fenced-cas.toml");
    let why = madsim_lock::unsupported(&s.options).expect("delay spikes are refused");
    assert!(why.contains("delay"), "{why}");
}
