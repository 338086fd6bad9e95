//! `fencesim validate`: external implementations as simulated nodes, every
//! seed judged by the checker and the store-claims check, beside the
//! built-in nodes' result for the same seed. Exit 0 no violation of the
//! implementation's (the scenario's own, per its `[expect]` or the built-in
//! baseline, are shown but do not fail), 1 violations of the
//! implementation's, 3 an implementation broke the wire protocol (also when
//! violations were found elsewhere: a protocol break hides results).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::flags::{parse_shard, Format, JobsFlag, SeedFlags};
use super::{load, BadInput, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK};
use crate::validate::{self, shard, Implementations, Limits};
use crate::{report, scenario};

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
        print!(
            "{}",
            report::validate::header(scenarios.len(), jobs, step_timeout_ms, shard, &impls)
        );
    }
    let mut results = Vec::with_capacity(scenarios.len());
    for (s, range) in scenarios.iter().zip(&ranges) {
        let seeds: Vec<u64> = crate::suite::shard::seeds(shard, range.clone()).collect();
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
                    report::validate::failure_details(r, *seed, judged, specs, step_timeout_ms)
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
    print!(
        "{}",
        report::validate::results(&results, specs, step_timeout_ms)
    );
    let code = if results.iter().any(|r| r.impl_errors().next().is_some()) {
        EXIT_INTERNAL
    } else if results.iter().any(|r| r.failing() > 0) {
        EXIT_FAILED
    } else {
        EXIT_OK
    };
    Ok(ExitCode::from(code))
}
