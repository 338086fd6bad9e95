//! The Python reference implementations through `fencesim validate`: the
//! correct one is clean, the group-commit one is caught losing an
//! acknowledged write — by the same harness, on the same scenarios.

use std::path::{Path, PathBuf};

use fencesim::check::store_claims::{self, ClaimKind};
use fencesim::protocol::resource::FenceCheck;
use fencesim::protocol::Role;
use fencesim::validate::{self, Implementations, Limits};
use fencesim::{scenario, sim};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python(script: &str) -> String {
    format!(
        "python3 {}",
        root().join("examples/python").join(script).display()
    )
}

const GC_PAUSE: &str = "scenarios/article/gc-pause-fenced-cas.toml";
const CRASH_AFTER_ACK: &str = "examples/python/scenarios/resource-crash-after-ack.toml";

fn validate_cli(script: &str, seeds: u64) -> (i32, String) {
    let cmd = python(script);
    crate::common::run_text(
        crate::common::fencesim_command()
            .args(["validate", "--seeds", &seeds.to_string(), "--jobs", "2"])
            .arg("--node")
            .arg(format!("coordinator={cmd}"))
            .arg("--node")
            .arg(format!("resource={cmd}"))
            .args([GC_PAUSE, CRASH_AFTER_ACK]),
    )
}

fn row<'a>(text: &'a str, scenario: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(scenario))
        .unwrap_or_else(|| panic!("no table row for {scenario} in:\n{text}"))
}

#[test]
fn the_correct_python_reference_is_clean_on_every_seed_of_both_scenarios() {
    let (code, text) = validate_cli("fencelock.py", 4);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("verdict: CLEAN"), "{text}");
    for scenario in ["gc-pause-fenced-cas", "resource-crash-after-ack"] {
        let cells: Vec<&str> = row(&text, scenario).split_whitespace().collect();
        assert_eq!(&cells[1..6], ["4", "4", "0", "0", "-"], "{text}");
    }
}

#[test]
fn the_group_commit_reference_loses_an_acknowledged_write_and_the_evidence_says_which() {
    let (code, text) = validate_cli("fencelock_ack_before_fsync.py", 4);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("verdict: VIOLATIONS in 4 runs"), "{text}");
    // Same harness, same scenarios: no crash, no loss.
    let gc: Vec<&str> = row(&text, "gc-pause-fenced-cas")
        .split_whitespace()
        .collect();
    assert_eq!(&gc[1..6], ["4", "4", "0", "0", "-"], "{text}");
    let crash = row(&text, "resource-crash-after-ack");
    assert!(crash.contains("acked_write_lost×4"), "{text}");
    // The evidence: A's write acknowledged, then B's read served the old value.
    let evidence = text
        .split("VIOLATION acked_write_lost on key doc:")
        .nth(1)
        .expect("an acked_write_lost violation is shown");
    let mut lines = evidence.lines().skip(1);
    let ack = lines.next().unwrap_or_default();
    let read = lines.next().unwrap_or_default();
    assert!(
        ack.contains("resource/0") && ack.contains("write_accepted op=1001"),
        "{text}"
    );
    assert!(
        read.contains("read_served op=2001 value=0") && read.contains("outcome=ok"),
        "{text}"
    );
    assert!(text.contains("repro: fencesim validate"), "{text}");
}

#[test]
fn the_correct_python_reference_produces_the_same_history_as_the_built_in_nodes() {
    let s = scenario::load(&root().join(GC_PAUSE)).expect("scenario");
    let cmd = python("fencelock.py");
    let impls = Implementations {
        coordinator: Some(cmd.clone()),
        resource: Some(cmd),
        worker: None,
    };
    for seed in 0..3 {
        let built_in = sim::run(&s.options, seed, false);
        let judged = validate::run_seed(&s.options, seed, &impls, Limits::default(), false)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(judged.history, built_in.history, "seed {seed}");
        assert_eq!(judged.report.info.fence_rejected_total, 1, "seed {seed}");
        let again = validate::run_seed(&s.options, seed, &impls, Limits::default(), false)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(again.trace_hash, judged.trace_hash, "seed {seed} replays");
    }
}

#[test]
fn the_built_in_store_keeps_its_own_claims_in_every_bundled_scenario() {
    let dirs: Vec<PathBuf> = ["scenarios", "examples/python/scenarios"]
        .iter()
        .map(|d| root().join(d))
        .collect();
    let files = scenario::collect(&dirs).expect("scenarios");
    assert!(files.len() >= 10);
    let mut reads = 0;
    let mut broken_by_check_then_write = 0;
    for file in files {
        let s = scenario::load(&file).expect("scenario");
        // The fence rule each store is told, held against the built-in store too.
        let resource = s.options.nodes.iter().find_map(|n| match &n.role {
            Role::Resource(cfg) => Some(*cfg),
            _ => None,
        });
        // If-Match stores compare generations, not tokens: no token rule to keep.
        let rule = resource
            .filter(|c| c.check != FenceCheck::GenerationMatch)
            .as_ref()
            .and_then(validate::fence_rule);
        // The catalogue's broken stores: check-then-write races, a volatile fence forgets.
        let racy = resource.is_some_and(|c| {
            matches!(c.check, FenceCheck::CheckThenWrite { .. }) || c.volatile_fence
        });
        for seed in 0..5 {
            let h = sim::run(&s.options, seed, false).history;
            let claims = store_claims::check_with_rule(&h, rule);
            if racy {
                // The rule catches what they let through.
                broken_by_check_then_write += claims.count(ClaimKind::FenceRuleBroken);
                continue;
            }
            assert!(
                claims.is_clean(),
                "{} seed {seed}: {:?}",
                file.display(),
                claims.violations
            );
            reads += claims.reads_judged;
        }
    }
    assert!(reads > 100, "the check judged only {reads} reads");
    assert!(
        broken_by_check_then_write > 0,
        "the catalogue's broken stores never broke their fence rule"
    );
    // The pair: the same check on the group-commit store finds the loss.
    let s = scenario::load(&root().join(CRASH_AFTER_ACK)).expect("scenario");
    let buggy = python("fencelock_ack_before_fsync.py");
    let impls = Implementations {
        resource: Some(buggy),
        ..Implementations::default()
    };
    let judged = validate::run_seed(&s.options, 0, &impls, Limits::default(), false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(judged.claims.count(ClaimKind::AckedWriteLost), 1);
}

#[test]
fn a_daemon_an_implementation_started_is_ended_with_its_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let s = scenario::load(&root().join(GC_PAUSE)).expect("scenario");
    let impls = Implementations {
        coordinator: Some(format!(
            "FAKE_PIDFILE={} {} daemon 0",
            pidfile.display(),
            python("fakes/misbehaving.py")
        )),
        ..Implementations::default()
    };
    let judged = validate::run_seed(&s.options, 0, &impls, Limits::default(), false)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(judged.is_clean(), "{}", judged.render());
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile)
        .expect("pids recorded")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(pids.len(), 2, "the node and its daemon: {pids:?}");
    for pid in pids {
        // Gone, not even a zombie: the harness reaped what it adopted.
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} outlived its run"
        );
    }
}

#[test]
fn the_reference_coordinator_times_leases_on_the_monotonic_clock_so_a_wall_jump_loses_nothing() {
    // The built-in coordinator times leases on the wall clock (as Redis
    // does): the jump ends A's lease early and an update is lost, every seed.
    let (code, text) = {
        let out = crate::common::fencesim_command()
            .args(["validate", "--seeds", "3", "--jobs", "2", "--node"])
            .arg(format!("coordinator={}", python("fencelock.py")))
            .arg("examples/python/scenarios/coordinator-clock-jump.toml")
            .output()
            .expect("run fencesim");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, 0, "{text}");
    let cells: Vec<&str> = row(&text, "coordinator-clock-jump")
        .split_whitespace()
        .collect();
    assert_eq!(
        &cells[1..],
        ["3", "3", "0", "0", "-", "-", "lost_update×3"],
        "{text}"
    );
}
