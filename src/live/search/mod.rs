//! The live search (`fencesim search LIVE.toml`): every placement of up
//! to K real faults ([`catalogue`]) run as one live trial each, on the
//! harness's own servers, by the built-in worker or a user's program — what
//! a team that brings its own lock client asks: is there any pause, crash,
//! cut or delay that makes it corrupt data — answered by trying each, not
//! by the one fault a scenario file names. The seeded nemesis is [`chaos`].
//!
//! The trials run `--jobs` at a time on the live run's jobs
//! ([`super::jobs`]: each job on servers of its own) and are folded in
//! placement order, so the coverage and each kind's first placement do not
//! depend on `--jobs`. For each kind of violation, its first placements are
//! written as a live scenario file ([`placed`]) and that file is run again
//! ([`confirm`]): it reproduces when at least four in five reruns show the
//! violation. Everything here returns data and tells what happens as it
//! happens ([`Progress`]); the command line prints.

pub mod catalogue;
pub mod chaos;
pub mod placed;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::history::TrialResult;
use super::jobs::{self, Slot, Trials};
use super::run::trial::{self, TrialCall, TrialOutcome};
use super::servers::{Servers, ServersInfo, UserServers};
use crate::check::ViolationKind;
use catalogue::{shape, Shapes};
use placed::Placer;

/// How a search's trials run.
#[derive(Clone, Copy)]
pub struct SearchConfig<'a> {
    /// Trials at a time, each job on its own servers.
    pub jobs: usize,
    /// A trial that has not finished by then is ended.
    pub timeout: Duration,
    /// This binary (the built-in worker is `EXE live-worker`).
    pub exe: &'a Path,
    /// Reruns of a finding's written scenario.
    pub confirm: u32,
}

/// What a search tells as it goes.
pub enum Progress<'a> {
    /// A job's servers started (`job`: its number and the count, when more than one).
    Servers {
        job: Option<(usize, usize)>,
        info: &'a ServersInfo,
    },
    /// One more placement was taken (tried, or not expressible).
    Placement,
    /// A finding's candidate placement, written to `out`, was rerun.
    Confirmed {
        kind: ViolationKind,
        labels: &'a str,
        out: &'a Path,
        shown: u32,
        reruns: u32,
        reproduces: bool,
    },
    /// A nemesis's trial and its verdict.
    ChaosTrial {
        trial: u32,
        labels: &'a str,
        verdict: &'a crate::report::live_reports::ChaosVerdict,
    },
    /// Its violation was rerun with the same schedule.
    ChaosReruns {
        kind: ViolationKind,
        shown: u32,
        reruns: u32,
        reproduces: bool,
    },
    /// The first violation that reproduced (`s`: seconds into the nemesis).
    ChaosFound {
        kind: ViolationKind,
        trial: u32,
        s: f64,
    },
    /// Its schedule was written as a scenario.
    ChaosWritten { file: &'a Path },
    /// And shrunk to `faults` faults, written too.
    ChaosShrunk {
        faults: usize,
        labels: &'a str,
        file: &'a Path,
    },
}

/// The placements that showed a kind of violation, in search order.
pub struct Finding {
    pub kind: ViolationKind,
    pub placements: Vec<Vec<usize>>,
    /// Trials run until it showed, and the wall time until then.
    pub after_trials: u32,
    pub after_s: f64,
}

/// The search's tally.
#[derive(Default)]
pub struct Coverage {
    pub placements: usize,
    pub not_expressible: usize,
    pub trials: u32,
    pub unjudged: u32,
    pub first_unjudged: Option<String>,
    pub shapes: Shapes,
    pub findings: Vec<Finding>,
    /// Ctrl-C stopped the search: the counts are of the trials that finished.
    pub interrupted: bool,
}

/// A rerun of a finding's file: its number and its trial.
pub type Rerun = (u32, TrialResult);

/// What one placement's trial gave: its violation kinds and history's
/// shape, or why it was not judged; and when it finished (s since the start).
type Outcome = (Result<Kept>, f64);

/// What the fold keeps of a judged trial, reduced in the trial's job: the
/// jobs take the longest trials first and the fold takes them in placement
/// order, so most results wait: each waits as what the fold reads, not
/// as a whole history held for nothing.
enum Kept {
    Judged {
        shape: String,
        kinds: Vec<ViolationKind>,
    },
    NotJudged(String),
}

impl Kept {
    fn of(outcome: TrialOutcome) -> Kept {
        match outcome {
            TrialOutcome::Judged(r) => Kept::Judged {
                shape: shape(&r.history),
                kinds: r.report.kinds().collect(),
            },
            TrialOutcome::NotJudged(why) => Kept::NotJudged(why),
        }
    }
}

/// The harness's own servers for the reruns (announced); the caller
/// cleans them up.
pub fn start_servers(progress: &dyn Fn(Progress)) -> Result<Servers> {
    let servers = Servers::start(&UserServers::default())?;
    progress(Progress::Servers {
        job: None,
        info: &servers.info(),
    });
    Ok(servers)
}

/// Runs every expressible placement once, `cfg.jobs` at a time, and folds
/// their verdicts in placement order (`started`: the search's start).
pub fn explore(
    placer: &Placer,
    placements: &[Vec<usize>],
    cfg: SearchConfig,
    started: Instant,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Coverage> {
    let scenarios: Vec<_> = (placements.iter())
        .map(|p| placer.placed(&placer.faults(p), &placer.s0.name, &[]).ok())
        .collect();
    let units: Vec<usize> = (0..placements.len())
        .filter(|&i| scenarios[i].is_some())
        .collect();
    let weights: Vec<u64> = (units.iter())
        .filter_map(|&i| scenarios[i].as_ref().map(|s| s.estimated_trial_ms()))
        .collect();
    let groups = vec![cluster_group(placer); units.len()];
    let worker_cmd = placer.worker_cmd;
    let run = |&i: &usize, servers: &mut Servers| -> Outcome {
        let Some(s) = &scenarios[i] else {
            return (
                Err(anyhow::anyhow!("placement {i} is not expressible")),
                0.0,
            );
        };
        let k = i as u32 + 1;
        let (exe, timeout) = (cfg.exe, cfg.timeout);
        let r = trial::untimed(
            TrialCall {
                s,
                worker_cmd,
                exe,
                timeout,
                k,
            },
            servers,
        );
        (r.map(Kept::of), started.elapsed().as_secs_f64())
    };
    let panicked = || -> Outcome { (Err(anyhow::anyhow!("a search job panicked")), 0.0) };
    let start = |home: u8| {
        let mut servers = Servers::start(&UserServers::default())?;
        if home > 0 {
            if let Some(kind) = placer.s0.lock.cluster() {
                servers.ensure_cluster(kind)?;
            }
        }
        Ok(servers)
    };
    let announce = |job, info: &ServersInfo| progress(Progress::Servers { job, info });
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
    let jobs = cfg.jobs.clamp(1, units.len().max(1));
    jobs::with_jobs(jobs, rig, work, |trials| {
        fold(placer, placements, &scenarios, trials, progress)
    })
}

/// The `--jobs` group of the searched scenario's trials: its cluster kind's.
fn cluster_group(placer: &Placer) -> u8 {
    match placer.s0.lock.cluster() {
        None => 0,
        Some(crate::live::ClusterKind::Etcd) => 1,
        Some(crate::live::ClusterKind::Zk) => 2,
    }
}

/// The placements' verdicts, taken in placement order, into the coverage.
fn fold(
    placer: &Placer,
    placements: &[Vec<usize>],
    scenarios: &[Option<crate::live::scenario::LiveScenario>],
    trials: &mut Trials<usize, Outcome>,
    progress: &dyn Fn(Progress),
) -> Result<Coverage> {
    let mut cov = Coverage {
        placements: placements.len(),
        ..Coverage::default()
    };
    let mut unit = 0;
    for (p, s) in placements.iter().zip(scenarios) {
        progress(Progress::Placement);
        if s.is_none() {
            cov.not_expressible += 1;
            continue;
        }
        unit += 1;
        // Not run: Ctrl-C came before its trial.
        let Slot::Ran((r, at_s)) = trials.take(unit - 1) else {
            continue;
        };
        let judged = match r {
            // Ctrl-C cut this trial short (a user's program it reached
            // looks crashed): it is not counted, the ones that finished stay.
            Err(_) | Ok(Kept::NotJudged(_)) if super::interrupted() => continue,
            r => r?,
        };
        cov.trials += 1;
        let (shape, kinds) = match judged {
            Kept::Judged { shape, kinds } => (shape, kinds),
            Kept::NotJudged(why) => {
                cov.unjudged += 1;
                cov.first_unjudged
                    .get_or_insert_with(|| format!("{}: {why}", placer.labels(p)));
                continue;
            }
        };
        cov.shapes.add(shape);
        for kind in kinds {
            match cov.findings.iter_mut().find(|f| f.kind == kind) {
                Some(f) => f.placements.push(p.clone()),
                None => cov.findings.push(Finding {
                    kind,
                    placements: vec![p.clone()],
                    after_trials: cov.trials,
                    after_s: at_s,
                }),
            }
        }
    }
    cov.interrupted = super::interrupted();
    Ok(cov)
}

/// How many of a kind's placements are tried in turn for one that reproduces.
const CANDIDATES: usize = 3;

/// Writes the finding's first placement as a scenario at `out`, loads it
/// back from the file and runs it `cfg.confirm` times: it reproduces when
/// at least four in five trials show the violation. One that does not (a
/// pause about as long as the lease wins the race only sometimes) gives
/// way to the kind's next placement, up to [`CANDIDATES`]; the file left
/// at `out` is the last one tried. Returns its reruns that showed the
/// kind, whether it reproduces, and the first rerun that showed it.
pub fn confirm(
    placer: &Placer,
    f: &Finding,
    out: &Path,
    (cfg, servers): (SearchConfig, &mut Servers),
    progress: &dyn Fn(Progress),
) -> Result<(u32, bool, Option<Rerun>)> {
    let n = cfg.confirm;
    for (c, placement) in f.placements.iter().take(CANDIDATES).enumerate() {
        let (shown, first) = rerun(placer, f, placement, out, (cfg, &mut *servers))?;
        let reproduces = reproduces(shown, n);
        progress(Progress::Confirmed {
            kind: f.kind,
            labels: &placer.labels(placement),
            out,
            shown,
            reruns: n,
            reproduces,
        });
        let last = c + 1 == f.placements.len().min(CANDIDATES);
        if reproduces || last {
            return Ok((shown, reproduces, first));
        }
    }
    Ok((0, false, None))
}

/// Writes `placement` as the finding's scenario at `out` and runs that
/// file `cfg.confirm` times: in how many the violation showed, and the
/// first rerun that showed it (the report draws it).
fn rerun(
    placer: &Placer,
    f: &Finding,
    placement: &[usize],
    out: &Path,
    (cfg, servers): (SearchConfig, &mut Servers),
) -> Result<(u32, Option<Rerun>)> {
    let name = format!("{}-search-{}", placer.s0.name, f.kind.name());
    let header = format!(
        "Found by `fencesim search {}`{}: {} after {} trials ({:.1} s).\n{}",
        placer.path.display(),
        placer
            .worker_cmd
            .map_or(String::new(), |c| format!(" --worker-cmd '{c}'")),
        f.kind.name(),
        f.after_trials,
        f.after_s,
        placer.labels(placement)
    );
    let faults = placer.faults(placement);
    write_and_rerun(
        placer,
        &faults,
        (&name, f.kind, &header),
        out,
        (cfg, servers),
    )
}

/// Writes `faults` on the placer's base as a scenario at `out` (named
/// `name`, expecting `kind`, `header` its comment), loads it back from the
/// file and runs it `cfg.confirm` times: in how many the violation showed,
/// and the first rerun that showed it. The live search's findings and a
/// code-level counterexample's live scenario (`check --code --emit-live`)
/// are both confirmed so.
pub fn write_and_rerun(
    placer: &Placer,
    faults: &[crate::live::fault::Fault],
    (name, kind, header): (&str, ViolationKind, &str),
    out: &Path,
    (cfg, servers): (SearchConfig, &mut Servers),
) -> Result<(u32, Option<Rerun>)> {
    let text = placer.text(faults, (name, &[kind]), header, out);
    std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    let s = crate::live::scenario::load(out).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let mut first = None;
    let shown = count_shown(cfg.confirm, |k| {
        let (worker_cmd, exe, timeout) = (placer.worker_cmd, cfg.exe, cfg.timeout);
        let call = TrialCall {
            s: &s,
            worker_cmd,
            exe,
            timeout,
            k,
        };
        let shows = match trial::untimed(call, servers)? {
            TrialOutcome::Judged(r) if r.report.kinds().any(|x| x == kind) => {
                first.get_or_insert((k, *r));
                true
            }
            _ => false,
        };
        Ok(shows)
    })?;
    Ok((shown, first))
}

/// In how many of trials 1..=`runs` the violation showed (`shows(k)`; a
/// trial that could not be judged shows nothing).
pub fn count_shown(runs: u32, mut shows: impl FnMut(u32) -> Result<bool>) -> Result<u32> {
    let mut shown = 0;
    for k in 1..=runs {
        shown += shows(k)? as u32;
    }
    Ok(shown)
}

/// At least four in five.
pub fn reproduces(shown: u32, runs: u32) -> bool {
    shown * 5 >= runs * 4
}
