//! `fencesim explore`: stateright's web explorer for one model spec, on 127.0.0.1 only, to
//! step through a model's actions by hand (each step is described as in a timeline).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::BadInput;
use super::Verdict;
use crate::model;

#[derive(clap::Args, Debug)]
pub struct ExploreArgs {
    path: PathBuf,
    #[arg(long, default_value_t = 3000)]
    port: u16,
}

pub fn cmd(a: ExploreArgs) -> Result<ExitCode> {
    let (path, port): (&Path, u16) = (&a.path, a.port);
    let spec = model::load(path).map_err(|e| BadInput(e.to_string()))?;
    println!(
        "exploring model {} ({}) on http://127.0.0.1:{port}/ — Ctrl-C to stop",
        spec.name,
        spec.bounds.protocol.id()
    );
    model::explore(&spec, port).map_err(|e| BadInput(format!("{e:#}")))?;
    Ok(ExitCode::from(Verdict::Met))
}
