//! The text `fencesim replay` prints: version, seed and resolved options
//! first; the timeline; every trace line under a legend; each violation
//! with its evidence records; the trace hash last.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::timeline;
use crate::check::Report;
use crate::history::History;
use crate::protocol::NodeId;
use crate::scenario::Scenario;
use crate::sim::trace;
use crate::sim::RunOutcome;

pub fn header(scenario: &Scenario, seed: u64) -> String {
    format!(
        "fencesim {} — scenario {} ({}), seed {seed}\nscenario file hash {:016x}\n{}\n",
        env!("CARGO_PKG_VERSION"),
        scenario.name,
        scenario.path.display(),
        scenario.source_hash,
        scenario.options
    )
}

pub fn violations(history: &History, report: &Report) -> String {
    let mut s = String::new();
    if report.is_clean() {
        let _ = writeln!(s, "no violations");
    }
    for v in &report.violations {
        let _ = writeln!(
            s,
            "VIOLATION {} on key {}: {}",
            v.kind,
            history.key_name(v.key),
            v.explanation
        );
        for seq in &v.evidence {
            if let Some(e) = history.by_seq(*seq) {
                let _ = writeln!(s, "    {}", history.describe(e));
            }
        }
    }
    for k in report.kinds() {
        let kept = report.violations.iter().filter(|v| v.kind == k).count() as u64;
        if report.count(k) > kept {
            let _ = writeln!(s, "({} more {k} not shown)", report.count(k) - kept);
        }
    }
    let i = &report.info;
    let _ = writeln!(
        s,
        "info: writes_accepted={} stale_attempts={} fence_rejected_total={} fence_rejected_same_generation={} late_writes={} overlaps={} overlap_ms={}",
        i.writes_accepted,
        i.stale_attempts,
        i.fence_rejected_total,
        i.fence_rejected_same_generation,
        i.late_writes,
        i.overlaps,
        i.overlap_ns / 1_000_000
    );
    s
}

pub fn trace_lines(out: &RunOutcome) -> String {
    let names = |id: NodeId| out.history.node_name(id.0).to_string();
    let mut s = String::new();
    let _ = writeln!(s, "{}", trace::LEGEND);
    for ev in &out.trace {
        let _ = writeln!(s, "{}", trace::render(ev, &out.history, &names));
    }
    s
}

pub fn evidence_set(report: &Report) -> BTreeSet<u64> {
    report
        .violations
        .iter()
        .flat_map(|v| v.evidence.iter().copied())
        .collect()
}

/// The whole replay text.
pub fn render(scenario: &Scenario, out: &RunOutcome, report: &Report, with_trace: bool) -> String {
    let mut s = header(scenario, out.seed);
    let _ = writeln!(s, "\n== timeline (>> marks evidence) ==");
    s.push_str(&timeline::render(&out.history, &evidence_set(report)));
    if with_trace {
        let _ = writeln!(s, "\n== trace ==");
        s.push_str(&trace_lines(out));
    }
    let _ = writeln!(s, "\n== verdict ==");
    s.push_str(&violations(&out.history, report));
    if !out.unfinished.is_empty() {
        let names: Vec<&str> = out
            .unfinished
            .iter()
            .map(|id| out.history.node_name(id.0))
            .collect();
        let _ = writeln!(s, "unfinished workers: {}", names.join(", "));
    }
    let _ = writeln!(
        s,
        "run ended at {} after {} events{}",
        crate::history::fmt_time(out.end_ns).trim(),
        out.events,
        if out.hit_max_time {
            " (max_time_ms reached)".to_string()
        } else if out.hit_event_budget {
            format!(
                " (event budget of {} per run reached; shorten max_time_ms or slow the timers)",
                crate::sim::EVENTS_MAX
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(s, "trace hash {:016x}", out.trace_hash);
    s
}
