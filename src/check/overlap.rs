//! Ownership overlap (informational, never a failure): true-time intervals
//! during which two or more workers believed they held the same key — from
//! receiving a grant until sending its release, giving the op up, or
//! crashing; for an active/passive pair, from `became_active` until
//! `stepped_down` or crashing. Overlap is what a lease cannot prevent;
//! fencing makes it harmless. Reported so a clean run can show the fence was exercised.

use std::collections::BTreeMap;

use super::node_map::NodeMap;
use super::{Info, KindSet};
use crate::history::{Event, Kind};

#[derive(Default)]
pub struct Overlap {
    /// key -> node -> since (true ns)
    believers: BTreeMap<u16, NodeMap<u64>>,
    /// key -> when the current overlap began
    since: BTreeMap<u16, u64>,
}

/// The records [`Overlap::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[
    Kind::GrantReceived,
    Kind::BecameActive,
    Kind::ReleaseSent,
    Kind::OpAbandoned,
    Kind::Crash,
    Kind::SteppedDown,
]);

impl Overlap {
    pub fn clear(&mut self) {
        let Overlap { believers, since } = self;
        believers.clear();
        since.clear();
    }

    pub fn observe(&mut self, e: &Event, info: &mut Info) {
        match e.kind {
            Kind::GrantReceived | Kind::BecameActive => {
                let Some(key) = e.key else { return };
                let b = self.believers.entry(key).or_default();
                b.or_insert(e.node, e.t_true_ns);
                if b.len() == 2 && !self.since.contains_key(&key) {
                    self.since.insert(key, e.t_true_ns);
                    info.overlaps += 1;
                }
            }
            Kind::ReleaseSent | Kind::OpAbandoned | Kind::Crash | Kind::SteppedDown => {
                // A keyless record (a crash) ends the node's belief in every key.
                let only = e.key;
                for (&key, b) in self
                    .believers
                    .iter_mut()
                    .filter(|(k, _)| only.is_none_or(|o| **k == o))
                {
                    b.remove(e.node);
                    if b.len() < 2 {
                        if let Some(start) = self.since.remove(&key) {
                            info.overlap_ns = info
                                .overlap_ns
                                .saturating_add(e.t_true_ns.saturating_sub(start));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    pub fn finish(&mut self, end_ns: u64, info: &mut Info) {
        for (_, start) in std::mem::take(&mut self.since) {
            info.overlap_ns = info.overlap_ns.saturating_add(end_ns.saturating_sub(start));
        }
    }
}
