//! Code-level counterexamples as scripted scenarios (`check --code P
//! --emit-scenario DIR`): the simulator, running the same nodes under the
//! emitted script, finds the same violation on every seed.

use std::hash::Hash;

use fencesim::check::ViolationKind;
use fencesim::codecheck::to_scenario::{replays, to_scenario};
use fencesim::codecheck::{
    check_protocol, check_protocol_with, Action, Bounds, Counterexample, Harness, Options,
};
use fencesim::protocol::{Node, ProtocolKind};

use super::small;
use crate::common::{fencesim, stdout};

#[test]
fn every_unsafe_protocols_shortest_counterexample_replays_in_the_simulator() {
    // fenced-check-then-write's shortest path with a pause delivers to the
    // paused worker (refused below): its pause-free one is scripted, with
    // two pairs of steps swapped to the simulator's timer order.
    let no_pause = Bounds {
        pauses: 0,
        ..small()
    };
    for (kind, bounds) in [
        (ProtocolKind::RedisSetNx, small()),
        (ProtocolKind::TtlLeaseDel, small()),
        (ProtocolKind::CheckBeforeWrite, small()),
        (ProtocolKind::FencedCheckThenWrite, no_pause),
    ] {
        scripted_and_replayed(kind, bounds);
    }
}

/// `kind`'s shortest counterexample at `bounds`, scripted, and the
/// simulator's finding of it on every seed of the script: its kind.
pub fn scripted_and_replayed(kind: ProtocolKind, bounds: Bounds) -> ViolationKind {
    let (h, out) = check_protocol(kind, bounds).expect("supported");
    let c = out.counterexample.expect("unsafe");
    replayed(&h, &c);
    c.finding.kind
}

/// Counterexample `c` of `h`, scripted, and judged again here apart from
/// the emitter's own acceptance: the simulator finds its violation on
/// every seed of the script. The script.
pub fn replayed<N: Node + Clone + Hash + Eq>(h: &Harness<N>, c: &Counterexample) -> String {
    let id = h.topology.protocol.kind.id();
    let text = to_scenario(h, c, &mut |t| replays(t, 2)).unwrap_or_else(|e| panic!("{id}: {e}"));
    let s = fencesim::scenario::parse(&text, "emitted").expect("valid scenario");
    let r = fencesim::suite::run_scenario(&s, s.seeds.clone(), 2);
    let kind_found = c.finding.kind;
    assert_eq!(
        r.agg.failing_seeds[kind_found as usize], r.agg.seeds,
        "{id}: {kind_found} on every seed\n{text}"
    );
    assert!(r.met(), "{id}: {:?}\n{text}", r.problems);
    text
}

/// `fencesim check --code ARGS --expect unsafe --emit-scenario DIR`
/// reports the script reproduced and writes `file`, which `fencesim run`
/// reproduces; its text.
pub fn emitted_by_the_cli(args: &[&str], file: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_str().expect("utf-8 path");
    let mut argv = vec!["check", "--code"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--expect", "unsafe", "--emit-scenario", path]);
    let out = fencesim(&argv);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("reproduced"), "{text}");
    let file = dir.path().join(file);
    assert!(file.exists(), "{text}");
    let run = fencesim(&["run", file.to_str().expect("utf-8")]);
    assert_eq!(run.status.code(), Some(0), "{}", stdout(&run));
    std::fs::read_to_string(&file).expect("readable")
}

#[test]
fn a_path_that_delivers_to_a_paused_worker_is_scripted_from_the_search_with_the_simulators_pause() {
    // The search's delaying pause lets the worker handle messages; the
    // simulator's holds them. Moving the deliveries past the pause gives
    // no path to the same violation (fenced-check-then-write's pause ends
    // at a timer a delivery during it armed; without its STONITH
    // github-2012-pair's paused active's delayed timers fall due before
    // the passive's fencing timeout), so the emitter scripts the shortest
    // path of the search whose pauses are the simulator's (`pause_holds`)
    // instead, and says so. For fenced-check-then-write that path has no
    // pause at all (22 steps); github-2012-pair's paused active runs its
    // held heartbeat at the pause's end and takes the STONITH after it.
    let unfenced = Options {
        fence: Some(false),
        ..Options::default()
    };
    for (kind, options, step, paused) in [
        (
            ProtocolKind::FencedCheckThenWrite,
            Options::default(),
            12,
            false,
        ),
        (ProtocolKind::Github2012Pair, unfenced, 9, true),
    ] {
        let (h, out) = check_protocol_with(kind, options, small()).expect("supported");
        let c = out.counterexample.expect("unsafe");
        assert!(
            matches!(c.steps[step - 1].0, Action::Deliver(p) if p.to.0 < 2),
            "{}: step {step} reaches a worker: {c:?}",
            kind.id()
        );
        let text = replayed(&h, &c);
        let header = format!(
            "# The search's shortest path ({} steps) delivers to a paused worker",
            c.steps.len()
        );
        assert!(
            text.starts_with(&header)
                && text.contains("Scripted instead: the shortest path whose pauses hold")
                && text.contains("kind = \"pause\"") == paused,
            "{}: {text}",
            kind.id()
        );
    }
}

#[test]
fn check_code_emit_scenario_writes_a_file_that_fencesim_run_reproduces() {
    let text = emitted_by_the_cli(&["ttl-lease-del"], "code-ttl-lease-del-unsafe-release.toml");
    assert!(!text.contains("[clock."), "no clock fault: {text}");
}

#[test]
fn a_counterexample_through_a_coordinator_crash_is_scripted_as_a_crash_fault_and_replays() {
    // Without pauses and with one crash, redis-set-nx's shortest path
    // restarts the coordinator (it forgets the lease) and grants again.
    let bounds = Bounds {
        pauses: 0,
        crashes: 1,
        ..small()
    };
    let (h, out) = check_protocol(ProtocolKind::RedisSetNx, bounds).expect("supported");
    let c = out.counterexample.expect("unsafe");
    let text = to_scenario(&h, &c, &mut |t| replays(t, 2)).expect("scripted");
    assert!(
        text.contains("kind = \"crash\"\nnode = \"coord/0\"")
            && text.contains("restart_after_ms = 0"),
        "{text}"
    );
    let s = fencesim::scenario::parse(&text, "emitted").expect("valid scenario");
    let r = fencesim::suite::run_scenario(&s, s.seeds.clone(), 2);
    assert_eq!(
        r.agg.failing_seeds[c.finding.kind as usize], r.agg.seeds,
        "{text}"
    );
}
