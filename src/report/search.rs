//! Text for `fencesim search`: the header (scenario, bound, seed, jobs, the
//! fault vocabulary), the coverage block (runs and new distinct executions
//! per fault count), each violation found with its placements, and the
//! verdict line. `search/` enumerates and tallies; this renders its
//! `SearchResult`. `cli/search.rs` prints these between its own progress
//! and file writes.

use std::fmt::Write as _;
use std::path::Path;

use crate::search::{Found, SearchResult};

/// `fencesim … — search FILE: …`, the implementations (for `--node`), the vocabulary.
pub fn header(
    path: &Path,
    max_faults: usize,
    seed: u64,
    jobs: usize,
    implementations: Option<&str>,
    strikes: &[&str],
) -> String {
    let mut s = format!(
        "fencesim {} — search {}: every placement of <={max_faults} faults at the protocol events (seed {seed}, jobs {jobs})\n",
        env!("CARGO_PKG_VERSION"),
        path.display(),
    );
    s.push_str(implementations.unwrap_or_default());
    let _ = writeln!(
        s,
        "vocabulary: {}",
        if strikes.is_empty() {
            "none (the scenario enables no pause, crash or failover)".to_string()
        } else {
            strikes.join(", ")
        }
    );
    s
}

/// `N distinct executions (R runs); every placement of <=K faults tried`.
pub fn coverage(result: &SearchResult, max_faults: usize) -> String {
    format!(
        "{} distinct executions ({} runs); every placement of <={} faults tried",
        result.distinct, result.runs, max_faults
    )
}

/// The fault-free run's size, runs and new executions per fault count,
/// coverage, and what the scenario tolerates.
pub fn levels(result: &SearchResult, max_faults: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fault-free run: {} protocol events",
        result.baseline_events
    );
    for (k, (runs, distinct)) in result.levels.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {k} faults: {runs:>7} runs, {distinct:>7} new distinct executions"
        );
    }
    let _ = writeln!(s, "coverage: {}", coverage(result, max_faults));
    if !result.tolerated.is_empty() {
        let _ = writeln!(
            s,
            "tolerated by the scenario: {}",
            result.tolerated.join(", ")
        );
    }
    s
}

/// A violation's heading: its kind, the run that found it, its placements
/// (each already described by `Placement::describe`).
pub fn found(found: &Found, runs: u64, placed: &[String]) -> String {
    format!(
        "\nVIOLATION {} at run {} of {runs}: {}\n",
        found.kind,
        found.run,
        if placed.is_empty() {
            "with no fault placed".to_string()
        } else {
            placed.join("; ")
        }
    )
}

/// `\nverdict: CLEAN` or the kinds found.
pub fn verdict(result: &SearchResult) -> String {
    let verdict = if result.is_clean() {
        "CLEAN".to_string()
    } else {
        let kinds: Vec<&str> = result.found.iter().map(|f| f.kind).collect();
        format!("VIOLATIONS: {}", kinds.join(", "))
    };
    format!("\nverdict: {verdict}\n")
}
