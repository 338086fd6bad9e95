//! `fencesim run`: every scenario over its seeds, one table row each.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::{default_jobs, load, BadInput, EXIT_FAILED, EXIT_OK};
use crate::{report, scenario, suite};

pub fn cmd_run(
    paths: &[PathBuf],
    seeds: Option<u64>,
    seed_start: Option<u64>,
    jobs: Option<usize>,
    report_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let files = scenario::collect(paths).map_err(|e| BadInput(e.to_string()))?;
    // Load everything first: a typo in the last file should not cost a long sweep.
    let scenarios = files.iter().map(|f| load(f)).collect::<Result<Vec<_>>>()?;
    let jobs = jobs.unwrap_or_else(default_jobs).max(1);
    println!(
        "fencesim {} — {} scenarios, jobs {jobs}",
        env!("CARGO_PKG_VERSION"),
        scenarios.len()
    );
    let mut results = Vec::with_capacity(scenarios.len());
    for s in &scenarios {
        let start = seed_start.unwrap_or(s.seeds.start);
        let count = seeds.unwrap_or(s.seeds.end - s.seeds.start);
        results.push(suite::run_scenario(
            s,
            start..start.saturating_add(count),
            jobs,
        ));
    }
    print!("{}", report::table::render(&results));
    let digest = results
        .iter()
        .fold(0u64, |d, r| d.wrapping_mul(31).wrapping_add(r.agg.digest));
    println!(
        "\nsuite digest {digest:016x} ({} seeds, {} events)",
        results.iter().map(|r| r.agg.seeds).sum::<u64>(),
        results.iter().map(|r| r.agg.events).sum::<u64>()
    );
    if let Some(dir) = report_dir {
        let doc = report::write::run_doc(&scenarios, &results, seeds, seed_start, jobs);
        report::write::write(&dir, &doc)?;
        println!("report written to {}", dir.join("index.html").display());
    }
    let met = results.iter().all(|r| r.met());
    Ok(ExitCode::from(if met { EXIT_OK } else { EXIT_FAILED }))
}
