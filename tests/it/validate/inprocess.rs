//! The in-process example (examples/inprocess_node.rs) as a test: a node
//! written outside fencesim, against the public `Node` trait, runs under
//! `sim::run_with` and the checker — its fenced form clean, its unfenced
//! twin caught on the same scenario; and the same store checked
//! exhaustively at the code level (`codecheck::own`) and refined against
//! the fenced-cas model — which also catches a store that is safe but
//! refuses what the model accepts.

#[allow(dead_code)]
#[path = "../../../examples/inprocess_node.rs"]
mod inprocess_node;

use std::path::Path;

#[test]
fn a_user_written_fenced_store_is_clean_and_its_unfenced_twin_writes_stale() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/article/gc-pause-fenced-cas.toml");
    let fenced = inprocess_node::run_with_my_store(&path, true, 0..20);
    assert!(fenced.failing.is_empty(), "{:?}", fenced.failing);
    assert_eq!(
        fenced.fence_rejections, 20,
        "one stale write fenced off per seed"
    );

    let unfenced = inprocess_node::run_with_my_store(&path, false, 0..20);
    assert_eq!(unfenced.failing.len(), 20);
    assert!(unfenced
        .failing
        .iter()
        .all(|(_, kinds)| kinds.contains(&"stale_write")));
}

#[test]
fn a_user_written_store_is_proved_at_the_code_level_and_its_unfenced_twin_gets_a_shortest_stale_write(
) {
    use fencesim::codecheck::{check_protocol, Bounds};
    use fencesim::protocol::ProtocolKind;

    let (_, fenced) = inprocess_node::code_check_my_store(true);
    assert!(fenced.proved() && fenced.vacuity_ok(), "{fenced:?}");
    // MyStore keeps what the shipped resource keeps (value and fence per
    // key), so the space is the built-in fenced-cas's, state for state.
    let kind = ProtocolKind::FencedCas;
    let (_, shipped) = check_protocol(kind, Bounds::for_protocol(kind)).expect("supported");
    assert_eq!(fenced.unique_states, shipped.unique_states);

    let (_, unfenced) = inprocess_node::code_check_my_store(false);
    let c = unfenced
        .counterexample
        .expect("the unfenced store is caught");
    assert_eq!(c.finding.kind.name(), "stale_write");
    assert!(c.shortest, "a shortest path");
    assert_eq!(c.steps.len(), 16, "{c:?}");
}

#[test]
fn a_user_written_store_refines_the_fenced_cas_model_and_its_unfenced_twin_departs_where_it_writes_stale(
) {
    let (_, fenced) = inprocess_node::refine_my_store(true);
    assert!(fenced.passed(), "{:?}", fenced.divergence);
    assert_eq!(fenced.outcome.unique_states, 749_039, "the proof's space");
    let (_, unfenced) = inprocess_node::refine_my_store(false);
    let d = unfenced
        .divergence
        .expect("the model fences the stale write");
    assert_eq!(d.path.len(), 16, "the shortest stale write's last step");
    let expected = d.expected.expect("a closest model step");
    assert!(
        expected.step.contains("rejects the write of generation 1"),
        "{expected:?}"
    );
}

/// `MyStore` with a bug no safety property sees: once a row has a value it
/// refuses every write (a fence compared with `<=` against a write counter,
/// say). Nothing stale is ever accepted.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct WriteOnce(inprocess_node::MyStore);

impl fencesim::protocol::Node for WriteOnce {
    fn handle(
        &mut self,
        clocks: fencesim::protocol::Clocks,
        input: fencesim::protocol::Input<'_>,
        fx: &mut Vec<fencesim::protocol::Effect>,
    ) {
        use fencesim::codecheck::StoreView;
        use fencesim::protocol::{Effect, Input, Msg, OpId};
        if let Input::Message {
            from,
            msg: Msg::Write { req, key, op, .. },
        } = input
        {
            let (value, fence) = self.0.row(key);
            if value != OpId::INITIAL {
                let msg = Msg::WriteRejected {
                    req,
                    key,
                    op,
                    fence,
                };
                fx.push(Effect::Send { to: from, msg });
                return;
            }
        }
        self.0.handle(clocks, input, fx)
    }
}

impl fencesim::codecheck::StoreView for WriteOnce {
    fn row(
        &self,
        key: fencesim::protocol::Key,
    ) -> (fencesim::protocol::OpId, fencesim::protocol::Token) {
        self.0.row(key)
    }
}

fn write_once(role: &fencesim::protocol::Role) -> fencesim::codecheck::Own<WriteOnce> {
    use fencesim::codecheck::Own;
    match role {
        fencesim::protocol::Role::Resource(_) => {
            Own::Mine(WriteOnce(inprocess_node::MyStore::new(true)))
        }
        other => Own::Builtin(fencesim::codecheck::builtin(other)),
    }
}

#[test]
fn a_store_that_refuses_every_second_write_is_proved_safe_but_does_not_refine_its_model() {
    use fencesim::codecheck::{check, own, refine, Bounds};
    use fencesim::protocol::ProtocolKind;
    let kind = ProtocolKind::FencedCas;
    let h = own::harness(kind, Bounds::for_protocol(kind), write_once).expect("a topology");
    let out = check(&h);
    assert!(
        out.proved() && out.vacuity_ok(),
        "safe, not vacuously: {out:?}"
    );
    let r = refine(&h).expect("mapped");
    // The model has no step that drops the newer holder's write at a
    // fence it passes: the nearest is doing nothing, the write still due.
    let d = r
        .divergence
        .expect("the model accepts the newer holder's write");
    let expected = d.expected.expect("a closest model step");
    assert_eq!(
        expected.differences,
        ["writes: model [g2/t2], code []"],
        "{expected:?}"
    );
}
