//! Conditional writes at the code level: object-store-cas (the write
//! carries the object generation its read returned, If-Match) and
//! cache-lease (memcached's gets/cas behind a best-effort lease) are proved
//! by their shipped nodes at the default bounds (with a lost message, a
//! duplicate or a crash too, docs/model-checking.md: 2–16 M states, too
//! slow for CI);
//! a store that does not check If-Match — the same nodes, the resource
//! built without its condition — is found by the same search, so the
//! proofs are the condition's and not the judge's.

use fencesim::check::ViolationKind;
use fencesim::codecheck::{builtin, check, Builtin};
use fencesim::protocol::resource::{FenceCheck, Resource, ResourceConfig};
use fencesim::protocol::{ProtocolKind, Role};

#[test]
fn object_store_cas_is_proved_by_its_if_match_with_a_paused_holder() {
    super::proved(ProtocolKind::ObjectStoreCas, super::small());
}

#[test]
fn cache_lease_is_proved_by_its_gets_cas_with_a_paused_holder() {
    super::proved(ProtocolKind::CacheLease, super::small());
}

/// The shipped nodes, but the store accepts every write (its If-Match
/// unchecked, as a store that ignores the header does).
pub(super) fn store_ignoring_if_match(role: &Role) -> Builtin {
    match *role {
        Role::Resource(cfg) => Builtin::Resource(Resource::new(ResourceConfig {
            check: FenceCheck::None,
            ..cfg
        })),
        _ => builtin(role),
    }
}

#[test]
fn a_store_that_ignores_if_match_lets_the_paused_holder_overwrite_the_newer_write() {
    let h = super::harness_of(
        ProtocolKind::ObjectStoreCas,
        super::small(),
        store_ignoring_if_match,
    );
    let out = check(&h);
    let c = out
        .counterexample
        .expect("the unchecked condition is found");
    assert_eq!(c.finding.kind, ViolationKind::StaleWrite, "{c:?}");
    assert!(c.shortest, "{c:?}");
}
