//! Checks over what the resource accepted: `stale_write`, `lost_update` and
//! `unissued_token` (violations), and the informational counters around
//! them — `stale_attempts`, `fence_rejected_total`, `late_writes`.
//!
//! Every resource record is judged by the send it answers and what that send
//! followed ([`Generations::judged`]): the grant its sender acted on and the
//! op's latest read before it — a compare-and-set loop re-reads, a retry
//! under a new grant re-sends. A document is (resource, key): two stores
//! that share a key name are two documents.
//!
//! stale_write: the resource accepts a write of generation g after it
//! already accepted one of generation g′ > g. Lease expiry plays no part.
//! A conditional write whose condition held is not stale: its token names
//! the value current at the resource (If-Match on the object generation,
//! which is the op id of the current value) and that is the value its op
//! read. It overwrote exactly what it saw, so the result is serializable.
//! Only on a key whose grants carry no token: where they do, a write's token
//! is its fence, and one equal to the current op id is a coincidence.
//! Nor is a redelivery the document absorbed (the current value is already
//! the op's own): its first acceptance was judged, this one changed nothing.
//!
//! lost_update: a write W is applied while the current value came from a
//! different op than the one W's own read returned — W overwrote a value its
//! writer never saw. A redelivery of the op that wrote the current value is
//! not an overwrite; a write with no read (blind write) is not judged.
//!
//! unissued_token: a write accepted with a token that no grant of its key
//! issued so far carries, on a key whose grants carry tokens — a forged or
//! guessed fence the resource let through — unless the token is a position
//! of the lock server's own order within the ownership of the grant the
//! write acted on ([`Generations::within_ownership`]): a revision or zxid
//! its holder read while it held the lock, a counter value drawn then. A
//! counter drawn after the lease ended lies past its ownership's end.

use super::generations::{Generations, WriteInfo};
use super::{Found, Info, KindSet, ViolationKind};
use crate::history::{fmt_time, Event, History, Kind};
use crate::lookup::{Lookup, LookupSet};

/// A document: (accepting resource node, key).
type Doc = (u16, u16);

#[derive(Default)]
struct DocState {
    /// Highest generation accepted, and the accept record that set it.
    accepted_max: Option<(u64, u64)>,
    /// Op id of the current value (0 = initial).
    current_op: u64,
    /// Accepted writes in order: (accept seq, op id).
    log: Vec<(u64, u64)>,
    /// op id -> index in `log` of its latest acceptance.
    last_index: Lookup<u64, usize>,
}

#[derive(Default)]
pub struct Writes {
    docs: Lookup<Doc, DocState>,
    /// grants whose lease the coordinator dropped.
    expired: LookupSet<u64>,
}

/// The records [`Writes::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet =
    KindSet::of(&[Kind::LeaseExpired, Kind::WriteAccepted, Kind::WriteRejected]);

impl Writes {
    pub fn clear(&mut self) {
        let Writes { docs, expired } = self;
        docs.clear();
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
        match e.kind {
            Kind::LeaseExpired => {
                if let Some(g) = e.grant_id {
                    self.expired.insert(g);
                }
            }
            Kind::WriteAccepted | Kind::WriteRejected => {
                let (Some(op), Some(key)) = (e.op_id, e.key) else {
                    return;
                };
                let write = gens.judged(e, op, key);
                let generation = write.generation;
                let superseded = generation < gens.received_max(key);
                if superseded {
                    info.stale_attempts += 1;
                }
                let current = self.docs.get(&(e.node, key)).map_or(0, |d| d.current_op);
                if write.read.is_some_and(|(v, _)| v != current) && current != op {
                    info.hazards[ViolationKind::LostUpdate as usize] += 1;
                }
                if e.token.is_some() {
                    info.hazards[ViolationKind::UnissuedToken as usize] += 1;
                }
                // Stale by what was received, or by what was issued (a
                // resource-side log records no receipt).
                let stale = superseded || generation < gens.issued_max(key);
                info.hazards[ViolationKind::StaleWrite as usize] += stale as u64;
                if e.kind == Kind::WriteRejected {
                    if superseded {
                        info.fence_rejected_total += 1;
                    } else {
                        info.fence_rejected_same_generation += 1;
                    }
                    return;
                }
                info.writes_accepted += 1;
                if write.grant_id.is_some_and(|g| self.expired.contains(&g))
                    && generation == gens.issued_max(key)
                {
                    info.late_writes += 1;
                    if !stale {
                        info.hazards[ViolationKind::StaleWrite as usize] += 1;
                    }
                }
                let doc = (e.node, key);
                self.check_stale(h, e, doc, &write, gens, out);
                self.check_lost_update(e, doc, op, &write, out);
                check_unissued(h, e, key, &write, gens, out);
                let state = self.docs.or_default(doc);
                state.current_op = op;
                if state.accepted_max.is_none_or(|(g, _)| generation > g) {
                    state.accepted_max = Some((generation, e.seq));
                }
                state.last_index.insert(op, state.log.len());
                state.log.push((e.seq, op));
            }
            _ => {}
        }
    }

    fn check_stale(
        &self,
        h: &History,
        e: &Event,
        doc: Doc,
        write: &WriteInfo,
        gens: &Generations,
        out: &mut Found,
    ) {
        let Some(state) = self.docs.get(&doc) else {
            return;
        };
        let Some((newer, newer_seq)) = state.accepted_max else {
            return;
        };
        if write.generation >= newer {
            return;
        }
        // On a key whose grants carry tokens, a write's token is its fence,
        // not an If-Match generation: a token equal to an op id is chance.
        if !gens.key_is_tokened(doc.1) && condition_held(write, state.current_op) {
            return;
        }
        if state.current_op == e.op_id.unwrap_or(0) {
            // A redelivery the document absorbed: the current value is
            // already this op's; its first acceptance was judged.
            return;
        }
        let newer_event = h.by_seq(newer_seq);
        let newer_grant = newer_event
            .and_then(|n| Some((n.op_id?, n.key?, n)))
            .map(|(op, key, n)| gens.judged(n, op, key))
            .and_then(|w| w.grant_id);
        let issued = |g: Option<u64>| g.and_then(|g| gens.grants.get(&g)).map(|i| i.issued_seq);
        let evidence = super::evidence([
            issued(write.grant_id),
            issued(newer_grant),
            Some(newer_seq),
            Some(e.seq),
        ]);
        out.push(ViolationKind::StaleWrite, doc.1, evidence, || {
            format!(
                "{} accepted op {} of generation {} at {} after op {} of generation {} (#{}): the older holder overwrote the newer one",
                h.node_name(e.node),
                e.op_id.unwrap_or(0),
                write.generation,
                fmt_time(e.t_true_ns).trim(),
                newer_event.and_then(|n| n.op_id).unwrap_or(0),
                newer,
                newer_seq
            )
        });
    }

    fn check_lost_update(&self, e: &Event, doc: Doc, op: u64, write: &WriteInfo, out: &mut Found) {
        let state = self.docs.get(&doc);
        let current = state.map_or(0, |s| s.current_op);
        if current == op {
            return; // a redelivery of the op that wrote the current value
        }
        let Some((seen, read_seq)) = write.read else {
            return;
        };
        if seen == current {
            return;
        }
        // The writes W overwrote without seeing: everything accepted after
        // the value it read (found by index, never by rescanning the log).
        let log = state.map(|s| s.log.as_slice()).unwrap_or(&[]);
        let from = state
            .and_then(|s| s.last_index.get(&seen))
            .map_or(0, |&i| i + 1);
        let between = &log[from.min(log.len())..];
        let mut evidence = vec![read_seq];
        evidence.extend(
            between[between.len().saturating_sub(8)..]
                .iter()
                .map(|&(s, _)| s),
        );
        evidence.push(e.seq);
        out.push(ViolationKind::LostUpdate, doc.1, evidence, || {
            format!(
                "op {op} read value {seen} (#{read_seq}) but its write replaced value {current}, which it never saw: op {current}'s update is lost"
            )
        });
    }
}

/// A conditional write whose condition held: its token names the current
/// value's op and that is what its op read.
fn condition_held(write: &WriteInfo, current_op: u64) -> bool {
    write.token == Some(current_op) && write.read.is_some_and(|(seen, _)| seen == current_op)
}

fn check_unissued(
    h: &History,
    e: &Event,
    key: u16,
    write: &WriteInfo,
    gens: &Generations,
    out: &mut Found,
) {
    let Some(token) = e.token else { return };
    if !gens.key_is_tokened(key)
        || gens.token_issued(key, token)
        || gens.within_ownership(key, write.grant_id, token)
    {
        return;
    }
    let mut evidence = vec![write.sent_seq, e.seq];
    evidence.dedup();
    out.push(ViolationKind::UnissuedToken, key, evidence, || {
        format!(
            "{} accepted op {} with token {token}, which no grant of key {} carried: the fence let through a token nobody issued",
            h.node_name(e.node),
            e.op_id.unwrap_or(0),
            h.key_name(key)
        )
    });
}
