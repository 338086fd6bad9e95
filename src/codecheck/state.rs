//! One state of the code-level search: the real node structs, their synced
//! records, the pending timers as absolute deadlines on one true-time line,
//! the messages in flight (a multiset, kept sorted so that two orders of
//! the same sends are one state), the current instant, the fault budget
//! left, where the coordinator group's address routes (the primary) and
//! which nodes a failover left down, the nodes' clocks once a clock fault
//! touched one, and the property judge's memory. Everything here is hashed: two
//! paths that reach equal states are explored once.

use std::hash::Hash;

use super::clock::NodeClock;
use super::judge::Judge;
use crate::protocol::{Msg, NodeId, Record, TimerId};

/// A message in flight.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Packet {
    pub from: NodeId,
    pub to: NodeId,
    pub msg: Msg,
}

impl Packet {
    /// The multiset's order: by sender, receiver, then the message's tag and
    /// trace words (equal keys may hold different messages; they then keep
    /// their send order, which costs reduction, never soundness).
    fn order_key(&self) -> (u16, u16, u8, [u64; 5]) {
        (self.from.0, self.to.0, self.msg.tag(), self.msg.words())
    }
}

/// A pending timer: fires at `deadline_ns` of true time.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Timer {
    pub deadline_ns: u64,
    pub node: NodeId,
    pub timer: TimerId,
}

/// A paused worker, until `until_ns`, and what reached it meanwhile.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Hold {
    pub node: NodeId,
    pub until_ns: u64,
    /// In arrival order.
    pub inputs: Vec<Held>,
}

/// One input a paused worker holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Held {
    Message(Packet),
    Timer(TimerId),
}

/// The faults a path may still inject.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Budget {
    pub losses: u8,
    pub duplicates: u8,
    pub crashes: u8,
    pub pauses: u8,
    pub failovers: u8,
    pub rejoins: u8,
    /// Nodes whose clock may still start to drift.
    pub drifts: u8,
    /// Wall-clock jumps left.
    pub jumps: u8,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct State<N> {
    /// `nodes[i]` is `NodeId(i)`, as its code left it.
    pub nodes: Vec<N>,
    /// Each node's last synced record: what survives its crash.
    pub synced: Vec<Option<Record>>,
    /// Sorted by deadline, then node and timer id (with
    /// `Bounds::arming_order`: by deadline and node, then arming order).
    pub timers: Vec<Timer>,
    /// Sorted by [`Packet::order_key`].
    pub in_flight: Vec<Packet>,
    pub now_ns: u64,
    pub budget: Budget,
    /// Where sends to the coordinator group go (`coord/0` until a failover).
    pub primary: NodeId,
    /// Bit i: `NodeId(i)` is down (a failed-over primary, until it rejoins).
    pub down: u32,
    /// `clocks[i]` is `NodeId(i)`'s; empty while no clock fault happened
    /// (every clock reads true time), so such states hash as before.
    pub clocks: Vec<NodeClock>,
    /// The workers in a holding pause (`Bounds::pause_holds`), by node,
    /// with what they hold ([`super::hold`]); empty without one.
    pub held: Vec<Hold>,
    pub judge: Judge,
}

impl<N: Hash> State<N> {
    /// The 64-bit fingerprint the visited set keeps (ahash with fixed keys:
    /// the same on every run).
    pub fn fingerprint(&self) -> u64 {
        ahash::RandomState::with_seeds(0x5eed, 0xfe9c, 0xc0de, 0xc4ec).hash_one(self)
    }
}

impl<N> State<N> {
    pub fn is_down(&self, node: NodeId) -> bool {
        node.0 < 32 && self.down >> node.0 & 1 == 1
    }

    /// `node`'s clocks (true time while no clock fault touched them).
    pub fn clock(&self, node: NodeId) -> NodeClock {
        self.clocks
            .get(node.0 as usize)
            .copied()
            .unwrap_or_default()
    }

    /// Down for good: no rejoin is left in the budget.
    pub fn is_gone(&self, node: NodeId) -> bool {
        self.is_down(node) && self.budget.rejoins == 0
    }

    pub fn send(&mut self, packet: Packet) {
        let key = packet.order_key();
        let at = self.in_flight.partition_point(|p| p.order_key() <= key);
        self.in_flight.insert(at, packet);
    }

    /// Removes one copy of `packet`; false if none is in flight.
    pub fn take(&mut self, packet: &Packet) -> bool {
        match self.in_flight.iter().position(|p| p == packet) {
            Some(i) => {
                self.in_flight.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn cancel_timer(&mut self, node: NodeId, timer: TimerId) {
        self.timers
            .retain(|t| !(t.node == node && t.timer == timer));
    }

    /// Sets (or replaces) `node`'s `timer` to fire at `deadline_ns`. With
    /// `arming_order`, after every timer of `node` due at the same instant
    /// (the timers are then sorted by deadline and node only, one node's
    /// timers of one instant in the order they were armed).
    pub fn set_timer(
        &mut self,
        node: NodeId,
        timer: TimerId,
        deadline_ns: u64,
        arming_order: bool,
    ) {
        self.cancel_timer(node, timer);
        let t = Timer {
            deadline_ns,
            node,
            timer,
        };
        let at = if arming_order {
            let key = (deadline_ns, node);
            self.timers
                .partition_point(|x| (x.deadline_ns, x.node) <= key)
        } else {
            self.timers.partition_point(|x| *x <= t)
        };
        self.timers.insert(at, t);
    }

    /// Every timer of `node` fires `by_ns` later (the node was paused);
    /// with `arming_order`, a stable sort keeps its arming order.
    pub fn delay_timers(&mut self, node: NodeId, by_ns: u64, arming_order: bool) {
        for t in self.timers.iter_mut().filter(|t| t.node == node) {
            t.deadline_ns = t.deadline_ns.saturating_add(by_ns);
        }
        if arming_order {
            self.timers.sort_by_key(|t| (t.deadline_ns, t.node));
        } else {
            self.timers.sort();
        }
    }
}
