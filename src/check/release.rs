//! unsafe_release: a release made on behalf of grant g removed the lease
//! record of a different grant — the plain-`DEL` bug: worker A wakes after
//! its lease expired and deletes worker B's newer lock.
//!
//! Its hazard (for the vacuity guard, [`super::Info::release_hazards`]): a
//! release applied on behalf of a grant whose lease had already expired —
//! the moment a plain `DEL` would delete someone else's lock.

use super::generations::Generations;
use crate::lookup::LookupSet;

use super::{Found, Info, KindSet, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Default)]
pub struct Releases {
    expired: LookupSet<u64>,
}

/// The records [`Releases::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[Kind::LeaseExpired, Kind::ReleaseApplied]);

impl Releases {
    pub fn clear(&mut self) {
        let Releases { expired } = self;
        expired.clear();
    }

    pub fn observe(
        &mut self,
        h: &History,
        e: &Event,
        gens: &Generations,
        info: &mut Info,
        out: &mut Found,
    ) {
        if e.kind == Kind::LeaseExpired {
            self.expired.extend(e.grant_id);
            return;
        }
        if e.kind != Kind::ReleaseApplied {
            return;
        }
        if e.grant_id.is_some_and(|g| self.expired.contains(&g)) {
            info.release_hazards += 1;
        }
        let Some(removed) = e.removed_grant_id else {
            return;
        };
        if e.grant_id == Some(removed) {
            return;
        }
        let issued = |g: u64| {
            gens.grants
                .get(&g)
                .filter(|_| gens.is_issued(g))
                .map(|i| i.issued_seq)
        };
        let mut evidence: Vec<u64> = [e.grant_id.and_then(issued), issued(removed), Some(e.seq)]
            .into_iter()
            .flatten()
            .collect();
        evidence.sort_unstable();
        out.push(ViolationKind::UnsafeRelease, e.key.unwrap_or(0), evidence, || {
            let on_behalf = e
                .grant_id
                .map_or("no grant".to_string(), |g| format!("grant {g}"));
            format!(
                "{} removed the lease of grant {removed} on behalf of {on_behalf}: a holder's release deleted someone else's lock",
                h.node_name(e.node)
            )
        });
    }
}
