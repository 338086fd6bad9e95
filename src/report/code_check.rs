//! `fencesim check --code`'s text: the bounds line, the counts with every
//! bound that cut a path, and the verdict — proved at the bounds (with the
//! vacuity witnesses), no verdict (the state bound stopped the search), or
//! a counterexample step by step, each step with its instant. With
//! `--refine`: the refinement check's counts and its first divergence.

use std::fmt::Write as _;

use super::model_check::{elapsed, grouped, si};
use crate::codecheck::refine::{summary, Counts, Divergence, Refinement, ACTIONS};
use crate::codecheck::{Action, Harness, Outcome};
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
            numbered_steps(&mut text, h, &c.steps);
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

/// `fencesim check --code P --refine`'s text: the model and the bounds,
/// the counts (states and steps checked, stutters, model actions matched),
/// and the verdict — no divergence, or the first divergence with the path
/// to it, the model states on both sides and the closest model step.
pub fn render_refinement<N: Node>(id: &str, h: &Harness<N>, r: &Refinement) -> String {
    let mut text = String::new();
    let out = &r.outcome;
    let _ = writeln!(
        text,
        "fencesim {} — refinement check of {id}'s code against the {} model ({}) at {}",
        env!("CARGO_PKG_VERSION"),
        r.of.protocol.id(),
        r.of.spec,
        h.bounds.label()
    );
    if let Some(note) = r.of.note {
        let _ = writeln!(text, "{id}: {note}");
    }
    let c = &r.counts;
    let matched: Vec<String> = ACTIONS
        .iter()
        .zip(c.by_action)
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {}", grouped(n as usize)))
        .collect();
    let hits = out.hits.names();
    let _ = writeln!(
        text,
        "{id}: {} states checked, {} steps checked: {} stutters, model actions {}; {} divergences; {}; bounds hit: {}",
        grouped(out.unique_states),
        grouped(c.steps as usize),
        grouped(c.stutters as usize),
        if matched.is_empty() { "none".to_string() } else { matched.join(", ") }
            + &if c.chains > 0 { format!(" ({} resumes matched by a chain)", grouped(c.chains as usize)) } else { String::new() }
            + &if c.late_grants > 0 { format!(" ({} decisions on a lock already gone: a grant, then its lease's end)", grouped(c.late_grants as usize)) } else { String::new() }
            + &if c.server_chains > 0 { format!(" ({} server steps matched by a chain of key actions)", grouped(c.server_chains as usize)) } else { String::new() },
        usize::from(r.divergence.is_some()),
        elapsed(out.elapsed),
        if hits.is_empty() { "none".to_string() } else { hits.join(", ") }
    );
    if let Some(c) = &out.counterexample {
        let _ = writeln!(
            text,
            "{id}: the search met {} (a violating state is terminal; the search went on past it)",
            c.finding.kind.name()
        );
    }
    match &r.divergence {
        None if out.hits.max_states => {
            let _ = writeln!(
                text,
                "{id}: no verdict: the state bound stopped the search (raise --max-states)"
            );
        }
        None => {
            let _ = writeln!(
                text,
                "{id}: refines its model: every step is a stutter or one model action{}",
                chained(c)
            );
        }
        Some(d) => divergence(&mut text, id, h, d),
    }
    text
}

/// " (a resume, …: a chain of them)": the steps a chain of model actions
/// matched, if any.
fn chained(c: &Counts) -> String {
    let kinds: Vec<&str> = [
        (c.chains, "a resume"),
        (c.late_grants, "a late decision"),
        (c.server_chains, "a server step"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(_, what)| what)
    .collect();
    if kinds.is_empty() {
        String::new()
    } else {
        format!(" ({}: a chain of them)", kinds.join(", "))
    }
}

fn divergence<N: Node>(text: &mut String, id: &str, h: &Harness<N>, d: &Divergence) {
    let _ = writeln!(
        text,
        "{id}: DIVERGENCE at step {} ({}): the model does not allow it ({})",
        d.path.len(),
        d.part,
        if d.shortest {
            "a shortest path"
        } else {
            "the DFS's path; the shortest search hit its state bound"
        }
    );
    numbered_steps(text, h, &d.path);
    if let Some(from) = &d.from {
        let _ = writeln!(text, "  model state before: {}", summary(from));
    }
    match (&d.to, &d.unmapped) {
        (_, Some(why)) => {
            let _ = writeln!(text, "  the code's state has no model state: {why}");
        }
        (Some(to), None) => {
            let _ = writeln!(text, "  the code's step leads to: {}", summary(to));
        }
        (None, None) => {}
    }
    if let Some(e) = &d.expected {
        let _ = writeln!(text, "  expected (the closest model step): {}", e.step);
        for diff in &e.differences {
            let _ = writeln!(text, "    {diff}");
        }
    }
}

/// A path, one numbered line per step with its instant.
fn numbered_steps<N: Node>(text: &mut String, h: &Harness<N>, steps: &[(Action, u64)]) {
    for (i, (action, at_ns)) in steps.iter().enumerate() {
        let _ = writeln!(
            text,
            "  {:>3}  t={:>3}ms  {}",
            i + 1,
            at_ns / 1_000_000,
            h.describe(action)
        );
    }
}
