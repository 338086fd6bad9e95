//! Sharding's one home: which shard runs which seed, and the rules a set
//! of shard outputs must meet to merge into the unsharded result. `run`,
//! `validate` and `search` ask this module which seeds (or enumeration
//! positions) they own; `merge` and `search --merge` ask it whether the
//! files form one whole; `cli/` only parses the flag and prints.
//!
//! `--shard I/N` runs the seeds whose offset from the range start is `I`
//! modulo `N` (0-based `I`, as Kubernetes' `JOB_COMPLETION_INDEX`).
//! Striding rather than cutting the range into blocks keeps shards equally
//! loaded when cost varies with the seed number, and needs no knowledge of
//! the range size. Every seed lands in exactly one shard, so merging the
//! shards' aggregates (commutative, associative) gives the unsharded
//! result bit for bit. A search's last level is shared the same way, by
//! position in its enumeration ([`Shard::owns_position`]).
//!
//! Merge rules ([`check_set`]): every file is a shard, all of one count,
//! each index `0..N` exactly once ([`complete`]), of the same version,
//! result-changing flags and scenarios (paths, content hashes, non-empty
//! seed ranges); a run shard's aggregate must count exactly its share of
//! the seeds and nothing absurd ([`plausible`]).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A shard as the shard JSON files of `run` and `validate` spell it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ShardJson {
    pub index: u64,
    pub count: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Whether this shard runs `seed` of a range starting at `start`.
    pub fn owns(&self, start: u64, seed: u64) -> bool {
        debug_assert!(seed >= start);
        self.owns_position(seed - start)
    }

    /// Whether this shard runs item `position` (0-based) of an enumeration:
    /// a seed's offset in its range, or a search run's place in its level.
    pub fn owns_position(&self, position: u64) -> bool {
        debug_assert!(self.index < self.count);
        position % self.count == self.index
    }

    /// Item `n` (0-based) of those this shard owns, as a position in the
    /// whole enumeration: a campaign slice's `n`-th draw.
    pub fn nth_position(&self, n: u64) -> u64 {
        self.index + n * self.count
    }

    /// How many seeds of `range` this shard runs.
    pub fn share(&self, range: &Range<u64>) -> u64 {
        let len = range.end.saturating_sub(range.start);
        len / self.count + u64::from(len % self.count > self.index)
    }
}

/// Whether `shard` (`None`: the whole range) runs `seed` of a range
/// starting at `start`.
pub fn runs(shard: Option<Shard>, start: u64, seed: u64) -> bool {
    shard.is_none_or(|s| s.owns(start, seed))
}

/// The seeds of `range` that `shard` (`None`: all) runs, ascending.
pub fn seeds(shard: Option<Shard>, range: Range<u64>) -> impl Iterator<Item = u64> {
    let start = range.start;
    range.filter(move |&seed| runs(shard, start, seed))
}

/// How many seeds of `range` `shard` (`None`: all) runs.
pub fn seed_count(shard: Option<Shard>, range: &Range<u64>) -> u64 {
    shard.map_or(range.end.saturating_sub(range.start), |s| s.share(range))
}

/// Admits shard `index` of `count` into `seen`: in range, and not twice.
fn admit(seen: &mut BTreeSet<u64>, index: u64, count: u64) -> Result<(), String> {
    if index >= count {
        return Err(format!(
            "shard {index}/{count} is out of range; expected I/N with I < N"
        ));
    }
    if !seen.insert(index) {
        return Err(format!("shard {index}/{count} appears twice"));
    }
    Ok(())
}

/// Refuses a set missing some of `0..count`, naming the first few.
fn none_missing(seen: &BTreeSet<u64>, count: u64) -> Result<(), String> {
    // Lazily, and only the first few: `count` may be absurd.
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains(i))
        .take(10)
        .map(|i| format!("{i}/{count}"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing shards: {}", missing.join(", ")))
    }
}

/// Whether `indices` are each of `0..count` exactly once (any order).
pub fn complete(indices: &[u64], count: u64) -> Result<(), String> {
    // A set, not a vector sized by a count read from a file.
    let mut seen = BTreeSet::new();
    for &i in indices {
        admit(&mut seen, i, count)?;
    }
    none_missing(&seen, count)
}

/// What must be equal across shards for one scenario: path, content hash,
/// seed range.
pub type Identity<'a> = (&'a str, &'a str, u64, u64);

/// What the merge rules read from one shard file, whichever command wrote it.
pub struct View<'a> {
    pub shard: Option<Shard>,
    pub version: &'a str,
    /// The flags that change results, and how to name them in an error.
    pub flags: (String, &'static str),
    pub scenarios: Vec<Identity<'a>>,
}

/// Checks that `views` (read from `files`, in order) are the shards `0..N`
/// of one sweep; the error names the file.
pub fn check_set(files: &[String], views: &[View]) -> Result<(), String> {
    let (Some(first), Some(first_file)) = (views.first(), files.first()) else {
        return Err("no shard to merge".into());
    };
    let count = first.shard.map_or(0, |s| s.count);
    let mut seen = BTreeSet::new();
    for (file, v) in files.iter().zip(views) {
        let bad = |what: &str| format!("{file}: {what} differs from {first_file}");
        let Some(shard) = v.shard else {
            return Err(format!("{file}: not a shard (run it with --shard I/N)"));
        };
        if shard.count != count {
            return Err(bad("the shard count"));
        }
        if shard.index >= count {
            admit(&mut seen, shard.index, count).map_err(|e| format!("{file}: {e}"))?;
        }
        if let Some((path, _, start, end)) = v.scenarios.iter().find(|s| s.2 >= s.3) {
            return Err(format!(
                "{file}: {path}: seed range {start}..{end} is empty; expected seed_start < seed_end"
            ));
        }
        admit(&mut seen, shard.index, count).map_err(|e| format!("{file}: {e}"))?;
        if v.version != first.version {
            return Err(bad("the fencesim version"));
        }
        if v.flags.0 != first.flags.0 {
            return Err(bad(v.flags.1));
        }
        if v.scenarios != first.scenarios {
            return Err(bad(
                "the scenario list (paths, content hashes, seed ranges)",
            ));
        }
    }
    none_missing(&seen, count)
}

/// Refuses a shard's aggregate whose counts could not come from its seeds:
/// the seed count must be the shard's share of `range`, and every other
/// counter small enough that adding `shards` of them cannot overflow (a
/// hand-edited or corrupt file is bad input, not a panic).
pub fn plausible(
    part: &super::Aggregate,
    shard: Shard,
    range: &Range<u64>,
    shards: usize,
) -> Result<(), String> {
    let owned = shard.share(range);
    if part.seeds != owned {
        return Err(format!(
            "shard {shard} reports {} seeds; its share of {}..{} is {owned}",
            part.seeds, range.start, range.end
        ));
    }
    let bound = u64::MAX / 2 / shards.max(1) as u64;
    let p = &part.production;
    let histograms = [
        &p.acquisition_wait_ns,
        &p.lease_held_ns,
        &p.renewal_slack_ns,
    ];
    let counters = [
        part.events,
        part.seeds_with_stale_attempts,
        part.fence_rejected_total,
        part.seeds_with_unfinished,
        part.seeds_at_event_budget,
        part.metric_failures,
        part.diverged_seeds,
        p.renewal_failures,
        p.lost_leases,
    ]
    .into_iter()
    .chain(part.failing_seeds)
    .chain(
        part.mixes
            .values()
            .flat_map(|m| std::iter::once(m.seeds).chain(m.failing_seeds)),
    )
    .chain(
        histograms
            .iter()
            .flat_map(|h| std::iter::once(h.count).chain(h.buckets.values().copied())),
    );
    for n in counters {
        if n > bound {
            return Err(format!(
                "a count of {n} is implausible; expected at most {bound} per shard"
            ));
        }
    }
    Ok(())
}

/// Merges one scenario's shard aggregates (each checked by [`plausible`]
/// first) into the unsharded aggregate, keeping the lowest seed's
/// determinism divergence text.
pub fn merge_aggregates(
    parts: Vec<(super::Aggregate, Shard, Option<String>)>,
    range: &Range<u64>,
) -> Result<(super::Aggregate, Option<String>), String> {
    let shards = parts.len();
    let mut agg = super::Aggregate::default();
    let mut divergence: Option<(u64, String)> = None;
    for (part, shard, text) in parts {
        plausible(&part, shard, range, shards)?;
        if let (Some(seed), Some(text)) = (part.first_diverged, text) {
            if divergence.as_ref().is_none_or(|(d, _)| seed < *d) {
                divergence = Some((seed, text));
            }
        }
        agg = agg.merge(part);
    }
    Ok((agg, divergence.map(|(_, text)| text)))
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let shape = || format!("{s:?} is not a shard; expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(shape)?;
        let index: u64 = i.trim().parse().map_err(|_| shape())?;
        let count: u64 = n.trim().parse().map_err(|_| shape())?;
        if count == 0 || index >= count {
            return Err(shape());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_belongs_to_exactly_one_shard() {
        let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
        for seed in 10..40 {
            assert_eq!(shards.iter().filter(|s| s.owns(10, seed)).count(), 1);
        }
        assert!(shards[0].owns(10, 10) && shards[1].owns(10, 11) && shards[0].owns(10, 13));
        for len in 0..12 {
            let range = 10..10 + len;
            let total: u64 = shards.iter().map(|s| s.share(&range)).sum();
            assert_eq!(total, len);
            for s in &shards {
                assert_eq!(
                    s.share(&range),
                    seeds(Some(*s), range.clone()).count() as u64
                );
            }
        }
    }

    #[test]
    fn a_set_of_shards_is_complete_only_with_each_index_once() {
        assert!(complete(&[2, 0, 1], 3).is_ok());
        assert_eq!(complete(&[0, 0], 2).unwrap_err(), "shard 0/2 appears twice");
        assert_eq!(complete(&[1], 2).unwrap_err(), "missing shards: 0/2");
        assert!(complete(&[3], 2).unwrap_err().contains("out of range"));
    }

    #[test]
    fn shard_text_parses_and_rejects_out_of_range() {
        assert_eq!("2/5".parse(), Ok(Shard { index: 2, count: 5 }));
        assert_eq!("2/5".parse::<Shard>().unwrap().to_string(), "2/5");
        for bad in ["5/5", "1/0", "1", "a/b", "-1/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
