//! `fencesim check --code P --emit-live PATH`: a code-level counterexample
//! as a live scenario ([`crate::live::from_code`]) — written, then run on
//! the harness's own servers as the live search confirms its findings
//! ([`crate::live::search::write_and_rerun`]): it reproduces when at least
//! four in five reruns show the violation. A path with no live form is
//! refused naming its step (the check exits 1, as an unscriptable
//! `--emit-scenario` does); a protocol with no live recipe is bad input,
//! said before the search runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::live::servers_line;
use super::BadInput;
use crate::codecheck::{Builtin, Counterexample, Harness};
use crate::live::fault::Fault;
use crate::live::from_code::{self, LivePlan};
use crate::live::scenario;
use crate::live::search::placed::Placer;
use crate::live::search::{self, reproduces, Progress, SearchConfig};
use crate::protocol::ProtocolKind;

/// What `--emit-live` asks.
pub struct EmitLive<'a> {
    pub path: &'a Path,
    pub reruns: u32,
    pub timeout_ms: u64,
}

/// Refuses, before the search, a protocol with no live recipe, a cluster
/// whose binaries are missing and zero reruns.
pub fn precheck(kind: ProtocolKind, fence: bool, reruns: u32) -> Result<(), BadInput> {
    let recipe =
        from_code::recipe(kind, fence).map_err(|why| BadInput(format!("--emit-live: {why}")))?;
    if reruns == 0 {
        return Err(BadInput("--live-reruns must be at least 1".into()));
    }
    if let Some(cluster) = recipe.lock.cluster() {
        crate::live::cluster::binaries_present(cluster)
            .map_err(|e| BadInput(format!("--emit-live: {e:#}")))?;
    }
    Ok(())
}

/// The counterexample as a live scenario at `e.path`, rerun: true when it
/// reproduces; false (with the reason printed) when the path has no live form.
pub fn emit(
    h: &Harness<Builtin>,
    kind: ProtocolKind,
    fence: bool,
    c: &Counterexample,
    e: &EmitLive,
) -> Result<bool> {
    match from_code::plan(h, kind, fence, c) {
        Ok(plan) => emit_plan(kind, c, &plan, None, e),
        Err(why) => match with_holding_pauses(h, kind, fence, c) {
            Some((d, plan, note)) => {
                let note = format!(
                    "the search's shortest path ({} steps) has no live form: {why};\n{note}",
                    c.steps.len()
                );
                println!("\n  {}", note.replace('\n', "\n  "));
                emit_plan(kind, &d, &plan, Some(note), e)
            }
            None => {
                println!("\n  cannot make this counterexample a live scenario: {why}");
                Ok(false)
            }
        },
    }
}

/// Writes `plan` (of path `c`) and reruns it; `note`: why this path.
fn emit_plan(
    kind: ProtocolKind,
    c: &Counterexample,
    plan: &LivePlan,
    note: Option<String>,
    e: &EmitLive,
) -> Result<bool> {
    let file = target(e.path, kind, c)?;
    let base = base_table(plan, &file, e.reruns)?;
    let s0 = parse_base(&base, &file)?;
    let names = s0.worker_names();
    let placer = Placer {
        path: &file,
        s0: &s0,
        base: &base,
        names: &names,
        worker_cmd: None,
        singles: &plan.faults,
    };
    println!(
        "\n  live scenario: lock {}, write {}, ttl {} ms; {}",
        plan.recipe.lock.name(),
        plan.recipe.write.name(),
        plan.recipe.ttl_ms,
        placer.labels_of(&plan.faults)
    );
    for line in &plan.mapped {
        println!("    {line}");
    }
    let mut header = header(kind, &placer, plan, c);
    if let Some(note) = note {
        header = format!("{note}\n{header}");
    }
    rerun(&placer, plan, &header, e, &file)
}

/// The fallback when the path has no live form and its pauses only delay
/// timers: the shortest path to the same violation when a pause holds what
/// reaches the worker (the simulator's pause, `--pause-holds`), as the
/// scenario emitter falls back, if that one maps: the path, its plan and a
/// line saying so.
fn with_holding_pauses(
    h: &Harness<Builtin>,
    kind: ProtocolKind,
    fence: bool,
    c: &Counterexample,
) -> Option<(Counterexample, LivePlan, String)> {
    if h.bounds.pause_holds || h.bounds.pauses == 0 {
        return None;
    }
    let holding = h.with_pause_holds();
    let out = crate::codecheck::check(&holding);
    let d = out
        .counterexample
        .filter(|d| d.finding.kind == c.finding.kind)?;
    let plan = from_code::plan(&holding, kind, fence, &d).ok()?;
    let note = format!(
        "mapped instead: the shortest {} when a pause holds what reaches the worker (--pause-holds: {} steps, a search of {} states)",
        d.finding.kind.name(),
        d.steps.len(),
        out.unique_states
    );
    Some((d, plan, note))
}

/// Runs the written file `e.reruns` times on the harness's own servers.
fn rerun(
    placer: &Placer,
    plan: &LivePlan,
    header: &str,
    e: &EmitLive,
    file: &Path,
) -> Result<bool> {
    crate::live::install_interrupt_handler();
    let exe = std::env::current_exe()?;
    let cfg = SearchConfig {
        jobs: 1,
        timeout: Duration::from_millis(e.timeout_ms),
        exe: &exe,
        confirm: e.reruns,
    };
    let started = Instant::now();
    let mut servers = search::start_servers(&|p| {
        if let Progress::Servers { info, .. } = p {
            print!("  {}", servers_line(info))
        }
    })?;
    let name = placer.s0.name.clone();
    let faults: &[Fault] = &plan.faults;
    let ran = search::write_and_rerun(
        placer,
        faults,
        (&name, plan.find, header),
        file,
        (cfg, &mut servers),
    );
    let cleaned = servers.clean_up();
    let (shown, _) = ran?;
    cleaned?;
    let ok = reproduces(shown, e.reruns);
    println!(
        "  live scenario written to {}; {} shown in {shown}/{} reruns of that file ({:.1} s): {}",
        file.display(),
        plan.find.name(),
        e.reruns,
        started.elapsed().as_secs_f64(),
        if ok {
            "reproduces"
        } else {
            "does not reproduce reliably"
        }
    );
    Ok(ok)
}

/// The file's comment: where it came from and how each step mapped.
fn header(kind: ProtocolKind, placer: &Placer, plan: &LivePlan, c: &Counterexample) -> String {
    // The command as given (its options chose the path), for the reader.
    let command: Vec<String> = std::env::args().skip(1).collect();
    let mut h = format!(
        "Made by `fencesim {}`: {}'s shortest {} ({} steps) on its live recipe.\n{}",
        command.join(" "),
        kind.id(),
        plan.find.name(),
        c.steps.len(),
        placer.labels_of(&plan.faults)
    );
    for line in &plan.mapped {
        h.push_str(&format!("\n{line}"));
    }
    h
}

/// `path` if it names a `.toml` file, else `path/live-code-<protocol>-<violation>.toml`.
fn target(path: &Path, kind: ProtocolKind, c: &Counterexample) -> Result<PathBuf> {
    if path.extension().is_some_and(|e| e == "toml") {
        return Ok(path.to_path_buf());
    }
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(path.join(format!(
        "live-{}",
        crate::codecheck::to_scenario::file_name(kind, c)
    )))
}

/// The simulated twin: the repository's file, from here or from where
/// this binary was built, named relative to the written file's folder (as
/// a live scenario names its twin), so the pair can move together.
fn twin(rel: &str, file: &Path) -> Result<PathBuf> {
    let here = PathBuf::from(rel);
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let found = [here, built].into_iter().find(|p| p.is_file());
    let Some(found) = found else {
        return Err(BadInput(format!(
            "--emit-live: the simulated twin {rel} is not here (run from the repository)"
        ))
        .into());
    };
    let twin = std::fs::canonicalize(&found).unwrap_or(found);
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = std::fs::canonicalize(dir.unwrap_or(Path::new(".")));
    Ok(dir.map_or(twin.clone(), |d| relative(&d, &twin)))
}

/// `to` named from folder `from` (both absolute): up to their common
/// prefix, then down. An absolute `to` when they share nothing.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (a, b): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common <= 1 {
        return to.to_path_buf(); // only the root in common
    }
    let mut out: PathBuf = a[common..].iter().map(|_| "..").collect();
    out.extend(&b[common..]);
    out
}

/// The scenario's table without faults or expectation.
fn base_table(plan: &LivePlan, file: &Path, trials: u32) -> Result<toml::Table> {
    let r = plan.recipe;
    let int = |v: u64| toml::Value::Integer(v as i64);
    let mut t = toml::Table::new();
    t.insert("schema_version".into(), int(1));
    let stem = file
        .file_stem()
        .map_or("live-code".into(), |s| s.to_string_lossy().into_owned());
    t.insert("name".into(), stem.into());
    t.insert(
        "twin".into(),
        twin(r.twin, file)?.display().to_string().into(),
    );
    t.insert("trials".into(), int(trials as u64));
    t.insert("lock".into(), r.lock.name().into());
    t.insert("write".into(), r.write.name().into());
    t.insert("ttl_ms".into(), int(r.ttl_ms));
    t.insert("retry_ms".into(), int(5));
    t.insert("request_timeout_ms".into(), int(plan.request_timeout_ms));
    let workers = (plan.workers.iter()).map(|(name, start_ms, after)| {
        let mut w = toml::Table::new();
        w.insert("name".into(), name.clone().into());
        w.insert("start_ms".into(), int(*start_ms));
        if let Some(a) = after {
            let first = from_code::letter(*a);
            w.insert(
                "start_after".into(),
                format!("worker/{first}:lock_granted").into(),
            );
        }
        toml::Value::Table(w)
    });
    t.insert("worker".into(), toml::Value::Array(workers.collect()));
    Ok(t)
}

/// The base read as a scenario (with an empty expectation), to place on.
fn parse_base(base: &toml::Table, file: &Path) -> Result<scenario::LiveScenario> {
    let mut t = base.clone();
    t.insert("expect".into(), toml::Value::Table(toml::Table::new()));
    let text = toml::to_string(&t).context("writing the live scenario")?;
    scenario::parse(&text, file)
        .map_err(|e| anyhow::anyhow!("implementation error: the live scenario is invalid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_twin_is_named_from_the_written_files_folder() {
        let to = Path::new("/repo/scenarios/article/a.toml");
        assert_eq!(
            relative(Path::new("/repo/out/live"), to),
            Path::new("../../scenarios/article/a.toml")
        );
        assert_eq!(
            relative(Path::new("/repo"), to),
            Path::new("scenarios/article/a.toml")
        );
        assert_eq!(relative(Path::new("/tmp/x"), to), to);
    }
}
