//! The bounds of a code-level search, each one a number the report states:
//! workers and grants, the fault budget of a path (losses, duplications,
//! crashes, pauses, failovers of a replicated coordinator, clock drifts and
//! wall-clock jumps), how many messages may be in flight at once, how far
//! true time may run, and how many unique states the search may keep (its
//! memory bound). A path that would cross a bound is cut there and the
//! report says which bound was hit: a proof holds only within them.

use super::topology::{is_lock_server, is_replicated, Timing};
use crate::protocol::ProtocolKind;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bounds {
    pub workers: usize,
    /// Distinct grants a path may issue (a successor issuing one more is cut).
    pub grants: usize,
    pub losses: u8,
    pub duplicates: u8,
    /// Crash-and-restart of any node (synced records survive).
    pub crashes: u8,
    /// Pauses of a worker: its timers fire `pause_ms` later (or, with
    /// `pause_holds`, it holds its inputs for `pause_ms`).
    pub pauses: u8,
    pub pause_ms: u64,
    /// Failovers of a replicated coordinator: the primary crashes (and
    /// stays down) and the next live replica is promoted, as the
    /// simulator's `failover` fault does. Only for protocols whose
    /// coordinator has replicas ([`Bounds::for_protocol`] gives them 1).
    pub failovers: u8,
    /// A failed-over primary restarts as a replica from its synced record
    /// (the simulator's failover with `restart_after_ms`), at most this
    /// many times a path; 0: it stays down.
    pub rejoins: u8,
    /// Nodes (any role) whose clock may drift, `drift_ppm` fast or slow
    /// from time zero ([`super::clock`]).
    pub drifts: u8,
    pub drift_ppm: u32,
    /// Jumps of a node's wall clock (forward or back by `jump_ms`; its
    /// monotonic clock does not jump) a path may have.
    pub jumps: u8,
    pub jump_ms: u64,
    pub in_flight_max: usize,
    /// No timer fires after this instant of true time.
    pub horizon_ms: u64,
    /// Unique states kept at most (about 100 bytes each, plus the widest
    /// BFS level's full states).
    pub max_states: usize,
    pub timing: Timing,
    /// Keep the refinement check's history variable in the state: which
    /// ops' writes the resource was handed (see `Judge`). A function of
    /// the rest of the state unless messages are lost or duplicated, so
    /// without those it splits no state; `refine` turns it on.
    pub write_history: bool,
    /// Fire one node's timers that fall due at one instant only in the
    /// order they were armed, as the simulator does (its events of one
    /// instant run in the order they were scheduled). Off for proofs and
    /// the reported shortest counterexample (any order covers more, and
    /// time-equal deadlines of different nodes' clocks are ordered either
    /// way in the world); the scenario emitter's fallback search turns it
    /// on when the shortest path needs an order the simulator cannot
    /// script (`to_scenario`). Its paths are paths of the unrestricted
    /// search too, so what it finds is found.
    pub arming_order: bool,
    /// A pause is the simulator's ([`super::hold`]): the worker handles
    /// nothing for `pause_ms`, and runs the messages and timers that
    /// reached it meanwhile, in that order, at the pause's end. Off: the
    /// pause only delays the worker's timers.
    pub pause_holds: bool,
}

/// The default state bound. The proof (DFS) keeps ~20 bytes per unique
/// state (its fingerprint in the set, at the set's worst load just after
/// it grew): 20 M states stay under ~0.7 GiB.
pub const MAX_STATES_DEFAULT: usize = 20_000_000;

/// A drifting clock's rate error when none is given: 10%, so that within
/// a horizon of a few leases a drift moves a timer by whole milliseconds
/// (a real clock's few hundred ppm would move it by microseconds, which
/// the search's whole-ms timers never compare).
pub const DRIFT_PPM_DEFAULT: u32 = 100_000;

/// The shortest-counterexample search (BFS) keeps a whole level's states,
/// ~2.5 KB each for two workers: it stops at this many unique states
/// (~1 GiB), whatever `max_states` says, and the DFS's path is reported.
pub const BFS_STATES_MAX: usize = 400_000;

impl Default for Bounds {
    fn default() -> Self {
        let timing = Timing::default();
        Bounds {
            workers: 2,
            grants: 2,
            losses: 0,
            duplicates: 0,
            crashes: 0,
            pauses: 1,
            pause_ms: timing.lease_ttl_ms + 1,
            failovers: 0,
            rejoins: 0,
            drifts: 0,
            drift_ppm: DRIFT_PPM_DEFAULT,
            jumps: 0,
            jump_ms: timing.lease_ttl_ms + 1,
            in_flight_max: 4,
            horizon_ms: 16,
            max_states: MAX_STATES_DEFAULT,
            timing,
            write_history: false,
            arming_order: false,
            pause_holds: false,
        }
    }
}

impl Bounds {
    /// The defaults for `kind`: one failover where its coordinator is a
    /// replica group (incr-beside-lease, consensus-generation), none else;
    /// consensus-generation's quorum rounds (a query and a proposal to two
    /// replicas, each answered) double its space with every millisecond of
    /// horizon, so it is proved without a pause and to 8 ms (a failover
    /// needs no lease to run out: the new primary has no lease table). A
    /// lock server's protocol runs with a 9 ms TTL ([`Timing::for_protocol`])
    /// to 12 ms, enough for a paused holder's lease to run out and the next
    /// holder to write (its clients' keep-alives, pings and re-reads
    /// multiply the space: 2 messages in flight, not 4). DynamoDB's lease
    /// is 10 ms (its 3/10 heartbeat in whole ms), paused 11 ms: a waiter
    /// takes over after one lease of no change, at 10 ms, and writes at
    /// 12. Redlock sends every `SET` and unlock to each of its three
    /// masters ([`super::topology::MASTERS_DEFAULT`]) at once: 4 in flight,
    /// the fewest at which two clients' attempts overlap (one client's
    /// last `SET` still in flight when the other's three go out), so split
    /// votes are in the space.
    pub fn for_protocol(kind: ProtocolKind) -> Bounds {
        let timing = Timing::for_protocol(kind);
        let base = Bounds {
            failovers: u8::from(is_replicated(kind)),
            pause_ms: timing.lease_ttl_ms + 1,
            jump_ms: timing.lease_ttl_ms + 1,
            timing,
            ..Bounds::default()
        };
        match kind {
            ProtocolKind::ConsensusGeneration => Bounds {
                pauses: 0,
                horizon_ms: 8,
                ..base
            },
            ProtocolKind::Redlock => Bounds {
                in_flight_max: 4,
                horizon_ms: 12,
                ..base
            },
            _ if is_lock_server(kind) => Bounds {
                in_flight_max: 2,
                horizon_ms: 12,
                ..base
            },
            _ => base,
        }
    }

    /// `2w/2g/0loss/0dup/0crash/1pause` (`1pause(holds)` with
    /// `pause_holds`; and `/1failover`, `/1rejoin`,
    /// `/1drift@100000ppm`, `/1jump@11ms` if any), the
    /// in-flight bound and the horizon, for one report line.
    pub fn label(&self) -> String {
        let mut failovers = String::new();
        if self.failovers > 0 {
            failovers = format!("/{}failover", self.failovers);
        }
        if self.rejoins > 0 {
            failovers += &format!("/{}rejoin", self.rejoins);
        }
        if self.drifts > 0 {
            failovers += &format!("/{}drift@{}ppm", self.drifts, self.drift_ppm);
        }
        if self.jumps > 0 {
            failovers += &format!("/{}jump@{}ms", self.jumps, self.jump_ms);
        }
        let holds = if self.pause_holds { "(holds)" } else { "" };
        format!(
            "{}w/{}g/{}loss/{}dup/{}crash/{}pause{holds}{failovers}/{}inflight/{}ms",
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
