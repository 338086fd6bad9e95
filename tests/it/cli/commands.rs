//! The binary as a user meets it: exit codes, the replay's sections, the
//! history round trip through `check-history`, and a pinned timeline.

use crate::common;

use common::{fencesim, stderr, stdout};

#[test]
fn run_on_the_article_suite_meets_every_expectation_and_exits_zero() {
    let out = fencesim(&["run", "scenarios/article", "--seeds", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("gc-pause-stale-write") && text.contains("ttl-lease-del"));
    assert!(!text.contains("NOT MET"));
}

#[test]
fn unmet_expectation_exits_one_and_prints_the_replay_command() {
    let dir = tempfile::tempdir().unwrap();
    let src =
        std::fs::read_to_string(common::scenario_path("article/gc-pause-fenced-cas.toml")).unwrap();
    // Claim the fenced protocol is unfenced: the expectation cannot be met.
    let lying = src.replace("kind = \"fenced-cas\"", "kind = \"redis-set-nx\"");
    let path = dir.path().join("lying.toml");
    std::fs::write(&path, lying).unwrap();
    let out = fencesim(&["run", path.to_str().unwrap(), "--seeds", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("NOT MET"), "{text}");
    assert!(text.contains("unexpected stale_write in 5 seeds"), "{text}");
    assert!(
        text.contains(&format!(
            "replay: fencesim replay {} --seed 0",
            path.display()
        )),
        "{text}"
    );
}

#[test]
fn malformed_scenario_exits_two_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "schema_version = 1\nname = 3\n").unwrap();
    let out = fencesim(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:2:8: invalid type: integer `3`, expected a string",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn missing_file_and_bad_seed_exit_two() {
    assert_eq!(fencesim(&["run", "no/such/dir"]).status.code(), Some(2));
    let out = fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "seven",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a seed"));
}

#[test]
fn replay_prints_options_timeline_trace_evidence_and_hash_in_that_order() {
    let out = fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "7",
    ]);
    // The scenario expects this stale write: the seed meets its expectation.
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let order = [
        "fencesim 0.",
        "seed 7",
        "protocol        = ttl-lease-del",
        "== timeline",
        "== trace ==",
        "legend:",
        "VIOLATION stale_write",
        "trace hash 792c70c99fecc29a",
    ];
    let mut at = 0;
    for needle in order {
        let found = text[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing or out of order in:\n{text}"));
        at += found;
    }
}

#[test]
fn seeds_are_accepted_in_hex() {
    let dec = stdout(&fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "255",
        "--no-trace",
    ]));
    let hex = stdout(&fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "0xff",
        "--no-trace",
    ]));
    assert_eq!(dec, hex.replace("--seed 0xff", "--seed 255"));
}

#[test]
fn written_history_checks_to_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.jsonl");
    let replay = fencesim(&[
        "replay",
        "scenarios/article/gc-pause-stale-write.toml",
        "--seed",
        "7",
        "--history",
        file.to_str().unwrap(),
    ]);
    let checked = fencesim(&["check-history", file.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1));
    let verdict = |s: &str| {
        s.lines()
            .filter(|l| {
                l.starts_with("VIOLATION") || l.starts_with("    #") || l.starts_with("info:")
            })
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = (verdict(&stdout(&replay)), verdict(&stdout(&checked)));
    assert!(!a.is_empty());
    assert_eq!(a, b);
}

#[test]
fn clean_history_exits_zero_and_broken_history_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.jsonl");
    fencesim(&[
        "replay",
        "scenarios/article/gc-pause-fenced-cas.toml",
        "--seed",
        "1",
        "--history",
        file.to_str().unwrap(),
    ]);
    let ok = fencesim(&["check-history", file.to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(stdout(&ok).contains("no violations"));
    std::fs::write(&file, "{\"schema_version\":1,\"seq\":1}\n").unwrap();
    let bad = fencesim(&["check-history", file.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("h.jsonl:1:"), "{}", stderr(&bad));
}

#[test]
fn emitted_scripted_scenario_replays_the_same_violation_without_random_faults() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scripted.toml");
    let src = "scenarios/random/random-faults-ttl-lease-del.toml";
    let seed = "4"; // a seed whose random faults produce a stale write
    let first = fencesim(&[
        "replay",
        src,
        "--seed",
        seed,
        "--no-trace",
        "--emit-scenario",
        file.to_str().unwrap(),
    ]);
    assert!(
        stdout(&first).contains("VIOLATION stale_write"),
        "{}",
        stdout(&first)
    );
    let scripted = std::fs::read_to_string(&file).unwrap();
    assert!(
        !scripted.contains("[random]") && !scripted.contains("loss_probability"),
        "{scripted}"
    );
    let again = fencesim(&[
        "replay",
        file.to_str().unwrap(),
        "--seed",
        seed,
        "--no-trace",
    ]);
    let hash = |s: String| {
        s.lines()
            .find(|l| l.starts_with("trace hash"))
            .map(str::to_string)
    };
    assert_eq!(
        hash(stdout(&first)),
        hash(stdout(&again)),
        "same seed, scripted faults: the same run"
    );
}

#[test]
fn list_prints_protocols_faults_and_checkers() {
    let text = stdout(&fencesim(&["list"]));
    for needle in ["fenced-cas", "pause", "stale_write", "grant_issued"] {
        assert!(text.contains(needle), "{needle} missing");
    }
}

#[test]
fn list_and_the_validate_docs_name_the_bundled_scenarios_with_a_clean_built_in_reference() {
    let text = stdout(&fencesim(&["list"]));
    let (clean, rest) = text
        .split_once("scenarios whose built-in reference shows")
        .expect("the second validate section");
    let clean = clean
        .split_once("scenarios for `validate` with a clean built-in reference")
        .expect("the first validate section")
        .1;
    let docs = std::fs::read_to_string(common::root().join("docs/validate.md")).expect("docs");
    let files = fencesim::scenario::collect(&[common::root().join("scenarios")]).expect("bundled");
    assert!(files.len() > 50);
    for f in files {
        let s = common::load(&f);
        let rel = f
            .strip_prefix(common::root())
            .expect("under the root")
            .display()
            .to_string();
        let tolerated = s.expect.tolerated();
        if tolerated.is_empty() {
            assert!(
                clean.contains(&format!("  {rel}\n")),
                "{rel} not listed clean:\n{text}"
            );
            assert!(
                docs.contains(&format!("`{rel}`")),
                "docs/validate.md misses {rel}"
            );
        } else {
            let line = rest
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{rel} ")))
                .unwrap_or_else(|| panic!("{rel} not listed:\n{text}"));
            for k in tolerated {
                assert!(line.contains(k.name()), "{rel}: {k} missing in `{line}`");
            }
        }
    }
}

#[test]
fn metrics_flag_writes_prometheus_text_with_the_articles_production_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.prom");
    let out = fencesim(&[
        "run",
        "scenarios/real-systems/renewal-gc-pause-fenced.toml",
        "--seeds",
        "10",
        "--metrics",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("production metrics"));
    let text = std::fs::read_to_string(&file).unwrap();
    for name in [
        "acquisition_wait_seconds",
        "lease_held_seconds",
        "renewal_slack_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE fencesim_{name} summary")),
            "{name}"
        );
    }
    // Every sample line is `name{labels} number`.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (head, value) = line.rsplit_once(' ').expect("sample line");
        assert!(
            head.starts_with("fencesim_") && head.ends_with('}'),
            "{line}"
        );
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
    }
    let scenario = r#"scenario="renewal-gc-pause-fenced",protocol="fenced-cas""#;
    assert!(
        text.contains(&format!("fencesim_fence_rejected_total{{{scenario}}} 10")),
        "{text}"
    );
    assert!(
        text.contains(&format!("fencesim_renewal_failures_total{{{scenario}}} 10")),
        "{text}"
    );
    let slack = text
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "fencesim_renewal_slack_seconds_count{{{scenario}}}"
            ))
        })
        .unwrap();
    assert!(
        !slack.ends_with(" 0"),
        "C's heartbeats were measured: {slack}"
    );
}
