//! `fencesim campaign --shrink`: each distinct failure a campaign kept,
//! shrunk ([`super::shrink`]) into a small scripted scenario, kept in its
//! entry (`shrunk`).

use crate::scenario::Scenario;
use crate::suite::campaign::{self, Failure, Findings};

/// The violation kind a failure's shrunk scenario keeps: its first
/// unexpected kind, else its first.
fn shrink_kind(f: &Failure, scenario: &Scenario) -> Option<crate::check::ViolationKind> {
    let kinds: Vec<_> = f
        .kinds
        .iter()
        .filter_map(|k| crate::check::ViolationKind::from_name(k))
        .collect();
    kinds
        .iter()
        .find(|k| !scenario.expect.tolerates(**k))
        .or(kinds.first())
        .copied()
}

/// Shrinks every failure not yet shrunk (`--shrink`) into a scripted
/// scenario, within `max_runs` candidate runs each; `sources[i]` is
/// scenario `i`'s file text. A failure of metrics alone has no violation
/// to keep and stays as it is.
pub fn shrink(found: &mut Findings, scenarios: &[Scenario], sources: &[String], max_runs: u64) {
    for ((at, _), f) in found.failures.iter_mut() {
        if f.shrunk.is_some() {
            continue;
        }
        let Some(kind) = shrink_kind(f, &scenarios[*at]) else {
            continue;
        };
        let result = super::shrink(
            &sources[*at],
            &f.scenario,
            f.seed,
            false,
            Some(kind),
            max_runs,
        );
        f.shrunk = Some(match result {
            Ok(s) => campaign::findings::Shrunk {
                kind: s.kind.name().to_string(),
                text: s.text,
                faults: [s.before.faults as u64, s.after.faults as u64],
                run_events: [s.before.events, s.after.events],
                error: None,
            },
            Err(e) => campaign::findings::Shrunk {
                kind: kind.name().to_string(),
                text: String::new(),
                faults: [0, 0],
                run_events: [0, 0],
                error: Some(e.to_string()),
            },
        });
    }
}
