//! The effect protocols against their models (`models/effect-*.toml`:
//! fenced-cas and an effect sink): the abstract naive model finds
//! duplicate_effect, the key and outbox models are safe with the repeat
//! reaching the sink; the shipped code refines each model (every step a
//! stutter or one model action), and a sink that ignores the idempotency
//! key — the same nodes otherwise — diverges where it performs an effect
//! a second time, which the keyed model does not allow.

use fencesim::codecheck::{
    builtin, model_of, refine, refine_protocol, Action, Bounds, Builtin, Refinement, Wraps,
};
use fencesim::model::{
    load, prove, shortest_counterexample, Event, LockModel, ModelSpec, Protocol, Violation,
};
use fencesim::protocol::{Clocks, Effect, Input, Msg, Node, ProtocolKind, Role};

fn spec(name: &str) -> ModelSpec {
    let path = format!("{}/models/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    load(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_naive_model_performs_a_retried_effect_twice_in_seven_steps() {
    let model = LockModel::new(spec("effect-naive").bounds);
    let search = shortest_counterexample(&model, Violation::DuplicateEffect, None);
    let c = search
        .counterexample
        .expect("duplicate_effect is reachable");
    let events: Vec<Event> = c.steps.iter().map(|s| s.event).collect();
    assert_eq!(events.len(), 7, "{:#?}", c.steps);
    assert!(matches!(
        events[3..],
        [
            Event::EffectRequested {
                generation: 1,
                copies: 1
            },
            Event::EffectRequested {
                generation: 1,
                copies: 2
            },
            Event::EffectDelivered {
                generation: 1,
                performed: true
            },
            Event::EffectDelivered {
                generation: 1,
                performed: true
            },
        ]
    ));
}

#[test]
fn the_keyed_models_are_safe_and_a_repeated_request_reaches_their_sink() {
    for (name, protocol) in [
        ("effect-idempotency-key", Protocol::EffectIdempotencyKey),
        ("effect-outbox", Protocol::EffectOutbox),
    ] {
        let s = spec(name);
        assert_eq!(s.bounds.protocol, protocol);
        let model = LockModel::new(s.bounds);
        let proof = prove(&model, 2, None);
        assert!(proof.violated.is_empty(), "{name}: {:?}", proof.violated);
        assert_eq!(proof.stats.unique_states, 55_313, "{name}");
        assert!(
            proof
                .reached
                .contains(&"repeated_effect_request_reaches_sink"),
            "{name}"
        );
        assert_eq!(proof.reached.len(), model.witnesses().len(), "{name}");
        // The same bounds without the key: the repeat is a duplicate.
        let naive = LockModel::new(fencesim::model::Bounds {
            protocol: Protocol::EffectNaive,
            ..s.bounds
        });
        let proof = prove(&naive, 2, None);
        assert_eq!(proof.violated, vec![Violation::DuplicateEffect], "{name}");
    }
}

fn refines(r: &Refinement) {
    assert!(r.passed() && r.counts.steps > 0, "{:?}", r.divergence);
    // The sink's actions (SendEffect, DeliverEffect) are `other`.
    let [acquire, expire, send, deliver, .., other] = r.counts.by_action;
    assert!(
        acquire > 0 && expire > 0 && send > 0 && deliver > 0 && other > 0,
        "{:?}",
        r.counts
    );
}

#[test]
fn effect_naive_refines_its_model_at_the_default_bounds() {
    let kind = ProtocolKind::EffectNaive;
    assert_eq!(
        model_of(kind).map(|of| of.spec),
        Ok("models/effect-naive.toml")
    );
    let (_, r) = refine_protocol(kind, super::small()).expect("mapped");
    refines(&r);
    assert_eq!(r.outcome.unique_states, 1_161_487);
    let met = r.outcome.counterexample.expect("the search met one");
    assert_eq!(
        met.finding.kind.name(),
        "superseded_effect",
        "not a model property"
    );
}

/// The outbox's dispatcher polls and retransmits: its space at 4 in
/// flight passes 6,000,000 states; at 2 it is exhausted.
fn outbox_bounds() -> Bounds {
    Bounds {
        in_flight_max: 2,
        ..super::small()
    }
}

#[test]
fn effect_outbox_refines_its_model_with_two_messages_in_flight() {
    let (_, r) = refine_protocol(ProtocolKind::EffectOutbox, outbox_bounds()).expect("mapped");
    refines(&r);
    assert_eq!(r.outcome.unique_states, 268_637);
    assert!(r.outcome.counterexample.is_none(), "the outbox is proved");
}

/// One copy of a message, no pause, 10 ms: where a keyed request can be
/// delivered twice.
fn one_copy() -> Bounds {
    Bounds {
        duplicates: 1,
        pauses: 0,
        horizon_ms: 10,
        ..super::small()
    }
}

/// Every node of the protocol; the sink drops the idempotency key of each
/// request it is handed when `blind`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct KeyBlind {
    node: Builtin,
    blind: bool,
}

impl Node for KeyBlind {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let input = match input {
            Input::Message {
                from,
                msg: Msg::Effect { req, key, op, .. },
            } if self.blind && matches!(self.node, Builtin::Sink(_)) => Input::Message {
                from,
                msg: Msg::Effect {
                    req,
                    key,
                    op,
                    idem_key: None,
                },
            },
            other => other,
        };
        self.node.handle(clocks, input, fx)
    }
}

impl Wraps for KeyBlind {
    fn wrapped(&self) -> &Builtin {
        &self.node
    }
}

fn key_blind(role: &Role) -> KeyBlind {
    KeyBlind {
        node: builtin(role),
        blind: true,
    }
}

fn key_kept(role: &Role) -> KeyBlind {
    KeyBlind {
        node: builtin(role),
        blind: false,
    }
}

#[test]
fn a_sink_that_ignores_the_idempotency_key_diverges_where_it_performs_a_copy_again() {
    // The copy of the worker's call; the dispatcher's retransmission
    // after its 6 ms timeout (its poll round trip first).
    for (kind, bounds, steps) in [
        (ProtocolKind::EffectIdempotencyKey, one_copy(), 12),
        (ProtocolKind::EffectOutbox, outbox_bounds(), 17),
    ] {
        let id = kind.id();
        let r = refine(&super::harness_of(kind, bounds, key_blind)).expect("mapped");
        let d = r.divergence.expect("the key-blind sink diverges");
        assert!(d.shortest, "{id}: {:?}", d.path);
        let (last, _) = d.path.last().expect("a path to the step");
        assert!(
            matches!(last, Action::Deliver(p) if matches!(p.msg, Msg::Effect { .. })),
            "{id}: the step hands the sink a request: {last:?}"
        );
        assert_eq!(d.path.len(), steps, "{id}: {:?}", d.path);
        let expected = d.expected.expect("the closest model step");
        assert!(
            expected.step.contains("does not perform it again"),
            "{id}: {expected:?}"
        );
        assert!(
            expected
                .differences
                .iter()
                .any(|f| f.starts_with("violations: model none, code duplicate_effect")),
            "{id}: {expected:?}"
        );
    }
    // The same wrapper with the key kept refines the model.
    let r = refine(&super::harness_of(
        ProtocolKind::EffectIdempotencyKey,
        one_copy(),
        key_kept,
    ))
    .expect("mapped");
    refines(&r);
}

#[test]
fn a_lost_request_to_the_sink_is_refused_not_approximated() {
    let bounds = Bounds {
        losses: 1,
        pauses: 0,
        ..super::small()
    };
    let why = refine_protocol(ProtocolKind::EffectNaive, bounds)
        .err()
        .expect("refused");
    assert!(
        why.starts_with("effect-naive: no refinement with losses"),
        "{why}"
    );
}
