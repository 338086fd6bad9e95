//! `fencesim check`: model-check specs (models/*.toml), one table row each, then every
//! counterexample as a numbered timeline — and, with `--emit-scenario`, as a scripted
//! simulator scenario that is run at once, so the user sees the message-level code fail the
//! same way (its lanes timeline, as `fencesim replay` draws it).
//!
//! Exit codes as for `run`: 0 every model met its expectation (and every emitted scenario
//! reproduced its violation), 1 something did not, 2 bad input — and 130 (128 + SIGINT, the
//! shell convention) when Ctrl-C stopped a search: the model being checked gets an
//! "interrupted after N states" line with its partial counts and no verdict, later models are
//! not started. A second Ctrl-C kills the process at once (the default action is restored).

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::flags::{jobs, Format};
use super::Verdict;
use super::{check_code, interrupt};
use super::{BadInput, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::model::to_scenario::{file_name, scripted_path, to_scenario, violation_kind};
use crate::model::{self, CheckOptions, CheckReport, Counterexample, ModelSpec, Phase, Stats};
use crate::report::model_check::{elapsed, grouped, json_report, render_table, si, totals};
use crate::{report, scenario, suite};

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Model spec files or directories of them (*.toml).
    #[arg(required_unless_present = "code")]
    paths: Vec<PathBuf>,
    /// Threads for the exhaustive proofs (default: all cores). Counterexample searches are
    /// single-threaded so that they are shortest and deterministic.
    #[arg(long)]
    threads: Option<usize>,
    /// Write every counterexample as a fully scripted simulator scenario and run it: a
    /// `.toml` path for a single counterexample, else a directory (created) that receives
    /// `<model>-<violation>.toml` files (with --code: `code-<protocol>-<violation>.toml`).
    #[arg(long, value_name = "PATH")]
    emit_scenario: Option<PathBuf>,
    /// Output format on stdout (json: schema `fencesim-check`, version 1).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[command(flatten)]
    code: check_code::CodeArgs,
}

pub fn cmd(a: CheckArgs) -> Result<ExitCode> {
    let CheckArgs {
        paths,
        threads,
        emit_scenario: emit,
        format,
        code,
    } = a;
    let threads = jobs(threads);
    if let Some(id) = code.code.as_deref() {
        let (specs, json) = (!paths.is_empty(), format == Format::Json);
        return check_code::dispatch(&code, id, specs, emit.as_deref(), json, threads);
    }
    let paths = paths.as_slice();
    let specs = load_specs(paths)?;
    for warning in specs.iter().filter_map(ModelSpec::size_warning) {
        eprintln!("warning: {warning}");
    }
    if format == Format::Json {
        if emit.is_some() {
            return Err(BadInput(
                "--emit-scenario prints its replays as text: use it without --format json".into(),
            )
            .into());
        }
        let options = CheckOptions {
            threads,
            progress: None,
            interrupt: interrupt::catch(interrupt::CTRL_C),
        };
        let reports = check_until_interrupted(&specs, |_| options.clone());
        interrupt::restore_default(interrupt::CTRL_C);
        let met = reports.iter().all(CheckReport::meets_expectation);
        let interrupted = reports.iter().any(|r| r.interrupted);
        let code = match (interrupted, met) {
            (true, _) => EXIT_INTERRUPTED,
            (false, true) => EXIT_OK,
            (false, false) => EXIT_FAILED,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&json_report(&reports, threads, code))?
        );
        return Ok(ExitCode::from(code));
    }
    println!(
        "fencesim {} — {} model{}, threads {threads}",
        env!("CARGO_PKG_VERSION"),
        specs.len(),
        if specs.len() == 1 { "" } else { "s" }
    );
    let progress = std::io::stderr().is_terminal().then(progress_line);
    let interrupt = interrupt::catch(interrupt::CTRL_C);
    let reports = check_until_interrupted(&specs, |spec| CheckOptions {
        threads,
        progress: progress.as_ref().map(|p| p(spec.name.clone())),
        interrupt,
    });
    interrupt::restore_default(interrupt::CTRL_C);
    if progress.is_some() {
        eprint!("\r\x1b[2K");
    }
    if let Some(stopped) = reports.iter().find(|r| r.interrupted) {
        let done = &reports[..reports.len() - 1];
        if !done.is_empty() {
            print!("{}", render_table(done));
        }
        let t = totals(stopped);
        println!(
            "{}: interrupted after {} states ({} unique, depth {}): no verdict",
            stopped.spec.name,
            grouped(t.total_states),
            grouped(t.unique_states),
            t.max_depth
        );
        for spec in &specs[reports.len()..] {
            println!("{}: not started", spec.name);
        }
        return Ok(ExitCode::from(Verdict::Interrupted));
    }
    print!("{}", render_table(&reports));
    let mut met = reports.iter().all(CheckReport::meets_expectation);

    let counterexamples: Vec<(&ModelSpec, &Counterexample)> = reports
        .iter()
        .flat_map(|r| r.counterexamples().map(move |c| (&r.spec, c)))
        .collect();
    let targets = match &emit {
        Some(path) => Some(emit_targets(path, &counterexamples)?),
        None => None,
    };
    for (i, &(spec, c)) in counterexamples.iter().enumerate() {
        print!("{}", report::model_check::counterexample(&spec.name, c));
        if let Some(targets) = &targets {
            met &= emit_and_replay(spec, c, &targets[i], threads)?;
        }
    }
    Ok(Verdict::met_if(met).into())
}

/// Checks the specs in order; an interrupted check is the last report.
fn check_until_interrupted(
    specs: &[ModelSpec],
    options: impl Fn(&ModelSpec) -> CheckOptions,
) -> Vec<CheckReport> {
    let mut reports = Vec::with_capacity(specs.len());
    for spec in specs {
        let report = model::check(spec, &options(spec));
        let stop = report.interrupted;
        reports.push(report);
        if stop {
            break;
        }
    }
    reports
}

/// Loads every spec first: a typo in the last file should not cost a long proof.
fn load_specs(paths: &[PathBuf]) -> Result<Vec<ModelSpec>> {
    let files = scenario::collect(paths).map_err(|e| match e {
        scenario::LoadError::Empty { path } => {
            BadInput(format!("{path}: no model specs (*.toml) found"))
        }
        other => BadInput(other.to_string()),
    })?;
    files
        .iter()
        .map(|f| model::load(f).map_err(|e| BadInput(e.to_string()).into()))
        .collect()
}

/// A progress callback per model, drawing one overwritten line on stderr.
fn progress_line() -> impl Fn(String) -> model::checker::ProgressFn {
    |name: String| {
        Arc::new(move |phase: Phase, stats: &Stats| {
            let what = match phase {
                Phase::Proof => "proof".to_string(),
                Phase::Search(v) => format!("search {v}"),
            };
            eprint!(
                "\r\x1b[2K  {name}: {what}: {} unique states, depth {}, {}/s, {}",
                stats.unique_states,
                stats.max_depth,
                si(stats.states_per_sec()),
                elapsed(stats.elapsed)
            );
            let _ = std::io::stderr().flush();
        }) as model::checker::ProgressFn
    }
}

/// Where each counterexample's scenario goes: `PATH` itself if it names a `.toml` file (then
/// there must be exactly one counterexample), else `PATH/<model>-<violation>.toml`.
fn emit_targets(
    path: &Path,
    counterexamples: &[(&ModelSpec, &Counterexample)],
) -> Result<Vec<PathBuf>> {
    if path.extension().is_some_and(|e| e == "toml") {
        if counterexamples.len() != 1 {
            return Err(BadInput(format!(
                "--emit-scenario {}: {} counterexamples need a directory, not one .toml file",
                path.display(),
                counterexamples.len()
            ))
            .into());
        }
        return Ok(vec![path.to_path_buf()]);
    }
    if !counterexamples.is_empty() {
        std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    }
    Ok(counterexamples
        .iter()
        .map(|(spec, c)| path.join(file_name(spec, c)))
        .collect())
}

/// Writes the scenario, runs all its seeds, and shows seed 0's lanes timeline. Returns whether
/// the simulator reproduced the violation as the scenario expects.
fn emit_and_replay(
    spec: &ModelSpec,
    c: &Counterexample,
    file: &Path,
    threads: usize,
) -> Result<bool> {
    let text = match to_scenario(spec, c) {
        Ok(text) => text,
        Err(why) => {
            println!("  cannot script this counterexample for the simulator: {why}");
            return Ok(false);
        }
    };
    if scripted_path(spec, c).is_ok_and(|p| p.actions() != c.actions()) {
        println!("\n  (the scenario checks the writes in commit order, as the simulator's resource does; the model reaches the same violation on that path — see the file's header)");
    }
    replay_emitted(&text, file, violation_kind(c.violation), threads)
}

/// Writes an emitted scenario to `file`, runs all its seeds, and shows seed 0's lanes
/// timeline. Returns whether the simulator found `kind` as the scenario expects.
pub(super) fn replay_emitted(
    text: &str,
    file: &Path,
    kind: crate::check::ViolationKind,
    threads: usize,
) -> Result<bool> {
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))?;
    let shown = file.display().to_string();
    let s = scenario::parse(text, &shown).map_err(|e| {
        anyhow::anyhow!("implementation error: the emitted scenario is invalid: {e}")
    })?;
    let result = suite::run_scenario(&s, s.seeds.clone(), threads);
    println!(
        "\n  scripted scenario written to {shown}; the simulator finds {kind} in {}/{} seeds: {}",
        result.agg.failing_seeds[kind as usize],
        result.agg.seeds,
        if result.met() {
            "reproduced"
        } else {
            "NOT REPRODUCED"
        }
    );
    for p in &result.problems {
        println!("  - {p}");
    }
    let crate::suite::SeedRun {
        outcome: out,
        report: found,
        ..
    } = crate::suite::seed::run(&s.options, s.seeds.start, crate::suite::RunSeed::default());
    let evidence: BTreeSet<u64> = found
        .violations
        .iter()
        .filter(|v| v.kind == kind)
        .flat_map(|v| v.evidence.iter().copied())
        .collect();
    println!(
        "  simulator timeline ({}):",
        report::table::repro_command(&shown, s.seeds.start)
    );
    for line in report::timeline::render(&out.history, &evidence).lines() {
        println!("  {line}");
    }
    Ok(result.met())
}
