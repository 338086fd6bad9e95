//! A node's clocks in the code-level search, under the two clock faults
//! the harness can inject: **drift** (from some instant on, the node's
//! monotonic clock runs at `1 ± drift_ppm / 10^6` of true time; its wall
//! clock follows it) and **jumps** (the wall clock steps forward or back by
//! `jump_ms`, as an NTP correction does; the monotonic clock does not).
//!
//! The simulator's clock (`sim::clock::ClockSpec`) drifts from time zero,
//! and so does the harness's (a drift is a step at time zero), but a clock
//! here is kept piecewise — the reading it had when its rate last changed
//! (`since_mono_ns` at true time `since_true_ns`), then its rate — so that
//! a rate change is one step wherever a path puts it. A node's timers are armed on its
//! monotonic clock, so the harness places them on the true-time line with
//! [`NodeClock::true_at_mono`]. A clock no fault touched reads true time
//! (the default value), so a search without clock faults keeps no clock
//! state at all (`State::clocks` stays empty) and its counts are unchanged.
//! All arithmetic is integer (i128 intermediates): the same readings on
//! every machine.

use crate::protocol::Clocks;

/// One node's clocks. The default is a perfect clock: both read true time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NodeClock {
    /// True time at which the current rate began.
    pub since_true_ns: u64,
    /// The monotonic reading at `since_true_ns`.
    pub since_mono_ns: u64,
    /// Rate error from `since_true_ns` on, in parts per million
    /// (> −1,000,000); 0: the clock keeps true time's pace.
    pub drift_ppm: i32,
    /// Sum of the wall clock's jumps so far: wall = mono + this.
    pub wall_step_ns: i64,
}

const PPM: i128 = 1_000_000;

impl NodeClock {
    /// The monotonic reading at true time `t_ns` (not before `since_true_ns`).
    pub fn mono(&self, t_ns: u64) -> u64 {
        debug_assert!(
            t_ns >= self.since_true_ns,
            "a clock is read after its last change"
        );
        let dt = t_ns.saturating_sub(self.since_true_ns) as i128;
        let dm = dt * (PPM + self.drift_ppm as i128) / PPM;
        (self.since_mono_ns as i128 + dm).clamp(0, u64::MAX as i128) as u64
    }

    /// Both readings at true time `t_ns`.
    pub fn read(&self, t_ns: u64) -> Clocks {
        let mono_ns = self.mono(t_ns);
        let wall = mono_ns as i128 + self.wall_step_ns as i128;
        Clocks {
            wall_ns: wall.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            mono_ns,
        }
    }

    /// The earliest true time, not before `since_true_ns`, at which the
    /// monotonic clock reads at least `mono_ns`: where a timer armed on
    /// this clock fires.
    pub fn true_at_mono(&self, mono_ns: u64) -> u64 {
        if mono_ns <= self.since_mono_ns {
            return self.since_true_ns;
        }
        let rate = PPM + self.drift_ppm as i128;
        assert!(rate > 0, "drift_ppm must be > -1000000");
        let dm = (mono_ns - self.since_mono_ns) as i128;
        let dt = (dm * PPM + rate - 1) / rate; // ceil: the first instant it reads that much
        let mut t = (self.since_true_ns as i128 + dt).min(u64::MAX as i128) as u64;
        // The integer floor in `mono` may leave the reading one short.
        while t < u64::MAX && self.mono(t) < mono_ns {
            t += 1;
        }
        while t > self.since_true_ns && self.mono(t - 1) >= mono_ns {
            t -= 1;
        }
        debug_assert!(self.mono(t) >= mono_ns);
        t
    }

    /// The same clock running at `1 + drift_ppm / 10^6` from true time
    /// `now_ns` on (its reading then unchanged).
    pub fn drifting_from(&self, now_ns: u64, drift_ppm: i32) -> NodeClock {
        NodeClock {
            since_true_ns: now_ns,
            since_mono_ns: self.mono(now_ns),
            drift_ppm,
            wall_step_ns: self.wall_step_ns,
        }
    }

    /// Where a timer due at true time `deadline_ns` on the old clock
    /// (`self`) falls on `new`, which took over at `now_ns`: the same
    /// monotonic reading, reached at the new rate.
    pub fn moved_deadline(&self, new: &NodeClock, deadline_ns: u64) -> u64 {
        new.true_at_mono(self.mono(deadline_ns.max(new.since_true_ns)))
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
        let base = NodeClock::default();
        let fast = base.drifting_from(2_000_000, 100_000); // +10% from 2 ms
        let slow = base.drifting_from(2_000_000, -100_000);
        assert_eq!(fast.mono(2_000_000), 2_000_000);
        assert_eq!(fast.mono(12_000_000), 13_000_000);
        assert_eq!(slow.mono(12_000_000), 11_000_000);
        // A timer due at mono 12 ms: the fast clock gets there first.
        assert!(fast.true_at_mono(12_000_000) < 12_000_000);
        assert!(slow.true_at_mono(12_000_000) > 12_000_000);
    }

    #[test]
    fn true_at_mono_is_the_first_instant_the_clock_reads_that_much() {
        for ppm in [-999_999, -333_333, -1, 1, 7, 250_000, 3_000_000] {
            let c = NodeClock::default().drifting_from(1_234_567, ppm);
            for m in [1_234_567u64, 1_234_568, 5_000_000, 16_000_001, 99_999_999] {
                let t = c.true_at_mono(m);
                assert!(c.mono(t) >= m, "ppm {ppm} mono {m}");
                assert!(
                    t == c.since_true_ns || c.mono(t - 1) < m,
                    "ppm {ppm} mono {m}"
                );
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
    fn a_pending_timer_keeps_its_reading_when_its_clock_starts_to_drift() {
        let old = NodeClock::default();
        let new = old.drifting_from(4_000_000, 500_000); // +50% from 4 ms
                                                         // Due at 10 ms on the old clock: 6 ms of reading left, 4 ms of true time at 1.5.
        assert_eq!(old.moved_deadline(&new, 10_000_000), 8_000_000);
    }
}
