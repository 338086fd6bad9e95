//! Turning random fault rates into a fault script.
//!
//! Each run draws its random faults up front from the `faults` stream: per
//! listed node, one pause and one crash with their probabilities, and at
//! most one partition isolating a random node. The result is plain scripted
//! [`Fault`]s, so a failing run can be written out as a scenario with no
//! randomness left in its faults (shrinking and counterexample replay rely
//! on that). Per-message loss and delay are drawn as messages are sent (see
//! `network.rs`) and join the script the same way.
//!
//! Draw order is fixed: pauses (node order), crashes (node order),
//! partition, failover. New kinds are appended, never inserted. Every probability costs exactly one draw whether it fires or
//! not, so changing one rate does not move the others.
//!
//! **Anchored faults** (FoundationDB's BUGGIFY idea: strike where the code
//! is fragile, not at uniform times) come from their own stream
//! `anchored`, so switching them on moves no draw above. Each is a scripted
//! fault with `When::After` — "pause worker/A right after its 2nd
//! read_ok" — so a run that had one replays, shrinks and is written out by
//! `--emit-scenario` like any other script. The same vocabulary
//! ([`strikes_at`]) is what `fencesim search` enumerates exhaustively.

use super::options::{Fault, Options, RandomFaults, When};
use super::rng::Rng;
use crate::history::Kind;
use crate::protocol::{Nanos, NodeId, Role};

const MS: u64 = 1_000_000;

/// Uniform in `lo_ns..=hi_ns`, in whole milliseconds (so the fault can be
/// written back as `*_ms` exactly).
fn ms_between(rng: &mut Rng, lo_ns: u64, hi_ns: u64) -> u64 {
    rng.between(lo_ns / MS, hi_ns.max(lo_ns) / MS) * MS
}

pub fn resolve_random(o: &Options, seed: u64) -> Vec<Fault> {
    let r: &RandomFaults = &o.random;
    // A zero probability never fires (`chance(0.0)` is false for every
    // draw), and this stream feeds nothing else: with nothing that can
    // fire, the draws below would change nothing, so skip the stream's set-up.
    let can_fire = (!r.pause_nodes.is_empty() && r.pause_probability > 0.0)
        || (!r.crash_nodes.is_empty() && r.crash_probability > 0.0)
        || r.partition_probability > 0.0
        || r.failover_probability > 0.0;
    if !can_fire {
        return resolve_anchored(o, seed);
    }
    let mut rng = Rng::stream(seed, "faults");
    let mut out = Vec::new();
    let window_ms = (r.window_ns / MS).max(1);
    for &node in &r.pause_nodes {
        let fires = rng.chance(r.pause_probability);
        let at = rng.below(window_ms) * MS;
        let duration_ns = ms_between(&mut rng, r.pause_min_ns, r.pause_max_ns);
        if fires {
            out.push(Fault::Pause {
                node,
                when: When::At(at),
                duration_ns,
            });
        }
    }
    for &node in &r.crash_nodes {
        let fires = rng.chance(r.crash_probability);
        let at = rng.below(window_ms) * MS;
        let restart = ms_between(&mut rng, r.restart_min_ns, r.restart_max_ns);
        if fires {
            out.push(Fault::Crash {
                node,
                when: When::At(at),
                restart_after_ns: Some(restart),
            });
        }
    }
    let fires = rng.chance(r.partition_probability);
    let at = rng.below(window_ms) * MS;
    let duration_ns = ms_between(&mut rng, r.partition_min_ns, r.partition_max_ns);
    let isolated = rng.below(o.nodes.len().max(1) as u64) as u16;
    if fires && o.nodes.len() > 1 {
        let rest = (0..o.nodes.len() as u16)
            .filter(|&i| i != isolated)
            .map(NodeId)
            .collect();
        out.push(Fault::Partition {
            when: When::At(at),
            duration_ns,
            side_a: vec![NodeId(isolated)],
            side_b: rest,
            one_way: r.partition_one_way,
        });
    }
    let fails_over = rng.chance(r.failover_probability);
    let at = rng.below(window_ms) * MS;
    let rejoin = ms_between(&mut rng, r.restart_min_ns, r.restart_max_ns);
    if fails_over && o.protocol.replicas > 1 {
        out.push(Fault::Failover {
            when: When::At(at),
            restart_after_ns: Some(rejoin),
        });
    }
    out.extend(resolve_anchored(o, seed));
    out
}

/// How a fault strikes right after a protocol event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strike {
    /// Pause the node that recorded the event (a GC pause mid-update).
    Pause,
    /// Pause a worker long enough that its next write goes out after its
    /// lease expired (the article's stale write).
    PastTtl,
    /// Crash the node (a lock server before it replicates a grant, a
    /// resource right after it acknowledged a write); it restarts.
    Crash,
    /// Fail the coordinator group over (the primary dies before it
    /// replicates the grant it just sent).
    Failover,
    /// Stall the resource (a stop-the-world pause of a node the scenario
    /// may crash) right after a worker sent it a write: writes pile up and
    /// are checked, in arrival order, at resume.
    Stall,
    /// Cut the node off from every other node, both ways, for the
    /// scenario's longest random partition, then heal (a switch failure
    /// right after it became the owner).
    Partition,
    /// Only the node's outgoing messages are lost for that long: it still
    /// hears the others, they no longer hear it (the heartbeats that never
    /// arrive while its own view looks healthy).
    PartitionOneWay,
    /// Cut the node off, both ways, from every other node but the
    /// resources, for that long: the lock service or the pair's peer is
    /// unreachable while the storage still is (GitHub 2012: the switches
    /// between the pair failed, the shared storage did not).
    Split,
    /// The message the node sent with the event is lost.
    Loss,
    /// The message the node sent with the event is held for the scenario's
    /// longest delay spike (the delayed packet that lands after the TTL).
    Delay,
    /// The message the node sent with the event is delivered twice, the
    /// copy after the longest delay spike (a retransmission that lands late).
    Duplicate,
    /// Delivery order: the message the node sent with the event arrives the
    /// latency jitter (`latency_max - latency_min`) later, so every message
    /// sent within that window on another link overtakes it.
    Late,
    /// The node's wall clock steps forward by the pause past the TTL (an
    /// NTP step right after a grant: a lock server that keeps its leases
    /// on the wall clock, as Redis does, expires the key early).
    ClockForward,
    /// The node's wall clock steps back by as much (a holder or server that
    /// times leases on the wall clock believes they last longer).
    ClockBack,
}

impl Strike {
    pub fn name(self) -> &'static str {
        match self {
            Strike::Pause => "pause",
            Strike::PastTtl => "pause-past-ttl",
            Strike::Crash => "crash",
            Strike::Failover => "failover",
            Strike::Stall => "stall",
            Strike::Partition => "partition",
            Strike::PartitionOneWay => "partition-one-way",
            Strike::Split => "partition-from-peers",
            Strike::Loss => "loss",
            Strike::Delay => "delay",
            Strike::Duplicate => "duplicate",
            Strike::Late => "late",
            Strike::ClockForward => "clock-forward",
            Strike::ClockBack => "clock-back",
        }
    }
}

impl Strike {
    pub const ALL: [Strike; 14] = [
        Strike::Pause,
        Strike::PastTtl,
        Strike::Crash,
        Strike::Failover,
        Strike::Stall,
        Strike::Partition,
        Strike::PartitionOneWay,
        Strike::Split,
        Strike::Loss,
        Strike::Delay,
        Strike::Duplicate,
        Strike::Late,
        Strike::ClockForward,
        Strike::ClockBack,
    ];

    pub fn from_name(name: &str) -> Option<Strike> {
        Strike::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether this strike acts on the message sent with its event (a
    /// link fault: `Drop`/`Delay`/`Duplicate` of that message's `nth`).
    pub fn is_message(self) -> bool {
        matches!(
            self,
            Strike::Loss | Strike::Delay | Strike::Duplicate | Strike::Late
        )
    }
}

/// The events at which a partition may start: ownership changes (a grant
/// issued or received, a pair node becoming active). A partition anywhere
/// else is a message loss the message strikes already place, and one per
/// resource write would multiply the search for nothing new.
fn partition_anchor(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::GrantIssued | Kind::GrantReceived | Kind::BecameActive
    )
}

/// Every other node but the resources: what [`Strike::Split`] cuts off.
fn peers(o: &Options, node: NodeId) -> Vec<NodeId> {
    (0..o.nodes.len() as u16)
        .map(NodeId)
        .filter(|&n| n != node && !matches!(o.nodes[n.0 as usize].role, Role::Resource(_)))
        .collect()
}

/// The message strikes the network vocabulary allows: loss, a delay spike
/// and duplication where their rates are on, reordering where latency has
/// jitter. Placed on the message a non-resource node sends with an anchor
/// event or a worker's `effect_sent` (resources only reply; a lost reply is
/// a retransmission the worker-side strikes already cover).
pub fn message_strikes(o: &Options, node: NodeId, kind: Kind) -> Vec<Strike> {
    let Some(spec) = o.nodes.get(node.0 as usize) else {
        return Vec::new();
    };
    // A worker's call to an effect sink is a message worth striking too (a
    // late or lost call is what makes a provider retry, the duplicate
    // effect's cause); pauses stay at the lease-domain anchors.
    let effect_call = kind == Kind::EffectSent && spec.role.is_worker();
    if matches!(spec.role, Role::Resource(_))
        || !(effect_call || anchor_kinds(&spec.role).contains(&kind))
    {
        return Vec::new();
    }
    let n = &o.network;
    let mut out = Vec::new();
    if n.loss_probability > 0.0 {
        out.push(Strike::Loss);
    }
    if n.delay_probability > 0.0 && n.delay_max_ns > 0 {
        out.push(Strike::Delay);
    }
    if n.duplicate_probability > 0.0 {
        out.push(Strike::Duplicate);
    }
    if n.latency_max_ns > n.latency_min_ns {
        out.push(Strike::Late);
    }
    out
}

/// The scripted link fault for a message strike on the `nth` message
/// `from -> to`.
pub fn message_fault(o: &Options, strike: Strike, from: NodeId, to: NodeId, nth: u32) -> Fault {
    let n = &o.network;
    let spike_ns = if n.delay_max_ns > 0 {
        n.delay_max_ns
    } else {
        n.latency_max_ns
    };
    match strike {
        Strike::Loss => Fault::Drop { from, to, nth },
        Strike::Duplicate => Fault::Duplicate {
            from,
            to,
            nth,
            delay_ns: spike_ns,
        },
        Strike::Late => Fault::Delay {
            from,
            to,
            nth,
            delay_ns: (n.latency_max_ns - n.latency_min_ns).max(MS) / MS * MS,
        },
        _ => Fault::Delay {
            from,
            to,
            nth,
            delay_ns: spike_ns,
        },
    }
}

/// The events after which faults may strike a node of this role.
fn anchor_kinds(role: &Role) -> &'static [Kind] {
    match role {
        Role::Worker(_) => &[Kind::GrantReceived, Kind::ReadOk, Kind::WriteSent],
        Role::Coordinator(_) | Role::Server(_) => &[Kind::GrantIssued],
        Role::Resource(_) => &[Kind::WriteAccepted],
        Role::Alt(_) => &[Kind::BecameActive],
    }
}

/// The strikes the scenario's fault vocabulary allows right after `node`
/// records `kind`, with the node each strikes: pauses only where random
/// pauses may strike, crashes (and stalls) only where random crashes may,
/// failover only with replicas and a failover rate. Empty when nothing may
/// strike there.
pub fn strikes_at(o: &Options, node: NodeId, kind: Kind) -> Vec<(Strike, NodeId)> {
    let mut out: Vec<(Strike, NodeId)> = own_strikes_at(o, node, kind)
        .into_iter()
        .map(|s| (s, node))
        .collect();
    let r = &o.random;
    if kind == Kind::WriteSent && r.crash_probability > 0.0 {
        if let Some(Role::Worker(w)) = o.nodes.get(node.0 as usize).map(|n| &n.role) {
            if r.crash_nodes.contains(&w.resource) && r.pause_max_ns > 0 {
                out.push((Strike::Stall, w.resource));
            }
        }
    }
    out
}

fn own_strikes_at(o: &Options, node: NodeId, kind: Kind) -> Vec<Strike> {
    let r = &o.random;
    let Some(spec) = o.nodes.get(node.0 as usize) else {
        return Vec::new();
    };
    if !anchor_kinds(&spec.role).contains(&kind) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let pausable = r.pause_probability > 0.0 && r.pause_nodes.contains(&node);
    if pausable {
        out.push(Strike::Pause);
        if spec.role.is_worker() && kind != Kind::WriteSent {
            out.push(Strike::PastTtl);
        }
    }
    let crashable = r.crash_probability > 0.0 && r.crash_nodes.contains(&node);
    if crashable && !spec.role.is_worker() {
        out.push(Strike::Crash);
    }
    if r.failover_probability > 0.0
        && o.protocol.replicas > 1
        && matches!(spec.role, Role::Coordinator(_))
    {
        out.push(Strike::Failover);
    }
    if clocks_in_play(o) && !matches!(spec.role, Role::Resource(_) | Role::Alt(_)) {
        out.push(Strike::ClockForward);
        out.push(Strike::ClockBack);
    }
    if r.partition_probability > 0.0 && o.nodes.len() > 1 && partition_anchor(kind) {
        out.push(Strike::Partition);
        out.push(Strike::PartitionOneWay);
        if !peers(o, node).is_empty() {
            out.push(Strike::Split);
        }
    }
    out
}

/// Whether the scenario's vocabulary has clock faults: some node's clock
/// drifts or jumps (as written, or as the swarm's clock kind made it).
pub fn clocks_in_play(o: &Options) -> bool {
    o.nodes
        .iter()
        .any(|n| n.clock.drift_ppm != 0 || !n.clock.jumps.is_empty())
}

/// A pause that outlives the lease: the TTL plus half of it again (at
/// least 100 ms past), in whole milliseconds.
pub fn past_ttl_ns(o: &Options) -> Nanos {
    let ttl = o.protocol.lease_ttl_ns;
    (ttl + (ttl / 2).max(100 * MS)) / MS * MS
}

/// The scripted fault for `strike` right after the `nth` `kind` of `node`.
/// `pause_ns` is the pause length, `restart_ns` the crash's restart delay;
/// a partition lasts the scenario's longest random partition. Message
/// strikes are link faults: see [`message_fault`].
pub fn strike_fault(
    o: &Options,
    strike: Strike,
    target: NodeId,
    (node, kind, nth): (NodeId, Kind, u32),
    pause_ns: Nanos,
    restart_ns: Nanos,
) -> Fault {
    let when = When::After { node, kind, nth };
    match strike {
        Strike::Pause | Strike::PastTtl | Strike::Stall => Fault::Pause {
            node: target,
            when,
            duration_ns: pause_ns,
        },
        Strike::Crash => Fault::Crash {
            node: target,
            when,
            restart_after_ns: Some(restart_ns),
        },
        Strike::Failover => Fault::Failover {
            when,
            restart_after_ns: Some(restart_ns),
        },
        Strike::Partition | Strike::PartitionOneWay | Strike::Split => Fault::Partition {
            when,
            duration_ns: o.random.partition_max_ns.max(MS) / MS * MS,
            side_a: vec![target],
            side_b: if strike == Strike::Split {
                peers(o, target)
            } else {
                (0..o.nodes.len() as u16)
                    .map(NodeId)
                    .filter(|&n| n != target)
                    .collect()
            },
            one_way: strike == Strike::PartitionOneWay,
        },
        Strike::ClockForward | Strike::ClockBack => Fault::ClockJump {
            node: target,
            when,
            by_ns: if strike == Strike::ClockBack {
                -(past_ttl_ns(o) as i64)
            } else {
                past_ttl_ns(o) as i64
            },
        },
        Strike::Loss | Strike::Delay | Strike::Duplicate | Strike::Late => {
            unreachable!("message strikes are link faults (message_fault)")
        }
    }
}

/// One place an anchored fault may go: (node, event kind, strike, struck
/// node, how many such events the node may record, at most).
type Slot = (NodeId, Kind, Strike, NodeId, u32);

/// Every (node, event, strike) the vocabulary allows, in node order, with
/// the largest `nth` worth drawing: a worker's events up to its ops, a
/// server's or resource's up to every worker's ops together.
pub fn anchored_vocabulary(o: &Options) -> Vec<Slot> {
    let total_ops: u32 = o
        .workers()
        .map(|(_, n)| match n.role {
            Role::Worker(w) => w.ops.max(1),
            _ => 1,
        })
        .sum::<u32>()
        .max(1);
    let mut out = Vec::new();
    for (i, spec) in o.nodes.iter().enumerate() {
        let node = NodeId(i as u16);
        let max_nth = match spec.role {
            Role::Worker(w) => w.ops.max(1),
            _ => total_ops,
        };
        for &kind in anchor_kinds(&spec.role) {
            // Random anchored faults keep their node strikes; partitions
            // are placed by `fencesim search` (the random ones already
            // draw a partition per seed).
            for (strike, target) in strikes_at(o, node, kind) {
                if matches!(
                    strike,
                    Strike::Partition | Strike::PartitionOneWay | Strike::Split
                ) {
                    continue;
                }
                out.push((node, kind, strike, target, max_nth));
            }
        }
    }
    out
}

/// The anchored faults of one seed: `anchored_max` slots, each firing with
/// `anchored_probability`. Every slot costs the same six draws whether it
/// fires or not.
///
/// A slot draws its strike first (uniform over the strikes the vocabulary
/// holds), then a place for it. Drawing the place directly would weight
/// each strike by how many places it has: a worker pause may follow any of
/// nine worker events, a resource crash only the resource's acceptances,
/// so the crash that empties a volatile fence would be one draw in twenty.
pub fn resolve_anchored(o: &Options, seed: u64) -> Vec<Fault> {
    let r = &o.random;
    if r.anchored_probability <= 0.0 || r.anchored_max == 0 {
        return Vec::new();
    }
    let vocabulary = anchored_vocabulary(o);
    if vocabulary.is_empty() {
        return Vec::new();
    }
    let mut strikes: Vec<Strike> = Vec::new();
    for &(_, _, strike, _, _) in &vocabulary {
        if !strikes.contains(&strike) {
            strikes.push(strike);
        }
    }
    let mut rng = Rng::stream(seed, "anchored");
    let mut out = Vec::new();
    for _ in 0..r.anchored_max {
        let fires = rng.chance(r.anchored_probability);
        let strike = strikes[rng.below(strikes.len() as u64) as usize];
        let places: Vec<&Slot> = vocabulary.iter().filter(|s| s.2 == strike).collect();
        let (node, kind, strike, target, max_nth) =
            *places[rng.below(places.len() as u64) as usize];
        let nth = rng.between(1, u64::from(max_nth)) as u32;
        let pause_ns = ms_between(&mut rng, r.pause_min_ns, r.pause_max_ns);
        let restart_ns = ms_between(&mut rng, r.restart_min_ns, r.restart_max_ns);
        if fires {
            let pause_ns = match strike {
                Strike::PastTtl => past_ttl_ns(o),
                _ => pause_ns,
            };
            out.push(strike_fault(
                o,
                strike,
                target,
                (node, kind, nth),
                pause_ns,
                restart_ns,
            ));
        }
    }
    out
}
