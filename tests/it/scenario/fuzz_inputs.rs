//! Mutation fuzzing of every input format and of the command line, bounded
//! so it runs in `cargo test --release` (about a minute on two cores).
//!
//! proptest mutates the bundled files — scenarios, model specs, and
//! histories written by runs of bundled scenarios — with byte flips,
//! insertions, deletions, truncations, duplicated lines and numbers replaced
//! by extremes (0, -1, 2^63, 2^64, one year and one past it, floats,
//! strings). Every mutant is parsed in-process; valid scenarios are also
//! run for one seed. The properties, for every input:
//! - no panic (exit 101 in the binary) and no hang: each input finishes
//!   within a generous time budget, and the event budget caps memory;
//! - a refusal names file:line:column and uses the format's words, not
//!   Rust's (`u64`, `struct ProtocolSection`, "wanted exactly 1 element").
//!
//! Every parsed history is also checked, by both checkers (`check::check`
//! and the second checker, `oracle`), and input validation
//! (`history::validate`) runs on it: none of them may panic on any input.
//!
//! The command line is fuzzed twice: a fixed list of known misuses, and
//! argument lists proptest draws from a vocabulary of subcommands, flags and
//! extreme values. Each invocation is a real process under an address-space
//! cap (`RLIMIT_AS`, 4 GiB) and a time budget, and must exit 0, 1 or 2
//! (never 101 or 3), never panic, and refuse in words a user knows.
//!
//! Longer sessions: `FENCESIM_FUZZ_CASES_FACTOR=20 cargo test --release
//! --test it scenario::fuzz_inputs -- --nocapture` multiplies every target's case count
//! (`FENCESIM_FUZZ_CASES=N` sets it outright); each target prints its count
//! and time. A failure is shrunk by proptest and printed with the input.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestRunner};

/// Per-input wall-clock ceiling: parsing takes microseconds and the event
/// budget bounds a run to about a second; this only catches hangs.
const INPUT_BUDGET: Duration = Duration::from_secs(60);

/// Words that are Rust's, not the file format's.
const INTERNAL: [&str; 12] = [
    "struct ",
    "Section",
    "ScenarioFile",
    "RawSpec",
    "RawExpect",
    "Record",
    "wanted exactly",
    " u64",
    " u32",
    " i64",
    " u8",
    " usize",
];

const EXTREMES: [&str; 22] = [
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "31536000000",
    "31536000001",
    "1000000",
    "-900000",
    "-999999",
    "4294967296",
    "65536",
    "1e300",
    "-0.5",
    "nan",
    "inf",
    "\"x\"",
    "[]",
    "{}",
    "true",
];

#[derive(Clone, Debug)]
enum Mutation {
    Flip(Index, u8),
    Insert(Index, Vec<u8>),
    Delete(Index, usize),
    Truncate(Index),
    DuplicateLine(Index),
    Number(Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1usize..40).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<Index>().prop_map(Mutation::Truncate),
        any::<Index>().prop_map(Mutation::DuplicateLine),
        (any::<Index>(), 0..EXTREMES.len()).prop_map(|(i, e)| Mutation::Number(i, e)),
        (any::<Index>(), 0..EXTREMES.len()).prop_map(|(i, e)| Mutation::Number(i, e)),
        (any::<Index>(), 0..EXTREMES.len()).prop_map(|(i, e)| Mutation::Number(i, e)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len) };
    match m {
        Mutation::Flip(i, b) if !bytes.is_empty() => {
            let k = at(i, bytes.len());
            bytes[k] ^= b | 1;
        }
        Mutation::Flip(..) => {}
        Mutation::Insert(i, b) => {
            let k = at(i, bytes.len() + 1);
            bytes.splice(k..k, b.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let k = at(i, bytes.len());
            let end = (k + n).min(bytes.len());
            bytes.drain(k..end);
        }
        Mutation::Truncate(i) => {
            let k = at(i, bytes.len());
            bytes.truncate(k);
        }
        Mutation::DuplicateLine(i) => {
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    bytes
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(k, _)| k + 1),
                )
                .filter(|&k| k < bytes.len())
                .collect();
            if let Some(&start) = starts.get(at(i, starts.len())) {
                let end = bytes[start..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(bytes.len(), |p| start + p + 1);
                let line = bytes[start..end].to_vec();
                bytes.splice(end..end, line);
            }
        }
        Mutation::Number(i, e) => {
            // Replace the i-th run of digits (with its sign, '_' separators) by an extreme.
            let mut runs = Vec::new();
            let mut k = 0;
            while k < bytes.len() {
                if bytes[k].is_ascii_digit() {
                    let start = if k > 0 && bytes[k - 1] == b'-' {
                        k - 1
                    } else {
                        k
                    };
                    while k < bytes.len() && (bytes[k].is_ascii_digit() || bytes[k] == b'_') {
                        k += 1;
                    }
                    runs.push(start..k);
                } else {
                    k += 1;
                }
            }
            if let Some(r) = runs.get(at(i, runs.len())).cloned() {
                bytes.splice(r, EXTREMES[*e].bytes());
            }
        }
    }
}

fn cases(default: u32) -> u32 {
    let factor: u32 = std::env::var("FENCESIM_FUZZ_CASES_FACTOR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    std::env::var("FENCESIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .saturating_mul(factor)
}

fn toml_files(dir: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let files = fencesim::scenario::collect(&[common::root().join(dir)]).expect("bundled files");
    files
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).expect("readable");
            (f, bytes)
        })
        .collect()
}

/// Checks a refusal's message: located, and in the format's words.
fn assert_plain(file: &str, located: bool, message: &str, whole: &str) {
    assert!(located, "no line:column in {whole:?}");
    assert!(!message.trim().is_empty(), "empty message in {whole:?}");
    for word in INTERNAL {
        assert!(
            !message.contains(word),
            "internal word {word:?} in {whole:?}"
        );
    }
    assert!(
        whole.starts_with(file),
        "{whole:?} does not start with {file}"
    );
}

/// Runs `f` on `input`, failing on a panic or on running past the budget.
fn guarded(what: &str, input: &[u8], f: impl FnOnce()) {
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let elapsed = started.elapsed();
    assert!(
        outcome.is_ok(),
        "{what} panicked on input:\n{}",
        String::from_utf8_lossy(input)
    );
    assert!(
        elapsed < INPUT_BUDGET,
        "{what} took {elapsed:?} on input:\n{}",
        String::from_utf8_lossy(input)
    );
}

fn run_target(name: &str, default_cases: u32, bases: &[Vec<u8>], check: impl Fn(&[u8])) {
    let mut runner = TestRunner::new(Config {
        cases: cases(default_cases),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (0..bases.len(), prop::collection::vec(mutation(), 1..4));
    let started = Instant::now();
    let result = runner.run(&strategy, |(base, muts)| {
        let mut bytes = bases[base].clone();
        for m in &muts {
            apply(&mut bytes, m);
        }
        check(&bytes);
        Ok(())
    });
    eprintln!(
        "fuzz {name}: {} cases in {:?}",
        cases(default_cases),
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

fn scenario_input(bytes: &[u8]) {
    guarded("scenario", bytes, || {
        let text = match fencesim::scenario::source::decode(bytes.to_vec(), "f.toml") {
            Ok(text) => text,
            Err(e) => {
                let shown = e.to_string();
                assert!(
                    shown.starts_with("f.toml:") && shown.contains("invalid UTF-8"),
                    "{shown}"
                );
                return;
            }
        };
        match fencesim::scenario::parse(&text, "f.toml") {
            Ok(s) => {
                // One seed, without a trace: bounded by max_time and the event budget.
                let out = fencesim::sim::run(&s.options, s.seeds.start, false);
                assert!(out.events <= fencesim::sim::EVENTS_MAX);
                let _ = fencesim::check::check(&out.history);
            }
            Err(e) => assert_plain(
                "f.toml",
                e.line >= 1 && e.column >= 1,
                &e.message,
                &e.to_string(),
            ),
        }
    });
}

#[test]
fn mutated_scenarios_never_panic_hang_or_leak_rust_words() {
    let _heavy = crate::common::heavy();
    let bases: Vec<Vec<u8>> = toml_files("scenarios")
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert!(bases.len() >= 40, "all bundled scenarios are seeds");
    run_target("scenarios", 40_000, &bases, scenario_input);
}

/// Valid mutated specs model-checked so far, and the most one run checks.
static CHECKED_SPECS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const CHECKED_SPECS_MAX: usize = 300;

#[test]
fn mutated_model_specs_never_panic_or_leak_rust_words() {
    let _heavy = crate::common::heavy();
    let bases: Vec<Vec<u8>> = toml_files("models").into_iter().map(|(_, b)| b).collect();
    run_target("model specs", 10_000, &bases, |bytes| {
        guarded("model spec", bytes, || {
            let Ok(text) = String::from_utf8(bytes.to_vec()) else {
                return; // located by `source::decode`, as for scenarios
            };
            match fencesim::model::parse(std::path::Path::new("m.toml"), "m", &text) {
                // A valid mutant is also model-checked when its search is
                // small (most are: the bundled bounds, a number changed),
                // up to a fixed number per run to bound the target's time.
                Ok(spec) => {
                    if spec.estimated_states() < 20_000.0
                        && CHECKED_SPECS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                            < CHECKED_SPECS_MAX
                    {
                        let options = fencesim::model::CheckOptions {
                            threads: 1,
                            ..Default::default()
                        };
                        let report = fencesim::model::check(&spec, &options);
                        assert!(!report.interrupted);
                    }
                }
                Err(e) => assert_plain(
                    "m.toml",
                    e.line.is_some() && e.column.is_some(),
                    &e.message,
                    &e.to_string(),
                ),
            }
        });
    });
    let checked = CHECKED_SPECS.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "fuzz model specs: {} valid mutants model-checked",
        checked.min(CHECKED_SPECS_MAX)
    );
    assert!(
        checked > 0,
        "no mutant was valid and small: the check path went untested"
    );
}

#[test]
fn mutated_histories_never_panic_or_leak_rust_words() {
    let _heavy = crate::common::heavy();
    // Histories as runs write them: a few bundled scenarios, one seed each.
    let bases: Vec<Vec<u8>> = [
        "article/gc-pause-fenced-cas.toml",
        "article/unsafe-release.toml",
        "real-systems",
    ]
    .iter()
    .flat_map(|p| fencesim::scenario::collect(&[common::scenario_path(p)]).unwrap())
    .take(6)
    .map(|f| {
        let s = common::load(&f);
        let out = fencesim::sim::run(&s.options, 1, false);
        let mut bytes = Vec::new();
        fencesim::history::jsonl::write(&out.history, &mut bytes).unwrap();
        bytes
    })
    .collect();
    run_target("histories", 20_000, &bases, |bytes| {
        guarded("history", bytes, || {
            let text = match fencesim::scenario::source::decode(bytes.to_vec(), "h.jsonl") {
                Ok(text) => text,
                Err(e) => {
                    assert!(e.to_string().starts_with("h.jsonl:"), "{e}");
                    return;
                }
            };
            let read = fencesim::history::jsonl::read(&text, "h.jsonl");
            if let Ok(h) = &read {
                let _ = fencesim::history::validate::validate(h);
                let _ = fencesim::check::check(h);
                let _ = fencesim::oracle::check(h);
            }
            if let Err(e) = read {
                assert_plain(
                    "h.jsonl",
                    e.line >= 1 && e.column >= 1,
                    &e.message,
                    &e.to_string(),
                );
                assert!(!e.message.contains(" at line "), "position twice: {e}");
            }
        });
    });
}

/// A scratch working directory for drawn command lines: the files they name
/// (`scenarios/`, `models/`, `README.md`, `Cargo.toml`) are copies of the
/// repository's, and whatever a drawn `--report`, `--junit` or `--metrics`
/// writes lands here, not in the checkout. Copies, not links: a drawn
/// `--junit README.md` wrote through a link and replaced the repository's
/// README with a JUnit file (and a drawn `--report 0xffffffffffffffff` once
/// left a directory of that name in the repository).
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["scenarios", "models", "README.md", "Cargo.toml"] {
        copy_tree(&common::root().join(name), &dir.path().join(name));
    }
    dir
}

/// Copies a file, or a directory with everything under it.
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("creates the copy's directory");
        for entry in std::fs::read_dir(from).expect("reads the directory") {
            let entry = entry.expect("entry");
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copies the file");
    }
}

/// The bytes of every file the drawn command lines may name, to check that
/// none was written through.
fn named_files_bytes() -> Vec<Vec<u8>> {
    ["README.md", "Cargo.toml"]
        .iter()
        .map(|name| std::fs::read(common::root().join(name)).expect("reads a named file"))
        .collect()
}

/// The repository's top-level entries: a fuzz run must leave them as they were.
fn top_level_entries() -> Vec<std::ffi::OsString> {
    let mut names: Vec<_> = std::fs::read_dir(common::root())
        .expect("reads the repository root")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    names
}

/// Runs the binary in `dir` with `args` under the time budget and an
/// address-space cap; returns its exit code and stderr.
fn fencesim_capped(dir: &std::path::Path, args: &[String]) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = crate::common::fencesim_command();
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 4 << 30,
                rlim_max: 4 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &cap);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawns");
    // Drain stderr on a thread: a chatty child must not block on a full pipe.
    let mut pipe = child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
        err
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fencesim {args:?} ran past 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = reader.join().expect("stderr reader");
    let code = status
        .code()
        .unwrap_or_else(|| panic!("fencesim {args:?} was killed by a signal: {err}"));
    (code, err)
}

/// Argument lists drawn from the command line's vocabulary: a subcommand,
/// then flags with values from the extremes, file paths of every kind, and
/// stray words. Values are chosen so that no valid combination runs long
/// (seed counts stay small), since what is tested is the refusal path.
fn command_line() -> impl Strategy<Value = Vec<String>> {
    const SUBCOMMANDS: [&str; 11] = [
        "run",
        "replay",
        "shrink",
        "check-history",
        "tradeoff",
        "merge",
        "check",
        "explore",
        "list",
        "search",
        "nonsense",
    ];
    const FILES: [&str; 9] = [
        "scenarios/article/gc-pause-fenced-cas.toml",
        "scenarios/article/gc-pause-stale-write.toml",
        "models/fenced-cas.toml",
        "README.md",
        "/dev/null",
        "/",
        "nope.toml",
        "",
        "Cargo.toml",
    ];
    const FLAGS: [&str; 20] = [
        "--seeds",
        "--seed",
        "--seed-start",
        "--jobs",
        "--format",
        "--shard",
        "--report",
        "--junit",
        "--metrics",
        "--max-runs",
        "--kind",
        "--ttls-ms",
        "--threads",
        "--faults",
        "--swarm",
        "--no-trace",
        "--check-determinism",
        "--emit-scenario",
        "--history",
        "--",
    ];
    const VALUES: [&str; 16] = [
        "0",
        "1",
        "2",
        "-1",
        "x",
        "",
        "18446744073709551615",
        "18446744073709551616",
        "0xffffffffffffffff",
        "1/2",
        "3/2",
        "json",
        "text",
        "stale_write",
        "/dev/null/x",
        "99",
    ];
    let word = prop_oneof![
        (0..FLAGS.len()).prop_map(|i| FLAGS[i].to_string()),
        (0..VALUES.len()).prop_map(|i| VALUES[i].to_string()),
        (0..FILES.len()).prop_map(|i| FILES[i].to_string()),
    ];
    (
        0..SUBCOMMANDS.len(),
        0..FILES.len(),
        prop::collection::vec(word, 0..6),
    )
        .prop_map(|(sub, file, rest)| {
            let mut args = vec![SUBCOMMANDS[sub].to_string(), FILES[file].to_string()];
            args.extend(rest);
            // Keep a valid combination short: a sweep of one scenario, few seeds.
            if !args.iter().any(|a| a == "--seeds") {
                args.extend(["--seeds".to_string(), "2".to_string()]);
            }
            args
        })
}

#[test]
fn drawn_command_lines_exit_0_1_or_2_and_refuse_in_plain_words() {
    let _heavy = crate::common::heavy();
    let mut runner = TestRunner::new(Config {
        cases: cases(300),
        failure_persistence: None,
        ..Config::default()
    });
    let started = Instant::now();
    let before = top_level_entries();
    let files_before = named_files_bytes();
    let dir = sandbox();
    let result = runner.run(&command_line(), |args| {
        let (code, err) = fencesim_capped(dir.path(), &args);
        prop_assert!(
            matches!(code, 0..=2),
            "fencesim {args:?} exited {code}: {err}"
        );
        prop_assert!(
            !err.contains("panicked"),
            "fencesim {args:?} panicked: {err}"
        );
        if code == 2 {
            prop_assert!(
                !err.trim().is_empty(),
                "fencesim {args:?}: exit 2 without a word"
            );
            for word in INTERNAL {
                prop_assert!(
                    !err.contains(word),
                    "fencesim {args:?}: internal word {word:?} in {err}"
                );
            }
        }
        Ok(())
    });
    eprintln!(
        "fuzz command lines: {} cases in {:?}",
        cases(300),
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("fuzz command lines: {e}");
    }
    assert_eq!(
        top_level_entries(),
        before,
        "drawn command lines wrote into the repository's root"
    );
    assert!(
        named_files_bytes() == files_before,
        "drawn command lines rewrote the repository's README.md or Cargo.toml"
    );
}

/// Misuse of the command line: bad values, missing files, odd combinations.
#[test]
fn command_line_misuse_exits_0_1_or_2_within_a_time_budget() {
    let _heavy = crate::common::heavy();
    let base = "scenarios/article/gc-pause-fenced-cas.toml";
    let model = "models/fenced-cas.toml";
    let misuse: Vec<Vec<&str>> = vec![
        vec![],
        vec!["run"],
        vec!["run", "nope.toml"],
        vec!["run", "scenarios/article/", "--seeds", "0"],
        vec!["run", base, "--seeds", "-1"],
        vec!["run", base, "--seeds", "18446744073709551616"],
        vec!["run", base, "--seed-start", "0xffffffffffffffff"],
        vec!["run", base, "--seed-start", "0xg"],
        vec!["run", base, "--jobs", "0", "--seeds", "2"],
        vec!["run", base, "--jobs", "1000000", "--seeds", "2"],
        vec!["run", base, "--shard", "3/2"],
        vec![
            "run",
            base,
            "--shard",
            "0/18446744073709551615",
            "--seeds",
            "2",
        ],
        vec!["run", base, "--format", "yaml"],
        vec!["run", base, "--junit", "/dev/null/x", "--seeds", "1"],
        vec!["run", model],
        vec!["run", "models/"],
        vec!["run", "/dev/null"],
        vec!["run", "/"],
        vec!["replay", base, "--seed", "x"],
        vec!["replay", base],
        vec![
            "replay",
            base,
            "--seed",
            "18446744073709551615",
            "--no-trace",
        ],
        vec!["replay", model, "--seed", "1"],
        vec!["shrink", base, "--seed", "1", "--max-runs", "0"],
        vec!["shrink", base, "--seed", "1", "--kind", "nope"],
        vec!["check-history", base],
        vec!["check-history", "/dev/null"],
        vec!["check-history", "nope.jsonl"],
        vec!["tradeoff", base, "--ttls-ms", "0"],
        vec![
            "tradeoff",
            base,
            "--ttls-ms",
            "18446744073709551615",
            "--seeds",
            "1",
        ],
        vec![
            "tradeoff",
            base,
            "--ttls-ms",
            "99999999999999",
            "--seeds",
            "1",
        ],
        vec!["tradeoff", base, "--seeds", "0"],
        vec!["merge", base],
        vec!["merge", "nope.json"],
        vec!["check", base],
        vec!["check", "scenarios/"],
        vec!["check", model, "--threads", "0", "--format", "json"],
        vec!["check", "nope.toml"],
        vec!["explore", base],
        vec!["validate", "--node", "nope", base],
        vec!["validate", "--node", "worker=true", base, "--seeds", "0"],
        vec![
            "validate",
            "--node",
            "worker=true",
            base,
            "--seed-start",
            "18446744073709551615",
        ],
        vec![
            "validate",
            "--node",
            "worker=true",
            base,
            "--step-timeout-ms",
            "0",
        ],
        vec!["list", "extra"],
        vec!["--version"],
        vec!["help", "run"],
        vec!["nonsense"],
    ];
    let dir = sandbox();
    for args in &misuse {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (code, err) = fencesim_capped(dir.path(), &args);
        assert!(
            matches!(code, 0..=2),
            "fencesim {args:?} exited {code}: {err}"
        );
        assert!(
            !err.contains("panicked"),
            "fencesim {args:?} panicked: {err}"
        );
    }
}
