//! The live search's `--json`, `--junit` and `--report`, as a CI job
//! publishes them: the seeded nemesis (`--chaos`) writes all three when a
//! trial breaks the scenario (exit 1) and when Ctrl-C stops it (exit 130),
//! naming the failing trial, its schedule and the files that rerun it, and
//! drawing that real trial's timeline; the enumeration's report draws a
//! rerun of each finding's written file, and Ctrl-C leaves it the
//! coverage of the trials that finished.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{fencesim_command, live_servers_present, live_shared, run_text};

/// A run's three reports and its scratch directory (kept until dropped).
struct Outputs {
    json: PathBuf,
    junit: PathBuf,
    report: PathBuf,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

fn outputs() -> Outputs {
    let dir = tempfile::tempdir().expect("scratch dir");
    Outputs {
        json: dir.path().join("search.json"),
        junit: dir.path().join("junit.xml"),
        report: dir.path().join("report"),
        out: dir.path().join("out"),
        _dir: dir,
    }
}

impl Outputs {
    /// `fencesim ARGS --out --json --junit --report`, from the repository root.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = fencesim_command();
        cmd.args(args)
            .arg("--out")
            .arg(&self.out)
            .arg("--json")
            .arg(&self.json)
            .arg("--junit")
            .arg(&self.junit)
            .arg("--report")
            .arg(&self.report);
        cmd
    }

    fn json(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(&self.json).expect("the JSON report is written");
        serde_json::from_str(&text).expect("the JSON report parses")
    }

    fn read(&self, file: &Path) -> String {
        std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("{} is written: {e}", file.display()))
    }
}

/// A nemesis run on a scenario whose plain UPDATE breaks, with what its
/// reports must say. Seed 3's first trial pauses A past its lease after
/// the read: a stale write in every rerun on an idle machine (a busy one
/// may call it a race and go on: the checks look for whichever trial
/// reproduced).
struct ChaosCase {
    scenario: &'static str,
    seed: &'static str,
    faults: &'static str,
}

const BREAKING: &[ChaosCase] = &[ChaosCase {
    scenario: "live/gc-pause-plain-update.toml",
    seed: "3",
    faults: "2",
}];

#[test]
fn a_nemesis_that_breaks_the_scenario_writes_json_junit_and_the_failing_trials_timeline() {
    if !live_servers_present("live chaos reports") {
        return;
    }
    let _one = live_shared();
    for case in BREAKING {
        let o = outputs();
        let args = [
            "search",
            case.scenario,
            "--chaos",
            case.seed,
            "--faults",
            case.faults,
        ];
        let (code, text) = run_text(&mut o.command(&args));
        assert_eq!(code, 1, "{args:?}: a violation is exit 1:\n{text}");

        let v = o.json();
        assert_eq!(v["schema"], "fencesim-live-chaos", "{v:#}");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["exit_code"], 1);
        assert_eq!(
            v["seed"].as_u64().map(|s| s.to_string()),
            Some(case.seed.into())
        );
        assert_eq!(v["interrupted"], false);
        let n = v["found_at_trial"]
            .as_u64()
            .expect("the failing trial is named");
        let trials = v["trials"].as_array().expect("trials");
        assert_eq!(
            trials.len() as u64,
            n,
            "the nemesis stops at the trial that reproduced"
        );
        let t = &trials[n as usize - 1];
        assert_eq!(t["trial"], n);
        assert_eq!(t["verdict"]["is"], "violation", "{t:#}");
        let kinds = t["verdict"]["kinds"].as_array().expect("kinds");
        assert!(!kinds.is_empty(), "{t:#}");
        let schedule = t["schedule"].as_array().expect("schedule");
        assert!(!schedule.is_empty(), "{t:#}");
        for f in schedule {
            assert!(f["kind"].is_string() && f["node"].is_string(), "{f:#}");
            assert!(
                f["after"].is_string() || f["at_ms"].is_u64() || f["message"].is_string(),
                "{f:#}"
            );
            assert!(
                text.contains(f["label"].as_str().expect("label")),
                "{f:#}\n{text}"
            );
        }
        assert_eq!(t["reproduces"], true);
        for key in ["history_file", "reproduction_file", "shrunk_file"] {
            let file = t[key].as_str().unwrap_or_else(|| panic!("{key}: {t:#}"));
            assert!(Path::new(file).is_file(), "{key} {file} is written");
        }
        assert!(!t["shrunk_schedule"].as_array().expect("shrunk").is_empty());

        // Every trial with a violation is a failing case, the races the
        // nemesis went on past (a busy machine) as well as the one that
        // reproduced.
        let violations = trials
            .iter()
            .filter(|t| t["verdict"]["is"] == "violation")
            .count();
        let xml = o.read(&o.junit);
        assert!(xml.contains(&format!("failures=\"{violations}\"")), "{xml}");
        let failure = format!(
            "<failure message=\"trial {n}: {}",
            kinds[0].as_str().unwrap_or("")
        );
        assert!(xml.contains(&failure), "{xml}");
        assert!(xml.contains("rerun: fencesim live "), "{xml}");
        assert!(
            xml.contains(schedule[0]["label"].as_str().unwrap_or("")),
            "{xml}"
        );

        let html = o.read(&o.report.join("index.html"));
        assert!(html.contains("<svg"), "the report draws the failing trial");
        assert!(html.contains(&format!("Timeline of trial {n} ")), "{html}");
        let results = o.read(&o.report.join("results.json"));
        assert!(results.contains("search (live) --chaos"), "{results}");
    }
}

#[test]
fn ctrl_c_stops_the_nemesis_with_its_reports_written() {
    if !live_servers_present("live chaos interrupted") {
        return;
    }
    let _one = live_shared();
    let o = outputs();
    // Seed 1's first violation that reproduces comes late (trial 20 on an
    // idle machine): the run is stopped well before.
    let args = [
        "search",
        "live/gc-pause-plain-update.toml",
        "--chaos",
        "1",
        "--faults",
        "2",
    ];
    let mut child = o
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fencesim runs");
    let (text, status) = crate::common::interrupt_after(
        &mut child,
        |l| l.starts_with("  trial 2:"),
        std::time::Duration::ZERO,
    );
    if text.contains("first violation:") {
        // The machine was fast enough to reach a reproduced violation first.
        return;
    }
    assert_eq!(status.code(), Some(130), "{text}");
    let v = o.json();
    assert_eq!(v["interrupted"], true, "{v:#}");
    assert_eq!(v["exit_code"], 130);
    assert!(v["error"].is_null(), "{v:#}");
    let trials = v["trials"].as_array().expect("trials");
    assert!(trials.len() >= 2, "the trials that ran are kept: {v:#}");
    assert!(o
        .read(&o.junit)
        .contains(&format!("tests=\"{}\"", trials.len())));
    assert!(o.report.join("index.html").is_file());
}

#[test]
fn ctrl_c_stops_the_enumeration_with_the_coverage_so_far_in_its_reports() {
    if !live_servers_present("live search interrupted") {
        return;
    }
    let _one = live_shared();
    let o = outputs();
    // 351 placements at two faults: minutes of trials, stopped after a few.
    let args = ["search", "live/gc-pause-plain-update.toml", "--faults", "2"];
    let mut child = o
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("fencesim runs");
    // Trials of this scenario take well under a second each.
    let (text, status) = crate::common::interrupt_after(
        &mut child,
        |l| l.starts_with("started:"),
        std::time::Duration::from_secs(4),
    );
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted after "), "{text}");
    let v = o.json();
    assert_eq!(v["schema"], "fencesim-live-search");
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["interrupted"], true, "{v:#}");
    assert_eq!(v["exit_code"], 130);
    let c = &v["coverage"];
    let (trials, tried) = (c["trials"].as_u64().unwrap(), c["tried"].as_u64().unwrap());
    assert!(
        trials > 0 && trials < tried,
        "the trials that finished are kept: {c:#}"
    );
    let junit = o.read(&o.junit);
    let found = !v["findings"].as_array().expect("findings").is_empty();
    assert!(
        junit.contains(if found { "<failure" } else { "<skipped" }),
        "a finding fails the case, else no verdict:\n{junit}"
    );
    assert!(o.report.join("index.html").is_file());
}

#[test]
fn the_enumerations_report_draws_a_rerun_of_each_findings_written_file() {
    if !live_servers_present("live search report timeline") {
        return;
    }
    let _one = live_shared();
    let o = outputs();
    let args = ["search", "live/gc-pause-plain-update.toml", "--faults", "1"];
    let (code, text) = run_text(&mut o.command(&args));
    assert_eq!(code, 1, "{text}");
    let v = o.json();
    let findings = v["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{v:#}");
    let html = o.read(&o.report.join("index.html"));
    for f in findings {
        let kind = f["kind"].as_str().expect("kind");
        let svg = o.report.join(format!("timelines/finding-{kind}.svg"));
        // A kind none of whose reruns showed it has nothing to draw.
        if f["reruns_shown"].as_u64() == Some(0) {
            continue;
        }
        assert!(svg.is_file(), "{kind}: {}", svg.display());
        let history = Path::new(f["file"].as_str().expect("file")).with_extension("jsonl");
        assert!(history.is_file(), "{}", history.display());
    }
    assert!(
        html.contains("<svg") && html.contains("Timeline of trial"),
        "{html}"
    );
}
