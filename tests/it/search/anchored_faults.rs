//! Anchored (BUGGIFY-style) random faults: drawn per seed from their own
//! stream, struck right after protocol events, replayed exactly from the
//! seed and written out as a scripted scenario that runs the same.

use std::path::Path;

use fencesim::history::Kind;
use fencesim::scenario::{self, Scenario};
use fencesim::sim::{self, faults, Fault, When};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const GENERIC: &str = "scenarios/random/random-faults-fenced-cas.toml";

fn source_with_anchored() -> String {
    let source = std::fs::read_to_string(root().join(GENERIC)).expect("bundled scenario");
    source.replace(
        "[random]\n",
        "[random]\nanchored_probability = 0.9\nanchored_max = 2\n",
    )
}

fn anchored() -> Scenario {
    scenario::parse(&source_with_anchored(), GENERIC).unwrap_or_else(|e| panic!("{e}"))
}

fn is_anchored(f: &Fault) -> bool {
    matches!(
        f,
        Fault::Pause {
            when: When::After { .. },
            ..
        } | Fault::Crash {
            when: When::After { .. },
            ..
        } | Fault::Failover {
            when: When::After { .. },
            ..
        }
    )
}

#[test]
fn anchored_faults_strike_right_after_protocol_events_of_the_vocabulary() {
    let s = anchored();
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..100 {
        for f in faults::resolve_anchored(&s.options, seed) {
            let (Fault::Pause { when, .. }
            | Fault::Crash { when, .. }
            | Fault::Failover { when, .. }) = &f
            else {
                panic!("not a node fault: {f:?}");
            };
            let When::After { kind, nth, .. } = when else {
                panic!("not anchored: {f:?}");
            };
            assert!(*nth >= 1);
            kinds.insert(kind.name());
        }
    }
    for k in [
        Kind::GrantReceived,
        Kind::ReadOk,
        Kind::WriteSent,
        Kind::GrantIssued,
        Kind::WriteAccepted,
    ] {
        assert!(kinds.contains(k.name()), "{k} never drawn: {kinds:?}");
    }
}

#[test]
fn anchored_faults_shift_no_existing_draw() {
    let plain = scenario::load(&root().join(GENERIC)).expect("loads");
    let s = anchored();
    for seed in 0..200 {
        let before = faults::resolve_random(&plain.options, seed);
        let after = faults::resolve_random(&s.options, seed);
        assert_eq!(&after[..before.len()], &before[..], "seed {seed}");
        assert!(after[before.len()..].iter().all(is_anchored), "seed {seed}");
        assert_eq!(
            sim::run(&plain.options, seed, false).trace_hash,
            {
                let mut off = s.options.clone();
                off.random.anchored_probability = 0.0;
                sim::run(&off, seed, false).trace_hash
            },
            "seed {seed}: the knob off is the plain run"
        );
    }
}

#[test]
fn anchored_faults_replay_exactly_from_the_seed_and_from_the_scripted_scenario() {
    let s = anchored();
    let mut with_anchored = 0;
    for seed in 0..30 {
        let a = sim::run(&s.options, seed, false);
        let b = sim::run(&s.options, seed, false);
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
        assert_eq!(a.history, b.history, "seed {seed}");
        if !a.script.iter().any(is_anchored) {
            continue;
        }
        with_anchored += 1;
        let text = scenario::emit::scripted(&source_with_anchored(), &s.options, &a.script, seed)
            .expect("emits");
        assert!(text.contains("after = "), "{text}");
        let scripted =
            scenario::parse(&text, "scripted.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(scripted.options.random.anchored_probability, 0.0);
        let c = sim::run(&scripted.options, seed, false);
        assert_eq!(c.history.events, a.history.events, "seed {seed}:\n{text}");
    }
    assert!(
        with_anchored >= 20,
        "{with_anchored}/30 seeds had anchored faults"
    );
}

#[test]
fn an_anchored_probability_out_of_range_is_a_located_error() {
    let text =
        source_with_anchored().replace("anchored_probability = 0.9", "anchored_probability = 1.5");
    let err = scenario::parse(&text, "x.toml")
        .expect_err("rejected")
        .to_string();
    assert!(err.starts_with("x.toml:"), "{err}");
    assert!(err.contains("probability"), "{err}");
}
