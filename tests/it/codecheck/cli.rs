//! `fencesim check --code` as a user runs it: verdict lines and exit codes.

use crate::common::{fencesim, stderr, stdout};

#[test]
fn a_safe_protocol_is_proved_and_exits_zero() {
    let out = fencesim(&["check", "--code", "fenced-cas", "--pauses", "0"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("fenced-cas: safe: proved at these bounds (vacuity ok)"),
        "{text}"
    );
    assert!(
        text.contains("unique states") && text.contains("bounds hit:"),
        "{text}"
    );
}

#[test]
fn an_unsafe_protocol_prints_its_shortest_counterexample_and_exits_by_expectation() {
    let out = fencesim(&["check", "--code", "redis-set-nx"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "expected safe: {text}");
    assert!(
        text.contains("redis-set-nx: unsafe: stale_write in 16 steps (shortest)"),
        "{text}"
    );
    let out = fencesim(&["check", "--code", "redis-set-nx", "--expect", "unsafe"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn an_unknown_protocol_is_bad_input() {
    for id in ["no-such-protocol", "redis"] {
        let out = fencesim(&["check", "--code", id]);
        assert_eq!(out.status.code(), Some(2), "{id}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("fenced-cas"),
            "{id}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn refine_prints_the_counts_and_exits_zero_without_a_divergence_and_two_when_refused() {
    let out = fencesim(&[
        "check",
        "--code",
        "check-before-write",
        "--refine",
        "--pauses",
        "0",
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    for line in [
        "against the no-fence model (models/no-fence.toml)",
        "check-before-write: no model of its own in models/",
        "states checked",
        "0 divergences",
        "check-before-write: refines its model",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    let out = fencesim(&[
        "check",
        "--code",
        "redis-set-nx",
        "--refine",
        "--duplicates",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("no refinement with duplicates"),
        "{}",
        stderr(&out)
    );
}
