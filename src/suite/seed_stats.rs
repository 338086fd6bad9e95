//! Per-seed distributions of the checker's metrics, and the seed worth
//! drawing when a scenario found nothing: the lowest one in which the fence
//! rejected a stale write (the safe twin's picture of the same story).
//!
//! The sweep folds each seed's [`Report`] metrics into histograms (value →
//! number of seeds) as part of its [`crate::suite::Aggregate`], so the
//! report (`--report`) charts the runs the sweep judged and never runs a
//! seed again; shard JSON carries them, so a merged report has them too.
//! The fold is commutative — maps merge by addition, minima by min — so
//! the result is the same for any `--jobs` and any split into shards. Only what the checker measures is charted; richer metrics
//! (acquisition wait, held time, renewal slack) arrive with issue 3 as more
//! entries of [`SERIES`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::Report;

/// Charted metrics: (checker metric name, what one seed's value means).
pub const SERIES: [(&str, &str); 4] = [
    (
        "fence_rejected_total",
        "stale writes the fence rejected in the seed (each one a corruption prevented)",
    ),
    (
        "stale_attempts",
        "writes of a superseded generation that reached the resource",
    ),
    (
        "overlap_ms",
        "ms during which two workers both believed they held the lock",
    ),
    (
        "late_writes",
        "writes accepted from an expired holder before any newer grant",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedStats {
    pub seeds: u64,
    /// One histogram per [`SERIES`] entry: metric value -> seeds.
    pub hist: [BTreeMap<u64, u64>; SERIES.len()],
    pub first_rejected_seed: Option<u64>,
}

impl SeedStats {
    pub fn add(mut self, seed: u64, report: &Report) -> SeedStats {
        self.add_mut(seed, report);
        self
    }

    /// [`SeedStats::add`] in place (the sweep's fold).
    pub fn add_mut(&mut self, seed: u64, report: &Report) {
        self.seeds += 1;
        for (i, (name, _)) in SERIES.iter().enumerate() {
            let v = report
                .metric(name)
                .expect("SERIES names are checker metrics");
            *self.hist[i].entry(v).or_insert(0) += 1;
        }
        if report.info.fence_rejected_total > 0 {
            self.first_rejected_seed = Some(self.first_rejected_seed.map_or(seed, |s| s.min(seed)));
        }
    }

    pub fn merge(mut self, o: SeedStats) -> SeedStats {
        self.seeds += o.seeds;
        for (mine, theirs) in self.hist.iter_mut().zip(o.hist) {
            for (v, n) in theirs {
                *mine.entry(v).or_insert(0) += n;
            }
        }
        self.first_rejected_seed = match (self.first_rejected_seed, o.first_rejected_seed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rejected: u64) -> Report {
        let mut r = Report::default();
        r.info.fence_rejected_total = rejected;
        r
    }

    #[test]
    fn merging_in_any_order_gives_the_same_stats() {
        let a = SeedStats::default().add(3, &report(1)).add(1, &report(0));
        let b = SeedStats::default().add(2, &report(2));
        let ab = a.clone().merge(b.clone());
        let ba = b.merge(a);
        assert_eq!(ab, ba);
        assert_eq!(ab.seeds, 3);
        assert_eq!(ab.first_rejected_seed, Some(2));
        assert_eq!(ab.hist[0].get(&0), Some(&1));
        assert_eq!(ab.hist[0].values().sum::<u64>(), 3);
    }
}
