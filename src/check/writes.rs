//! Checks over what the resource accepted: `stale_write` and `lost_update`
//! (violations), and the informational counters around them —
//! `stale_attempts`, `fence_rejected_total`, `late_writes`.
//!
//! stale_write: the resource accepts a write of generation g after it
//! already accepted one of generation g′ > g. Lease expiry plays no part.
//!
//! lost_update: a write W is applied while the current value came from a
//! different op than the one W's own read returned — W overwrote a value its
//! writer never saw. A redelivery of the op that wrote the current value is
//! not an overwrite; a write with no read (blind write) is not judged.

use std::collections::{BTreeMap, BTreeSet};

use super::generations::Generations;
use super::{Info, Violation, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Clone, Copy, Default)]
struct KeyState {
    /// Highest generation accepted, and the accept record that set it.
    accepted_max: Option<(u64, u64)>,
    /// Op id of the current value (0 = initial).
    current_op: u64,
}

#[derive(Default)]
pub struct Writes {
    keys: BTreeMap<u16, KeyState>,
    /// op id -> (value seen, read_ok seq) of its first read result.
    reads: BTreeMap<u64, (u64, u64)>,
    /// key -> accepted writes in order: (accept seq, op id).
    accepted_log: BTreeMap<u16, Vec<(u64, u64)>>,
    /// grants whose lease the coordinator dropped.
    expired: BTreeSet<u64>,
}

impl Writes {
    pub fn observe(
        &mut self,
        h: &History,
        e: &Event,
        gens: &Generations,
        info: &mut Info,
        out: &mut Vec<Violation>,
    ) {
        match e.kind {
            Kind::ReadOk => {
                if let (Some(op), Some(value)) = (e.op_id, e.value) {
                    self.reads.entry(op).or_insert((value, e.seq));
                }
            }
            Kind::LeaseExpired => {
                if let Some(g) = e.grant_id {
                    self.expired.insert(g);
                }
            }
            Kind::WriteAccepted | Kind::WriteRejected => {
                let (Some(op), Some(key)) = (e.op_id, e.key) else {
                    return;
                };
                let write = gens.writes.get(&op).copied();
                let generation = write.map_or(0, |w| w.generation);
                let superseded = generation < gens.received_max(key);
                if superseded {
                    info.stale_attempts += 1;
                }
                if e.kind == Kind::WriteRejected {
                    if superseded {
                        info.fence_rejected_total += 1;
                    } else {
                        info.fence_rejected_same_generation += 1;
                    }
                    return;
                }
                info.writes_accepted += 1;
                let grant = write.and_then(|w| w.grant_id);
                if grant.is_some_and(|g| self.expired.contains(&g))
                    && generation == gens.issued_max(key)
                {
                    info.late_writes += 1;
                }
                self.check_stale(h, e, key, generation, grant, gens, out);
                self.check_lost_update(h, e, key, op, out);
                let state = self.keys.entry(key).or_default();
                state.current_op = op;
                if state.accepted_max.is_none_or(|(g, _)| generation > g) {
                    state.accepted_max = Some((generation, e.seq));
                }
                self.accepted_log.entry(key).or_default().push((e.seq, op));
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check_stale(
        &self,
        h: &History,
        e: &Event,
        key: u16,
        generation: u64,
        grant: Option<u64>,
        gens: &Generations,
        out: &mut Vec<Violation>,
    ) {
        let Some((newer, newer_seq)) = self.keys.get(&key).and_then(|s| s.accepted_max) else {
            return;
        };
        if generation >= newer {
            return;
        }
        let newer_event = h.by_seq(newer_seq);
        let newer_grant = newer_event
            .and_then(|n| n.op_id)
            .and_then(|op| gens.writes.get(&op))
            .and_then(|w| w.grant_id);
        let issued = |g: Option<u64>| g.and_then(|g| gens.grants.get(&g)).map(|i| i.issued_seq);
        let mut evidence: Vec<u64> = [
            issued(grant),
            issued(newer_grant),
            Some(newer_seq),
            Some(e.seq),
        ]
        .into_iter()
        .flatten()
        .collect();
        evidence.sort_unstable();
        evidence.dedup();
        out.push(Violation {
            kind: ViolationKind::StaleWrite,
            key,
            evidence,
            explanation: format!(
                "{} accepted op {} of generation {} at {} after op {} of generation {} (#{}): the older holder overwrote the newer one",
                h.node_name(e.node),
                e.op_id.unwrap_or(0),
                generation,
                crate::history::fmt_time(e.t_true_ns).trim(),
                newer_event.and_then(|n| n.op_id).unwrap_or(0),
                newer,
                newer_seq
            ),
        });
    }

    fn check_lost_update(
        &self,
        h: &History,
        e: &Event,
        key: u16,
        op: u64,
        out: &mut Vec<Violation>,
    ) {
        let current = self.keys.get(&key).map_or(0, |s| s.current_op);
        if current == op {
            return; // a redelivery of the op that wrote the current value
        }
        let Some(&(seen, read_seq)) = self.reads.get(&op) else {
            return;
        };
        if seen == current {
            return;
        }
        let log = self
            .accepted_log
            .get(&key)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // The writes W overwrote without seeing: everything accepted after the value it read.
        let from = log
            .iter()
            .rposition(|&(_, o)| o == seen)
            .map_or(0, |i| i + 1);
        let between: Vec<u64> = log[from..].iter().map(|&(s, _)| s).collect();
        let mut evidence = vec![read_seq];
        evidence.extend(between.iter().rev().take(8).rev());
        evidence.push(e.seq);
        out.push(Violation {
            kind: ViolationKind::LostUpdate,
            key,
            evidence,
            explanation: format!(
                "op {op} read value {seen} (#{read_seq}) but its write replaced value {current}, which it never saw: op {current}'s update is lost"
            ),
        });
        let _ = h;
    }
}
