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
    let started = Instant::now();
    let o = validate_raw(
        mode,
        "1",
        &["--seeds", "3", "--jobs", "1", "--step-timeout-ms", "3000"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the harness took {:?}",
        started.elapsed()
    );
    o
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
    assert_all_gone(&o.pids);
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
fn a_second_reply_to_one_request_is_a_wrong_in_reply_to_not_a_second_outcome() {
    // error 11 and then acquire_ok for the same acquire: judging either
    // answer would be judging a guess.
    let o = validate_with_fake("double_reply");
    assert_reported(
        &o,
        "wrong in_reply_to",
        "in_reply_to 3 answers a request already answered: one request, one reply",
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
        "more than 1000 output lines for one input without step_done; its first lines:",
    );
    let sample = r#"      | {"src": "coord/0", "dest": "harness", "body": {"type": "cancel_timer", "timer": 0, "step": 3}}"#;
    assert!(
        o.stdout.contains(sample),
        "a sample of the flood is shown:\n{}",
        o.stdout
    );
}

#[test]
fn a_line_without_end_is_cut_off_at_the_line_limit() {
    let o = validate_with_fake("long_line");
    assert_reported(&o, "flooding output", "a line longer than 65536 bytes");
}

#[test]
fn a_lease_longer_than_a_year_is_an_invalid_message_not_a_crash() {
    let o = validate_with_fake("huge_ttl");
    assert_reported(
        &o,
        "invalid message",
        "is 18446744073709551615 ns, expected at most 31536000000000000 ns (one year)",
    );
}

/// Runs `validate` with the fake coordinator in `mode` (every seed it is
/// told), returning the exit code, stdout and the pids the fakes recorded.
fn validate_raw(mode: &str, fake_seed: &str, args: &[&str]) -> Outcome {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let fake = root.join("examples/python/fakes/misbehaving.py");
    let out = crate::common::fencesim_command()
        .current_dir(root)
        .env("FAKE_PIDFILE", &pidfile)
        .arg("validate")
        .args(args)
        .arg("--node")
        .arg(format!(
            "coordinator=python3 {} {mode} {fake_seed}",
            fake.display()
        ))
        .arg(SCENARIO)
        .output()
        .expect("run fencesim");
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

fn assert_all_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| running(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive: Vec<u32> = pids.iter().copied().filter(|&p| running(p)).collect();
    assert!(
        alive.is_empty(),
        "processes outlived the harness: {alive:?}"
    );
}

#[test]
fn a_line_written_after_step_done_is_refused_the_same_way_in_twenty_runs_of_a_racy_fake() {
    // The fake writes a line of the finished step 0-3 ms after its
    // step_done: before the next input or after it, as the race falls.
    let args = [
        "--seed-start",
        "1",
        "--seeds",
        "1",
        "--jobs",
        "1",
        "--step-timeout-ms",
        "3000",
    ];
    let first = validate_raw("late_line", "1", &args);
    assert_eq!(first.code, 3, "{}", first.stdout);
    assert!(
        first
            .stdout
            .contains("implementation error in coord/0 (line outside its step): the line belongs to input msg_id 3"),
        "{}",
        first.stdout
    );
    assert!(
        first
            .stdout
            .contains(r#""type": "cancel_timer", "timer": 0, "step": 3"#),
        "{}",
        first.stdout
    );
    assert!(
        first.stdout.contains("answering stdin line 4: "),
        "{}",
        first.stdout
    );
    for run in 1..20 {
        let again = validate_raw("late_line", "1", &args);
        assert_eq!(
            (again.code, &again.stdout),
            (first.code, &first.stdout),
            "run {run} differs from run 0"
        );
    }
}

#[test]
fn a_setsid_daemon_started_by_an_implementation_does_not_outlive_validate() {
    for mode in ["daemon", "daemon_noenv"] {
        let o = validate_raw(
            mode,
            "1",
            &["--seeds", "2", "--jobs", "1", "--step-timeout-ms", "3000"],
        );
        assert_eq!(
            o.code, 0,
            "{mode}: the daemon is no protocol break:\n{}",
            o.stdout
        );
        // Seed 0's process, seed 1's process and seed 1's daemon.
        assert!(o.pids.len() >= 3, "{mode}: {:?}", o.pids);
        assert_all_gone(&o.pids);
    }
}

#[test]
fn one_seeds_cleanup_never_ends_a_daemon_of_a_seed_still_running_under_jobs_2() {
    // Every seed's coordinator starts a daemon (the empty seed argument
    // targets them all): a grandchild that is an orphan of the harness for
    // a moment before it reports ready. Ending it then would hang its seed.
    for mode in ["daemon", "daemon_noenv"] {
        for round in 0..3 {
            let o = validate_raw(
                mode,
                "",
                &["--seeds", "6", "--jobs", "2", "--step-timeout-ms", "3000"],
            );
            assert_eq!(o.code, 0, "{mode} round {round}:\n{}", o.stdout);
            assert!(o.pids.len() >= 12, "{mode}: {:?}", o.pids);
            assert_all_gone(&o.pids);
        }
    }
}

#[test]
fn a_process_that_exits_before_init_ok_is_told_so() {
    let o = validate_raw(
        "exit_at_init",
        "1",
        &["--seeds", "3", "--jobs", "1", "--step-timeout-ms", "3000"],
    );
    assert_eq!(o.code, 3, "{}", o.stdout);
    assert!(
        o.stdout
            .contains("implementation error in coord/0 (process exited): the process exited (exit status: 4) before init_ok"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("| fake: no init_ok from me"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("answering stdin line 1: "),
        "{}",
        o.stdout
    );
}

#[test]
fn repeated_identical_implementation_errors_stop_the_scenario_and_say_so() {
    let started = Instant::now();
    let o = validate_raw(
        "hang",
        "",
        &["--seeds", "8", "--jobs", "1", "--step-timeout-ms", "1000"],
    );
    assert_eq!(o.code, 3, "{}", o.stdout);
    assert!(
        o.stdout.contains(
            "gc-pause-fenced-cas: stopped after 3 identical implementation errors in a row (last seed run: 2); 5 seeds not run"
        ),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("verdict: IMPLEMENTATION ERROR in 3 runs"),
        "{}",
        o.stdout
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert_all_gone(&o.pids);
}

#[test]
fn the_repro_line_carries_the_step_timeout_and_reproduces_the_failure() {
    // Seed 1's acquire takes 4 s: a step timeout at 2000 ms, not at the default 5000.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = validate_raw(
        "slow",
        "1",
        &["--seeds", "2", "--jobs", "1", "--step-timeout-ms", "2000"],
    );
    assert_eq!(o.code, 3, "{}", o.stdout);
    let repro = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("repro: "))
        .expect("a repro line");
    assert!(
        repro.contains("--step-timeout-ms 2000 --seed-start 1 --seeds 1"),
        "{repro}"
    );
    let command = repro.replacen("fencesim", &crate::common::bin().display().to_string(), 1);
    let again = Command::new("sh")
        .current_dir(root)
        .arg("-c")
        .arg(&command)
        .output()
        .expect("run the repro line");
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(3), "{text}");
    assert!(
        text.contains(
            "implementation error in coord/0 (step timeout): no step_done within 2000 ms"
        ),
        "{text}"
    );
}

#[test]
fn zero_seeds_is_bad_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = crate::common::fencesim_command()
        .current_dir(root)
        .args([
            "validate",
            "--seeds",
            "0",
            "--node",
            "coordinator=python3 examples/python/fencelock.py",
        ])
        .arg(SCENARIO)
        .output()
        .expect("run fencesim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("--seeds"),
        "the message names the flag: {stderr}"
    );
}
