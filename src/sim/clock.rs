//! Per-node clocks on top of true time.
//!
//! The monotonic clock runs at rate `1 + drift_ppm / 10^6` from zero; the
//! wall clock is the monotonic reading plus a fixed offset plus every step
//! (`jumps`, e.g. an NTP correction) that has happened by true time `t`.
//! Lease logic reads these; the checker only ever uses true time. All
//! arithmetic is integer (i128 intermediates), so readings are identical on
//! every platform.

use crate::protocol::{Clocks, Nanos};

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct ClockSpec {
    pub offset_ns: i64,
    /// Rate error in parts per million; must be > -1_000_000.
    pub drift_ppm: i64,
    /// (true time, step) pairs, sorted by time.
    pub jumps: Vec<(Nanos, i64)>,
}

impl ClockSpec {
    pub fn mono(&self, t: Nanos) -> Nanos {
        if self.drift_ppm == 0 {
            return t; // the common case, without the i128 division
        }
        let t = t as i128;
        clamp_ns(t + t * self.drift_ppm as i128 / 1_000_000)
    }

    pub fn wall(&self, t: Nanos) -> i64 {
        let stepped: i64 = self
            .jumps
            .iter()
            .take_while(|(at, _)| *at <= t)
            .map(|(_, by)| *by)
            .fold(0i64, |sum, by| sum.saturating_add(by));
        let wall = self.mono(t) as i128 + self.offset_ns as i128 + stepped as i128;
        wall.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    #[inline]
    pub fn read(&self, t: Nanos) -> Clocks {
        if self.drift_ppm == 0 && self.offset_ns == 0 && self.jumps.is_empty() {
            // A perfect clock (most nodes of most scenarios): what `wall`
            // and `mono` compute for it, without the i128 sums and clamps.
            return Clocks {
                wall_ns: t.min(i64::MAX as u64) as i64,
                mono_ns: t,
            };
        }
        Clocks {
            wall_ns: self.wall(t),
            mono_ns: self.mono(t),
        }
    }

    /// The earliest true time at which the monotonic clock reads >= `mono`.
    pub fn true_at_mono(&self, mono: Nanos) -> Nanos {
        if self.drift_ppm == 0 {
            return mono;
        }
        let rate = 1_000_000i128 + self.drift_ppm as i128;
        assert!(rate > 0, "drift_ppm must be > -1000000");
        let mut t = clamp_ns(mono as i128 * 1_000_000 / rate);
        while t < Nanos::MAX && self.mono(t) < mono {
            t += 1;
        }
        while t > 0 && self.mono(t - 1) >= mono {
            t -= 1;
        }
        t
    }
}

/// Readings saturate rather than wrap. Scenario limits (drift, offsets,
/// durations: `scenario/limits.rs`) keep every reading of a loaded scenario
/// far inside the range, so this never changes a bundled run; it makes a
/// hand-built `ClockSpec` degrade to a stuck clock, not a wrapped one.
fn clamp_ns(t: i128) -> Nanos {
    t.clamp(0, Nanos::MAX as i128) as Nanos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drifting_clock_inverts_exactly() {
        let c = ClockSpec {
            offset_ns: 0,
            drift_ppm: 250,
            jumps: vec![],
        };
        for m in [0, 1, 999, 10_000_000_000, 12_345_678_901] {
            let t = c.true_at_mono(m);
            assert!(c.mono(t) >= m);
            assert!(t == 0 || c.mono(t - 1) < m);
        }
        assert_eq!(c.mono(1_000_000_000), 1_000_250_000);
    }

    #[test]
    fn extreme_clocks_saturate_instead_of_wrapping_or_hanging() {
        let fast = ClockSpec {
            offset_ns: i64::MAX,
            drift_ppm: 1_000_000,
            jumps: vec![(0, i64::MAX), (1, i64::MAX)],
        };
        assert_eq!(fast.mono(Nanos::MAX), Nanos::MAX);
        assert_eq!(fast.wall(Nanos::MAX), i64::MAX);
        assert_eq!(fast.true_at_mono(Nanos::MAX), Nanos::MAX / 2 + 1);
        let slow = ClockSpec {
            offset_ns: 0,
            drift_ppm: -900_000,
            jumps: vec![],
        };
        // 10x slower: the deadline lies past the end of time, and says so.
        assert_eq!(slow.true_at_mono(Nanos::MAX), Nanos::MAX);
        let t = slow.true_at_mono(1_000);
        assert!(
            slow.mono(t) >= 1_000 && slow.mono(t - 1) < 1_000 && t > 9_000,
            "{t}"
        );
    }

    #[test]
    fn wall_clock_steps_but_monotonic_does_not() {
        let c = ClockSpec {
            offset_ns: 5,
            drift_ppm: 0,
            jumps: vec![(100, -50)],
        };
        assert_eq!(c.wall(99), 104);
        assert_eq!(c.wall(100), 55);
        assert_eq!(c.mono(100), 100);
    }

    #[test]
    fn a_perfect_clock_reads_what_the_general_formula_gives() {
        let c = ClockSpec::default();
        for t in [
            0,
            1,
            1_000_000_007,
            i64::MAX as u64,
            i64::MAX as u64 + 1,
            u64::MAX,
        ] {
            let general = Clocks {
                wall_ns: {
                    let wall = c.mono(t) as i128;
                    wall.clamp(i64::MIN as i128, i64::MAX as i128) as i64
                },
                mono_ns: c.mono(t),
            };
            assert_eq!(c.read(t), general, "t = {t}");
            assert_eq!(c.read(t).wall_ns, c.wall(t));
        }
    }
}
