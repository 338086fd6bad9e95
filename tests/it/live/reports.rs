//! `fencesim live --json/--junit/--report`: the files a CI job publishes
//! from a live run, as it publishes a sweep's. The run with real servers
//! holds `live_exclusive()`; refusing an unwritable output needs none.

use crate::common::{live_exclusive, live_servers_present};
use std::path::Path;
use std::process::Command;

fn fencesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fencesim"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_live_run_writes_versioned_json_junit_and_a_report_with_a_real_trials_timeline() {
    let test = "a_live_run_writes_versioned_json_junit_and_a_report";
    if !live_servers_present(test) {
        return;
    }
    let _serial = live_exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let (json, junit, report) = (
        tmp.path().join("live.json"),
        tmp.path().join("junit.xml"),
        tmp.path().join("report"),
    );
    let o = fencesim()
        .current_dir(root())
        .args([
            "live",
            "live/gc-pause-plain-update.toml",
            "--trials",
            "2",
            "--jobs",
            "1",
            "--out",
        ])
        .arg(tmp.path().join("histories"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "fencesim live failed ({}):\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["schema"], "fencesim-live");
    assert_eq!(v["schema_version"], 1);
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

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"fencesim live\" tests=\"1\" failures=\"0\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");

    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("class=\"timeline"),
        "no timeline"
    );
    assert!(html.contains("<g class=\"evidence "), "no evidence ringed");
    assert!(html.contains("<g class=\"shade "), "no pause hatching");
    assert!(html.contains("<h3>Trials</h3>"), "no trials table");
    for file in ["summary.md", "results.json"] {
        assert!(report.join(file).is_file(), "{file} missing");
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
