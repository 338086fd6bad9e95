//! Implementations that break the wire protocol: each gets a diagnostic
//! naming the node, the message and the line; the run is an implementation
//! error (exit 3), the other seeds still run and report, and no process
//! the harness started is left running.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SCENARIO: &str = "scenarios/article/gc-pause-fenced-cas.toml";

struct Outcome {
    code: i32,
    stdout: String,
    pids: Vec<u32>,
}

/// Runs seeds 0..3 with the fake coordinator misbehaving in seed 1 only.
/// The step timeout leaves room for a Python start-up on a loaded machine
/// (700 ms once timed out at load average 7), yet a hang still ends fast.
fn validate_with_fake(mode: &str) -> Outcome {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let fake = root.join("examples/python/fakes/misbehaving.py");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fencesim"))
        .current_dir(root)
        .env("FAKE_PIDFILE", &pidfile)
        .args(["validate", "--seeds", "3", "--jobs", "1"])
        .args(["--step-timeout-ms", "3000"])
        .arg("--node")
        .arg(format!("coordinator=python3 {} {mode} 1", fake.display()))
        .arg(SCENARIO)
        .output()
        .expect("run fencesim");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the harness took {:?}",
        started.elapsed()
    );
    let pids = std::fs::read_to_string(&pidfile)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        pids,
    }
}

/// Running means: /proc has it and it is not a zombie waiting for init.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

fn assert_reported(o: &Outcome, kind: &str, detail: &str) {
    let text = &o.stdout;
    assert_eq!(o.code, 3, "exit code 3 (implementation error):\n{text}");
    let header = format!("implementation error in coord/0 ({kind}): ");
    assert!(text.contains(&header), "missing {header:?} in:\n{text}");
    assert!(text.contains(detail), "missing {detail:?} in:\n{text}");
    assert!(
        text.contains("== gc-pause-fenced-cas seed 1: implementation error =="),
        "{text}"
    );
    assert!(text.contains("answering stdin line 3: "), "{text}");
    assert!(
        text.contains(r#""type":"acquire""#),
        "the input is quoted:\n{text}"
    );
    assert!(
        text.contains("misbehaving.py"),
        "the command is named:\n{text}"
    );
    // Seeds 0 and 2 still ran and were judged clean.
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("gc-pause-fenced-cas"))
        .expect("table row")
        .split_whitespace()
        .collect();
    assert_eq!(&row[1..5], ["3", "2", "0", "1"], "{text}");
    assert!(
        text.contains("verdict: IMPLEMENTATION ERROR in 1 runs"),
        "{text}"
    );
    assert!(
        o.pids.len() >= 3,
        "every process recorded its pid: {:?}",
        o.pids
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while o.pids.iter().any(|&p| running(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive: Vec<u32> = o.pids.iter().copied().filter(|&p| running(p)).collect();
    assert!(
        alive.is_empty(),
        "processes outlived the harness: {alive:?}"
    );
}

#[test]
fn malformed_json_is_reported_with_the_stdout_line_that_is_not_json() {
    let o = validate_with_fake("malformed");
    assert_reported(&o, "malformed JSON", "EOF while parsing");
    assert!(
        o.stdout.contains(r#"stdout line 4: {"src": "coord/0""#),
        "{}",
        o.stdout
    );
}

#[test]
fn an_unknown_message_type_is_named_with_the_types_that_exist() {
    let o = validate_with_fake("unknown_type");
    assert_reported(
        &o,
        "unknown message type",
        r#"unknown message type "heartbeat""#,
    );
    assert!(
        o.stdout.contains("expected one of init_ok, step_done"),
        "{}",
        o.stdout
    );
}

#[test]
fn a_reply_to_a_request_never_delivered_is_a_wrong_in_reply_to() {
    let o = validate_with_fake("wrong_in_reply_to");
    assert_reported(
        &o,
        "wrong in_reply_to",
        "in_reply_to 1003 is not the msg_id of any request delivered to coord/0",
    );
}

#[test]
fn a_process_that_exits_on_its_own_is_reported_with_its_status_and_stderr() {
    let o = validate_with_fake("crash");
    assert_reported(&o, "process exited", "exit status: 3");
    assert!(
        o.stdout.contains("| fake: giving up on acquire"),
        "{}",
        o.stdout
    );
}

#[test]
fn a_hung_process_aborts_its_run_at_the_step_timeout_and_its_children_die_too() {
    let o = validate_with_fake("hang");
    assert_reported(&o, "step timeout", "no step_done within 3000 ms");
    // The fake's own child (`sleep 600`) was in its process group.
    assert!(
        o.pids.len() >= 4,
        "the sleep child was recorded: {:?}",
        o.pids
    );
}

#[test]
fn a_process_flooding_lines_without_step_done_is_cut_off() {
    let o = validate_with_fake("flood");
    assert_reported(
        &o,
        "flooding output",
        "more than 1000 output lines for one input without step_done",
    );
}

#[test]
fn a_line_without_end_is_cut_off_at_the_line_limit() {
    let o = validate_with_fake("long_line");
    assert_reported(&o, "flooding output", "a line longer than 65536 bytes");
}
