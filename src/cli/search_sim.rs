//! The simulated scenario's search (`fencesim search FILE --faults K`):
//! every placement of up to K faults at the protocol events of the
//! scenario (see `crate::search`), against the built-in protocol or, with
//! `--node ROLE=CMD`, processes started exactly as `validate` starts them.
//! Prints coverage; on a violation writes the first violating execution as
//! a fully scripted scenario (shrunk, for the built-in nodes). Exit 0
//! clean, 1 a violation, 3 an implementation error.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::out_paths::out_paths;
use super::search_args::SearchArgs;
use super::Verdict;
use super::{load, BadInput, EXIT_FAILED, EXIT_OK};
use crate::search::{self, Config, Execution, Found};
use crate::sim::Options;
use crate::validate::{self, Limits};

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

pub(super) fn cmd(args: &SearchArgs) -> Result<ExitCode> {
    let path: &Path = &args.path;
    let scenario = load(path)?;
    let source =
        std::fs::read_to_string(path).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let impls = super::validate::parse_nodes(&args.nodes)?;
    super::validate::refuse_incompatible(&scenario, &impls)?;
    let step_timeout_ms = args.step_timeout_ms.unwrap_or(5_000);
    if step_timeout_ms == 0 {
        return Err(BadInput("--step-timeout-ms must be positive".into()).into());
    }
    let limits = Limits {
        step_timeout: Duration::from_millis(step_timeout_ms),
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
        seed: args.seed.unwrap_or(0),
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
    let searched = Searched {
        path,
        source: &source,
        scenario: &scenario,
        cfg: &cfg,
        external,
    };
    if !args.merge.is_empty() {
        return merge(&searched, args);
    }
    run(&searched, args, runner)
}

/// What a search was asked and what it searched.
struct Searched<'a> {
    path: &'a Path,
    source: &'a str,
    scenario: &'a crate::scenario::Scenario,
    cfg: &'a Config,
    /// An implementation's processes (`--node`), not the built-in nodes.
    external: bool,
}

/// Runs nothing: the shards' runs (`--merge`), deduplicated as the search
/// does, reported as the unsharded search's.
fn merge(s: &Searched, args: &SearchArgs) -> Result<ExitCode> {
    let mut shards = Vec::with_capacity(args.merge.len());
    for file in &args.merge {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| BadInput(format!("{name}: {e}")))?;
        shards.push(search::shard::from_json(&text, &name, s.source).map_err(BadInput)?);
    }
    let cfg = s.cfg;
    if let Some(sh) = shards
        .iter()
        .find(|sh| (sh.max_faults, sh.seed) != (cfg.max_faults, cfg.seed))
    {
        return Err(BadInput(format!(
            "shard {}/{} was searched with --faults {} --seed {}; this merge asks for --faults {} --seed {}",
            sh.index, sh.count, sh.max_faults, sh.seed, cfg.max_faults, cfg.seed
        ))
        .into());
    }
    println!("merging {} shard files", shards.len());
    let result = search::tally(s.scenario, &shards).map_err(BadInput)?;
    report(s, &result, args)
}

/// The search (this shard of it, with `--shard`), its runs written with
/// `--json`, and its verdict unless it is one shard of several.
fn run(s: &Searched, args: &SearchArgs, runner: &search::Runner<'_>) -> Result<ExitCode> {
    let shard = args
        .shard
        .map_or((0, 1), |s| (s.index as usize, s.count as usize));
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
    if s.external {
        validate::reaper::adopt_orphans();
    }
    let searched = search::search_shard(s.scenario, s.cfg, shard, runner, &tick);
    if s.external {
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
    let path_text = s.path.display().to_string();
    if let Some(json) = &args.json {
        std::fs::write(json, search::shard::to_json(&ran, &path_text, s.source))
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
            shard.0, shard.1, crate::suite::shell_quote(&path_text), s.cfg.max_faults, s.cfg.seed, shard.1
        );
        return Ok(ExitCode::from(Verdict::Met));
    }
    let result = search::tally(s.scenario, &[ran]).map_err(BadInput)?;
    report(s, &result, args)
}

/// Prints coverage and verdict, writes each violation as a scenario.
fn report(s: &Searched, result: &search::SearchResult, args: &SearchArgs) -> Result<ExitCode> {
    let (path, source, scenario, cfg, external) = (s.path, s.source, s.scenario, s.cfg, s.external);
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
