//! The article's production metrics over a whole sweep: acquisition wait,
//! lease held time and renewal slack as histograms (p50 / p99 / max),
//! renewal failures, lost-lease events and `fence_rejected_total` as
//! counters — printed under the suite table and exportable as Prometheus
//! text (`fencesim run --metrics FILE`).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::histogram::LogHistogram;
use super::ScenarioResult;
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

    fn histograms(&self) -> [(&'static str, &'static str, &LogHistogram); 3] {
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

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// The "production metrics" table printed after the suite table.
pub fn table(results: &[ScenarioResult]) -> String {
    let w = crate::report::table::column_width(results.iter().map(|r| r.name.as_str()));
    let mut s = format!(
        "\nproduction metrics (ms: p50 / p99 / max)\n{:<w$}  {:>26}  {:>26}  {:>22}  {:>8}  {:>5}  {:>14}\n",
        "scenario", "acquisition wait", "lease held", "renewal slack", "renew✗", "lost", "fence_rejected"
    );
    for r in results {
        let p = &r.agg.production;
        let cell = |h: &LogHistogram| {
            if h.count == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} / {} / {}",
                    ms(h.quantile(0.5)),
                    ms(h.quantile(0.99)),
                    ms(h.max)
                )
            }
        };
        let _ = writeln!(
            s,
            "{:<w$}  {:>26}  {:>26}  {:>22}  {:>8}  {:>5}  {:>14}",
            r.name,
            cell(&p.acquisition_wait_ns),
            cell(&p.lease_held_ns),
            cell(&p.renewal_slack_ns),
            p.renewal_failures,
            p.lost_leases,
            r.agg.fence_rejected_total
        );
    }
    s
}

fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Prometheus text exposition (version 0.0.4): one summary per duration
/// metric and one counter per count, labelled by scenario and protocol.
pub fn prometheus(results: &[ScenarioResult]) -> String {
    let mut s = String::new();
    let names = ["acquisition_wait", "lease_held", "renewal_slack"];
    for (i, name) in names.iter().enumerate() {
        let help = results
            .first()
            .map_or("", |r| r.agg.production.histograms()[i].1);
        let _ = writeln!(s, "# HELP fencesim_{name}_seconds {help}");
        let _ = writeln!(s, "# TYPE fencesim_{name}_seconds summary");
        for r in results {
            let h = r.agg.production.histograms()[i].2;
            let l = format!(
                "scenario=\"{}\",protocol=\"{}\"",
                label(&r.name),
                label(&r.protocol)
            );
            for q in [0.5, 0.99, 1.0] {
                let _ = writeln!(
                    s,
                    "fencesim_{name}_seconds{{{l},quantile=\"{q}\"}} {}",
                    h.quantile(q) as f64 / 1e9
                );
            }
            let _ = writeln!(
                s,
                "fencesim_{name}_seconds_sum{{{l}}} {}",
                h.sum as f64 / 1e9
            );
            let _ = writeln!(s, "fencesim_{name}_seconds_count{{{l}}} {}", h.count);
        }
    }
    type Counter = (&'static str, &'static str, fn(&ScenarioResult) -> u64);
    let counters: [Counter; 3] = [
        (
            "renewal_failures_total",
            "renewals the coordinator refused",
            |r| r.agg.production.renewal_failures,
        ),
        (
            "lost_lease_total",
            "holders that learned they lost their lease",
            |r| r.agg.production.lost_leases,
        ),
        (
            "fence_rejected_total",
            "superseded writes the resource refused: corruptions prevented",
            |r| r.agg.fence_rejected_total,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(s, "# HELP fencesim_{name} {help}");
        let _ = writeln!(s, "# TYPE fencesim_{name} counter");
        for r in results {
            let _ = writeln!(
                s,
                "fencesim_{name}{{scenario=\"{}\",protocol=\"{}\"}} {}",
                label(&r.name),
                label(&r.protocol),
                value(r)
            );
        }
    }
    s
}
