//! The TTL trade-off sweep: the article's claim that fencing separates the
//! availability trade-off from data safety, measured.
//!
//! For each lease TTL, with and without fencing (the same base scenario
//! under `redis-set-nx` and `fenced-cas`, identical faults per seed), it
//! reports:
//! - **takeover time**: from the crash of a worker holding the lease to the
//!   next grant received by anyone (mean over seeds where it happened);
//! - **false lease loss**: leases the coordinator expired while their
//!   holder was alive and had not released — a paused process, not a dead
//!   one (total over seeds);
//! - **corrupted writes**: stale writes the resource accepted (total).
//!
//! Longer TTLs buy fewer false losses with slower takeover; only the fence
//! keeps corrupted writes at zero at every TTL.

use std::collections::BTreeSet;
use std::ops::Range;

use rayon::prelude::*;

use super::pool;
use super::seed::{self, RunSeed, SeedRun};
use crate::check::ViolationKind;
use crate::history::Kind;
use crate::protocol::ProtocolKind;
use crate::scenario::Scenario;
use crate::sim::Options;

/// One point of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtlRow {
    pub ttl_ms: u64,
    pub fencing: bool,
    pub takeover_ms: u64,
    pub false_lease_loss: u64,
    pub corrupted_writes: u64,
}

/// Per-seed measurements, summed commutatively across seeds.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Tally {
    takeover_ns_sum: u64,
    takeovers: u64,
    false_lease_loss: u64,
    corrupted_writes: u64,
}

impl Tally {
    fn merge(self, o: Tally) -> Tally {
        Tally {
            takeover_ns_sum: self.takeover_ns_sum + o.takeover_ns_sum,
            takeovers: self.takeovers + o.takeovers,
            false_lease_loss: self.false_lease_loss + o.false_lease_loss,
            corrupted_writes: self.corrupted_writes + o.corrupted_writes,
        }
    }
}

fn measure(run: &SeedRun) -> Tally {
    let h = &run.outcome.history;
    let mut t = Tally::default();
    let mut crashed: BTreeSet<u16> = BTreeSet::new();
    // grant -> holder, while the holder has not released it
    let mut held: std::collections::BTreeMap<u64, u16> = Default::default();
    let mut crash_of_holder_at: Option<u64> = None;
    for e in &h.events {
        match e.kind {
            Kind::GrantReceived => {
                if let Some(g) = e.grant_id {
                    held.insert(g, e.node);
                }
                if let Some(at) = crash_of_holder_at.take() {
                    t.takeover_ns_sum += e.t_true_ns - at;
                    t.takeovers += 1;
                }
            }
            Kind::ReleaseSent | Kind::LeaseLost => {
                held.retain(|_, n| *n != e.node);
            }
            Kind::Crash => {
                if held.values().any(|&n| n == e.node) && crash_of_holder_at.is_none() {
                    crash_of_holder_at = Some(e.t_true_ns);
                }
                crashed.insert(e.node);
                held.retain(|_, n| *n != e.node);
            }
            Kind::Restart => {
                crashed.remove(&e.node);
            }
            Kind::LeaseExpired => {
                if let Some(holder) = e.grant_id.and_then(|g| held.remove(&g)) {
                    if !crashed.contains(&holder) {
                        t.false_lease_loss += 1;
                    }
                }
            }
            _ => {}
        }
    }
    t.corrupted_writes = run.report.count(ViolationKind::StaleWrite);
    t
}

fn with(base: &Options, kind: ProtocolKind, ttl_ms: u64) -> Options {
    let mut o = base.clone();
    let mut p = crate::protocol::ProtocolConfig::new(kind, ttl_ms * 1_000_000);
    p.replicas = o.protocol.replicas;
    p.renew_every_ns = o.protocol.renew_every_ns;
    o.set_protocol(p);
    o
}

/// Runs the sweep: one row per (TTL, fencing), TTLs ascending, unfenced first.
pub fn sweep(scenario: &Scenario, ttls_ms: &[u64], seeds: Range<u64>, jobs: usize) -> Vec<TtlRow> {
    let mut rows = Vec::new();
    for &ttl_ms in ttls_ms {
        for (fencing, kind) in [
            (false, ProtocolKind::RedisSetNx),
            (true, ProtocolKind::FencedCas),
        ] {
            let opts = with(&scenario.options, kind, ttl_ms);
            let tally = pool::install(jobs, || {
                seeds
                    .clone()
                    .into_par_iter()
                    .map(|seed| {
                        let run = seed::run(&opts, seed, RunSeed::default());
                        let tally = measure(&run);
                        seed::recycle(run.outcome.history);
                        tally
                    })
                    .reduce(Tally::default, Tally::merge)
            });
            rows.push(TtlRow {
                ttl_ms,
                fencing,
                takeover_ms: tally.takeover_ns_sum / tally.takeovers.max(1) / 1_000_000,
                false_lease_loss: tally.false_lease_loss,
                corrupted_writes: tally.corrupted_writes,
            });
        }
    }
    rows
}
