//! The article's production metrics, measured on a run's history:
//!
//! - **acquisition wait**: from a worker's first `acquire_sent` for an
//!   operation to the `grant_received` that ends the wait;
//! - **lease held**: from `grant_received` to the holder's `release_sent`,
//!   `lease_lost`, `op_abandoned` or crash (or the end of the run);
//! - **renewal slack**: at each `renew_ok`, how much of the lease was left
//!   (true time), i.e. how close the holder came to losing it;
//! - **renewal failures** and **lost-lease events**;
//! - **`fence_rejected_total`**: superseded writes the resource refused —
//!   each one a corruption prevented (from [`super::Info`]).
//!
//! Durations are true-time nanoseconds from the harness's records, never a
//! node's own clock or account. Time running backwards (refused by
//! `history::validate`, possible in a history built in memory) counts as 0.

use super::node_map::NodeMap;
use super::KindSet;
use crate::history::{Event, Kind};

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RunMetrics {
    pub acquisition_wait_ns: Vec<u64>,
    pub lease_held_ns: Vec<u64>,
    pub renewal_slack_ns: Vec<u64>,
    pub renewal_failures: u64,
    pub lost_leases: u64,
}

#[derive(Default)]
pub struct Metrics {
    pub out: RunMetrics,
    /// worker -> since when it has been asking for a lease.
    waiting: NodeMap<u64>,
    /// worker -> since when it has held one.
    holding: NodeMap<u64>,
}

/// The records [`Metrics::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[
    Kind::AcquireSent,
    Kind::GrantReceived,
    Kind::ReleaseSent,
    Kind::LeaseLost,
    Kind::OpAbandoned,
    Kind::Crash,
    Kind::RenewOk,
    Kind::RenewFailed,
]);

impl Metrics {
    pub fn observe(&mut self, e: &Event) {
        let t = e.t_true_ns;
        match e.kind {
            Kind::AcquireSent => {
                self.waiting.or_insert(e.node, t);
            }
            Kind::GrantReceived => {
                if let Some(since) = self.waiting.remove(e.node) {
                    self.out.acquisition_wait_ns.push(t.saturating_sub(since));
                }
                self.holding.or_insert(e.node, t);
            }
            Kind::ReleaseSent | Kind::LeaseLost | Kind::OpAbandoned | Kind::Crash => {
                if let Some(since) = self.holding.remove(e.node) {
                    self.out.lease_held_ns.push(t.saturating_sub(since));
                }
                if e.kind == Kind::LeaseLost {
                    self.out.lost_leases += 1;
                }
                if e.kind == Kind::Crash {
                    self.waiting.remove(e.node);
                }
            }
            Kind::RenewOk => self.out.renewal_slack_ns.push(e.value.unwrap_or(0)),
            Kind::RenewFailed => self.out.renewal_failures += 1,
            _ => {}
        }
    }

    /// Empties every table (keeping the per-node maps' allocations).
    pub fn clear(&mut self) {
        let Metrics {
            out,
            waiting,
            holding,
        } = self;
        *out = RunMetrics::default();
        waiting.clear();
        holding.clear();
    }

    /// The run's metrics; leaves `self` empty for the next history.
    pub fn finish(&mut self, end_ns: u64) -> RunMetrics {
        for (_, since) in self.holding.drain() {
            self.out.lease_held_ns.push(end_ns.saturating_sub(since));
        }
        self.waiting.clear();
        std::mem::take(&mut self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: u64, node: u16, kind: Kind) -> Event {
        Event::new(t, t, node, kind)
    }

    #[test]
    fn wait_runs_from_first_attempt_to_grant_and_hold_from_grant_to_release() {
        let mut m = Metrics::default();
        for e in [
            ev(10, 0, Kind::AcquireSent),
            ev(30, 0, Kind::AcquireSent), // a retry: the wait started at 10
            ev(50, 0, Kind::GrantReceived),
            ev(90, 0, Kind::ReleaseSent),
            ev(95, 1, Kind::AcquireSent),
            ev(99, 1, Kind::GrantReceived),
        ] {
            m.observe(&e);
        }
        let out = m.finish(120);
        assert_eq!(out.acquisition_wait_ns, vec![40, 4]);
        assert_eq!(
            out.lease_held_ns,
            vec![40, 21],
            "an unreleased lease is held until the end"
        );
    }
}
