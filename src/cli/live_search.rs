//! `fencesim search LIVE.toml`: every placement of up to K real faults
//! ([`crate::live::explore`]) run as one live trial each, on the
//! harness's own servers, by the built-in worker or a user's program
//! (`--worker-cmd`). What a team that brings its own lock client asks —
//! is there any pause, crash, cut or delay that makes it corrupt data —
//! answered by trying each, not by the one fault a scenario file names.
//!
//! Prints coverage (placements tried and not expressible, trials, trials
//! that could not be judged, distinct histories by shape, wall time). For
//! each kind of violation, the first placement that showed it is written as
//! a live scenario file and run again (`--confirm` trials): it reproduces
//! when at least four in five of them show the violation. Exit 0 clean,
//! 1 a violation, 3 when no trial could be judged.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::live::{one_trial, start_own_servers};
use super::{BadInput, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK};
use crate::check::ViolationKind;
use crate::live::explore::{self, Shapes};
use crate::live::fault::{conflict, Fault};
use crate::live::history::TrialResult;
use crate::live::scenario::{self, LiveScenario};
use crate::live::servers::{Servers, UserServers};
use crate::report::live_reports as lr;

/// What the live search needs from the command line.
pub struct LiveSearch<'a> {
    pub path: &'a Path,
    pub faults: usize,
    pub worker_cmd: Option<String>,
    pub timeout_ms: u64,
    pub confirm: u32,
    pub out: Option<&'a Path>,
    /// The nemesis instead of the enumeration: its seed and trials.
    pub chaos: Option<u64>,
    pub chaos_trials: u32,
    /// Trials at once, each job on its own servers.
    pub jobs: usize,
    /// The reports a CI job publishes (of the enumeration or the nemesis).
    pub json: Option<&'a Path>,
    pub junit: Option<&'a Path>,
    pub report: Option<&'a Path>,
}

/// Whether `src` is a live scenario (a `lock` recipe, no simulated `[protocol]`).
pub fn is_live(src: &str) -> bool {
    toml::from_str::<toml::Table>(src).is_ok_and(|t| {
        t.get("lock").is_some_and(toml::Value::is_str) && !t.contains_key("protocol")
    })
}

/// The placements that showed a kind of violation, in search order.
struct Finding {
    kind: ViolationKind,
    placements: Vec<Vec<usize>>,
    /// Trials run until it showed, and the wall time until then.
    after_trials: u32,
    after_s: f64,
}

/// The search's tally.
#[derive(Default)]
struct Coverage {
    placements: usize,
    not_expressible: usize,
    trials: u32,
    unjudged: u32,
    first_unjudged: Option<String>,
    shapes: Shapes,
    findings: Vec<Finding>,
    /// Ctrl-C stopped the search: the counts are of the trials that finished.
    interrupted: bool,
}

pub fn cmd(a: LiveSearch) -> Result<ExitCode> {
    let src = std::fs::read_to_string(a.path)
        .map_err(|e| BadInput(format!("{}: {e}", a.path.display())))?;
    let s0 = scenario::parse(&src, a.path).map_err(|e| BadInput(e.to_string()))?;
    let base = explore::base_table(&src, a.path).map_err(|e| BadInput(format!("{e:#}")))?;
    let worker_cmd = a.worker_cmd.clone().or(s0.worker_cmd.clone());

    if let Some(kind) = s0.lock.cluster() {
        crate::live::cluster::binaries_present(kind)
            .map_err(|e| BadInput(format!("{}: {e:#}", a.path.display())))?;
    }
    if a.confirm == 0 {
        return Err(BadInput("--confirm must be at least 1".into()).into());
    }
    let singles = explore::catalogue(&s0, worker_cmd.is_some());
    let names = s0.worker_names();
    let ctx = Ctx {
        path: a.path,
        base: &base,
        s0: &s0,
        names: &names,
        name: &s0.name,
        worker_cmd: worker_cmd.as_deref(),
        singles: &singles,
    };
    check_outputs(&a)?;
    if let Some(seed) = a.chaos {
        return chaos(&ctx, &s0, seed, &a);
    }
    let placements = explore::placements(singles.len(), a.faults);
    println!(
        "fencesim search (live): {} — {} single faults, up to {} at once: {} placements{}",
        a.path.display(),
        singles.len(),
        a.faults,
        placements.len(),
        worker_note(worker_cmd.as_deref())
    );
    let started = Instant::now();
    let cov = explore_all(&ctx, &placements, &a, started)?;
    let wall_s = started.elapsed().as_secs_f64();
    println!(
        "coverage: {} placements ({} tried, {} not expressible in a live scenario), {} trials ({} not judged), {} distinct histories, {:.1} s",
        cov.placements,
        cov.placements - cov.not_expressible,
        cov.not_expressible,
        cov.trials,
        cov.unjudged,
        cov.shapes.len(),
        wall_s
    );
    if let Some(why) = &cov.first_unjudged {
        println!("  first trial not judged: {why}");
    }
    for f in &cov.findings {
        println!(
            "found {}: first at trial {} ({:.1} s), in {} placements; first: {}",
            f.kind.name(),
            f.after_trials,
            f.after_s,
            f.placements.len(),
            ctx.labels(&f.placements[0])
        );
    }
    let kinds: Vec<&str> = cov.findings.iter().map(|f| f.kind.name()).collect();
    let outs = super::search::out_paths(a.path, a.out, &kinds)?;
    let Rig {
        mut servers,
        exe,
        timeout,
        ..
    } = Rig::start(&a)?;
    let mut confirmed = Vec::new();
    for (f, out) in cov.findings.iter().zip(&outs) {
        // Ctrl-C before or during its reruns leaves a finding unconfirmed.
        let r = match crate::live::interrupted() {
            true => Ok((0, false, None)),
            false => confirm(&ctx, f, out, a.confirm, &mut servers, &exe, timeout),
        };
        confirmed.push(match r {
            Err(_) if crate::live::interrupted() => (0, false, None),
            r => r?,
        });
    }
    servers.clean_up()?;
    let interrupted = cov.interrupted || crate::live::interrupted();
    let code = if interrupted {
        println!(
            "interrupted after {} of {} trials: no verdict",
            cov.trials,
            cov.placements - cov.not_expressible
        );
        EXIT_INTERRUPTED
    } else if !cov.findings.is_empty() {
        EXIT_FAILED
    } else if cov.trials > 0 && cov.unjudged == cov.trials {
        EXIT_INTERNAL
    } else {
        println!("clean: no placement of up to {} faults broke it", a.faults);
        EXIT_OK
    };
    let findings = (cov.findings.iter().zip(&outs).zip(&confirmed))
        .map(|((f, out), (shown, ok, drawn))| (f, out.as_path(), *shown, *ok, drawn.as_ref()));
    write_outputs(&a, &ctx, &cov, wall_s, findings, interrupted, code)?;
    Ok(ExitCode::from(code))
}

/// Fails before any server starts if `--json`, `--junit` or `--report`
/// cannot be written.
fn check_outputs(a: &LiveSearch) -> Result<(), BadInput> {
    let asked = [("--json", a.json), ("--junit", a.junit)];
    for (flag, file) in &asked {
        if let Some(file) = file {
            super::check_writable_file(flag, file)?;
        }
    }
    if let Some(dir) = a.report {
        super::check_writable_dir("--report", dir)?;
    }
    Ok(())
}

/// A finding as the reports take it: the kind, its written file, reruns
/// that showed it, whether it reproduces, and one such rerun's trial.
type Confirmed<'f> = (&'f Finding, &'f Path, u32, bool, Option<&'f Rerun>);

/// `--json`, `--junit` and `--report` of the enumeration, each when asked.
fn write_outputs<'f>(
    a: &LiveSearch,
    ctx: &Ctx,
    cov: &Coverage,
    wall_s: f64,
    findings: impl Iterator<Item = Confirmed<'f>>,
    interrupted: bool,
    code: u8,
) -> Result<()> {
    let findings: Vec<Confirmed> = findings.collect();
    let coverage = lr::CoverageJson {
        placements: cov.placements as u64,
        tried: (cov.placements - cov.not_expressible) as u64,
        not_expressible: cov.not_expressible as u64,
        trials: cov.trials as u64,
        not_judged: cov.unjudged as u64,
        first_not_judged: cov.first_unjudged.clone(),
        distinct_histories: cov.shapes.len() as u64,
        wall_s,
    };
    let drawn_trials: Vec<_> = findings.iter().map(|c| (c.1, c.4)).collect();
    let findings = findings
        .into_iter()
        .map(|(f, out, shown, reproduces, _)| lr::FindingJson {
            kind: f.kind.name().to_string(),
            placements: f.placements.iter().map(|p| ctx.labels(p)).collect(),
            first_at_trial: f.after_trials,
            file: out.display().to_string(),
            reruns_shown: shown,
            reruns: a.confirm,
            reproduces,
        })
        .collect();
    let r = lr::SearchJson::new(a.path, a.faults, coverage, findings, interrupted, code);
    if let Some(file) = a.json {
        put(file, lr::to_json(&r))?;
    }
    if let Some(file) = a.junit {
        put(file, lr::search_junit(&r))?;
    }
    if let Some(dir) = a.report {
        // Each drawn rerun's history beside its finding's file, for the
        // timeline's `check-history` command.
        let mut files = Vec::new();
        for (out, trial) in &drawn_trials {
            let file = out.with_extension("jsonl");
            if let Some((_, t)) = trial {
                crate::live::history::write_history(&t.history, &file)?;
            }
            files.push(file);
        }
        let drawn: Vec<Option<lr::Drawn>> = (drawn_trials.iter().zip(&files))
            .map(|((_, trial), file)| {
                trial.map(|(k, t)| lr::Drawn {
                    trial: *k,
                    reason: "the first rerun of the written file that showed it".to_string(),
                    history: &t.history,
                    report: &t.report,
                    history_file: file,
                })
            })
            .collect();
        crate::report::write::write(dir, &lr::search_doc(&r, &drawn))?;
        println!("report written to {}", dir.join("index.html").display());
    }
    Ok(())
}

fn worker_note(cmd: Option<&str>) -> String {
    cmd.map_or(String::new(), |c| format!(", worker `{c}`"))
}

/// What runs the trials: the harness's own servers, started and announced.
struct Rig {
    servers: Servers,
    exe: PathBuf,
    timeout: Duration,
    started: Instant,
}

impl Rig {
    fn start(a: &LiveSearch) -> Result<Rig> {
        crate::live::install_interrupt_handler();
        Ok(Rig {
            exe: std::env::current_exe()?,
            servers: start_own_servers(UserServers::default())?,
            timeout: Duration::from_millis(a.timeout_ms),
            started: Instant::now(),
        })
    }
}

/// What every placement's scenario is made from.
struct Ctx<'a> {
    path: &'a Path,
    base: &'a toml::Table,
    s0: &'a LiveScenario,
    names: &'a [String],
    name: &'a str,
    worker_cmd: Option<&'a str>,
    singles: &'a [Fault],
}

impl Ctx<'_> {
    /// `faults` on the base scenario (named `name`, expecting `find`), or
    /// why the live mode cannot apply them together: the loader's rules
    /// for a combination ([`conflict`]), and for a user's program what it
    /// cannot be given.
    fn placed(
        &self,
        faults: &[Fault],
        name: &str,
        find: &[ViolationKind],
    ) -> Result<LiveScenario, String> {
        if let Some(c) = conflict(faults, self.names) {
            return Err(c.why);
        }
        let s = LiveScenario {
            name: name.to_string(),
            find: find.to_vec(),
            faults: faults.to_vec(),
            worker_cmd: self.worker_cmd.map(str::to_string),
            ..self.s0.clone()
        };
        match self
            .worker_cmd
            .and_then(|_| crate::live::client::refusal(&s))
        {
            Some(why) => Err(why),
            None => Ok(s),
        }
    }

    /// Whether the live mode can apply these faults together.
    fn expressible(&self, faults: &[Fault]) -> bool {
        self.placed(faults, self.name, &[]).is_ok()
    }

    /// The base scenario for a file written at `out`: the twin's path is
    /// relative to the file, so one written elsewhere names it from where
    /// the scenario came from.
    fn base_at(&self, out: &Path) -> toml::Table {
        let mut base = self.base.clone();
        if out.parent() != self.path.parent() {
            if let Some(twin) = base.get("twin").and_then(toml::Value::as_str) {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                let abs = std::fs::canonicalize(dir.join(twin)).unwrap_or(dir.join(twin));
                base.insert("twin".into(), abs.display().to_string().into());
            }
        }
        base
    }

    fn faults(&self, placement: &[usize]) -> Vec<Fault> {
        placement.iter().map(|&i| self.singles[i]).collect()
    }

    fn labels(&self, placement: &[usize]) -> String {
        schedule_labels(&self.faults(placement), self.names)
    }

    /// The placement as a scenario (named `name`, expecting `find`), or
    /// why the live mode cannot apply it.
    fn scenario(
        &self,
        placement: &[usize],
        name: &str,
        find: &[ViolationKind],
    ) -> Result<LiveScenario, String> {
        self.placed(&self.faults(placement), name, find)
    }

    /// The text of the file that runs `faults`, written at `at`.
    fn text(
        &self,
        faults: &[Fault],
        name: &str,
        find: &[ViolationKind],
        header: &str,
        at: &Path,
    ) -> String {
        let base = self.base_at(at);
        explore::placement_text(
            &base,
            name,
            self.worker_cmd,
            (faults, self.names),
            find,
            header,
        )
    }
}

fn bar(n: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(n as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} placements ({eta} left) {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// What one placement's trial gave: its violation kinds and history's
/// shape, or why it was not judged; and when it finished (s since the start).
type Outcome = (Result<(Vec<ViolationKind>, String), String>, f64);

/// Runs every expressible placement once, `jobs` at a time, each job on
/// its own servers; the coverage is then folded in placement order, so it
/// does not depend on `jobs` (the trials themselves are real runs).
fn explore_all(
    ctx: &Ctx,
    placements: &[Vec<usize>],
    a: &LiveSearch,
    started: Instant,
) -> Result<Coverage> {
    let scenarios: Vec<Option<LiveScenario>> = placements
        .iter()
        .map(|p| ctx.scenario(p, ctx.name, &[]).ok())
        .collect();
    let outcomes: Vec<std::sync::Mutex<Option<Outcome>>> =
        placements.iter().map(|_| Default::default()).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let bar = bar(placements.len());
    let job = || -> Result<()> {
        let mut rig = Rig::start(a)?;
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if i >= placements.len() || crate::live::interrupted() {
                break;
            }
            bar.inc(1);
            let Some(s) = &scenarios[i] else {
                continue;
            };
            let trial = i as u32 + 1;
            let r = match one_trial(
                s,
                ctx.worker_cmd,
                &mut rig.servers,
                &rig.exe,
                rig.timeout,
                trial,
            ) {
                // Ctrl-C cut this trial short (a user's program it reached
                // looks crashed): it is not run, the ones that finished stay.
                Err(_) | Ok(Err(_)) if crate::live::interrupted() => break,
                r => r?,
            };
            let r = r.map(|r| (r.report.kinds().collect(), explore::shape(&r.history)));
            *crate::live::locked(&outcomes[i]) = Some((r, started.elapsed().as_secs_f64()));
        }
        rig.servers.clean_up()
    };
    let jobs = a.jobs.clamp(1, placements.len().max(1));
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..jobs).map(|_| sc.spawn(job)).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a search job panicked")))
            })
            .collect::<Result<Vec<()>>>()
    })?;
    bar.finish_and_clear();
    let mut cov = Coverage {
        placements: placements.len(),
        interrupted: crate::live::interrupted(),
        ..Coverage::default()
    };
    for ((p, o), s) in placements.iter().zip(outcomes).zip(&scenarios) {
        if s.is_none() {
            cov.not_expressible += 1;
            continue;
        }
        // None: Ctrl-C came before its trial ran.
        let Some((r, at_s)) = o.into_inner().unwrap_or_else(|e| e.into_inner()) else {
            continue;
        };
        cov.trials += 1;
        let (kinds, shape) = match r {
            Ok(r) => r,
            Err(why) => {
                cov.unjudged += 1;
                cov.first_unjudged
                    .get_or_insert_with(|| format!("{}: {why}", ctx.labels(p)));
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
    Ok(cov)
}

/// How many of a kind's placements are tried in turn for one that reproduces.
const CANDIDATES: usize = 3;

/// Writes the finding's first placement as a scenario at `out`, loads it
/// back from the file and runs it `n` times: it reproduces when at least
/// four in five trials show the violation. One that does not (a pause
/// about as long as the lease wins the race only sometimes) gives way to
/// the kind's next placement, up to [`CANDIDATES`]; the file left at `out`
/// is the last one tried. Returns its reruns that showed the kind, and
/// whether it reproduces.
fn confirm(
    ctx: &Ctx,
    f: &Finding,
    out: &PathBuf,
    n: u32,
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
) -> Result<(u32, bool, Option<Rerun>)> {
    for (c, placement) in f.placements.iter().take(CANDIDATES).enumerate() {
        let (shown, first) = rerun(ctx, f, placement, out, n, servers, exe, timeout)?;
        let reproduces = reproduces(shown, n);
        println!(
            "{}: {} — written to {} — shown in {shown}/{n} reruns of that file: {}",
            f.kind.name(),
            ctx.labels(placement),
            out.display(),
            if reproduces {
                "reproduces"
            } else {
                "does not reproduce reliably"
            }
        );
        let last = c + 1 == f.placements.len().min(CANDIDATES);
        if reproduces || last {
            return Ok((shown, reproduces, first));
        }
    }
    Ok((0, false, None))
}

/// A rerun of a finding's file: its number and its trial.
type Rerun = (u32, TrialResult);

/// Writes `placement` as the finding's scenario at `out` and runs that
/// file `n` times: in how many the violation showed, and the first rerun
/// that showed it (the report draws it).
#[allow(clippy::too_many_arguments)]
fn rerun(
    ctx: &Ctx,
    f: &Finding,
    placement: &[usize],
    out: &PathBuf,
    n: u32,
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
) -> Result<(u32, Option<Rerun>)> {
    let name = format!("{}-search-{}", ctx.name, f.kind.name());
    let header = format!(
        "Found by `fencesim search {}`{}: {} after {} trials ({:.1} s).\n{}",
        ctx.path.display(),
        ctx.worker_cmd
            .map_or(String::new(), |c| format!(" --worker-cmd '{c}'")),
        f.kind.name(),
        f.after_trials,
        f.after_s,
        ctx.labels(placement)
    );
    let text = ctx.text(&ctx.faults(placement), &name, &[f.kind], &header, out);
    std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    let s = scenario::load(out).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let mut first = None;
    let shown = count_shown(n, |k| {
        let r = one_trial(&s, ctx.worker_cmd, servers, exe, timeout, k)?;
        let shows = r
            .as_ref()
            .is_ok_and(|r| r.report.kinds().any(|x| x == f.kind));
        if shows && first.is_none() {
            first = r.ok().map(|r| (k, r));
        }
        Ok(shows)
    })?;
    Ok((shown, first))
}

/// In how many of trials 1..=`runs` the violation showed (`shows(k)`; a
/// trial that could not be judged shows nothing).
fn count_shown(runs: u32, mut shows: impl FnMut(u32) -> Result<bool>) -> Result<u32> {
    let mut shown = 0;
    for k in 1..=runs {
        shown += shows(k)? as u32;
    }
    Ok(shown)
}

/// The nemesis's record, trial by trial: what its reports are made of.
/// It lives outside the trials' loop, so a violation, a failed server or
/// Ctrl-C still leaves every report asked for written.
#[derive(Default)]
struct ChaosRun {
    trials: Vec<lr::ChaosTrialJson>,
    /// The trial the report draws (the one whose violation reproduced,
    /// else the first that showed one): its number, result, history file.
    drawn: Option<(u32, TrialResult, PathBuf)>,
    found_at_trial: Option<u32>,
}

/// The seeded nemesis: `chaos_trials` trials, each with faults drawn from
/// (seed, trial) and printed with its verdict, each history written. The
/// first trial whose violation shows again in four of five reruns of the
/// same schedule has its schedule written as a scenario (rerun it with
/// `fencesim live FILE`) and shrunk to the fewest faults that still
/// reproduce it, written beside it. `--json`, `--junit` and `--report` are
/// written whatever stopped the run (a violation, an error, Ctrl-C).
fn chaos(ctx: &Ctx, s0: &LiveScenario, seed: u64, a: &LiveSearch) -> Result<ExitCode> {
    println!(
        "fencesim search (live) --chaos {seed}: {} — {} trials, up to {} faults each{}",
        a.path.display(),
        a.chaos_trials,
        a.faults,
        worker_note(ctx.worker_cmd)
    );
    let mut rig = Rig::start(a)?;
    let mut run = ChaosRun::default();
    let ran = chaos_trials(ctx, s0, seed, a, &mut rig, &mut run);
    let wall_ms = rig.started.elapsed().as_millis() as u64;
    let cleaned = rig.servers.clean_up();
    let interrupted = crate::live::interrupted();
    let code = match &ran {
        _ if interrupted => EXIT_INTERRUPTED,
        // What main returns for an error.
        Err(_) => EXIT_BAD_INPUT,
        Ok(()) if run.found_at_trial.is_some() => EXIT_FAILED,
        Ok(()) => EXIT_OK,
    };
    if code == EXIT_OK {
        println!(
            "clean: {} trials of seed {seed}, no violation ({:.1} s)",
            a.chaos_trials,
            wall_ms as f64 / 1000.0
        );
    }
    let r = lr::ChaosJson {
        schema: lr::CHAOS_SCHEMA.to_string(),
        schema_version: lr::SCHEMA_VERSION,
        fencesim_version: env!("CARGO_PKG_VERSION").to_string(),
        path: a.path.display().to_string(),
        worker_cmd: ctx.worker_cmd.map(str::to_string),
        seed,
        chaos_trials: a.chaos_trials,
        max_faults: a.faults,
        confirm_reruns: a.confirm,
        trials: std::mem::take(&mut run.trials),
        found_at_trial: run.found_at_trial,
        interrupted,
        // Ctrl-C's own error is `interrupted`, said above.
        error: (ran.as_ref().err())
            .filter(|_| !interrupted)
            .map(|e| format!("{e:#}")),
        wall_ms,
        exit_code: code,
    };
    write_chaos_outputs(a, &r, run.drawn.as_ref())?;
    if interrupted {
        eprintln!(
            "interrupted after {} trial(s) of seed {seed}: no verdict",
            r.trials.len()
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    ran?;
    cleaned?;
    Ok(ExitCode::from(code))
}

/// `--json`, `--junit` and `--report` of the nemesis, each when asked.
fn write_chaos_outputs(
    a: &LiveSearch,
    r: &lr::ChaosJson,
    drawn: Option<&(u32, TrialResult, PathBuf)>,
) -> Result<()> {
    if let Some(file) = a.json {
        put(file, lr::to_json(r))?;
    }
    if let Some(file) = a.junit {
        put(file, lr::chaos_junit(r))?;
    }
    if let Some(dir) = a.report {
        let drawn = drawn.map(|(t, tr, file)| lr::Drawn {
            trial: *t,
            reason: if r.found_at_trial == Some(*t) {
                "its violation reproduced".to_string()
            } else {
                "the first trial with a violation (it did not reproduce)".to_string()
            },
            history: &tr.history,
            report: &tr.report,
            history_file: file,
        });
        crate::report::write::write(dir, &lr::chaos_doc(r, drawn.as_ref()))?;
        println!("report written to {}", dir.join("index.html").display());
    }
    Ok(())
}

fn put(file: &Path, text: String) -> Result<()> {
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}

/// The nemesis's trials, each recorded in `run` as it ends (an error ends
/// the run with the failed trial recorded); stops early at Ctrl-C or at
/// a violation that reproduces, whose files it writes.
fn chaos_trials(
    ctx: &Ctx,
    s0: &LiveScenario,
    seed: u64,
    a: &LiveSearch,
    rig: &mut Rig,
    run: &mut ChaosRun,
) -> Result<()> {
    let expressible = |f: &[Fault]| ctx.expressible(f);
    // Histories go where `fencesim live` writes its own (or to --out).
    let histories = a.out.unwrap_or(Path::new("target/live"));
    std::fs::create_dir_all(histories)
        .with_context(|| format!("creating {}", histories.display()))?;
    for t in 1..=a.chaos_trials {
        if crate::live::interrupted() {
            return Ok(());
        }
        let faults = explore::chaos_schedule(
            s0,
            ctx.singles,
            (seed, t),
            a.faults,
            ctx.worker_cmd.is_some(),
            expressible,
        );
        let labels = schedule_labels(&faults, ctx.names);
        let started = Instant::now();
        let mut entry = lr::ChaosTrialJson {
            trial: t,
            schedule: faults.iter().map(|f| fault_json(f, ctx.names)).collect(),
            verdict: lr::ChaosVerdict::Clean,
            history_file: None,
            trial_ms: 0,
            reruns_shown: None,
            reproduces: None,
            reproduction_file: None,
            shrunk_file: None,
            shrunk_schedule: Vec::new(),
        };
        let ran = chaos_trial(ctx, &faults, &mut rig.servers, &rig.exe, rig.timeout, t);
        entry.trial_ms = started.elapsed().as_millis() as u64;
        let r = match ran {
            Ok(Ok(r)) => r,
            Ok(Err(why)) => {
                println!("  trial {t}: {labels} — not judged: {why}");
                entry.verdict = lr::ChaosVerdict::NotJudged { why };
                run.trials.push(entry);
                continue;
            }
            // Ctrl-C ended the trial: it has no verdict, and the run stops.
            Err(_) if crate::live::interrupted() => return Ok(()),
            Err(e) => {
                entry.verdict = lr::ChaosVerdict::Error {
                    why: format!("{e:#}"),
                };
                run.trials.push(entry);
                return Err(e);
            }
        };
        let file = histories.join(format!("{}-chaos-{seed}-trial-{t}.jsonl", stem(a.path)));
        crate::live::history::write_history(&r.history, &file)?;
        entry.history_file = Some(file.display().to_string());
        let kinds: Vec<ViolationKind> = r.report.kinds().collect();
        entry.verdict = match kinds.is_empty() {
            true => lr::ChaosVerdict::Clean,
            false => lr::ChaosVerdict::Violation {
                kinds: kinds.iter().map(|k| k.name().to_string()).collect(),
            },
        };
        println!("  trial {t}: {labels} — {}", entry.verdict.text());
        run.trials.push(entry);
        let Some(&kind) = kinds.first() else {
            continue;
        };
        // A violation that a rerun of the same schedule does not show again
        // (a pause about as long as the lease races the expiry) is noted,
        // and the nemesis goes on.
        let shown = shown_in(ctx, &faults, kind, a.confirm, rig)?;
        let reproduces = reproduces(shown, a.confirm);
        let i = run.trials.len() - 1;
        run.trials[i].reruns_shown = Some(shown);
        run.trials[i].reproduces = Some(reproduces);
        if run.drawn.is_none() || reproduces {
            run.drawn = Some((t, r, file));
        }
        if reproduces {
            println!(
                "    {}: shown again in {shown}/{} reruns",
                kind.name(),
                a.confirm
            );
            run.found_at_trial = Some(t);
            return chaos_found(ctx, seed, a, rig, run, kind, faults);
        }
        println!(
            "    {}: shown again in only {shown}/{} reruns (a race, not a schedule that reproduces): going on",
            kind.name(),
            a.confirm
        );
    }
    Ok(())
}

/// A schedule as the terminal prints it.
fn schedule_labels(faults: &[Fault], names: &[String]) -> String {
    faults
        .iter()
        .map(|f| f.label(names))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The scenario file's name without `.toml`: the written files' prefix.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
}

/// The reproduced trial (the last in `run`): its schedule written as a
/// scenario, then shrunk and written beside it; each file recorded in the
/// trial's entry as soon as it is written.
fn chaos_found(
    ctx: &Ctx,
    seed: u64,
    a: &LiveSearch,
    rig: &mut Rig,
    run: &mut ChaosRun,
    kind: ViolationKind,
    faults: Vec<Fault>,
) -> Result<()> {
    let entry = run.trials.len() - 1;
    let t = run.trials[entry].trial;
    println!(
        "first violation: {} at trial {t} of seed {seed} ({:.1} s)",
        kind.name(),
        rig.started.elapsed().as_secs_f64()
    );
    let dir = a.out.map_or_else(
        || a.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        Path::to_path_buf,
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let header = format!(
        "The nemesis's schedule: `fencesim search {} --chaos {seed}`, trial {t}.",
        a.path.display()
    );
    let stem = stem(a.path);
    let file = dir.join(format!("{stem}-chaos-{seed}-{t}.toml"));
    write_schedule(ctx, &faults, kind, &header, &file)?;
    run.trials[entry].reproduction_file = Some(file.display().to_string());
    println!(
        "schedule written to {} (rerun: fencesim live {})",
        file.display(),
        file.display()
    );
    let shrunk = shrink(ctx, faults, kind, rig)?;
    let file = dir.join(format!("{stem}-chaos-{seed}-{t}-shrunk.toml"));
    write_schedule(
        ctx,
        &shrunk,
        kind,
        &format!("{header}\nShrunk to {} fault(s).", shrunk.len()),
        &file,
    )?;
    run.trials[entry].shrunk_file = Some(file.display().to_string());
    run.trials[entry].shrunk_schedule = shrunk.iter().map(|f| fault_json(f, ctx.names)).collect();
    println!(
        "shrunk to {} fault(s): {} — written to {}",
        shrunk.len(),
        schedule_labels(&shrunk, ctx.names),
        file.display()
    );
    Ok(())
}

/// A fault of a schedule as the nemesis's JSON spells it: the fields of
/// its `[[fault]]` table (the one spelling the scenario files use), and
/// its label.
fn fault_json(f: &Fault, names: &[String]) -> lr::FaultJson {
    let t = f.table(names);
    let text = |k: &str| t.get(k).and_then(toml::Value::as_str).map(str::to_string);
    let ms = |k: &str| {
        t.get(k)
            .and_then(toml::Value::as_integer)
            .and_then(|v| u64::try_from(v).ok())
    };
    lr::FaultJson {
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

/// One trial of a schedule: its result, or why it was not judged.
fn chaos_trial(
    ctx: &Ctx,
    faults: &[Fault],
    servers: &mut Servers,
    exe: &Path,
    timeout: Duration,
    k: u32,
) -> Result<Result<TrialResult, String>> {
    let s = match ctx.placed(faults, ctx.name, &[]) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    one_trial(&s, ctx.worker_cmd, servers, exe, timeout, k)
}

fn write_schedule(
    ctx: &Ctx,
    faults: &[Fault],
    kind: ViolationKind,
    header: &str,
    file: &Path,
) -> Result<()> {
    let name = file
        .file_stem()
        .map_or("chaos".into(), |s| s.to_string_lossy());
    let text = ctx.text(faults, &name, &[kind], header, file);
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}

/// At least four in five.
fn reproduces(shown: u32, runs: u32) -> bool {
    shown * 5 >= runs * 4
}

/// In how many of `runs` trials of `faults` the violation showed.
fn shown_in(
    ctx: &Ctx,
    faults: &[Fault],
    kind: ViolationKind,
    runs: u32,
    rig: &mut Rig,
) -> Result<u32> {
    count_shown(runs, |k| {
        Ok(
            chaos_trial(ctx, faults, &mut rig.servers, &rig.exe, rig.timeout, k)?
                .is_ok_and(|r| r.report.kinds().any(|x| x == kind)),
        )
    })
}

/// Takes faults out one at a time, keeping each removal after which the
/// schedule still reproduces the violation (in four of five reruns).
fn shrink(
    ctx: &Ctx,
    mut faults: Vec<Fault>,
    kind: ViolationKind,
    rig: &mut Rig,
) -> Result<Vec<Fault>> {
    let mut i = 0;
    while i < faults.len() && faults.len() > 1 {
        let mut fewer = faults.clone();
        fewer.remove(i);
        if reproduces(shown_in(ctx, &fewer, kind, 5, rig)?, 5) {
            faults = fewer;
        } else {
            i += 1;
        }
    }
    Ok(faults)
}
