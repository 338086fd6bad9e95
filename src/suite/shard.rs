//! Splitting a seed range across machines: `--shard I/N` runs the seeds
//! whose offset from the range start is `I` modulo `N` (0-based `I`, as
//! Kubernetes' `JOB_COMPLETION_INDEX`). Striding rather than cutting the
//! range into blocks keeps shards equally loaded when cost varies with the
//! seed number, and needs no knowledge of the range size. Every seed lands
//! in exactly one shard, so merging the shards' aggregates (commutative,
//! associative) gives the unsharded result bit for bit.

use std::fmt;
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
        debug_assert!(seed >= start && self.index < self.count);
        (seed - start) % self.count == self.index
    }
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
