//! The simulated network: latency, loss, delay spikes, partitions, and
//! faults aimed at one message.
//!
//! Links are directed (`from -> to`) and every message sent on a link gets
//! the next per-link number (`nth`, from 1), which is how a scenario names
//! "A's first write to the resource". Each message costs exactly one
//! latency draw from `net.latency`, and a fixed number of draws from each of
//! `net.loss`, `net.delay` and `net.duplicate` whose rate is not zero —
//! whatever the rate — so that scripting the faults a random run happened
//! to draw (which sets the rates to zero) leaves every latency in the replay
//! unchanged. A zero rate draws nothing: its stream feeds nothing else.
//! The rate is the one in force when the message is sent: `--swarm`'s
//! chaos rates until its window ends, calmer ones after
//! ([`super::options::CalmNetwork`]).
//!
//! Random loss, delay and duplication that fire are appended to `resolved`
//! as scripted [`Fault::Drop`] / [`Fault::Delay`] / [`Fault::Duplicate`],
//! making the run's fault script whole. A duplicate is a second delivery of
//! the same message (a retransmitting middlebox, an at-least-once queue).

use std::collections::BTreeMap;

use super::hash::fnv1a64;
use super::options::{Fault, NetworkOptions};
use super::rng::Rng;
use super::trace::DropReason;
use crate::protocol::{Nanos, NodeId};

/// Scripted faults aimed at one message (several may hit the same one).
#[derive(Clone, Copy, Debug, Default)]
struct MsgFaults {
    drop: bool,
    delay_ns: Option<Nanos>,
    duplicate_after_ns: Option<Nanos>,
}

struct ActivePartition {
    id: u32,
    side_a: u64,
    side_b: u64,
    one_way: bool,
}

pub enum Fate {
    /// Delivered at `at_ns`; with `copy_at_ns`, delivered again then.
    Deliver {
        at_ns: Nanos,
        nth: u32,
        copy_at_ns: Option<Nanos>,
    },
    Lost {
        reason: DropReason,
        nth: u32,
    },
}

pub struct Network {
    opts: NetworkOptions,
    /// No rate can fire, now or later (every rate zero, no calm
    /// phase): a message costs its latency draw and nothing else.
    rateless: bool,
    nodes: usize,
    link_counts: Vec<u32>,
    scripted: BTreeMap<(u16, u16, u32), MsgFaults>,
    partitions: Vec<ActivePartition>,
    latency: Rng,
    loss: Rng,
    delay: Rng,
    duplicate: Rng,
    pub resolved: Vec<Fault>,
}

pub fn mask(nodes: &[NodeId]) -> u64 {
    nodes.iter().fold(0, |m, n| m | (1u64 << n.0))
}

const MS: u64 = 1_000_000;

// The network's streams (`Rng::stream` of these names), hashed at compile time.
const LATENCY_STREAM: u64 = fnv1a64(b"net.latency");
const LOSS_STREAM: u64 = fnv1a64(b"net.loss");
const DELAY_STREAM: u64 = fnv1a64(b"net.delay");
const DUPLICATE_STREAM: u64 = fnv1a64(b"net.duplicate");

impl Network {
    /// The network of a run of `seed`: its four streams seeded.
    pub fn new(opts: &NetworkOptions, nodes: usize, faults: &[Fault], seed: u64) -> Network {
        let mut net = Network {
            opts: opts.clone(),
            rateless: false,
            nodes,
            link_counts: Vec::new(),
            scripted: BTreeMap::new(),
            partitions: Vec::new(),
            latency: Rng::stream_with_id(seed, LATENCY_STREAM),
            loss: Rng::stream_with_id(seed, LOSS_STREAM),
            delay: Rng::stream_with_id(seed, DELAY_STREAM),
            duplicate: Rng::stream_with_id(seed, DUPLICATE_STREAM),
            resolved: Vec::new(),
        };
        net.reset(opts, nodes, faults, seed);
        net
    }

    /// This network as [`Network::new`] makes it for a run of `seed`, in
    /// place: its tables keep their allocations and its streams are
    /// re-seeded where they are, never moved (a thread's runs reuse one
    /// network, `sim::Scratch`). A network whose rates are all zero draws
    /// from its latency stream alone (`send`), so the loss, delay and
    /// duplicate streams are re-seeded only when a rate can fire; a run
    /// that needs them always re-seeds them first.
    pub fn reset(&mut self, opts: &NetworkOptions, nodes: usize, faults: &[Fault], seed: u64) {
        assert!(nodes <= 64, "partitions use 64-bit node masks");
        assert!(opts.latency_min_ns <= opts.latency_max_ns);
        self.scripted.clear();
        for f in faults {
            let scripted = &mut self.scripted;
            match *f {
                Fault::Drop { from, to, nth } => {
                    scripted.entry((from.0, to.0, nth)).or_default().drop = true
                }
                Fault::Delay {
                    from,
                    to,
                    nth,
                    delay_ns,
                } => scripted.entry((from.0, to.0, nth)).or_default().delay_ns = Some(delay_ns),
                Fault::Duplicate {
                    from,
                    to,
                    nth,
                    delay_ns,
                } => {
                    scripted
                        .entry((from.0, to.0, nth))
                        .or_default()
                        .duplicate_after_ns = Some(delay_ns)
                }
                _ => {}
            }
        }
        let (loss_p, delay_p, duplicate_p) = opts.rates();
        // `send` draws for a loss rate `> 0.0` and a delay or duplicate
        // rate not `<= 0.0` (`draw_spike`): none of them here.
        self.rateless =
            opts.calm.is_none() && [loss_p, delay_p, duplicate_p].iter().all(|&p| p <= 0.0);
        self.opts.clone_from(opts);
        self.nodes = nodes;
        self.link_counts.clear();
        self.link_counts.resize(nodes * nodes, 0);
        self.partitions.clear();
        self.resolved.clear();
        self.latency.reseed(seed, LATENCY_STREAM);
        if !self.rateless {
            self.loss.reseed(seed, LOSS_STREAM);
            self.delay.reseed(seed, DELAY_STREAM);
            self.duplicate.reseed(seed, DUPLICATE_STREAM);
        }
    }

    pub fn cut(&self, from: NodeId, to: NodeId) -> bool {
        if self.partitions.is_empty() {
            return false;
        }
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
        // Fixed draws per message and stream, whatever fires (see the module doc).
        let latency = self
            .latency
            .between(self.opts.latency_min_ns, self.opts.latency_max_ns);
        if self.rateless && self.scripted.is_empty() && self.partitions.is_empty() {
            // Nothing can drop, delay, copy or cut it: what the general
            // path below computes when no rate, script or partition applies.
            return Fate::Deliver {
                at_ns: now.saturating_add(latency),
                nth,
                copy_at_ns: None,
            };
        }
        let (loss_p, delay_p, duplicate_p) = self.opts.rates_at(now);
        let lost = loss_p > 0.0 && self.loss.chance(loss_p);
        // Whole milliseconds, so a resolved delay writes back as `delay_ms` exactly.
        let (spiked, spike_ns) = draw_spike(&mut self.delay, delay_p, self.opts.delay_max_ns);
        let (duplicated, copy_after_ns) =
            draw_spike(&mut self.duplicate, duplicate_p, self.opts.delay_max_ns);
        let scripted = if self.scripted.is_empty() {
            None
        } else {
            self.scripted.get(&(from.0, to.0, nth))
        };
        let mut fx = match scripted {
            Some(f) => *f,
            None => {
                let mut f = MsgFaults::default();
                if lost {
                    self.resolved.push(Fault::Drop { from, to, nth });
                    f.drop = true;
                } else {
                    if spiked && spike_ns > 0 {
                        self.resolved.push(Fault::Delay {
                            from,
                            to,
                            nth,
                            delay_ns: spike_ns,
                        });
                        f.delay_ns = Some(spike_ns);
                    }
                    if duplicated {
                        self.resolved.push(Fault::Duplicate {
                            from,
                            to,
                            nth,
                            delay_ns: copy_after_ns,
                        });
                        f.duplicate_after_ns = Some(copy_after_ns);
                    }
                }
                f
            }
        };
        if fx.drop {
            let reason = if lost && scripted.is_none() {
                DropReason::Loss
            } else {
                DropReason::Scripted
            };
            return Fate::Lost { reason, nth };
        }
        if self.cut(from, to) {
            return Fate::Lost {
                reason: DropReason::Partition,
                nth,
            };
        }
        // Saturating: scenario limits keep these far below 2^64 (scenario/limits.rs).
        let at_ns = now
            .saturating_add(latency)
            .saturating_add(fx.delay_ns.take().unwrap_or(0));
        Fate::Deliver {
            at_ns,
            nth,
            copy_at_ns: fx.duplicate_after_ns.map(|d| at_ns.saturating_add(d)),
        }
    }
}

/// Whether a per-message fault fires, and its extra delay in whole
/// milliseconds: two draws when `p > 0`, none otherwise.
fn draw_spike(rng: &mut Rng, p: f64, delay_max_ns: Nanos) -> (bool, Nanos) {
    if p <= 0.0 {
        return (false, 0);
    }
    let fires = rng.chance(p);
    (fires, rng.between(0, delay_max_ns / MS).saturating_mul(MS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::options::CalmNetwork;

    fn lossy(calm: Option<CalmNetwork>) -> Network {
        let opts = NetworkOptions {
            latency_min_ns: MS,
            latency_max_ns: MS,
            loss_probability: 1.0,
            delay_probability: 0.0,
            delay_max_ns: 0,
            duplicate_probability: 0.0,
            partition_hits_in_flight: false,
            calm,
        };
        Network::new(&opts, 2, &[], 7)
    }

    fn delivered(net: &mut Network, now: Nanos) -> bool {
        matches!(net.send(now, NodeId(0), NodeId(1)), Fate::Deliver { .. })
    }

    #[test]
    fn calm_rates_apply_to_messages_sent_from_their_time_on() {
        let calm = CalmNetwork {
            after_ns: 100 * MS,
            loss_probability: 0.0,
            delay_probability: 0.0,
            duplicate_probability: 0.0,
        };
        let mut net = lossy(Some(calm));
        assert!(!delivered(&mut net, 0));
        assert!(!delivered(&mut net, 100 * MS - 1));
        assert!(delivered(&mut net, 100 * MS));
        assert!(delivered(&mut net, 500 * MS));
        assert_eq!(
            net.resolved.len(),
            2,
            "only the two chaos-time sends were lost"
        );
        let mut always = lossy(None);
        assert!(!delivered(&mut always, 500 * MS));
    }
}
