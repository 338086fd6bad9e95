//! `fencesim search LIVE.toml`: the live search ([`crate::live::search`])
//! from the command line — every placement of up to K real faults run as
//! one live trial each, or with `--chaos SEED` the seeded nemesis — its
//! progress and coverage printed, its findings written as live scenarios
//! and confirmed, and the reports asked for written. Exit 0 clean, 1 a
//! violation, 3 when no trial could be judged, 130 at Ctrl-C.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::live::servers_line;
use super::out_paths::out_paths;
use super::{BadInput, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK};
use crate::live::history::TrialResult;
use crate::live::scenario;
use crate::live::search::catalogue::{base_table, catalogue, placements};
use crate::live::search::chaos::{self, ChaosConfig, ChaosRun};
use crate::live::search::placed::Placer;
use crate::live::search::{self, Coverage, Finding, Progress, Rerun, SearchConfig};
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

pub fn cmd(a: LiveSearch) -> Result<ExitCode> {
    let src = std::fs::read_to_string(a.path)
        .map_err(|e| BadInput(format!("{}: {e}", a.path.display())))?;
    let s0 = scenario::parse(&src, a.path).map_err(|e| BadInput(e.to_string()))?;
    let base = base_table(&src, a.path).map_err(|e| BadInput(format!("{e:#}")))?;
    let worker_cmd = a.worker_cmd.clone().or(s0.worker_cmd.clone());
    if let Some(kind) = s0.lock.cluster() {
        crate::live::cluster::binaries_present(kind)
            .map_err(|e| BadInput(format!("{}: {e:#}", a.path.display())))?;
    }
    if a.confirm == 0 {
        return Err(BadInput("--confirm must be at least 1".into()).into());
    }
    let singles = catalogue(&s0, worker_cmd.is_some());
    let names = s0.worker_names();
    let placer = Placer {
        path: a.path,
        s0: &s0,
        base: &base,
        names: &names,
        worker_cmd: worker_cmd.as_deref(),
        singles: &singles,
    };
    check_outputs(&a)?;
    crate::live::install_interrupt_handler();
    let exe = std::env::current_exe()?;
    let cfg = SearchConfig {
        jobs: a.jobs,
        timeout: Duration::from_millis(a.timeout_ms),
        exe: &exe,
        confirm: a.confirm,
    };
    match a.chaos {
        Some(seed) => nemesis(&placer, seed, cfg, &a),
        None => enumeration(&placer, cfg, &a),
    }
}

/// Every placement, its coverage, each finding confirmed (module doc).
fn enumeration(placer: &Placer, cfg: SearchConfig, a: &LiveSearch) -> Result<ExitCode> {
    let placements = placements(placer.singles.len(), a.faults);
    println!(
        "fencesim search (live): {} — {} single faults, up to {} at once: {} placements{}",
        a.path.display(),
        placer.singles.len(),
        a.faults,
        placements.len(),
        worker_note(placer.worker_cmd)
    );
    let started = Instant::now();
    let bar = bar(placements.len());
    let cov = search::explore(placer, &placements, cfg, started, &|p| match p {
        Progress::Placement => bar.inc(1),
        p => print_progress(p),
    })?;
    bar.finish_and_clear();
    let wall_s = started.elapsed().as_secs_f64();
    print_coverage(placer, &cov, wall_s);
    let kinds: Vec<&str> = cov.findings.iter().map(|f| f.kind.name()).collect();
    let outs = out_paths(a.path, a.out, &kinds)?;
    let confirmed = match cov.findings.is_empty() {
        true => Vec::new(),
        false => {
            let mut servers = search::start_servers(&print_progress)?;
            let confirmed = confirm_all(placer, &cov, &outs, (cfg, &mut servers))?;
            servers.clean_up()?;
            confirmed
        }
    };
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
    write_outputs(a, placer, &cov, wall_s, findings, interrupted, code)?;
    Ok(ExitCode::from(code))
}

/// Each finding confirmed in turn on `servers`; Ctrl-C before or during its
/// reruns leaves a finding unconfirmed.
#[allow(clippy::type_complexity)]
fn confirm_all(
    placer: &Placer,
    cov: &Coverage,
    outs: &[PathBuf],
    (cfg, servers): (SearchConfig, &mut crate::live::servers::Servers),
) -> Result<Vec<(u32, bool, Option<Rerun>)>> {
    let mut confirmed = Vec::new();
    for (f, out) in cov.findings.iter().zip(outs) {
        let r = match crate::live::interrupted() {
            true => Ok((0, false, None)),
            false => search::confirm(placer, f, out, (cfg, &mut *servers), &print_progress),
        };
        confirmed.push(match r {
            Err(_) if crate::live::interrupted() => (0, false, None),
            r => r?,
        });
    }
    Ok(confirmed)
}

/// The coverage, the first trial not judged and each finding's first placement.
fn print_coverage(placer: &Placer, cov: &Coverage, wall_s: f64) {
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
            placer.labels(&f.placements[0])
        );
    }
}

/// What the search tells as it goes, printed.
fn print_progress(p: Progress) {
    match p {
        Progress::Servers { job, info } => match job {
            Some((j, n)) => print!("job {j}/{n}: {}", servers_line(info)),
            None => print!("{}", servers_line(info)),
        },
        Progress::Placement => {}
        Progress::Confirmed {
            kind,
            labels,
            out,
            shown,
            reruns,
            reproduces,
        } => println!(
            "{}: {labels} — written to {} — shown in {shown}/{reruns} reruns of that file: {}",
            kind.name(),
            out.display(),
            if reproduces {
                "reproduces"
            } else {
                "does not reproduce reliably"
            }
        ),
        Progress::ChaosTrial {
            trial,
            labels,
            verdict,
        } => match verdict {
            lr::ChaosVerdict::NotJudged { why } => {
                println!("  trial {trial}: {labels} — not judged: {why}")
            }
            v => println!("  trial {trial}: {labels} — {}", v.text()),
        },
        p => print_chaos_progress(p),
    }
}

/// The nemesis's reruns and what it wrote, printed.
fn print_chaos_progress(p: Progress) {
    match p {
        Progress::ChaosReruns {
            kind,
            shown,
            reruns,
            reproduces: true,
        } => println!("    {}: shown again in {shown}/{reruns} reruns", kind.name()),
        Progress::ChaosReruns {
            kind,
            shown,
            reruns,
            reproduces: false,
        } => println!(
            "    {}: shown again in only {shown}/{reruns} reruns (a race, not a schedule that reproduces): going on",
            kind.name()
        ),
        Progress::ChaosFound { kind, trial, s } => {
            println!("first violation: {} at trial {trial} ({s:.1} s)", kind.name())
        }
        Progress::ChaosWritten { file } => println!(
            "schedule written to {} (rerun: fencesim live {})",
            file.display(),
            file.display()
        ),
        Progress::ChaosShrunk {
            faults,
            labels,
            file,
        } => println!(
            "shrunk to {faults} fault(s): {labels} — written to {}",
            file.display()
        ),
        _ => {}
    }
}

/// The seeded nemesis ([`crate::live::search::chaos`]): its trials printed
/// with their verdicts; `--json`, `--junit` and `--report` written
/// whatever stopped the run (a violation, an error, Ctrl-C).
fn nemesis(placer: &Placer, seed: u64, cfg: SearchConfig, a: &LiveSearch) -> Result<ExitCode> {
    println!(
        "fencesim search (live) --chaos {seed}: {} — {} trials, up to {} faults each{}",
        a.path.display(),
        a.chaos_trials,
        a.faults,
        worker_note(placer.worker_cmd)
    );
    let stem = a
        .path
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    // Histories go where `fencesim live` writes its own (or to --out); a
    // reproduced schedule beside the scenario (or in --out).
    let histories = a.out.unwrap_or(Path::new("target/live"));
    let found_dir = a.out.map_or_else(
        || a.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        Path::to_path_buf,
    );
    let ccfg = ChaosConfig {
        seed,
        trials: a.chaos_trials,
        max_faults: a.faults,
        histories,
        found_dir: &found_dir,
        stem: &stem,
        search: cfg,
    };
    let mut run = ChaosRun::default();
    let mut servers = search::start_servers(&print_progress)?;
    let started = Instant::now();
    let ran = chaos::run(placer, ccfg, &mut servers, &mut run, &print_progress);
    let wall_ms = started.elapsed().as_millis() as u64;
    let cleaned = servers.clean_up();
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
        worker_cmd: placer.worker_cmd.map(str::to_string),
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
    placer: &Placer,
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
            placements: f.placements.iter().map(|p| placer.labels(p)).collect(),
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

fn worker_note(cmd: Option<&str>) -> String {
    cmd.map_or(String::new(), |c| format!(", worker `{c}`"))
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
