//! The sweep bench's floor: a bare `BinaryHeap` loop over as many events
//! as the simulator handled, shared by `benches/sweep.rs` (which times it)
//! and `examples/sweep_profile.rs` (which counts its instructions).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

/// Pending events in the baseline's queue: about what the simulator holds.
pub const QUEUE_DEPTH: u64 = 8;

/// `events` pops and pushes on a heap of `QUEUE_DEPTH` pending events, with
/// a handler that does nothing but schedule the next event.
pub fn baseline(events: u64) -> u64 {
    let mut heap = BinaryHeap::with_capacity(QUEUE_DEPTH as usize + 1);
    let mut order = 0u64;
    for t in 0..QUEUE_DEPTH {
        order += 1;
        heap.push(Reverse((t, order)));
    }
    let mut handled = 0;
    while let Some(Reverse((t, _))) = heap.pop() {
        handled += 1;
        if handled == events {
            break;
        }
        order += 1;
        // A pseudo-random delay, so the heap really reorders.
        let delay = 1 + (order.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58);
        heap.push(Reverse((black_box(t + delay), order)));
    }
    handled
}
