//! `fencesim run`: every scenario over its seeds (optionally swarmed,
//! twice-run for determinism, or one shard of them), one table row each —
//! or the JSON report — plus JUnit XML for CI. A progress bar goes to
//! stderr when, and only when, stderr is a terminal.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::flags::{parse_shard, Format, JobsFlag, SeedFlags};
use super::Verdict;
use super::{
    check_writable_dir, check_writable_file, load, BadInput, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK,
};
use crate::suite::swarm;
use crate::suite::{self, ScenarioResult, SweepConfig};
use crate::{report, scenario};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub seeds: SeedFlags,
    #[command(flatten)]
    pub jobs: JobsFlag,
    /// Also write a report directory: index.html (SVG timelines), summary.md, results.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also write the production metrics as Prometheus text exposition to this file.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Swarm testing: each seed switches random fault kinds on/off and scales their rates.
    #[arg(long)]
    pub swarm: bool,
    /// Run every seed twice and compare trace hashes (exit 3 on divergence).
    #[arg(long)]
    pub check_determinism: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write JUnit XML (one test case per scenario) to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Run only shard I of N (0-based): seeds whose offset from the start is I mod N.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<crate::suite::Shard>,
}

/// 3 if any seed ran differently twice, else 1 if an expectation failed.
pub fn exit_code(results: &[ScenarioResult]) -> u8 {
    if results.iter().any(|r| r.agg.diverged_seeds > 0) {
        EXIT_INTERNAL
    } else if results.iter().all(|r| r.met()) {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

fn progress_bar(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:40}] {pos}/{len} seeds ({per_sec}, eta {eta}) {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Prints the report as text or JSON and writes JUnit XML if asked.
pub fn emit(
    results: &[ScenarioResult],
    cfg: &SweepConfig,
    format: Format,
    junit: Option<&Path>,
    code: u8,
) -> Result<()> {
    match format {
        Format::Text => print!("{}", report::text::render(results)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report::json::report(results, cfg, code))?
        ),
    }
    if let Some(file) = junit {
        std::fs::write(file, report::junit::render(results))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

pub fn cmd(args: RunArgs) -> Result<ExitCode> {
    let files = scenario::collect(&args.paths).map_err(|e| BadInput(e.to_string()))?;
    // Load everything first: a typo in the last file should not cost a long sweep.
    let scenarios = files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let ranges = scenarios
        .iter()
        .map(|s| args.seeds.range(s))
        .collect::<Result<Vec<_>, _>>()?;
    // Output paths too: an unwritable --junit should not cost a long sweep.
    for (flag, file) in [("--junit", &args.junit), ("--metrics", &args.metrics)] {
        if let Some(file) = file {
            check_writable_file(flag, file)?;
        }
    }
    if let Some(dir) = &args.report {
        check_writable_dir("--report", dir)?;
    }
    let jobs = args.jobs.resolve();
    let cfg = SweepConfig {
        swarm: args.swarm,
        check_determinism: args.check_determinism,
        shard: args.shard,
    };
    if args.format == Format::Text {
        let mut flags = String::new();
        if cfg.swarm {
            flags.push_str(&format!(", swarm over {}", swarm::KINDS.join("/")));
        }
        if cfg.check_determinism {
            flags.push_str(", every seed run twice (determinism check)");
        }
        if let Some(shard) = cfg.shard {
            flags.push_str(&format!(", shard {shard}"));
        }
        println!(
            "fencesim {} — {} scenarios, jobs {jobs}{flags}",
            env!("CARGO_PKG_VERSION"),
            scenarios.len()
        );
    }
    let total: u64 = ranges
        .iter()
        .map(|r| suite::shard::seed_count(cfg.shard, r))
        .sum();
    let bar = progress_bar(total);
    let tick = || bar.inc(1);
    // A panic inside a run is a bug in fencesim (or in a node under test),
    // not a failed expectation: exit 3. The panic hook has printed it.
    let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scenarios
            .iter()
            .zip(&ranges)
            .map(|(s, range)| {
                bar.set_message(s.name.clone());
                suite::sweep(s, range.clone(), jobs, &cfg, &tick)
            })
            .collect::<Vec<_>>()
    }));
    bar.finish_and_clear();
    let Ok(results) = swept else {
        eprintln!("error: a simulation run panicked (implementation error); see the message above");
        return Ok(ExitCode::from(Verdict::ImplementationError));
    };
    let code = exit_code(&results);
    emit(&results, &cfg, args.format, args.junit.as_deref(), code)?;
    if let Some(file) = &args.metrics {
        std::fs::write(file, report::production::prometheus(&results))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    if let Some(dir) = args.report {
        let doc = report::write::run_doc(&scenarios, &results);
        report::write::write(&dir, &doc)?;
        if args.format == Format::Text {
            println!("report written to {}", dir.join("index.html").display());
        }
    }
    Ok(ExitCode::from(code))
}
