//! One test per bad-input defect of issue 18: each feeds the input that used
//! to panic, hang or pass silently, and asserts the exit code (2: bad input)
//! and a message that names the place and what was expected. Next to each
//! refusal, the nearest valid input is accepted, so a test cannot pass by
//! refusing everything.

use crate::common;

use std::path::Path;

use fencesim::scenario::{self, limits};

const BASE: &str = "scenarios/article/gc-pause-fenced-cas.toml";

fn base_text() -> String {
    std::fs::read_to_string(common::root().join(BASE)).expect("bundled scenario")
}

fn parse_err(text: &str) -> String {
    scenario::parse(text, "t.toml")
        .expect_err("must be refused")
        .to_string()
}

/// `fencesim ARGS` in the repository root: exit code, stdout, stderr.
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = common::fencesim(args);
    let code = out.status.code().expect("exited, not killed");
    (code, common::stdout(&out), common::stderr(&out))
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path.display().to_string()
}

#[test]
fn every_duration_beyond_one_year_is_refused_at_its_line_and_column() {
    let text = base_text();
    let max = limits::DURATION_MAX_MS;
    let at_limit = text.replace("max_time_ms = 60_000", &format!("max_time_ms = {max}"));
    scenario::parse(&at_limit, "t.toml").expect("one year is allowed");
    for (from, field) in [
        ("max_time_ms = 60_000", "max_time_ms"),
        ("ttl_ms = 10_000", "ttl_ms"),
        ("retry_ms = 500", "retry_ms"),
        ("work_ms = 100", "work_ms"),
        ("start_ms = 1_000", "start_ms"),
    ] {
        let bad = text.replace(from, &format!("{field} = {}", max + 1));
        let e = parse_err(&bad);
        assert!(
            e.starts_with("t.toml:")
                && e.contains("is out of range; expected whole milliseconds from 0 to 31536000000"),
            "{field}: {e}"
        );
        let line = bad
            .lines()
            .position(|l| l.starts_with(&format!("{field} = {}", max + 1)))
            .unwrap()
            + 1;
        assert!(e.starts_with(&format!("t.toml:{line}:")), "{field}: {e}");
    }
    // i64::MAX milliseconds used to overflow converting to nanoseconds.
    let e = parse_err(&text.replace("ttl_ms = 10_000", "ttl_ms = 9223372036854775807"));
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn drift_and_offsets_have_ranges_checked_at_load() {
    let text = base_text() + "\n[clock.\"worker/A\"]\ndrift_ppm = DRIFT\noffset_ms = OFFSET\n";
    let with = |drift: i64, offset: i64| {
        text.replace("DRIFT", &drift.to_string())
            .replace("OFFSET", &offset.to_string())
    };
    scenario::parse(&with(limits::DRIFT_PPM_MIN, 5), "t.toml").expect("slowest clock allowed");
    scenario::parse(&with(limits::DRIFT_PPM_MAX, -5), "t.toml").expect("fastest clock allowed");
    for bad in [
        with(i64::MAX, 0),
        with(limits::DRIFT_PPM_MIN - 1, 0),
        with(-999_999, 0),
    ] {
        let e = parse_err(&bad);
        assert!(
            e.contains("parts per million from -900000 to 1000000"),
            "{e}"
        );
    }
    let e = parse_err(&with(0, i64::MIN));
    assert!(e.contains("one year either way"), "{e}");
}

#[test]
fn an_extreme_drift_that_used_to_hang_now_runs_to_completion() {
    // The extreme the limits allow, on a scenario whose timers all run on that clock.
    let text = base_text()
        + &format!(
            "\n[clock.\"worker/A\"]\ndrift_ppm = {}\n",
            limits::DRIFT_PPM_MIN
        );
    let s = scenario::parse(&text, "t.toml").expect("valid");
    let out = fencesim::sim::run(&s.options, 1, false);
    assert!(out.end_ns <= s.options.max_time_ns);
}

#[test]
fn a_very_long_name_is_refused_and_the_table_survives_long_names() {
    let text = base_text();
    let long = "x".repeat(64 * 1024);
    let e = parse_err(&text.replace(
        "name = \"gc-pause-fenced-cas\"",
        &format!("name = \"{long}\""),
    ));
    assert!(
        e.starts_with("t.toml:2:8: name is too long; expected at most 200 characters"),
        "{}",
        &e[..100]
    );
    let ok = "y".repeat(limits::NAME_MAX_CHARS);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "long.toml",
        text.replace(
            "name = \"gc-pause-fenced-cas\"",
            &format!("name = \"{ok}\""),
        ),
    );
    let (code, out, err) = cli(&["run", &file, "--seeds", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&ok), "{out}");
}

#[test]
fn the_worker_limit_is_checked_before_duplicate_names_and_fast() {
    let mut text = base_text();
    for i in 0..200_000 {
        text.push_str(&format!("[[worker]]\nname = \"w{i}\"\n"));
    }
    let started = std::time::Instant::now();
    let e = parse_err(&text);
    assert!(e.contains("at most 62 workers are supported"), "{e}");
    // Not a timing assertion on speed, a guard against the old quadratic hour.
    assert!(started.elapsed().as_secs() < 60);
    let dup = base_text() + "[[worker]]\nname = \"A\"\n";
    assert!(parse_err(&dup).contains("duplicate worker name \"A\""));
}

#[test]
fn seeds_and_seed_start_that_run_nothing_or_overflow_are_refused_in_the_file() {
    let text = base_text();
    let e = parse_err(&text.replace("seeds = 200", "seeds = 0"));
    assert!(e.contains("seeds must be from 1 to"), "{e}");
    // TOML integers stop at 2^63 - 1, so a file's range cannot pass 2^64;
    // a larger seed_start is refused where it is written.
    let e = parse_err(&text.replace(
        "seeds = 200",
        "seeds = 200\nseed_start = 18446744073709551610",
    ));
    assert!(e.starts_with("t.toml:11:14: "), "{e}");
    let s = scenario::parse(
        &text.replace("seeds = 200", "seeds = 5\nseed_start = 9223372036854775807"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.seeds.end - s.seeds.start, 5);
}

#[test]
fn cli_seeds_zero_and_truncated_ranges_exit_2_for_run_validate_and_tradeoff() {
    let (code, _, err) = cli(&["run", BASE, "--seeds", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--seeds 0: expected from 1 to"), "{err}");
    let (code, _, err) = cli(&["run", BASE, "--seed-start", "18446744073709551610"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("(only 5 fit)"), "{err}");
    let (code, _, err) = cli(&[
        "run",
        BASE,
        "--seed-start",
        "18446744073709551610",
        "--seeds",
        "5",
    ]);
    assert_eq!(code, 0, "the five seeds that fit run: {err}");
    let (code, _, err) = cli(&["validate", "--node", "worker=true", BASE, "--seeds", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--seeds 0"), "{err}");
    let (code, _, err) = cli(&[
        "tradeoff",
        "scenarios/tradeoff/ttl-tradeoff.toml",
        "--seeds",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn unwritable_output_paths_fail_before_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    // Below a regular file: unwritable even for root.
    let blocked = write(dir.path(), "file", "") + "/sub/out";
    for flag in ["--junit", "--metrics", "--report"] {
        let (code, out, err) = cli(&["run", BASE, flag, &blocked]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.contains(flag) && err.contains("expected a writable"),
            "{flag}: {err}"
        );
        assert!(
            !out.contains("suite digest"),
            "{flag}: the sweep must not have run"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("j.xml").display().to_string();
    let (code, _, err) = cli(&["run", BASE, "--seeds", "2", "--junit", &junit]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&junit)
        .unwrap()
        .contains("<testsuite"));
}

#[test]
fn tradeoff_refuses_an_unwritable_report_before_its_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = write(dir.path(), "file", "") + "/sub/out";
    let (code, out, err) = cli(&[
        "tradeoff",
        BASE,
        "--ttls-ms",
        "1000,2000",
        "--report",
        &blocked,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--report") && err.contains("expected a writable"),
        "{err}"
    );
    assert!(
        !out.contains("TTL trade-off"),
        "the sweep must not have run: {out}"
    );
}

#[test]
fn jobs_are_capped_with_a_note() {
    let (code, out, err) = cli(&["run", BASE, "--seeds", "2", "--jobs", "100000"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--jobs 100000 capped at 256"), "{err}");
    assert!(out.contains("jobs 256"), "{out}");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.toml");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let fifo = fifo.display().to_string();
    for args in [
        vec!["run", fifo.as_str()],
        vec!["check", fifo.as_str()],
        vec!["check-history", fifo.as_str()],
    ] {
        let (code, _, err) = cli(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("not a regular file (a FIFO)"),
            "{args:?}: {err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn symlink_loops_walk_each_real_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("s");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("a.toml"), base_text()).unwrap();
    std::os::unix::fs::symlink(".", sub.join("self")).unwrap();
    std::os::unix::fs::symlink("..", sub.join("up")).unwrap();
    std::os::unix::fs::symlink("a.toml", sub.join("b.toml")).unwrap();
    let files = scenario::collect(&[dir.path().to_path_buf()]).expect("walks");
    assert_eq!(files, vec![sub.join("a.toml")]);
}

#[test]
fn invalid_utf8_is_located_in_all_three_formats() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "s.toml",
        b"schema_version = 1\nname = \"a\xffb\"\n",
    );
    let (code, _, err) = cli(&["run", &s]);
    assert_eq!(code, 2);
    assert!(
        err.contains("s.toml:2:10: invalid UTF-8 (byte 0xff)"),
        "{err}"
    );
    let m = write(dir.path(), "m.toml", b"schema_version = 1\n\n  \xc3(\n");
    let (code, _, err) = cli(&["check", &m]);
    assert_eq!(code, 2);
    assert!(
        err.contains("m.toml:3:3: invalid UTF-8 (byte 0xc3)"),
        "{err}"
    );
    let h = write(dir.path(), "h.jsonl", b"{\"a\":1}\n{\"b\xfe\n");
    let (code, _, err) = cli(&["check-history", &h]);
    assert_eq!(code, 2);
    assert!(
        err.contains("h.jsonl:2:4: invalid UTF-8 (byte 0xfe)"),
        "{err}"
    );
}

#[test]
fn a_key_without_a_value_at_the_end_of_the_file_says_what_was_expected() {
    let e = parse_err("schema_version = 1\nname =");
    assert!(
        e.starts_with("t.toml:2:7: unexpected end of the file; expected a value"),
        "{e}"
    );
}

#[test]
fn a_model_spec_given_to_run_is_described_without_rust_type_names() {
    let (code, _, err) = cli(&["run", "models/consensus-generation.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected a [protocol] table"), "{err}");
    assert!(!err.contains("struct") && !err.contains("Section"), "{err}");
    let e = parse_err(&base_text().replace("seeds = 200", "seeds = -1"));
    assert!(
        !e.contains("u64") && e.contains("expected a whole number"),
        "{e}"
    );
}

#[test]
fn history_errors_show_big_numbers_as_written_and_the_position_once() {
    let dir = tempfile::tempdir().unwrap();
    let h = write(
        dir.path(),
        "h.jsonl",
        "\u{feff}{\"schema_version\":1,\"seq\":18446744073709551616,\"t_true_ns\":0}\n",
    );
    let (code, _, err) = cli(&["check-history", &h]);
    assert_eq!(code, 2);
    assert!(err.contains("h.jsonl:1:"), "{err}");
    assert!(
        err.contains("number 18446744073709551616 is out of range"),
        "{err}"
    );
    assert!(!err.contains(" at line "), "{err}");
}

#[test]
fn merge_refuses_absurd_shard_files_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |i: u32| {
        let out = common::fencesim(&[
            "run",
            BASE,
            "--seeds",
            "4",
            "--format",
            "json",
            "--shard",
            &format!("{i}/2"),
        ]);
        common::stdout(&out)
    };
    let (a, b) = (shard(0), shard(1));
    let fa = write(dir.path(), "a.json", &a);
    let fb = write(dir.path(), "b.json", &b);
    let (code, _, err) = cli(&["merge", &fa, &fb]);
    assert_eq!(code, 0, "{err}");
    let absurd_count = a.replacen("\"count\": 2", "\"count\": 18446744073709551615", 1);
    assert_ne!(
        absurd_count, a,
        "the shard count field is where the test expects it"
    );
    let fx = write(dir.path(), "x.json", absurd_count);
    let (code, _, err) = cli(&["merge", &fx, &fb]);
    assert_eq!(code, 2, "{err}");
    let absurd_seeds = a.replacen("\"seeds\": 2,", "\"seeds\": 18446744073709551615,", 1);
    assert_ne!(
        absurd_seeds, a,
        "the seeds field is where the test expects it"
    );
    let fy = write(dir.path(), "y.json", absurd_seeds);
    let (code, _, err) = cli(&["merge", &fy, &fb]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A 1 ms renewal for a year: billions of events without the event budget.
fn a_year_of_one_ms_renewals() -> String {
    base_text()
        .replace("max_time_ms = 60_000", "max_time_ms = 31536000000")
        .replace("work_ms = 100", "work_ms = 31536000000")
        .replace(
            "kind = \"fenced-cas\"",
            "kind = \"fenced-cas\"\nrenew_every_ms = 1",
        )
}

#[test]
fn a_run_that_would_outgrow_memory_stops_at_the_event_budget() {
    let text = a_year_of_one_ms_renewals();
    let s = scenario::parse(&text, "t.toml").expect("valid");
    let out = fencesim::sim::run(&s.options, 1, false);
    assert!(out.hit_event_budget && !out.hit_max_time);
    assert_eq!(out.events, fencesim::sim::EVENTS_MAX);
    let normal = fencesim::sim::run(
        &scenario::parse(&base_text(), "t.toml").unwrap().options,
        1,
        false,
    );
    assert!(!normal.hit_event_budget && normal.events < fencesim::sim::EVENTS_MAX / 100);
}

#[test]
fn a_sweep_says_which_seeds_stopped_at_the_event_budget() {
    let dir = tempfile::tempdir().unwrap();
    let text = a_year_of_one_ms_renewals();
    let file = write(dir.path(), "busy.toml", text);
    let (code, out, err) = cli(&["run", &file, "--seeds", "2", "--jobs", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("2 seeds stopped at the event budget of 1000000 events per run"),
        "{out}"
    );
    let (_, out, err) = cli(&[
        "run", &file, "--seeds", "2", "--jobs", "1", "--format", "json",
    ]);
    assert!(out.contains("\"seeds_at_event_budget\": 2"), "{out}{err}");
}

/// The limits' argument, tested: every protocol, with every duration at the
/// one-year maximum at once, the slowest and fastest clocks, the largest
/// offsets and jumps, runs a seed without overflowing anywhere (simulator,
/// network, clocks, recorder, protocol set-up and timers).
#[test]
fn every_protocol_runs_with_every_value_at_its_limit() {
    let year = limits::DURATION_MAX_MS;
    let mut ran = Vec::new();
    for kind in fencesim::protocol::ProtocolKind::ALL {
        for (drift_a, drift_b) in [
            (limits::DRIFT_PPM_MIN, limits::DRIFT_PPM_MAX),
            (limits::DRIFT_PPM_MAX, limits::DRIFT_PPM_MIN),
        ] {
            let text = format!(
                r#"schema_version = 1
name = "limits"
seeds = 1
max_time_ms = {year}
[protocol]
kind = "{id}"
[lease]
ttl_ms = {year}
[workload]
retry_ms = {year}
request_timeout_ms = {year}
work_ms = {year}
think_ms = {year}
[[worker]]
name = "A"
start_ms = {year}
[[worker]]
name = "B"
[network]
latency_min_ms = {year}
latency_max_ms = {year}
delay_probability = 1.0
delay_max_ms = {year}
duplicate_probability = 1.0
[clock."worker/A"]
offset_ms = {year}
drift_ppm = {drift_a}
jumps = [{{ at_ms = {year}, by_ms = {year} }}, {{ at_ms = 0, by_ms = -{year} }}]
[clock."worker/B"]
offset_ms = -{year}
drift_ppm = {drift_b}
[[fault]]
kind = "pause"
node = "worker/B"
at_ms = {year}
duration_ms = {year}
[[fault]]
kind = "crash"
node = "resource/0"
at_ms = 1
restart_after_ms = {year}
[random]
window_ms = {year}
pause_probability = 1.0
pause_min_ms = {year}
pause_max_ms = {year}
partition_probability = 1.0
partition_min_ms = {year}
partition_max_ms = {year}
[expect]
"#,
                id = kind.id()
            );
            let s = match scenario::parse(&text, "limits.toml") {
                Ok(s) => s,
                // Some protocols take other shapes (two nodes, no coordinator): still located.
                Err(e) => {
                    assert!(
                        e.to_string().starts_with("limits.toml:"),
                        "{}: {e}",
                        kind.id()
                    );
                    eprintln!("{}: {e}", kind.id());
                    continue;
                }
            };
            let out = fencesim::sim::run(&s.options, 0, false);
            assert!(out.end_ns <= s.options.max_time_ns, "{}", kind.id());
            let _ = fencesim::check::check(&out.history);
            ran.push(kind.id());
        }
    }
    assert!(ran.len() >= 2 * 16, "only {} ran: {ran:?}", ran.len());
}

/// Found by the fuzzer: year-long latencies keep a million messages in
/// flight; the pending-event queue must stay fast (it ran 13 minutes) and
/// the run must end at the event budget.
#[test]
fn year_long_latencies_end_at_the_event_budget_not_after_minutes() {
    let text = std::fs::read_to_string(common::scenario_path("alternatives/cache-lease.toml"))
        .expect("bundled scenario")
        .replace("max_time_ms = 60_000", "max_time_ms = 31536000000")
        .replace("latency_max_ms = 5", "latency_max_ms = 31536000000");
    let s = scenario::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let out = fencesim::sim::run(&s.options, 0, false);
    assert!(out.hit_event_budget, "events {}", out.events);
}
