//! Stores that are their own lock, at the code level: single-db (the row
//! lock and the data in one database, an idle transaction aborted after
//! the TTL) and queue-claim (a claim with a visibility timeout, results
//! keyed by job) are proved by their shipped nodes with a paused worker and
//! with a crash of any node. Their unsafe twin is a lease beside the store
//! (`redis-set-nx`, found in `mod.rs`). A database that never writes its
//! transaction counter down reissues a transaction id after a crash, and
//! the same search finds it.

use fencesim::check::ViolationKind;
use fencesim::codecheck::{builtin, check, Bounds, Builtin};
use fencesim::protocol::{Clocks, Effect, Input, Node, ProtocolKind, Role};

fn crash_no_pause() -> Bounds {
    Bounds {
        crashes: 1,
        pauses: 0,
        horizon_ms: 12,
        ..super::small()
    }
}

#[test]
fn single_db_and_queue_claim_are_proved_with_a_paused_worker() {
    for kind in [ProtocolKind::SingleDb, ProtocolKind::QueueClaim] {
        super::proved(kind, super::small());
    }
}

#[test]
fn single_db_and_queue_claim_are_proved_with_a_crash_of_any_node() {
    for kind in [ProtocolKind::SingleDb, ProtocolKind::QueueClaim] {
        super::proved(kind, crash_no_pause());
    }
}

/// The shipped nodes, but the store's `Persist` effects are dropped: its
/// transaction counter (and its rows) never reach the disk.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Unsynced(Builtin);

impl Node for Unsynced {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let before = fx.len();
        self.0.handle(clocks, input, fx);
        if matches!(self.0, Builtin::Db(_)) {
            super::broken::drop_persists(fx, before);
        }
    }
}

fn unsynced(role: &Role) -> Unsynced {
    Unsynced(builtin(role))
}

#[test]
fn a_database_that_never_syncs_its_transaction_counter_reissues_an_id_after_a_crash() {
    let h = super::harness_of(ProtocolKind::SingleDb, crash_no_pause(), unsynced);
    let out = check(&h);
    let c = out.counterexample.expect("the unsynced counter is found");
    assert_eq!(c.finding.kind, ViolationKind::TokenOrder, "{c:?}");
    assert!(c.shortest, "{c:?}");
}
