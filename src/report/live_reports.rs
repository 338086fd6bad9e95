//! The files a CI job publishes from `fencesim live` and the live search
//! (`--json FILE`, `--junit FILE`, `--report DIR`), as `fencesim run`
//! writes them for a sweep: a versioned JSON report (schema
//! [`SCHEMA`]/[`SEARCH_SCHEMA`], documented in `docs/live.md`), JUnit with
//! one test case per scenario, and the report directory whose page draws
//! one real trial's timeline with the checker's evidence ringed.
//!
//! The layering rule of [`super::live`] holds here too: these are plain
//! wire structs (names, counts, paths; `check`'s report and `history`'s
//! records, both below `report/`) that `cli/live.rs` and
//! `cli/live_search.rs` fill from the trials.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::junit::{self, Case};
use super::results::{self, Results, ScenarioResults, TimelineResults};
use super::write::{verdict, Doc, Slugs};
use super::{scene, svg};
use crate::check::{Report, ViolationKind};
use crate::history::History;

pub const SCHEMA: &str = "fencesim-live";
pub const SEARCH_SCHEMA: &str = "fencesim-live-search";
pub const SCHEMA_VERSION: u32 = 1;

/// `fencesim live --json FILE`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LiveJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    pub scenarios: Vec<ScenarioJson>,
    /// Every scenario's expectation met.
    pub met: bool,
    /// The exit code `fencesim live` returned with this report.
    pub exit_code: u8,
}

/// One live scenario: its trials, their tally and the simulated twin's.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioJson {
    pub name: String,
    pub path: String,
    pub lock: String,
    pub write: String,
    pub twin: String,
    /// The kinds the scenario expects in most trials (empty: every trial clean).
    pub find: Vec<String>,
    pub trials: Vec<TrialJson>,
    /// Violation kind -> trials that showed it (every kind listed).
    pub live_trials_with: BTreeMap<String, u64>,
    pub clean_trials: u64,
    pub fence_rejected_trials: u64,
    /// Absent when the scenario's trials stopped at one that could not be judged.
    pub simulated: Option<SimulatedJson>,
    pub met: bool,
    /// Why the expectation was not met (empty when met).
    pub problems: Vec<String>,
}

/// The simulated twin's sweep, beside the live tally.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SimulatedJson {
    pub scenario: String,
    pub seeds: u64,
    /// Violation kind -> seeds that showed it (every kind listed).
    pub seeds_with: BTreeMap<String, u64>,
    pub fence_rejected_total: u64,
}

/// One live trial.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrialJson {
    /// 1-based.
    pub index: u32,
    /// Violation kinds found (empty: clean).
    pub violations: Vec<String>,
    pub fence_rejected: u64,
    /// The faults applied, in order, with when.
    pub faults: Vec<String>,
    /// The trial's history (JSON lines, for `check-history`); absent when not judged.
    pub history_file: Option<String>,
    pub trial_ms: u64,
    /// Why the trial could not be judged (a user's program misbehaved); then no verdict.
    pub not_judged: Option<String>,
}

impl LiveJson {
    pub fn new(scenarios: Vec<ScenarioJson>, exit_code: u8) -> LiveJson {
        LiveJson {
            schema: SCHEMA.to_string(),
            schema_version: SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            met: scenarios.iter().all(|s| s.met),
            scenarios,
            exit_code,
        }
    }
}

/// Violation kind -> count, every kind listed.
pub fn per_kind(count: impl Fn(ViolationKind) -> u64) -> BTreeMap<String, u64> {
    results::kinds_map(count)
}

/// Pretty JSON with a trailing newline.
pub fn to_json<T: Serialize>(report: &T) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("live report serializes");
    s.push('\n');
    s
}

/// JUnit: suite `fencesim live`, one case per scenario, failed when its
/// expectation is not met (message: kinds expected and found).
pub fn junit(r: &LiveJson) -> String {
    let cases: Vec<Case> = r
        .scenarios
        .iter()
        .map(|s| Case {
            classname: format!("live.{}", s.lock),
            name: s.name.clone(),
            file: s.path.clone(),
            failure: (!s.met).then(|| {
                let found: Vec<String> = s
                    .live_trials_with
                    .iter()
                    .filter(|(_, &n)| n > 0)
                    .map(|(k, n)| format!("{k} {n}/{}", s.trials.len()))
                    .collect();
                let expected = if s.find.is_empty() {
                    "every trial clean".to_string()
                } else {
                    s.find.join(", ")
                };
                let found = if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                };
                let message = match s
                    .trials
                    .iter()
                    .find_map(|t| Some((t.index, t.not_judged.as_ref()?)))
                {
                    Some((k, why)) => format!("trial {k} could not be judged: {why}"),
                    None => format!("expected {expected}; found {found}"),
                };
                let text = std::iter::once(message.clone())
                    .chain(s.problems.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("\n");
                (message, text)
            }),
        })
        .collect();
    junit::suite("fencesim live", &cases)
}

/// The trial a scenario's report draws, with why.
pub struct Drawn<'a> {
    pub trial: u32,
    pub reason: String,
    pub history: &'a History,
    pub report: &'a Report,
    pub history_file: &'a Path,
}

/// A trial as its line in the report's trials table.
fn trial_text(t: &TrialJson, trials: usize) -> String {
    if let Some(why) = &t.not_judged {
        return format!("trial {}/{trials}: not judged — {why}", t.index);
    }
    let kinds = if t.violations.is_empty() {
        "clean".to_string()
    } else {
        t.violations.join(", ")
    };
    format!(
        "trial {}/{trials}: {} — {kinds} — fence_rejected {} — {} — {} ms",
        t.index,
        t.faults.join("; "),
        t.fence_rejected,
        t.history_file.as_deref().unwrap_or("-"),
        t.trial_ms
    )
}

/// The report directory of a live run: `drawn` parallel to `r.scenarios`.
pub fn doc(r: &LiveJson, drawn: &[Option<Drawn>]) -> Doc {
    let mut slugs = Slugs::default();
    let mut scenarios = Vec::new();
    let mut svgs = Vec::new();
    for (s, d) in r.scenarios.iter().zip(drawn) {
        let slug = slugs.next(&s.name);
        let (timeline, svg) = match d {
            Some(d) => {
                let (t, svg) = timeline(&s.name, d, &slug);
                (Some(t), Some(svg))
            }
            None => (None, None),
        };
        scenarios.push(ScenarioResults {
            name: s.name.clone(),
            path: s.path.clone(),
            description: format!(
                "Live: {} lock + {} write, {} trial(s); simulated twin {}.",
                s.lock,
                s.write,
                s.trials.len(),
                s.twin
            ),
            protocol: format!("live {} + {}", s.lock, s.write),
            seed_start: 1,
            seeds: s.trials.len() as u64,
            failing_seeds: s.live_trials_with.clone(),
            seeds_with_stale_attempts: 0,
            fence_rejected_total: s.trials.iter().map(|t| t.fence_rejected).sum(),
            seeds_with_unfinished: 0,
            expectation_met: s.met,
            problems: s.problems.clone(),
            replay_seed: None,
            digest: String::new(),
            metrics: Vec::new(),
            timeline,
            trials: s
                .trials
                .iter()
                .map(|t| trial_text(t, s.trials.len()))
                .collect(),
        });
        svgs.push(svg);
    }
    Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "live".to_string(),
            scenarios,
        },
        svgs,
    }
}

/// A real trial's SVG timeline (no simulator trace: no message arrows) and
/// what the report says of it.
fn timeline(name: &str, d: &Drawn, slug: &str) -> (TimelineResults, String) {
    let end_ns = d
        .history
        .events
        .iter()
        .map(|e| e.t_true_ns)
        .max()
        .unwrap_or(0);
    let scene = scene::build(d.history, &[], d.report, end_ns);
    let title = format!("{name} · live trial {} — {}", d.trial, verdict(d.report));
    let svg = svg::render(&scene, &format!("tl-{slug}"), &title);
    let file = d.history_file.display().to_string();
    let t = TimelineResults {
        seed: d.trial as u64,
        reason: format!("trial {}: {}", d.trial, d.reason),
        replay_command: format!(
            "fencesim check-history {}",
            crate::suite::shell_quote(&file)
        ),
        svg: format!("timelines/{slug}.svg"),
        trace_hash: "none (a live trial)".to_string(),
        records: d.history.events.len() as u64,
        end_ns,
        metrics: results::metrics_map(d.report),
        violations: results::violations(d.history, d.report),
    };
    (t, svg)
}

/// `fencesim search LIVE.toml --json FILE`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SearchJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    pub path: String,
    pub max_faults: usize,
    pub coverage: CoverageJson,
    pub findings: Vec<FindingJson>,
    pub exit_code: u8,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoverageJson {
    pub placements: u64,
    pub tried: u64,
    pub not_expressible: u64,
    pub trials: u64,
    pub not_judged: u64,
    pub first_not_judged: Option<String>,
    pub distinct_histories: u64,
    pub wall_s: f64,
}

/// A kind of violation the search found, and its confirmation.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FindingJson {
    pub kind: String,
    /// Each placement that showed it, as fault labels, in search order.
    pub placements: Vec<String>,
    pub first_at_trial: u32,
    /// The live scenario written for it.
    pub file: String,
    /// Reruns of `file` that showed the kind, of `reruns`.
    pub reruns_shown: u32,
    pub reruns: u32,
    pub reproduces: bool,
}

impl SearchJson {
    pub fn new(
        path: &Path,
        max_faults: usize,
        coverage: CoverageJson,
        findings: Vec<FindingJson>,
        exit_code: u8,
    ) -> SearchJson {
        SearchJson {
            schema: SEARCH_SCHEMA.to_string(),
            schema_version: SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            path: path.display().to_string(),
            max_faults,
            coverage,
            findings,
            exit_code,
        }
    }
}

/// JUnit of a live search: one case (the scenario file), failed when a
/// placement broke it.
pub fn search_junit(r: &SearchJson) -> String {
    let failure = (!r.findings.is_empty()).then(|| {
        let kinds: Vec<&str> = r.findings.iter().map(|f| f.kind.as_str()).collect();
        let message = format!(
            "found {} with up to {} faults; expected none",
            kinds.join(", "),
            r.max_faults
        );
        let text = r
            .findings
            .iter()
            .map(|f| {
                format!(
                    "{}: {} — written to {} (shown in {}/{} reruns)",
                    f.kind,
                    f.placements.first().map_or("", String::as_str),
                    f.file,
                    f.reruns_shown,
                    f.reruns
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        (message, text)
    });
    let case = Case {
        classname: "live.search".to_string(),
        name: r.path.clone(),
        file: r.path.clone(),
        failure,
    };
    junit::suite("fencesim search (live)", &[case])
}

/// The report directory of a live search: its coverage and findings.
pub fn search_doc(r: &SearchJson) -> Doc {
    let c = &r.coverage;
    let mut lines = vec![format!(
        "coverage: {} placements ({} tried, {} not expressible), {} trials ({} not judged), {} distinct histories, {:.1} s",
        c.placements, c.tried, c.not_expressible, c.trials, c.not_judged, c.distinct_histories, c.wall_s
    )];
    for f in &r.findings {
        lines.push(format!(
            "found {} in {} placement(s), first at trial {}: {} — {} — reruns {}/{}{}",
            f.kind,
            f.placements.len(),
            f.first_at_trial,
            f.placements.first().map_or("", String::as_str),
            f.file,
            f.reruns_shown,
            f.reruns,
            if f.reproduces {
                ", reproduces"
            } else {
                ", does not reproduce"
            }
        ));
    }
    let found = |k: ViolationKind| r.findings.iter().any(|f| f.kind == k.name()) as u64;
    let scenario = ScenarioResults {
        name: r.path.clone(),
        path: r.path.clone(),
        description: format!(
            "Live search: every placement of up to {} faults.",
            r.max_faults
        ),
        protocol: "live search".to_string(),
        seed_start: 1,
        seeds: c.trials,
        failing_seeds: per_kind(found),
        seeds_with_stale_attempts: 0,
        fence_rejected_total: 0,
        seeds_with_unfinished: 0,
        expectation_met: r.findings.is_empty(),
        problems: r
            .findings
            .iter()
            .map(|f| format!("a placement showed {}", f.kind))
            .collect(),
        replay_seed: None,
        digest: String::new(),
        metrics: Vec::new(),
        timeline: None,
        trials: lines,
    };
    Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "search (live)".to_string(),
            scenarios: vec![scenario],
        },
        svgs: vec![None],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(met: bool) -> ScenarioJson {
        ScenarioJson {
            name: "gc-pause-plain-update".into(),
            path: "live/gc-pause-plain-update.toml".into(),
            lock: "redis-lease".into(),
            write: "plain".into(),
            twin: "scenarios/gc-pause.toml".into(),
            find: vec!["lost_update".into()],
            trials: vec![TrialJson {
                index: 1,
                violations: if met {
                    vec!["lost_update".into()]
                } else {
                    vec![]
                },
                fence_rejected: 0,
                faults: vec!["pause worker/0 at 10 ms".into()],
                history_file: Some("target/live/x-trial-1.jsonl".into()),
                trial_ms: 900,
                not_judged: None,
            }],
            live_trials_with: per_kind(|k| (met && k.name() == "lost_update") as u64),
            clean_trials: (!met) as u64,
            fence_rejected_trials: 0,
            simulated: None,
            met,
            problems: if met {
                vec![]
            } else {
                vec!["lost_update in 0/1 trials; expected in most".into()]
            },
        }
    }

    #[test]
    fn an_unmet_expectation_is_a_junit_failure_naming_the_kinds_expected_and_found() {
        let r = LiveJson::new(vec![scenario(false)], 1);
        let xml = junit(&r);
        assert!(
            xml.contains("<testsuite name=\"fencesim live\" tests=\"1\" failures=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"expected lost_update; found none\""),
            "{xml}"
        );
        let met = junit(&LiveJson::new(vec![scenario(true)], 0));
        assert!(!met.contains("<failure"), "{met}");
    }

    #[test]
    fn an_unmet_expectation_makes_the_json_report_unmet_and_round_trips() {
        let r = LiveJson::new(vec![scenario(true), scenario(false)], 1);
        assert!(!r.met);
        let back: LiveJson = serde_json::from_str(&to_json(&r)).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert!(!back.scenarios[1].met);
    }

    #[test]
    fn a_search_finding_is_a_junit_failure() {
        let coverage = CoverageJson {
            placements: 3,
            tried: 3,
            not_expressible: 0,
            trials: 3,
            not_judged: 0,
            first_not_judged: None,
            distinct_histories: 2,
            wall_s: 1.0,
        };
        let finding = FindingJson {
            kind: "lost_update".into(),
            placements: vec!["pause worker/0".into()],
            first_at_trial: 2,
            file: "x-search-lost_update.toml".into(),
            reruns_shown: 5,
            reruns: 5,
            reproduces: true,
        };
        let r = SearchJson::new(Path::new("x.toml"), 1, coverage, vec![finding], 1);
        assert!(
            search_junit(&r).contains("<failure message=\"found lost_update with up to 1 faults")
        );
        assert!(!search_doc(&r).results.scenarios[0].expectation_met);
    }
}
