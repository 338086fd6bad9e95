//! What a campaign has found so far: counts, and every distinct failure
//! once, with the seed that reproduces it in the fewest events.
//!
//! [`Findings::merge`] is commutative and associative — counts add, and of
//! two sightings of one failure the one with fewer events wins (ties: the
//! earlier draw) while their hits add — so the findings of a campaign are
//! the same whatever the batches, threads, slices or resumptions it ran in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One distinct failure: a scenario and a failure signature
/// ([`crate::suite::signature`]), with its fastest seed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// The scenario file, as given.
    pub scenario: String,
    /// FNV-1a of `shape`, 16 hex digits: the failure's key.
    pub signature: String,
    /// The violation kinds with the shape of their evidence, and failed
    /// metric assertions ([`crate::suite::signature::Signature::text`]).
    pub shape: String,
    pub kinds: Vec<String>,
    /// The scenario's expectation tolerates it (an unfenced twin's stale
    /// write): kept and shown, but not a failed campaign.
    pub expected: bool,
    /// The seed reproducing it in the fewest events.
    pub seed: u64,
    /// Which of the campaign's draws gave that seed.
    pub draw: u64,
    pub events: u64,
    /// Runs that failed this way.
    pub hits: u64,
    /// The command that replays `seed`.
    pub replay: String,
    /// Under `--shrink`: the failure as a small scripted scenario.
    pub shrunk: Option<Shrunk>,
}

/// A failure shrunk to a scripted scenario (`fencesim shrink`'s result), or
/// why it could not be.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Shrunk {
    /// The violation kind the shrunk file keeps.
    pub kind: String,
    /// The scenario file, as TOML (empty when `error` says why not).
    pub text: String,
    /// Faults and events, before and after.
    pub faults: [u64; 2],
    pub run_events: [u64; 2],
    pub error: Option<String>,
}

/// The key of a distinct failure: scenario position and signature hash.
pub type Key = (usize, u64);

/// Counts and distinct failures of some of a campaign's runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Runs: draws times scenarios.
    pub runs: u64,
    pub failing_runs: u64,
    pub events: u64,
    pub failures: BTreeMap<Key, Failure>,
}

impl Failure {
    /// Whether this sighting reproduces faster than `other` (fewer events,
    /// then the earlier draw).
    fn faster_than(&self, other: &Failure) -> bool {
        (self.events, self.draw) < (other.events, other.draw)
    }
}

impl Findings {
    /// Keeps `f` under `key`: the faster sighting's seed, both hit counts.
    pub fn keep(&mut self, key: Key, f: Failure) {
        match self.failures.entry(key) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(f);
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let kept = o.get_mut();
                let hits = kept.hits + f.hits;
                if f.faster_than(kept) {
                    *kept = f;
                }
                kept.hits = hits;
            }
        }
    }

    /// Counts one more failing run of `key`, which failed in `events`
    /// events at draw `draw`; `failure` makes its entry, and is called only
    /// when the failure is new or this run is its fastest yet.
    pub fn sighting(
        &mut self,
        key: Key,
        events: u64,
        draw: u64,
        failure: impl FnOnce() -> Failure,
    ) {
        if let Some(kept) = self.failures.get_mut(&key) {
            if (events, draw) >= (kept.events, kept.draw) {
                kept.hits += 1;
                return;
            }
        }
        self.keep(key, failure());
    }

    pub fn merge(mut self, other: Findings) -> Findings {
        self.runs += other.runs;
        self.failing_runs += other.failing_runs;
        self.events += other.events;
        for (key, f) in other.failures {
            self.keep(key, f);
        }
        self
    }

    /// Distinct failures the scenarios' expectations do not tolerate.
    pub fn unexpected(&self) -> u64 {
        self.failures.values().filter(|f| !f.expected).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sighting(draw: u64, events: u64) -> Failure {
        Failure {
            scenario: "s.toml".into(),
            signature: "00".into(),
            shape: "stale_write:".into(),
            kinds: vec!["stale_write".into()],
            expected: false,
            seed: draw * 7,
            draw,
            events,
            hits: 1,
            replay: String::new(),
            shrunk: None,
        }
    }

    #[test]
    fn a_failure_seen_twice_keeps_its_fastest_seed_and_both_hits_in_any_order() {
        let key = || (0, 0x5ea1);
        let one = |f: Failure| {
            let mut x = Findings::default();
            x.keep(key(), f);
            x
        };
        let (a, b, c) = (sighting(3, 900), sighting(5, 400), sighting(1, 400));
        let ab = one(a.clone()).merge(one(b.clone())).merge(one(c.clone()));
        let ba = one(c).merge(one(b)).merge(one(a));
        assert_eq!(ab, ba);
        let kept = &ab.failures[&key()];
        assert_eq!((kept.draw, kept.events, kept.hits), (1, 400, 3));
    }
}
