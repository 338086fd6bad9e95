//! The simulated network: latency, loss, delay spikes, partitions, and
//! faults aimed at one message.
//!
//! Links are directed (`from -> to`) and every message sent on a link gets
//! the next per-link number (`nth`, from 1), which is how a scenario names
//! "A's first write to the resource". Each message costs exactly one draw
//! from each of `net.latency`, `net.loss` and `net.delay` — whatever the
//! rates — so that scripting the faults a random run happened to draw leaves
//! every latency in the replay unchanged.
//!
//! Random loss and delay that fire are appended to `resolved` as scripted
//! [`Fault::Drop`] / [`Fault::Delay`], making the run's fault script whole.

use std::collections::BTreeMap;

use super::options::{Fault, NetworkOptions};
use super::rng::Rng;
use super::trace::DropReason;
use crate::protocol::{Nanos, NodeId};

#[derive(Clone, Copy, Debug)]
enum MsgFault {
    Drop,
    Delay(Nanos),
}

struct ActivePartition {
    id: u32,
    side_a: u64,
    side_b: u64,
    one_way: bool,
}

pub enum Fate {
    Deliver { at_ns: Nanos, nth: u32 },
    Lost { reason: DropReason, nth: u32 },
}

pub struct Network {
    opts: NetworkOptions,
    nodes: usize,
    link_counts: Vec<u32>,
    scripted: BTreeMap<(u16, u16, u32), MsgFault>,
    partitions: Vec<ActivePartition>,
    latency: Rng,
    loss: Rng,
    delay: Rng,
    pub resolved: Vec<Fault>,
}

pub fn mask(nodes: &[NodeId]) -> u64 {
    nodes.iter().fold(0, |m, n| m | (1u64 << n.0))
}

impl Network {
    pub fn new(opts: &NetworkOptions, nodes: usize, faults: &[Fault], seed: u64) -> Network {
        assert!(nodes <= 64, "partitions use 64-bit node masks");
        assert!(opts.latency_min_ns <= opts.latency_max_ns);
        let mut scripted = BTreeMap::new();
        for f in faults {
            match *f {
                Fault::Drop { from, to, nth } => {
                    scripted.insert((from.0, to.0, nth), MsgFault::Drop);
                }
                Fault::Delay {
                    from,
                    to,
                    nth,
                    delay_ns,
                } => {
                    scripted.insert((from.0, to.0, nth), MsgFault::Delay(delay_ns));
                }
                _ => {}
            }
        }
        Network {
            opts: opts.clone(),
            nodes,
            link_counts: vec![0; nodes * nodes],
            scripted,
            partitions: Vec::new(),
            latency: Rng::stream(seed, "net.latency"),
            loss: Rng::stream(seed, "net.loss"),
            delay: Rng::stream(seed, "net.delay"),
            resolved: Vec::new(),
        }
    }

    pub fn cut(&self, from: NodeId, to: NodeId) -> bool {
        let (f, t) = (1u64 << from.0, 1u64 << to.0);
        self.partitions.iter().any(|p| {
            (p.side_a & f != 0 && p.side_b & t != 0)
                || (!p.one_way && p.side_b & f != 0 && p.side_a & t != 0)
        })
    }

    pub fn partition_hits_in_flight(&self) -> bool {
        self.opts.partition_hits_in_flight
    }

    pub fn start_partition(&mut self, id: u32, side_a: u64, side_b: u64, one_way: bool) {
        self.partitions.push(ActivePartition {
            id,
            side_a,
            side_b,
            one_way,
        });
    }

    pub fn heal(&mut self, id: u32) {
        self.partitions.retain(|p| p.id != id);
    }

    pub fn send(&mut self, now: Nanos, from: NodeId, to: NodeId) -> Fate {
        let link = from.0 as usize * self.nodes + to.0 as usize;
        self.link_counts[link] += 1;
        let nth = self.link_counts[link];
        let latency = self
            .latency
            .between(self.opts.latency_min_ns, self.opts.latency_max_ns);
        let lost = self.loss.chance(self.opts.loss_probability);
        let spiked = self.delay.chance(self.opts.delay_probability);
        // Whole milliseconds, so a resolved delay writes back as `delay_ms` exactly.
        let spike_ns = self.delay.between(0, self.opts.delay_max_ns / 1_000_000) * 1_000_000;
        let mut extra = 0;
        match self.scripted.get(&(from.0, to.0, nth)) {
            Some(MsgFault::Drop) => {
                return Fate::Lost {
                    reason: DropReason::Scripted,
                    nth,
                }
            }
            Some(MsgFault::Delay(d)) => extra = *d,
            None => {
                if lost {
                    self.resolved.push(Fault::Drop { from, to, nth });
                    return Fate::Lost {
                        reason: DropReason::Loss,
                        nth,
                    };
                }
                if spiked && spike_ns > 0 {
                    self.resolved.push(Fault::Delay {
                        from,
                        to,
                        nth,
                        delay_ns: spike_ns,
                    });
                    extra = spike_ns;
                }
            }
        }
        if self.cut(from, to) {
            return Fate::Lost {
                reason: DropReason::Partition,
                nth,
            };
        }
        Fate::Deliver {
            at_ns: now + latency + extra,
            nth,
        }
    }
}
