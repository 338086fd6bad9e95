//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fencesim::protocol::Role;
use fencesim::scenario::Scenario;
use fencesim::sim::RandomFaults;

const MS: u64 = 1_000_000;

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

/// A bundled scenario under random pauses, crashes and partitions instead of
/// one scripted pause, with workers busy for the whole fault window.
pub fn with_random_faults(mut s: Scenario) -> Scenario {
    let workers: Vec<_> = s.options.workers().map(|(id, _)| id).collect();
    for node in &mut s.options.nodes {
        if let Role::Worker(w) = &mut node.role {
            w.ops = 20;
            w.work_ns = 500 * MS;
            w.think_ns = 200 * MS;
        }
    }
    s.options.max_time_ns = 120_000 * MS;
    s.options.faults.clear();
    s.options.random = RandomFaults {
        window_ns: 20_000 * MS,
        pause_probability: 0.5,
        pause_min_ns: 1_000 * MS,
        pause_max_ns: 15_000 * MS,
        pause_nodes: workers.clone(),
        crash_probability: 0.1,
        restart_min_ns: 500 * MS,
        restart_max_ns: 3_000 * MS,
        crash_nodes: workers,
        partition_probability: 0.2,
        partition_min_ns: 1_000 * MS,
        partition_max_ns: 12_000 * MS,
        failover_probability: 0.0,
        ..RandomFaults::default()
    };
    s
}
