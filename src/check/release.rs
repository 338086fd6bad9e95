//! unsafe_release: a release made on behalf of grant g removed the lease
//! record of a different grant — the plain-`DEL` bug: worker A wakes after
//! its lease expired and deletes worker B's newer lock.

use super::generations::Generations;
use super::{Violation, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Default)]
pub struct Releases {}

impl Releases {
    pub fn observe(
        &mut self,
        h: &History,
        e: &Event,
        gens: &Generations,
        out: &mut Vec<Violation>,
    ) {
        if e.kind != Kind::ReleaseApplied {
            return;
        }
        let Some(removed) = e.removed_grant_id else {
            return;
        };
        if e.grant_id == Some(removed) {
            return;
        }
        let issued = |g: u64| gens.grants.get(&g).map(|i| i.issued_seq);
        let mut evidence: Vec<u64> = [e.grant_id.and_then(issued), issued(removed), Some(e.seq)]
            .into_iter()
            .flatten()
            .collect();
        evidence.sort_unstable();
        let on_behalf = e
            .grant_id
            .map_or("no grant".to_string(), |g| format!("grant {g}"));
        out.push(Violation {
            kind: ViolationKind::UnsafeRelease,
            key: e.key.unwrap_or(0),
            evidence,
            explanation: format!(
                "{} removed the lease of grant {removed} on behalf of {on_behalf}: a holder's release deleted someone else's lock",
                h.node_name(e.node)
            ),
        });
    }
}
