//! Effect sinks at the code level: a provider (`sink/0`) that cannot check
//! tokens beside the fenced resource. Calling it straight from the worker
//! (effect-naive) lets a holder whose lease lapsed after its fenced write
//! make its call after the next holder was granted (superseded_effect), and
//! a retransmitted call is performed twice (duplicate_effect); an
//! idempotency key stops the second performance but not the late first one;
//! the transactional outbox (effect-outbox: the write and its effect in one
//! commit, one dispatcher calling the sink) is proved. Each counterexample
//! is scripted and the simulator finds it on every seed.

use fencesim::check::ViolationKind;
use fencesim::codecheck::Bounds;
use fencesim::protocol::ProtocolKind;

use super::emit::scripted_and_replayed;

fn one_duplicate() -> Bounds {
    Bounds {
        duplicates: 1,
        ..super::small()
    }
}

#[test]
fn a_direct_call_after_the_lease_lapsed_is_performed_after_the_next_grant() {
    for kind in [
        ProtocolKind::EffectNaive,
        ProtocolKind::EffectIdempotencyKey,
    ] {
        let found = scripted_and_replayed(kind, super::small());
        assert_eq!(found, ViolationKind::SupersededEffect, "{}", kind.id());
    }
}

#[test]
fn a_duplicated_call_is_performed_twice_unless_it_carries_an_idempotency_key() {
    let naive = scripted_and_replayed(ProtocolKind::EffectNaive, one_duplicate());
    assert_eq!(naive, ViolationKind::DuplicateEffect);
    // The same bounds: the key dedups the copy, and what is left is the
    // late first call.
    let keyed = scripted_and_replayed(ProtocolKind::EffectIdempotencyKey, one_duplicate());
    assert_eq!(keyed, ViolationKind::SupersededEffect);
}

#[test]
fn the_transactional_outbox_is_proved_also_with_a_duplicated_message() {
    // Two in flight: the dispatcher's polling round trips multiply the
    // space (4 in flight at 12 ms: 10,014,863 states, 87 s).
    let two_in_flight = Bounds {
        in_flight_max: 2,
        ..super::small()
    };
    super::proved(ProtocolKind::EffectOutbox, two_in_flight);
    super::proved(
        ProtocolKind::EffectOutbox,
        Bounds {
            duplicates: 1,
            ..two_in_flight
        },
    );
}
