//! `fencesim merge`: combine the JSON reports of `run --shard I/N` (one per
//! shard, any order) into the report an unsharded run prints — same table,
//! same JSON, same digest, same exit code.
//!
//! Aggregates merge exactly (see `suite`); the verdict is then judged again
//! from the scenario files, which must be at the same paths with the same
//! content hash as when the shards ran. Shards that disagree on version,
//! flags, scenarios or seed ranges, or that do not cover `0..N` exactly
//! once, are bad input: merging them would report a sweep nobody ran.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::args::Format;
use super::run::{emit, exit_code};
use super::{check_writable_dir, check_writable_file, load, BadInput};
use crate::scenario::Scenario;
use crate::suite::json::{parse_hex, RunJson, ScenarioJson, SCHEMA, SCHEMA_VERSION};
use crate::suite::{self, Aggregate, ScenarioResult, SweepConfig};

fn read(file: &Path) -> Result<RunJson, BadInput> {
    let text =
        std::fs::read_to_string(file).map_err(|e| BadInput(format!("{}: {e}", file.display())))?;
    let report: RunJson = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "{}:{}:{}: {e}; expected the output of `fencesim run --format json --shard I/N`",
            file.display(),
            e.line(),
            e.column()
        ))
    })?;
    if report.schema != SCHEMA || report.schema_version != SCHEMA_VERSION {
        return Err(BadInput(format!(
            "{}: schema {} version {} is not supported; expected {SCHEMA} version {SCHEMA_VERSION}",
            file.display(),
            report.schema,
            report.schema_version
        )));
    }
    Ok(report)
}

/// What must be equal across shards for one scenario.
fn identity(s: &ScenarioJson) -> (&str, &str, u64, u64) {
    (&s.path, &s.source_hash, s.seed_start, s.seed_end)
}

/// Checks that `reports` are the shards `0..N` of one sweep.
fn check_shards(files: &[PathBuf], reports: &[RunJson]) -> Result<(), BadInput> {
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
        if let Some(s) = r.scenarios.iter().find(|s| s.seed_start >= s.seed_end) {
            return Err(BadInput(format!(
                "{}: {}: seed range {}..{} is empty; expected seed_start < seed_end",
                file.display(),
                s.path,
                s.seed_start,
                s.seed_end
            )));
        }
        if !seen.insert(shard.index) {
            return Err(BadInput(format!(
                "{}: shard {}/{count} appears twice",
                file.display(),
                shard.index
            )));
        }
        if r.fencesim_version != first.fencesim_version {
            return Err(bad("the fencesim version"));
        }
        if (r.swarm, r.check_determinism) != (first.swarm, first.check_determinism) {
            return Err(bad("--swarm / --check-determinism"));
        }
        if !r
            .scenarios
            .iter()
            .map(identity)
            .eq(first.scenarios.iter().map(identity))
        {
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

/// The `--seeds` / `--seed-start` a sweep over `ranges` was run with: the
/// report recomputes each scenario's range from its file and these, as
/// `run` does. A flag given to `run` applies to every scenario, so a value
/// shared by all ranges is taken as given; the result is checked.
fn overrides(
    scenarios: &[Scenario],
    ranges: &[Range<u64>],
) -> Result<(Option<u64>, Option<u64>), BadInput> {
    let same = |f: fn(&Range<u64>) -> u64| {
        let first = ranges.first().map(f)?;
        ranges.iter().all(|r| f(r) == first).then_some(first)
    };
    let seeds = same(|r| r.end - r.start);
    let seed_start = same(|r| r.start);
    for (s, r) in scenarios.iter().zip(ranges) {
        if crate::report::write::seed_range(s, seeds, seed_start) != *r {
            return Err(BadInput(format!(
                "{}: its seed range {}..{} is not one a single `fencesim run` gives with the others'; \
                 --report needs shards of one run",
                s.path.display(),
                r.start,
                r.end
            )));
        }
    }
    Ok((seeds, seed_start))
}

pub fn cmd_merge(
    files: &[PathBuf],
    format: Format,
    junit: Option<PathBuf>,
    report: Option<PathBuf>,
    jobs: Option<usize>,
) -> Result<ExitCode> {
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
    check_shards(files, &reports)?;
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
        let ranges: Vec<Range<u64>> = reports[0]
            .scenarios
            .iter()
            .map(|s| s.seed_start..s.seed_end)
            .collect();
        let (seeds, seed_start) = overrides(&scenarios, &ranges)?;
        let doc = crate::report::write::run_doc(
            &scenarios,
            &results,
            seeds,
            seed_start,
            super::jobs(jobs),
        );
        crate::report::write::write(&dir, &doc)?;
        if format == Format::Text {
            println!("report written to {}", dir.join("index.html").display());
        }
    }
    Ok(ExitCode::from(code))
}
