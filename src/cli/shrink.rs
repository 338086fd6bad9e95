//! `fencesim shrink`: minimize a failing seed into a fully scripted
//! scenario file (see `crate::shrink`) and say how much it shrank.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::flags::parse_seed;
use super::BadInput;
use super::Verdict;
use crate::check::ViolationKind;
use crate::shrink::{self, ShrinkError};

/// `scenarios/x.toml` seed 7 -> `x-seed-7-shrunk.toml` beside it.
fn default_out(path: &Path, seed: u64) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy());
    path.with_file_name(format!("{stem}-seed-{seed}-shrunk.toml"))
}

#[derive(clap::Args, Debug)]
pub struct ShrinkArgs {
    path: PathBuf,
    #[arg(long, value_parser = parse_seed)]
    seed: u64,
    /// The seed was found with `run --swarm`.
    #[arg(long)]
    swarm: bool,
    /// Violation kind to preserve (default: the first unexpected one, else the first found).
    #[arg(long)]
    kind: Option<String>,
    /// Where to write the minimal scenario (default: FILE stem + `-seed-S-shrunk.toml`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Give up after this many candidate runs (at least 1; 0 is refused as bad input).
    #[arg(long, default_value_t = 5_000)]
    max_runs: u64,
}

pub fn cmd(args: ShrinkArgs) -> Result<ExitCode> {
    let ShrinkArgs {
        path,
        seed,
        swarm,
        kind,
        out,
        max_runs,
    } = args;
    let path = path.as_path();
    let kind = kind
        .as_deref()
        .map(|k| {
            ViolationKind::from_name(k).ok_or_else(|| {
                let names: Vec<&str> = ViolationKind::ALL.iter().map(|k| k.name()).collect();
                BadInput(format!(
                    "--kind {k:?}: expected one of {}",
                    names.join(", ")
                ))
            })
        })
        .transpose()?;
    let source =
        std::fs::read_to_string(path).map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
    let file = path.display().to_string();
    let shrunk = match shrink::shrink(&source, &file, seed, swarm, kind, max_runs) {
        Ok(s) => s,
        Err(e @ ShrinkError::ScriptedDiffers { .. }) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(Verdict::ImplementationError));
        }
        Err(e) => return Err(BadInput(e.to_string()).into()),
    };
    let out = out.unwrap_or_else(|| default_out(path, seed));
    std::fs::write(&out, &shrunk.text).with_context(|| format!("writing {}", out.display()))?;
    print!(
        "{}",
        crate::report::shrink::summary(&file, seed, &shrunk, &out)
    );
    Ok(ExitCode::from(Verdict::Met))
}
