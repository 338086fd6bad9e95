//! The live mode on a real three-member ZooKeeper ensemble: the paused
//! holder's plain UPDATE is found stale, the fenced one (czxid as the
//! token) refused; a leader killed while B waits leaves the fence holding
//! and the tokens in order; nothing the run started outlives it.
//!
//! Needs Debian's `zookeeper` (3.8, with a Java runtime) and the
//! Redis/PostgreSQL of the live mode; without them the test prints one loud
//! line saying what it skipped and why (`.ci/run` installs the packages so
//! CI always runs it). One ensemble serves every scenario of the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fencesim::live::cluster::{binaries_present, ClusterKind};

fn present(test: &str) -> bool {
    let all = fencesim::live::servers::binaries_present()
        .and_then(|()| binaries_present(ClusterKind::Zk));
    match all {
        Ok(()) => true,
        Err(e) => {
            eprintln!("!!! LIVE TEST SKIPPED: {test}: {e:#}");
            false
        }
    }
}

fn fencesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fencesim"))
}

/// The pids in `(pid N)` and `(pids [a, b, c])` of the run's start-up lines.
fn started_pids(stdout: &str) -> Vec<u32> {
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

fn assert_nothing_left(root: &Path, pids: &[u32]) {
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

#[test]
fn zk_lock_is_found_stale_unfenced_and_fenced_through_pause_and_leader_death() {
    if !present("ZooKeeper live scenarios") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = fencesim()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "live",
            "live/zk-gc-pause-plain-update.toml",
            "live/zk-gc-pause-fenced-update.toml",
            "live/zk-leader-killed-during-grant.toml",
            "--trials",
            "2",
            "--jobs",
            "1",
            "--out",
        ])
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
    assert!(
        stdout.contains("started: ZooKeeper cluster of 3 members"),
        "{stdout}"
    );
    // scenario -> (kind or "none (clean runs)") -> live column, from the table.
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
    let at = |s: &str, k: &str| table.get(s).and_then(|m| m.get(k)).cloned();
    assert_eq!(
        at("live-zk-gc-pause-plain-update", "stale_write").as_deref(),
        Some("2/2"),
        "{stdout}"
    );
    assert_eq!(
        at("live-zk-gc-pause-plain-update", "lost_update").as_deref(),
        Some("2/2"),
        "{stdout}"
    );
    for safe in [
        "live-zk-gc-pause-fenced-update",
        "live-zk-leader-killed-during-grant",
    ] {
        assert_eq!(
            at(safe, "none").as_deref(),
            Some("2/2"),
            "{safe} not clean in every trial:\n{stdout}"
        );
        assert_eq!(
            at(safe, "fence_rejected").as_deref(),
            Some("2/2"),
            "{safe}: the fence refused nothing in some trial:\n{stdout}"
        );
        assert!(
            at(safe, "token_order").is_none(),
            "{safe}: token order broken:\n{stdout}"
        );
    }
    // Each trial's history gives the same verdict through check-history.
    let plain: PathBuf = out
        .path()
        .join("live-zk-gc-pause-plain-update-trial-1.jsonl");
    let c = fencesim()
        .arg("check-history")
        .arg(&plain)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(
        text.contains("stale_write"),
        "check-history of {}: {text}",
        plain.display()
    );
    let first = stdout.lines().next().unwrap_or("");
    let root = PathBuf::from(first.rsplit(" in ").next().unwrap_or("").trim());
    assert_nothing_left(&root, &started_pids(&stdout));
}

#[test]
fn a_member_beyond_the_three_is_bad_input_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let twin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/real-systems/zk-sequential-gc-pause.toml");
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        format!(
            "schema_version = 1\nname = \"bad\"\ntwin = \"{}\"\nlock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 1000\n\
             [[worker]]\nname = \"A\"\n[[fault]]\nkind = \"crash\"\nnode = \"member/3\"\nat_ms = 10\n[expect]\n",
            twin.display()
        ),
    )
    .unwrap();
    let o = fencesim().arg("live").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:") && err.contains("unknown member \"member/3\""),
        "{err}"
    );
}
