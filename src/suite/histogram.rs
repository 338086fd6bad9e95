//! A mergeable log-linear histogram for durations: memory independent of
//! the number of samples, merge commutative (bucket counts add), quantiles
//! deterministic. Each power of two is split into 16 linear sub-buckets,
//! so a reported quantile (the bucket's upper bound) is within 1/16 ≈ 6 %
//! of the true value; `max` and `sum` are exact.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

const SUB_BITS: u32 = 4;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogHistogram {
    /// bucket index -> samples in it
    pub buckets: BTreeMap<u32, u64>,
    pub count: u64,
    pub sum: u64,
    pub max: u64,
}

fn bucket_of(v: u64) -> u32 {
    if v < (1 << SUB_BITS) {
        return v as u32;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = ((v >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1)) as u32;
    ((exp - SUB_BITS + 1) << SUB_BITS) | sub
}

/// The largest value that falls in bucket `b`.
fn upper_of(b: u32) -> u64 {
    if b < (1 << SUB_BITS) {
        return b as u64;
    }
    let exp = (b >> SUB_BITS) + SUB_BITS - 1;
    let sub = (b & ((1 << SUB_BITS) - 1)) as u64;
    let low = (1u64 << exp) | (sub << (exp - SUB_BITS));
    low + (1u64 << (exp - SUB_BITS)) - 1
}

impl LogHistogram {
    pub fn record(&mut self, v: u64) {
        *self.buckets.entry(bucket_of(v)).or_insert(0) += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }

    pub fn merge(&mut self, o: &LogHistogram) {
        for (&b, &n) in &o.buckets {
            *self.buckets.entry(b).or_insert(0) += n;
        }
        self.count += o.count;
        self.sum = self.sum.saturating_add(o.sum);
        self.max = self.max.max(o.max);
    }

    /// The value at quantile `q` (0.0..=1.0): the upper bound of the bucket
    /// holding the ceil(q·count)-th sample, capped at the exact max.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return upper_of(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_every_value_within_a_sixteenth() {
        for v in [0u64, 1, 15, 16, 17, 100, 1_000, 123_456_789, u64::MAX / 3] {
            let b = bucket_of(v);
            assert!(upper_of(b) >= v, "{v}");
            assert!(upper_of(b) - v <= v / 16 + 1, "{v}: {}", upper_of(b));
            assert!(
                b == 0 || upper_of(b - 1) < v,
                "{v}: buckets are ordered and disjoint"
            );
        }
    }

    #[test]
    fn quantiles_and_merge_are_order_independent() {
        let mut a = LogHistogram::default();
        let mut b = LogHistogram::default();
        for v in 1..=100u64 {
            if v % 2 == 0 {
                a.record(v * 1_000)
            } else {
                b.record(v * 1_000)
            }
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        assert_eq!(ab.count, 100);
        assert_eq!(ab.max, 100_000);
        let p50 = ab.quantile(0.5);
        assert!((50_000..=53_125).contains(&p50), "{p50}");
        assert_eq!(ab.quantile(1.0), 100_000);
    }
}
