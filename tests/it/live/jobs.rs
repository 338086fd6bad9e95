//! `fencesim live --jobs N`: N trials at a time, each job on its own Redis,
//! PostgreSQL and clusters, handed back in the run's order — the output
//! reads as a one-job run's (scenarios in file order, each one's trials in
//! order, one table), the verdicts are the files' own, and every job's
//! servers and clusters are gone afterwards.

use super::cluster_kit::{assert_nothing_left, present, run_roots, started_pids};
use crate::common::live_shared;
use fencesim::live::cluster::ClusterKind;

#[test]
fn a_run_of_three_jobs_prints_its_trials_in_the_runs_order_meets_every_verdict_and_leaves_nothing()
{
    if !present(ClusterKind::Etcd, "live --jobs") || !present(ClusterKind::Zk, "live --jobs") {
        return;
    }
    let _serial = live_shared();
    let out = tempfile::tempdir().unwrap();
    // Longest first, the jobs take the cluster trials before the Redis
    // ones: the order they finish in is not the run's.
    let names = [
        "live-gc-pause-plain-update",
        "live-zk-gc-pause-plain-update",
        "live-etcd-gc-pause-fenced-update",
        "live-gc-pause-fenced-update",
    ];
    let files: Vec<String> = names
        .iter()
        .map(|n| format!("live/{}.toml", n.trim_start_matches("live-")))
        .collect();
    let o = crate::common::fencesim_command()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("live")
        .args(&files)
        .args(["--trials", "2", "--jobs", "3", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "every expectation met, exit 0 ({}):\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let jobs: Vec<&str> = stdout
        .lines()
        .filter_map(|l| {
            l.split(": fencesim")
                .next()
                .filter(|j| j.starts_with("job "))
        })
        .collect();
    assert_eq!(jobs, ["job 1/3", "job 2/3", "job 3/3"], "{stdout}");
    // Headings and trial lines, in the order printed.
    let seen: Vec<String> = stdout
        .lines()
        .filter_map(|l| {
            let t = l.trim_start();
            if l.starts_with("live-") && l.contains(" + ") {
                l.split_whitespace().next().map(str::to_string)
            } else {
                t.starts_with("trial ")
                    .then(|| t.split(':').next().unwrap_or("").to_string())
            }
        })
        .collect();
    let expected: Vec<String> = names
        .iter()
        .flat_map(|n| [n.to_string(), "trial 1/2".into(), "trial 2/2".into()])
        .collect();
    assert_eq!(seen, expected, "{stdout}");
    let table = stdout.split("live vs simulated").nth(1).unwrap_or("");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.trim_start().starts_with("live-"))
        .collect();
    let mut order: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.split_whitespace().next())
        .collect();
    order.dedup();
    assert_eq!(order, names, "{stdout}");
    for name in names {
        for k in [1, 2] {
            let h = out.path().join(format!("{name}-trial-{k}.jsonl"));
            assert!(h.is_file(), "{} missing", h.display());
        }
    }
    let roots = run_roots(&stdout);
    assert_eq!(roots.len(), 3, "{stdout}");
    for root in roots {
        assert_nothing_left(&root, &started_pids(&stdout));
    }
}
