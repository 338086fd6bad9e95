//! A map keyed by node id, for the checker's per-node state.
//!
//! The checkers follow a handful of nodes through every history event, and
//! a `BTreeMap<u16, V>` spent more time allocating, rebalancing and freeing
//! its nodes than the checkers spent judging (benches/sweep.rs). Node ids
//! are small and dense, so a vector indexed by id does the same job; it
//! iterates in id order, as the `BTreeMap` did, so every report is
//! unchanged. A history that names node 65535 costs one allocation of
//! 65536 slots, no more.

#[derive(Clone, Debug)]
pub struct NodeMap<V> {
    slots: Vec<Option<V>>,
    len: usize,
}

impl<V> Default for NodeMap<V> {
    fn default() -> Self {
        NodeMap {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<V> NodeMap<V> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, node: u16) -> Option<&V> {
        self.slots.get(node as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn contains(&self, node: u16) -> bool {
        self.get(node).is_some()
    }

    /// Sets `node`'s value; returns the one it replaced.
    #[inline]
    pub fn insert(&mut self, node: u16, value: V) -> Option<V> {
        let old = self.slot(node).replace(value);
        self.len += old.is_none() as usize;
        old
    }

    /// `node`'s value, set to `value` first if it had none.
    #[inline]
    pub fn or_insert(&mut self, node: u16, value: V) -> &mut V {
        if !self.contains(node) {
            self.len += 1;
        }
        self.slot(node).get_or_insert(value)
    }

    #[inline]
    pub fn remove(&mut self, node: u16) -> Option<V> {
        let old = self.slots.get_mut(node as usize).and_then(Option::take);
        self.len -= old.is_some() as usize;
        old
    }

    /// Empties the map, keeping its slots' allocation.
    #[inline]
    pub fn clear(&mut self) {
        self.slots.clear();
        self.len = 0;
    }

    /// Every (node, value), in node order; the map is left empty.
    #[inline]
    pub fn drain(&mut self) -> impl Iterator<Item = (u16, V)> + '_ {
        self.len = 0;
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, v)| Some((i as u16, v.take()?)))
    }

    #[inline]
    fn slot(&mut self, node: u16) -> &mut Option<V> {
        let i = node as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        &mut self.slots[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn node_map_answers_as_a_btree_map_does_in_the_same_order() {
        let mut ours = NodeMap::default();
        let mut theirs = BTreeMap::new();
        // A fixed mix of inserts, or-inserts and removes over sparse ids.
        let mut x: u32 = 7;
        for step in 0..2_000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let node = ((x >> 8) % 40) as u16 * 3;
            match step % 4 {
                0 => assert_eq!(ours.insert(node, step), theirs.insert(node, step)),
                1 => assert_eq!(
                    *ours.or_insert(node, step),
                    *theirs.entry(node).or_insert(step)
                ),
                2 => assert_eq!(ours.remove(node), theirs.remove(&node)),
                _ => assert_eq!(ours.get(node), theirs.get(&node)),
            }
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(ours.contains(node), theirs.contains_key(&node));
        }
        let drained: Vec<_> = ours.drain().collect();
        assert_eq!(
            drained,
            std::mem::take(&mut theirs).into_iter().collect::<Vec<_>>()
        );
        assert!(ours.is_empty() && ours.get(3).is_none());
    }
}
