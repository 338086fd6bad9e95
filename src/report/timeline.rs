//! A text timeline of one run in the spirit of the article's diagram:
//!
//! ```text
//! worker A: acquire #41 ───── paused ─────────── write #41 ✗
//! lease:                         expires
//! worker B:                         acquire #42 ─ write #42 ✓
//! ```
//!
//! Drawn vertically so it never runs out of width: one column ("lane") per
//! worker, then the lease (coordinator) and the resource; one row per
//! history record that matters to the story, in true-time order. Lanes of
//! paused or crashed nodes are shaded while they are out. Rows the checker
//! cited as evidence are marked `>>` in the margin.

use std::collections::BTreeSet;

use crate::history::{fmt_time, Event, History, Kind, Outcome};

const LANE_WIDTH: usize = 24;

/// Which column a node's records go to: workers in order, then coordinator
/// ("lease"), then resource.
fn lanes(h: &History) -> Vec<(u16, String)> {
    let mut workers = Vec::new();
    let mut coords = Vec::new();
    let mut resources = Vec::new();
    for (i, name) in h.nodes.iter().enumerate() {
        let lane = (i as u16, name.clone());
        if name.starts_with("coord") {
            coords.push((i as u16, format!("lease ({name})")));
        } else if name.starts_with("resource") {
            resources.push(lane);
        } else {
            workers.push(lane);
        }
    }
    workers.into_iter().chain(coords).chain(resources).collect()
}

/// The cell text for a record, or None if the record is not drawn.
fn cell(e: &Event) -> Option<String> {
    let g = |id: Option<u64>| id.map_or("?".to_string(), |g| format!("g{g}"));
    let tok = |t: Option<u64>| t.map_or(String::new(), |t| format!(" #{t}"));
    let op = e.op_id.unwrap_or(0);
    Some(match e.kind {
        Kind::GrantIssued => format!("grant {}{}", g(e.grant_id), tok(e.token)),
        Kind::GrantReceived => format!("acquired {}{}", g(e.grant_id), tok(e.token)),
        Kind::BecameActive => format!("ACTIVE {}{}", g(e.grant_id), tok(e.token)),
        Kind::SteppedDown => format!("steps down ({})", e.detail.as_deref().unwrap_or("?")),
        Kind::LeaseExpired => format!("expires {}", g(e.grant_id)),
        Kind::ReadOk => format!("read -> {}", e.value.unwrap_or(0)),
        Kind::ReadRejected => "read ✗ (fenced)".to_string(),
        Kind::WriteSent => format!("write {op}{}", tok(e.token)),
        Kind::WriteAccepted => format!("✓ {op}{} stored", tok(e.token)),
        Kind::WriteRejected => format!("✗ {op}{} (fence {})", tok(e.token), e.value.unwrap_or(0)),
        Kind::WriteAcked if e.outcome == Some(Outcome::Rejected) => format!("{op} rejected"),
        Kind::ReleaseSent => format!("release {}", g(e.grant_id)),
        Kind::ReleaseApplied => match e.removed_grant_id {
            Some(r) if Some(r) == e.grant_id => format!("released {}", g(Some(r))),
            Some(r) => format!("deletes {} (for {})", g(Some(r)), g(e.grant_id)),
            None => format!("release {}: none", g(e.grant_id)),
        },
        Kind::Pause => format!(
            "── paused {} ──",
            e.detail.as_deref().unwrap_or("").trim_start_matches("for ")
        ),
        Kind::Resume => "── resumes ──".to_string(),
        Kind::Crash => "✗ crash".to_string(),
        Kind::Restart => "restart".to_string(),
        Kind::Partition => "partition".to_string(),
        Kind::Heal => "partition heals".to_string(),
        Kind::OpAbandoned => format!("gives up {op}"),
        Kind::Unfinished => "unfinished".to_string(),
        Kind::WorkloadDone => "done".to_string(),
        Kind::RenewFailed => format!("renew {} refused", g(e.grant_id)),
        Kind::LeaseLost => format!("lost lease {}", g(e.grant_id)),
        Kind::Failover => "promoted (failover)".to_string(),
        Kind::EffectSent => format!("effect {op}"),
        Kind::EffectPerformed => format!("✉ effect {op} performed"),
        Kind::EffectDeduplicated => format!("effect {op} deduplicated"),
        Kind::WriteDeduplicated => format!("= {op} duplicate, not applied"),
        Kind::ReadSent
        | Kind::ReadServed
        | Kind::WriteAcked
        | Kind::AcquireSent
        | Kind::RenewOk
        | Kind::WatchNotified => return None,
    })
}

fn fit(s: &str) -> String {
    let n = s.chars().count();
    if n >= LANE_WIDTH {
        let cut: String = s.chars().take(LANE_WIDTH - 2).collect();
        format!("{cut}… ")
    } else {
        format!("{s}{}", " ".repeat(LANE_WIDTH - n))
    }
}

/// Renders the timeline; `evidence` are seq numbers to mark.
pub fn render(h: &History, evidence: &BTreeSet<u64>) -> String {
    let lanes = lanes(h);
    let mut out = String::new();
    out.push_str(&format!("   {:<12}", "true time"));
    for (_, name) in &lanes {
        out.push_str(&fit(name));
    }
    trim_line(&mut out);
    out.push_str(&format!("   {:<12}", ""));
    for _ in &lanes {
        out.push_str(&fit(&"─".repeat(LANE_WIDTH - 2)));
    }
    trim_line(&mut out);
    let mut out_of_service: Vec<Option<&'static str>> = vec![None; lanes.len()];
    for e in &h.events {
        let Some(text) = cell(e) else { continue };
        let Some(col) = lanes.iter().position(|(id, _)| *id == e.node) else {
            continue;
        };
        let mark = if evidence.contains(&e.seq) {
            ">> "
        } else {
            "   "
        };
        out.push_str(mark);
        out.push_str(&format!("{:<12}", fmt_time(e.t_true_ns).trim()));
        for (i, _) in lanes.iter().enumerate() {
            if i == col {
                out.push_str(&fit(&text));
            } else if let Some(shade) = out_of_service[i] {
                out.push_str(&fit(shade));
            } else {
                out.push_str(&fit("│"));
            }
        }
        trim_line(&mut out);
        match e.kind {
            Kind::Pause => out_of_service[col] = Some("┆ paused"),
            Kind::Crash => out_of_service[col] = Some("┆ down"),
            Kind::Resume | Kind::Restart => out_of_service[col] = None,
            _ => {}
        }
    }
    out
}

fn trim_line(out: &mut String) {
    while out.ends_with(' ') {
        out.pop();
    }
    out.push('\n');
}
