//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn scenario_path(rel: &str) -> PathBuf {
    root().join("scenarios").join(rel)
}

/// Runs the `fencesim` binary built for this test profile.
pub fn fencesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fencesim"))
        .args(args)
        .current_dir(root())
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("fencesim binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn load(path: &Path) -> fencesim::scenario::Scenario {
    fencesim::scenario::load(path).unwrap_or_else(|e| panic!("{e}"))
}
