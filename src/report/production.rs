//! The production metrics of a sweep ([`crate::suite::production`]) for
//! people and for scrapers: the table printed under the suite table and the
//! Prometheus text exposition written by `fencesim run --metrics FILE`. The
//! sweep only counts; every character of both outputs is decided here.

use std::fmt::Write;

use crate::suite::histogram::LogHistogram;
use crate::suite::ScenarioResult;

fn ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// The "production metrics" table printed after the suite table.
pub fn table(results: &[ScenarioResult]) -> String {
    let w = super::table::column_width(results.iter().map(|r| r.name.as_str()));
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
