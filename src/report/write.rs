//! The report directory written by `--report DIR`: `index.html` (the page,
//! timelines inline), `summary.md` (links the same timelines as
//! `timelines/*.svg`, which GitHub renders), and `results.json`.
//!
//! This module decides *what* goes in — which seed each scenario's timeline
//! shows and why — and leaves *how* to [`super::html`], [`super::markdown`]
//! and [`super::svg`]. A scenario gets a timeline when it found a violation
//! (the seed to replay first) or, when clean, when its fence rejected a
//! stale write (the lowest such seed: the safe twin telling the same
//! story). Output depends only on the scenarios, seeds and code — never on
//! the time, the machine or `--jobs`.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use super::doc::Doc;
use super::results::{self, MetricSeries, Results, ScenarioResults, TimelineResults};
use super::{html, markdown, scene, svg, table};
use crate::check::Report;
use crate::scenario::Scenario;
use crate::sim::RunOutcome;
use crate::suite::seed_stats::{SeedStats, SERIES};
use crate::suite::{self, RunSeed, ScenarioResult, SeedRun};

/// Builds the report of a `fencesim run`.
///
/// Each scenario's seeds, shard and swarm setting come from its result, so
/// the report covers exactly the runs the sweep judged (one shard's seeds
/// under `--shard`; each seed's own swarm mix under `--swarm`). Nothing is
/// re-run but the one seed each timeline draws, through the same home as
/// the sweep ([`crate::suite::seed::run`], with its swarm mix and a trace).
pub fn run_doc(scenarios: &[Scenario], results: &[ScenarioResult]) -> Doc {
    assert_eq!(scenarios.len(), results.len(), "one result per scenario");
    let mut slugs = Slugs::default();
    let mut doc = Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "run".to_string(),
            scenarios: Vec::new(),
        },
        svgs: Vec::new(),
    };
    for (s, r) in scenarios.iter().zip(results) {
        let range = r.seeds.clone();
        let stats = &r.agg.seed_stats;
        let any_violation = r.agg.failing_seeds.iter().any(|&n| n > 0);
        let pick = match (r.replay_seed, stats.first_rejected_seed) {
            (Some(seed), _) if !r.met() => Some((seed, "the seed to replay first")),
            (Some(seed), _) if any_violation => Some((seed, "the lowest seed with a violation")),
            (_, Some(seed)) => Some((
                seed,
                "the lowest seed in which the fence rejected a stale write",
            )),
            (seed, None) => seed.map(|s| (s, "the seed to replay first")),
        };
        let slug = slugs.next(&s.name);
        let (timeline, svg) = match pick {
            Some((seed, reason)) => {
                // The seed exactly as the sweep ran it: with its swarm mix.
                let how = RunSeed {
                    keep_trace: true,
                    swarm: r.cfg.swarm,
                    terse: false,
                };
                let SeedRun {
                    outcome: out,
                    report,
                    ..
                } = suite::seed::run(&s.options, seed, how);
                let (t, svg) = timeline(s, &out, &report, reason, &slug, r.cfg.swarm);
                (Some(t), Some(svg))
            }
            None => (None, None),
        };
        doc.results.scenarios.push(ScenarioResults {
            name: r.name.clone(),
            path: r.path.clone(),
            description: s.description.trim().to_string(),
            protocol: r.protocol.clone(),
            seed_start: range.start,
            seeds: r.agg.seeds,
            failing_seeds: results::kinds_map(|k| r.agg.failing_seeds[k as usize]),
            seeds_with_stale_attempts: r.agg.seeds_with_stale_attempts,
            fence_rejected_total: r.agg.fence_rejected_total,
            seeds_with_unfinished: r.agg.seeds_with_unfinished,
            expectation_met: r.met(),
            problems: r.problems.clone(),
            replay_seed: r.replay_seed,
            digest: format!("{:016x}", r.agg.digest),
            metrics: metric_series(stats),
            timeline,
            trials: Vec::new(),
        });
        doc.svgs.push(svg);
    }
    doc
}

/// Builds the report of a `fencesim replay` of one seed.
pub fn replay_doc(s: &Scenario, out: &RunOutcome, report: &Report, swarm: bool) -> Doc {
    let mut problems: Vec<String> = report
        .kinds()
        .filter(|k| !s.expect.tolerates(*k))
        .map(|k| format!("unexpected {k} in this seed"))
        .collect();
    problems.extend(s.expect.failed_metrics(report));
    let slug = format!("{}-seed-{}", Slugs::default().next(&s.name), out.seed);
    let (timeline, svg) = timeline(s, out, report, "the replayed seed", &slug, swarm);
    let stats = SeedStats::default().add(out.seed, report);
    let scenario = ScenarioResults {
        name: s.name.clone(),
        path: s.path.display().to_string(),
        description: s.description.trim().to_string(),
        protocol: crate::suite::protocol_label(s),
        seed_start: out.seed,
        seeds: 1,
        failing_seeds: results::kinds_map(|k| (report.count(k) > 0) as u64),
        seeds_with_stale_attempts: report.info.hazard_reached() as u64,
        fence_rejected_total: report.info.fence_rejected_total,
        seeds_with_unfinished: (!out.unfinished.is_empty()) as u64,
        expectation_met: problems.is_empty(),
        problems,
        replay_seed: Some(out.seed),
        digest: format!("{:016x}", out.trace_hash),
        metrics: metric_series(&stats),
        timeline: Some(timeline),
        trials: Vec::new(),
    };
    Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "replay".to_string(),
            scenarios: vec![scenario],
        },
        svgs: vec![Some(svg)],
    }
}

fn metric_series(stats: &SeedStats) -> Vec<MetricSeries> {
    SERIES
        .iter()
        .zip(&stats.hist)
        .map(|((name, description), hist)| MetricSeries {
            name: name.to_string(),
            description: description.to_string(),
            seeds_per_value: hist.iter().map(|(&v, &n)| (v, n)).collect(),
        })
        .collect()
}

fn timeline(
    s: &Scenario,
    out: &RunOutcome,
    report: &Report,
    reason: &str,
    slug: &str,
    swarm: bool,
) -> (TimelineResults, String) {
    let scene = scene::build(&out.history, &out.trace, report, out.end_ns);
    let verdict = verdict(report);
    let title = format!(
        "{} · {} · seed {} — {verdict}",
        s.name,
        crate::suite::protocol_label(s),
        out.seed
    );
    let svg = svg::render(&scene, &format!("tl-{slug}"), &title);
    let path = s.path.display().to_string();
    let t = TimelineResults {
        seed: out.seed,
        reason: reason.to_string(),
        replay_command: if swarm {
            format!("{} --swarm", table::repro_command(&path, out.seed))
        } else {
            table::repro_command(&path, out.seed)
        },
        svg: format!("timelines/{slug}.svg"),
        trace_hash: format!("{:016x}", out.trace_hash),
        records: out.history.events.len() as u64,
        end_ns: out.end_ns,
        metrics: results::metrics_map(report),
        violations: results::violations(&out.history, report),
    };
    (t, svg)
}

/// A timeline's verdict for its title: the kinds found, or clean (with
/// the fence's rejections, when there were any).
pub(super) fn verdict(report: &Report) -> String {
    if report.is_clean() {
        match report.info.fence_rejected_total {
            0 => "no violations".to_string(),
            n => format!("no violations — the fence rejected {n} stale write(s)"),
        }
    } else {
        let kinds: Vec<&str> = report.kinds().map(|k| k.name()).collect();
        kinds.join(", ")
    }
}

/// File-name-safe, unique scenario slugs.
#[derive(Default)]
pub(super) struct Slugs {
    used: BTreeSet<String>,
}

impl Slugs {
    pub(super) fn next(&mut self, name: &str) -> String {
        let base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "scenario".into()
        } else {
            base
        };
        let mut slug = base.clone();
        let mut n = 2;
        while !self.used.insert(slug.clone()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        slug
    }
}

/// Writes `index.html`, `summary.md`, `results.json` and
/// `timelines/*.svg` into `dir` (created if missing).
pub fn write(dir: &Path, doc: &Doc) -> Result<()> {
    let timelines = dir.join("timelines");
    std::fs::create_dir_all(&timelines)
        .with_context(|| format!("creating {}", timelines.display()))?;
    let put = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    put("index.html", &html::render(doc))?;
    put("summary.md", &markdown::render(doc))?;
    put("results.json", &results::to_json(&doc.results))?;
    for (sc, svg) in doc.results.scenarios.iter().zip(&doc.svgs) {
        if let (Some(t), Some(svg)) = (&sc.timeline, svg) {
            let mut standalone = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
            standalone.push_str(svg);
            put(&t.svg, &standalone)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Slugs;

    #[test]
    fn slugs_are_file_safe_and_unique() {
        let mut s = Slugs::default();
        assert_eq!(s.next("GC pause/v2"), "gc-pause-v2");
        assert_eq!(s.next("GC pause/v2"), "gc-pause-v2-2");
        assert_eq!(s.next(""), "scenario");
    }
}
