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

use std::collections::BTreeMap;

use super::{Violation, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Default)]
pub struct Effects {
    /// (key, op) -> seq of the first performance.
    performed: BTreeMap<(u16, u64), u64>,
    /// (key, op) -> seqs of the requests sent for it.
    sent: BTreeMap<(u16, u64), Vec<u64>>,
}

impl Effects {
    pub fn observe(&mut self, h: &History, e: &Event, out: &mut Vec<Violation>) {
        let (Some(key), Some(op)) = (e.key, e.op_id) else {
            return;
        };
        match e.kind {
            Kind::EffectSent => self.sent.entry((key, op)).or_default().push(e.seq),
            Kind::EffectPerformed => {
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
                out.push(Violation {
                    kind: ViolationKind::DuplicateEffect,
                    key,
                    evidence,
                    explanation: format!(
                        "{} performed op {op}'s effect again at {} (first at #{first}): the same email/payment went out twice",
                        h.node_name(e.node),
                        crate::history::fmt_time(e.t_true_ns).trim(),
                    ),
                });
            }
            _ => {}
        }
    }
}
