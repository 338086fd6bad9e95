//! `fencesim replay`: one seed, shown in full — options, timeline, trace,
//! violations with evidence, trace hash — and optionally written out as a
//! history file or a fully scripted scenario.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::flags::parse_seed;
use super::{load, BadInput, EXIT_FAILED, EXIT_OK};
use crate::{history, report, scenario};

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    path: PathBuf,
    #[arg(long, value_parser = parse_seed)]
    seed: u64,
    /// Write the run's history as JSON lines to this file.
    #[arg(long)]
    history: Option<PathBuf>,
    /// Omit the per-event trace (timeline and verdict only).
    #[arg(long)]
    no_trace: bool,
    /// Write this run as a fully scripted scenario (random faults resolved).
    #[arg(long)]
    emit_scenario: Option<PathBuf>,
    /// Also write a report directory: index.html (SVG timeline), summary.md, results.json.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Replay the seed as `run --swarm` ran it.
    #[arg(long)]
    swarm: bool,
    /// Warn unless this is the fencesim version running (from a repro line).
    #[arg(long)]
    expect_version: Option<String>,
    /// Warn unless the scenario file has this content hash (from a repro line).
    #[arg(long)]
    expect_hash: Option<String>,
}

pub fn cmd(a: ReplayArgs) -> Result<ExitCode> {
    warn_if_changed(
        &a.path,
        a.expect_version.as_deref(),
        a.expect_hash.as_deref(),
    )?;
    cmd_replay(
        &a.path,
        a.seed,
        a.history,
        !a.no_trace,
        a.emit_scenario,
        a.swarm,
        a.report,
    )
}

/// Warns (stderr) when a repro line's `--expect-version` / `--expect-hash`
/// differ from this binary and this file: the replay may then not be the
/// run that failed. A warning, not an error: replaying an edited scenario
/// is also how people check their fix.
fn warn_if_changed(
    path: &std::path::Path,
    version: Option<&str>,
    hash: Option<&str>,
) -> Result<()> {
    let running = env!("CARGO_PKG_VERSION");
    if let Some(v) = version.filter(|v| *v != running) {
        eprintln!("warning: the repro line is from fencesim {v}, this is {running}; the replay may differ from the run that failed");
    }
    if let Some(h) = hash {
        let expected = crate::report::json::parse_hex(h)
            .map_err(|e| BadInput(format!("--expect-hash: {e}")))?;
        let actual = load(path)?.source_hash;
        if expected != actual {
            eprintln!(
                "warning: {} has changed since the repro line was printed (content hash {actual:016x}, expected {expected:016x}); the replay may differ from the run that failed",
                path.display()
            );
        }
    }
    Ok(())
}

/// `swarm`: replay the seed with the options `run --swarm` gave it.
fn cmd_replay(
    path: &std::path::Path,
    seed: u64,
    history_out: Option<PathBuf>,
    with_trace: bool,
    emit: Option<PathBuf>,
    swarm: bool,
    report_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let s = load(path)?;
    let crate::suite::SeedRun {
        outcome: out,
        report,
        mix,
    } = crate::suite::seed::run(
        &s.options,
        seed,
        crate::suite::RunSeed {
            keep_trace: true,
            swarm,
            terse: false,
        },
    );
    if let Some(mix) = mix {
        println!(
            "swarm mix for seed {seed}: {}",
            crate::suite::swarm::label(mix)
        );
    }
    // The header shows the options the seed ran with: under --swarm, the
    // swarmed rates (loss 0.8, not the file's 0.2), not the file's.
    let shown = match mix {
        Some(_) => crate::scenario::Scenario {
            options: crate::suite::swarm::configure(&s.options, seed).0,
            ..s.clone()
        },
        None => s.clone(),
    };
    print!(
        "{}",
        report::replay::render(&shown, &out, &report, with_trace)
    );
    if let Some(file) = history_out {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(&file).with_context(|| format!("creating {}", file.display()))?,
        );
        history::jsonl::write(&out.history, &mut w)?;
        w.flush()?;
        println!("history written to {}", file.display());
    }
    if let Some(file) = emit {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let scripted = scenario::emit::scripted(&text, &s.options, &out.script, seed)
            .map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
        std::fs::write(&file, scripted).with_context(|| format!("writing {}", file.display()))?;
        println!("scripted scenario written to {}", file.display());
    }
    if let Some(dir) = report_dir {
        report::write::write(&dir, &report::write::replay_doc(&s, &out, &report, swarm))?;
        println!("report written to {}", dir.join("index.html").display());
    }
    let failing = !report.is_clean() && report.kinds().any(|k| !s.expect.tolerates(k));
    if !report.is_clean() {
        println!(
            "replay: {}",
            crate::suite::repro_command(&path.display().to_string(), seed, swarm, s.source_hash)
        );
    }
    Ok(ExitCode::from(
        if failing || !s.expect.failed_metrics(&report).is_empty() {
            EXIT_FAILED
        } else {
            EXIT_OK
        },
    ))
}
