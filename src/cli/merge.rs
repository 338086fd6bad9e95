//! `fencesim merge`: combine the JSON reports of `run --shard I/N` (one per
//! shard, any order) into the report an unsharded run prints — same table,
//! same JSON, same digest, same exit code.
//!
//! Aggregates merge exactly (see `suite`); the verdict is then judged again
//! from the scenario files, which must be at the same paths with the same
//! content hash as when the shards ran. Shards that disagree on version,
//! flags, scenarios or seed ranges, or that do not cover `0..N` exactly
//! once, are bad input: merging them would report a sweep nobody ran. The
//! rules are `suite::shard`'s (`check_set`, `plausible`,
//! `merge_aggregates`); this file reads the files and prints.
//!
//! `campaign --shard I/N --out FILE` slices merge here too (see
//! `suite::campaign::merge`), and
//! `validate --shard I/N --format json` outputs (told apart
//! by their `schema`), into the unsharded validation's JSON; see
//! `validate::shard`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::flags::{Format, IgnoredJobsFlag};
use super::run::{emit, exit_code};
use super::{check_writable_dir, check_writable_file, load, BadInput};
use crate::report::json::{parse_hex, RunJson, ShardJson, SCHEMA, SCHEMA_VERSION};
use crate::scenario::Scenario;
use crate::suite::campaign::json::{self as campaign_json, CampaignJson};
use crate::suite::campaign::merge as campaign_merge;
use crate::suite::shard::{self, Shard};
use crate::suite::{self, ScenarioResult, SweepConfig};
use crate::validate::shard::{self as vshard, ValidateJson};

/// The text of a shard file and the `schema` it names (what wrote it).
fn read_text(file: &Path) -> Result<(String, String), BadInput> {
    let text =
        std::fs::read_to_string(file).map_err(|e| BadInput(format!("{}: {e}", file.display())))?;
    let schema = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema")?.as_str().map(String::from))
        .unwrap_or_default();
    Ok((text, schema))
}

/// Parses a shard file written by `expected_by` with schema `schema` version `version`.
fn parse<T: serde::de::DeserializeOwned>(
    file: &Path,
    text: &str,
    expected_by: &str,
) -> Result<T, BadInput> {
    serde_json::from_str(text).map_err(|e| {
        BadInput(format!(
            "{}:{}:{}: {e}; expected the output of `{expected_by}`",
            file.display(),
            e.line(),
            e.column()
        ))
    })
}

fn unsupported(
    file: &Path,
    schema: &str,
    version: u32,
    expected: &str,
    expected_version: u32,
) -> BadInput {
    BadInput(format!(
        "{}: schema {schema} version {version} is not supported; expected {expected} version {expected_version}",
        file.display(),
    ))
}

fn read(file: &Path) -> Result<RunJson, BadInput> {
    let (text, _) = read_text(file)?;
    let report: RunJson = parse(file, &text, "fencesim run --format json --shard I/N")?;
    if report.schema != SCHEMA || report.schema_version != SCHEMA_VERSION {
        return Err(unsupported(
            file,
            &report.schema,
            report.schema_version,
            SCHEMA,
            SCHEMA_VERSION,
        ));
    }
    Ok(report)
}

fn read_validate(file: &Path) -> Result<ValidateJson, BadInput> {
    let (text, _) = read_text(file)?;
    let report: ValidateJson = parse(file, &text, "fencesim validate --format json --shard I/N")?;
    if report.schema != vshard::SCHEMA || report.schema_version != vshard::SCHEMA_VERSION {
        return Err(unsupported(
            file,
            &report.schema,
            report.schema_version,
            vshard::SCHEMA,
            vshard::SCHEMA_VERSION,
        ));
    }
    Ok(report)
}

/// Merges `validate --shard I/N --format json` outputs into the unsharded
/// validation's JSON (or, as text, its table of counts and verdict).
fn merge_validate(files: &[PathBuf], format: Format) -> Result<ExitCode> {
    let reports = files
        .iter()
        .map(|f| read_validate(f))
        .collect::<Result<Vec<_>, _>>()?;
    check_shards(
        files,
        &reports.iter().map(validate_view).collect::<Vec<_>>(),
    )?;
    let first = &reports[0];
    let scenarios: Vec<_> = (0..first.scenarios.len())
        .map(|i| {
            let parts: Vec<_> = reports.iter().map(|r| r.scenarios[i].clone()).collect();
            vshard::merge_scenario(&parts)
        })
        .collect();
    let (failing_runs, impl_errors, exit_code) = vshard::verdict(&scenarios);
    let merged = ValidateJson {
        schema: first.schema.clone(),
        schema_version: first.schema_version,
        fencesim_version: first.fencesim_version.clone(),
        nodes: first.nodes.clone(),
        step_timeout_ms: first.step_timeout_ms,
        shard: None,
        scenarios,
        failing_runs,
        impl_errors,
        exit_code,
    };
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&merged)?),
        Format::Text => print!("{}", crate::report::validate::merged(&merged)),
    }
    Ok(ExitCode::from(exit_code))
}

/// Merges `campaign --shard I/N --out FILE` slices into the campaign's
/// result: each distinct failure once, with its fastest seed.
fn merge_campaign(
    files: &[PathBuf],
    format: Format,
    junit: Option<&Path>,
    report: Option<&Path>,
) -> Result<ExitCode> {
    let slices = files
        .iter()
        .map(|f| {
            let (text, _) = read_text(f)?;
            parse(f, &text, "fencesim campaign --shard I/N --out FILE")
        })
        .collect::<Result<Vec<CampaignJson>, _>>()?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let merged =
        campaign_merge::merge(&names, &slices, super::campaign::exit_code).map_err(BadInput)?;
    if let Some(file) = junit {
        check_writable_file("--junit", file)?;
    }
    let mut scenarios = Vec::new();
    if let Some(dir) = report {
        check_writable_dir("--report", dir)?;
        // The report replays each failure's seed: the files must be the ones the slices ran.
        for s in &merged.scenarios {
            let scenario = load(Path::new(&s.path))?;
            if format!("{:016x}", scenario.source_hash) != s.source_hash {
                return Err(BadInput(format!(
                    "{}: the file changed since the slices ran (content hash {:016x}, slices ran {})",
                    s.path, scenario.source_hash, s.source_hash
                ))
                .into());
            }
            scenarios.push(scenario);
        }
    }
    super::campaign::emit(&merged, format, junit, report, &scenarios)?;
    Ok(ExitCode::from(merged.exit_code))
}

fn shard_of(s: Option<ShardJson>) -> Option<Shard> {
    s.map(|s| Shard {
        index: s.index,
        count: s.count,
    })
}

fn run_view(r: &RunJson) -> shard::View<'_> {
    shard::View {
        shard: shard_of(r.shard),
        version: &r.fencesim_version,
        flags: (
            format!("{} {}", r.swarm, r.check_determinism),
            "--swarm / --check-determinism",
        ),
        scenarios: r
            .scenarios
            .iter()
            .map(|s| (&*s.path, &*s.source_hash, s.seed_start, s.seed_end))
            .collect(),
    }
}

fn validate_view(r: &ValidateJson) -> shard::View<'_> {
    shard::View {
        shard: shard_of(r.shard),
        version: &r.fencesim_version,
        flags: (
            format!("{:?} {}", r.nodes, r.step_timeout_ms),
            "--node / --step-timeout-ms",
        ),
        scenarios: r
            .scenarios
            .iter()
            .map(|s| (&*s.path, &*s.source_hash, s.seed_start, s.seed_end))
            .collect(),
    }
}

/// The merge rules of `suite::shard`, on the files as given.
fn check_shards(files: &[PathBuf], views: &[shard::View]) -> Result<(), BadInput> {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    shard::check_set(&names, views).map_err(BadInput)
}

/// Merges scenario `i` of every shard and judges it from its file.
fn merge_scenario(
    reports: &[RunJson],
    i: usize,
    cfg: &SweepConfig,
) -> Result<(Scenario, ScenarioResult)> {
    let s = &reports[0].scenarios[i];
    let parts = reports
        .iter()
        .map(|r| {
            let part = &r.scenarios[i];
            let agg = part
                .aggregate
                .to_agg()
                .map_err(|e| BadInput(format!("{}: {e}", part.path)))?;
            let shard = shard_of(r.shard).ok_or_else(|| BadInput("not a shard".into()))?;
            Ok((agg, shard, part.divergence.clone()))
        })
        .collect::<Result<Vec<_>, BadInput>>()?;
    let (agg, divergence) = shard::merge_aggregates(parts, &(s.seed_start..s.seed_end))
        .map_err(|e| BadInput(format!("{}: {e}", s.path)))?;
    let scenario = load(Path::new(&s.path))?;
    let hash = parse_hex(&s.source_hash).map_err(BadInput)?;
    if scenario.source_hash != hash {
        return Err(BadInput(format!(
            "{}: the file changed since the shards ran (content hash {:016x}, shards ran {hash:016x})",
            s.path, scenario.source_hash
        ))
        .into());
    }
    let result = suite::judge_sweep(&scenario, s.seed_start..s.seed_end, cfg, agg, divergence);
    Ok((scenario, result))
}

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The `--format json` outputs of `run --shard I/N` (or `validate --shard I/N`), one per shard.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write the report directory `run --report` writes (its charts come from the
    /// shard files; only each timeline's seed runs again).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    #[command(flatten)]
    jobs: IgnoredJobsFlag,
}

pub fn cmd(a: MergeArgs) -> Result<ExitCode> {
    let MergeArgs {
        files,
        format,
        junit,
        report,
        jobs,
    } = a;
    jobs.resolve();
    let files = files.as_slice();
    if read_text(&files[0])?.1 == campaign_json::SCHEMA {
        return merge_campaign(files, format, junit.as_deref(), report.as_deref());
    }
    if read_text(&files[0])?.1 == vshard::SCHEMA {
        if junit.is_some() || report.is_some() {
            return Err(BadInput(
                "--junit and --report merge `run` shards; `validate` shards merge to text or JSON"
                    .into(),
            )
            .into());
        }
        return merge_validate(files, format);
    }
    if let Some(file) = &junit {
        check_writable_file("--junit", file)?;
    }
    if let Some(dir) = &report {
        check_writable_dir("--report", dir)?;
    }
    let reports = files
        .iter()
        .map(|f| read(f))
        .collect::<Result<Vec<_>, _>>()?;
    check_shards(files, &reports.iter().map(run_view).collect::<Vec<_>>())?;
    let cfg = SweepConfig {
        swarm: reports[0].swarm,
        check_determinism: reports[0].check_determinism,
        shard: None,
    };
    let (scenarios, results): (Vec<Scenario>, Vec<ScenarioResult>) =
        (0..reports[0].scenarios.len())
            .map(|i| merge_scenario(&reports, i, &cfg))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
    let code = exit_code(&results);
    emit(&results, &cfg, format, junit.as_deref(), code)?;
    if let Some(dir) = report {
        // Each merged result carries its whole seed range and the sweep's
        // swarm setting: the report covers exactly what the shards ran.
        let doc = crate::report::write::run_doc(&scenarios, &results);
        crate::report::write::write(&dir, &doc)?;
        if format == Format::Text {
            println!("report written to {}", dir.join("index.html").display());
        }
    }
    Ok(ExitCode::from(code))
}
