//! The files a CI job publishes from `fencesim live` and the live search
//! (`--json FILE`, `--junit FILE`, `--report DIR`), as `fencesim run`
//! writes them for a sweep: a versioned JSON report (schema
//! [`SCHEMA`]/[`SEARCH_SCHEMA`]/[`CHAOS_SCHEMA`], documented in `docs/live-running.md` and `docs/live-search.md`), JUnit with
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

use super::doc::Doc;
use super::junit::{self, Case};
use super::results::{self, Results, ScenarioResults, TimelineResults};
use super::write::{verdict, Slugs};
use super::{scene, svg};
use crate::check::{Report, ViolationKind};
use crate::history::History;

pub const SCHEMA: &str = "fencesim-live";
pub const SEARCH_SCHEMA: &str = "fencesim-live-search";
pub const CHAOS_SCHEMA: &str = "fencesim-live-chaos";
pub const SCHEMA_VERSION: u32 = 1;
/// `fencesim live`'s schema: 2 added `interrupted` (Ctrl-C keeps the
/// trials that finished), on the run and on the scenario it stopped in.
pub const LIVE_SCHEMA_VERSION: u32 = 2;
/// The live search's schema: 2 added `interrupted` (Ctrl-C keeps the
/// coverage of the trials that finished).
pub const SEARCH_SCHEMA_VERSION: u32 = 2;

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
    /// Ctrl-C stopped the run: the scenarios listed are those that began,
    /// the last with the trials that finished, and there is no verdict.
    pub interrupted: bool,
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
    /// Absent when a trial of the scenario could not be judged (no verdict).
    pub simulated: Option<SimulatedJson>,
    pub met: bool,
    /// Why the expectation was not met (empty when met).
    pub problems: Vec<String>,
    /// Ctrl-C stopped its trials: `trials` are those that finished.
    pub interrupted: bool,
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
    /// Why the trial could not be judged (a user's program misbehaved, or a
    /// server or cluster failed it twice: `could not run, twice: …`); then
    /// its scenario has no verdict and the run exits 3.
    pub not_judged: Option<String>,
}

impl LiveJson {
    pub fn new(scenarios: Vec<ScenarioJson>, exit_code: u8) -> LiveJson {
        LiveJson {
            schema: SCHEMA.to_string(),
            schema_version: LIVE_SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            met: scenarios.iter().all(|s| s.met),
            interrupted: scenarios.iter().any(|s| s.interrupted),
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
            // A scenario Ctrl-C cut short has no verdict: neither met nor failed.
            skipped: s
                .interrupted
                .then(|| format!("interrupted after {} trial(s): no verdict", s.trials.len())),
            failure: (!s.met && !s.interrupted).then(|| {
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
    /// Ctrl-C stopped it: the coverage is of the trials that finished, the
    /// findings unconfirmed past the point it stopped, and no verdict.
    pub interrupted: bool,
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
        interrupted: bool,
        exit_code: u8,
    ) -> SearchJson {
        SearchJson {
            schema: SEARCH_SCHEMA.to_string(),
            schema_version: SEARCH_SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            path: path.display().to_string(),
            max_faults,
            coverage,
            findings,
            interrupted,
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
        // A finding fails the case even when Ctrl-C cut the search short
        // (its trial showed it); a clean but unfinished search is no pass.
        skipped: (r.interrupted && failure.is_none()).then(|| {
            format!(
                "interrupted after {} of {} trials: no verdict",
                r.coverage.trials, r.coverage.tried
            )
        }),
        failure,
    };
    junit::suite("fencesim search (live)", &[case])
}

/// The report directory of a live search: its coverage and findings, and
/// per finding the timeline of `drawn`'s trial (parallel to `r.findings`:
/// a rerun of the written file that showed the kind).
pub fn search_doc(r: &SearchJson, drawn: &[Option<Drawn>]) -> Doc {
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
    let mut scenarios = vec![scenario];
    let mut svgs = vec![None];
    let mut slugs = Slugs::default();
    for (f, d) in r.findings.iter().zip(drawn) {
        let Some(d) = d else { continue };
        let (t, svg) = timeline(&f.kind, d, &slugs.next(&format!("finding-{}", f.kind)));
        scenarios.push(finding_section(f, t));
        svgs.push(Some(svg));
    }
    Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "search (live)".to_string(),
            scenarios,
        },
        svgs,
    }
}

/// A finding's own section of the search's report: its written file, its
/// reruns and the timeline of one that showed it.
fn finding_section(f: &FindingJson, timeline: TimelineResults) -> ScenarioResults {
    let shown = |k: ViolationKind| (k.name() == f.kind) as u64 * f.reruns_shown as u64;
    ScenarioResults {
        name: format!("{}: {}", f.kind, f.file),
        path: f.file.clone(),
        description: format!(
            "The placement that showed {} ({}), written to {} and run {} times.",
            f.kind,
            f.placements.first().map_or("", String::as_str),
            f.file,
            f.reruns
        ),
        protocol: "live search finding".to_string(),
        seed_start: 1,
        seeds: f.reruns as u64,
        failing_seeds: per_kind(shown),
        seeds_with_stale_attempts: 0,
        fence_rejected_total: 0,
        seeds_with_unfinished: 0,
        expectation_met: false,
        problems: vec![format!(
            "{} in {}/{} reruns of the written file{}",
            f.kind,
            f.reruns_shown,
            f.reruns,
            if f.reproduces {
                ": reproduces"
            } else {
                ": does not reproduce reliably"
            }
        )],
        replay_seed: None,
        digest: String::new(),
        metrics: Vec::new(),
        timeline: Some(timeline),
        trials: vec![format!(
            "placement: {}",
            f.placements.first().map_or("", String::as_str)
        )],
    }
}

/// `fencesim search LIVE.toml --chaos SEED --json FILE`: the seeded
/// nemesis, trial by trial (schema [`CHAOS_SCHEMA`]).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChaosJson {
    pub schema: String,
    pub schema_version: u32,
    pub fencesim_version: String,
    pub path: String,
    /// The user's program (`--worker-cmd` or the file's); null: the built-in worker.
    pub worker_cmd: Option<String>,
    pub seed: u64,
    /// `--chaos-trials`: trials asked for; fewer ran when one reproduced
    /// (the nemesis stops there) or the run was stopped.
    pub chaos_trials: u32,
    /// `--faults`: at most this many faults per trial.
    pub max_faults: usize,
    /// `--confirm`: reruns of a schedule that showed a violation.
    pub confirm_reruns: u32,
    pub trials: Vec<ChaosTrialJson>,
    /// The trial whose violation reproduced.
    pub found_at_trial: Option<u32>,
    /// Ctrl-C stopped the run: `trials` are those that finished; no verdict.
    pub interrupted: bool,
    /// What stopped the run when the harness or a server failed.
    pub error: Option<String>,
    pub wall_ms: u64,
    /// What the command returned with this report.
    pub exit_code: u8,
}

/// One trial of the nemesis.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ChaosTrialJson {
    /// 1-based; (seed, trial) draws the schedule.
    pub trial: u32,
    pub schedule: Vec<FaultJson>,
    pub verdict: ChaosVerdict,
    /// The trial's history (JSON lines, for `check-history`); null when not judged.
    pub history_file: Option<String>,
    pub trial_ms: u64,
    /// A violation: reruns of the same schedule that showed its first kind,
    /// of `confirm_reruns` (it reproduces in at least 4 of 5); null otherwise.
    pub reruns_shown: Option<u32>,
    pub reproduces: Option<bool>,
    /// The reproduced trial: its schedule as a live scenario, and that
    /// schedule shrunk (null until written: an interrupted shrink leaves none).
    pub reproduction_file: Option<String>,
    pub shrunk_file: Option<String>,
    pub shrunk_schedule: Vec<FaultJson>,
}

/// What a nemesis trial concluded.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(tag = "is", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChaosVerdict {
    Clean,
    Violation {
        kinds: Vec<String>,
    },
    /// A user's program misbehaved or the servers' account was incomplete.
    NotJudged {
        why: String,
    },
    /// The harness or a server failed mid-trial (the run stops there).
    Error {
        why: String,
    },
}

/// One fault of a schedule, as the scenario file spells it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FaultJson {
    /// `pause`, `crash`, `delay`, `drop`, `cut`, `partition`.
    pub kind: String,
    /// `worker/A`, `member/leader`.
    pub node: String,
    /// The protocol point it strikes after (`read_ok`; `worker/A:read_ok`
    /// for a member); null for a fault at a time or on a message.
    pub after: Option<String>,
    /// Since the trial's start, for a fault at a time.
    pub at_ms: Option<u64>,
    /// A network fault's message (`update`, `lock_reply`).
    pub message: Option<String>,
    pub duration_ms: Option<u64>,
    pub restart_after_ms: Option<u64>,
    /// The fault as the terminal prints it.
    pub label: String,
}

impl ChaosVerdict {
    /// One word or the kinds, as the terminal prints it.
    pub fn text(&self) -> String {
        match self {
            ChaosVerdict::Clean => "clean".to_string(),
            ChaosVerdict::Violation { kinds } => kinds.join(", "),
            ChaosVerdict::NotJudged { why } => format!("not judged: {why}"),
            ChaosVerdict::Error { why } => format!("error: {why}"),
        }
    }
}

fn schedule_text(schedule: &[FaultJson]) -> String {
    if schedule.is_empty() {
        return "no fault".to_string();
    }
    schedule
        .iter()
        .map(|f| f.label.as_str())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The command that runs a trial's schedule again: its written scenario,
/// or (a violation that did not reproduce) the nemesis up to that trial,
/// which draws the same schedules.
fn chaos_rerun(r: &ChaosJson, t: &ChaosTrialJson) -> String {
    use crate::suite::shell_quote;
    if let Some(file) = &t.reproduction_file {
        return format!("fencesim live {}", shell_quote(file));
    }
    let worker = r.worker_cmd.as_ref().map_or(String::new(), |c| {
        format!(" --worker-cmd {}", shell_quote(c))
    });
    format!(
        "fencesim search {} --chaos {} --chaos-trials {} --faults {}{worker}",
        shell_quote(&r.path),
        r.seed,
        t.trial,
        r.max_faults
    )
}

/// A trial's reruns, as one phrase.
fn reruns_text(r: &ChaosJson, t: &ChaosTrialJson) -> Option<String> {
    let shown = t.reruns_shown?;
    let how = if t.reproduces == Some(true) {
        "reproduces"
    } else {
        "a race, not a schedule that reproduces"
    };
    Some(format!(
        "shown again in {shown}/{} reruns of the schedule: {how}",
        r.confirm_reruns
    ))
}

/// JUnit of the nemesis: one case per trial; a violation (reproduced or
/// not: the real history showed it) or an error fails it, a trial that
/// could not be judged is skipped.
pub fn chaos_junit(r: &ChaosJson) -> String {
    let cases: Vec<Case> =
        r.trials
            .iter()
            .map(|t| {
                let schedule = schedule_text(&t.schedule);
                let mut skipped = None;
                let failure = match &t.verdict {
                    ChaosVerdict::Clean => None,
                    ChaosVerdict::NotJudged { why } => {
                        skipped = Some(format!("not judged: {why}"));
                        None
                    }
                    ChaosVerdict::Violation { .. } | ChaosVerdict::Error { .. } => {
                        let message =
                            format!("trial {}: {} — {schedule}", t.trial, t.verdict.text());
                        let mut text = vec![format!("schedule: {schedule}")];
                        text.extend(reruns_text(r, t));
                        text.extend(t.history_file.as_ref().map(|f| format!("history: {f}")));
                        text.extend(t.shrunk_file.as_ref().map(|f| {
                            format!("shrunk: {} — {f}", schedule_text(&t.shrunk_schedule))
                        }));
                        text.push(format!("rerun: {}", chaos_rerun(r, t)));
                        Some((message, text.join("\n")))
                    }
                };
                Case {
                    classname: "live.chaos".to_string(),
                    name: format!("seed {} trial {}", r.seed, t.trial),
                    file: r.path.clone(),
                    failure,
                    skipped,
                }
            })
            .collect();
    junit::suite(
        &format!("fencesim search (live) --chaos {}", r.seed),
        &cases,
    )
}

/// A nemesis trial as its line (and its files' lines) in the report.
fn chaos_trial_text(r: &ChaosJson, t: &ChaosTrialJson) -> String {
    let mut line = format!(
        "trial {}: {} — {}",
        t.trial,
        schedule_text(&t.schedule),
        t.verdict.text()
    );
    if let Some(reruns) = reruns_text(r, t) {
        line.push_str(&format!(" — {reruns}"));
    }
    line.push_str(&format!(
        " — {} — {} ms",
        t.history_file.as_deref().unwrap_or("-"),
        t.trial_ms
    ));
    if let Some(file) = &t.reproduction_file {
        line.push_str(&format!(
            "\n    written to {file} (rerun: fencesim live FILE)"
        ));
    }
    if let Some(file) = &t.shrunk_file {
        line.push_str(&format!(
            "\n    shrunk to {} fault(s): {} — {file}",
            t.shrunk_schedule.len(),
            schedule_text(&t.shrunk_schedule)
        ));
    }
    line
}

/// The report directory of the nemesis: every trial with its schedule and
/// verdict, and `drawn`'s timeline (the trial whose violation reproduced,
/// else the first that showed one).
pub fn chaos_doc(r: &ChaosJson, drawn: Option<&Drawn>) -> Doc {
    let name = format!("{} --chaos {}", r.path, r.seed);
    let slug = Slugs::default().next(&format!("chaos-{}", r.seed));
    let (timeline, svg) = match drawn {
        Some(d) => {
            let (t, svg) = timeline(&name, d, &slug);
            (Some(t), Some(svg))
        }
        None => (None, None),
    };
    let with = |k: ViolationKind| {
        r.trials
            .iter()
            .filter(|t| matches!(&t.verdict, ChaosVerdict::Violation { kinds } if kinds.iter().any(|x| x == k.name())))
            .count() as u64
    };
    let mut problems: Vec<String> = r
        .trials
        .iter()
        .filter_map(|t| match &t.verdict {
            ChaosVerdict::Violation { kinds } => Some(format!(
                "trial {} showed {} ({})",
                t.trial,
                kinds.join(", "),
                reruns_text(r, t).unwrap_or_default()
            )),
            ChaosVerdict::Error { why } => Some(format!("trial {}: error: {why}", t.trial)),
            _ => None,
        })
        .collect();
    if r.interrupted {
        problems.push(format!(
            "interrupted after {} trial(s): no verdict",
            r.trials.len()
        ));
    }
    problems.extend(r.error.iter().map(|e| format!("the run stopped: {e}")));
    let scenario = ScenarioResults {
        name: name.clone(),
        path: r.path.clone(),
        description: format!(
            "Live nemesis: seed {}, up to {} fault(s) per trial, {} trial(s) asked, {} run; {:.1} s.",
            r.seed,
            r.max_faults,
            r.chaos_trials,
            r.trials.len(),
            r.wall_ms as f64 / 1000.0
        ),
        protocol: "live nemesis".to_string(),
        seed_start: 1,
        seeds: r.trials.len() as u64,
        failing_seeds: per_kind(with),
        seeds_with_stale_attempts: 0,
        fence_rejected_total: 0,
        seeds_with_unfinished: 0,
        expectation_met: problems.is_empty(),
        problems,
        replay_seed: None,
        digest: String::new(),
        metrics: Vec::new(),
        timeline,
        trials: r.trials.iter().map(|t| chaos_trial_text(r, t)).collect(),
    };
    Doc {
        results: Results {
            schema_version: results::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
            command: "search (live) --chaos".to_string(),
            scenarios: vec![scenario],
        },
        svgs: vec![svg],
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
            interrupted: false,
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
        assert_eq!(back.schema_version, LIVE_SCHEMA_VERSION);
        assert!(!back.scenarios[1].met);
    }

    #[test]
    fn a_scenario_ctrl_c_cut_short_is_a_skipped_junit_case_not_a_failure() {
        let mut cut = scenario(false);
        cut.interrupted = true;
        let r = LiveJson::new(vec![scenario(true), cut], 130);
        assert!(r.interrupted);
        let xml = junit(&r);
        assert!(!xml.contains("<failure"), "{xml}");
        assert!(
            xml.contains("interrupted after 1 trial(s): no verdict"),
            "{xml}"
        );
    }

    fn chaos_run() -> ChaosJson {
        let pause = FaultJson {
            kind: "pause".into(),
            node: "worker/A".into(),
            after: Some("read_ok".into()),
            at_ms: None,
            message: None,
            duration_ms: Some(900),
            restart_after_ms: None,
            label: "pause worker/A after read_ok for 900 ms".into(),
        };
        let crash = FaultJson {
            kind: "crash".into(),
            node: "worker/B".into(),
            after: None,
            at_ms: Some(40),
            message: None,
            duration_ms: None,
            restart_after_ms: Some(150),
            label: "crash worker/B at 40 ms, restart after 150 ms".into(),
        };
        let trial = |n: u32, schedule: Vec<FaultJson>, verdict: ChaosVerdict| ChaosTrialJson {
            trial: n,
            schedule,
            history_file: (!matches!(verdict, ChaosVerdict::NotJudged { .. }))
                .then(|| format!("target/live/x-chaos-7-trial-{n}.jsonl")),
            verdict,
            trial_ms: 800,
            reruns_shown: None,
            reproduces: None,
            reproduction_file: None,
            shrunk_file: None,
            shrunk_schedule: Vec::new(),
        };
        let mut found = trial(
            3,
            vec![pause.clone(), crash.clone()],
            ChaosVerdict::Violation {
                kinds: vec!["stale_write".into(), "lost_update".into()],
            },
        );
        found.reruns_shown = Some(5);
        found.reproduces = Some(true);
        found.reproduction_file = Some("live/x-chaos-7-3.toml".into());
        found.shrunk_file = Some("live/x-chaos-7-3-shrunk.toml".into());
        found.shrunk_schedule = vec![pause.clone()];
        ChaosJson {
            schema: CHAOS_SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            fencesim_version: "0".into(),
            path: "live/x.toml".into(),
            worker_cmd: None,
            seed: 7,
            chaos_trials: 20,
            max_faults: 2,
            confirm_reruns: 5,
            trials: vec![
                trial(1, vec![crash], ChaosVerdict::Clean),
                trial(
                    2,
                    vec![pause],
                    ChaosVerdict::NotJudged {
                        why: "the program exited 1".into(),
                    },
                ),
                found,
            ],
            found_at_trial: Some(3),
            interrupted: false,
            error: None,
            wall_ms: 4200,
            exit_code: 1,
        }
    }

    #[test]
    fn the_nemesis_json_round_trips_with_its_schedules_and_verdicts() {
        let r = chaos_run();
        let text = to_json(&r);
        let back: ChaosJson = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        // The verdict is tagged, so a reader tells the kinds from the reasons.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema"], "fencesim-live-chaos");
        assert_eq!(v["trials"][2]["verdict"]["is"], "violation");
        assert_eq!(v["trials"][2]["verdict"]["kinds"][0], "stale_write");
        assert_eq!(v["trials"][1]["verdict"]["is"], "not_judged");
        assert_eq!(v["trials"][0]["schedule"][0]["at_ms"], 40);
        assert_eq!(v["trials"][2]["schedule"][0]["after"], "read_ok");
        assert!(serde_json::from_str::<ChaosJson>(&text.replace("\"seed\"", "\"sed\"")).is_err());
    }

    #[test]
    fn a_nemesis_violation_is_a_junit_failure_naming_kinds_schedule_and_rerun() {
        let mut r = chaos_run();
        let xml = chaos_junit(&r);
        assert!(
            xml.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"trial 3: stale_write, lost_update — pause worker/A after read_ok for 900 ms + crash worker/B at 40 ms, restart after 150 ms\""),
            "{xml}"
        );
        assert!(
            xml.contains("rerun: fencesim live live/x-chaos-7-3.toml"),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"not judged: the program exited 1\"/>"),
            "{xml}"
        );
        // A violation that did not reproduce still fails its case; its rerun
        // is the nemesis up to that trial.
        r.trials[2].reproduces = Some(false);
        r.trials[2].reproduction_file = None;
        let xml = chaos_junit(&r);
        assert!(
            xml.contains(
                "rerun: fencesim search live/x.toml --chaos 7 --chaos-trials 3 --faults 2"
            ),
            "{xml}"
        );
        let doc = chaos_doc(&r, None);
        let sc = &doc.results.scenarios[0];
        assert!(!sc.expectation_met);
        assert_eq!(sc.trials.len(), 3);
        assert_eq!(sc.failing_seeds["stale_write"], 1);
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
        let r = SearchJson::new(Path::new("x.toml"), 1, coverage, vec![finding], false, 1);
        assert!(
            search_junit(&r).contains("<failure message=\"found lost_update with up to 1 faults")
        );
        assert!(!search_doc(&r, &[]).results.scenarios[0].expectation_met);
    }
}
