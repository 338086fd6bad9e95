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

use super::options::{Fault, Options, RandomFaults, When};
use super::rng::Rng;
use crate::protocol::NodeId;

const MS: u64 = 1_000_000;

/// Uniform in `lo_ns..=hi_ns`, in whole milliseconds (so the fault can be
/// written back as `*_ms` exactly).
fn ms_between(rng: &mut Rng, lo_ns: u64, hi_ns: u64) -> u64 {
    rng.between(lo_ns / MS, hi_ns.max(lo_ns) / MS) * MS
}

pub fn resolve_random(o: &Options, seed: u64) -> Vec<Fault> {
    let r: &RandomFaults = &o.random;
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
            one_way: false,
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
    out
}
