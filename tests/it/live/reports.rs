//! `fencesim live --json/--junit/--report`: the files a CI job publishes
//! from a live run, as it publishes a sweep's. The run with real servers
//! holds `live_shared()`; refusing an unwritable output needs none.

use crate::common::{live_servers_present, live_shared};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fencesim() -> Command {
    crate::common::fencesim_command()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where a run's three reports go, in its temporary directory.
struct Reports {
    /// The exit code: a verdict (0 or 1), never an error.
    code: Option<i32>,
    json: PathBuf,
    junit: PathBuf,
    report: PathBuf,
    _dir: tempfile::TempDir,
}

/// Runs `fencesim ARGS --out DIR/out --json --junit --report` from the
/// repository root on the machine's only live run, and asserts it
/// succeeded; None (the skip said why) without the servers.
fn run_writing_reports(test: &str, args: &[&str]) -> Option<Reports> {
    if !live_servers_present(test) {
        return None;
    }
    let _serial = live_shared();
    let dir = tempfile::tempdir().unwrap();
    let (json, junit, report) = (
        dir.path().join("report.json"),
        dir.path().join("junit.xml"),
        dir.path().join("report"),
    );
    let o = fencesim()
        .current_dir(root())
        .args(args)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "fencesim {args:?} failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(Reports {
        code: o.status.code(),
        json,
        junit,
        report,
        _dir: dir,
    })
}

fn json_of(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[test]
fn a_live_run_writes_versioned_json_junit_and_a_report_with_a_real_trials_timeline() {
    let args = [
        "live",
        "live/gc-pause-plain-update.toml",
        "--trials",
        "2",
        "--jobs",
        "1",
    ];
    let test = "a_live_run_writes_versioned_json_junit_and_a_report";
    let Some(r) = run_writing_reports(test, &args) else {
        return;
    };
    let v = json_of(&r.json);
    assert_eq!(v["schema"], "fencesim-live");
    assert_eq!(v["schema_version"], 2);
    assert_eq!(r.code, Some(0));
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["met"], true);
    let s = &v["scenarios"][0];
    assert_eq!(s["name"], "live-gc-pause-plain-update");
    assert_eq!(s["met"], true, "{s:#}");
    assert_eq!(s["trials"].as_array().unwrap().len(), 2);
    for kind in ["stale_write", "lost_update"] {
        assert!(s["live_trials_with"][kind].as_u64().unwrap() >= 1, "{s:#}");
        assert!(
            s["simulated"]["seeds_with"][kind].as_u64().unwrap() >= 1,
            "{s:#}"
        );
    }
    let trial = &s["trials"][0];
    assert!(trial["history_file"]
        .as_str()
        .unwrap()
        .ends_with("-trial-1.jsonl"));
    assert!(trial["not_judged"].is_null());

    let xml = std::fs::read_to_string(&r.junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"fencesim live\" tests=\"1\" failures=\"0\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");

    let html = std::fs::read_to_string(r.report.join("index.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("class=\"timeline"),
        "no timeline"
    );
    assert!(html.contains("<g class=\"evidence "), "no evidence ringed");
    assert!(html.contains("<g class=\"shade "), "no pause hatching");
    assert!(html.contains("<h3>Trials</h3>"), "no trials table");
    for file in ["summary.md", "results.json"] {
        assert!(r.report.join(file).is_file(), "{file} missing");
    }
}

#[test]
fn an_unwritable_output_is_refused_before_any_server_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let not_a_dir = tmp.path().join("a-file");
    std::fs::write(&not_a_dir, "").unwrap();
    for flag in ["--json", "--junit", "--report"] {
        let o = fencesim()
            .current_dir(root())
            .args(["live", "live/gc-pause-plain-update.toml", flag])
            .arg(not_a_dir.join("x"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {stdout}{stderr}");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
        assert!(
            !stdout.contains("redis-server on"),
            "{flag}: a server started: {stdout}"
        );
    }
}

#[test]
fn a_live_search_writes_its_coverage_and_findings_as_json_junit_and_a_report() {
    // The fenced UPDATE refuses every stale write, but this scenario's
    // plain `DEL` release and its read outside the fence are real bugs a
    // single pause can show (unsafe_release, lost_update) when its timing
    // falls right: whether the search finds them is a race, so the reports
    // are held to agree with each other and with the exit code, whichever
    // way it went.
    let args = [
        "search",
        "live/gc-pause-fenced-update.toml",
        "--faults",
        "1",
    ];
    let test = "a_live_search_writes_its_coverage_and_findings_as_json_junit_and_a_report";
    let Some(r) = run_writing_reports(test, &args) else {
        return;
    };
    let v = json_of(&r.json);
    assert_eq!(v["schema"], "fencesim-live-search");
    assert_eq!(v["schema_version"], 2);
    let findings = v["findings"].as_array().unwrap();
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(
        !kinds.contains(&"stale_write"),
        "the fence refuses every late write: {kinds:?}"
    );
    // Exit 1 on any violation found, reproduced in its reruns or not (a
    // pause of about one lease races the expiry: `reproduces` says which).
    let found = !findings.is_empty();
    assert_eq!(v["exit_code"], if found { 1 } else { 0 }, "{v:#}");
    assert_eq!(r.code, Some(if found { 1 } else { 0 }));
    let c = &v["coverage"];
    assert!(c["trials"].as_u64().unwrap() > 0, "{c:#}");
    assert_eq!(
        c["tried"].as_u64(),
        Some(c["placements"].as_u64().unwrap() - c["not_expressible"].as_u64().unwrap())
    );

    let xml = std::fs::read_to_string(&r.junit).unwrap();
    let failures = usize::from(!findings.is_empty());
    assert!(
        xml.contains(&format!(
            "<testsuite name=\"fencesim search (live)\" tests=\"1\" failures=\"{failures}\""
        )),
        "{xml}"
    );
    for kind in &kinds {
        assert!(xml.contains(kind), "{kind} missing from the JUnit:\n{xml}");
    }
    assert!(r.report.join("index.html").is_file() && r.report.join("results.json").is_file());
}

#[test]
fn reports_are_refused_where_the_search_cannot_write_them() {
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "search",
                "live/gc-pause-plain-update.toml",
                "--chaos",
                "1",
                "--json",
                "/nonexistent/dir/x.json",
            ],
            "--json /nonexistent/dir/x.json",
        ),
        (
            &[
                "search",
                "scenarios/article/gc-pause-stale-write.toml",
                "--junit",
                "x.xml",
            ],
            "live scenario",
        ),
    ];
    for (args, why) in cases {
        let o = fencesim().current_dir(root()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
}

#[test]
fn a_users_program_that_fails_leaves_reports_naming_the_trial_that_could_not_be_judged() {
    let test = "a_users_program_that_fails_leaves_reports_naming_the_trial";
    if !live_servers_present(test) {
        return;
    }
    let _serial = live_shared();
    let dir = tempfile::tempdir().unwrap();
    let (json, junit) = (dir.path().join("l.json"), dir.path().join("j.xml"));
    let o = fencesim()
        .current_dir(root())
        .args(["live", "live/gc-pause-plain-update.toml", "--trials", "2"])
        .args(["--worker-cmd", "exit 7", "--out"])
        .arg(dir.path().join("out"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json_of(&json);
    assert_eq!(v["exit_code"], 3);
    let trial = &v["scenarios"][0]["trials"][0];
    assert!(
        trial["not_judged"].as_str().unwrap().contains("exit"),
        "{trial:#}"
    );
    assert!(v["scenarios"][0]["simulated"].is_null());
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<failure message=\"trial 1 could not be judged"),
        "{xml}"
    );
}

#[test]
fn ctrl_c_stops_a_live_run_with_the_finished_trials_in_its_reports() {
    let test = "ctrl_c_stops_a_live_run_with_the_finished_trials_in_its_reports";
    if !live_servers_present(test) {
        return;
    }
    let _serial = live_shared();
    let dir = tempfile::tempdir().unwrap();
    let (json, junit, report) = (
        dir.path().join("l.json"),
        dir.path().join("j.xml"),
        dir.path().join("report"),
    );
    // The first scenario's trials take about a second each: 30 of them
    // outlast the two this test waits for.
    let mut child = fencesim()
        .current_dir(root())
        .args(["live", "live/gc-pause-plain-update.toml"])
        .args(["live/gc-pause-fenced-update.toml", "--trials", "30"])
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg("--report")
        .arg(&report)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (text, status) = crate::common::interrupt_after(
        &mut child,
        |l| l.trim_start().starts_with("trial 2/30"),
        std::time::Duration::ZERO,
    );
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(
        text.contains("interrupted in live-gc-pause-plain-update after "),
        "{text}"
    );
    let v = json_of(&json);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["interrupted"], true, "{v:#}");
    assert_eq!(v["exit_code"], 130);
    // The scenario it stopped in, with the trials that finished; the
    // second never began.
    let scenarios = v["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "{v:#}");
    let s = &scenarios[0];
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["met"], false);
    let trials = s["trials"].as_array().unwrap();
    assert!(
        (2..30).contains(&trials.len()),
        "the finished trials are kept: {s:#}"
    );
    assert!(trials.iter().all(|t| t["not_judged"].is_null()), "{s:#}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<skipped message=\"interrupted after") && !xml.contains("<failure"),
        "{xml}"
    );
    assert!(report.join("index.html").is_file());
}

/// `fencesim live ARGS` from the repository root with `env` set, its
/// reports in `dir`: (exit code, stdout, stderr).
fn live_with_env(env: &[(&str, &str)], args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let o = fencesim()
        .current_dir(root())
        .envs(env.iter().copied())
        .arg("live")
        .args(args)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--json")
        .arg(dir.join("l.json"))
        .arg("--junit")
        .arg(dir.join("j.xml"))
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_cluster_that_cannot_start_is_retried_once_then_not_judged_with_exit_3_while_the_rest_is_judged(
) {
    let test = "a_cluster_that_cannot_start_is_retried_once_then_not_judged";
    if !live_servers_present(test) {
        return;
    }
    let _serial = live_shared();
    // Every etcd member is `false`: it exits at once, so no cluster ever
    // serves. One job (the cluster starts at its trial) and two (a job
    // starts its home cluster before its first trial).
    let broken = [("FENCESIM_ETCD_BIN", "/bin/false")];
    for jobs in ["1", "2"] {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "live/etcd-gc-pause-plain-update.toml",
            "live/gc-pause-plain-update.toml",
            "--trials",
            "2",
            "--jobs",
            jobs,
        ];
        let (code, stdout, stderr) = live_with_env(&broken, &args, dir.path());
        let all = format!("--jobs {jobs}: {stdout}\n{stderr}");
        assert_eq!(code, Some(3), "cannot judge, not bad input: {all}");
        assert_eq!(
            stderr
                .matches("of live-etcd-gc-pause-plain-update could not run, retrying it once: etcd member")
                .count(),
            2,
            "each trial retried once, with why: {all}"
        );
        assert!(stderr.contains("trial 2/2 of live-etcd-gc-pause-plain-update cannot be judged: could not run, twice: etcd member"), "{all}");
        assert!(
            stdout.contains("not judged (2 trial(s)")
                && stdout
                    .contains("  live-etcd-gc-pause-plain-update trial 1: could not run, twice"),
            "{all}"
        );
        // The Redis scenario after it still ran and was judged.
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("  live-gc-pause-plain-update") && l.ends_with("met")),
            "{all}"
        );
        let v = json_of(&dir.path().join("l.json"));
        assert_eq!(v["exit_code"], 3);
        let (etcd, redis) = (&v["scenarios"][0], &v["scenarios"][1]);
        assert!(
            etcd["simulated"].is_null() && etcd["met"] == false,
            "{etcd:#}"
        );
        // Every member exits at once: which one the harness sees gone
        // first is a race (member 1 on a loaded machine), so any names one.
        let names_a_member =
            |why: &str| (0..3).any(|m| why.contains(&format!("etcd member {m} exited")));
        for t in etcd["trials"].as_array().unwrap() {
            let why = t["not_judged"].as_str().unwrap_or_default();
            assert!(names_a_member(why), "{t:#}");
        }
        assert_eq!(redis["met"], true, "{redis:#}");
        assert!(redis["trials"][1]["not_judged"].is_null());
        let xml = std::fs::read_to_string(dir.path().join("j.xml")).unwrap();
        assert!(
            xml.contains(
                "<failure message=\"trial 1 could not be judged: could not run, twice: etcd member"
            ) && names_a_member(&xml),
            "{xml}"
        );
    }
}

#[test]
fn repeat_runs_the_suite_n_times_and_counts_per_scenario_the_runs_that_met() {
    let test = "repeat_runs_the_suite_n_times_and_counts_per_scenario_the_runs_that_met";
    if !live_servers_present(test) {
        return;
    }
    let _serial = live_shared();
    let dir = tempfile::tempdir().unwrap();
    // A cheap scenario that meets and one that cannot be judged (its
    // cluster never starts): the worst run's exit, 3.
    let args = [
        "live/gc-pause-plain-update.toml",
        "live/etcd-gc-pause-plain-update.toml",
        "--trials",
        "1",
        "--repeat",
        "2",
    ];
    let broken = [("FENCESIM_ETCD_BIN", "/bin/false")];
    let (code, stdout, stderr) = live_with_env(&broken, &args, dir.path());
    let all = format!("{stdout}\n{stderr}");
    assert_eq!(code, Some(3), "{all}");
    assert!(
        stdout.contains("=== run 1/2 ===") && stdout.contains("=== run 2/2 ==="),
        "{all}"
    );
    let table = stdout
        .split("steadiness over 2 run(s)")
        .nth(1)
        .unwrap_or("");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}: {all}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("live-gc-pause-plain-update"),
        "live-gc-pause-plain-update 2/2"
    );
    assert_eq!(
        row("live-etcd-gc-pause-plain-update"),
        "live-etcd-gc-pause-plain-update 0/2 not judged in run 1,2"
    );
    assert!(
        table.contains(
            "steadiness: 0 of 2 run(s) met every expectation; 1 of 2 scenario(s) met in every run"
        ),
        "{all}"
    );
    // Each run's histories apart.
    for run in ["run-1", "run-2"] {
        let file = dir
            .path()
            .join("out")
            .join(run)
            .join("live-gc-pause-plain-update-trial-1.jsonl");
        assert!(file.is_file(), "{} missing: {all}", file.display());
    }
    // --repeat 0 is bad input.
    let (code, _, stderr) = live_with_env(
        &[],
        &["live/gc-pause-plain-update.toml", "--repeat", "0"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{stderr}");
}
