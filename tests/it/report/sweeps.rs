//! `--report` describes the sweep that ran, not a different one: under
//! `--shard I/N` it covers that shard's seeds (it used to panic, "report and
//! suite must cover the same seeds"), and under `--swarm` its timeline is the
//! seed *with its swarm mix*, the run that failed (it used to re-run the seed
//! as written and draw another execution).

use crate::common;
use std::path::Path;

const RANDOM: &str = "scenarios/random/random-faults-redis-set-nx.toml";

fn fencesim(args: &[&str]) -> (i32, String) {
    common::run_text(common::fencesim_command().args(args))
}

fn results(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json written");
    serde_json::from_str(&text).expect("results.json parses")
}

fn trace_hash_line(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("trace hash "))
        .unwrap_or_else(|| panic!("no trace hash in:\n{text}"))
        .trim()
        .to_string()
}

#[test]
fn a_shard_report_covers_the_shards_seeds_and_its_timeline_is_one_of_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("r");
    let report_arg = report.to_string_lossy().into_owned();
    let (code, text) = fencesim(&["run", RANDOM, "--shard", "2/3", "--report", &report_arg]);
    assert!(code == 0 || code == 1, "exit {code}:\n{text}");
    assert!(!text.contains("panicked"), "{text}");
    let doc = results(&report);
    let s = &doc["scenarios"][0];
    let seeds = s["seeds"].as_u64().expect("seeds");
    let all = s["seed_start"].as_u64().expect("seed_start");
    assert_eq!(all, 0);
    // A third of the scenario's 300 seeds, by the shard rule.
    assert_eq!(seeds, 100, "{s}");
    let seed = s["timeline"]["seed"].as_u64().expect("a timeline seed");
    assert_eq!(
        seed % 3,
        2,
        "the timeline's seed {seed} is not in shard 2/3 (0-based)"
    );
}

#[test]
fn a_swarm_report_draws_the_swarmed_run_that_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("r");
    let report_arg = report.to_string_lossy().into_owned();
    let (code, text) = fencesim(&["run", RANDOM, "--swarm", "--report", &report_arg]);
    assert!(code == 0 || code == 1, "exit {code}:\n{text}");
    let doc = results(&report);
    let timeline = &doc["scenarios"][0]["timeline"];
    let seed = timeline["seed"]
        .as_u64()
        .expect("a timeline seed")
        .to_string();
    let drawn = timeline["trace_hash"].as_str().expect("trace_hash");
    let command = timeline["replay_command"].as_str().expect("replay_command");
    assert!(command.ends_with("--swarm"), "{command}");

    let (_, swarmed) = fencesim(&["replay", RANDOM, "--seed", &seed, "--swarm"]);
    let (_, as_written) = fencesim(&["replay", RANDOM, "--seed", &seed]);
    assert_eq!(
        drawn,
        trace_hash_line(&swarmed),
        "the timeline is the swarmed run"
    );
    // Not vacuous: the mix changes this seed's run.
    assert_ne!(drawn, trace_hash_line(&as_written));
    // And the header says so: it shows the swarmed options, not the file's.
    let options = |t: &str| -> String {
        t.lines()
            .filter(|l| !l.starts_with("swarm mix"))
            .take_while(|l| !l.starts_with("== "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_ne!(options(&swarmed), options(&as_written), "{swarmed}");
}
