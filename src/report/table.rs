//! The suite table printed by `fencesim run`: one row per scenario with its
//! protocol, seeds run, failing seeds per violation kind, the seed to replay
//! and whether the expectation was met. Failures and repro lines follow it
//! (`suite::text`).

use std::fmt::Write;

use crate::check::ViolationKind;
use crate::suite::ScenarioResult;

pub fn render(results: &[ScenarioResult]) -> String {
    let name_w = results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let proto_w = results
        .iter()
        .map(|r| r.protocol.len())
        .max()
        .unwrap_or(8)
        .max(8);
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
