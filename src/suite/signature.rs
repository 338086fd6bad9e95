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
use crate::sim::hash::{fnv1a64, FNV_OFFSET, FNV_PRIME};

/// One failing seed's signature.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Signature {
    /// `kind: record@role record@role …`, one clause per kind, then the
    /// failed metrics, joined by ` | `.
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

/// FNV-1a over what is written: the hash of the text, without the text.
struct Fnv(u64);

impl Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for &b in s.as_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
        Ok(())
    }
}

/// The signature of a run whose checker wrote `report` on `history`, and
/// whose metric assertions `failed_metrics` failed. Evidence records the
/// history does not hold read as `?`.
pub fn of(report: &Report, history: &History, failed_metrics: &[String]) -> Signature {
    let mut text = String::new();
    write(&mut text, report, history, failed_metrics);
    let hash = fnv1a64(text.as_bytes());
    Signature { text, hash }
}

/// [`of`]'s hash alone, allocating nothing: a campaign sees most failures
/// many times and needs the text only of a new or faster one.
pub fn hash_of(report: &Report, history: &History, failed_metrics: &[String]) -> u64 {
    let mut h = Fnv(FNV_OFFSET);
    write(&mut h, report, history, failed_metrics);
    h.0
}

/// Writes the signature's text to `w`.
fn write(w: &mut impl Write, report: &Report, history: &History, failed_metrics: &[String]) {
    let mut first = true;
    let mut sep = |w: &mut dyn Write| {
        if !std::mem::take(&mut first) {
            let _ = w.write_str(" | ");
        }
    };
    for kind in report.kinds() {
        sep(w);
        let _ = write!(w, "{kind}:");
        // A kind counted but none of its violations kept still names the kind.
        if let Some(v) = report.violations.iter().find(|v| v.kind == kind) {
            shape(w, &v.evidence, history);
        }
    }
    let mut metrics: Vec<&str> = failed_metrics.iter().map(|m| metric_shape(m)).collect();
    metrics.sort_unstable();
    metrics.dedup();
    for m in metrics {
        sep(w);
        let _ = write!(w, "metric: {m}");
    }
}

/// Writes ` record@role …` of `evidence`, a record repeated in a row
/// written once with `+` (how many times is the seed's doing).
fn shape(w: &mut impl Write, evidence: &[u64], history: &History) {
    let step = |seq: u64| {
        history
            .by_seq(seq)
            .map(|e| (e.kind.name(), role(history.node_name(e.node))))
    };
    let mut steps = evidence.iter().map(|&seq| step(seq)).peekable();
    while let Some(this) = steps.next() {
        let mut repeated = false;
        while steps.peek() == Some(&this) {
            steps.next();
            repeated = true;
        }
        let _ = match this {
            Some((kind, role)) => write!(w, " {kind}@{role}"),
            None => w.write_str(" ?"),
        };
        if repeated {
            let _ = w.write_str("+");
        }
    }
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

    #[test]
    fn the_hash_alone_is_the_hash_of_the_text() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/random/random-faults-ttl-lease-del.toml");
        let s = crate::scenario::load(&path).unwrap();
        let mut seen = 0;
        for seed in 0..40 {
            let run = crate::suite::seed::run(&s.options, seed, Default::default());
            let failed = vec!["overlaps == 0 (was 2)".to_string()];
            let sig = of(&run.report, &run.outcome.history, &failed);
            assert_eq!(
                sig.hash,
                hash_of(&run.report, &run.outcome.history, &failed)
            );
            seen += usize::from(sig.text.contains('@'));
        }
        assert!(seen > 0, "some seeds had evidence to shape");
    }
}
