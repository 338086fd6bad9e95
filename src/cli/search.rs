//! `fencesim search FILE --faults K`: every placement of up to K faults at
//! the protocol events of the scenario (see `crate::search`), against the
//! built-in protocol or, with `--node ROLE=CMD`, processes started exactly
//! as `validate` starts them. Prints coverage; on a violation writes the
//! first violating execution as a fully scripted scenario (shrunk, for the
//! built-in nodes). Exit 0 clean, 1 a violation, 3 an implementation error.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::flags::{parse_seed, parse_shard, JobsFlag};
use super::Verdict;
use super::{load, BadInput, EXIT_FAILED, EXIT_OK};
use crate::search::{self, Config, Execution, Found};
use crate::sim::Options;
use crate::validate::{self, Limits};

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    path: PathBuf,
    /// Place up to this many faults (K).
    #[arg(long, default_value_t = 2)]
    faults: usize,
    /// The seed every execution runs under (latency jitter).
    #[arg(long, value_parser = parse_seed, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    jobs: JobsFlag,
    /// ROLE=COMMAND: search an implementation, started as `validate --node` starts it.
    #[arg(long = "node", value_name = "ROLE=CMD")]
    nodes: Vec<String>,
    /// Abort a run if a process takes longer than this to answer one input.
    #[arg(long, default_value_t = 5_000)]
    step_timeout_ms: u64,
    /// Where to write the violating executions: a directory (created if missing), or a
    /// file when the search finds one violation [default: beside FILE].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the violating execution as found, without shrinking it.
    #[arg(long)]
    no_shrink: bool,
    /// Run only shard I of N (0-based) of the enumeration; write it with --json, then merge.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<crate::suite::Shard>,
    /// Write this (shard's) runs as JSON, for `--merge`; for a live scenario, the
    /// search's coverage and findings (schema `fencesim-live-search`), or with --chaos
    /// the nemesis's trials (`fencesim-live-chaos`; docs/live.md).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// A live scenario: also write JUnit XML (one test case, failed by a finding; with
    /// --chaos one per trial).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A live scenario: also write a report directory (index.html, summary.md, results.json).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Run nothing: merge the --json files of shards 0..N of this scenario's search and
    /// report exactly what the unsharded search reports.
    #[arg(long, value_name = "FILES", num_args = 1..)]
    merge: Vec<PathBuf>,
    /// A live scenario: run this program (`sh -c CMD`) as every worker (as `live --worker-cmd`).
    #[arg(long, value_name = "CMD")]
    worker_cmd: Option<String>,
    /// A live scenario: a trial that has not finished by then is ended.
    #[arg(long, value_name = "MS", default_value_t = 20_000)]
    timeout_ms: u64,
    /// A live scenario: reruns of each finding's written scenario (it reproduces in ≥ 4 of 5).
    #[arg(long, value_name = "N", default_value_t = 5)]
    confirm: u32,
    /// A live scenario: the seeded nemesis instead of the enumeration (up to --faults per trial).
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    chaos: Option<u64>,
    /// Trials of the nemesis.
    #[arg(long, value_name = "N", default_value_t = 20)]
    chaos_trials: u32,
}

fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} {pos} executions ({per_sec}) {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// `x.toml` -> `x-search-<kind>.toml` beside it.
fn default_out(path: &Path, kind: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy());
    path.with_file_name(format!("{stem}-search-{kind}.toml"))
}

/// Where each finding (named by its kind) is written. Without `--out`,
/// beside the input (`default_out`). `--out` names a directory when it is
/// one, or when there are several findings (created if missing); it names
/// a file only for a single finding. Several findings and an `--out` that
/// is a file (or ends in `.toml`) are refused before anything is written.
pub(super) fn out_paths(path: &Path, out: Option<&Path>, kinds: &[&str]) -> Result<Vec<PathBuf>> {
    let Some(out) = out else {
        return Ok(kinds.iter().map(|k| default_out(path, k)).collect());
    };
    let in_dir = |dir: &Path| -> Vec<PathBuf> {
        kinds
            .iter()
            .map(|k| {
                let name = default_out(path, k);
                dir.join(name.file_name().unwrap_or(name.as_os_str()))
            })
            .collect()
    };
    if out.is_dir() {
        return Ok(in_dir(out));
    }
    if kinds.len() <= 1 {
        return Ok(kinds.iter().map(|_| out.to_path_buf()).collect());
    }
    if out.exists() || out.extension().is_some_and(|x| x == "toml") {
        return Err(BadInput(format!(
            "--out {}: the search found {} violations ({}), one scenario each: give --out a directory (created if missing), not a file",
            out.display(),
            kinds.len(),
            kinds.join(", ")
        ))
        .into());
    }
    std::fs::create_dir_all(out).map_err(|e| {
        BadInput(format!(
            "--out {}: creating the directory: {e}",
            out.display()
        ))
    })?;
    Ok(in_dir(out))
}

/// The scripted scenario of `found`, shrunk when the nodes are built in.
fn write_found(
    path: &Path,
    source: &str,
    o: &Options,
    found: &Found,
    seed: u64,
    shrink: bool,
    out: &Path,
) -> Result<String> {
    let file = path.display().to_string();
    let scripted = crate::scenario::emit::scripted(source, o, &found.script, seed)
        .map_err(|e| BadInput(format!("{file}: {e}")))?;
    let kind = crate::check::ViolationKind::from_name(found.kind);
    let (text, how) = match kind
        .filter(|_| shrink)
        .map(|k| crate::shrink::shrink(&scripted, &file, seed, false, Some(k), 5_000))
    {
        Some(Ok(shrunk)) => (shrunk.text, "shrunk".to_string()),
        Some(Err(e)) => (scripted, format!("not shrunk: {e}")),
        None => (scripted, "not shrunk".to_string()),
    };
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    Ok(how)
}

pub fn cmd(args: SearchArgs) -> Result<ExitCode> {
    let path: &Path = &args.path;
    if std::fs::read_to_string(path).is_ok_and(|src| super::live_search::is_live(&src)) {
        return super::live_search::cmd(super::live_search::LiveSearch {
            path,
            faults: args.faults,
            worker_cmd: args.worker_cmd.clone(),
            timeout_ms: args.timeout_ms,
            confirm: args.confirm,
            out: args.out.as_deref(),
            chaos: args.chaos,
            chaos_trials: args.chaos_trials,
            // Live trials are real processes on real servers: one at a
            // time unless asked (each job starts its own servers).
            jobs: args.jobs.jobs.unwrap_or(1),
            json: args.json.as_deref(),
            junit: args.junit.as_deref(),
            report: args.report.as_deref(),
        });
    }
    if args.junit.is_some() || args.report.is_some() {
        return Err(BadInput(
            "--junit and --report are for a live scenario's search; a simulated one writes its runs with --json".into(),
        )
        .into());
    }
    let scenario = load(path)?;
    let source =
        std::fs::read_to_string(path).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let impls = super::validate::parse_nodes(&args.nodes)?;
    super::validate::refuse_incompatible(&scenario, &impls)?;
    if args.step_timeout_ms == 0 {
        return Err(BadInput("--step-timeout-ms must be positive".into()).into());
    }
    let limits = Limits {
        step_timeout: Duration::from_millis(args.step_timeout_ms),
        ..Limits::default()
    };
    let external = !args.nodes.is_empty();
    let process_runner = |o: &Options, seed: u64| -> Result<Execution, String> {
        let judged =
            validate::run_seed(o, seed, &impls, limits, true).map_err(|e| e.to_string())?;
        Ok(Execution {
            sends: search::sends(&judged.trace),
            trace_hash: judged.trace_hash,
            violations: judged.kind_names(),
            history: judged.history,
        })
    };
    let runner: &search::Runner<'_> = if external {
        &process_runner
    } else {
        &search::builtin
    };
    let cfg = Config {
        max_faults: args.faults,
        seed: args.seed,
        jobs: args.jobs.resolve(),
    };
    let o = &scenario.options;
    let mut strikes: Vec<&str> = search::placements_vocabulary(o)
        .into_iter()
        .map(|s| s.name())
        .collect();
    strikes.dedup();
    let implementations = external.then(|| crate::report::validate::implementations(&impls));
    print!(
        "{}",
        crate::report::search::header(
            path,
            cfg.max_faults,
            cfg.seed,
            cfg.jobs,
            implementations.as_deref(),
            &strikes
        )
    );
    let shard = args
        .shard
        .map_or((0, 1), |s| (s.index as usize, s.count as usize));
    let path_text = path.display().to_string();
    if !args.merge.is_empty() {
        // Run nothing: the shards' runs, deduplicated as the search does.
        let mut shards = Vec::with_capacity(args.merge.len());
        for file in &args.merge {
            let name = file.display().to_string();
            let text =
                std::fs::read_to_string(file).map_err(|e| BadInput(format!("{name}: {e}")))?;
            shards.push(search::shard::from_json(&text, &name, &source).map_err(BadInput)?);
        }
        if let Some(s) = shards
            .iter()
            .find(|s| (s.max_faults, s.seed) != (cfg.max_faults, cfg.seed))
        {
            return Err(BadInput(format!(
                "shard {}/{} was searched with --faults {} --seed {}; this merge asks for --faults {} --seed {}",
                s.index, s.count, s.max_faults, s.seed, cfg.max_faults, cfg.seed
            ))
            .into());
        }
        println!("merging {} shard files", shards.len());
        let result = search::tally(&scenario, &shards).map_err(BadInput)?;
        return report(path, &source, &scenario, &cfg, &result, &args, external);
    }
    if let Some(json) = &args.json {
        super::check_writable_file("--json", json)?;
    } else if shard.1 > 1 {
        return Err(
            BadInput("--shard needs --json FILE (the shard's runs, for --merge)".into()).into(),
        );
    }
    if shard.1 > 1 {
        println!(
            "shard {}/{}: the levels below K whole, every {}th run of level K",
            shard.0, shard.1, shard.1
        );
    }
    let bar = progress_bar();
    let tick = || bar.inc(1);
    if external {
        validate::reaper::adopt_orphans();
    }
    let searched = search::search_shard(&scenario, &cfg, shard, runner, &tick);
    if external {
        validate::reaper::end_orphans();
    }
    bar.finish_and_clear();
    let ran = match searched {
        Ok(r) => r,
        Err(e) => {
            println!("\nverdict: IMPLEMENTATION ERROR: {e}");
            return Ok(ExitCode::from(Verdict::ImplementationError));
        }
    };
    if let Some(json) = &args.json {
        std::fs::write(json, search::shard::to_json(&ran, &path_text, &source))
            .with_context(|| format!("writing {}", json.display()))?;
        println!(
            "runs written: {} ({} of {})",
            json.display(),
            ran.runs.len(),
            ran.total_runs
        );
    }
    if shard.1 > 1 {
        println!(
            "shard {}/{} done; the verdict is the merge's: fencesim search {} --faults {} --seed {} --merge <the {} --json files>",
            shard.0, shard.1, crate::suite::shell_quote(&path_text), cfg.max_faults, cfg.seed, shard.1
        );
        return Ok(ExitCode::from(Verdict::Met));
    }
    let result = search::tally(&scenario, &[ran]).map_err(BadInput)?;
    report(path, &source, &scenario, &cfg, &result, &args, external)
}

/// Prints coverage and verdict, writes each violation as a scenario.
fn report(
    path: &Path,
    source: &str,
    scenario: &crate::scenario::Scenario,
    cfg: &Config,
    result: &search::SearchResult,
    args: &SearchArgs,
    external: bool,
) -> Result<ExitCode> {
    let o = &scenario.options;
    // Refused (several findings, --out a file) before anything is printed or written.
    let kinds: Vec<&str> = result.found.iter().map(|f| f.kind).collect();
    let outs = out_paths(path, args.out.as_deref(), &kinds)?;
    print!("{}", crate::report::search::levels(result, cfg.max_faults));
    let base = search::fault_free(o);
    for (found, out) in result.found.iter().zip(outs) {
        let placed: Vec<String> = found.placements.iter().map(|p| p.describe(o)).collect();
        print!(
            "{}",
            crate::report::search::found(found, result.runs, &placed)
        );
        let how = write_found(
            path,
            source,
            &base,
            found,
            cfg.seed,
            !external && !args.no_shrink,
            &out,
        )?;
        println!(
            "  fully scripted ({how}): {}\n  check it: fencesim run {}",
            out.display(),
            crate::suite::shell_quote(&out.display().to_string())
        );
    }
    print!("{}", crate::report::search::verdict(result));
    let code = if result.is_clean() {
        EXIT_OK
    } else {
        EXIT_FAILED
    };
    Ok(ExitCode::from(code))
}
