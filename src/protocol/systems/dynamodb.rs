//! The AWS DynamoDB Lock Client: a lock table with conditional writes on a
//! record version number (RVN), and the client's heartbeat-and-wait
//! protocol.
//!
//! Documented in the project's README and Javadoc
//! (github.com/awslabs/amazon-dynamodb-lock-client, `AmazonDynamoDBLockClient`)
//! and the AWS blog post "Building Distributed Locks with the DynamoDB Lock
//! Client" (2017):
//!
//! - acquire: read the lock item. Absent: conditional put
//!   (`attribute_not_exists`). Present: remember its RVN, wait a lease
//!   duration *on the client's own clock*, read again; if the RVN did not
//!   change the holder is presumed dead, and a conditional put on that RVN
//!   takes the lock over.
//! - the holder heartbeats (default 3 s against a 10 s lease) by rewriting
//!   the RVN with a conditional put on its current one; a failed heartbeat
//!   means the lock was taken.
//! - release: conditional delete on the RVN.
//!
//! The RVN says *which* holder, never *in what order*: it is not a fence,
//! and a paused holder writes after a takeover. The lease is judged by
//! elapsed time on the waiter's clock, so a fast-running waiter clock takes
//! over early. `fence = true` adds what the client lacks: a counter in the
//! item, incremented by every put that changes the owner (the same atomic
//! conditional write), returned as the fencing token.

use std::collections::BTreeMap;

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::msg::{Key, Msg, ReqId, Token};
use crate::protocol::node::{Clocks, Effect, Input, Nanos, Node, NodeId};
use crate::protocol::record::{persist_if_changed, RecordReader, RecordWriter};
use crate::protocol::systems::base::{
    ClientBase, LockEvent, LockSystem, Requests, Timeout, CLIENT_REQUEST, CLIENT_TIMER_A,
    CLIENT_TIMER_B,
};
use crate::protocol::systems::SystemWire;

crate::protocol::msg::system_msgs! {
    /// The DynamoDB lock table's messages (`Msg::Dynamo`).
    pub enum DdbMsg {
        /// `GetItem` (consistent read) of the lock item.
        Get = (32, "ddb_get", Acquire) { req: ReqId => "req", key: Key => "" },
        /// The item: its owner (0: no item) and record version number.
        Item = (33, "ddb_item", Acquire) { req: ReqId => "req", key: Key => "", owner: u64 => "owner", rvn: u64 => "rvn" },
        /// Conditional `PutItem`: only if the item's RVN is `expect_rvn`
        /// (0: only if there is no item).
        Put = (34, "ddb_put", Acquire) { req: ReqId => "req", key: Key => "", owner: u64 => "owner", rvn: u64 => "rvn", expect_rvn: u64 => "expect_rvn" },
        /// `fence`: the key's owner-change counter after the put.
        PutResult = (35, "ddb_put_result", Grant) { req: ReqId => "req", key: Key => "", ok: bool => "ok", fence: u64 => "fence" },
        /// Conditional `DeleteItem` on owner and RVN: the release.
        Delete = (36, "ddb_delete", Release) { req: ReqId => "req", key: Key => "", owner: u64 => "owner", rvn: u64 => "rvn" } => Release(owner),
        Deleted = (37, "ddb_deleted", Release) { req: ReqId => "req", key: Key => "", ok: bool => "ok" },
    }
}

/// DynamoDB in the registry (`Msg::Dynamo`): the lock table, the lock client.
pub struct DynamoDb;

impl SystemWire for DynamoDb {
    type Msg = DdbMsg;
}

impl LockSystem for DynamoDb {
    type ServerConfig = ();
    type Server = LockTable;
    type ClientConfig = DynamoClientConfig;
    type Client = DynamoClient;

    fn server_config(_p: &ProtocolConfig, _first: NodeId, _index: u8) {}

    fn server(_cfg: ()) -> LockTable {
        LockTable::new()
    }

    fn client_config(p: &ProtocolConfig, _first: NodeId) -> DynamoClientConfig {
        DynamoClientConfig {
            table: NodeId::COORD_GROUP,
            lease_ns: p.lease_ttl_ns,
            // The client's defaults: 3 s heartbeats against a 10 s lease.
            heartbeat_ns: p.renew_every_ns.unwrap_or(p.lease_ttl_ns * 3 / 10).max(1),
            fence: p.fence,
        }
    }

    fn client(cfg: DynamoClientConfig, base: ClientBase) -> DynamoClient {
        DynamoClient::new(cfg, base)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DynamoClientConfig {
    pub table: NodeId,
    pub lease_ns: Nanos,
    pub heartbeat_ns: Nanos,
    /// Use the item's owner-change counter as a fencing token.
    pub fence: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Phase {
    Idle,
    Reading,
    /// Waiting a lease duration to see whether `observed` changes.
    Waiting,
    Rereading,
    Putting,
    Holding,
    Heartbeating,
    Deleting,
}

const HEARTBEAT: crate::protocol::node::TimerId = CLIENT_TIMER_A;
const LEASE_WAIT: crate::protocol::node::TimerId = CLIENT_TIMER_B;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct DynamoClient {
    cfg: DynamoClientConfig,
    base: ClientBase,
    requests: Requests,
    phase: Phase,
    owner: u64,
    /// RVNs written so far under this acquisition (makes each one unique).
    versions: u64,
    /// Our current RVN while we hold the lock.
    rvn: u64,
    /// The RVN we saw on someone else's item and are waiting out.
    observed: u64,
}

impl DynamoClient {
    pub fn new(cfg: DynamoClientConfig, base: ClientBase) -> Self {
        assert!(cfg.heartbeat_ns > 0 && cfg.heartbeat_ns < cfg.lease_ns);
        DynamoClient {
            cfg,
            base,
            requests: Requests::new(base),
            phase: Phase::Idle,
            owner: 0,
            versions: 0,
            rvn: 0,
            observed: 0,
        }
    }

    /// A fresh RVN: unique per (acquisition, write), like the client's UUID.
    fn next_rvn(&mut self) -> u64 {
        self.versions += 1;
        (self.owner << 16) | (self.versions & 0xffff)
    }

    fn send(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) {
        self.requests.send(clocks, self.cfg.table, msg, fx);
    }

    fn read(&mut self, clocks: Clocks, phase: Phase, fx: &mut Vec<Effect>) {
        self.phase = phase;
        let req = self.requests.take_req();
        let key = self.base.key;
        self.send(clocks, Msg::Dynamo(DdbMsg::Get { req, key }), fx);
    }

    fn put(&mut self, clocks: Clocks, phase: Phase, expect_rvn: u64, fx: &mut Vec<Effect>) {
        self.phase = phase;
        let req = self.requests.take_req();
        let msg = Msg::Dynamo(DdbMsg::Put {
            req,
            key: self.base.key,
            owner: self.owner,
            rvn: self.next_rvn(),
            expect_rvn,
        });
        self.send(clocks, msg, fx);
    }

    pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
        self.owner = owner;
        self.versions = 0;
        self.read(clocks, Phase::Reading, fx);
    }

    pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
        fx.push(Effect::CancelTimer { timer: HEARTBEAT });
        self.requests.forget(fx);
        self.phase = Phase::Deleting;
        let req = self.requests.take_req();
        let msg = Msg::Dynamo(DdbMsg::Delete {
            req,
            key: self.base.key,
            owner: self.owner,
            rvn: self.rvn,
        });
        self.send(clocks, msg, fx);
    }

    fn stop(&mut self, fx: &mut Vec<Effect>) {
        self.phase = Phase::Idle;
        self.requests.forget(fx);
        fx.push(Effect::CancelTimer { timer: HEARTBEAT });
        fx.push(Effect::CancelTimer { timer: LEASE_WAIT });
    }

    pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
        let req = msg.words()[0] as u32;
        if !self.requests.answers(req) {
            return LockEvent::Pending;
        }
        match (self.phase, msg) {
            (Phase::Reading | Phase::Rereading, Msg::Dynamo(DdbMsg::Item { owner, rvn, .. })) => {
                self.requests.forget(fx);
                if owner == 0 {
                    self.put(clocks, Phase::Putting, 0, fx);
                } else if self.phase == Phase::Rereading && rvn == self.observed {
                    // Unchanged for a lease duration by our clock: presumed dead.
                    self.put(clocks, Phase::Putting, rvn, fx);
                } else {
                    self.observed = rvn;
                    self.phase = Phase::Waiting;
                    fx.push(Effect::SetTimer {
                        timer: LEASE_WAIT,
                        after_ns: self.cfg.lease_ns,
                    });
                }
            }
            (Phase::Putting, Msg::Dynamo(DdbMsg::PutResult { ok, fence, .. })) => {
                self.requests.forget(fx);
                if !ok {
                    self.stop(fx);
                    return LockEvent::Busy;
                }
                self.rvn = (self.owner << 16) | (self.versions & 0xffff);
                self.phase = Phase::Holding;
                fx.push(Effect::SetTimer {
                    timer: HEARTBEAT,
                    after_ns: self.cfg.heartbeat_ns,
                });
                return LockEvent::Acquired {
                    token: self.cfg.fence.then_some(Token(fence)),
                    valid_ns: self.cfg.lease_ns,
                };
            }
            (Phase::Heartbeating, Msg::Dynamo(DdbMsg::PutResult { ok, .. })) => {
                self.requests.forget(fx);
                if !ok {
                    self.stop(fx);
                    return LockEvent::Lost;
                }
                self.rvn = (self.owner << 16) | (self.versions & 0xffff);
                self.phase = Phase::Holding;
            }
            (Phase::Deleting, Msg::Dynamo(DdbMsg::Deleted { .. })) => {
                self.stop(fx);
                return LockEvent::Released;
            }
            _ => {}
        }
        LockEvent::Pending
    }

    pub fn on_timer(
        &mut self,
        clocks: Clocks,
        timer: crate::protocol::node::TimerId,
        fx: &mut Vec<Effect>,
    ) -> LockEvent {
        match (timer, self.phase) {
            (CLIENT_REQUEST, _) => match self.requests.on_timeout(fx) {
                Timeout::Idle | Timeout::Retransmitted => LockEvent::Pending,
                Timeout::GaveUp(_) => match self.phase {
                    Phase::Deleting => {
                        self.stop(fx);
                        LockEvent::Released
                    }
                    // A heartbeat that got no answer: keep holding, try again next period.
                    Phase::Heartbeating => {
                        self.phase = Phase::Holding;
                        LockEvent::Pending
                    }
                    _ => {
                        self.stop(fx);
                        LockEvent::Busy
                    }
                },
            },
            (LEASE_WAIT, Phase::Waiting) => {
                self.read(clocks, Phase::Rereading, fx);
                LockEvent::Pending
            }
            (HEARTBEAT, Phase::Holding | Phase::Heartbeating) => {
                fx.push(Effect::SetTimer {
                    timer: HEARTBEAT,
                    after_ns: self.cfg.heartbeat_ns,
                });
                if self.phase == Phase::Holding {
                    let current = self.rvn;
                    self.put(clocks, Phase::Heartbeating, current, fx);
                }
                LockEvent::Pending
            }
            _ => LockEvent::Pending,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Item {
    owner: u64,
    rvn: u64,
}

/// The lock table: one item per key, conditional writes on its RVN. The
/// owner-change counter per key survives deletes (a separate counter item).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct LockTable {
    items: BTreeMap<Key, Item>,
    fences: BTreeMap<Key, u64>,
    /// The durable record last persisted (see [`crate::protocol::record`]).
    persisted: Vec<u8>,
}

impl LockTable {
    pub fn new() -> Self {
        LockTable::default()
    }

    /// `key`'s lock item as (owner nonce, RVN) (None: no item): the lease
    /// the refinement check reads (the item has no expiry of its own).
    pub fn item(&self, key: Key) -> Option<(u64, u64)> {
        self.items.get(&key).map(|i| (i.owner, i.rvn))
    }

    fn on_request(&mut self, msg: Msg) -> Option<Msg> {
        Some(match msg {
            Msg::Dynamo(DdbMsg::Get { req, key }) => {
                let item = self.items.get(&key).copied();
                Msg::Dynamo(DdbMsg::Item {
                    req,
                    key,
                    owner: item.map_or(0, |i| i.owner),
                    rvn: item.map_or(0, |i| i.rvn),
                })
            }
            Msg::Dynamo(DdbMsg::Put {
                req,
                key,
                owner,
                rvn,
                expect_rvn,
            }) => {
                let current = self.items.get(&key).copied();
                let ok = match current {
                    None => expect_rvn == 0,
                    Some(item) => expect_rvn != 0 && item.rvn == expect_rvn,
                };
                let fence = self.fences.entry(key).or_insert(0);
                if ok {
                    if current.is_none_or(|i| i.owner != owner) {
                        *fence += 1;
                    }
                    self.items.insert(key, Item { owner, rvn });
                }
                Msg::Dynamo(DdbMsg::PutResult {
                    req,
                    key,
                    ok,
                    fence: *fence,
                })
            }
            Msg::Dynamo(DdbMsg::Delete {
                req,
                key,
                owner,
                rvn,
            }) => {
                let ok = self
                    .items
                    .get(&key)
                    .is_some_and(|i| i.owner == owner && i.rvn == rvn);
                if ok {
                    self.items.remove(&key);
                }
                Msg::Dynamo(DdbMsg::Deleted { req, key, ok })
            }
            _ => return None,
        })
    }
}

impl LockTable {
    /// A DynamoDB table is durable: every item (and fence counter) survives.
    fn record(&self) -> Vec<u8> {
        let mut w = RecordWriter::default();
        w.list(self.items.iter(), |w, (k, item)| {
            w.word(k.0 as u64).word(item.owner).word(item.rvn);
        });
        w.list(self.fences.iter(), |w, (k, fence)| {
            w.word(k.0 as u64).word(*fence);
        });
        w.finish()
    }

    fn recover(&mut self, record: &[u8]) {
        let mut r = RecordReader::new(record);
        r.list(|r| {
            let (k, owner, rvn) = (Key(r.word() as u16), r.word(), r.word());
            self.items.insert(k, Item { owner, rvn });
        });
        r.list(|r| {
            let (k, fence) = (Key(r.word() as u16), r.word());
            self.fences.insert(k, fence);
        });
        assert!(r.is_done(), "a DynamoDB record with trailing bytes");
        self.persisted = record.to_vec();
    }
}

impl Node for LockTable {
    fn handle(&mut self, _clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start {
                recovered: Some(record),
            } => self.recover(record),
            Input::Message { from, msg } => {
                if let Some(reply) = self.on_request(msg) {
                    fx.push(Effect::Send {
                        to: from,
                        msg: reply,
                    });
                }
            }
            Input::Start { recovered: None } | Input::Timer { .. } => {}
        }
        let record = self.record();
        persist_if_changed(&mut self.persisted, record, fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_takeover_needs_the_rvn_it_waited_out_and_bumps_the_fence() {
        let mut t = LockTable::new();
        let put = |owner, rvn, expect_rvn| {
            Msg::Dynamo(DdbMsg::Put {
                req: 1,
                key: Key(0),
                owner,
                rvn,
                expect_rvn,
            })
        };
        let ok = |m: Option<Msg>| match m {
            Some(Msg::Dynamo(DdbMsg::PutResult { ok, fence, .. })) => (ok, fence),
            other => panic!("{other:?}"),
        };
        assert_eq!(ok(t.on_request(put(1, 10, 0))), (true, 1));
        assert_eq!(ok(t.on_request(put(1, 11, 10))), (true, 1), "heartbeat");
        assert_eq!(ok(t.on_request(put(2, 20, 10))), (false, 1), "stale RVN");
        assert_eq!(ok(t.on_request(put(2, 20, 11))), (true, 2), "takeover");
    }

    #[test]
    fn a_restarted_lock_table_keeps_its_items_and_fence_counters() {
        let mut t = LockTable::new();
        let mut fx = Vec::new();
        let put = Msg::Dynamo(DdbMsg::Put {
            req: 1,
            key: Key(0),
            owner: 1,
            rvn: 10,
            expect_rvn: 0,
        });
        t.handle(
            Clocks {
                wall_ns: 0,
                mono_ns: 0,
            },
            Input::Message {
                from: NodeId(1),
                msg: put,
            },
            &mut fx,
        );
        let record = match fx.last() {
            Some(Effect::Persist { record, .. }) => record.to_vec(),
            other => panic!("a change is synced before the step ends, got {other:?}"),
        };
        let mut restarted = LockTable::new();
        restarted.recover(&record);
        assert_eq!(restarted, t, "items, fences and the record survive");
        let stale = Msg::Dynamo(DdbMsg::Put {
            req: 2,
            key: Key(0),
            owner: 2,
            rvn: 20,
            expect_rvn: 0,
        });
        assert!(matches!(
            restarted.on_request(stale),
            Some(Msg::Dynamo(DdbMsg::PutResult { ok: false, .. }))
        ));
    }
}
