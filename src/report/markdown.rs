//! `summary.md`: the report as Markdown, for a pull request, an issue or a
//! repository visitor. Same content as the page, rendered from the same
//! [`Results`](super::results::Results): the suite table, then per drawn
//! scenario its verdict, the timeline as an image (`timelines/*.svg`, which
//! code hosts render), the checker's explanations with evidence records,
//! the replay command and the metric distributions as text.

use std::fmt::Write;

use super::doc::Doc;
use super::results::ScenarioResults;
use crate::check::ViolationKind;

/// Escapes the characters that would break a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn render(doc: &Doc) -> String {
    let r = &doc.results;
    let mut s = String::new();
    let _ = writeln!(s, "# fencesim report\n");
    let _ = writeln!(
        s,
        "fencesim {} · `fencesim {}` · {} scenario(s). The page with every timeline inline is `index.html`; machine-readable results are in `results.json`.\n",
        r.fencesim_version,
        r.command,
        r.scenarios.len()
    );
    suite_table(&mut s, &r.scenarios);
    s.push_str("\nViolation columns count failing seeds; “stale attempts” counts seeds in which a superseded generation's write reached the resource.\n");
    for sc in &r.scenarios {
        scenario_section(&mut s, sc);
    }
    s
}

/// The suite table: one row per scenario, failing seeds per kind.
fn suite_table(s: &mut String, scenarios: &[ScenarioResults]) {
    let _ = write!(s, "| scenario | protocol | seeds |");
    for k in ViolationKind::ALL {
        let _ = write!(s, " {} |", k.name());
    }
    let _ = writeln!(s, " stale attempts | fence rejected | expectation |");
    let _ = write!(s, "|---|---|--:|");
    for _ in ViolationKind::ALL {
        s.push_str("--:|");
    }
    s.push_str("--:|--:|---|\n");
    for sc in scenarios {
        let _ = write!(
            s,
            "| {} | {} | {} |",
            cell(&sc.name),
            cell(&sc.protocol),
            sc.seeds
        );
        for k in ViolationKind::ALL {
            let n = sc.failing_seeds.get(k.name()).copied().unwrap_or(0);
            if n > 0 {
                let _ = write!(s, " **{n}** |");
            } else {
                let _ = write!(s, " {n} |");
            }
        }
        let _ = writeln!(
            s,
            " {} | {} | {} |",
            sc.seeds_with_stale_attempts,
            sc.fence_rejected_total,
            if sc.expectation_met {
                "met"
            } else {
                "**NOT MET**"
            }
        );
    }
}

/// One scenario's section: its verdict, trials, timeline and metrics.
fn scenario_section(s: &mut String, sc: &ScenarioResults) {
    let _ = writeln!(s, "\n## {} ({})\n", sc.name, sc.protocol);
    let _ = writeln!(s, "`{}` — {}\n", sc.path, sc.description.replace('\n', " "));
    let unit = if sc.trials.is_empty() {
        "seed"
    } else {
        "trial"
    };
    let _ = writeln!(
        s,
        "Expectation **{}** over {} {unit}(s) from {}.",
        if sc.expectation_met { "met" } else { "NOT MET" },
        sc.seeds,
        sc.seed_start
    );
    for p in &sc.problems {
        let _ = writeln!(s, "- {p}");
    }
    if !sc.trials.is_empty() {
        let _ = writeln!(s, "\n```text\n{}\n```", sc.trials.join("\n"));
    }
    if let Some(t) = &sc.timeline {
        let _ = writeln!(s, "\n### Timeline of {unit} {} ({})\n", t.seed, t.reason);
        let _ = writeln!(s, "![timeline of {} seed {}]({})\n", sc.name, t.seed, t.svg);
        for (i, v) in t.violations.iter().enumerate() {
            let _ = writeln!(
                s,
                "{}. **{}** on key `{}`: {}\n",
                i + 1,
                v.kind,
                v.key,
                v.explanation
            );
            s.push_str("   ```text\n");
            for e in &v.evidence {
                let _ = writeln!(s, "   {}", e.text);
            }
            s.push_str("   ```\n\n");
        }
        let _ = writeln!(s, "Replay: `{}`", t.replay_command);
    }
    let dists: Vec<String> = sc
        .metrics
        .iter()
        .filter(|m| m.seeds_per_value.iter().any(|&(v, _)| v > 0))
        .map(|m| {
            let vals: Vec<String> = m
                .seeds_per_value
                .iter()
                .map(|(v, n)| format!("{v}×{n}"))
                .collect();
            format!("- `{}` (value×seeds): {}", m.name, vals.join(", "))
        })
        .collect();
    if !dists.is_empty() {
        let _ = writeln!(s, "\nPer-seed metrics:\n\n{}", dists.join("\n"));
    }
}
