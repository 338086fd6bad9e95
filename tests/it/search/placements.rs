//! `fencesim search`: every placement of up to two anchored faults finds
//! the bugs random faults find once in thousands of seeds, and is clean on
//! the safe twin — the same harness, the same generic scenario, only the
//! protocol changed. Also through `validate` processes (Python).

use std::path::{Path, PathBuf};

use fencesim::scenario::{self, Scenario};
use fencesim::search::{self, Config, SearchResult};
use fencesim::sim;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const GENERIC: &str = "scenarios/random/random-faults-fenced-cas.toml";

/// The generic random-faults scenario with only the protocol changed.
fn generic_source(protocol: &str) -> String {
    let source = std::fs::read_to_string(root().join(GENERIC)).expect("bundled scenario");
    source.replace("kind = \"fenced-cas\"", &format!("kind = \"{protocol}\""))
}

fn generic(protocol: &str) -> Scenario {
    scenario::parse(&generic_source(protocol), GENERIC).unwrap_or_else(|e| panic!("{e}"))
}

fn search_k(s: &Scenario, k: usize, jobs: usize) -> SearchResult {
    let cfg = Config {
        max_faults: k,
        seed: 0,
        jobs,
    };
    search::search(s, &cfg, &search::builtin, &|| {}).expect("built-in nodes never error")
}

/// The first violating execution, written out as a scripted scenario, shows
/// the same violation when run as an ordinary scenario.
fn assert_replays(protocol: &str, r: &SearchResult, kind: &str) {
    let found = r
        .found
        .iter()
        .find(|f| f.kind == kind)
        .unwrap_or_else(|| panic!("{protocol}: no {kind} in {:?}", r.found));
    assert!(!found.placements.is_empty() && found.placements.len() <= 2);
    let s = generic(protocol);
    let base = search::fault_free(&s.options);
    let text = scenario::emit::scripted(&generic_source(protocol), &base, &found.script, 0)
        .expect("emits");
    let scripted =
        scenario::parse(&text, "scripted.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(scripted.options.random.pause_probability, 0.0);
    let out = sim::run(&scripted.options, 0, false);
    let report = fencesim::check::check(&out.history);
    let kinds: Vec<&str> = report.kinds().map(|k| k.name()).collect();
    assert!(
        kinds.contains(&kind),
        "{protocol}: replayed {kinds:?}\n{text}"
    );
}

#[test]
fn search_finds_the_stale_write_of_fenced_check_then_write_with_two_faults() {
    let s = generic("fenced-check-then-write");
    let one = search_k(&s, 1, 2);
    assert!(
        one.found.iter().all(|f| f.kind != "stale_write"),
        "one fault does not suffice: {:?}",
        one.found
    );
    let two = search_k(&s, 2, 2);
    assert_replays("fenced-check-then-write", &two, "stale_write");
}

#[test]
fn search_finds_the_stale_write_and_token_regression_of_incr_beside_lease() {
    let r = search_k(&generic("incr-beside-lease"), 2, 2);
    assert_replays("incr-beside-lease", &r, "stale_write");
    assert_replays("incr-beside-lease", &r, "token_order");
}

#[test]
fn search_is_clean_on_fenced_cas_over_thousands_of_distinct_executions() {
    let r = search_k(&generic("fenced-cas"), 2, 2);
    assert!(r.is_clean(), "{:?}", r.found);
    assert!(
        r.distinct > 1_000,
        "{}",
        fencesim::report::search::coverage(&r, 2)
    );
    assert_eq!(r.levels.len(), 3);
    assert_eq!(r.runs, r.levels.iter().map(|l| l.0).sum::<u64>());
    // The fence was tested: lost_update (tolerated by the scenario) shows.
    assert!(r.tolerated.contains(&"lost_update"), "{:?}", r.tolerated);
}

#[test]
fn search_results_do_not_depend_on_the_job_count() {
    let s = generic("fenced-check-then-write");
    let (a, b) = (search_k(&s, 2, 1), search_k(&s, 2, 2));
    assert_eq!((a.runs, a.distinct), (b.runs, b.distinct));
    let first = |r: &SearchResult| r.found.iter().map(|f| (f.kind, f.run)).collect::<Vec<_>>();
    assert_eq!(first(&a), first(&b));
}

fn python(script: &str) -> String {
    format!(
        "python3 {}",
        root().join("examples/python").join(script).display()
    )
}

/// Two workers, a store that may crash (restart 100 ms) and workers that
/// may pause: the vocabulary of "crash the store right after an ack".
fn crash_after_ack_scenario(dir: &Path) -> PathBuf {
    let text = r#"schema_version = 1
name = "search-store-crash"
max_time_ms = 40_000

[protocol]
kind = "fenced-cas"

[lease]
ttl_ms = 10_000

[workload]
retry_ms = 200
work_ms = 10
request_timeout_ms = 1_000

[[worker]]
name = "A"

[[worker]]
name = "B"
start_ms = 1_000

[random]
window_ms = 1
pause_probability = 0.5
pause_min_ms = 12_000
pause_max_ms = 12_000
pause_nodes = ["worker/B"]
crash_probability = 0.1
restart_min_ms = 100
restart_max_ms = 100
crash_nodes = ["resource/0"]

[expect]
"#;
    let path = dir.join("search-store-crash.toml");
    std::fs::write(&path, text).expect("write scenario");
    path
}

fn search_cli(script: &str, dir: &Path) -> (i32, String) {
    let scenario = crash_after_ack_scenario(dir);
    crate::common::run_text(
        crate::common::fencesim_command()
            .args(["search", "--faults", "1", "--jobs", "2", "--out"])
            .arg(dir)
            .arg("--node")
            .arg(format!("resource={}", python(script)))
            .arg(&scenario),
    )
}

#[test]
fn search_through_validate_finds_the_python_store_that_acks_before_fsync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, text) = search_cli("fencelock_ack_before_fsync.py", dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("crash resource/0 after resource/0:write_accepted#1"),
        "{text}"
    );
    assert!(text.contains("fencelock_ack_before_fsync.py"), "{text}");
    let written = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().contains("-search-"))
        })
        .count();
    assert!(text.contains("VIOLATION acked_write_lost"), "{text}");
    assert_eq!(
        written,
        text.matches("\nVIOLATION ").count(),
        "one scripted scenario per violation kind: {text}"
    );
}

#[test]
fn search_through_validate_is_clean_on_the_correct_python_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, text) = search_cli("fencelock.py", dir.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("verdict: CLEAN"), "{text}");
    assert!(
        text.contains("every placement of <=1 faults tried"),
        "{text}"
    );
}

/// The generic scenario with clock faults as its only vocabulary: the lock
/// server's clock drifts (so clocks are in play), nothing else strikes.
fn clocks_only_source(protocol_lines: &str) -> String {
    let mut s = std::fs::read_to_string(root().join(GENERIC)).expect("bundled scenario");
    s = s.replace("kind = \"fenced-cas\"", protocol_lines);
    for (from, to) in [
        ("loss_probability = 0.02\n", ""),
        ("delay_probability = 0.03\n", ""),
        ("delay_max_ms = 12_000\n", ""),
        ("pause_probability = 0.5", "pause_probability = 0.0"),
        ("crash_probability = 0.1", "crash_probability = 0.0"),
        ("partition_probability = 0.2", "partition_probability = 0.0"),
        ("allow = [\"lost_update\"]", "allow = []"),
        (
            "[random]",
            "[clock.\"coord/0\"]\ndrift_ppm = 100\n\n[random]",
        ),
    ] {
        assert!(s.contains(from), "{from:?} not in {GENERIC}");
        s = s.replacen(from, to, 1);
    }
    s
}

#[test]
fn search_steps_the_lock_servers_wall_clock_right_after_a_grant_and_redis_loses_an_update() {
    // Redis keeps key expiry on the wall clock: an NTP step forward right
    // after a grant expires the key early, a second worker takes the lock
    // while the first still holds it. No pause, no lost packet.
    let source = clocks_only_source("kind = \"redis-set-nx\"");
    let s = scenario::parse(&source, "clocks.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = search_k(&s, 1, 2);
    let found = r
        .found
        .iter()
        .find(|f| f.kind == "lost_update")
        .unwrap_or_else(|| panic!("no lost_update: {:?}", r.found));
    assert_eq!(found.placements.len(), 1);
    let p = &found.placements[0];
    assert_eq!(p.strike.name(), "clock-forward");
    assert!(p
        .describe(&s.options)
        .contains("coord/0 after coord/0:grant_issued"));
    // Written out, the placement is a `clock_jump` fault that replays.
    let base = search::fault_free(&s.options);
    let text = scenario::emit::scripted(&source, &base, &found.script, 0).expect("emits");
    assert!(text.contains("kind = \"clock_jump\""), "{text}");
    let scripted =
        scenario::parse(&text, "scripted.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let out = sim::run(&scripted.options, 0, false);
    let report = fencesim::check::check(&out.history);
    assert!(report.kinds().any(|k| k.name() == "lost_update"), "{text}");
}

#[test]
fn the_same_clock_steps_cannot_break_fenced_cas_with_fenced_reads() {
    let source = clocks_only_source("kind = \"fenced-cas\"\nfence_reads = true");
    let s = scenario::parse(&source, "clocks.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = search_k(&s, 2, 2);
    assert!(r.is_clean(), "{:?}", r.found);
    assert!(
        r.distinct > 100,
        "{}",
        fencesim::report::search::coverage(&r, 2)
    );
}
