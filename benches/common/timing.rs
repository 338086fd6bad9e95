//! The hand-timed rounds the sweep and campaign benches share: `iters`
//! calls of a closure whose result is kept alive, timed as one span.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs `f` `iters` times and returns the whole span.
pub fn time_iters(iters: u64, mut f: impl FnMut() -> u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    start.elapsed()
}
