//! What a campaign prints (`fencesim campaign`, and `fencesim merge` of its
//! slices): the text summary — one block per distinct failure, with its
//! fastest seed, its shape and the command that replays it — the JUnit
//! file (one test case per scenario, failed by an unexpected failure), and
//! the `--report` directory's index page, which links each failure's
//! replay report.

use std::fmt::Write;

use super::html::CSS;
use super::junit::{suite, Case};
use super::xml::esc;
use crate::suite::campaign::json::CampaignJson;
use crate::suite::campaign::{Budget, Failure};

/// `budget 1000 seeds` / `budget 60 s per slice`.
fn budget(b: Budget) -> String {
    match b {
        Budget::Seeds(n) => format!("budget {n} seeds"),
        Budget::Secs(s) => format!("budget {s} s per slice"),
    }
}

/// The campaign's first line: its seed, which replays it.
pub fn header(c: &CampaignJson) -> String {
    format!(
        "campaign seed {:#018x} — {} scenarios, {}{}",
        c.campaign_seed,
        c.scenarios.len(),
        budget(c.budget),
        c.slice()
            .shard
            .map_or(String::new(), |s| format!(", shard {s}"))
    )
}

/// The scenario's name, from its path.
fn name_of<'a>(c: &'a CampaignJson, path: &str) -> &'a str {
    c.scenarios
        .iter()
        .find(|s| s.path == path)
        .map_or("?", |s| &s.name)
}

fn verdict(c: &CampaignJson) -> String {
    match (c.complete, c.unexpected) {
        (false, _) => format!(
            "STOPPED after {} draws: checkpoint kept; rerun the same command to continue",
            c.seeds
        ),
        (true, 0) => "OK: no unexpected failure".to_string(),
        (true, n) => format!("FAILED: {n} distinct unexpected failures"),
    }
}

/// The text summary, header line first.
pub fn text(c: &CampaignJson) -> String {
    let mut s = header(c);
    let _ = writeln!(
        s,
        "\n{} draws, {} runs, {} events: {} failing runs, {} distinct failures ({} unexpected)",
        c.seeds,
        c.runs,
        c.events,
        c.failing_runs,
        c.failures.len(),
        c.unexpected
    );
    for f in &c.failures {
        let _ = writeln!(
            s,
            "\n{} {} [{}] seed {} (draw {}): {} events, {} hits\n  shape:  {}\n  replay: {}",
            if f.expected {
                "expected  "
            } else {
                "UNEXPECTED"
            },
            name_of(c, &f.scenario),
            f.signature,
            f.seed,
            f.draw,
            f.events,
            f.hits,
            f.shape,
            f.replay
        );
        if let Some(sh) = &f.shrunk {
            let _ = match &sh.error {
                Some(e) => writeln!(s, "  shrunk: not ({e})"),
                None => writeln!(
                    s,
                    "  shrunk: {} faults -> {}, {} events -> {} (keeps {})",
                    sh.faults[0], sh.faults[1], sh.run_events[0], sh.run_events[1], sh.kind
                ),
            };
        }
    }
    let _ = writeln!(s, "\n{}", verdict(c));
    s
}

/// One line per failure of `failures`, for a JUnit failure's text.
fn listed(failures: &[&Failure]) -> String {
    failures
        .iter()
        .map(|f| {
            format!(
                "{} (seed {}, {} events)\nreplay: {}",
                f.shape, f.seed, f.events, f.replay
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// JUnit XML: one case per scenario, failed by its unexpected failures.
pub fn junit(c: &CampaignJson) -> String {
    let cases: Vec<Case> = c
        .scenarios
        .iter()
        .map(|sc| {
            let bad: Vec<&Failure> = c
                .failures
                .iter()
                .filter(|f| f.scenario == sc.path && !f.expected)
                .collect();
            Case {
                classname: "campaign".into(),
                name: sc.name.clone(),
                file: sc.path.clone(),
                failure: (!bad.is_empty()).then(|| {
                    (
                        format!("{} distinct unexpected failures", bad.len()),
                        listed(&bad),
                    )
                }),
                skipped: None,
            }
        })
        .collect();
    suite(&header(c), &cases)
}

/// The report's index page; `links[i]` is failure `i`'s replay report.
pub fn index_html(c: &CampaignJson, links: &[String]) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>fencesim campaign</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n<h1>fencesim campaign</h1>\n<p>{}</p>\n<p>{} draws, {} runs, {} failing runs, {} distinct failures ({} unexpected). <b>{}</b></p>\n",
        esc(&header(c)),
        c.seeds,
        c.runs,
        c.failing_runs,
        c.failures.len(),
        c.unexpected,
        esc(&verdict(c))
    );
    s.push_str("<div class=\"card table-wrap\"><table class=\"suite\">\n<tr><th>scenario</th><th>failure</th><th>seed</th><th>events</th><th>hits</th><th>replay</th></tr>\n");
    for (f, link) in c.failures.iter().zip(links) {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td class=\"{}\">{}</td><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(name_of(c, &f.scenario)),
            if f.expected { "met" } else { "found" },
            esc(&f.shape),
            esc(link),
            f.seed,
            f.events,
            f.hits,
            esc(&f.replay)
        );
    }
    s.push_str("</table></div>\n</main>\n</body>\n</html>\n");
    s
}

/// Writes the `--report` directory: `index.html` (the failures, each
/// linking its fastest seed's replay report), `failures/NN/` (that report:
/// timeline, violations, evidence), `shrunk/NN.toml` under `--shrink`, and
/// `campaign.json`. `scenarios` are the campaign's, in its order.
pub fn write_dir(
    dir: &std::path::Path,
    c: &CampaignJson,
    scenarios: &[crate::scenario::Scenario],
) -> anyhow::Result<()> {
    use anyhow::Context;
    let put = |rel: &str, text: &str| {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    let mut links = Vec::new();
    for (n, f) in c.failures.iter().enumerate() {
        let Some(s) = scenarios
            .iter()
            .find(|s| s.path.display().to_string() == f.scenario)
        else {
            links.push(String::new());
            continue;
        };
        let how = crate::suite::RunSeed {
            keep_trace: true,
            ..Default::default()
        };
        let run = crate::suite::seed::run(&s.options, f.seed, how);
        let doc = super::write::replay_doc(s, &run.outcome, &run.report, false);
        let sub = format!("failures/{n:02}");
        super::write::write(&dir.join(&sub), &doc)?;
        links.push(format!("{sub}/index.html"));
        if let Some(sh) = f.shrunk.as_ref().filter(|sh| sh.error.is_none()) {
            put(&format!("shrunk/{n:02}.toml"), &sh.text)?;
        }
    }
    put("index.html", &index_html(c, &links))?;
    put("campaign.json", &serde_json::to_string_pretty(c)?)?;
    Ok(())
}
