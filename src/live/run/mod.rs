//! A run of live scenarios (`fencesim live`): every trial of every
//! scenario, `--jobs` at a time on servers of each job's own
//! ([`super::jobs`]), taken back in the run's order — scenario by scenario,
//! trial by trial — tallied, each history written, and each scenario's
//! tally judged beside its simulated twin ([`verdict`]). One trial, by
//! the built-in worker or a user's program, is [`trial`].
//!
//! It returns data and tells what happens as it happens ([`Progress`]):
//! the command line prints both, nothing here prints.

pub mod trial;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::cluster::ClusterKind;
use super::history::{write_history, TrialResult};
use super::jobs::{self, Slot, Trials};
use super::phases::PhaseTotals;
use super::scenario::LiveScenario;
use super::servers::{Servers, ServersInfo, UserServers};
use crate::report::live::Tally;
use crate::report::live_reports::TrialJson;
use trial::{Ran, TrialCall, TrialOutcome};
use verdict::{tally, twin_row, Row};

/// What a run is asked.
pub struct RunConfig {
    /// Trials per scenario (None: each file's `trials`).
    pub trials: Option<u32>,
    /// Where each trial's history is written.
    pub out: PathBuf,
    /// Also the last trial's history here.
    pub history: Option<PathBuf>,
    /// A user's program run as every worker (over each file's `worker_cmd`).
    pub worker_cmd: Option<String>,
    pub timeout: Duration,
    /// Trials at a time (each job its own servers).
    pub jobs: usize,
    /// The simulated twins' threads.
    pub twin_threads: usize,
    /// The user's servers, if the run uses them.
    pub user: UserServers,
    /// This binary (the built-in worker is `EXE live-worker`).
    pub exe: PathBuf,
}

impl RunConfig {
    /// Scenario `s`'s trial count.
    pub fn trials_of(&self, s: &LiveScenario) -> u32 {
        self.trials.unwrap_or(s.trials)
    }
}

/// What a run tells as it goes, in its order.
pub enum Progress<'a> {
    /// A job's servers started (`job`: its number and the count, when more than one).
    Servers {
        job: Option<(usize, usize)>,
        info: &'a ServersInfo,
    },
    /// A scenario's trials begin.
    Scenario(&'a LiveScenario),
    /// A trial was judged; its history is at `file`.
    Trial {
        s: &'a LiveScenario,
        k: u32,
        result: &'a TrialResult,
        file: &'a Path,
        trial_ms: u128,
        phases: &'a PhaseTotals,
    },
    /// A trial could not run (the harness or a server failed it: a cluster
    /// that elected no leader, a server that did not start or answer, a
    /// member that did not come back): why; it is run once more, on a
    /// cluster started afresh. Told from the job that ran it, as it happens.
    Retrying {
        s: &'a LiveScenario,
        k: u32,
        why: String,
    },
    /// A trial could not be judged (a user's program misbehaved, or it
    /// could not run twice): why. Its scenario gets no verdict; the run
    /// goes on with the next trial and scenario.
    NotJudged {
        s: &'a LiveScenario,
        k: u32,
        why: &'a str,
    },
    /// A scenario's trials are done (`phases`: theirs, added up).
    ScenarioDone {
        s: &'a LiveScenario,
        phases: &'a PhaseTotals,
    },
}

/// A scenario's trials as the reports carry them.
pub struct ScenarioRun {
    pub tally: Tally,
    pub trials: Vec<TrialJson>,
    /// The trial the report draws: the first with a violation, else the last.
    pub drawn: Option<(u32, TrialResult, PathBuf)>,
    /// A trial could not be judged (a user's program misbehaved, or the
    /// trial could not run twice): the scenario has no verdict.
    pub not_judged: bool,
    /// Ctrl-C stopped it: `trials` are those that finished.
    pub interrupted: bool,
    /// Where the judged trials' time went, added up.
    pub phases: PhaseTotals,
}

/// What a run gave.
pub struct RunResult {
    /// Each scenario run (index into the run's scenarios), with its twin's
    /// row when it was judged.
    pub runs: Vec<(usize, ScenarioRun, Option<Row>)>,
    /// Where every trial's time went.
    pub phases: PhaseTotals,
    /// Ctrl-C stopped the run: why, in words (no verdict).
    pub stopped: Option<String>,
}

impl RunResult {
    /// A trial could not be judged: the run has no verdict (exit 3).
    pub fn not_judged(&self) -> bool {
        self.runs.iter().any(|(_, r, _)| r.not_judged)
    }

    /// The trials that could not be judged: scenario index, trial, why.
    pub fn not_judged_trials(&self) -> Vec<(usize, u32, &str)> {
        (self.runs.iter())
            .flat_map(|(i, r, _)| {
                (r.trials.iter()).filter_map(move |t| Some((*i, t.index, t.not_judged.as_deref()?)))
            })
            .collect()
    }
}

/// Why the run cannot give what `scenarios` ask, said before any server
/// starts: a fault that kills or promotes the Redis server on a user's
/// Redis (`user_redis`), a fault a user's program (`worker_cmd`, or a
/// file's) cannot be given, a server binary that is not installed
/// (`present` says whether a cluster kind's are).
pub fn refusal(
    scenarios: &[LiveScenario],
    (user_redis, worker_cmd): (bool, Option<&str>),
    present: impl Fn(ClusterKind) -> Result<()>,
) -> Option<String> {
    if user_redis {
        // Only worker-side and network faults can be applied to a server we do not own.
        if let Some((s, fault)) = scenarios
            .iter()
            .find_map(|s| s.server_fault().map(|f| (s, f)))
        {
            return Some(format!(
                "{}: the fault `{fault}` kills or promotes the Redis server, which --redis does not let fencesim do; \
                 with --redis only worker-side and network faults apply (run this scenario without --redis)",
                s.path.display()
            ));
        }
    }
    let program = scenarios
        .iter()
        .filter(|s| worker_cmd.is_some() || s.worker_cmd.is_some())
        .find_map(super::client::refusal);
    // The built-in worker takes one Redis lock.
    let masters = || {
        (scenarios.iter())
            .find(|s| s.redis_masters > 1 && worker_cmd.is_none() && s.worker_cmd.is_none())
            .map(|s| {
                format!(
                    "{}: redis_masters = {} needs a user's program (worker_cmd or --worker-cmd): \
                     the built-in worker takes one Redis lock",
                    s.path.display(),
                    s.redis_masters
                )
            })
    };
    program
        .or_else(masters)
        .or_else(|| missing_binaries(scenarios, present))
}

/// Every binary the scenarios need, checked before anything is started:
/// a run that would stop at its first etcd scenario must not have started
/// Redis and run initdb first.
fn missing_binaries(
    scenarios: &[LiveScenario],
    present: impl Fn(ClusterKind) -> Result<()>,
) -> Option<String> {
    scenarios.iter().find_map(|s| {
        let kind = s.lock.cluster()?;
        present(kind).err().map(|e| {
            format!(
                "{}: its {} lock needs a {} cluster: {e:#} (nothing was started)",
                s.path.display(),
                s.lock.name(),
                kind.name()
            )
        })
    })
}

/// One trial of the run: its scenario (index in the run's list) and number.
struct Unit {
    scenario: usize,
    k: u32,
}

/// A cluster kind as a `--jobs` group ([`super::jobs`]; 0: none).
fn group_of_cluster(kind: Option<ClusterKind>) -> u8 {
    match kind {
        None => 0,
        Some(ClusterKind::Etcd) => 1,
        Some(ClusterKind::Zk) => 2,
    }
}

/// The cluster kind of a `--jobs` group.
fn cluster_of_group(group: u8) -> Option<ClusterKind> {
    [ClusterKind::Etcd, ClusterKind::Zk]
        .into_iter()
        .find(|k| group_of_cluster(Some(*k)) == group)
}

/// Runs every trial of `scenarios`, `cfg.jobs` at a time, telling
/// `progress` what happens; a trial the harness or a server failed is run
/// once more, and if it fails again it is not judged (its scenario gets no
/// verdict, the others do); stops at Ctrl-C (the trials that finished are
/// kept).
pub fn run(
    scenarios: &[LiveScenario],
    cfg: &RunConfig,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<RunResult> {
    let units: Vec<Unit> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| (1..=cfg.trials_of(s)).map(move |k| Unit { scenario: i, k }))
        .collect();
    let jobs = cfg.jobs.clamp(1, units.len().max(1));
    let start = |home: u8| {
        let mut servers = Servers::start(&cfg.user)?;
        if let Some(kind) = cluster_of_group(home) {
            // A cluster that does not start here is started (or found
            // unable to start) by the trials that need it, each on its own.
            if servers.ensure_cluster(kind).is_err() {
                servers.discard_cluster();
            }
        }
        Ok(servers)
    };
    let announce =
        |job: Option<(usize, usize)>, info: &ServersInfo| progress(Progress::Servers { job, info });
    std::fs::create_dir_all(&cfg.out)?;
    let weights: Vec<u64> = (units.iter())
        .map(|u| scenarios[u.scenario].estimated_trial_ms())
        .collect();
    // A `--jobs` run homes each cluster kind on its own jobs (src/live/jobs.rs).
    let groups: Vec<u8> = (units.iter())
        .map(|u| group_of_cluster(scenarios[u.scenario].lock.cluster()))
        .collect();
    let run = |u: &Unit, servers: &mut Servers| {
        let s = &scenarios[u.scenario];
        let worker_cmd = cfg.worker_cmd.as_deref().or(s.worker_cmd.as_deref());
        let (exe, timeout, k) = (cfg.exe.as_path(), cfg.timeout, u.k);
        let call = TrialCall {
            s,
            worker_cmd,
            exe,
            timeout,
            k,
        };
        retried(call, servers, progress)
    };
    let panicked = || Ran {
        outcome: Err(anyhow::anyhow!("a live job panicked")),
        trial_ms: 0,
        phases: PhaseTotals::default(),
    };
    let rig = jobs::Rigging {
        start: &start,
        announce: &announce,
    };
    let work = jobs::Work {
        units: &units,
        weights: &weights,
        groups: &groups,
        run: &run,
        panicked: &panicked,
    };
    jobs::with_jobs(jobs, rig, work, |trials| {
        consume(scenarios, cfg, trials, progress)
    })
}

/// One trial, run once more if the harness or a server failed it (on a
/// cluster started afresh); if it fails again, it is not judged, with both
/// reasons.
fn retried(call: TrialCall, servers: &mut Servers, progress: &(dyn Fn(Progress) + Sync)) -> Ran {
    let first = trial::timed(call, servers);
    let why = match &first.outcome {
        Err(e) if !super::interrupted() => format!("{e:#}"),
        _ => return first,
    };
    let (s, k) = (call.s, call.k);
    progress(Progress::Retrying {
        s,
        k,
        why: why.clone(),
    });
    servers.discard_cluster();
    let mut again = trial::timed(call, servers);
    if let Err(e) = &again.outcome {
        if !super::interrupted() {
            let now = format!("{e:#}");
            again.outcome = Ok(TrialOutcome::NotJudged(if now == why {
                format!("could not run, twice: {now}")
            } else {
                format!("could not run, twice: {now} (the first time: {why})")
            }));
            // The next trial starts from a fresh cluster too.
            servers.discard_cluster();
        }
    }
    again
}

/// Takes the run's trials in its order, scenario by scenario, until the
/// end or Ctrl-C.
fn consume(
    scenarios: &[LiveScenario],
    cfg: &RunConfig,
    trials: &mut Trials<Unit, Ran>,
    progress: &dyn Fn(Progress),
) -> Result<RunResult> {
    let mut result = RunResult {
        runs: Vec::new(),
        phases: PhaseTotals::default(),
        stopped: None,
    };
    let mut first = 0;
    for (i, s) in scenarios.iter().enumerate() {
        let run = run_trials(cfg, s, trials, first, progress)?;
        first += cfg.trials_of(s) as usize;
        result.phases.add(&run.phases);
        if run.interrupted {
            // Ctrl-C: the trials that finished go in the reports, no verdict.
            result.stopped = Some(format!(
                "interrupted in {} after {} of {} trial(s): no verdict",
                s.name,
                run.trials.len(),
                cfg.trials_of(s)
            ));
            result.runs.push((i, run, None));
            break;
        }
        if run.not_judged {
            // No verdict for this scenario (exit 3), the reports say which
            // trial and why; the others still run and are judged.
            result.runs.push((i, run, None));
            continue;
        }
        let row = twin_row(s, run.tally.clone(), cfg.twin_threads)?;
        result.runs.push((i, run, Some(row)));
    }
    Ok(result)
}

/// A scenario's trials, each tallied and its history written, taken from
/// `trials` from the run's trial `first` on.
fn run_trials(
    cfg: &RunConfig,
    s: &LiveScenario,
    trials: &mut Trials<Unit, Ran>,
    first: usize,
    progress: &dyn Fn(Progress),
) -> Result<ScenarioRun> {
    let n = cfg.trials_of(s);
    progress(Progress::Scenario(s));
    let mut run = ScenarioRun {
        tally: Tally::new(n),
        trials: Vec::new(),
        drawn: None,
        not_judged: false,
        interrupted: false,
        phases: PhaseTotals::default(),
    };
    for k in 1..=n {
        let Slot::Ran(ran) = trials.take(first + k as usize - 1) else {
            // Ctrl-C came before this trial started.
            run.interrupted = true;
            break;
        };
        let r = match ran.outcome {
            // Ctrl-C reaches the trial (and a user's program, which then
            // looks as if it crashed): the trial ends unjudged, not in error.
            Err(_) | Ok(TrialOutcome::NotJudged(_)) if super::interrupted() => {
                run.interrupted = true;
                break;
            }
            Ok(TrialOutcome::Judged(r)) => r,
            // A panicked job (the retry turned every other failure into
            // words): no verdict for this trial either way.
            Err(e) => {
                let why = format!("could not run: {e:#}");
                not_judged(&mut run, (s, k), ran.trial_ms, why, progress);
                continue;
            }
            Ok(TrialOutcome::NotJudged(why)) => {
                not_judged(&mut run, (s, k), ran.trial_ms, why, progress);
                continue;
            }
        };
        judged(
            cfg,
            s,
            (k, *r),
            (ran.trial_ms, &ran.phases),
            &mut run,
            progress,
        )?;
    }
    progress(Progress::ScenarioDone {
        s,
        phases: &run.phases,
    });
    Ok(run)
}

/// Trial `k`, which could not be judged, into the scenario's run (no
/// verdict for it), told with why.
fn not_judged(
    run: &mut ScenarioRun,
    (s, k): (&LiveScenario, u32),
    trial_ms: u128,
    why: String,
    progress: &dyn Fn(Progress),
) {
    progress(Progress::NotJudged { s, k, why: &why });
    run.trials.push(trial_json(k, None, trial_ms, Some(why)));
    run.not_judged = true;
}

/// Judged trial `k` into the scenario's run: its history written, tallied,
/// told, and drawn when it is the first with a violation (else the last).
fn judged(
    cfg: &RunConfig,
    s: &LiveScenario,
    (k, r): (u32, TrialResult),
    (trial_ms, phases): (u128, &PhaseTotals),
    run: &mut ScenarioRun,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let file = cfg.out.join(format!("{}-trial-{k}.jsonl", s.name));
    write_history(&r.history, &file)?;
    if let Some(h) = &cfg.history {
        write_history(&r.history, h)?;
    }
    tally(&mut run.tally, &r.report);
    progress(Progress::Trial {
        s,
        k,
        result: &r,
        file: &file,
        trial_ms,
        phases,
    });
    run.phases.add(phases);
    run.trials
        .push(trial_json(k, Some((&r, &file)), trial_ms, None));
    if run
        .drawn
        .as_ref()
        .is_none_or(|(_, d, _)| d.report.is_clean())
    {
        run.drawn = Some((k, r, file));
    }
    Ok(())
}

/// Trial `k` as the JSON report carries it: its verdict and history file
/// when it was judged, else why not.
fn trial_json(
    k: u32,
    judged: Option<(&TrialResult, &Path)>,
    trial_ms: u128,
    not_judged: Option<String>,
) -> TrialJson {
    TrialJson {
        index: k,
        violations: judged
            .map(|(r, _)| r.report.kinds().map(|k| k.name().to_string()).collect())
            .unwrap_or_default(),
        fence_rejected: judged.map_or(0, |(r, _)| r.report.info.fence_rejected_total),
        faults: judged.map(|(r, _)| r.faults.clone()).unwrap_or_default(),
        history_file: judged.map(|(_, f)| f.display().to_string()),
        trial_ms: trial_ms as u64,
        not_judged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::scenario::parse;

    /// A bundled scenario's text with `top` added to its top-level keys.
    fn bundled(name: &str, top: &str) -> LiveScenario {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("live")
            .join(name);
        let src = std::fs::read_to_string(&path).unwrap();
        let src = src.replacen("\n[[worker]]", &format!("\n{top}\n[[worker]]"), 1);
        parse(&src, &path).unwrap()
    }

    fn refused(s: LiveScenario, worker_cmd: Option<&str>) -> Option<String> {
        refusal(&[s], (false, worker_cmd), |_| Ok(()))
    }

    #[test]
    fn what_a_trial_could_never_judge_is_refused_before_any_server_starts_naming_the_file() {
        let masters = || bundled("gc-pause-plain-update.toml", "redis_masters = 2");
        let why = refused(masters(), None).expect("the built-in worker takes one lock");
        assert!(
            why.contains("gc-pause-plain-update.toml: redis_masters = 2 needs a user's program"),
            "{why}"
        );
        assert_eq!(refused(masters(), Some("true")), None);

        let none = || bundled("one-database-transaction.toml", "");
        assert_eq!(refused(none(), None), None);
        let why = refused(none(), Some("true")).expect("no lock server to judge by");
        assert!(
            why.contains("one-database-transaction.toml: lock = \"none\""),
            "{why}"
        );

        let mut sent = bundled("gc-pause-plain-update.toml", "");
        let after_read = |f: &mut crate::live::fault::Fault| {
            if let crate::live::fault::Trigger::After { point, .. } = &mut f.trigger {
                *point = crate::live::fault::Point::WriteSent;
            }
        };
        sent.faults.iter_mut().for_each(after_read);
        let why = refused(sent, Some("true")).expect("a program has no write_sent");
        assert!(
            why.contains("gc-pause-plain-update.toml: a fault after \"write_sent\""),
            "{why}"
        );
    }
}
