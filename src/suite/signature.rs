//! A failure's signature: what makes two failing seeds *the same* failure
//! for a campaign, which keeps every distinct failure once.
//!
//! Two seeds fail the same way when they show the same violation kinds
//! with evidence of the same shape, and fail the same metric assertions.
//! The shape of a violation's evidence is the list of its proving records
//! as *record kind at node role* — `write_accepted@resource`,
//! `grant_received@worker` — in record order: what happened where, without
//! anything a seed decides (times, sequence numbers, tokens, op ids, which
//! of several workers it was, how many times a record repeats in a row:
//! `write_accepted@resource+`). Each kind found is represented by its first
//! violation's shape (how many violations of a kind a run piles up is the
//! seed's doing too). A failed metric assertion counts by its text without
//! the value it saw. The signature is that list — kinds in the checker's
//! order, then the metrics, sorted — as text (what a person reads in a
//! campaign's results) and its FNV-1a hash (the key merges and resumed
//! campaigns compare).

use std::fmt::Write;

use crate::check::Report;
use crate::history::History;
use crate::sim::hash::fnv1a64;

/// One failing seed's signature.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// `kind: record@role record@role …`, one clause per distinct shape,
    /// joined by ` | `.
    pub text: String,
    /// FNV-1a of `text`.
    pub hash: u64,
}

/// A node's role: its name up to the first `/` (`worker/A` → `worker`).
fn role(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

/// A metric assertion's text without the value the seed saw.
fn metric_shape(failed: &str) -> &str {
    failed
        .rsplit_once(" (was ")
        .map_or(failed, |(shape, _)| shape)
}

/// The signature of a run whose checker wrote `report` on `history`, and
/// whose metric assertions `failed_metrics` failed. Records the evidence
/// names but the history no longer holds read as `?`.
pub fn of(report: &Report, history: &History, failed_metrics: &[String]) -> Signature {
    let mut clauses = Vec::new();
    for kind in report.kinds() {
        // A kind counted but none of its violations kept still names the kind.
        let shape = report
            .violations
            .iter()
            .find(|v| v.kind == kind)
            .map_or(String::new(), |v| shape(&v.evidence, history));
        clauses.push(format!("{kind}:{shape}"));
    }
    let mut metrics: Vec<&str> = failed_metrics.iter().map(|m| metric_shape(m)).collect();
    metrics.sort_unstable();
    metrics.dedup();
    clauses.extend(metrics.into_iter().map(|m| format!("metric: {m}")));
    let text = clauses.join(" | ");
    let hash = fnv1a64(text.as_bytes());
    Signature { text, hash }
}

/// ` record@role …` of `evidence`, a record repeated in a row written once
/// with `+` (how many times is the seed's doing).
fn shape(evidence: &[u64], history: &History) -> String {
    let mut steps: Vec<(String, bool)> = Vec::new();
    for &seq in evidence {
        let step = history.by_seq(seq).map_or("?".to_string(), |e| {
            format!("{}@{}", e.kind.name(), role(history.node_name(e.node)))
        });
        match steps.last_mut() {
            Some((last, repeated)) if *last == step => *repeated = true,
            _ => steps.push((step, false)),
        }
    }
    let mut text = String::new();
    for (step, repeated) in steps {
        let _ = write!(text, " {step}{}", if repeated { "+" } else { "" });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_the_name_before_its_slash_and_a_metric_loses_its_value() {
        assert_eq!(role("worker/A"), "worker");
        assert_eq!(role("resource"), "resource");
        assert_eq!(
            metric_shape("overlaps == 0 (was 3)"),
            "overlaps == 0",
            "the value a seed saw is not part of the failure"
        );
    }
}
