//! `fencesim campaign` as a user meets it: the campaign seed first, a rare
//! failure found and replayed by its printed line, slices merged by
//! `fencesim merge` into the unsharded result without duplicates, a run
//! killed (SIGKILL) or stopped by Ctrl-C resumed from its checkpoint into
//! the uninterrupted result, bad input refused.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::suite::campaign::rare_scenario;

fn campaign(dir: &Path, args: &[&str]) -> Output {
    crate::common::fencesim_command()
        .current_dir(dir)
        .arg("campaign")
        .args(args)
        .output()
        .unwrap()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The rare failure's campaign: seed 7 finds it within 3 000 draws.
const RARE: [&str; 5] = [
    "rare.toml",
    "--campaign-seed",
    "7",
    "--budget-seeds",
    "3000",
];

fn json(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[test]
fn a_campaign_prints_its_seed_first_finds_the_rare_failure_and_its_replay_line_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    rare_scenario(dir.path());
    let out = campaign(dir.path(), &RARE);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("campaign seed 0x0000000000000007 — 1 scenarios, budget 3000 seeds"),
        "{stderr}"
    );
    assert!(stderr.contains("seeds/s"), "progress on stderr: {stderr}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("campaign seed 0x0000000000000007"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 distinct failures (1 unexpected)"),
        "{stdout}"
    );
    // Without a seed, a fresh one is drawn and printed.
    let fresh = campaign(dir.path(), &["rare.toml", "--budget-seeds", "2"]);
    let line = text(&fresh.stderr);
    assert!(
        line.starts_with("campaign seed 0x")
            && !line.starts_with("campaign seed 0x0000000000000007")
    );
    let json_out = campaign(dir.path(), &[&RARE[..], &["--format", "json"]].concat());
    let c: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    let failures = c["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1);
    let f = &failures[0];
    assert_eq!(f["kinds"], serde_json::json!(["lost_update"]));
    assert_eq!(f["expected"], false);
    let replay = f["replay"].as_str().unwrap();
    assert!(stdout.contains(replay), "the text shows the replay line");
    let words: Vec<&str> = replay.split(' ').collect();
    assert_eq!(words[0], "fencesim");
    let again = crate::common::fencesim_command()
        .current_dir(dir.path())
        .args(&words[1..])
        .output()
        .unwrap();
    let shown = text(&again.stdout);
    assert!(shown.contains("VIOLATION lost_update"), "{shown}");
    assert!(
        shown.contains(&format!("after {} events", f["events"])),
        "the same run, as short as the campaign said: {shown}"
    );
}

#[test]
fn slices_merge_into_the_unsharded_campaign_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    rare_scenario(dir.path());
    std::os::unix::fs::symlink(
        crate::common::root().join("scenarios"),
        dir.path().join("scenarios"),
    )
    .unwrap();
    let scenarios = [
        "rare.toml",
        "scenarios/random/random-faults-ttl-lease-del.toml",
    ];
    let base = ["--campaign-seed", "7", "--budget-seeds", "3000"];
    let whole = campaign(
        dir.path(),
        &[&scenarios[..], &base[..], &["--format", "json"]].concat(),
    );
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole.stderr));
    let mut files = Vec::new();
    for i in [2, 0, 1] {
        let file = format!("slice-{i}.json");
        let shard = format!("{i}/3");
        let out = campaign(
            dir.path(),
            &[
                &scenarios[..],
                &base[..],
                &["--shard", &shard, "--out", &file],
            ]
            .concat(),
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            text(&out.stderr)
        );
        files.push(file);
    }
    let merge = |files: &[String], extra: &[&str]| {
        crate::common::fencesim_command()
            .current_dir(dir.path())
            .arg("merge")
            .args(files)
            .args(extra)
            .output()
            .unwrap()
    };
    let merged = merge(&files, &["--format", "json", "--junit", "junit.xml"]);
    assert_eq!(merged.status.code(), whole.status.code());
    assert_eq!(
        text(&merged.stdout),
        text(&whole.stdout),
        "the merged campaign"
    );
    let c: Value = serde_json::from_slice(&merged.stdout).unwrap();
    let failures = c["failures"].as_array().unwrap();
    let mut keys: Vec<(String, String)> = failures
        .iter()
        .map(|f| (f["scenario"].to_string(), f["signature"].to_string()))
        .collect();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "each failure once");
    // The slices found some failures more than once between them.
    let slice_failures: usize = files
        .iter()
        .map(|f| {
            json(&dir.path().join(f))["failures"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    assert!(
        slice_failures > n,
        "{slice_failures} sightings, {n} distinct"
    );
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("failures=\"1\""), "{junit}");
    // Two slices are not the campaign.
    let partial = merge(&files[..2], &[]);
    assert_eq!(partial.status.code(), Some(2));
    assert!(
        text(&partial.stderr).contains("missing shards: 1/3"),
        "{}",
        text(&partial.stderr)
    );
}

/// Starts a long campaign writing its checkpoint to `out`, waits until
/// the checkpoint holds some draws, and sends `signal`; returns its exit.
fn interrupt(dir: &Path, args: &[&str], out: &Path, signal: i32) -> Output {
    let child = crate::common::fencesim_command()
        .current_dir(dir)
        .arg("campaign")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The file exists, empty, from the start (the flag's check), then holds checkpoints.
    let draws = || {
        let text = std::fs::read_to_string(out).ok()?;
        serde_json::from_str::<Value>(&text).ok()?["seeds"].as_u64()
    };
    while draws().unwrap_or(0) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no checkpoint written"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_killed_or_interrupted_campaign_resumes_from_its_checkpoint_into_the_whole_result() {
    let _heavy = crate::common::heavy();
    let dir = tempfile::tempdir().unwrap();
    rare_scenario(dir.path());
    // Checkpoints every 100 ms: the first comes well before the end at the
    // fastest rate seen (50 000 seeds/s at two jobs: over a second for
    // 60 000 seeds; with the default 2 s, 100 000 seeds once ended before
    // the signal came), and 60 000 draws still find the rare failures.
    let args = |out: &str| -> Vec<String> {
        [
            "rare.toml",
            "--campaign-seed",
            "5",
            "--budget-seeds",
            "60000",
            "--checkpoint-every-ms",
            "100",
            "--jobs",
            "2",
            "--out",
            out,
        ]
        .map(String::from)
        .to_vec()
    };
    let whole = campaign(dir.path(), &strs(&args("whole.json")));
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole.stderr));
    for (signal, code) in [(libc::SIGKILL, None), (libc::SIGINT, Some(130))] {
        let file = dir.path().join("resumed.json");
        let _ = std::fs::remove_file(&file);
        let stopped = interrupt(dir.path(), &strs(&args("resumed.json")), &file, signal);
        assert_eq!(stopped.status.code(), code, "{}", text(&stopped.stderr));
        let checkpoint = json(&file);
        assert_eq!(checkpoint["complete"], false);
        let done = checkpoint["seeds"].as_u64().unwrap();
        assert!(0 < done && done < 60_000, "{done}");
        if code.is_some() {
            assert!(
                text(&stopped.stdout).contains("STOPPED after"),
                "{}",
                text(&stopped.stdout)
            );
        }
        // The same command again continues past the draws already run.
        let resumed = campaign(dir.path(), &strs(&args("resumed.json")));
        assert_eq!(resumed.status.code(), Some(1));
        let said = text(&resumed.stderr);
        assert!(
            said.contains(&format!("resuming from resumed.json: {done} draws done")),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            std::fs::read_to_string(dir.path().join("whole.json")).unwrap(),
            "resumed after signal {signal}: the uninterrupted result"
        );
    }
    // A checkpoint of another campaign is not resumed, nor overwritten.
    let other = campaign(
        dir.path(),
        &[
            "rare.toml",
            "--campaign-seed",
            "6",
            "--budget-seeds",
            "100000",
            "--out",
            "whole.json",
        ],
    );
    assert_eq!(other.status.code(), Some(2));
    assert!(
        text(&other.stderr)
            .contains("holds another campaign: its campaign seed, budget or shard differs"),
        "{}",
        text(&other.stderr)
    );
}

#[test]
fn shrink_and_report_show_each_failure_small_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    rare_scenario(dir.path());
    let out = campaign(
        dir.path(),
        &[
            &RARE[..],
            &["--shrink", "--report", "report", "--out", "c.json"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let c = json(&dir.path().join("c.json"));
    let shrunk = &c["failures"][0]["shrunk"];
    assert_eq!(shrunk["error"], Value::Null, "{shrunk}");
    assert_eq!(shrunk["kind"], "lost_update");
    assert!(shrunk["faults"][1].as_u64() <= shrunk["faults"][0].as_u64());
    let file = dir.path().join("report/shrunk/00.toml");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        shrunk["text"].as_str().unwrap()
    );
    // The shrunk file fails the same way on its own.
    let run = Command::new(crate::common::bin())
        .current_dir(dir.path())
        .args(["run", "report/shrunk/00.toml", "--seeds", "1"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stdout));
    assert!(text(&run.stdout).contains("lost_update"));
    let index = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    assert!(index.contains("failures/00/index.html"), "{index}");
    assert!(dir.path().join("report/failures/00/index.html").exists());
    // Bad input names the flag.
    let none = campaign(dir.path(), &["rare.toml", "--budget-seeds", "0"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        text(&none.stderr).contains("--budget-seeds"),
        "{}",
        text(&none.stderr)
    );
}
