//! The committed example reports in `reports/` are exactly what the code
//! produces: this regenerates them into a temporary directory with the one
//! documented command and compares every file byte for byte (extra and
//! missing files included). Run with `--jobs 1` while the committed set was
//! made with the default job count, so it also proves the output does not
//! depend on threads.
//!
//! If it fails after an intended change, regenerate and commit:
//! `cargo run --release -- run scenarios/ --report reports/`

use std::collections::BTreeMap;
use std::path::Path;

const REGENERATE: &str = "cargo run --release -- run scenarios/ --report reports/";

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn committed_reports_match_what_the_code_generates() {
    let _heavy = crate::common::heavy();
    let tmp = tempfile::tempdir().unwrap();
    let out = crate::common::fencesim_command()
        .args(["run", "scenarios/", "--jobs", "1", "--report"])
        .arg(tmp.path())
        .output()
        .expect("fencesim runs");
    assert!(
        out.status.success(),
        "every bundled expectation must be met:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let fresh = files(tmp.path());
    let committed = files(Path::new("reports"));
    assert!(fresh.contains_key("index.html") && fresh.contains_key("summary.md"));
    assert!(fresh.contains_key("results.json"));
    let mut stale = Vec::new();
    for (name, bytes) in &fresh {
        match committed.get(name) {
            None => stale.push(format!("missing from reports/: {name}")),
            Some(b) if b != bytes => stale.push(format!("differs: reports/{name}")),
            Some(_) => {}
        }
    }
    for name in committed.keys().filter(|n| !fresh.contains_key(*n)) {
        stale.push(format!("no longer generated: reports/{name}"));
    }
    assert!(
        stale.is_empty(),
        "reports/ is stale:\n  {}\nregenerate with: {REGENERATE}",
        stale.join("\n  ")
    );
}

#[test]
fn committed_reports_hold_no_absolute_paths_or_timestamps() {
    let _heavy = crate::common::heavy();
    for (name, bytes) in files(Path::new("reports")) {
        let text = String::from_utf8(bytes).expect("reports are text");
        for needle in ["/work/", "/home/", "/tmp/", "C:\\", "file://"] {
            assert!(!text.contains(needle), "reports/{name} contains {needle}");
        }
        // Descriptions may say "jobs" (queue jobs); the job *count* may not appear.
        for needle in ["--jobs", "jobs 1", "jobs 2", "jobs: "] {
            assert!(
                !text.contains(needle),
                "reports/{name} mentions the job count ({needle})"
            );
        }
    }
}
