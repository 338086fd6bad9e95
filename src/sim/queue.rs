//! The simulator's pending-event order: 128-bit keys that pack, high to
//! low, true time (64 bits), insertion number (32) and slab slot (32).
//! Insertion numbers are unique, so keys are, and ties in time run in the
//! order they were scheduled.
//!
//! A run has few events pending at once (a node has a timer or two, a
//! message or two in flight: under ten in the article's scenarios), so the
//! keys live unsorted in one short `Vec`: `push` appends, `pop` scans the
//! few keys for the smallest and swap-removes it. For queues this small a
//! scan of a cache line or two beats keeping order — a binary heap's sift
//! loops, or a sorted `Vec` that shifts its keys on every insert
//! (benches/sweep.rs). Keys are unique, so the smallest is unique and the
//! order of events, and every trace hash, is the same as any priority
//! queue's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::protocol::Nanos;

/// Keys beyond this many pending go to a binary heap: a scenario with
/// year-long latencies can keep a million messages in flight, and the
/// scan would make that run quadratic. Popping the smaller of the two
/// fronts gives exactly the order one structure would: no trace changes.
const SCANNED_MAX: usize = 32;

#[derive(Default)]
pub struct EventQueue {
    /// Unsorted; at most `SCANNED_MAX`.
    keys: Vec<u128>,
    /// Keys pushed while `keys` was full.
    spill: BinaryHeap<Reverse<u128>>,
    /// The insertion number of the last push since `clear`: each push's
    /// must be greater, which is what makes keys unique (checked in O(1)
    /// rather than by scanning the pending keys on every push).
    last_order: u32,
}

impl EventQueue {
    #[inline]
    pub fn push(&mut self, t_ns: Nanos, order: u32, slot: u32) {
        debug_assert!(
            order > self.last_order,
            "insertion numbers increase, so keys are unique"
        );
        self.last_order = order;
        let key = (t_ns as u128) << 64 | (order as u128) << 32 | slot as u128;
        if self.keys.len() >= SCANNED_MAX {
            self.spill.push(Reverse(key));
            return;
        }
        self.keys.push(key);
    }

    /// The earliest event: (true time, slab slot).
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, u32)> {
        // By iterator, the smallest carried beside its place: no bounds
        // check per key, and one comparison against a register.
        let mut at = 0;
        if let Some((&first, rest)) = self.keys.split_first() {
            let mut least = first;
            for (i, &k) in rest.iter().enumerate() {
                if k < least {
                    least = k;
                    at = i + 1;
                }
            }
        }
        let key = match (self.keys.get(at), self.spill.peek()) {
            (Some(&k), Some(&Reverse(h))) if h < k => self.spill.pop()?.0,
            (None, Some(_)) => self.spill.pop()?.0,
            (Some(_), _) => self.keys.swap_remove(at),
            (None, None) => return None,
        };
        Some(((key >> 64) as Nanos, key as u32))
    }

    /// Drops every pending event, keeping the allocation.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.spill.clear();
        self.last_order = 0;
    }

    pub fn len(&self) -> usize {
        self.keys.len() + self.spill.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.spill.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        let pushes = [(5, 1, 10), (3, 2, 11), (5, 3, 12), (0, 4, 13), (3, 5, 14)];
        for (t, order, slot) in pushes {
            q.push(t, order, slot);
        }
        let popped: Vec<(Nanos, u32)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(popped, vec![(0, 13), (3, 11), (3, 14), (5, 10), (5, 12)]);
        assert!(q.is_empty());
    }

    #[test]
    fn it_orders_exactly_like_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let (mut q, mut heap) = (EventQueue::default(), BinaryHeap::new());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for order in 1..5_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly pushes in the first half: the queue outgrows the scanned part.
            let pop_every = if order < 2_500 { 7 } else { 2 };
            if x % pop_every == 0 {
                assert_eq!(q.pop().map(|(t, _)| t), heap.pop().map(|Reverse((t, _))| t));
            } else {
                let t = x % 1_000;
                q.push(t, order, order);
                heap.push(Reverse((t, order)));
            }
            assert_eq!(q.len(), heap.len());
        }
    }
}
