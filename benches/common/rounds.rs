//! How many alternating rounds a bench runs after criterion's samples: the
//! `FENCESIM_BENCH_ROUNDS` variable (0 skips them), shared by the model and
//! codecheck benches, which both print one ratio per round and the median.

/// `FENCESIM_BENCH_ROUNDS`, or 3.
pub fn rounds() -> usize {
    std::env::var("FENCESIM_BENCH_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("FENCESIM_BENCH_ROUNDS is a count"))
        .unwrap_or(3)
}
