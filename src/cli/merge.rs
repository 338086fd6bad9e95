//! `fencesim merge`: combine the JSON reports of `run --shard I/N` (one per
//! shard, any order) into the report an unsharded run prints — same table,
//! same JSON, same digest, same exit code.
//!
//! Aggregates merge exactly (see `suite`); the verdict is then judged again
//! from the scenario files, which must be at the same paths with the same
//! content hash as when the shards ran. Shards that disagree on version,
//! flags, scenarios or seed ranges, or that do not cover `0..N` exactly
//! once, are bad input: merging them would report a sweep nobody ran.
//!
//! `validate --shard I/N --format json` outputs merge here too (told apart
//! by their `schema`), into the unsharded validation's JSON; see
//! `validate::shard`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::flags::{Format, IgnoredJobsFlag};
use super::run::{emit, exit_code};
use super::{check_writable_dir, check_writable_file, load, BadInput};
use crate::report::json::{parse_hex, RunJson, ScenarioJson, ShardJson, SCHEMA, SCHEMA_VERSION};
use crate::scenario::Scenario;
use crate::suite::{self, Aggregate, ScenarioResult, SweepConfig};
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

/// What must be equal across shards for one scenario.
type Identity<'a> = (&'a str, &'a str, u64, u64);

fn identity(s: &ScenarioJson) -> Identity<'_> {
    (&s.path, &s.source_hash, s.seed_start, s.seed_end)
}

/// What the shard checks read from one file, whichever command wrote it.
struct ShardView<'a> {
    shard: Option<ShardJson>,
    version: &'a str,
    /// The flags that change results, and how to name them in an error.
    flags: (String, &'static str),
    scenarios: Vec<Identity<'a>>,
}

fn run_view(r: &RunJson) -> ShardView<'_> {
    ShardView {
        shard: r.shard,
        version: &r.fencesim_version,
        flags: (
            format!("{} {}", r.swarm, r.check_determinism),
            "--swarm / --check-determinism",
        ),
        scenarios: r.scenarios.iter().map(identity).collect(),
    }
}

fn validate_view(r: &ValidateJson) -> ShardView<'_> {
    ShardView {
        shard: r.shard,
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

/// Checks that `reports` are the shards `0..N` of one sweep.
fn check_shards(files: &[PathBuf], reports: &[ShardView]) -> Result<(), BadInput> {
    let first = &reports[0];
    let count = first.shard.map_or(0, |s| s.count);
    // A set, not a vector sized by a count read from a file.
    let mut seen = std::collections::BTreeSet::new();
    for (file, r) in files.iter().zip(reports) {
        let bad = |what: &str| {
            BadInput(format!(
                "{}: {what} differs from {}",
                file.display(),
                files[0].display()
            ))
        };
        let Some(shard) = r.shard else {
            return Err(BadInput(format!(
                "{}: not a shard (run it with --shard I/N)",
                file.display()
            )));
        };
        if shard.count != count {
            return Err(bad("the shard count"));
        }
        if shard.index >= count {
            return Err(BadInput(format!(
                "{}: shard {}/{count} is out of range; expected I/N with I < N",
                file.display(),
                shard.index
            )));
        }
        if let Some((path, _, start, end)) = r.scenarios.iter().find(|s| s.2 >= s.3) {
            return Err(BadInput(format!(
                "{}: {path}: seed range {start}..{end} is empty; expected seed_start < seed_end",
                file.display(),
            )));
        }
        if !seen.insert(shard.index) {
            return Err(BadInput(format!(
                "{}: shard {}/{count} appears twice",
                file.display(),
                shard.index
            )));
        }
        if r.version != first.version {
            return Err(bad("the fencesim version"));
        }
        if r.flags.0 != first.flags.0 {
            return Err(bad(r.flags.1));
        }
        if r.scenarios != first.scenarios {
            return Err(bad(
                "the scenario list (paths, content hashes, seed ranges)",
            ));
        }
    }
    // Lazily, and only the first few: `count` may be absurd.
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains(i))
        .take(10)
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(BadInput(format!("missing shards: {}", missing.join(", "))));
    }
    Ok(())
}

/// Refuses a shard's aggregate whose counts could not come from its seeds:
/// the seed count must be the shard's share of the range, and every other
/// counter small enough that adding `shards` of them cannot overflow (a
/// hand-edited or corrupt file is bad input, not a panic).
fn plausible(part: &Aggregate, r: &RunJson, s: &ScenarioJson, shards: usize) -> Result<(), String> {
    let shard = r.shard.ok_or("not a shard")?;
    let len = s.seed_end - s.seed_start;
    let owned = len / shard.count + u64::from(len % shard.count > shard.index);
    if part.seeds != owned {
        return Err(format!(
            "shard {}/{} reports {} seeds; its share of {}..{} is {owned}",
            shard.index, shard.count, part.seeds, s.seed_start, s.seed_end
        ));
    }
    let bound = u64::MAX / 2 / shards as u64;
    let p = &part.production;
    let histograms = [
        &p.acquisition_wait_ns,
        &p.lease_held_ns,
        &p.renewal_slack_ns,
    ];
    let counters = [
        part.events,
        part.seeds_with_stale_attempts,
        part.fence_rejected_total,
        part.seeds_with_unfinished,
        part.seeds_at_event_budget,
        part.metric_failures,
        part.diverged_seeds,
        p.renewal_failures,
        p.lost_leases,
    ]
    .into_iter()
    .chain(part.failing_seeds)
    .chain(
        part.mixes
            .values()
            .flat_map(|m| std::iter::once(m.seeds).chain(m.failing_seeds)),
    )
    .chain(
        histograms
            .iter()
            .flat_map(|h| std::iter::once(h.count).chain(h.buckets.values().copied())),
    );
    for n in counters {
        if n > bound {
            return Err(format!(
                "a count of {n} is implausible; expected at most {bound} per shard"
            ));
        }
    }
    Ok(())
}

/// Merges scenario `i` of every shard and judges it from its file.
fn merge_scenario(
    reports: &[RunJson],
    i: usize,
    cfg: &SweepConfig,
) -> Result<(Scenario, ScenarioResult)> {
    let mut agg = Aggregate::default();
    let mut divergence: Option<(u64, String)> = None;
    for r in reports {
        let s = &r.scenarios[i];
        let part = s
            .aggregate
            .to_agg()
            .map_err(|e| BadInput(format!("{}: {e}", s.path)))?;
        plausible(&part, r, s, reports.len()).map_err(|e| BadInput(format!("{}: {e}", s.path)))?;
        if let (Some(seed), Some(text)) = (part.first_diverged, &s.divergence) {
            if divergence.as_ref().is_none_or(|(d, _)| seed < *d) {
                divergence = Some((seed, text.clone()));
            }
        }
        agg = agg.merge(part);
    }
    let s = &reports[0].scenarios[i];
    let scenario = load(Path::new(&s.path))?;
    let hash = parse_hex(&s.source_hash).map_err(BadInput)?;
    if scenario.source_hash != hash {
        return Err(BadInput(format!(
            "{}: the file changed since the shards ran (content hash {:016x}, shards ran {hash:016x})",
            s.path, scenario.source_hash
        ))
        .into());
    }
    let result = suite::judge_sweep(
        &scenario,
        s.seed_start..s.seed_end,
        cfg,
        agg,
        divergence.map(|(_, text)| text),
    );
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
