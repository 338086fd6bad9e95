//! The test command's runner (`.cargo/runner.sh`, cargo's `runner` for
//! every binary it runs): the integration tests' whole suite runs as two
//! processes at once, the tests with real-time deadlines (live servers,
//! external implementations, the Slurm cluster) and, at nice 19, the
//! CPU-bound rest, each test by its exact name; anything else passes
//! through untouched.
//! Checked on a stand-in binary that lists tests and records how it was
//! run, so that a test lost between the two halves, a half run at the wrong
//! priority, a half's failure swallowed, or an interrupted run that loses
//! the CPU-bound half's output or leaves a half running fails here.

use std::path::{Path, PathBuf};
use std::process::Command;

fn runner() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".cargo/runner.sh")
}

/// A stand-in for a libtest binary named `name`: `--list --format terse`
/// lists six tests (one outside `live::` whose name holds `live::`); any
/// other call appends `nice=<its niceness> <its arguments>` to `log` and
/// exits with `$LIVE_STATUS` or, when it was given `check::y`, `$REST_STATUS`
/// (with `$HANG` set, it prints its arguments, logs `pid=<its pid> <its
/// arguments>` and becomes a ten minutes' sleep instead).
fn stand_in(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let log = dir.join("calls.log");
    let bin = dir.join(name);
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = --list ]; then
  printf 'cli::deploy::v: test\ncli::seeds::s: test\nlive::a::one: test\nlive::b: test\n'
  printf 'codecheck::to_live::x: test\ncheck::y: test\nvalidate::z: test\n0 tests\n'
  exit 0
fi
if [ -n "${{HANG:-}}" ]; then
  echo "output of $*"
  echo "pid=$$ $*" >> '{log}'
  exec sleep 600
fi
echo "nice=$(nice) $*" >> '{log}'
case " $* " in
  *" check::y "*) exit "${{REST_STATUS:-0}}" ;;
esac
exit "${{LIVE_STATUS:-0}}"
"#,
        log = log.display()
    );
    std::fs::write(&bin, script).expect("writing the stand-in");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .expect("making the stand-in executable");
    }
    (bin, log)
}

fn run(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, Vec<String>) {
    let mut cmd = Command::new("sh");
    cmd.arg(runner()).arg(bin).args(args);
    cmd.env_remove("FENCESIM_TEST_SPLIT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running .cargo/runner.sh");
    let log = bin.with_file_name("calls.log");
    let mut calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    calls.sort();
    let _ = std::fs::remove_file(&log);
    (out.status.success(), calls)
}

#[test]
fn the_whole_suite_runs_as_the_real_time_tests_beside_the_cpu_bound_ones_at_nice_19() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bin, _) = stand_in(dir.path(), "it-0123abcd");
    let (ok, calls) = run(&bin, &[], &[]);
    assert!(ok, "{calls:?}");
    assert_eq!(calls.len(), 2, "{calls:?}");
    let rest = calls
        .iter()
        .find(|c| c.contains("check::y"))
        .expect("the other tests ran");
    assert_eq!(
        rest, "nice=19 --exact cli::seeds::s codecheck::to_live::x check::y",
        "every CPU-bound test, by exact name, at nice 19"
    );
    let live = calls
        .iter()
        .find(|c| c.contains("live::a::one"))
        .expect("the real-time tests ran");
    assert!(
        live.ends_with(" --exact cli::deploy::v live::a::one live::b validate::z"),
        "the real-time tests by exact name, and only they: {live}"
    );
    assert_ne!(live, rest);
}

#[test]
fn a_failure_in_either_half_fails_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bin, _) = stand_in(dir.path(), "it-0123abcd");
    for status in ["LIVE_STATUS", "REST_STATUS"] {
        let (ok, calls) = run(&bin, &[], &[(status, "101")]);
        assert!(!ok, "{status}=101 passed: {calls:?}");
        assert_eq!(calls.len(), 2, "both halves ran to the end: {calls:?}");
    }
}

#[test]
fn a_filtered_run_another_binary_or_split_0_passes_through_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (it, _) = stand_in(dir.path(), "it-0123abcd");
    let (ok, calls) = run(&it, &["check::", "--nocapture"], &[]);
    assert!(ok);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].ends_with(" check:: --nocapture"), "{calls:?}");

    let (ok, calls) = run(&it, &["--nocapture"], &[("FENCESIM_TEST_SPLIT", "0")]);
    assert!(ok);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].ends_with(" --nocapture"), "{calls:?}");

    let dir = tempfile::tempdir().expect("temp dir");
    let (lib, _) = stand_in(dir.path(), "fencesim-0123abcd");
    let (ok, calls) = run(&lib, &[], &[("LIVE_STATUS", "3")]);
    assert!(!ok, "the binary's own status comes back");
    assert_eq!(calls.len(), 1, "{calls:?}");
}

/// Polls `done` until it holds; a minute at the longest (`what` failing).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "not within a minute: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn an_interrupted_run_shows_the_cpu_bound_output_so_far_and_leaves_neither_half_running() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bin, log) = stand_in(dir.path(), "it-0123abcd");
    let mut child = Command::new("sh")
        .arg(runner())
        .arg(&bin)
        .env_remove("FENCESIM_TEST_SPLIT")
        .env("HANG", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("running .cargo/runner.sh");
    // Each half prints before it logs its pid: both logged, both printed.
    let pids = || -> Vec<String> {
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        (calls.lines())
            .filter_map(|l| l.strip_prefix("pid="))
            .filter_map(|l| l.split(' ').next().map(str::to_owned))
            .collect()
    };
    wait_for("both halves started", || pids().len() == 2);
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: a signal to our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    // Gone, or a zombie until its new parent reaps it. The budgets (a
    // minute each, against ten of sleep) only catch a half left running:
    // this test runs in the CPU-bound half, at nice 19.
    let alive = |pid: &String| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    wait_for("no half outlived the runner", || !pids().iter().any(alive));
    let mut stdout = child.stdout.take().expect("piped");
    let status = child.wait().expect("the runner ends");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut text).expect("its output");
    assert_eq!(status.code(), Some(143), "{text}");
    assert!(
        text.contains("interrupted; the CPU-bound tests' output so far:")
            && text.contains("output of --exact cli::seeds::s codecheck::to_live::x check::y"),
        "{text}"
    );
}
