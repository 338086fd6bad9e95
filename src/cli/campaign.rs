//! `fencesim campaign`: fresh seeds from a campaign seed over the given
//! scenarios until a seed or time budget is spent, every distinct failure
//! kept once (see `suite::campaign`). This file parses, prints the
//! campaign seed first and the progress on stderr, writes the checkpoint
//! (the `--out` file, atomically, every few seconds and on Ctrl-C or
//! SIGTERM) and resumes from it, and emits the result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::flags::{parse_seed, parse_shard, Format, JobsFlag};
use super::{check_writable_dir, check_writable_file, interrupt, load, BadInput, Verdict};
use crate::report::campaign as render;
use crate::scenario::{self, Scenario};
use crate::suite::campaign::json::{self, CampaignJson, ScenarioRef};
use crate::suite::campaign::{self, Budget, Control, Progress, Slice, Stop};
use crate::suite::Shard;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("budget").required(true).args(["budget_seeds", "budget_secs"])))]
pub struct CampaignArgs {
    /// Scenario files or directories (searched recursively for *.toml).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The campaign seed (decimal or 0x-hex) every seed is drawn from; default: a fresh one
    /// (or the --out checkpoint's). Printed first: it replays the campaign.
    #[arg(long, value_parser = parse_seed)]
    pub campaign_seed: Option<u64>,
    /// Draw this many seeds (each runs every scenario), over all shards together.
    #[arg(long)]
    pub budget_seeds: Option<u64>,
    /// Run for this many seconds (each shard).
    #[arg(long)]
    pub budget_secs: Option<u64>,
    /// Run only slice I of N (0-based): the draws whose number is I mod N.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Write the result JSON here; also the checkpoint, resumed when it holds this campaign.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub jobs: JobsFlag,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write JUnit XML (one test case per scenario) to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a report directory: each failure's replay report, linked from index.html.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Shrink each distinct failure into a scripted scenario (in the JSON; files under --report).
    #[arg(long)]
    pub shrink: bool,
    /// Candidate runs each shrink may spend.
    #[arg(long, default_value_t = 2_000, value_name = "N")]
    pub shrink_max_runs: u64,
    /// Write the progress line and the --out checkpoint this often (after
    /// the batch that passes it); what a kill can lose at most.
    #[arg(long, default_value_t = 2_000, value_name = "MS")]
    pub checkpoint_every_ms: u64,
}

/// A campaign seed nobody chose: the clock and the process id, mixed.
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    campaign::seed_of(nanos ^ (u64::from(std::process::id()) << 32), 0)
}

/// The file at `--out`, when there is one with content.
fn previous(out: Option<&Path>) -> Result<Option<CampaignJson>, BadInput> {
    let Some(file) = out else { return Ok(None) };
    let text = match std::fs::read_to_string(file) {
        Ok(t) if !t.trim().is_empty() => t,
        _ => return Ok(None),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        BadInput(format!(
            "--out {}:{}:{}: {e}; expected a campaign's result or checkpoint (or a new file)",
            file.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Writes `text` to `file` whole or not at all (a killed process leaves
/// the previous checkpoint).
pub fn write_atomically(file: &Path, text: &str) -> Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{text}\n"))
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))
}

/// The exit code of a campaign that found `unexpected` distinct unexpected failures.
pub fn exit_code(unexpected: u64) -> u8 {
    Verdict::met_if(unexpected == 0).code()
}

/// `N seeds run (R/s), D distinct failures (U unexpected)` on stderr.
fn progress_line(p: &Progress, runs_before: u64, took: Duration) {
    let rate = (p.found.runs - runs_before) as f64 / took.as_secs_f64().max(1e-3);
    eprintln!(
        "campaign: {} draws, {} seeds run ({rate:.0} seeds/s), {} distinct failures ({} unexpected)",
        p.done,
        p.found.runs,
        p.found.failures.len(),
        p.found.unexpected()
    );
}

/// Prints `c` in `format`, and writes `--junit` and `--report` if asked.
pub fn emit(
    c: &CampaignJson,
    format: Format,
    junit: Option<&Path>,
    report: Option<&Path>,
    scenarios: &[Scenario],
) -> Result<()> {
    match format {
        Format::Text => print!("{}", render::text(c)),
        Format::Json => println!("{}", serde_json::to_string_pretty(c)?),
    }
    if let Some(file) = junit {
        std::fs::write(file, render::junit(c))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    if let Some(dir) = report {
        render::write_dir(dir, c, scenarios)?;
        if format == Format::Text {
            println!("report written to {}", dir.join("index.html").display());
        }
    }
    Ok(())
}

/// The slice to run, where it starts, and a note saying it resumes.
fn plan(a: &CampaignArgs, refs: &[ScenarioRef]) -> Result<(Slice, Progress, Option<String>)> {
    let budget = match (a.budget_seeds, a.budget_secs) {
        (Some(0), _) | (_, Some(0)) => {
            return Err(
                BadInput("--budget-seeds/--budget-secs 0: expected at least 1".into()).into(),
            )
        }
        (Some(n), _) => Budget::Seeds(n),
        (None, Some(s)) => Budget::Secs(s),
        (None, None) => unreachable!("clap requires one budget"),
    };
    let before = previous(a.out.as_deref())?;
    let campaign_seed = a
        .campaign_seed
        .or(before.as_ref().map(|b| b.campaign_seed))
        .unwrap_or_else(fresh_seed);
    let slice = Slice {
        campaign_seed,
        budget,
        shard: a.shard,
    };
    let Some(before) = before else {
        return Ok((slice, Progress::default(), None));
    };
    let out = a.out.as_deref().unwrap_or(Path::new("-")).display();
    let progress = json::resume(&before, &slice, refs).map_err(|e| {
        BadInput(format!(
            "--out {out} holds another campaign: {e}; expected this campaign's checkpoint, or a new file"
        ))
    })?;
    let note = format!(
        "resuming from {out}: {} draws done, {} distinct failures",
        progress.done,
        progress.found.failures.len()
    );
    Ok((slice, progress, Some(note)))
}

pub fn cmd(a: CampaignArgs) -> Result<ExitCode> {
    let files = scenario::collect(&a.paths).map_err(|e| BadInput(e.to_string()))?;
    let scenarios = files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<ScenarioRef> = scenarios.iter().map(ScenarioRef::of).collect();
    let (slice, mut progress, resuming) = plan(&a, &refs)?;
    for (flag, file) in [("--out", &a.out), ("--junit", &a.junit)] {
        if let Some(file) = file {
            check_writable_file(flag, file)?;
        }
    }
    if let Some(dir) = &a.report {
        check_writable_dir("--report", dir)?;
    }
    let file_of = |p: &Progress, code| CampaignJson::new(&slice, refs.clone(), p, code);
    eprintln!("{}", render::header(&file_of(&progress, 0)));
    if let Some(note) = resuming {
        eprintln!("{note}");
    }
    if a.out.is_none() {
        eprintln!("note: no --out: this campaign keeps no checkpoint and cannot resume");
    }
    let stop = run(&a, &scenarios, &slice, &mut progress, &file_of)?;
    let Some(stop) = stop else {
        eprintln!("error: a simulation run panicked (implementation error); see the message above");
        return Ok(ExitCode::from(Verdict::ImplementationError));
    };
    if a.shrink && stop == Stop::Budget {
        let sources = files
            .iter()
            .map(|f| std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display())))
            .collect::<Result<Vec<_>>>()?;
        crate::shrink::campaign::shrink(
            &mut progress.found,
            &scenarios,
            &sources,
            a.shrink_max_runs,
        );
    }
    let code = match stop {
        Stop::Interrupted => Verdict::Interrupted.code(),
        Stop::Budget => exit_code(progress.found.unexpected()),
    };
    let result = file_of(&progress, code);
    if let Some(out) = &a.out {
        write_atomically(out, &serde_json::to_string_pretty(&result)?)?;
    }
    emit(
        &result,
        a.format,
        a.junit.as_deref(),
        a.report.as_deref(),
        &scenarios,
    )?;
    Ok(ExitCode::from(code))
}

/// Runs the campaign with Ctrl-C and SIGTERM caught, printing progress and
/// writing the checkpoint every `--checkpoint-every-ms`; `None` when a run
/// panicked.
fn run(
    a: &CampaignArgs,
    scenarios: &[Scenario],
    slice: &Slice,
    progress: &mut Progress,
    file_of: &dyn Fn(&Progress, u8) -> CampaignJson,
) -> Result<Option<Stop>> {
    let never = std::sync::atomic::AtomicBool::new(false);
    let caught = interrupt::catch(interrupt::CTRL_C_AND_TERM);
    let start = Instant::now();
    let runs_before = progress.found.runs;
    let mut last = Instant::now();
    let mut write_error = None;
    let every = Duration::from_millis(a.checkpoint_every_ms);
    let mut after_batch = |p: &Progress| {
        if last.elapsed() < every {
            return;
        }
        last = Instant::now();
        progress_line(p, runs_before, start.elapsed());
        if let Some(out) = &a.out {
            let text = serde_json::to_string_pretty(&file_of(p, Verdict::Interrupted.code()));
            if let Err(e) = text
                .map_err(anyhow::Error::from)
                .and_then(|t| write_atomically(out, &t))
            {
                write_error.get_or_insert(e);
            }
        }
    };
    let ctl = Control {
        jobs: a.jobs.resolve(),
        interrupted: caught.unwrap_or(&never),
        after_batch: &mut after_batch,
    };
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        campaign::run(scenarios, slice, progress, ctl)
    }));
    interrupt::restore_default(interrupt::CTRL_C_AND_TERM);
    if let Some(e) = write_error {
        return Err(e.context("writing the checkpoint"));
    }
    progress_line(progress, runs_before, start.elapsed());
    Ok(ran.ok())
}
