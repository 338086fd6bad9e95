//! The article's production metrics over a whole sweep: acquisition wait,
//! lease held time and renewal slack as histograms (p50 / p99 / max),
//! renewal failures, lost-lease events and `fence_rejected_total` as
//! counters — printed under the suite table and exportable as Prometheus
//! text (`fencesim run --metrics FILE`), both rendered by
//! `report::production`.

use serde::{Deserialize, Serialize};

use super::histogram::LogHistogram;
use crate::check::metrics::RunMetrics;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Production {
    pub acquisition_wait_ns: LogHistogram,
    pub lease_held_ns: LogHistogram,
    pub renewal_slack_ns: LogHistogram,
    pub renewal_failures: u64,
    pub lost_leases: u64,
}

impl Production {
    pub fn add(&mut self, m: &RunMetrics) {
        for &v in &m.acquisition_wait_ns {
            self.acquisition_wait_ns.record(v);
        }
        for &v in &m.lease_held_ns {
            self.lease_held_ns.record(v);
        }
        for &v in &m.renewal_slack_ns {
            self.renewal_slack_ns.record(v);
        }
        self.renewal_failures += m.renewal_failures;
        self.lost_leases += m.lost_leases;
    }

    pub fn merge(&mut self, o: &Production) {
        self.acquisition_wait_ns.merge(&o.acquisition_wait_ns);
        self.lease_held_ns.merge(&o.lease_held_ns);
        self.renewal_slack_ns.merge(&o.renewal_slack_ns);
        self.renewal_failures += o.renewal_failures;
        self.lost_leases += o.lost_leases;
    }

    /// (name, help text, histogram) of each duration metric, in export order.
    pub fn histograms(&self) -> [(&'static str, &'static str, &LogHistogram); 3] {
        [
            (
                "acquisition_wait",
                "from a worker's first acquire attempt for an operation to its grant",
                &self.acquisition_wait_ns,
            ),
            (
                "lease_held",
                "from receiving a grant to releasing it, losing it, giving up or crashing",
                &self.lease_held_ns,
            ),
            (
                "renewal_slack",
                "lease time left when a renewal succeeded",
                &self.renewal_slack_ns,
            ),
        ]
    }
}
