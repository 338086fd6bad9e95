//! The determinism self-check can fail: a node with a hidden input (a
//! counter shared across runs) makes two runs of one seed differ, and the
//! check names the first event where they part.

use std::sync::atomic::{AtomicU64, Ordering};

use fencesim::protocol::{self, Clocks, Effect, Input, Node, NodeId, Role};
use fencesim::sim;
use fencesim::suite::determinism::first_difference;

static RUNS: AtomicU64 = AtomicU64::new(0);

/// Wraps a built-in node and stretches its timers by a nanosecond on every
/// other run: invisible in any one run, different between two.
struct Leaky {
    inner: Box<dyn Node>,
    skew_ns: u64,
}

impl Node for Leaky {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, effects: &mut Vec<Effect>) {
        self.inner.handle(clocks, input, effects);
        for e in effects.iter_mut() {
            if let Effect::SetTimer { after_ns, .. } = e {
                *after_ns += self.skew_ns;
            }
        }
    }
}

fn leaky_run(opts: &sim::Options, seed: u64) -> sim::RunOutcome {
    let skew_ns = RUNS.fetch_add(1, Ordering::SeqCst) % 2;
    let mut build = |_: NodeId, role: &Role| -> Box<dyn Node> {
        Box::new(Leaky {
            inner: protocol::build(role),
            skew_ns,
        })
    };
    sim::run_with(opts, seed, true, &mut build)
}

#[test]
fn a_hidden_input_is_caught_and_the_first_differing_event_named() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/article/gc-pause-stale-write.toml"
    );
    let s = fencesim::scenario::load(std::path::Path::new(path)).unwrap();
    let a = leaky_run(&s.options, 7);
    let b = leaky_run(&s.options, 7);
    assert_ne!(a.trace_hash, b.trace_hash);
    let diff = first_difference(&s.options, &a, &b).expect("the traces differ");
    assert!(diff.starts_with("first differing event is #"), "{diff}");
    assert!(diff.contains("run 1:") && diff.contains("run 2:"), "{diff}");
}

#[test]
fn the_built_in_simulator_has_no_hidden_input() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/random/random-faults-fenced-cas.toml"
    );
    let s = fencesim::scenario::load(std::path::Path::new(path)).unwrap();
    for seed in [0, 1, 261] {
        let a = sim::run(&s.options, seed, true);
        let b = sim::run(&s.options, seed, true);
        assert_eq!(first_difference(&s.options, &a, &b), None);
        assert_eq!(a.trace_hash, b.trace_hash);
    }
}
