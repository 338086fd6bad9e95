//! A durable job queue with claim / ack and a visibility timeout — the
//! article's "Work is naturally a durable job: queue claim/ack with retry
//! semantics" (Amazon SQS: `ReceiveMessage` hides a message for the
//! visibility timeout, `DeleteMessage` acks it; an unacked message becomes
//! visible again and is redelivered; FIFO message groups hand out one
//! message of a group at a time).
//!
//! The unchanged read-modify-write worker is the consumer, pointed at this
//! node for both claims and results: `acquire` receives the head job of the
//! key's group (the grant's token is the delivery number, the receipt
//! handle), `read` fetches the job's input (the group's last result),
//! `write` records the job's result, `release` deletes the job once it has
//! a result (or makes it visible again if not).
//!
//! Why redelivery is safe here: results are keyed by job — "first result
//! per job wins", the `INSERT … ON CONFLICT (job_id) DO NOTHING` of a
//! results table — and the next job is only handed out after the head job
//! has a result and was deleted. A consumer paused past its visibility
//! timeout loses its job to a redelivery; when it wakes, its result is
//! refused as a duplicate. The work was done twice (`wasted_work`), the
//! data is not corrupted.

use std::collections::BTreeMap;

use crate::protocol::msg::{Key, Msg, OpId, Token};
use crate::protocol::node::{Clocks, Durability, Effect, Input, Nanos, Node};
use crate::protocol::single_db::{serve, Server, Txn};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct QueueConfig {
    pub visibility_timeout_ns: Nanos,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct Group {
    /// The head job's id (1, 2, …).
    job: u64,
    /// The head job's result, once a consumer recorded one.
    result: Option<u64>,
    /// The last result recorded (the next job's input).
    value: u64,
    /// The current claim (receipt) on the head job.
    claim: Option<Txn>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Queue {
    cfg: QueueConfig,
    groups: BTreeMap<Key, Group>,
    /// delivery number -> the job it delivered.
    delivered: BTreeMap<u64, u64>,
    deliveries: u64,
}

impl Queue {
    pub fn new(cfg: QueueConfig) -> Self {
        assert!(cfg.visibility_timeout_ns > 0);
        Queue {
            cfg,
            groups: BTreeMap::new(),
            delivered: BTreeMap::new(),
            deliveries: 0,
        }
    }

    /// `key`'s head job as the refinement mapping reads it: its id, whether
    /// it has a result, the last result recorded (the value a read returns)
    /// and the current claim (one past its visibility timeout included: the
    /// queue drops it only when a request next touches the group).
    pub fn head(&self, key: Key) -> (u64, bool, OpId, Option<Txn>) {
        self.groups
            .get(&key)
            .map_or((1, false, OpId::INITIAL, None), |g| {
                (g.job, g.result.is_some(), OpId(g.value), g.claim)
            })
    }

    /// The job delivery number `delivery` delivered, if the queue made it.
    pub fn job_of(&self, delivery: u64) -> Option<u64> {
        self.delivered.get(&delivery).copied()
    }

    fn group(&mut self, key: Key) -> &mut Group {
        self.groups.entry(key).or_insert(Group {
            job: 1,
            ..Group::default()
        })
    }

    /// `deliveries ++ (delivery, job)* count ++ (key, job, value, has_result, result)*`.
    fn persist(&self, fx: &mut Vec<Effect>) {
        let mut r = self.deliveries.to_le_bytes().to_vec();
        r.extend_from_slice(&(self.delivered.len() as u64).to_le_bytes());
        for (d, j) in &self.delivered {
            r.extend_from_slice(&d.to_le_bytes());
            r.extend_from_slice(&j.to_le_bytes());
        }
        for (key, g) in &self.groups {
            r.extend_from_slice(&key.0.to_le_bytes());
            for w in [
                g.job,
                g.value,
                g.result.is_some() as u64,
                g.result.unwrap_or(0),
            ] {
                r.extend_from_slice(&w.to_le_bytes());
            }
        }
        fx.push(Effect::Persist {
            durability: Durability::Synced,
            record: r.into(),
        });
    }

    fn recover(&mut self, b: &[u8]) {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        self.deliveries = word(0);
        let n = word(8) as usize;
        let mut at = 16;
        for _ in 0..n {
            self.delivered.insert(word(at), word(at + 8));
            at += 16;
        }
        assert_eq!((b.len() - at) % 34, 0, "queue record is malformed");
        while at < b.len() {
            let key = Key(u16::from_le_bytes([b[at], b[at + 1]]));
            let g = Group {
                job: word(at + 2),
                value: word(at + 10),
                result: (word(at + 18) != 0).then(|| word(at + 26)),
                claim: None, // claims are in-memory: a restart makes every job visible
            };
            self.groups.insert(key, g);
            at += 34;
        }
    }

    fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        Some(match msg {
            Msg::Acquire { req, key, owner } => {
                let g = self.group(key);
                if let Some(t) = Txn::live(&mut g.claim, clocks, key, fx) {
                    return Some(t.answer(clocks, req, key, owner));
                }
                self.deliveries += 1;
                let delivery = self.deliveries;
                let vt = self.cfg.visibility_timeout_ns;
                let g = self.group(key);
                g.claim = Some(Txn {
                    owner,
                    id: delivery,
                    deadline_wall_ns: clocks.wall_ns.saturating_add(vt as i64),
                });
                let job = g.job;
                self.delivered.insert(delivery, job);
                self.persist(fx);
                Msg::Granted {
                    req,
                    key,
                    owner,
                    token: Some(Token(delivery)),
                    ttl_ns: vt,
                }
            }
            Msg::Read { req, key, op, .. } => Msg::ReadOk {
                req,
                key,
                op,
                value: OpId(self.group(key).value),
            },
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => {
                let job = token.and_then(|t| self.delivered.get(&t.0).copied());
                let g = self.group(key);
                if job != Some(g.job) || g.result.is_some() {
                    // Someone else's result for this job is already in (or the job is gone).
                    let fence = Token(g.job);
                    return Some(Msg::WriteRejected {
                        req,
                        key,
                        op,
                        fence,
                    });
                }
                g.result = Some(value.0);
                g.value = value.0;
                self.persist(fx);
                Msg::WriteOk { req, key, op }
            }
            Msg::Release { req, key, owner } => {
                let g = self.group(key);
                let removed = Txn::release(&mut g.claim, clocks, key, owner, fx);
                if removed.is_some() {
                    if g.result.is_some() {
                        // DeleteMessage: the next job becomes the head.
                        g.job += 1;
                        g.result = None;
                    }
                    self.persist(fx);
                }
                Msg::Released { req, key, removed }
            }
            Msg::Renew { req, key, owner } => Msg::RenewFailed { req, key, owner },
            _ => return None,
        })
    }
}

impl Server for Queue {
    fn reset(&mut self, recovered: Option<&[u8]>) {
        self.groups.clear();
        self.delivered.clear();
        self.deliveries = 0;
        if let Some(bytes) = recovered {
            self.recover(bytes);
        }
    }

    fn answer(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> Option<Msg> {
        self.on_message(clocks, msg, fx)
    }
}

impl Node for Queue {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        serve(self, clocks, input, fx);
    }
}
