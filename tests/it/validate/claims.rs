//! What a store tells the harness, held against what it did, and the
//! built-in baseline beside every scenario: an idempotent store that says
//! `applied: false` for a recognised duplicate is clean, its twins that do
//! not say so, or say so and re-apply, are caught; a store that ignores the
//! `strict` rule it was given is caught directly; correct code on a
//! scenario whose own expectation includes a violation passes, with the
//! violation shown as the scenario's.

use std::path::Path;

use fencesim::history::Kind;
use fencesim::scenario;
use fencesim::validate::{self, Implementations, Limits};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const THEN_READ: &str = "examples/python/scenarios/duplicated-write-then-read.toml";
const STRICT: &str = "examples/python/scenarios/duplicated-write-strict.toml";
/// Unfenced: the late duplicate overwrites B; `stale_write` is the scenario's own.
const UNFENCED: &str = "scenarios/real-systems/duplicated-write.toml";

fn reference() -> String {
    format!(
        "python3 {}",
        root().join("examples/python/fencelock.py").display()
    )
}

fn store(mode: &str) -> String {
    format!(
        "python3 {} {mode}",
        root().join("examples/python/fakes/stores.py").display()
    )
}

fn validate_cli(resource: &str, scenarios: &[&str]) -> (i32, String) {
    crate::common::run_text(
        crate::common::fencesim_command()
            .args(["validate", "--seeds", "2", "--jobs", "2"])
            .arg("--node")
            .arg(format!("coordinator={}", reference()))
            .arg("--node")
            .arg(format!("resource={resource}"))
            .args(scenarios),
    )
}

/// The table cells of `scenario`'s row: seeds, ok, failing, impl-errors,
/// the implementation's violations (first cells only; columns may hold several words).
fn row(text: &str, scenario: &str) -> Vec<String> {
    text.lines()
        .find(|l| l.starts_with(&format!("{scenario} ")))
        .unwrap_or_else(|| panic!("no row for {scenario} in:\n{text}"))
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn an_idempotent_store_that_says_applied_false_is_clean_and_its_twins_are_caught() {
    let (code, text) = validate_cli(&store("idempotent"), &[THEN_READ]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        row(&text, "duplicated-write-then-read")[..5],
        ["2", "2", "0", "0", "-"],
        "{text}"
    );

    // Without the claim, the harness must take the duplicate's write_ok as applied.
    let (code, text) = validate_cli(&store("idempotent_unclaimed"), &[THEN_READ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("VIOLATION stale_write"), "{text}");

    // The claim is checked against later reads: "not applied", but C read A's copy.
    let (code, text) = validate_cli(&store("lying_idempotent"), &[THEN_READ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "VIOLATION acked_write_lost on key doc: write of value 2001 was acknowledged"
        ),
        "{text}"
    );
}

#[test]
fn applied_false_is_recorded_as_write_deduplicated_and_only_for_the_duplicate() {
    let s = scenario::load(&root().join(THEN_READ)).expect("scenario");
    let impls = Implementations {
        coordinator: Some(reference()),
        resource: Some(store("idempotent")),
        worker: None,
    };
    let judged = validate::run_seed(&s.options, 0, &impls, Limits::default(), false)
        .unwrap_or_else(|e| panic!("{e}"));
    let of = |kind: Kind| -> Vec<u64> {
        judged
            .history
            .events
            .iter()
            .filter(|e| e.kind == kind)
            .filter_map(|e| e.op_id)
            .collect()
    };
    assert_eq!(of(Kind::WriteDeduplicated), vec![1001], "A's late copy");
    assert_eq!(of(Kind::WriteAccepted), vec![1001, 2001, 3001]);
    assert!(judged.is_clean(), "{}", judged.render());
}

#[test]
fn a_store_that_accepts_an_equal_token_under_strict_breaks_its_rule_and_the_reference_does_not() {
    let (code, text) = validate_cli(&store("equal_token"), &[STRICT]);
    assert_eq!(code, 1, "{text}");
    assert!(
        row(&text, "duplicated-write-strict")[4].starts_with("fence_rule_broken×2"),
        "{text}"
    );
    assert!(
        text.contains("the store was configured strict and must accept only fence < token"),
        "{text}"
    );
    // No stale write: only the rule check sees it.
    assert!(!text.contains("VIOLATION stale_write"), "{text}");

    let (code, text) = validate_cli(&reference(), &[STRICT]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        row(&text, "duplicated-write-strict")[..5],
        ["2", "2", "0", "0", "-"],
        "{text}"
    );
}

#[test]
fn a_violation_the_scenario_expects_is_shown_as_the_scenarios_beside_the_built_in_baseline() {
    // The reference store is unfenced here, as the scenario says: the late copy
    // overwrites B, exactly as with the built-in store.
    let (code, text) = validate_cli(&reference(), &[UNFENCED, THEN_READ]);
    assert_eq!(code, 0, "{text}");
    let unfenced = row(&text, "duplicated-write");
    assert_eq!(unfenced[..5], ["2", "2", "0", "0", "-"], "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("duplicated-write "))
        .unwrap();
    assert_eq!(
        line.matches("stale_write×2").count(),
        2,
        "scenario's and built-in columns: {text}"
    );
    // Not CLEAN: the scenario cannot tell a safe store from an unsafe one
    // for stale_write, and the verdict says so, naming the kind and why.
    let verdict = text
        .lines()
        .find(|l| l.starts_with("verdict: "))
        .unwrap_or_else(|| panic!("no verdict line: {text}"));
    assert!(!verdict.contains("CLEAN"), "{verdict}");
    assert!(
        verdict.starts_with(
            "verdict: INCONCLUSIVE for stale_write (the built-in reference shows it on the same seeds)"
        ),
        "{verdict}"
    );
    // The pair: the same kind where the scenario does not allow it fails.
    let (code, text) = validate_cli(&store("idempotent_unclaimed"), &[THEN_READ]);
    assert_eq!(code, 1, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("duplicated-write-then-read "))
        .unwrap();
    assert!(line.contains("stale_write×2"), "{text}");
    assert!(
        line.trim_end().ends_with('-'),
        "the built-in is clean there: {text}"
    );
}
