//! The ranges a scenario may ask for, checked while the file is parsed so
//! that every out-of-range value is reported at its file:line:column.
//!
//! Why these bounds: the simulator keeps true time in `u64` nanoseconds
//! and clock readings in `i64`. With every duration at most
//! [`DURATION_MAX_MS`] (one year, 3.2e16 ns) and at most a few hundred of
//! them ever added together (a timer is `now + one duration`, `now` itself
//! at most `max_time` plus one duration), no sum reaches 2^63 ns (292
//! years). Drift is bounded to [`DRIFT_PPM_MIN`]..=[`DRIFT_PPM_MAX`] so a
//! clock runs at 0.1× to 2× true time: converting a local deadline to true
//! time multiplies by at most 10, still far below 2^63. Wall clocks add an
//! offset and at most [`JUMPS_MAX`] jumps of at most one year each:
//! below 2^62. The simulator's arithmetic sites saturate on top of this
//! (belt and braces), but with these limits saturation never engages, so
//! every trace hash is what plain arithmetic gives. The full list is in
//! docs/scenarios.md ("Range limits").

use std::fmt;

use serde::{Deserialize, Deserializer};

/// The longest duration, time point or offset a scenario may name: one
/// year of simulated time, in milliseconds.
pub const DURATION_MAX_MS: u64 = 365 * 24 * 3_600 * 1_000;
/// A clock may run from 0.1× to 2× true time.
pub const DRIFT_PPM_MIN: i64 = -900_000;
pub const DRIFT_PPM_MAX: i64 = 1_000_000;
/// Clock jumps per node.
pub const JUMPS_MAX: usize = 100;
/// Scripted `[[fault]]`s per scenario.
pub const FAULTS_MAX: usize = 10_000;
/// Seeds per scenario (a sweep of more is not a test anyone can wait for).
pub const SEEDS_MAX: u64 = 1_000_000_000;
/// Characters in a scenario's `name` (it heads table rows and reports).
pub const NAME_MAX_CHARS: usize = 200;
/// Scenario files larger than this are refused before parsing.
pub const FILE_MAX_BYTES: u64 = 4 << 20;

const NS_PER_MS: u64 = 1_000_000;

/// A duration or time point in milliseconds, `0..=DURATION_MAX_MS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ms(u64);

impl Ms {
    pub const fn new(ms: u64) -> Ms {
        Ms(ms)
    }
    pub fn get(self) -> u64 {
        self.0
    }
    /// In nanoseconds; cannot overflow (bounded at parse time).
    pub fn ns(self) -> u64 {
        self.0 * NS_PER_MS
    }
}

/// A signed offset in milliseconds, `-DURATION_MAX_MS..=DURATION_MAX_MS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignedMs(i64);

impl SignedMs {
    pub fn ns(self) -> i64 {
        self.0 * NS_PER_MS as i64
    }
}

/// Drift in parts per million, `DRIFT_PPM_MIN..=DRIFT_PPM_MAX`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ppm(i64);

impl Ppm {
    pub fn get(self) -> i64 {
        self.0
    }
}

/// Reads a whole number within `min..=max`; anything else is an error
/// that says what was expected (toml attaches the value's span).
fn bounded<'de, D: Deserializer<'de>>(
    d: D,
    min: i64,
    max: i64,
    expected: &str,
) -> Result<i64, D::Error> {
    struct Whole<'a>(&'a str);
    impl serde::de::Visitor<'_> for Whole<'_> {
        type Value = i128;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i128, E> {
            Ok(v.into())
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i128, E> {
            Ok(v.into())
        }
    }
    let v = d.deserialize_i64(Whole(expected))?;
    if !(min as i128..=max as i128).contains(&v) {
        return Err(serde::de::Error::custom(format!(
            "{v} is out of range; expected {expected}"
        )));
    }
    Ok(v as i64)
}

const MS_RANGE: &str = "whole milliseconds from 0 to 31536000000 (one year)";
const SIGNED_MS_RANGE: &str =
    "whole milliseconds from -31536000000 to 31536000000 (one year either way)";
const PPM_RANGE: &str =
    "whole parts per million from -900000 to 1000000 (a clock runs at 0.1x to 2x true time)";

impl<'de> Deserialize<'de> for Ms {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ms, D::Error> {
        bounded(d, 0, DURATION_MAX_MS as i64, MS_RANGE).map(|v| Ms(v as u64))
    }
}

impl<'de> Deserialize<'de> for SignedMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SignedMs, D::Error> {
        let max = DURATION_MAX_MS as i64;
        bounded(d, -max, max, SIGNED_MS_RANGE).map(SignedMs)
    }
}

impl<'de> Deserialize<'de> for Ppm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ppm, D::Error> {
        bounded(d, DRIFT_PPM_MIN, DRIFT_PPM_MAX, PPM_RANGE).map(Ppm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_texts_state_the_constants() {
        assert!(MS_RANGE.contains(&DURATION_MAX_MS.to_string()));
        assert!(SIGNED_MS_RANGE.contains(&format!("-{DURATION_MAX_MS}")));
        assert!(PPM_RANGE.contains(&DRIFT_PPM_MIN.to_string()));
        assert!(PPM_RANGE.contains(&DRIFT_PPM_MAX.to_string()));
    }

    #[test]
    fn largest_sums_the_limits_allow_stay_far_from_overflow() {
        // now (<= max_time + one duration) + a duration, slowed 10x by drift.
        let worst_true_ns = (3 * Ms::new(DURATION_MAX_MS).ns()) as u128 * 10;
        assert!(worst_true_ns < i64::MAX as u128 / 4);
        let worst_wall_ns = (JUMPS_MAX as u128 + 3) * DURATION_MAX_MS as u128 * 1_000_000 * 2;
        assert!(worst_wall_ns < i64::MAX as u128);
    }
}
