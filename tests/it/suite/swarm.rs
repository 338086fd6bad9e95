//! `--swarm` over the whole fault catalogue: every kind shows up in some
//! mix, and a swarmed seed (clock faults included) is written out as a
//! scripted scenario that runs the same.

use std::path::Path;

use fencesim::scenario;
use fencesim::sim;
use fencesim::suite::swarm::{self, KINDS};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn swarm_mixes_include_every_fault_kind() {
    let path = root().join("scenarios/random/random-failover-incr-beside-lease.toml");
    let s = scenario::load(&path).expect("loads");
    assert_eq!(swarm::names(swarm::available(&s.options)), KINDS.to_vec());
    let mut union = 0;
    let mut rates = std::collections::BTreeSet::new();
    for seed in 0..300 {
        let (o, mix) = swarm::configure(&s.options, seed);
        union |= mix;
        rates.insert((o.random.pause_probability * 1000.0) as u64);
        assert_eq!(mix & !swarm::available(&s.options), 0);
        let clock_on = o.nodes.iter().any(|n| n.clock.drift_ppm != 0);
        assert_eq!(
            clock_on,
            swarm::names(mix).contains(&"clock"),
            "seed {seed}"
        );
        assert_eq!(
            o.random.failover_probability > 0.0,
            swarm::names(mix).contains(&"failover"),
            "seed {seed}"
        );
    }
    assert_eq!(swarm::names(union), KINDS.to_vec());
    assert!(rates.len() >= 5, "rates drawn per seed: {rates:?}");
}

#[test]
fn a_swarmed_seed_with_a_clock_fault_replays_from_its_scripted_scenario() {
    let path = root().join("scenarios/random/random-faults-fenced-cas.toml");
    let source = std::fs::read_to_string(&path).expect("reads");
    let s = scenario::parse(&source, "random-faults-fenced-cas.toml").expect("parses");
    let mut checked = 0;
    for seed in 0..40 {
        let (o, mix) = swarm::configure(&s.options, seed);
        if !swarm::names(mix).contains(&"clock") {
            continue;
        }
        let a = sim::run(&o, seed, false);
        let text = scenario::emit::scripted(&source, &o, &a.script, seed).expect("emits");
        assert!(text.contains("[clock."), "{text}");
        let scripted =
            scenario::parse(&text, "scripted.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let b = sim::run(&scripted.options, seed, false);
        assert_eq!(a.history.events, b.history.events, "seed {seed}:\n{text}");
        checked += 1;
    }
    assert!(checked >= 5, "{checked} seeds had a clock fault");
}
