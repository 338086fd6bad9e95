//! The timeline's time axis: true time → x pixel.
//!
//! A linear axis cannot show the article's story: a 12 s pause next to
//! millisecond round trips would squeeze every message into one pixel. So
//! the axis is piecewise linear over the *key times* (the instants of
//! history records): each gap between consecutive key times gets a width
//! that grows with the logarithm of its duration, and anything in between
//! (message sends and deliveries that are not records) is interpolated
//! inside its gap. Order is preserved exactly — an event drawn to the right
//! happened later — and every compressed gap is labelled with its true
//! duration, so the picture never lies about time, it only folds it.
//!
//! All arithmetic is on integers (fixed-point log2), so the geometry — and
//! the committed example reports — are identical on every machine.

/// Pixels for a gap of `dt_ns` between two key times: 0 for simultaneous
/// records, about 8 px for microseconds, 32 px for 1 ms, 85 px for 100 ms,
/// 138 px for 10 s.
pub fn gap_px(dt_ns: u64) -> u64 {
    if dt_ns == 0 {
        return 0;
    }
    let v = 1 + dt_ns / 1_000;
    let k = v.ilog2() as u64;
    let frac = ((v - (1u64 << k)) << 10) >> k;
    let log2_fixed = k * 1024 + frac;
    8 + log2_fixed.saturating_sub(7 * 1024) * 8 / 1024
}

/// Key times and their x positions (x of the first key time = `x0_px`).
#[derive(Clone, Debug)]
pub struct Axis {
    keys_ns: Vec<u64>,
    xs_px: Vec<u64>,
}

impl Axis {
    /// `times_ns` in any order; duplicates are merged.
    pub fn new(times_ns: impl IntoIterator<Item = u64>, x0_px: u64) -> Axis {
        let mut keys_ns: Vec<u64> = times_ns.into_iter().collect();
        keys_ns.sort_unstable();
        keys_ns.dedup();
        if keys_ns.is_empty() {
            keys_ns.push(0);
        }
        let mut xs_px = Vec::with_capacity(keys_ns.len());
        let mut x = x0_px;
        for (i, &t) in keys_ns.iter().enumerate() {
            if i > 0 {
                x += gap_px(t - keys_ns[i - 1]);
            }
            xs_px.push(x);
        }
        debug_assert_eq!(xs_px.len(), keys_ns.len());
        Axis { keys_ns, xs_px }
    }

    pub fn x_end_px(&self) -> u64 {
        *self.xs_px.last().expect("an axis has at least one key")
    }

    /// x of any instant: exact at key times, interpolated between them,
    /// clamped outside.
    pub fn x(&self, t_ns: u64) -> u64 {
        match self.keys_ns.binary_search(&t_ns) {
            Ok(i) => self.xs_px[i],
            Err(0) => self.xs_px[0],
            Err(i) if i == self.keys_ns.len() => self.x_end_px(),
            Err(i) => {
                let (t0, t1) = (self.keys_ns[i - 1], self.keys_ns[i]);
                let (x0, x1) = (self.xs_px[i - 1], self.xs_px[i]);
                let dx = (x1 - x0) as u128 * (t_ns - t0) as u128 / (t1 - t0) as u128;
                x0 + dx as u64
            }
        }
    }

    /// The gaps wide enough to carry a duration label: (x from, x to, dt ns).
    pub fn labelled_gaps(&self, min_width_px: u64) -> Vec<(u64, u64, u64)> {
        (1..self.keys_ns.len())
            .filter(|&i| self.xs_px[i] - self.xs_px[i - 1] >= min_width_px)
            .map(|i| {
                (
                    self.xs_px[i - 1],
                    self.xs_px[i],
                    self.keys_ns[i] - self.keys_ns[i - 1],
                )
            })
            .collect()
    }
}

/// `12 s`, `340 ms`, `2.1 ms`, `15 µs` — a duration for an axis label.
pub fn fmt_duration(dt_ns: u64) -> String {
    if dt_ns >= 10_000_000_000 {
        format!("{} s", dt_ns / 1_000_000_000)
    } else if dt_ns >= 1_000_000_000 {
        format!(
            "{}.{} s",
            dt_ns / 1_000_000_000,
            dt_ns % 1_000_000_000 / 100_000_000
        )
    } else if dt_ns >= 10_000_000 {
        format!("{} ms", dt_ns / 1_000_000)
    } else if dt_ns >= 1_000_000 {
        format!("{}.{} ms", dt_ns / 1_000_000, dt_ns % 1_000_000 / 100_000)
    } else {
        format!("{} µs", dt_ns / 1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longer_gaps_are_wider_but_folded_logarithmically() {
        let ms = 1_000_000;
        assert_eq!(gap_px(0), 0);
        assert!(
            gap_px(1_000) >= 8,
            "simultaneous-looking records stay apart"
        );
        assert!(gap_px(ms) < gap_px(100 * ms));
        assert!(gap_px(100 * ms) < gap_px(10_000 * ms));
        assert!(
            gap_px(10_000 * ms) < 200,
            "a 10 s pause must stay on screen"
        );
    }

    #[test]
    fn positions_are_exact_at_keys_monotone_between_and_clamped_outside() {
        let a = Axis::new([5_000_000, 0, 1_000_000, 5_000_000], 100);
        assert_eq!(a.x(0), 100);
        assert_eq!(a.x(1_000_000), 100 + gap_px(1_000_000));
        let mut last = 0;
        for t in (0..6_000_000).step_by(250_000) {
            let x = a.x(t);
            assert!(x >= last, "x must not go backwards in time");
            last = x;
        }
        assert_eq!(a.x(9_000_000), a.x_end_px());
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(fmt_duration(12_000_000_000), "12 s");
        assert_eq!(fmt_duration(2_500_000_000), "2.5 s");
        assert_eq!(fmt_duration(340_000_000), "340 ms");
        assert_eq!(fmt_duration(2_100_000), "2.1 ms");
        assert_eq!(fmt_duration(15_000), "15 µs");
    }
}
