//! The daily loop from the command line: a sweep fails, prints one repro
//! line, the line reproduces the seed; shards merge into the unsharded
//! report; JSON and JUnit are written; results do not depend on `--jobs`.

use crate::common::{fencesim, stdout};
use std::path::{Path, PathBuf};

/// gc-pause-stale-write, but expecting a clean run: every seed fails it.
fn failing_scenario(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/article/gc-pause-stale-write.toml"),
    )
    .unwrap();
    let cut = text.find("[expect]").expect("has an expect section");
    let path = dir.join("expects-clean.toml");
    std::fs::write(
        &path,
        format!("{}[expect]\n", &text[..cut]).replace("seeds = 200", "seeds = 5"),
    )
    .unwrap();
    path
}

#[test]
fn a_failing_sweep_prints_a_repro_line_that_replays_the_same_trace() {
    let dir = tempfile::tempdir().unwrap();
    let file = failing_scenario(dir.path());
    let file = file.to_str().unwrap();
    let run = fencesim(&["run", file, "--seed-start", "0x3"]);
    assert_eq!(run.status.code(), Some(1));
    let text = stdout(&run);
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: "))
        .expect("a repro line");
    assert!(line.starts_with(&format!(
        "fencesim replay {file} --seed 3 --expect-version "
    )));
    assert!(line.contains(" --expect-hash "));
    let json: serde_json::Value = serde_json::from_slice(
        &fencesim(&["run", file, "--seed-start", "3", "--format", "json"]).stdout,
    )
    .unwrap();
    let failing = &json["scenarios"][0]["aggregate"]["failing"][0];
    assert_eq!(failing["seed"], 3);
    assert_eq!(failing["repro"].as_str(), Some(line));
    let args: Vec<&str> = line.split_whitespace().skip(1).collect();
    let replay = fencesim(&args);
    assert!(
        String::from_utf8_lossy(&replay.stderr).is_empty(),
        "no warning for an unchanged file"
    );
    let hash = failing["trace_hash"].as_str().unwrap();
    assert!(
        stdout(&replay).contains(&format!("trace hash {hash}")),
        "same run"
    );
}

#[test]
fn replay_warns_when_version_or_file_hash_differ() {
    let o = fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "7",
        "--no-trace",
        "--expect-version",
        "0.0.1",
        "--expect-hash",
        "0123456789abcdef",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("repro line is from fencesim 0.0.1"), "{err}");
    assert!(err.contains("has changed since the repro line"), "{err}");
}

#[test]
fn merged_shards_equal_the_unsharded_report_including_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let common = ["run", "scenarios", "--swarm", "--format", "json"];
    let whole = fencesim(&common);
    // The full-catalogue swarm finds what the bundled expectations do not
    // anticipate (exit 1); merging must reproduce the verdict either way.
    assert!(matches!(whole.status.code(), Some(0 | 1)));
    let mut shards = Vec::new();
    for i in [2, 0, 1] {
        let shard = format!("{i}/3");
        let o = fencesim(&[&common[..], &["--shard", &shard, "--jobs", "1"]].concat());
        let path = dir.path().join(format!("shard{i}.json"));
        std::fs::write(&path, &o.stdout).unwrap();
        shards.push(path.to_str().unwrap().to_string());
    }
    let mut args = vec!["merge", "--format", "json"];
    args.extend(shards.iter().map(String::as_str));
    let merged = fencesim(&args);
    assert_eq!(merged.status.code(), whole.status.code());
    assert_eq!(stdout(&merged), stdout(&whole));
    let json: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    let files =
        fencesim::scenario::collect(&[
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
        ])
        .unwrap();
    let budget: u64 = files
        .iter()
        .map(|f| fencesim::scenario::load(f).unwrap())
        .map(|s| s.seeds.end - s.seeds.start)
        .sum();
    assert_eq!(json["totals"]["seeds"], budget);
    assert_eq!(json["schema_version"], 1);
    let missing = fencesim(&["merge", &shards[0], &shards[1]]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("missing shards: 1/3"));
}

#[test]
fn the_report_does_not_depend_on_the_job_count() {
    let args = [
        "run",
        "scenarios/random",
        "--seeds",
        "60",
        "--swarm",
        "--format",
        "json",
    ];
    let one = fencesim(&[&args[..], &["--jobs", "1"]].concat());
    let two = fencesim(&[&args[..], &["--jobs", "2"]].concat());
    assert_eq!(stdout(&one), stdout(&two));
}

#[test]
fn junit_has_one_testcase_per_scenario_and_fails_the_unmet_one() {
    let dir = tempfile::tempdir().unwrap();
    let failing = failing_scenario(dir.path());
    let xml = dir.path().join("junit.xml");
    let o = fencesim(&[
        "run",
        failing.to_str().unwrap(),
        "scenarios/article/gc-pause-fenced-cas.toml",
        "--seeds",
        "5",
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let xml = std::fs::read_to_string(xml).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2);
    assert_eq!(xml.matches("<failure ").count(), 1);
    assert!(xml.contains("unexpected stale_write in 5 seeds"));
    assert!(xml.contains("fencesim replay "));
}

#[test]
fn the_bundled_suite_is_deterministic_under_the_self_check() {
    let o = fencesim(&["run", "scenarios", "--check-determinism"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn merge_takes_a_hidden_jobs_flag_for_old_scripts_and_says_it_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = fencesim(&[
            "run",
            "scenarios/article/gc-pause-stale-write.toml",
            "--seeds",
            "6",
            "--format",
            "json",
            "--shard",
            &shard,
        ]);
        let path = dir.path().join(format!("shard{i}.json"));
        std::fs::write(&path, &o.stdout).unwrap();
        shards.push(path.to_str().unwrap().to_string());
    }
    let plain = fencesim(&["merge", &shards[0], &shards[1]]);
    let with_jobs = fencesim(&["merge", "--jobs", "3", &shards[0], &shards[1]]);
    assert_eq!(with_jobs.status.code(), plain.status.code());
    assert_eq!(stdout(&with_jobs), stdout(&plain));
    let note = String::from_utf8_lossy(&with_jobs.stderr);
    assert!(note.contains("merge --jobs 3 is ignored"), "{note}");
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("--jobs"));
    let help = stdout(&fencesim(&["merge", "--help"]));
    assert!(!help.contains("--jobs"), "hidden: {help}");
}

#[test]
fn live_jobs_says_it_runs_trials_side_by_side_and_the_output_does_not_depend_on_it() {
    // `live --jobs` is its own flag (trials at a time, each job on its own
    // servers; docs/live-running.md "Trials side by side"), not the shared one.
    let help = stdout(&fencesim(&["live", "--help"]));
    let at = help.find("--jobs").expect("live --help lists --jobs");
    let text = help[at..].split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("Trials at a time"), "{text}");
    assert!(text.contains("do not depend on it"), "{text}");
}
