//! A node's clocks in the code-level search, under the two clock faults
//! the harness can inject: **drift** (from time zero, the node's monotonic
//! clock runs at `1 ± drift_ppm / 10^6` of true time; its wall clock
//! follows it) and **jumps** (the wall clock steps forward or back by
//! `jump_ms`, as an NTP correction does; the monotonic clock does not).
//!
//! A drift is a step at time zero, as the simulator's clocks drift from
//! time zero, so a clock is the simulator's own [`ClockSpec`] — read and
//! inverted by the same integer arithmetic, so that a path the search
//! finds reads the same clocks when it is scripted for the simulator —
//! kept as the two numbers that can differ between states: the rate and
//! the sum of the wall clock's jumps so far (the spec's offset; the search
//! needs no instants of jumps, as a jump is applied when it happens). A
//! node's timers are armed on its monotonic clock, so the harness places
//! them on the true-time line with [`NodeClock::true_at_mono`]. A clock no
//! fault touched reads true time (the default value), so a search without
//! clock faults keeps no clock state at all (`State::clocks` stays empty)
//! and its counts are unchanged.

use crate::protocol::{Clocks, Nanos};
use crate::sim::clock::ClockSpec;

/// One node's clocks. The default is a perfect clock: both read true time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NodeClock {
    /// Rate error from time zero, in parts per million (> −1,000,000);
    /// 0: the clock keeps true time's pace.
    pub drift_ppm: i32,
    /// Sum of the wall clock's jumps so far: wall = mono + this.
    pub wall_step_ns: i64,
}

impl NodeClock {
    /// The simulator's clock this one is: drifting from zero, its wall
    /// clock offset by the jumps so far.
    pub fn spec(&self) -> ClockSpec {
        ClockSpec {
            offset_ns: self.wall_step_ns,
            drift_ppm: self.drift_ppm.into(),
            jumps: Vec::new(),
        }
    }

    /// The monotonic reading at true time `t_ns`.
    pub fn mono(&self, t_ns: Nanos) -> Nanos {
        self.spec().mono(t_ns)
    }

    /// Both readings at true time `t_ns`.
    pub fn read(&self, t_ns: Nanos) -> Clocks {
        self.spec().read(t_ns)
    }

    /// The earliest true time at which the monotonic clock reads at least
    /// `mono_ns`: where a timer armed on this clock fires.
    pub fn true_at_mono(&self, mono_ns: Nanos) -> Nanos {
        self.spec().true_at_mono(mono_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_no_fault_touched_reads_true_time() {
        let c = NodeClock::default();
        assert_eq!(c.mono(7_000_000), 7_000_000);
        assert_eq!(c.true_at_mono(7_000_000), 7_000_000);
        assert_eq!(c.read(5).wall_ns, 5);
    }

    #[test]
    fn a_fast_clock_reaches_a_reading_early_and_a_slow_one_late() {
        let fast = NodeClock {
            drift_ppm: 100_000, // +10%
            ..NodeClock::default()
        };
        let slow = NodeClock {
            drift_ppm: -100_000,
            ..NodeClock::default()
        };
        assert_eq!(fast.mono(10_000_000), 11_000_000);
        assert_eq!(slow.mono(10_000_000), 9_000_000);
        // A timer due at mono 12 ms: the fast clock gets there first.
        assert_eq!(fast.true_at_mono(11_000_000), 10_000_000);
        assert!(fast.true_at_mono(12_000_000) < 12_000_000);
        assert!(slow.true_at_mono(12_000_000) > 12_000_000);
    }

    #[test]
    fn true_at_mono_is_the_first_instant_the_clock_reads_that_much() {
        for ppm in [-999_999, -333_333, -1, 1, 7, 250_000, 999_999] {
            let c = NodeClock {
                drift_ppm: ppm,
                ..NodeClock::default()
            };
            for m in [1u64, 1_234_568, 5_000_000, 16_000_001, 99_999_999] {
                let t = c.true_at_mono(m);
                assert!(c.mono(t) >= m, "ppm {ppm} mono {m}");
                assert!(t == 0 || c.mono(t - 1) < m, "ppm {ppm} mono {m}");
            }
        }
    }

    #[test]
    fn a_wall_jump_moves_the_wall_reading_only() {
        let c = NodeClock {
            wall_step_ns: -11_000_000,
            ..NodeClock::default()
        };
        let r = c.read(20_000_000);
        assert_eq!(r.mono_ns, 20_000_000);
        assert_eq!(r.wall_ns, 9_000_000);
    }

    #[test]
    fn a_drifting_jumped_clock_reads_what_the_simulators_clock_reads() {
        let c = NodeClock {
            drift_ppm: -100_000,
            wall_step_ns: 11_000_000,
        };
        let sim = ClockSpec {
            offset_ns: 0,
            drift_ppm: -100_000,
            jumps: vec![(3_000_000, 11_000_000)],
        };
        // After the simulator's jump at 3 ms, the two clocks agree.
        for t in [3_000_000, 3_000_001, 12_345_678, 99_000_000] {
            assert_eq!(c.read(t), sim.read(t), "t = {t}");
        }
    }
}
