//! What the etcd and ZooKeeper live tests (`etcd.rs`, `zk.rs`) share: skipping loudly when
//! the servers are missing, one `fencesim live` run of a cluster's
//! scenarios read back as its live-vs-simulated table, the checks every
//! run must pass (unsafe found in every trial, safe clean with a rejection
//! in every trial, tokens in order, the history re-checked by
//! `check-history`, nothing left behind), and a bad-input run.

use crate::common::live_shared;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fencesim::live::cluster::{binaries_present, ClusterKind};

/// Whether the live mode's servers and `kind`'s binaries are here; if not,
/// one loud line says what was skipped and why.
pub fn present(kind: ClusterKind, test: &str) -> bool {
    let all = fencesim::live::servers::binaries_present().and_then(|()| binaries_present(kind));
    match all {
        Ok(()) => true,
        Err(e) => {
            crate::common::skip(test, &format!("{e:#}"));
            false
        }
    }
}

pub fn fencesim() -> Command {
    crate::common::fencesim_command()
}

/// The pids in `(pid N)` and `(pids [a, b, c])` of the run's start-up lines.
pub fn started_pids(stdout: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for line in stdout.lines().filter(|l| l.contains("(pid")) {
        for part in line.split("(pid").skip(1) {
            let list = part.split(')').next().unwrap_or("");
            pids.extend(
                list.split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse::<u32>().ok()),
            );
        }
    }
    pids
}

pub fn assert_nothing_left(root: &Path, pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .collect();
        if alive.is_empty() && !root.exists() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "left behind: pids {alive:?}, directory {} exists: {}",
            root.display(),
            root.exists()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// scenario -> kind ("none" for clean runs, "fence_rejected",
/// "watch_notified/trial") -> live column.
pub type Table = BTreeMap<String, BTreeMap<String, String>>;

/// The live column of `scenario`'s `kind` row, if the table has one.
pub fn cell<'a>(table: &'a Table, scenario: &str, kind: &str) -> Option<&'a str> {
    table.get(scenario)?.get(kind).map(String::as_str)
}

fn table(stdout: &str) -> Table {
    let mut table: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let body = stdout.split("live vs simulated").nth(1).unwrap_or("");
    for line in body.lines().filter(|l| l.trim_start().starts_with("live-")) {
        let name = line.split_whitespace().next().unwrap().to_string();
        let rest = line.trim_start()[name.len()..].trim_start();
        let (kind, cols) = match (
            rest.strip_prefix("none (clean runs)"),
            rest.strip_prefix("fence_rejected ≥ 1"),
        ) {
            (Some(c), _) => ("none".to_string(), c),
            (_, Some(c)) => ("fence_rejected".to_string(), c),
            _ => {
                let k = rest.split_whitespace().next().unwrap();
                (k.to_string(), &rest[k.len()..])
            }
        };
        let live = cols.split_whitespace().next().unwrap_or("").to_string();
        table.entry(name).or_default().insert(kind, live);
    }
    table
}

/// Runs `files` (under live/) for two trials each on one cluster of
/// `kind` and checks: each of `unsafe_` finds stale_write and lost_update
/// in both trials (and check-history agrees on the first's history), each
/// of `safe` is clean with a fence rejection in both and no token_order,
/// and nothing is left afterwards. Returns the live-vs-simulated table.
pub fn run_and_check(kind: ClusterKind, files: &[&str], unsafe_: &[&str], safe: &[&str]) -> Table {
    let _live = live_shared();
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = fencesim()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("live")
        .args(files)
        // Two trials at a time: `--jobs 2` here once missed a fence
        // rejection in CI (docs/live-measurements.md, "What it took to get
        // under 90 s") before the scenarios' pauses were anchored on the
        // events they are about (docs/live-steadiness.md#anchored-pauses).
        .args(["--trials", "2", "--jobs", "2", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    eprintln!(
        "{stdout}\n(wall time {:.1} s)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        o.status.success(),
        "fencesim live failed ({}):\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let banner = format!("started: {} cluster of 3 members", kind.name());
    assert!(stdout.contains(&banner), "{stdout}");
    let table = table(&stdout);
    let at = |s: &str, k: &str| table.get(s).and_then(|m| m.get(k)).cloned();
    for u in unsafe_ {
        for k in ["stale_write", "lost_update"] {
            assert_eq!(at(u, k).as_deref(), Some("2/2"), "{u} {k}:\n{stdout}");
        }
    }
    for s in safe {
        assert_eq!(
            at(s, "none").as_deref(),
            Some("2/2"),
            "{s} not clean in every trial:\n{stdout}"
        );
        assert_eq!(
            at(s, "fence_rejected").as_deref(),
            Some("2/2"),
            "{s}: the fence refused nothing in some trial:\n{stdout}"
        );
        assert!(
            at(s, "token_order").is_none(),
            "{s}: token order broken:\n{stdout}"
        );
    }
    let history: PathBuf = out.path().join(format!("{}-trial-1.jsonl", unsafe_[0]));
    let c = fencesim()
        .arg("check-history")
        .arg(&history)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(
        text.contains("stale_write"),
        "check-history of {}: {text}",
        history.display()
    );
    let roots = run_roots(&stdout);
    assert_eq!(
        roots.len(),
        2,
        "one set of servers per job (two jobs):\n{stdout}"
    );
    for root in roots {
        assert_nothing_left(&root, &started_pids(&stdout));
    }
    table
}

/// The directory of each job's servers (`job 1/2: fencesim … in DIR`).
pub fn run_roots(stdout: &str) -> Vec<PathBuf> {
    stdout
        .lines()
        .filter(|l| l.contains(" live: ") && l.contains(" in "))
        .map(|l| PathBuf::from(l.rsplit(" in ").next().unwrap_or("").trim()))
        .collect()
}

/// `fencesim live` on a scenario file made of `body` (its twin filled in)
/// exits 2 with an error naming the file and containing `message`.
pub fn assert_bad_input(body: &str, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let twin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/real-systems/zk-sequential-gc-pause.toml");
    let file = dir.path().join("bad.toml");
    let head = format!(
        "schema_version = 1\nname = \"bad\"\ntwin = \"{}\"\n",
        twin.display()
    );
    std::fs::write(&file, head + body).unwrap();
    let o = fencesim().arg("live").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml:") && err.contains(message), "{err}");
}

/// A harness SIGKILLed in the middle of `file`'s trials runs no Drop: every
/// cluster member (and server) must still die by its parent-death signal,
/// and the directory it leaves is swept by the next start.
pub fn assert_killed_harness_leaves_nothing(kind: ClusterKind, file: &str) {
    use std::io::{BufRead, BufReader};
    let _serial = live_shared();
    let out = tempfile::tempdir().unwrap();
    let mut child = fencesim()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["live", file, "--trials", "50", "--jobs", "1", "--out"])
        .arg(out.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(out.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut text = String::new();
    // The pipe stays open until the harness is killed: dropped here, the
    // harness's next line would fail with EPIPE and it would exit by
    // itself (a panic, whose unwinding runs every Drop) — a harness that
    // cleaned up after itself, which this test must not mistake for one
    // whose children died with it.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for line in (&mut stdout).lines() {
        let line = line.unwrap();
        text.push_str(&line);
        text.push('\n');
        if line.contains("trial 1/") {
            break;
        }
    }
    let banner = format!("started: {} cluster of 3 members", kind.name());
    let stderr = || std::fs::read_to_string(out.path().join("stderr")).unwrap_or_default();
    assert!(text.contains(&banner), "{text}\n{}", stderr());
    let pids = started_pids(&text);
    // redis-server, its replica, postgres and the three members.
    assert!(pids.len() >= 6, "{pids:?} from\n{text}\n{}", stderr());
    let first = text.lines().next().unwrap_or("");
    let root = PathBuf::from(first.rsplit(" in ").next().unwrap_or("").trim());
    // Still running at the kill: a harness that had already exited ran its
    // Drops and proves nothing about a killed one. Its output says why.
    assert!(
        root.exists() && child.try_wait().unwrap().is_none(),
        "the harness exited before it was killed ({}):\n{text}\n{}",
        root.display(),
        stderr()
    );
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists())
    {
        assert!(
            Instant::now() < deadline,
            "members outlived the harness: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fencesim::live::servers::sweep_stale();
    assert_nothing_left(&root, &pids);
}
