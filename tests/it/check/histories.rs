//! Hand-written histories as data: every `tests/data/histories/NAME.jsonl`
//! has a sibling `NAME.expect` holding the verdict derived by hand from
//! docs/history.md, one line of whitespace-separated words:
//!
//! - `clean` — no violation of any kind;
//! - `KIND=N …` — exactly N violations of each kind named, none of any
//!   other (`stale_write=1 lost_update=1`); a kind is a checker's or a
//!   store claim's (`acked_write_lost=1`, judged by `store_claims`);
//! - `refused LINE RULE` — an input rule (`time-order`, `grant-identity`,
//!   …) refuses the record on file line LINE;
//! - `unreadable LINE` — the JSON-lines reader refuses line LINE.
//!
//! Each history goes through both checkers (`check::check` and the
//! independent `oracle::check`), the store-claims check, and through
//! `fencesim check-history`, whose
//! exit code (0 clean, 1 violations, 2 bad input naming `FILE:LINE:`) must
//! say the same. A new case is two files; no code changes.

use std::path::{Path, PathBuf};

use crate::common;

use fencesim::check::store_claims::{self, ClaimKind};
use fencesim::check::{check, ViolationKind};
use fencesim::history::jsonl;
use fencesim::history::validate::validate;
use fencesim::oracle;

/// A kind an `.expect` file may name: the checkers' or the store claims'.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AnyKind {
    Checker(ViolationKind),
    Claim(ClaimKind),
}

impl AnyKind {
    fn from_name(name: &str) -> Option<AnyKind> {
        ViolationKind::from_name(name)
            .map(AnyKind::Checker)
            .or_else(|| {
                ClaimKind::ALL
                    .into_iter()
                    .find(|k| k.name() == name)
                    .map(AnyKind::Claim)
            })
    }
}

enum Expect {
    Counts(Vec<(AnyKind, u64)>),
    Refused { line: usize, rule: String },
    Unreadable { line: usize },
}

fn parse_expect(path: &Path) -> Expect {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let words: Vec<&str> = text.split_whitespace().collect();
    let number = |w: Option<&&str>| -> usize {
        w.and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{}: a line number expected", path.display()))
    };
    match words.first().copied() {
        Some("refused") => Expect::Refused {
            line: number(words.get(1)),
            rule: words
                .get(2)
                .unwrap_or_else(|| panic!("{}: a rule expected", path.display()))
                .to_string(),
        },
        Some("unreadable") => Expect::Unreadable {
            line: number(words.get(1)),
        },
        Some("clean") if words.len() == 1 => Expect::Counts(vec![]),
        _ => Expect::Counts(
            words
                .iter()
                .map(|w| {
                    let (kind, n) = w
                        .split_once('=')
                        .unwrap_or_else(|| panic!("{}: `{w}`: KIND=N", path.display()));
                    let kind = AnyKind::from_name(kind)
                        .unwrap_or_else(|| panic!("{}: unknown kind `{kind}`", path.display()));
                    let n = n
                        .parse()
                        .unwrap_or_else(|_| panic!("{}: `{w}`: a count", path.display()));
                    (kind, n)
                })
                .collect(),
        ),
    }
}

fn cases() -> Vec<PathBuf> {
    let dir = common::root().join("tests/data/histories");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
}

/// The 1-based file line of the n-th non-blank line (the reader skips blank lines).
fn file_line(text: &str, record: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .nth(record.saturating_sub(1))
        .map_or(1, |(i, _)| i + 1)
}

/// Checks one case; returns what was wrong with it, if anything.
fn run_case(path: &Path) -> Result<(), String> {
    let name = path.file_name().expect("file name").to_string_lossy();
    let expect = parse_expect(&path.with_extension("expect"));
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let read = jsonl::read(&text, &name);
    let h = match (&expect, read) {
        (Expect::Unreadable { line }, Err(e)) if e.line == *line => None,
        (_, Err(e)) => return Err(format!("{name}: unexpectedly unreadable: {e}")),
        (Expect::Unreadable { line }, Ok(_)) => {
            return Err(format!("{name}: read, but line {line} should be refused"))
        }
        (_, Ok(h)) => Some(h),
    };
    if let Some(h) = &h {
        match (&expect, validate(h)) {
            (Expect::Refused { line, rule }, Err(r)) => {
                let at = file_line(&text, r.record);
                if (at, r.rule) != (*line, rule.as_str()) {
                    return Err(format!(
                        "{name}: refused at line {at} by {r}, expected line {line} rule {rule}"
                    ));
                }
            }
            (Expect::Refused { line, rule }, Ok(())) => {
                return Err(format!(
                    "{name}: accepted, expected line {line} refused by {rule}"
                ))
            }
            (Expect::Counts(_), Err(r)) => return Err(format!("{name}: refused: {r}")),
            (Expect::Counts(want), Ok(())) => {
                let report = check(h);
                let findings = oracle::check(h);
                let wanted =
                    |kind: AnyKind| want.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
                for kind in ViolationKind::ALL {
                    let want = wanted(AnyKind::Checker(kind));
                    let ours = report.count(kind);
                    let theirs = findings.iter().filter(|f| f.kind == kind.name()).count() as u64;
                    if (ours, theirs) != (want, want) {
                        return Err(format!(
                            "{name}: {kind}: check found {ours}, oracle {theirs}, by hand {want}"
                        ));
                    }
                }
                let claims = store_claims::check(h);
                for kind in ClaimKind::ALL {
                    let (ours, want) = (claims.count(kind), wanted(AnyKind::Claim(kind)));
                    if ours != want {
                        return Err(format!(
                            "{name}: {kind}: store claims found {ours}, by hand {want}"
                        ));
                    }
                }
            }
            (Expect::Unreadable { .. }, _) => unreachable!("handled above"),
        }
    }
    // The command line says the same, and names the line of bad input.
    let out = common::fencesim(&["check-history", path.to_str().expect("utf-8 path")]);
    let (code, mentions) = match &expect {
        Expect::Counts(want) if want.iter().all(|(_, n)| *n == 0) => (0, None),
        Expect::Counts(_) => (1, None),
        Expect::Refused { line, rule } => (2, Some(format!("{name}:{line}:1: rule {rule}"))),
        Expect::Unreadable { line } => (2, Some(format!("{name}:{line}:"))),
    };
    let err = common::stderr(&out);
    if out.status.code() != Some(code) {
        return Err(format!(
            "{name}: check-history exit {:?}, expected {code}: {err}",
            out.status.code()
        ));
    }
    // One verdict: "no violations" never heads a VIOLATION line.
    let said = common::stdout(&out);
    if said.contains("VIOLATION") && said.contains("no violations") {
        return Err(format!(
            "{name}: check-history said both `no violations` and VIOLATION:\n{said}"
        ));
    }
    if let Some(m) = mentions {
        if !err.contains(&m) || err.contains("panicked") {
            return Err(format!(
                "{name}: check-history said `{err}`, expected it to name `{m}`"
            ));
        }
    }
    Ok(())
}

#[test]
fn every_hand_written_history_gets_its_hand_derived_verdict_from_both_checkers_and_the_cli() {
    let paths = cases();
    assert!(paths.len() >= 40, "the hand-written histories are missing");
    let failures: Vec<String> = paths.iter().filter_map(|p| run_case(p).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

#[test]
fn a_case_with_a_wrong_expectation_fails() {
    // The harness can fail: the same history, expected the other way.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = common::root().join("tests/data/histories/stale_write_by_token.jsonl");
    let copy = dir.path().join("x.jsonl");
    std::fs::copy(&src, &copy).expect("copy");
    std::fs::write(dir.path().join("x.expect"), "clean\n").expect("write");
    assert!(run_case(&copy).is_err());
    std::fs::write(dir.path().join("x.expect"), "stale_write=1\n").expect("write");
    assert!(run_case(&copy).is_ok());
    std::fs::write(dir.path().join("x.expect"), "refused 3 time-order\n").expect("write");
    assert!(run_case(&copy).is_err());
}
