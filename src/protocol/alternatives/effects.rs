//! Irreversible effects: "You cannot fence an email after it was sent"
//! (the article, on the limits of fencing). An effect sink — an email or
//! payment provider — performs whatever it is asked to and cannot compare a
//! fencing token. Three ways to deliver an effect after a fenced update:
//!
//! - **naive**: the worker calls the provider after its write is
//!   acknowledged, retrying on timeout with no idempotency key. A lost or
//!   late reply, or a holder paused past its lease that retries when it
//!   wakes, makes the provider perform the same effect twice.
//! - **idempotency key** (Stripe's `Idempotency-Key` header, SES/SQS
//!   deduplication ids): the worker sends a key naming the logical effect;
//!   the provider performs each key at most once and answers repeats from
//!   its record.
//! - **transactional outbox** (Richardson, *Microservices Patterns*,
//!   "Transactional outbox"): the effect is enqueued in the same atomic,
//!   fenced write as the update, so a stale holder whose write is rejected
//!   never enqueues one; a single dispatcher delivers outbox entries with
//!   the entry id as idempotency key and marks them delivered.
//!
//! Effect identity: one operation (op id) has one logical effect — "notify
//! about the update op N made". Every op writes a unique value, so this is
//! also the identity (key, document version written). The key a worker or
//! dispatcher sends is that op id.
//!
//! The provider's dedup record is durable (synced): a provider that forgot
//! its keys on restart would not be offering idempotency.

use std::collections::BTreeSet;

use crate::protocol::msg::{Key, Msg, OpId, ReqId};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Nanos, Node, NodeId, TimerId};
use crate::protocol::resource::{Resource, ResourceConfig};

/// How a worker calls the effect sink after its write is acknowledged.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EffectCall {
    pub sink: NodeId,
    /// Send the op id as the provider's idempotency key.
    pub idempotency_key: bool,
}

impl EffectCall {
    pub fn request(&self, req: ReqId, key: Key, op: OpId) -> Msg {
        Msg::Effect {
            req,
            key,
            op,
            idem_key: self.idempotency_key.then_some(op.0),
        }
    }
}

/// The provider: performs every request, except a repeated idempotency key.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Sink {
    seen_keys: BTreeSet<u64>,
}

impl Sink {
    pub fn new() -> Self {
        Sink::default()
    }
}

impl Node for Sink {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                self.seen_keys = recovered
                    .unwrap_or(&[])
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
                    .collect();
            }
            Input::Message {
                from,
                msg:
                    Msg::Effect {
                        req,
                        key,
                        op,
                        idem_key,
                    },
            } => {
                let performed = match idem_key {
                    None => true,
                    Some(k) => self.seen_keys.insert(k),
                };
                if performed && idem_key.is_some() {
                    let record = self
                        .seen_keys
                        .iter()
                        .flat_map(|k| k.to_le_bytes())
                        .collect();
                    fx.push(Effect::Persist {
                        durability: Durability::Synced,
                        record,
                    });
                }
                fx.push(Effect::Send {
                    to: from,
                    msg: Msg::EffectOk {
                        req,
                        key,
                        op,
                        performed,
                    },
                });
            }
            Input::Message { .. } | Input::Timer { .. } => {}
        }
    }
}

/// One outbox row: the effect of `op` on `key`, and whether it was delivered.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Entry {
    key: Key,
    op: OpId,
    delivered: bool,
}

const ENTRY_BYTES: usize = 11;

/// The document store with an outbox table: the fenced [`Resource`], plus an
/// outbox entry inserted by the same accepted write and persisted in the
/// same record — one transaction, so a crash cannot keep one without the
/// other, and a write the fence rejects enqueues nothing.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct OutboxStore {
    inner: Resource,
    /// The inner store's last persisted record (re-saved with the outbox).
    inner_record: Vec<u8>,
    outbox: Vec<Entry>,
}

impl OutboxStore {
    pub fn new(cfg: ResourceConfig) -> Self {
        OutboxStore {
            inner: Resource::new(cfg),
            inner_record: Vec::new(),
            outbox: Vec::new(),
        }
    }

    /// The fenced document store inside (read by the refinement mapping).
    pub fn resource(&self) -> &Resource {
        &self.inner
    }

    /// `inner record ++ entries (key u16, op u64, delivered u8) ++ count u32`.
    fn encode(&self) -> Vec<u8> {
        let mut out = self.inner_record.clone();
        for e in &self.outbox {
            out.extend_from_slice(&e.key.0.to_le_bytes());
            out.extend_from_slice(&e.op.0.to_le_bytes());
            out.push(e.delivered as u8);
        }
        out.extend_from_slice(&(self.outbox.len() as u32).to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> (Vec<u8>, Vec<Entry>) {
        assert!(bytes.len() >= 4, "outbox store record too short");
        let (body, count) = bytes.split_at(bytes.len() - 4);
        let n = u32::from_le_bytes(count.try_into().expect("4 bytes")) as usize;
        let split = body
            .len()
            .checked_sub(n * ENTRY_BYTES)
            .expect("outbox store record shorter than its entries");
        let (inner, entries) = body.split_at(split);
        let outbox = entries
            .chunks_exact(ENTRY_BYTES)
            .map(|c| Entry {
                key: Key(u16::from_le_bytes([c[0], c[1]])),
                op: OpId(u64::from_le_bytes(c[2..10].try_into().expect("8 bytes"))),
                delivered: c[10] != 0,
            })
            .collect();
        (inner.to_vec(), outbox)
    }

    fn persist(&self, fx: &mut Vec<Effect>) {
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: self.encode().into(),
        });
    }

    /// Runs the inner store and folds its effects into ours: an accepted
    /// write enqueues its entry, and every save carries the outbox.
    fn delegate(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let mut inner_fx = Vec::new();
        self.inner.handle(clocks, input, &mut inner_fx);
        let (mut saved, mut enqueued) = (false, false);
        for effect in &inner_fx {
            match effect {
                Effect::Send {
                    msg: Msg::WriteOk { key, op, .. },
                    ..
                } if !self.outbox.iter().any(|e| e.op == *op) => {
                    self.outbox.push(Entry {
                        key: *key,
                        op: *op,
                        delivered: false,
                    });
                    enqueued = true;
                }
                Effect::Persist { record, .. } => {
                    self.inner_record = record.to_vec();
                    saved = true;
                }
                _ => {}
            }
        }
        for effect in inner_fx {
            match effect {
                // The entry rides in the same synced record as the row it describes.
                Effect::Persist { .. } => self.persist(fx),
                other => fx.push(other),
            }
        }
        // Pair of "an accepted write is saved": the entry never travels alone.
        assert!(!enqueued || saved, "outbox entry enqueued without a save");
    }
}

impl Node for OutboxStore {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                let (inner, outbox) = recovered.map(Self::decode).unwrap_or_default();
                self.inner_record = inner;
                self.outbox = outbox;
                let record = self.inner_record.clone();
                let recovered = (!record.is_empty()).then_some(record.as_slice());
                self.inner.handle(clocks, Input::Start { recovered }, fx);
            }
            Input::Message {
                from,
                msg: Msg::OutboxPoll { req, delivered },
            } => {
                let acked = self
                    .outbox
                    .iter_mut()
                    .find(|e| e.op == delivered && !e.delivered);
                if let Some(e) = acked {
                    e.delivered = true;
                    self.persist(fx);
                }
                let next = self.outbox.iter().find(|e| !e.delivered);
                fx.push(Effect::Send {
                    to: from,
                    msg: Msg::OutboxEntry {
                        req,
                        key: next.map_or(Key(0), |e| e.key),
                        op: next.map_or(OpId::INITIAL, |e| e.op),
                    },
                });
            }
            other => self.delegate(clocks, other, fx),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DispatcherConfig {
    pub store: NodeId,
    pub sink: NodeId,
    /// Wait between polls of an empty outbox.
    pub poll_ns: Nanos,
    pub request_timeout_ns: Nanos,
}

const POLL: TimerId = TimerId(0);
const TIMEOUT: TimerId = TimerId(1);

/// The single outbox dispatcher: polls the store, delivers the oldest
/// undelivered entry with its id as idempotency key, retries until the
/// provider answers, then marks it delivered. Stateless: the outbox lives in
/// the store, so a restarted dispatcher resumes where the store says.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Dispatcher {
    cfg: DispatcherConfig,
    next_req: ReqId,
    /// The request we wait on, and where it goes.
    outstanding: Option<(NodeId, Msg)>,
}

impl Dispatcher {
    pub fn new(cfg: DispatcherConfig) -> Self {
        assert!(cfg.poll_ns > 0 && cfg.request_timeout_ns > 0);
        Dispatcher {
            cfg,
            next_req: 1,
            outstanding: None,
        }
    }

    fn request(&mut self, to: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        self.outstanding = Some((to, msg));
        fx.push(Effect::Send { to, msg });
        fx.push(Effect::SetTimer {
            timer: TIMEOUT,
            after_ns: self.cfg.request_timeout_ns,
        });
    }

    /// Polls the store, first marking `delivered` delivered.
    fn poll(&mut self, delivered: OpId, fx: &mut Vec<Effect>) {
        let req = self.next_req;
        self.next_req = self.next_req.wrapping_add(1);
        self.request(self.cfg.store, Msg::OutboxPoll { req, delivered }, fx);
    }

    fn answers(&self, req: ReqId) -> bool {
        matches!(self.outstanding, Some((_, m)) if m.words()[0] == req as u64)
    }

    fn settle(&mut self, fx: &mut Vec<Effect>) {
        self.outstanding = None;
        fx.push(Effect::CancelTimer { timer: TIMEOUT });
    }
}

impl Node for Dispatcher {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { .. } => {
                self.outstanding = None;
                self.poll(OpId::INITIAL, fx);
            }
            Input::Message {
                msg: Msg::OutboxEntry { req, key, op },
                ..
            } if self.answers(req) => {
                self.settle(fx);
                if op == OpId::INITIAL {
                    fx.push(Effect::SetTimer {
                        timer: POLL,
                        after_ns: self.cfg.poll_ns,
                    });
                    return;
                }
                let req = self.next_req;
                self.next_req = self.next_req.wrapping_add(1);
                let call = EffectCall {
                    sink: self.cfg.sink,
                    idempotency_key: true,
                };
                self.request(self.cfg.sink, call.request(req, key, op), fx);
            }
            Input::Message {
                msg: Msg::EffectOk { req, op, .. },
                ..
            } if self.answers(req) => {
                self.settle(fx);
                self.poll(op, fx);
            }
            Input::Message { .. } => {}
            Input::Timer { timer: POLL } => self.poll(OpId::INITIAL, fx),
            Input::Timer { timer: TIMEOUT } => {
                // Retransmit unchanged: the same entry keeps the same key.
                if let Some((to, msg)) = self.outstanding {
                    self.request(to, msg, fx);
                }
            }
            Input::Timer { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resource::FenceCheck;
    use crate::protocol::Token;

    const NOW: Clocks = Clocks {
        wall_ns: 0,
        mono_ns: 0,
    };

    fn deliver(node: &mut dyn Node, msg: Msg) -> Vec<Effect> {
        let mut fx = Vec::new();
        node.handle(
            NOW,
            Input::Message {
                from: NodeId(0),
                msg,
            },
            &mut fx,
        );
        fx
    }

    fn sent(fx: &[Effect]) -> Vec<Msg> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Send { msg, .. } => Some(*msg),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn provider_performs_a_keyed_effect_once_and_an_unkeyed_one_every_time() {
        let mut sink = Sink::new();
        let call = |key| EffectCall {
            sink: NodeId(1),
            idempotency_key: key,
        };
        let performed = |fx: &[Effect]| {
            matches!(
                sent(fx)[0],
                Msg::EffectOk {
                    performed: true,
                    ..
                }
            )
        };
        for _ in 0..2 {
            let fx = deliver(&mut sink, call(false).request(1, Key(0), OpId(7)));
            assert!(performed(&fx));
        }
        assert!(performed(&deliver(
            &mut sink,
            call(true).request(1, Key(0), OpId(8))
        )));
        assert!(!performed(&deliver(
            &mut sink,
            call(true).request(2, Key(0), OpId(8))
        )));
    }

    #[test]
    fn outbox_entry_is_saved_with_the_accepted_write_and_survives_a_restart() {
        let cfg = ResourceConfig {
            check: FenceCheck::Cas {
                strict: false,
                fence_reads: false,
            },
            volatile_fence: false,
            ordered_sessions: false,
        };
        let mut store = OutboxStore::new(cfg);
        let write = |token| Msg::Write {
            req: 1,
            key: Key(0),
            op: OpId(1001),
            token: Some(Token(token)),
            value: OpId(1001),
        };
        let fx = deliver(&mut store, write(2));
        let Some(Effect::Persist { record, .. }) =
            fx.iter().find(|e| matches!(e, Effect::Persist { .. }))
        else {
            panic!("an accepted write is saved");
        };
        let mut restarted = OutboxStore::new(cfg);
        restarted.handle(
            NOW,
            Input::Start {
                recovered: Some(&record[..]),
            },
            &mut Vec::new(),
        );
        let poll = Msg::OutboxPoll {
            req: 9,
            delivered: OpId::INITIAL,
        };
        assert!(matches!(
            sent(&deliver(&mut restarted, poll))[0],
            Msg::OutboxEntry { op: OpId(1001), .. }
        ));
        // A stale token is rejected and enqueues nothing.
        let stale = Msg::Write {
            req: 2,
            key: Key(0),
            op: OpId(2001),
            token: Some(Token(1)),
            value: OpId(2001),
        };
        assert!(matches!(
            sent(&deliver(&mut restarted, stale))[0],
            Msg::WriteRejected { .. }
        ));
        let ack = Msg::OutboxPoll {
            req: 10,
            delivered: OpId(1001),
        };
        assert!(matches!(
            sent(&deliver(&mut restarted, ack))[0],
            Msg::OutboxEntry {
                op: OpId::INITIAL,
                ..
            }
        ));
    }
}
