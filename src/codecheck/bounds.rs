//! The bounds of a code-level search, each one a number the report states:
//! workers and grants, the fault budget of a path (losses, duplications,
//! crashes, pauses), how many messages may be in flight at once, how far
//! true time may run, and how many unique states the search may keep (its
//! memory bound). A path that would cross a bound is cut there and the
//! report says which bound was hit: a proof holds only within them.

use super::topology::Timing;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bounds {
    pub workers: usize,
    /// Distinct grants a path may issue (a successor issuing one more is cut).
    pub grants: usize,
    pub losses: u8,
    pub duplicates: u8,
    /// Crash-and-restart of any node (synced records survive).
    pub crashes: u8,
    /// Pauses of a worker: its timers fire `pause_ms` later.
    pub pauses: u8,
    pub pause_ms: u64,
    pub in_flight_max: usize,
    /// No timer fires after this instant of true time.
    pub horizon_ms: u64,
    /// Unique states kept at most (about 100 bytes each, plus the widest
    /// BFS level's full states).
    pub max_states: usize,
    pub timing: Timing,
}

/// The default state bound: well under 2 GiB at the measured sizes.
pub const MAX_STATES_DEFAULT: usize = 2_000_000;

impl Default for Bounds {
    fn default() -> Self {
        let timing = Timing::default();
        Bounds {
            workers: 2,
            grants: 2,
            losses: 1,
            duplicates: 1,
            crashes: 0,
            pauses: 1,
            pause_ms: timing.lease_ttl_ms + 1,
            in_flight_max: 4,
            horizon_ms: 3 * timing.lease_ttl_ms,
            max_states: MAX_STATES_DEFAULT,
            timing,
        }
    }
}

impl Bounds {
    /// `2w/2g/1l/1d/0c/1p` and the horizon, for one report line.
    pub fn label(&self) -> String {
        format!(
            "{}w/{}g/{}loss/{}dup/{}crash/{}pause/{}inflight/{}ms",
            self.workers,
            self.grants,
            self.losses,
            self.duplicates,
            self.crashes,
            self.pauses,
            self.in_flight_max,
            self.horizon_ms
        )
    }
}
