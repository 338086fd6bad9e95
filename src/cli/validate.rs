//! `fencesim validate`: external implementations as simulated nodes, every
//! seed judged by the checker and the store-claims check, beside the
//! built-in nodes' result for the same seed. Exit 0 no violation of the
//! implementation's (the scenario's own, per its `[expect]` or the built-in
//! baseline, are shown but do not fail), 1 violations of the
//! implementation's, 3 an implementation broke the wire protocol (also when
//! violations were found elsewhere: a protocol break hides results).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::flags::{parse_shard, Format, JobsFlag, SeedFlags};
use super::{load, BadInput, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK};
use crate::scenario;
use crate::validate::{self, shard, Implementations, Limits, ScenarioValidation};

pub(super) fn parse_nodes(specs: &[String]) -> Result<Implementations, BadInput> {
    let mut impls = Implementations::default();
    for spec in specs {
        let Some((role, command)) = spec.split_once('=') else {
            return Err(BadInput(format!(
                "--node {spec:?}: expected ROLE=COMMAND, e.g. --node resource='python3 examples/python/fencelock.py'"
            )));
        };
        let slot = match role.trim() {
            "coordinator" => &mut impls.coordinator,
            "resource" => &mut impls.resource,
            "worker" => &mut impls.worker,
            other => {
                return Err(BadInput(format!(
                "--node {spec:?}: unknown role {other:?}; expected coordinator, resource or worker"
            )))
            }
        };
        if command.trim().is_empty() {
            return Err(BadInput(format!("--node {spec:?}: empty command")));
        }
        if slot.replace(command.to_string()).is_some() {
            return Err(BadInput(format!("--node {role}=… given twice")));
        }
    }
    Ok(impls)
}

/// The command that reruns `seed` exactly: every flag that can change a
/// run's outcome (the step timeout decides whether a slow step is an
/// implementation error) is carried; `--jobs` cannot change it.
fn repro(specs: &[String], path: &str, seed: u64, step_timeout_ms: u64) -> String {
    let nodes: Vec<String> = specs
        .iter()
        .map(|s| format!("--node {}", crate::suite::shell_quote(s)))
        .collect();
    format!(
        "fencesim validate {} --step-timeout-ms {step_timeout_ms} --seed-start {seed} --seeds 1 {}",
        nodes.join(" "),
        crate::suite::shell_quote(path)
    )
}

fn counts(kinds: &[(&'static str, usize)]) -> String {
    if kinds.is_empty() {
        return "-".into();
    }
    let cells: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}×{n}")).collect();
    cells.join(" ")
}

fn table(results: &[ScenarioValidation]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<34} {:>6} {:>6} {:>8} {:>12}  {:<28} {:<28} built-in, same seeds",
        "scenario", "seeds", "ok", "failing", "impl-errors", "implementation's", "scenario's"
    );
    for r in results {
        let _ = writeln!(
            s,
            "{:<34} {:>6} {:>6} {:>8} {:>12}  {:<28} {:<28} {}",
            r.name,
            r.seeds.len(),
            r.clean(),
            r.failing(),
            r.impl_errors().count(),
            counts(&r.kind_counts()),
            counts(&r.scenario_kind_counts()),
            counts(&r.baseline_kind_counts()),
        );
    }
    s.push_str(
        "(violations × seeds. implementation's: fail the seed. scenario's: allowed by the scenario's \
         [expect] or shown by the built-in nodes on the same seed; reported, not failed.)\n",
    );
    s
}

/// The scenarios an implementation cannot be run under, refused before
/// anything starts (bad input, exit 2): the wire protocol carries no
/// multi-lock worker config, no coordinator of a client-decided protocol,
/// no storage reservation. `validate` and `search --node` both ask this.
pub fn refuse_incompatible(s: &scenario::Scenario, impls: &Implementations) -> Result<()> {
    let multi_lock =
        s.options.nodes.iter().any(
            |n| matches!(n.role, crate::protocol::Role::Worker(w) if !w.more_locks.is_empty()),
        );
    if multi_lock && impls.worker.is_some() {
        return Err(BadInput(format!(
            "{}: its workers take several locks per operation ([[worker]] locks), which the wire \
             protocol's worker config does not carry; run it with the built-in worker",
            s.path.display()
        ))
        .into());
    }
    let server = s
        .options
        .nodes
        .iter()
        .any(|n| matches!(n.role, crate::protocol::Role::Server(_)));
    if server && impls.coordinator.is_some() {
        return Err(BadInput(format!(
            "{}: protocol {} is client-decided or one of the article's alternatives (its nodes \
             speak their own API); `validate --node coordinator=` covers lease-server protocols only (docs/validate.md)",
            s.path.display(),
            s.options.protocol.kind.id()
        ))
        .into());
    }
    let p = s.options.protocol;
    if p.kind == crate::protocol::ProtocolKind::Github2012Pair
        && p.fence
        && impls.resource.is_some()
    {
        return Err(BadInput(format!(
            "{}: the storage-fenced github-2012-pair reserves the storage with a `reserve` \
             command that the JSON-lines protocol does not have; validate a store under \
             the unfenced pair (fence = false) instead",
            s.path.display()
        ))
        .into());
    }
    Ok(())
}

/// The lowest failing seed's block: violations with evidence, who they are
/// attributed to, and the command that reruns it.
fn failure_details(
    r: &ScenarioValidation,
    seed: u64,
    judged: &validate::Judged,
    specs: &[String],
    step_timeout_ms: u64,
) -> String {
    let mut out = judged.render();
    if let Some(s) = r.seeds.iter().find(|s| s.seed == seed) {
        if let Ok(j) = &s.verdict {
            let _ = writeln!(
                out,
                "the implementation's: {}; the scenario's: {}; built-in on this seed: {}",
                j.own.join(" "),
                if j.scenario.is_empty() {
                    "-".into()
                } else {
                    j.scenario.join(" ")
                },
                if s.baseline.is_empty() {
                    "clean".into()
                } else {
                    s.baseline.join(" ")
                },
            );
        }
    }
    let _ = writeln!(
        out,
        "repro: {}",
        repro(specs, &r.path, seed, step_timeout_ms)
    );
    out
}

#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// ROLE=COMMAND, ROLE one of coordinator, resource, worker; the command
    /// runs under `sh -c`. Roles not given stay built-in.
    #[arg(long = "node", value_name = "ROLE=CMD", required = true)]
    nodes: Vec<String>,
    /// Scenario files or directories; each seed is also run with the built-in
    /// nodes, and violations the scenario's [expect] allows are reported as the
    /// scenario's, not the implementation's.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    seeds: SeedFlags,
    #[command(flatten)]
    jobs: JobsFlag,
    /// Abort a run if a process takes longer than this to answer one input.
    #[arg(long, default_value_t = 5_000)]
    step_timeout_ms: u64,
    /// Run only shard I of N (0-based); `fencesim merge` combines the `--format json` outputs.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<crate::suite::Shard>,
    /// Output format on stdout (json: schema `fencesim-validate`, version 1).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

pub fn cmd(args: ValidateArgs) -> Result<ExitCode> {
    let ValidateArgs {
        nodes,
        paths,
        seeds,
        jobs,
        step_timeout_ms,
        shard,
        format,
    } = args;
    let (specs, paths): (&[String], &[PathBuf]) = (&nodes, &paths);
    let text = format == Format::Text;
    let impls = parse_nodes(specs)?;
    if step_timeout_ms == 0 {
        return Err(BadInput("--step-timeout-ms must be positive".into()).into());
    }
    let files = scenario::collect(paths).map_err(|e| BadInput(e.to_string()))?;
    let scenarios = files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    for s in &scenarios {
        refuse_incompatible(s, &impls)?;
    }
    let ranges = scenarios
        .iter()
        .map(|s| seeds.range(s))
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = jobs.resolve();
    // Every child of this process is an implementation process: escaped
    // descendants (setsid daemons) are re-parented here and ended.
    validate::reaper::adopt_orphans();
    let limits = Limits {
        step_timeout: Duration::from_millis(step_timeout_ms),
        ..Limits::default()
    };
    if text {
        let of_shard = shard.map(|s| format!(", shard {s}")).unwrap_or_default();
        println!(
            "fencesim {} — validate: {} scenarios, jobs {jobs}, step timeout {step_timeout_ms} ms{of_shard}",
            env!("CARGO_PKG_VERSION"),
            scenarios.len()
        );
        print!("{}", impls.describe());
    }
    let mut results = Vec::with_capacity(scenarios.len());
    for (s, range) in scenarios.iter().zip(&ranges) {
        let seeds: Vec<u64> = range
            .clone()
            .filter(|&seed| shard.is_none_or(|sh| sh.owns(range.start, seed)))
            .collect();
        results.push(validate::validate_scenario(s, &seeds, &impls, limits, jobs));
    }
    validate::reaper::end_orphans();
    if !text {
        let scenarios_json: Vec<_> = results
            .iter()
            .zip(&scenarios)
            .zip(&ranges)
            .map(|((r, s), range)| {
                let details = r.first_failure.as_ref().map(|(seed, judged)| {
                    failure_details(r, *seed, judged, specs, step_timeout_ms)
                });
                shard::scenario_json(r, s.source_hash, range.clone(), details)
            })
            .collect();
        let (failing_runs, impl_errors, exit_code) = shard::verdict(&scenarios_json);
        let report = shard::ValidateJson {
            schema: shard::SCHEMA.into(),
            schema_version: shard::SCHEMA_VERSION,
            fencesim_version: env!("CARGO_PKG_VERSION").into(),
            nodes: specs.to_vec(),
            step_timeout_ms,
            shard: shard.map(|s| crate::suite::shard::ShardJson {
                index: s.index,
                count: s.count,
            }),
            scenarios: scenarios_json,
            failing_runs,
            impl_errors,
            exit_code,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::from(exit_code));
    }
    println!();
    print!("{}", table(&results));
    for r in &results {
        // A stop at the last seed skipped nothing: nothing to say.
        if let Some(stop) = r.stopped.as_ref().filter(|s| s.skipped > 0) {
            println!(
                "\n{}: stopped after {} identical implementation errors in a row (last seed run: {}); \
                 {} seeds not run",
                r.name,
                validate::IDENTICAL_ERRORS_MAX,
                stop.last_seed,
                stop.skipped
            );
        }
    }
    for r in &results {
        if let Some((seed, judged)) = &r.first_failure {
            println!("\n== {} seed {seed} (lowest failing seed) ==", r.name);
            print!(
                "{}",
                failure_details(r, *seed, judged, specs, step_timeout_ms)
            );
        }
    }
    let mut impl_errors = 0;
    for r in &results {
        for (seed, err) in r.impl_errors() {
            impl_errors += 1;
            println!("\n== {} seed {seed}: implementation error ==", r.name);
            println!("{err}");
            println!("repro: {}", repro(specs, &r.path, seed, step_timeout_ms));
        }
    }
    let failing: usize = results.iter().map(|r| r.failing()).sum();
    let (verdict, code) = if impl_errors > 0 {
        (
            format!("IMPLEMENTATION ERROR in {impl_errors} runs (those runs were not judged)"),
            EXIT_INTERNAL,
        )
    } else if failing > 0 {
        (
            format!("VIOLATIONS in {failing} runs (the implementation's)"),
            EXIT_FAILED,
        )
    } else {
        let scenarios: usize = results.iter().map(|r| r.scenario_kind_counts().len()).sum();
        let text = if scenarios == 0 {
            "CLEAN: no violations in any run".to_string()
        } else {
            "CLEAN: no violations of the implementation's (the scenario's own are listed above)"
                .to_string()
        };
        (text, EXIT_OK)
    };
    println!("\nverdict: {verdict}");
    Ok(ExitCode::from(code))
}
