//! A user's own lock client, unchanged, under `fencesim live --worker-cmd`:
//! redis-py's `Lock` with a plain UPDATE is found unsafe under a pause
//! longer than its timeout, the same worker with the article's fenced
//! UPDATE is clean with its late write refused, the decoded history is
//! re-checked by `check-history`; the Rust example (`redis` and `postgres`
//! crates) likewise, fenced and plain; user programs crashed (at an anchor,
//! restarted, and `at_ms`, while stopped) and their UPDATE dropped or cut
//! by the proxy get a verdict, not a failure; and a program that crashes
//! or hangs on its own is reported as such (exit 3) with nothing it
//! started left running.
//!
//! Needs `redis-server` and PostgreSQL's binaries, for the Python examples
//! redis-py and psycopg (`.ci/run` installs all of them), and for the Rust
//! ones the example built beside the binary (`cargo test --release` builds
//! it); without them a test prints one loud line saying what it skipped and why.

use crate::common::{live_exclusive, live_servers_present, live_shared};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn python_clients_present(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import redis, psycopg"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::skip(
            test,
            "python3 with redis-py and psycopg is missing (bash examples/live-clients/install.sh)",
        );
    }
    ok
}

/// The Rust example where the example scenarios name it
/// (`target/release/examples/live_client_rust`), built by `cargo test --release`
/// next to the fencesim binary under test.
pub(super) fn rust_example_present(test: &str) -> bool {
    let built = crate::common::bin()
        .parent()
        .map(|d| d.join("examples/live_client_rust"));
    let named =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/examples/live_client_rust");
    let ok =
        built.is_some_and(|b| b.is_file() && b.canonicalize().ok() == named.canonicalize().ok());
    if !ok {
        crate::common::skip(
            test,
            &format!(
                "{} is not this build's example (cargo test --release builds it; \
                 or cargo build --release --example live_client_rust)",
                named.display()
            ),
        );
    }
    ok
}

/// Each trial's verdict ("clean" or the kinds found) and history file, from
/// the trial lines of `scenario`.
fn trials_of(stdout: &str, scenario: &str) -> Vec<(String, PathBuf)> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("trial "))
        .map(|l| l.split(" — ").collect::<Vec<_>>())
        .filter(|parts| parts.len() >= 4 && parts[3].contains(&format!("{scenario}-trial-")))
        .map(|parts| (parts[1].to_string(), PathBuf::from(parts[3])))
        .collect()
}

/// `check-history` of each trial's written history reaches the trial's verdict.
fn rechecks_agree(stdout: &str, scenario: &str) {
    let trials = trials_of(stdout, scenario);
    assert!(!trials.is_empty(), "no trials of {scenario} in:\n{stdout}");
    for (verdict, file) in trials {
        let out = crate::common::fencesim_command()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("check-history")
            .arg(&file)
            .output()
            .expect("run check-history");
        let text = String::from_utf8_lossy(&out.stdout);
        if verdict == "clean" {
            assert_eq!(out.status.code(), Some(0), "{}: {text}", file.display());
        } else {
            assert_eq!(out.status.code(), Some(1), "{}: {text}", file.display());
            for kind in verdict.split(", ") {
                assert!(
                    text.contains(kind),
                    "{}: {kind} not re-found:\n{text}",
                    file.display()
                );
            }
        }
    }
}

/// Every one of the `n` trials clean, each with a late write refused, and
/// each re-checked clean from its history.
fn clean_with_late_write_refused(stdout: &str, scenario: &str, n: u32) {
    assert_eq!(
        live_count(stdout, scenario, "none (clean runs)"),
        (n, n),
        "{stdout}"
    );
    assert_eq!(
        live_count(stdout, scenario, "fence_rejected ≥ 1"),
        (n, n),
        "{stdout}"
    );
    rechecks_agree(stdout, scenario);
}

fn live(args: &[&str]) -> (Output, String, String) {
    let out = crate::common::fencesim_command()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("live")
        .args(args)
        .output()
        .expect("run fencesim live");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fencesim-live-client-test-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The "live" column of a table row: (found, trials).
fn live_count(stdout: &str, scenario: &str, row: &str) -> (u32, u32) {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{scenario} ")) && l.contains(row))
        .unwrap_or_else(|| panic!("no {row} row for {scenario} in:\n{stdout}"));
    let cell = line[line.find(row).unwrap() + row.len()..]
        .split_whitespace()
        .next()
        .unwrap();
    let (a, b) = cell.split_once('/').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn redis_py_lock_with_plain_update_is_found_unsafe_and_its_history_rechecks() {
    let _g = live_shared();
    let test = "redis_py_lock_with_plain_update_is_found_unsafe";
    if !live_servers_present(test) || !python_clients_present(test) {
        return;
    }
    let dir = scratch("plain");
    let history = dir.join("h.jsonl");
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/gc-pause-redis-py-plain.toml",
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let (found, n) = live_count(&stdout, "client-gc-pause-redis-py-plain", "stale_write");
    assert!(
        2 * found > n,
        "stale write in only {found}/{n} trials:\n{stdout}"
    );
    rechecks_agree(&stdout, "client-gc-pause-redis-py-plain");
    // Decoded from the servers' side: A's lease ran out during its pause
    // (the SET's PX ttl from its reply), B's compare-and-delete deleted B's lock.
    let written = std::fs::read_to_string(&history).unwrap();
    for kind in ["lease_expired", "release_applied"] {
        assert!(
            written.contains(&format!("\"kind\":\"{kind}\"")),
            "no {kind} in {}",
            history.display()
        );
    }
    let recheck = crate::common::fencesim_command()
        .args(["check-history", history.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&recheck.stdout);
    if found == n {
        assert_eq!(recheck.status.code(), Some(1), "{text}");
        assert!(text.contains("stale_write"), "{text}");
        // Evidence points at decoded records and PostgreSQL's own audit.
        assert!(text.contains("audit commit_seq"), "{text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn redis_py_lock_with_fenced_update_is_clean_in_every_trial_with_its_late_write_refused() {
    let _g = live_shared();
    let test = "redis_py_lock_with_fenced_update_is_clean";
    if !live_servers_present(test) || !python_clients_present(test) {
        return;
    }
    let dir = scratch("fenced");
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/gc-pause-redis-py-fenced.toml",
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    clean_with_late_write_refused(&stdout, "client-gc-pause-redis-py-fenced", 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rust_client_is_clean_fenced_and_found_unsafe_with_a_plain_update() {
    let _g = live_shared();
    let test = "rust_client_is_clean_fenced_and_found_unsafe_with_a_plain_update";
    if !live_servers_present(test) || !rust_example_present(test) {
        return;
    }
    let dir = scratch("rust");
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/gc-pause-rust-fenced.toml",
        "examples/live-clients/gc-pause-rust-plain.toml",
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    clean_with_late_write_refused(&stdout, "client-gc-pause-rust-fenced", 3);
    let plain = "client-gc-pause-rust-plain";
    let (found, n) = live_count(&stdout, plain, "stale_write");
    assert!(
        2 * found > n,
        "stale write in only {found}/{n} trials:\n{stdout}"
    );
    rechecks_agree(&stdout, plain);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_stalled_at_a_time_lands_a_plain_update_late_and_a_fenced_one_is_refused() {
    let _g = live_shared();
    let test = "a_link_stalled_at_a_time_lands_a_plain_update_late_and_a_fenced_one_is_refused";
    if !live_servers_present(test) || !rust_example_present(test) {
        return;
    }
    let dir = scratch("stall");
    // The same stall on the lock server's replies (A learns of its grant
    // after its lease ran out), and one whose window no message reaches.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plain = std::fs::read_to_string(
        root.join("examples/live-clients/stalled-link-at-ms-rust-plain.toml"),
    )
    .unwrap();
    let twin = root.join("scenarios/article/delayed-packet-stale-write.toml");
    let variant = |name: &str, from: &str, to: &str| {
        let text = plain
            .replace("client-stalled-link-at-ms-rust-plain", name)
            .replace(
                "../../scenarios/article/delayed-packet-stale-write.toml",
                twin.to_str().unwrap(),
            )
            .replace(from, to);
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, text).unwrap();
        file
    };
    let reply = variant(
        "stalled-reply",
        "message = \"update\"",
        "message = \"lock_reply\"",
    );
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/stalled-link-at-ms-rust-fenced.toml",
        "examples/live-clients/stalled-link-at-ms-rust-plain.toml",
        reply.to_str().unwrap(),
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    clean_with_late_write_refused(&stdout, "client-stalled-link-at-ms-rust-fenced", 3);
    for (scenario, what) in [
        ("client-stalled-link-at-ms-rust-plain", "UPDATE"),
        ("stalled-reply", "lock reply"),
    ] {
        let (found, n) = live_count(&stdout, scenario, "stale_write");
        assert!(
            2 * found > n,
            "stale write in only {found}/{n} trials:\n{stdout}"
        );
        rechecks_agree(&stdout, scenario);
        let held = format!("proxy held worker/A's {what} at ");
        assert!(stdout.contains(&held), "no {held:?} line:\n{stdout}");
    }
    let missed = variant("stall-too-late", "at_ms = 0", "at_ms = 5000");
    let (out, stdout, stderr) = live(&[missed.to_str().unwrap(), "--trials", "1"]);
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("never struck") && stderr.contains("delay of its UPDATE at_ms 5000"),
        "a stall nothing passed through is no verdict:\n{stdout}\n{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgresqls_answers_held_or_lost_are_judged_from_what_the_server_did() {
    let _g = live_shared();
    let test = "postgresqls_answers_held_or_lost_are_judged_from_what_the_server_did";
    if !live_servers_present(test) || !rust_example_present(test) {
        return;
    }
    let dir = scratch("replies");
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/delayed-read-reply-rust-plain.toml",
        "examples/live-clients/delayed-read-reply-rust-fenced.toml",
        "examples/live-clients/lost-update-reply-rust-plain.toml",
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // A read answered late: the plain write lands over B's, the fenced one
    // is refused.
    assert_eq!(
        live_count(
            &stdout,
            "client-delayed-read-reply-rust-plain",
            "stale_write"
        ),
        (3, 3),
        "{stdout}"
    );
    rechecks_agree(&stdout, "client-delayed-read-reply-rust-plain");
    clean_with_late_write_refused(&stdout, "client-delayed-read-reply-rust-fenced", 3);
    assert!(
        stdout.contains("proxy held worker/A's read reply for 900 ms"),
        "{stdout}"
    );
    // An UPDATE that ran and whose answer was lost: the server's audit says
    // it was applied, the program gave the operation up; clean.
    let trials = trials_of(&stdout, "client-lost-update-reply-rust-plain");
    assert_eq!(trials.len(), 3, "{stdout}");
    for (verdict, file) in &trials {
        assert!(
            verdict.starts_with("clean"),
            "{verdict}: {}",
            file.display()
        );
        let text = std::fs::read_to_string(file).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let a_op = |e: &serde_json::Value| e["op_id"].as_u64().is_some_and(|op| op / 1000 == 1);
        let accepted = events
            .iter()
            .position(|e| e["kind"] == "write_accepted" && a_op(e))
            .unwrap_or_else(|| panic!("A's write not accepted: {}", file.display()));
        let given_up = events
            .iter()
            .position(|e| e["kind"] == "op_abandoned" && a_op(e))
            .unwrap_or_else(|| panic!("A never gave its op up: {}", file.display()));
        assert!(accepted < given_up, "{}", file.display());
        assert!(
            !events
                .iter()
                .any(|e| e["kind"] == "write_acked" && a_op(e) && e["node"] == "worker/A"),
            "A never saw its write's answer: {}",
            file.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_token_drawn_after_the_grant_lets_a_paused_holder_write_stale_and_one_drawn_under_the_lock_does_not(
) {
    let _g = live_shared();
    let test = "a_token_drawn_after_the_grant_lets_a_paused_holder_write_stale";
    if !live_servers_present(test) || !rust_example_present(test) {
        return;
    }
    let dir = scratch("token-after-grant");
    // The same program and the same pause between the grant and the token:
    // --fenced INCRs beside the lease, --fenced-held only while it holds it.
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/token-after-grant-rust-fenced.toml",
        "examples/live-clients/token-after-grant-rust-held-fenced.toml",
        "--trials",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}
{stderr}"
    );
    let beside = "client-token-after-grant-rust-fenced";
    assert_eq!(
        live_count(&stdout, beside, "stale_write"),
        (3, 3),
        "{stdout}"
    );
    assert_eq!(
        live_count(&stdout, beside, "unissued_token"),
        (3, 3),
        "{stdout}"
    );
    let held = "client-token-after-grant-rust-held-fenced";
    assert_eq!(
        live_count(&stdout, held, "none (clean runs)"),
        (3, 3),
        "{stdout}"
    );
    for scenario in [beside, held] {
        rechecks_agree(&stdout, scenario);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `check-history`'s info line of a history file (writes_accepted=…).
fn info_of(file: &Path) -> String {
    let out = crate::common::fencesim_command()
        .arg("check-history")
        .arg(file)
        .output()
        .expect("run check-history");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("info:"))
        .unwrap_or_default()
        .to_string()
}

/// Command lines of running processes that contain `needle`.
fn running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

#[test]
fn user_programs_are_crashed_restarted_and_lose_their_update_to_drop_and_cut_without_failing() {
    let _g = live_exclusive();
    let test = "user_programs_are_crashed_restarted_and_lose_their_update";
    if !live_servers_present(test) || !rust_example_present(test) {
        return;
    }
    let dir = scratch("faults");
    let (out, stdout, stderr) = live(&[
        "examples/live-clients/crash-restart-rust-fenced.toml",
        "examples/live-clients/crash-at-ms-rust-fenced.toml",
        "examples/live-clients/dropped-update-rust-fenced.toml",
        "examples/live-clients/cut-connection-rust-fenced.toml",
        "--trials",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    // Killed by fencesim is not the program failing: every trial has a verdict.
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // (scenario, what the fault line says, writes that landed, what the history holds)
    let cases = [
        (
            "client-crash-restart-rust-fenced",
            "crash (SIGKILL) worker/A after lock_granted, restart after 50 ms",
            2,
            &["\"kind\":\"crash\"", "\"kind\":\"restart\""][..],
        ),
        (
            "client-crash-at-ms-rust-fenced",
            "crash (SIGKILL) worker/A at_ms 400, no restart",
            1,
            &["\"kind\":\"pause\"", "\"kind\":\"crash\""][..],
        ),
        (
            "client-dropped-update-rust-fenced",
            "proxy dropped worker/A's UPDATE",
            1,
            &["\"kind\":\"op_abandoned\""][..],
        ),
        (
            "client-cut-connection-rust-fenced",
            "proxy cut worker/A's connection at its UPDATE",
            1,
            &["\"kind\":\"op_abandoned\""][..],
        ),
    ];
    for (scenario, fault, writes, kinds) in cases {
        assert_eq!(
            live_count(&stdout, scenario, "none (clean runs)"),
            (2, 2),
            "{stdout}"
        );
        rechecks_agree(&stdout, scenario);
        for (_, file) in trials_of(&stdout, scenario) {
            let line = stdout
                .lines()
                .find(|l| l.contains(file.to_str().unwrap()))
                .unwrap();
            assert!(line.contains(fault), "{scenario}: no {fault:?} in {line}");
            let info = info_of(&file);
            assert!(
                info.contains(&format!("writes_accepted={writes} ")),
                "{scenario}: {info}"
            );
            let history = std::fs::read_to_string(&file).unwrap();
            for kind in kinds {
                assert!(
                    history.contains(kind),
                    "{scenario}: no {kind} in {}",
                    file.display()
                );
            }
            if scenario == "client-crash-at-ms-rust-fenced" {
                assert!(
                    !history.contains("\"kind\":\"resume\""),
                    "a program killed while stopped is not resumed: {}",
                    file.display()
                );
            }
        }
    }
    // The program as the scenarios start it (with its flags), not a compiler
    // that happens to be building the example elsewhere on the machine.
    let program = "release/examples/live_client_rust --";
    assert!(
        running(program).is_empty(),
        "still running: {:?}",
        running(program)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A program that does nothing of the protocol: the faults never strike.
fn misbehaving(name: &str, cmd: &str, extra: &[&str]) -> (Output, String, String) {
    let dir = scratch(name);
    let mut args = vec![
        "live/gc-pause-plain-update.toml",
        "--trials",
        "1",
        "--out",
        dir.to_str().unwrap(),
        "--worker-cmd",
        cmd,
    ];
    args.extend_from_slice(extra);
    let r = live(&args);
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

#[test]
fn crashing_program_is_reported_with_exit_3_not_a_verdict() {
    let _g = live_shared();
    if !live_servers_present("crashing_program_is_reported_with_exit_3") {
        return;
    }
    let (out, stdout, stderr) = misbehaving("crashing", "echo connecting >&2; exit 7", &[]);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("exited with code 7"), "{stderr}");
    assert!(stderr.contains("not the protocol"), "{stderr}");
    assert!(
        stderr.contains("connecting"),
        "its output is shown: {stderr}"
    );
    // The table keeps its header; the scenario has no row in it (no
    // verdict), only its line under "not judged".
    assert!(
        !(stdout.lines()).any(|l| l.trim_end().ends_with(" met") || l.contains("NOT MET")),
        "no verdict: {stdout}"
    );
    assert!(stdout.contains("not judged"), "{stdout}");
}

#[test]
fn hanging_program_is_reported_with_exit_3_and_nothing_it_started_survives() {
    let _g = live_shared();
    if !live_servers_present("hanging_program_is_reported_with_exit_3") {
        return;
    }
    let marker = format!("{}", 900_000 + std::process::id() % 90_000);
    // A background child in the group and a daemon that leaves it.
    let cmd = format!("sleep {marker} & setsid sleep {marker} & sleep {marker}");
    let (out, stdout, stderr) = misbehaving("hanging", &cmd, &["--timeout-ms", "3000"]);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("did not finish within 3000 ms"), "{stderr}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let left = running(&format!("sleep {marker}"));
    assert!(left.is_empty(), "still running after the run: {left:?}");
}

#[test]
fn a_user_program_under_a_cluster_members_fault_after_a_workers_step_is_refused_before_any_server_starts(
) {
    // A member's fault at a time is fired for a program; one after a
    // worker's step is not anchored to its conversation yet.
    let (out, stdout, stderr) = live(&[
        "live/zk-partitioned-leader-fenced.toml",
        "--worker-cmd",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("zk-partitioned-leader-fenced.toml")
            && stderr.contains("a cluster member's fault")
            && stderr.contains("give it an at_ms"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("started:"),
        "no server was started: {stdout}"
    );
}
