//! `fencesim check-history`: the checker on a history written by anyone —
//! the lock checkers and the store-claims check that `validate` applies.
//! A history that breaks an input rule ([`history::validate`]; an empty one
//! included) is bad input, exit 2, naming the line and the rule.

use std::process::ExitCode;

use anyhow::Result;

use super::BadInput;
use super::Verdict;
use crate::{check, history, report};

#[derive(clap::Args, Debug)]
pub struct CheckHistoryArgs {
    /// A history as JSON lines (docs/history.md).
    path: std::path::PathBuf,
}

pub fn cmd(a: CheckHistoryArgs) -> Result<ExitCode> {
    let path = a.path.as_path();
    // Located UTF-8 errors, FIFOs and oversized files refused: the same
    // reader as scenario files.
    let text =
        crate::scenario::source::read_text(path, None).map_err(|e| BadInput(e.to_string()))?;
    let h = history::jsonl::read(&text, &path.display().to_string())
        .map_err(|e| BadInput(e.to_string()))?;
    if let Err(refusal) = history::validate::validate(&h) {
        // The reader skips blank lines: record n is the n-th non-blank line.
        let line = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .nth(refusal.record.saturating_sub(1))
            .map_or(1, |(i, _)| i + 1);
        return Err(BadInput(format!(
            "{}:{line}:1: rule {} broken: {}",
            path.display(),
            refusal.rule,
            refusal.message
        ))
        .into());
    }
    let report = check::check(&h);
    println!(
        "fencesim {} — checked {} records from {}",
        env!("CARGO_PKG_VERSION"),
        h.events.len(),
        path.display()
    );
    // The store's own claims (acknowledged writes stay visible, ...), as
    // `validate` checks them, printed first as `validate` prints them.
    let claims = check::store_claims::check(&h);
    print!("{}", report::validate::violations(&h, &report, &claims));
    Ok(Verdict::met_if(report.is_clean() && claims.is_clean()).into())
}
