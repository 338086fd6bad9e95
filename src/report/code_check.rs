//! `fencesim check --code`'s text: the bounds line, the counts with every
//! bound that cut a path, and the verdict — proved at the bounds (with the
//! vacuity witnesses), no verdict (the state bound stopped the search), or
//! a counterexample step by step, each step with its instant.

use std::fmt::Write as _;

use super::model_check::{elapsed, grouped, si};
use crate::codecheck::{Harness, Outcome};
use crate::protocol::Node;

/// The whole report for protocol `id`.
pub fn render<N: Node>(id: &str, h: &Harness<N>, out: &Outcome) -> String {
    let mut text = String::new();
    let hits = out.hits.names();
    let _ = writeln!(
        text,
        "fencesim {} — code-level check of {id} at {}",
        env!("CARGO_PKG_VERSION"),
        h.bounds.label()
    );
    let _ = writeln!(
        text,
        "{id}: {} unique states, {} transitions, depth {}, {}/s, {}; bounds hit: {}",
        grouped(out.unique_states),
        grouped(out.transitions as usize),
        out.max_depth,
        si(out.states_per_sec()),
        elapsed(out.elapsed),
        if hits.is_empty() {
            "none".to_string()
        } else {
            hits.join(", ")
        }
    );
    match &out.counterexample {
        Some(c) => {
            let how = if c.shortest {
                "shortest"
            } else {
                "the proof's path; the shortest search hit its state bound"
            };
            let _ = writeln!(
                text,
                "{id}: unsafe: {} in {} steps ({how})",
                c.finding.kind.name(),
                c.steps.len()
            );
            for (i, (action, at_ns)) in c.steps.iter().enumerate() {
                let _ = writeln!(
                    text,
                    "  {:>3}  t={:>3}ms  {}",
                    i + 1,
                    at_ns / 1_000_000,
                    h.describe(action)
                );
            }
            let _ = writeln!(text, "  violated: {}", c.finding.detail);
        }
        None if out.hits.max_states => {
            let _ = writeln!(
                text,
                "{id}: no verdict: the state bound stopped the search (raise --max-states)"
            );
        }
        None => {
            let vacuity = if out.vacuity_ok() { "ok" } else { "VACUOUS" };
            let _ = writeln!(
                text,
                "{id}: safe: proved at these bounds (vacuity {vacuity})"
            );
        }
    }
    text
}
