//! The text `fencesim run` and `fencesim merge` print after the sweep: the
//! suite table (from [`super::table`]), the production metrics table
//! ([`super::production`]), then for every scenario whose
//! expectation failed its problems and the one command that reproduces it,
//! then under `--swarm` which fault mixes found which violations, then the
//! suite digest.

use std::fmt::Write;

use crate::check::ViolationKind;
use crate::suite::{suite_digest, swarm, ScenarioResult};

pub fn render(results: &[ScenarioResult]) -> String {
    let mut s = super::table::render(results);
    s.push_str(&super::production::table(results));
    for r in results.iter().filter(|r| !r.met()) {
        let _ = writeln!(s, "\n{} ({}): expectation not met", r.name, r.path);
        for p in &r.problems {
            let _ = writeln!(s, "  - {p}");
        }
        if let Some(seed) = r.replay_seed {
            let _ = writeln!(s, "  replay: {}", r.repro(seed));
        }
    }
    for r in results.iter().filter(|r| !r.agg.mixes.is_empty()) {
        s.push_str(&mixes(r));
    }
    let _ = writeln!(
        s,
        "\nsuite digest {:016x} ({} seeds, {} events)",
        suite_digest(results),
        results.iter().map(|r| r.agg.seeds).sum::<u64>(),
        results.iter().map(|r| r.agg.events).sum::<u64>()
    );
    s
}

/// Which swarm mixes found which violations in one scenario.
fn mixes(r: &ScenarioResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nswarm mixes of {} (seeds run, seeds per violation):",
        r.name
    );
    let width = r
        .agg
        .mixes
        .keys()
        .map(|&m| swarm::label(m).len())
        .max()
        .unwrap_or(4);
    let mut quiet = 0;
    for (&mix, stats) in &r.agg.mixes {
        if stats.failing_seeds.iter().all(|&n| n == 0) {
            quiet += stats.seeds;
            continue;
        }
        let _ = write!(
            s,
            "  {:<width$}  {:>5} seeds",
            swarm::label(mix),
            stats.seeds
        );
        for k in ViolationKind::ALL {
            let n = stats.failing_seeds[k as usize];
            if n > 0 {
                let _ = write!(s, "  {k} {n}");
            }
        }
        s.push('\n');
    }
    let found = r
        .agg
        .mixes
        .values()
        .filter(|m| m.failing_seeds.iter().any(|&n| n > 0))
        .count();
    let _ = writeln!(
        s,
        "  ({found} mixes found violations; {} mixes over {quiet} seeds found none)",
        r.agg.mixes.len() - found
    );
    s
}
