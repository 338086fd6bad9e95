//! Ctrl-C during `fencesim check` (issue #18): a search at large bounds runs for minutes, so
//! SIGINT must stop it, print the partial counts with no verdict, and exit 130. Both searches
//! are covered: the multi-threaded proof (expected-safe spec) and the single-threaded
//! counterexample BFS (an expected-unsafe spec on a safe protocol, so it never ends early).
#![cfg(unix)]

use std::process::Stdio;
use std::time::{Duration, Instant};

/// Bounds far above the bundled models (about 3e8 states): minutes without the interrupt.
fn large_spec(dir: &std::path::Path, expected: &str) -> std::path::PathBuf {
    let path = dir.join("large.toml");
    let text = format!(
        "schema_version = 1\nprotocol = \"consensus-generation\"\ndescription = \"large\"\n\
         clients = 4\ngrants_max = 8\nfailovers_max = 3\nreplicas = 3\n\n\
         [expect]\n{expected}\n"
    );
    std::fs::write(&path, text).expect("temp file");
    path
}

/// An expectation the safe protocol cannot meet, so the counterexample search never ends early.
const UNSAFE_EXPECTATION: &str = "verdict = \"unsafe\"\nviolation = \"token_order\"";

/// Starts `fencesim check ARGS SPEC`, sends SIGINT after a second, and returns the exit code,
/// stdout and how long the process took to end after the signal.
fn interrupt_check_after_a_second(
    args: &[&str],
    expected: &str,
) -> (Option<i32>, String, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = large_spec(dir.path(), expected);
    let mut child = crate::common::fencesim_command()
        .arg("check")
        .args(args)
        .arg(&spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fencesim");
    std::thread::sleep(Duration::from_secs(1));
    // Still running: the spec is large enough that the interrupt, not the end, stops it.
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the search ended within a second: the spec is too small to test an interrupt"
    );
    let signalled = Instant::now();
    // Safety: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill(SIGINT) failed");
    let out = child.wait_with_output().expect("wait");
    let took = signalled.elapsed();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        took,
    )
}

/// The N of "interrupted after N states", without the thousands separators.
fn interrupted_state_count(text: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with("large: interrupted after "))
        .unwrap_or_else(|| panic!("no interrupted line: {text}"));
    assert!(line.ends_with("): no verdict"), "{line}");
    let n = line["large: interrupted after ".len()..]
        .split(' ')
        .next()
        .expect("a count")
        .replace(',', "");
    n.parse().unwrap_or_else(|_| panic!("not a count: {line}"))
}

#[test]
fn ctrl_c_stops_a_large_proof_with_its_partial_counts_and_exit_130() {
    let (code, text, took) =
        interrupt_check_after_a_second(&["--threads", "2"], "verdict = \"safe\"");
    assert_eq!(code, Some(130), "{text}");
    assert!(interrupted_state_count(&text) > 0, "{text}");
    assert!(
        !text.contains("expectation"),
        "no table row for an unfinished model: {text}"
    );
    assert!(took < Duration::from_secs(5), "ended {took:?} after SIGINT");
}

#[test]
fn ctrl_c_stops_a_large_counterexample_search_with_its_partial_counts_and_exit_130() {
    let (code, text, took) = interrupt_check_after_a_second(&[], UNSAFE_EXPECTATION);
    assert_eq!(code, Some(130), "{text}");
    assert!(interrupted_state_count(&text) > 0, "{text}");
    assert!(took < Duration::from_secs(5), "ended {took:?} after SIGINT");
}

#[test]
fn ctrl_c_under_json_reports_no_verdict_and_exit_130() {
    let (code, text, took) = interrupt_check_after_a_second(
        &["--format", "json", "--threads", "2"],
        "verdict = \"safe\"",
    );
    assert_eq!(code, Some(130), "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON on stdout");
    assert_eq!(json["exit_code"], 130);
    let model = &json["models"][0];
    assert_eq!(model["interrupted"], true, "{text}");
    assert_eq!(model["verdict"], "none", "{text}");
    assert_eq!(model["met"], false, "{text}");
    assert!(
        model["unique_states"].as_u64().is_some_and(|n| n > 0),
        "{text}"
    );
    assert!(took < Duration::from_secs(5), "ended {took:?} after SIGINT");
}

#[test]
fn ctrl_c_keeps_the_table_rows_of_models_finished_before_it() {
    let (code, text, _) =
        interrupt_check_after_a_second(&["models/no-fence.toml"], "verdict = \"safe\"");
    assert_eq!(code, Some(130), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("no-fence") && l.ends_with("met")),
        "{text}"
    );
    assert!(interrupted_state_count(&text) > 0, "{text}");
}
