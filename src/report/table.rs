//! The suite table printed by `fencesim run`: one row per scenario with its
//! protocol, seeds run, failing seeds per violation kind, the seed to replay
//! and whether the expectation was met. Failures and repro lines follow it
//! (`report::text`).

use std::fmt::Write;

use crate::check::ViolationKind;
use crate::suite::ScenarioResult;

/// Widest a text column is padded to. Longer cells print in full and push
/// their row out of line; padding to them would not help the reader, and
/// `format!` refuses widths above 65535 (a panic).
pub const COLUMN_MAX: usize = 64;

/// The width of a column holding `cells`: the widest, from 8 to [`COLUMN_MAX`].
pub fn column_width<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, COLUMN_MAX)
}

pub fn render(results: &[ScenarioResult]) -> String {
    let name_w = column_width(results.iter().map(|r| r.name.as_str()));
    let proto_w = column_width(results.iter().map(|r| r.protocol.as_str()));
    let mut s = String::new();
    let _ = write!(
        s,
        "{:<name_w$}  {:<proto_w$}  {:>6}",
        "scenario", "protocol", "seeds"
    );
    for k in ViolationKind::ALL {
        let _ = write!(s, "  {:>14}", k.name());
    }
    let _ = writeln!(s, "  {:>10}  {:>6}  expectation", "first-fail", "stale%");
    for r in results {
        let _ = write!(
            s,
            "{:<name_w$}  {:<proto_w$}  {:>6}",
            r.name, r.protocol, r.agg.seeds
        );
        for k in ViolationKind::ALL {
            let _ = write!(s, "  {:>14}", r.agg.failing_seeds[k as usize]);
        }
        let first = r.replay_seed.map_or("-".to_string(), |s| s.to_string());
        let stale = if r.agg.seeds == 0 {
            0.0
        } else {
            100.0 * r.agg.seeds_with_stale_attempts as f64 / r.agg.seeds as f64
        };
        let _ = writeln!(
            s,
            "  {:>10}  {:>5.0}%  {}",
            first,
            stale,
            if r.met() { "met" } else { "NOT MET" }
        );
    }
    s
}

/// The one command that reproduces a seed.
pub fn repro_command(path: &str, seed: u64) -> String {
    format!("fencesim replay {path} --seed {seed}")
}
