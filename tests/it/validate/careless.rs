//! `examples/python/careless/careless.py`, a lock service and store written
//! apart from the reference (docs/validate.md only), through `fencesim
//! validate`: its careful mode is clean on every case's scenario, and each
//! careless mode — one realistic bug — gets exactly the violations the
//! definitions predict, counted as the implementation's on every seed
//! (never the scenario's: the built-in nodes are clean there).
//!
//! The table is the data: mode, scenario, the kinds the bug must produce.

use std::path::Path;

use crate::common;

const SEEDS: u64 = 3;

/// (mode, scenario, violations of the implementation's, each on every seed).
const CASES: &[(&str, &str, &[&str])] = &[
    // The fence is synced, the value buffered, the ack sent: a crash keeps
    // the fence and loses the value; the next holder's write replaces an
    // accepted value it never read.
    (
        "fence_before_durable",
        "examples/python/scenarios/resource-crash-after-ack.toml",
        &["lost_update", "acked_write_lost"],
    ),
    // The counter lives in memory: after the restart B gets token 1 again,
    // and A's late write with token 1 passes `token >= fence`.
    (
        "counter_in_memory",
        "examples/python/scenarios/coordinator-restart-reissues.toml",
        &["stale_write", "lost_update", "token_order"],
    ),
    // Strict reads, `>=` writes: the duplicated copy of A's write is accepted.
    (
        "strict_reads_only",
        "examples/python/scenarios/duplicated-write-strict.toml",
        &["fence_rule_broken"],
    ),
    // A's renewal after its pause brings its lease back over B's.
    (
        "renew_resurrects",
        "scenarios/real-systems/renewal-gc-pause-fenced.toml",
        &["expired_renewal"],
    ),
];

fn validate(mode: &str, scenarios: &[&str]) -> (i32, String) {
    let script = common::root().join("examples/python/careless/careless.py");
    let cmd = format!("python3 {} {mode}", script.display());
    let (coordinator, resource) = (format!("coordinator={cmd}"), format!("resource={cmd}"));
    let seeds = SEEDS.to_string();
    let mut args = vec!["validate", "--seeds", &seeds, "--jobs", "2"];
    args.extend(["--node", &coordinator, "--node", &resource]);
    args.extend(scenarios);
    let out = common::fencesim(&args);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    (out.status.code().unwrap_or(-1), text)
}

/// The table row of a scenario, as words after the name.
fn row(text: &str, scenario: &str) -> Vec<String> {
    let name = Path::new(scenario)
        .file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("no table row for {name} in:\n{text}"));
    line.split_whitespace().skip(1).map(String::from).collect()
}

#[test]
fn the_careful_mode_is_clean_on_every_scenario_the_careless_ones_break() {
    let scenarios: Vec<&str> = CASES.iter().map(|c| c.1).collect();
    let (code, text) = validate("correct", &scenarios);
    assert_eq!(code, 0, "{text}");
    for s in scenarios {
        let n = SEEDS.to_string();
        // seeds ok failing impl-errors implementation's scenario's built-in
        assert_eq!(row(&text, s), [&n, &n, "0", "0", "-", "-", "-"], "{text}");
    }
}

#[test]
fn each_careless_mode_gets_exactly_the_violations_its_bug_implies_on_every_seed() {
    for (mode, scenario, kinds) in CASES {
        let (code, text) = validate(mode, &[scenario]);
        assert_eq!(code, 1, "{mode}: {text}");
        let n = SEEDS.to_string();
        let cells = row(&text, scenario);
        assert_eq!(cells[..4], [&n, "0", &n, "0"], "{mode}: {text}");
        let mut found: Vec<String> = cells[4..cells.len() - 2].to_vec();
        let mut want: Vec<String> = kinds.iter().map(|k| format!("{k}×{SEEDS}")).collect();
        found.sort();
        want.sort();
        assert_eq!(found, want, "{mode} on {scenario}: {text}");
        // Not the scenario's, and the built-in nodes are clean on these seeds.
        assert_eq!(cells[cells.len() - 2..], ["-", "-"], "{mode}: {text}");
    }
}
