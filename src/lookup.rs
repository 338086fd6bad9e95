//! Point-lookup tables for per-run state: a hash map that cannot be
//! iterated. The simulator's recorder (`sim/`) and the checkers (`check/`)
//! share it, so it is the bottom room, below both: `check/`, the entry
//! point for histories from anywhere, imports nothing of the simulator.
//!
//! The recorder and the checkers keep a dozen maps from grant ids, op ids,
//! owner nonces and (node, key) pairs to what they have seen, and only ever
//! ask them "what is stored under this key". A `BTreeMap` answers that by
//! allocating, rebalancing and, at the end of every seed, freeing its
//! nodes: in a sweep that cost more than the judging did
//! (benches/sweep.rs). A hash map keeps its table when cleared, so a
//! recorder and a [`crate::check::Checker`] reused across a thread's seeds
//! allocate almost nothing after the first.
//!
//! A hash map's iteration order is the one thing about it that is not a
//! function of its contents, so this wrapper offers no iteration at all:
//! every answer it gives is determined by the keys and values inserted,
//! and a report built from it is the same on every machine. State that is
//! iterated stays in a `BTreeMap` or a `check::node_map::NodeMap`. The
//! hasher is rustc's Fx hash, seedless: the same on every run.

use std::borrow::Borrow;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::Hash;

use rustc_hash::FxBuildHasher;

/// A map answering point lookups only (see the module doc).
#[derive(Clone, Debug)]
pub struct Lookup<K, V> {
    map: HashMap<K, V, FxBuildHasher>,
}

impl<K, V> Default for Lookup<K, V> {
    fn default() -> Self {
        Lookup {
            map: HashMap::with_hasher(FxBuildHasher),
        }
    }
}

impl<K: Hash + Eq, V> Lookup<K, V> {
    #[inline]
    pub fn get<Q: Hash + Eq + ?Sized>(&self, k: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.map.get(k)
    }

    #[inline]
    pub fn get_mut<Q: Hash + Eq + ?Sized>(&mut self, k: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.map.get_mut(k)
    }

    #[inline]
    pub fn contains_key<Q: Hash + Eq + ?Sized>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.map.contains_key(k)
    }

    #[inline]
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        self.map.insert(k, v)
    }

    #[inline]
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.remove(k)
    }

    /// The value under `k`, made by `make` first if there was none.
    #[inline]
    pub fn or_insert_with(&mut self, k: K, make: impl FnOnce() -> V) -> &mut V {
        match self.map.entry(k) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => v.insert(make()),
        }
    }

    #[inline]
    pub fn or_default(&mut self, k: K) -> &mut V
    where
        V: Default,
    {
        self.or_insert_with(k, V::default)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Empties the map and keeps its table for the next history.
    #[inline]
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

/// A set answering membership only (see the module doc).
#[derive(Clone, Debug)]
pub struct LookupSet<K> {
    map: Lookup<K, ()>,
}

impl<K> Default for LookupSet<K> {
    fn default() -> Self {
        LookupSet {
            map: Lookup::default(),
        }
    }
}

impl<K: Hash + Eq> LookupSet<K> {
    /// Adds `k`; returns whether it was new.
    #[inline]
    pub fn insert(&mut self, k: K) -> bool {
        self.map.insert(k, ()).is_none()
    }

    #[inline]
    pub fn contains<Q: Hash + Eq + ?Sized>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.map.contains_key(k)
    }

    #[inline]
    pub fn extend(&mut self, ks: impl IntoIterator<Item = K>) {
        for k in ks {
            self.insert(k);
        }
    }

    #[inline]
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn lookup_answers_as_a_btree_map_does_and_clear_forgets_everything() {
        let mut ours: Lookup<(u16, u64), u32> = Lookup::default();
        let mut theirs = BTreeMap::new();
        let mut x: u64 = 11;
        for round in 0..3 {
            for step in 0..3_000u32 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let k = ((x >> 40) as u16 % 7, (x >> 20) % 300);
                match step % 5 {
                    0 | 1 => assert_eq!(ours.insert(k, step), theirs.insert(k, step)),
                    2 => assert_eq!(ours.remove(&k), theirs.remove(&k)),
                    3 => assert_eq!(
                        *ours.or_insert_with(k, || step),
                        *theirs.entry(k).or_insert(step)
                    ),
                    _ => assert_eq!(ours.get(&k), theirs.get(&k)),
                }
                assert_eq!(ours.len(), theirs.len());
                assert_eq!(ours.contains_key(&k), theirs.contains_key(&k));
            }
            assert_eq!(ours.len(), theirs.len(), "round {round}");
            ours.clear();
            theirs.clear();
            assert!(ours.is_empty());
        }
        let mut set = LookupSet::default();
        assert!(set.insert(3u64) && !set.insert(3) && set.contains(&3));
        set.extend([1, 2]);
        set.clear();
        assert!(!set.contains(&1));
    }
}
