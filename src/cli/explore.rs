//! `fencesim explore`: stateright's web explorer for one model spec, on 127.0.0.1 only, to
//! step through a model's actions by hand (each step is described as in a timeline).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::{BadInput, EXIT_OK};
use crate::model;

pub fn cmd_explore(path: &Path, port: u16) -> Result<ExitCode> {
    let spec = model::load(path).map_err(|e| BadInput(e.to_string()))?;
    println!(
        "exploring model {} ({}) on http://127.0.0.1:{port}/ — Ctrl-C to stop",
        spec.name,
        spec.bounds.protocol.id()
    );
    model::explore(&spec, port).map_err(|e| BadInput(format!("{e:#}")))?;
    Ok(ExitCode::from(EXIT_OK))
}
