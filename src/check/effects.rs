//! duplicate_effect: the effect sink performed the same logical effect
//! twice — an email sent twice, a card charged twice. Fencing cannot stop
//! this: the provider does not understand tokens.
//!
//! Effect identity: an operation (op id) has exactly one logical effect, on
//! its key. Every op writes a unique value, so this is also "one effect per
//! (key, document version written)". Retransmissions, retries after a lost
//! reply and an outbox redelivery all carry the same op id; an
//! `effect_deduplicated` record (the provider recognised the idempotency
//! key) is not a performance.
//!
//! Evidence: the first `effect_performed` of the op, every `effect_sent`
//! for it up to the duplicate (at most 6), and the duplicate itself.
//!
//! superseded_effect: the sink performed an effect whose request was sent
//! by a holder already superseded — the article's email after the fence.
//! The request's generation is the grant its sender acted on when it sent
//! it (the same rule as a write's, [`super::generations`]); the effect is
//! superseded when a grant of a higher generation of its key had been
//! received before the performance. A request from a node that holds no
//! grant (an outbox dispatcher) is not judged. Evidence: the sender's
//! grant, the newer receipt, the performance.
//!
//! Hazard (vacuity guard, [`super::Info::effect_retries`]): a request sent
//! again for an op — the retry a duplicate comes from.

use super::generations::Generations;
use super::{Found, Info, KindSet, ViolationKind};
use crate::history::{Event, History, Kind};
use crate::lookup::Lookup;

#[derive(Default)]
pub struct Effects {
    /// (key, op) -> seq of the first performance.
    performed: Lookup<(u16, u64), u64>,
    /// (key, op) -> seqs of the requests sent for it.
    sent: Lookup<(u16, u64), Vec<u64>>,
    /// (key, op) -> grant its latest request was sent under.
    sent_under: Lookup<(u16, u64), u64>,
}

/// The records [`Effects::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[Kind::EffectSent, Kind::EffectPerformed]);

impl Effects {
    pub fn clear(&mut self) {
        let Effects {
            performed,
            sent,
            sent_under,
        } = self;
        performed.clear();
        sent.clear();
        sent_under.clear();
    }

    pub fn observe(
        &mut self,
        h: &History,
        e: &Event,
        gens: &Generations,
        info: &mut Info,
        out: &mut Found,
    ) {
        let (Some(key), Some(op)) = (e.key, e.op_id) else {
            return;
        };
        match e.kind {
            Kind::EffectSent => {
                let sent = self.sent.or_default((key, op));
                info.effect_retries += !sent.is_empty() as u64;
                sent.push(e.seq);
                match gens.acted_on(Some(e.node), key, e.grant_id, e.token) {
                    Some(g) => self.sent_under.insert((key, op), g),
                    None => self.sent_under.remove(&(key, op)),
                };
            }
            Kind::EffectPerformed => {
                self.check_duplicate(h, e, key, op, out);
                let under = self.sent_under.get(&(key, op));
                let superseded = under
                    .and_then(|&g| gens.generation_of(g))
                    .is_some_and(|g| g < gens.issued_max(key));
                info.hazards[ViolationKind::SupersededEffect as usize] += superseded as u64;
                self.check_superseded(h, e, key, op, gens, out);
            }
            _ => {}
        }
    }

    fn check_duplicate(&mut self, h: &History, e: &Event, key: u16, op: u64, out: &mut Found) {
        let Some(&first) = self.performed.get(&(key, op)) else {
            self.performed.insert((key, op), e.seq);
            return;
        };
        let mut evidence = vec![first];
        if let Some(sent) = self.sent.get(&(key, op)) {
            evidence.extend(sent.iter().take(6));
        }
        evidence.push(e.seq);
        evidence.sort_unstable();
        evidence.dedup();
        out.push(ViolationKind::DuplicateEffect, key, evidence, || {
            format!(
                "{} performed op {op}'s effect again at {} (first at #{first}): the same email/payment went out twice",
                h.node_name(e.node),
                crate::history::fmt_time(e.t_true_ns).trim(),
            )
        });
    }

    fn check_superseded(
        &self,
        h: &History,
        e: &Event,
        key: u16,
        op: u64,
        gens: &Generations,
        out: &mut Found,
    ) {
        let Some(&grant) = self.sent_under.get(&(key, op)) else {
            return;
        };
        let Some(info) = gens.grants.get(&grant) else {
            return;
        };
        if info.generation >= gens.received_max(key) {
            return;
        }
        let evidence = super::evidence([
            Some(info.issued_seq),
            gens.received_max_seq(key),
            Some(e.seq),
        ]);
        out.push(ViolationKind::SupersededEffect, key, evidence, || {
            format!(
                "{} performed op {op}'s effect at {}, requested under grant {grant} (generation {}) after generation {} was received: an irreversible effect by a superseded holder",
                h.node_name(e.node),
                crate::history::fmt_time(e.t_true_ns).trim(),
                info.generation,
                gens.received_max(key)
            )
        });
    }
}
