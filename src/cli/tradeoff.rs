//! `fencesim tradeoff`: the TTL sweep as a table (and a chart with `--report`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::flags::{JobsFlag, SeedFlags};
use super::Verdict;
use super::{load, BadInput};

#[derive(clap::Args, Debug)]
pub struct TradeoffArgs {
    /// Base scenario (scenarios/tradeoff/ttl-tradeoff.toml).
    path: PathBuf,
    /// TTLs to try, comma-separated milliseconds.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,2000,5000,10000,20000"
    )]
    ttls_ms: Vec<u64>,
    #[command(flatten)]
    seeds: SeedFlags,
    #[command(flatten)]
    jobs: JobsFlag,
    /// Also write the chart (tradeoff.svg) and table (tradeoff.md) here.
    #[arg(long)]
    report: Option<PathBuf>,
}

pub fn cmd(a: TradeoffArgs) -> Result<ExitCode> {
    let TradeoffArgs {
        path,
        ttls_ms,
        seeds,
        jobs,
        report,
    } = a;
    let (path, ttls_ms): (&Path, &[u64]) = (&path, &ttls_ms);
    if ttls_ms.is_empty() || ttls_ms.contains(&0) {
        return Err(
            BadInput("--ttls-ms takes positive milliseconds, e.g. 1000,5000,20000".into()).into(),
        );
    }
    let max_ms = crate::scenario::limits::DURATION_MAX_MS;
    if let Some(ttl) = ttls_ms.iter().find(|&&t| t > max_ms) {
        return Err(BadInput(format!(
            "--ttls-ms {ttl}: expected at most {max_ms} (one year)"
        ))
        .into());
    }
    // Refused before the sweep, not after it.
    if let Some(dir) = &report {
        super::check_writable_dir("--report", dir)?;
    }
    let s = load(path)?;
    let range = seeds.range(&s)?;
    let count = range.end - range.start;
    println!(
        "fencesim {} — TTL trade-off of {} over {count} seeds per point",
        env!("CARGO_PKG_VERSION"),
        s.name
    );
    let rows = crate::suite::tradeoff::sweep(&s, ttls_ms, range, jobs.resolve());
    let table = crate::report::tradeoff::table(&rows, count);
    print!("{table}");
    if let Some(dir) = report {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("tradeoff.svg"),
            crate::report::tradeoff::render(&rows),
        )?;
        std::fs::write(
            dir.join("tradeoff.md"),
            format!(
                "# TTL trade-off: {}\n\n![chart](tradeoff.svg)\n\n```\n{table}```\n",
                s.name
            ),
        )?;
        println!("chart written to {}", dir.join("tradeoff.svg").display());
    }
    Ok(ExitCode::from(Verdict::Met))
}
