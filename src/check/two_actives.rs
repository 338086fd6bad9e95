//! two_actives: for active/passive pairs, the resource accepted a write
//! from a node X while another node Y, promoted *after* X, believed itself
//! active — two nodes acting as owner of the same resource at one true
//! instant, and the older one's action landed.
//!
//! Precisely, per key, over the history schema only:
//! - a node *believes it is active* from its `became_active` record until
//!   its next `stepped_down` for that key, or its `crash`;
//! - promotions are ordered by their `became_active` records (the
//!   generation of [`super::generations`]: true-time order, never the
//!   epoch a node claims);
//! - a write's generation is the grant its sender acted on when it sent
//!   the send the resource answers (see [`super::generations`]); X is the
//!   sender;
//! - violation: a `write_accepted` of generation g from X while some Y ≠ X
//!   believes it is active under a generation g′ > g. Evidence: X's
//!   `became_active` (if any), Y's `became_active`, the `write_accepted`.
//!   One violation per accepted write, naming the newest such Y.
//!
//! Belief alone is not a failure: a storage that enforces the epoch lets
//! two nodes *think* they are active while only the newer one's writes
//! land. Those intervals are ownership overlaps, counted (informational)
//! by [`super::overlap`].

use std::collections::BTreeMap;

use super::generations::Generations;
use super::{Found, KindSet, ViolationKind};
use crate::history::{fmt_time, Event, History, Kind};
use crate::lookup::Lookup;

#[derive(Clone, Copy, Debug)]
struct Belief {
    generation: u64,
    became_seq: u64,
}

#[derive(Default)]
pub struct TwoActives {
    /// key -> node -> its current promotion.
    active: BTreeMap<u16, BTreeMap<u16, Belief>>,
    /// (node, key) -> seq of its latest `became_active` (kept after stepping down).
    last_became: Lookup<(u16, u16), u64>,
    /// Promotions made while another node believed it was active for the
    /// key (the hazard of `two_actives`).
    pub hazards: u64,
}

/// The records [`TwoActives::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[
    Kind::BecameActive,
    Kind::SteppedDown,
    Kind::Crash,
    Kind::WriteAccepted,
]);

impl TwoActives {
    pub fn clear(&mut self) {
        let TwoActives {
            active,
            last_became,
            hazards,
        } = self;
        active.clear();
        last_became.clear();
        *hazards = 0;
    }

    /// Call after `gens` has observed `e`.
    pub fn observe(&mut self, h: &History, e: &Event, gens: &Generations, out: &mut Found) {
        match e.kind {
            Kind::BecameActive => {
                let Some(key) = e.key else { return };
                let generation = e
                    .grant_id
                    .and_then(|g| gens.generation_of(g))
                    .unwrap_or_else(|| gens.issued_max(key));
                self.last_became.insert((e.node, key), e.seq);
                let others = self
                    .active
                    .get(&key)
                    .is_some_and(|b| b.keys().any(|&n| n != e.node));
                self.hazards += others as u64;
                let belief = Belief {
                    generation,
                    became_seq: e.seq,
                };
                self.active.entry(key).or_default().insert(e.node, belief);
            }
            Kind::SteppedDown => {
                if let Some(believers) = e.key.and_then(|k| self.active.get_mut(&k)) {
                    believers.remove(&e.node);
                }
            }
            Kind::Crash => {
                for believers in self.active.values_mut() {
                    believers.remove(&e.node);
                }
            }
            Kind::WriteAccepted => self.judge(h, e, gens, out),
            _ => {}
        }
    }

    fn judge(&self, h: &History, e: &Event, gens: &Generations, out: &mut Found) {
        let (Some(op), Some(key)) = (e.op_id, e.key) else {
            return;
        };
        let Some(write) = gens.judged_send(op, e.token) else {
            return;
        };
        let Some(believers) = self.active.get(&key) else {
            return;
        };
        let newer = believers
            .iter()
            .filter(|(&node, b)| node != write.node && b.generation > write.generation)
            .max_by_key(|(_, b)| b.generation);
        let Some((&y, belief)) = newer else {
            return;
        };
        assert!(
            belief.became_seq < e.seq,
            "a belief precedes what it judges"
        );
        let evidence = super::evidence([
            self.last_became.get(&(write.node, key)).copied(),
            Some(belief.became_seq),
            Some(e.seq),
        ]);
        out.push(ViolationKind::TwoActives, key, evidence, || {
            format!(
                "{} accepted op {} from {} (promotion {}) at {} while {} (promotion {}, #{}) believed it was active: two actives, and the older one's write landed",
                h.node_name(e.node),
                op,
                h.node_name(write.node),
                write.generation,
                fmt_time(e.t_true_ns).trim(),
                h.node_name(y),
                belief.generation,
                belief.became_seq
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{check, Report, ViolationKind};
    use crate::history::{Event, History, Kind};

    const A: u16 = 0;
    const B: u16 = 1;
    const STORAGE: u16 = 2;
    const MS: u64 = 1_000_000;

    struct H(History);

    impl H {
        fn new() -> H {
            H(History {
                nodes: ["worker/A", "worker/B", "resource/0"]
                    .map(String::from)
                    .to_vec(),
                keys: vec!["doc".into()],
                events: vec![],
            })
        }

        fn push(&mut self, node: u16, kind: Kind, f: impl FnOnce(&mut Event)) -> u64 {
            let seq = self.0.events.len() as u64 + 1;
            let mut e = Event::new(seq, seq * MS, node, kind);
            e.key = Some(0);
            f(&mut e);
            self.0.events.push(e);
            seq
        }
        fn became_active(&mut self, node: u16, grant: u64) -> u64 {
            self.push(node, Kind::BecameActive, |e| {
                e.grant_id = Some(grant);
                e.token = Some(grant);
            })
        }
        fn stepped_down(&mut self, node: u16) -> u64 {
            self.push(node, Kind::SteppedDown, |_| {})
        }
        fn write(&mut self, node: u16, op: u64, accepted: bool) -> u64 {
            self.push(node, Kind::WriteSent, |e| e.op_id = Some(op));
            let kind = if accepted {
                Kind::WriteAccepted
            } else {
                Kind::WriteRejected
            };
            self.push(STORAGE, kind, |e| e.op_id = Some(op))
        }
        fn check(&self) -> Report {
            check(&self.0)
        }
    }

    #[test]
    fn the_older_actives_write_landing_while_the_newer_believes_it_is_active_is_two_actives() {
        let mut h = H::new();
        let a_active = h.became_active(A, 1);
        h.write(A, 1001, true);
        let b_active = h.became_active(B, 2);
        h.write(B, 2001, true);
        let landed = h.write(A, 1002, true);
        let r = h.check();
        assert_eq!(r.count(ViolationKind::TwoActives), 1);
        let v = r
            .violations
            .iter()
            .find(|v| v.kind == ViolationKind::TwoActives)
            .expect("kept");
        assert_eq!(v.evidence, vec![a_active, b_active, landed]);
        assert_eq!(
            r.count(ViolationKind::StaleWrite),
            1,
            "and it is a stale write"
        );
    }

    #[test]
    fn belief_overlap_with_the_old_actives_write_refused_is_only_informational() {
        let mut h = H::new();
        h.became_active(A, 1);
        let b_active = h.became_active(B, 2);
        h.write(A, 1001, false);
        let a_down = h.stepped_down(A);
        h.write(B, 2001, true);
        let r = h.check();
        assert!(r.is_clean(), "{:?}", r.violations);
        assert_eq!(r.info.overlaps, 1);
        assert_eq!(r.info.overlap_ns, (a_down - b_active) * MS);
        assert_eq!(r.info.fence_rejected_total, 1);
    }

    #[test]
    fn the_newer_actives_write_while_the_older_still_believes_is_not_two_actives() {
        let mut h = H::new();
        h.became_active(A, 1);
        h.became_active(B, 2);
        h.write(B, 2001, true);
        assert_eq!(h.check().count(ViolationKind::TwoActives), 0);
    }

    #[test]
    fn a_write_landing_after_the_newer_active_stepped_down_or_crashed_is_not_two_actives() {
        let mut h = H::new();
        h.became_active(A, 1);
        h.became_active(B, 2);
        h.stepped_down(B);
        h.write(A, 1001, true);
        assert_eq!(h.check().count(ViolationKind::TwoActives), 0);

        let mut h = H::new();
        h.became_active(A, 1);
        h.became_active(B, 2);
        h.push(B, Kind::Crash, |e| e.key = None);
        h.write(A, 1001, true);
        let r = h.check();
        assert_eq!(r.count(ViolationKind::TwoActives), 0);
        assert_eq!(r.info.overlaps, 1, "the belief overlap still counts");
    }
}
