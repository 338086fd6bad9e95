//! What `fencesim check` prints: the table of model-checking results (one
//! row per model, then the expectations not met), its JSON form (schema
//! `fencesim-check`), and the number formats its progress line shares.

use std::fmt::Write as _;
use std::time::Duration;

use crate::model::{self, CheckReport, Counterexample, ModelSpec, Stats};

/// All searches of a report added up: the proof (if any) and each counterexample search.
pub fn totals(r: &CheckReport) -> Stats {
    let all = r
        .proof
        .iter()
        .map(|p| p.stats)
        .chain(r.searches.iter().map(|s| s.stats));
    all.fold(Stats::default(), |a, s| Stats {
        total_states: a.total_states + s.total_states,
        unique_states: a.unique_states + s.unique_states,
        max_depth: a.max_depth.max(s.max_depth),
        elapsed: a.elapsed + s.elapsed,
    })
}

pub fn bounds_label(spec: &ModelSpec) -> String {
    let b = &spec.bounds;
    let mut s = format!("{}c/{}g", b.clients, b.grants_max);
    if b.failovers_max > 0 {
        let _ = write!(s, "/{}f", b.failovers_max);
    }
    if b.replicas > 1 {
        let _ = write!(s, "/{}r", b.replicas);
    }
    if b.reads {
        s.push_str(if b.fence_reads {
            "/fenced-reads"
        } else {
            "/reads"
        });
    }
    if !b.fence {
        s.push_str("/no-fence");
    }
    if b.symmetry {
        s.push_str("/sym");
    }
    s
}

pub fn verdict_label(r: &CheckReport) -> String {
    let found: Vec<String> = r
        .counterexamples()
        .map(|c| format!("{}({})", c.violation, c.len()))
        .collect();
    if found.is_empty() {
        r.verdict.to_string()
    } else {
        format!("{} {}", r.verdict, found.join(" "))
    }
}

/// `12.3M`, `456K`, `789`.
pub fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// `2,823,695`.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn elapsed(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 1e3 {
        format!("{:.2}s", ms / 1e3)
    } else {
        format!("{ms:.1}ms")
    }
}

pub fn render_table(reports: &[CheckReport]) -> String {
    let width = |f: &dyn Fn(&CheckReport) -> usize, min: usize| {
        reports.iter().map(f).max().unwrap_or(min).max(min)
    };
    let name_w = width(&|r| r.spec.name.len(), 5);
    let proto_w = width(&|r| r.spec.bounds.protocol.id().len(), 8);
    let bounds_w = width(&|r| bounds_label(&r.spec).len(), 6);
    let verdict_w = width(&|r| verdict_label(r).len(), 7);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<name_w$}  {:<proto_w$}  {:<bounds_w$}  {:>10}  {:>10}  {:>5}  {:>8}  {:>8}  {:<verdict_w$}  {:<8}  expectation",
        "model", "protocol", "bounds", "total", "unique", "depth", "states/s", "elapsed", "verdict", "vacuity"
    );
    for r in reports {
        let t = totals(r);
        // An unsafe verdict is its own witness; a safe one counts only if both were reached.
        let vacuity = match (r.verdict, r.unreached.is_empty()) {
            (model::Verdict::Unsafe, _) => "-",
            (model::Verdict::Safe, true) => "ok",
            (model::Verdict::Safe, false) => "VACUOUS",
        };
        let _ = writeln!(
            s,
            "{:<name_w$}  {:<proto_w$}  {:<bounds_w$}  {:>10}  {:>10}  {:>5}  {:>8}  {:>8}  {:<verdict_w$}  {:<8}  {}",
            r.spec.name,
            r.spec.bounds.protocol.id(),
            bounds_label(&r.spec),
            grouped(t.total_states),
            grouped(t.unique_states),
            t.max_depth,
            si(t.states_per_sec()),
            elapsed(t.elapsed),
            verdict_label(r),
            vacuity,
            if r.meets_expectation() { "met" } else { "NOT MET" }
        );
    }
    for r in reports.iter().filter(|r| !r.meets_expectation()) {
        let _ = writeln!(s, "\n{}: expectation not met", r.spec.name);
        for m in &r.mismatches {
            let _ = writeln!(s, "  - {m}");
        }
    }
    s
}

/// `fencesim check --format json`: schema `fencesim-check`, version 1. State
/// counts, depths and counterexamples are deterministic; `elapsed_ms` and
/// `states_per_sec` are wall-clock measurements.
pub fn json_report(reports: &[CheckReport], threads: usize, exit_code: u8) -> serde_json::Value {
    let models: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let t = totals(r);
            let counterexamples: Vec<serde_json::Value> = r
                .counterexamples()
                .map(|c| {
                    serde_json::json!({
                        "violation": c.violation.name(),
                        "steps": c.len(),
                        "path": c.steps.iter().map(|s| s.description.clone()).collect::<Vec<_>>(),
                    })
                })
                .collect();
            serde_json::json!({
                "name": r.spec.name,
                "protocol": r.spec.bounds.protocol.id(),
                "bounds": bounds_label(&r.spec),
                "total_states": t.total_states,
                "unique_states": t.unique_states,
                "max_depth": t.max_depth,
                "states_per_sec": t.states_per_sec().round(),
                "elapsed_ms": t.elapsed.as_secs_f64() * 1e3,
                // An interrupted search has partial counts and no verdict.
                "verdict": if r.interrupted { "none".to_string() } else { r.verdict.to_string() },
                "interrupted": r.interrupted,
                "expected": r.spec.expected.verdict.to_string(),
                "counterexamples": counterexamples,
                "unreached": r.unreached,
                "mismatches": r.mismatches,
                "met": r.meets_expectation(),
            })
        })
        .collect();
    serde_json::json!({
        "schema": "fencesim-check",
        "schema_version": 1,
        "fencesim_version": env!("CARGO_PKG_VERSION"),
        "threads": threads,
        "exit_code": exit_code,
        "models": models,
    })
}

/// A counterexample as `fencesim check` prints it: a heading, then one
/// numbered line per step (the model's own step labels, violations marked).
pub fn counterexample(spec_name: &str, c: &Counterexample) -> String {
    let mut s = format!(
        "\n{spec_name}: {} in {} steps (shortest)\n",
        c.violation,
        c.len()
    );
    for (k, step) in c.steps.iter().enumerate() {
        let _ = writeln!(s, "{:>4}  {}", k + 1, step.description);
    }
    s
}
