//! The seeded nemesis (`fencesim search LIVE.toml --chaos SEED`): trials
//! each with faults drawn from (seed, trial) ([`super::catalogue::chaos_schedule`]),
//! each verdict and history kept. The first trial whose violation shows
//! again in four of five reruns of the same schedule has its schedule
//! written as a scenario (rerun it with `fencesim live FILE`) and shrunk to
//! the fewest faults that still reproduce it, written beside it. The run's
//! record ([`ChaosRun`]) lives outside the trials, so a violation, a failed
//! server or Ctrl-C still leaves every report asked for writable.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::catalogue::chaos_schedule;
use super::placed::Placer;
use super::{count_shown, reproduces, Progress, SearchConfig};
use crate::check::ViolationKind;
use crate::live::fault::Fault;
use crate::live::history::{write_history, TrialResult};
use crate::live::run::trial::{self, TrialCall, TrialOutcome};
use crate::live::servers::Servers;
use crate::report::live_reports::{ChaosTrialJson, ChaosVerdict, FaultJson};

/// The nemesis's record, trial by trial: what its reports are made of.
#[derive(Default)]
pub struct ChaosRun {
    pub trials: Vec<ChaosTrialJson>,
    /// The trial the report draws (the one whose violation reproduced,
    /// else the first that showed one): its number, result, history file.
    pub drawn: Option<(u32, TrialResult, PathBuf)>,
    pub found_at_trial: Option<u32>,
}

/// What the nemesis is asked.
#[derive(Clone, Copy)]
pub struct ChaosConfig<'a> {
    pub seed: u64,
    pub trials: u32,
    /// Up to this many faults a trial.
    pub max_faults: usize,
    /// Where each trial's history is written.
    pub histories: &'a Path,
    /// Where a reproduced schedule and its shrunk form are written.
    pub found_dir: &'a Path,
    /// The files' names begin with it (the searched scenario's stem).
    pub stem: &'a str,
    pub search: SearchConfig<'a>,
}

/// The nemesis's trials on `servers`, each recorded in `run` as it ends
/// (an error ends the run with the failed trial recorded); stops early at
/// Ctrl-C or at a violation that reproduces, whose files it writes.
pub fn run(
    placer: &Placer,
    cfg: ChaosConfig,
    servers: &mut Servers,
    run: &mut ChaosRun,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let started = Instant::now();
    let expressible = |f: &[Fault]| placer.expressible(f);
    std::fs::create_dir_all(cfg.histories)
        .with_context(|| format!("creating {}", cfg.histories.display()))?;
    for t in 1..=cfg.trials {
        if crate::live::interrupted() {
            return Ok(());
        }
        let client = placer.worker_cmd.is_some();
        let faults = chaos_schedule(
            placer.s0,
            placer.singles,
            (cfg.seed, t),
            cfg.max_faults,
            client,
            expressible,
        );
        let Some((kind, result)) = one(placer, cfg, (t, &faults), servers, run, progress)? else {
            continue;
        };
        // A violation that a rerun of the same schedule does not show again
        // (a pause about as long as the lease races the expiry) is noted,
        // and the nemesis goes on.
        let n = cfg.search.confirm;
        let shown = shown_in(placer, &faults, kind, (cfg.search, &mut *servers), n)?;
        let reproduces = reproduces(shown, n);
        let i = run.trials.len() - 1;
        run.trials[i].reruns_shown = Some(shown);
        run.trials[i].reproduces = Some(reproduces);
        if run.drawn.is_none() || reproduces {
            run.drawn = Some(result);
        }
        progress(Progress::ChaosReruns {
            kind,
            shown,
            reruns: n,
            reproduces,
        });
        if reproduces {
            run.found_at_trial = Some(t);
            let s = started.elapsed().as_secs_f64();
            progress(Progress::ChaosFound { kind, trial: t, s });
            return found(placer, cfg, (kind, faults), servers, run, progress);
        }
    }
    Ok(())
}

/// Trial `t` of schedule `faults`, recorded in `run`: its first violation
/// kind and its trial (with its history file) when it showed one.
#[allow(clippy::type_complexity)]
fn one(
    placer: &Placer,
    cfg: ChaosConfig,
    (t, faults): (u32, &[Fault]),
    servers: &mut Servers,
    run: &mut ChaosRun,
    progress: &dyn Fn(Progress),
) -> Result<Option<(ViolationKind, (u32, TrialResult, PathBuf))>> {
    let labels = placer.labels_of(faults);
    let started = Instant::now();
    let mut entry = ChaosTrialJson {
        trial: t,
        schedule: faults.iter().map(|f| fault_json(f, placer.names)).collect(),
        verdict: ChaosVerdict::Clean,
        history_file: None,
        trial_ms: 0,
        reruns_shown: None,
        reproduces: None,
        reproduction_file: None,
        shrunk_file: None,
        shrunk_schedule: Vec::new(),
    };
    let ran = schedule_trial(placer, faults, (cfg.search, servers), t);
    entry.trial_ms = started.elapsed().as_millis() as u64;
    let r = match ran {
        Ok(TrialOutcome::Judged(r)) => r,
        Ok(TrialOutcome::NotJudged(why)) => {
            entry.verdict = ChaosVerdict::NotJudged { why };
            progress(Progress::ChaosTrial {
                trial: t,
                labels: &labels,
                verdict: &entry.verdict,
            });
            run.trials.push(entry);
            return Ok(None);
        }
        // Ctrl-C ended the trial: it has no verdict, and the run stops.
        Err(_) if crate::live::interrupted() => return Ok(None),
        Err(e) => {
            let why = format!("{e:#}");
            entry.verdict = ChaosVerdict::Error { why };
            run.trials.push(entry);
            return Err(e);
        }
    };
    let file = (cfg.histories).join(format!("{}-chaos-{}-trial-{t}.jsonl", cfg.stem, cfg.seed));
    write_history(&r.history, &file)?;
    entry.history_file = Some(file.display().to_string());
    let kinds: Vec<ViolationKind> = r.report.kinds().collect();
    entry.verdict = match kinds.is_empty() {
        true => ChaosVerdict::Clean,
        false => ChaosVerdict::Violation {
            kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
        },
    };
    progress(Progress::ChaosTrial {
        trial: t,
        labels: &labels,
        verdict: &entry.verdict,
    });
    run.trials.push(entry);
    Ok(kinds.first().map(|&kind| (kind, (t, *r, file))))
}

/// The reproduced trial (the last in `run`): its schedule written as a
/// scenario, then shrunk and written beside it; each file recorded in the
/// trial's entry as soon as it is written.
fn found(
    placer: &Placer,
    cfg: ChaosConfig,
    (kind, faults): (ViolationKind, Vec<Fault>),
    servers: &mut Servers,
    run: &mut ChaosRun,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let entry = run.trials.len() - 1;
    let t = run.trials[entry].trial;
    let dir = cfg.found_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let header = format!(
        "The nemesis's schedule: `fencesim search {} --chaos {}`, trial {t}.",
        placer.path.display(),
        cfg.seed
    );
    let file = dir.join(format!("{}-chaos-{}-{t}.toml", cfg.stem, cfg.seed));
    write_schedule(placer, &faults, (kind, &header), &file)?;
    run.trials[entry].reproduction_file = Some(file.display().to_string());
    progress(Progress::ChaosWritten { file: &file });
    let shrunk = shrink(placer, faults, kind, (cfg.search, servers))?;
    let file = dir.join(format!("{}-chaos-{}-{t}-shrunk.toml", cfg.stem, cfg.seed));
    let header = format!("{header}\nShrunk to {} fault(s).", shrunk.len());
    write_schedule(placer, &shrunk, (kind, &header), &file)?;
    run.trials[entry].shrunk_file = Some(file.display().to_string());
    run.trials[entry].shrunk_schedule = (shrunk.iter())
        .map(|f| fault_json(f, placer.names))
        .collect();
    progress(Progress::ChaosShrunk {
        faults: shrunk.len(),
        labels: &placer.labels_of(&shrunk),
        file: &file,
    });
    Ok(())
}

/// A fault of a schedule as the nemesis's JSON spells it: the fields of
/// its `[[fault]]` table (the one spelling the scenario files use), and
/// its label.
fn fault_json(f: &Fault, names: &[String]) -> FaultJson {
    let t = f.table(names);
    let text = |k: &str| t.get(k).and_then(toml::Value::as_str).map(str::to_string);
    let ms = |k: &str| {
        t.get(k)
            .and_then(toml::Value::as_integer)
            .and_then(|v| u64::try_from(v).ok())
    };
    FaultJson {
        kind: text("kind").unwrap_or_default(),
        node: text("node").unwrap_or_default(),
        after: text("after"),
        at_ms: ms("at_ms"),
        message: text("message"),
        duration_ms: ms("duration_ms"),
        restart_after_ms: ms("restart_after_ms"),
        label: f.label(names),
    }
}

/// One trial of a schedule (number `k`): its outcome, or not judged when
/// the live mode cannot apply it.
fn schedule_trial(
    placer: &Placer,
    faults: &[Fault],
    (cfg, servers): (SearchConfig, &mut Servers),
    k: u32,
) -> Result<TrialOutcome> {
    let s = match placer.placed(faults, &placer.s0.name, &[]) {
        Ok(s) => s,
        Err(why) => return Ok(TrialOutcome::NotJudged(why)),
    };
    let (worker_cmd, exe, timeout) = (placer.worker_cmd, cfg.exe, cfg.timeout);
    trial::untimed(
        TrialCall {
            s: &s,
            worker_cmd,
            exe,
            timeout,
            k,
        },
        servers,
    )
}

/// Writes `faults` as a scenario expecting `kind`, `header` its comment.
fn write_schedule(
    placer: &Placer,
    faults: &[Fault],
    (kind, header): (ViolationKind, &str),
    file: &Path,
) -> Result<()> {
    let name = file
        .file_stem()
        .map_or("chaos".into(), |s| s.to_string_lossy());
    let text = placer.text(faults, (&name, &[kind]), header, file);
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}

/// In how many of `runs` trials of `faults` the violation showed.
fn shown_in(
    placer: &Placer,
    faults: &[Fault],
    kind: ViolationKind,
    (cfg, servers): (SearchConfig, &mut Servers),
    runs: u32,
) -> Result<u32> {
    count_shown(runs, |k| {
        let shows = match schedule_trial(placer, faults, (cfg, &mut *servers), k)? {
            TrialOutcome::Judged(r) => r.report.kinds().any(|x| x == kind),
            TrialOutcome::NotJudged(_) => false,
        };
        Ok(shows)
    })
}

/// Takes faults out one at a time, keeping each removal after which the
/// schedule still reproduces the violation (in four of five reruns).
fn shrink(
    placer: &Placer,
    mut faults: Vec<Fault>,
    kind: ViolationKind,
    (cfg, servers): (SearchConfig, &mut Servers),
) -> Result<Vec<Fault>> {
    let mut i = 0;
    while i < faults.len() && faults.len() > 1 {
        let mut fewer = faults.clone();
        fewer.remove(i);
        if reproduces(shown_in(placer, &fewer, kind, (cfg, &mut *servers), 5)?, 5) {
            faults = fewer;
        } else {
            i += 1;
        }
    }
    Ok(faults)
}
