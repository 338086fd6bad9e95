//! From a code-level counterexample to a fully scripted simulator scenario
//! (`fencesim check --code P --emit-scenario DIR`): the same nodes, the
//! same inputs in the same order, on the simulator's clock.
//!
//! The search's time moves only when a timer fires and messages take no
//! time; the simulator's messages take a latency and its timers fire
//! `after_ns` after they are armed. The path is replayed through the
//! harness with its effects logged (which step sent each message, armed
//! each timer), and every step gets an instant τ in whole ms of simulator
//! time such that the simulator does the same things in the same order:
//!
//! - the timing is scaled by K (lease TTL, work, think, retry, request
//!   timeout, check-to-write all × K), and step i lands in
//!   `[K·t_i, K·t_i + K − 1]` of its search instant t_i, so every strict
//!   comparison the nodes make between clock readings comes out the same;
//! - each node's steps are strictly ordered (`τ_i ≥ τ_prev + 1`), but for
//!   two timers of one node fired one after the other, the first armed
//!   first: at one instant the simulator runs its events in the order they
//!   were scheduled, so those two may share an instant (`τ_i ≥ τ_prev`);
//!   the violating (last) step follows every other node's step (its
//!   verdict rests on what the path did before it, not only on what
//!   messages link to it: a superseded effect's on a newer grant another
//!   worker received), its own node's in that node's order;
//!   latency is 1 ms and a delivery at step d of a message sent at step s
//!   is a `delay` fault of `τ_d − τ_s − 1` ms on its link's `nth` message;
//! - a timer armed at step s with `after` fires at `τ_s + K·after`; one
//!   still pending at a later step (cancelled, re-armed, its node crashed,
//!   or the path's end) is due after that step. Redlock's validity timer is
//!   due where the simulator's client puts it at a K-times TTL,
//!   `K·ttl − drift(K·ttl)` after the acquisition's start (its 2 ms of
//!   drift do not scale), and its firing step has no window, nor has the
//!   firing of a timer armed there (as much later as it);
//! - a pause is a `pause` fault that ends exactly when the worker's first
//!   timer fires after it (the simulator holds the timer until then); no
//!   message may reach the paused worker before that (see below).
//!   When the path has no schedule otherwise, another timer armed before
//!   the pause that the path never fires may be held to its end too (it
//!   runs there, after the worker's last step of the path);
//! - a crash is a `crash` fault with `restart_after_ms = 0`; a failover a
//!   `failover` fault (the old primary's timers die with it, the promoted
//!   replica's `Promote` is the same step; its `restart_after_ms` the
//!   rejoin's step, if any, and a message that reaches the old primary
//!   while it is down a `drop`), and each send to the coordinator group's
//!   address stays on its side of it (it goes to the primary of its
//!   moment); a lost message a
//!   `drop`; a duplicated one a `duplicate` fault whose copy lands at the
//!   second delivery; messages still in flight at the end are dropped;
//! - a wall-clock jump is a jump of its node's `[clock."<node>"]` at its
//!   step's τ, by K × `jump_ms` (the durations that node compares its wall
//!   readings against are K times the search's). The simulator applies a
//!   `[clock]` jump at τ to every reading at τ and later, whatever the
//!   order of τ's events (a `clock_jump` fault at τ, scheduled at boot,
//!   runs before every event scheduled during the run for τ but after the
//!   boot's own): so the jump is strictly after its node's previous step
//!   (`τ_jump ≥ τ_prev + 1`, the boot included) and its node's next step
//!   may share its instant (`τ_next ≥ τ_jump`);
//! - a drift is its node's `[clock] drift_ppm` from time zero, as the
//!   search's (whose drift is a step at time zero: it schedules nothing).
//!   The node's timers run on its monotonic clock: one of K·after ms armed
//!   at a whole-ms instant (where that clock reads whole ns) is due
//!   `K·after·10^6 / (10^6 + ppm)` ms later, whole only when K is a
//!   multiple of `(10^6 + ppm) / gcd(10^6, 10^6 + ppm)` — 11 at 10% fast,
//!   9 at 10% slow — so every K tried is a multiple of the drifting
//!   clocks' least common one (a path that needs more than 1000 is
//!   refused, naming the drift and the multiple). The search places such
//!   timers at fractions of a ms, so each step's window starts at K × its
//!   search instant in ns, rounded to the ms. A drifting worker's
//!   `start_ms` is on its clock too: its first step goes where the clock
//!   reads whole ms (every 10 ms at 10%), raised there when the least
//!   solution puts it elsewhere.
//!
//! These are difference constraints, solved as longest paths (Bellman–Ford,
//! shared with the model emitter) for K = 1, 2, 5, 10, … (× the drift's
//! multiple) until one has a schedule. Two things the search does that the simulator cannot:
//!
//! - handle a message at exactly a pending timer's deadline before the
//!   timer (messages take no time in the search). Each such *tie* is tried
//!   both ways — the timer still pending, or fired just before — fewest
//!   timers fired first, and the caller's `accept` (a simulator run) picks
//!   the first schedule that reproduces the violation. A step that fires a
//!   timer of the node armed before the pending one may be at its very
//!   deadline (the simulator runs the earlier-armed first);
//! - fire one node's timers with the same deadline in any order (the
//!   simulator fires them in arming order). When the path has no schedule,
//!   the same-length paths one or two adjacent swaps away are tried; each
//!   is replayed through the harness and must end in the same violation.
//!   When none has one either, and the path's own failure was a
//!   [`Refusal::NoSchedule`] (constraints with no solution, or none that
//!   replays — not a step with no scripted form, which no order of timers
//!   changes), the BFS runs again with each node's timers
//!   of one instant fired in arming order only (`Bounds::arming_order`,
//!   used for nothing else: proofs and the reported counterexample keep
//!   every order) and its shortest path to the same violation is scripted
//!   the same way, the header saying so. Two timers of one node armed at
//!   one step and re-armed in step (zk-sequential's 6 ms request timeout
//!   and its two 3 ms pings) are due at exactly one simulator instant at
//!   every K, so no schedule can put anything between them but in the
//!   order they were armed.
//!
//! The search's pause only delays the worker's timers (by the pause's
//! length); the worker still handles messages. The simulator's pause holds
//! every input of the node in one queue, messages as they arrive and
//! timers as they fall due, and runs the queue in that order when the
//! pause ends (its `Resume` event is queued when the pause begins, so a
//! timer due at the very end and armed before the pause is held too, and a
//! message sent after the pause began and arriving at its end is handled
//! just after the held ones). So a held message runs *before* a timer that
//! fell due after it arrived: the search's order — the message handled
//! while the delayed timer waits — is not one the simulator has. When the
//! path delivers to a paused worker (unscriptable as it is), the path with
//! each such delivery moved to just after the pause's end (the worker's
//! first timer firing after the pause; a pause that outlasts the path
//! holds it past the violation, so it is left undelivered) is tried, first
//! alone, then with the steps before that end that depend on it (a
//! message a moved step sent, a later step of a node a moved step acted
//! at); each is replayed through the harness, must end in the same
//! violation, and is scripted like any path, so the moved delivery comes
//! at least 1 ms after the pause's end (each node's steps strictly
//! ordered) and nothing holds it; the header says what moved. Neither
//! catalogue path that delivers to a paused worker at the default bounds
//! has such a variant, and no delaying pause could script them:
//!
//! - fenced-check-then-write (20 steps): B's acquire_ok (step 12) and
//!   read_ok (14) reach B while it is paused, and B's first timer after
//!   the pause (step 15) is the check-to-write timer read_ok armed. More
//!   deeply, the path needs B to handle acquire_ok, sent at 8 ms, while
//!   B's 6 ms request timeout armed at 0 ms is still pending; the search
//!   delays that timeout past 16 ms, but in the simulator it falls due at
//!   6K ms, inside any pause, before acquire_ok exists, and is held ahead
//!   of it;
//! - github-2012-pair (`fence = false`, 11 steps): the STONITH (step 9)
//!   reaches the paused active, whose pause does not end within the path;
//!   without it (the STONITH cancels the active's timers) the active's
//!   heartbeat, delayed by the pause to 14 ms, falls due before the
//!   passive's fencing timeout at 16 ms, so the search fires it first and
//!   the left path is no path of the search.
//!
//! So then the search runs again with the simulator's pause
//! (`Bounds::pause_holds`, [`super::hold`]) and its shortest path to the
//! same violation is scripted, the header saying so (fenced-check-then-
//! write's has no pause; github-2012-pair's holds the active's heartbeat
//! to the pause's end and delivers the STONITH after it). Such a pause is
//! a `pause` fault of exactly K × its length, ended by the path's
//! `Resume`; a message that reached the paused worker arrives within it
//! and a timer that fell due in it fires at its deadline, each a step of
//! the worker, so the worker's step order is the held queue's order. The
//! simulator schedules a pause's fault when it boots: at one instant it
//! runs after every node's start and before every event of the run, so a
//! holding pause and the worker's next step may share an instant (held),
//! and a pause may be at 0 ms. Independently of pauses, a timer a node
//! arms for 0 ms fires at the arming step's instant, after it.
//!
//! A path with no schedule, or a step the simulator has no scripted form
//! for, is an error naming the step — never approximated.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::hash::Hash;

use super::clock::NodeClock;
use super::harness::{Action, Did, Harness, Next};
use super::search::{search, Counterexample};
use super::state::Packet;
use super::topology::{is_lock_server, MS};
use crate::model::to_scenario::{longest_paths, quote, EMITTED_SEEDS};
use crate::protocol::redlock::{self, RedisMsg};
use crate::protocol::{Msg, Node, NodeId, ProtocolKind, TimerId};
use crate::scenario::limits::DRIFT_PPM_MIN;

/// The scenario file name: `code-<protocol>-<violation>.toml`.
pub fn file_name(protocol: ProtocolKind, c: &Counterexample) -> String {
    format!(
        "code-{}-{}.toml",
        protocol.id(),
        c.finding.kind.to_string().replace('_', "-")
    )
}

/// A duration on the simulator's clock at scale K, in ms.
#[derive(Clone, Copy, Debug)]
enum Span {
    /// K × this many ms: every configured duration scales with K.
    Scaled(i64),
    /// K × `ms` of a drifting node's monotonic clock (a timer it armed):
    /// `K·ms·10^6 / (10^6 + ppm)` ms of true time, from a whole-ms instant
    /// (where its reading is whole ns) exactly that in the simulator.
    Drifted { ms: i64, ppm: i64 },
    /// Redlock's validity counted from its acquisition's start, as the
    /// simulator's client computes it at a TTL of K·`ttl_ns`
    /// ([`redlock::validity_from_start_ns`]): its 2 ms do not scale. On
    /// the client's monotonic clock, drifting by `ppm` (0: none).
    RedlockValidity { ttl_ns: u64, ppm: i64 },
}

impl Span {
    /// At scale `k`; None when it is not whole milliseconds there.
    fn ms_at(self, k: i64) -> Option<i64> {
        match self {
            Span::Scaled(ms) => Some(k * ms),
            Span::Drifted { ms, ppm } => true_ns(i128::from(k * ms) * MS as i128, ppm)
                .filter(|ns| ns % MS as i128 == 0)
                .map(|ns| (ns / MS as i128) as i64),
            Span::RedlockValidity { ttl_ns, ppm } => {
                let ns = redlock::validity_from_start_ns(k as u64 * ttl_ns);
                true_ns(i128::from(ns), ppm)
                    .filter(|ns| ns % MS as i128 == 0)
                    .map(|ns| (ns / MS as i128) as i64)
            }
        }
    }

    fn negated(self) -> (i64, Span) {
        match self {
            Span::Scaled(ms) => (1, Span::Scaled(-ms)),
            Span::Drifted { ms, ppm } => (1, Span::Drifted { ms: -ms, ppm }),
            other => (-1, other),
        }
    }

    /// Whether the simulator's timer lands exactly `ms_at(K)` after its
    /// anchor, as K × the search's (all but Redlock's validity).
    fn exact(self) -> bool {
        matches!(self, Span::Scaled(_) | Span::Drifted { .. })
    }
}

/// `mono_ns` of a clock drifting by `ppm` in true time, when whole ns.
fn true_ns(mono_ns: i128, ppm: i64) -> Option<i128> {
    let rate = PPM + i128::from(ppm);
    (mono_ns * PPM % rate == 0).then_some(mono_ns * PPM / rate)
}

const PPM: i128 = 1_000_000;

/// `τ_to ≥ τ_from + ms + sign·span(K)`.
#[derive(Clone, Copy, Debug)]
struct Edge {
    from: usize,
    to: usize,
    ms: i64,
    sign: i64,
    span: Span,
    /// A tie (see [`Walk::pending_at`]): which one, and whether this edge
    /// is its "still pending" side (else its "fired first" side).
    tie: Option<(usize, bool)>,
}

/// A message copy in flight: its sender's step and its link number.
#[derive(Clone, Copy, Debug)]
struct Flight {
    packet: Packet,
    sent: usize,
    nth: u32,
    /// A duplicate's copy: the step its original was delivered at.
    copy_of: Option<Option<usize>>,
    has_copy: bool,
}

/// A timer due `span` after step `anchor` in the simulator (the step that
/// armed it, but for Redlock's validity) and at `due_ns` in the search.
#[derive(Clone, Copy, Debug)]
struct Armed {
    anchor: usize,
    span: Span,
    due_ns: u64,
    /// A worker's first step, armed at boot for `start_ns` (0 in the
    /// search): the scenario's `start_ms` puts it anywhere in instant 0.
    start: bool,
    /// Its place in the order timers were armed along the path. A node
    /// arms its timers at its own steps, which the simulator runs in path
    /// order at strictly increasing instants (and one step's effects in
    /// their order), so of two timers of one node due at one instant the
    /// simulator fires the one with the smaller `seq` first.
    seq: usize,
}

/// When a worker's first step fires in the simulator.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// At this step.
    At(usize),
    /// After this step (it did not fire within the path).
    After(usize),
}

/// A worker's pause: from step `at` to the step its first timer fires.
#[derive(Clone, Copy, Debug)]
struct Pause {
    node: NodeId,
    at: usize,
    resume: Option<usize>,
    /// The node crashed before its timer fired (the crash ends the pause).
    crashed: bool,
}

/// A scripted fault, its times still as step indices.
#[derive(Clone, Copy, Debug)]
enum Scripted {
    Delay {
        p: Packet,
        nth: u32,
        sent: usize,
        at: usize,
    },
    Drop {
        p: Packet,
        nth: u32,
    },
    Duplicate {
        p: Packet,
        nth: u32,
        first: usize,
        second: usize,
    },
    Crash {
        node: NodeId,
        at: usize,
    },
    Failover {
        at: usize,
        /// The step its old primary rejoins at, if it does.
        rejoin: Option<usize>,
    },
}

/// The path's constraints, built step by step.
#[derive(Default)]
struct Walk {
    edges: Vec<Edge>,
    /// Per step: its search instant in ms (rounded down) and in ns.
    instants_ms: Vec<i64>,
    instants_ns: Vec<u64>,
    /// Steps outside their instant's window: Redlock's validity firing,
    /// (2K − 2) ms later in the simulator than K × the search's.
    unwindowed: Vec<usize>,
    /// Redlock's TTL, when the protocol is Redlock, and each worker's
    /// latest acquisition start (the step that sent its `SET`s).
    redlock_ttl_ns: Option<u64>,
    acquired_from: BTreeMap<NodeId, usize>,
    flights: Vec<Flight>,
    links: BTreeMap<(NodeId, NodeId), u32>,
    timers: BTreeMap<(NodeId, TimerId), Armed>,
    starts: BTreeMap<NodeId, Start>,
    /// Each node's latest step (0: the boot).
    last: BTreeMap<NodeId, usize>,
    workers: usize,
    pauses: Vec<Pause>,
    faults: Vec<Scripted>,
    ties: usize,
    /// Steps that sent to the coordinator group's address, and the
    /// failover steps: each such send is on the same side of each failover
    /// in the simulator as in the path (it routes to the primary of its
    /// moment).
    group_sends: Vec<usize>,
    failovers: Vec<usize>,
    /// Each down node's failover, as its index in `faults`.
    down: BTreeMap<NodeId, usize>,
    /// Whether timers a pause holds to its end may run there unfired by
    /// the path (tried when the path has no schedule without), and how
    /// many do.
    hold: bool,
    held: usize,
    /// Timers armed so far (the next one's `seq`).
    armings: usize,
    /// With `Bounds::pause_holds`, the pause's length in ms: a pause is
    /// the simulator's, ended by the path's `Resume` exactly that long
    /// after it began ([`Walk::resume`]).
    pause_holds_ms: Option<i64>,
    /// Each node's latest step that fired a timer exactly at its
    /// deadline (not held by a pause, not Redlock's validity), and that
    /// timer.
    fired_exactly: BTreeMap<NodeId, (usize, Armed)>,
    /// The drifting nodes' rate errors in ppm (from time zero: known
    /// before the path's first step, which its timers armed at boot need).
    drifts: BTreeMap<NodeId, i64>,
    /// The smallest K at which every drifting node's timers are whole ms
    /// of true time ([`drifts`]); every K tried is a multiple of it.
    unit: i64,
    jump_ms: u64,
    /// The wall-clock jumps: the node, the step, by how many ms (the
    /// search's, signed).
    jumps: Vec<(NodeId, usize, i64)>,
}

impl Walk {
    fn edge(&mut self, from: usize, to: usize, ms: i64, scaled_ms: i64) {
        self.edge_span(from, to, ms, (1, Span::Scaled(scaled_ms)));
    }

    fn edge_span(&mut self, from: usize, to: usize, ms: i64, (sign, span): (i64, Span)) {
        self.edges.push(Edge {
            from,
            to,
            ms,
            sign,
            span,
            tie: None,
        });
    }

    /// A timer (`node`'s) still pending at step `at` is due after it.
    fn pending_at(&mut self, node: NodeId, t: Armed, at: usize) {
        if t.start {
            self.starts.insert(node, Start::After(at));
            return;
        }
        // τ_anchor + span ≥ τ_at + 1; or ≥ τ_at if step `at` fired a
        // timer of the same node armed before this one (exactly at its
        // deadline): at one instant the simulator runs that timer first.
        let ms = i64::from(!self.fires_before(node, at, &t));
        self.edge_span(at, t.anchor, ms, t.span.negated());
        if t.due_ns == self.instants_ns[at] {
            // Due at the very instant of step `at`: the search may handle
            // `at` first (messages take no time), the simulator cannot
            // also compare clocks as the search did (`now >= deadline`).
            // Either side may be the one the code needs: a tie.
            let tie = self.ties;
            self.ties += 1;
            if let Some(e) = self.edges.last_mut() {
                e.tie = Some((tie, true));
            }
            // Or it fires first: τ_at ≥ τ_anchor + span + 1.
            self.edge_span(t.anchor, at, 1, (1, t.span));
            if let Some(e) = self.edges.last_mut() {
                e.tie = Some((tie, false));
            }
        }
    }

    /// Whether step `at` fired a timer of `node` exactly at its deadline
    /// that the simulator, were both due at one instant, runs before `t`
    /// (armed before it; both scaled, so both land exactly).
    fn fires_before(&self, node: NodeId, at: usize, t: &Armed) -> bool {
        t.span.exact()
            && !t.start
            && self
                .fired_exactly
                .get(&node)
                .is_some_and(|&(step, f)| step == at && f.seq < t.seq)
    }

    fn paused(&self, node: NodeId) -> Option<usize> {
        self.pauses
            .iter()
            .position(|p| p.node == node && p.resume.is_none())
    }

    /// `node` is in a pause of the search's delaying kind (which a
    /// message reaching it, or two of its timers due at one instant,
    /// cannot be scripted through); a holding pause is the simulator's.
    fn holds_back(&self, node: NodeId) -> bool {
        self.pause_holds_ms.is_none() && self.paused(node).is_some()
    }

    /// Whether `node`'s step `action` may share its previous step's
    /// instant because of a holding pause: the simulator schedules a
    /// pause's fault when it boots, after every node's start and before
    /// any event of the run, so at one instant the pause comes after the
    /// starts and before every timer and message due then (held).
    fn pause_shares_instant(&self, node: NodeId, previous: usize, action: Action) -> bool {
        self.pause_holds_ms.is_some()
            && match action {
                Action::Pause(_) => previous == 0,
                _ => self
                    .pauses
                    .iter()
                    .any(|p| p.node == node && p.at == previous),
            }
    }

    /// `node`'s holding pause ends at step `i`, exactly its length after
    /// it began: the simulator's resume, which runs what it held in the
    /// order it arrived (each arrival and held timer is a step of the node
    /// before this one, so the per-node order keeps the queue's).
    fn resume(&mut self, node: NodeId, i: usize) -> Result<(), String> {
        let (Some(k), Some(pause_ms)) = (self.paused(node), self.pause_holds_ms) else {
            return Err(format!("step {i}: a resume of a worker that is not paused"));
        };
        let at = self.pauses[k].at;
        self.pauses[k].resume = Some(i);
        self.edge(at, i, 0, pause_ms);
        self.edge(i, at, 0, -pause_ms);
        Ok(())
    }

    /// What step `i` logged: sends get their link numbers, timers their arming step.
    fn apply_log(&mut self, i: usize, log: &[Did]) -> Result<(), String> {
        for d in log {
            match *d {
                Did::Sent { packet, group } => {
                    if group {
                        self.group_sends.push(i);
                    }
                    if matches!(packet.msg, Msg::Redis(RedisMsg::SetNx { .. })) {
                        self.acquired_from.insert(packet.from, i);
                    }
                    let nth = self.links.entry((packet.from, packet.to)).or_insert(0);
                    *nth += 1;
                    let nth = *nth;
                    self.flights.push(Flight {
                        packet,
                        sent: i,
                        nth,
                        copy_of: None,
                        has_copy: false,
                    });
                }
                Did::SetTimer {
                    node,
                    timer,
                    after_ns,
                } => {
                    let mut armed = self.armed(node, timer, after_ns, i)?;
                    armed.seq = self.armings;
                    self.armings += 1;
                    if let Some(old) = self.timers.remove(&(node, timer)) {
                        self.pending_at(node, old, i);
                    }
                    self.timers.insert((node, timer), armed);
                }
                Did::CancelTimer { node, timer } => {
                    if let Some(old) = self.timers.remove(&(node, timer)) {
                        self.pending_at(node, old, i);
                    }
                }
            }
        }
        Ok(())
    }

    /// `node`'s `timer`, armed at step `i` for `after_ns`: where the
    /// simulator will have it due. Every duration is the search's × K but
    /// Redlock's validity, which the simulator's client computes as
    /// `K·ttl − elapsed − drift(K·ttl)`: due `K·ttl − drift(K·ttl)` after
    /// the acquisition's start, whose 2 ms of drift do not scale.
    fn armed(
        &self,
        node: NodeId,
        timer: TimerId,
        after_ns: u64,
        i: usize,
    ) -> Result<Armed, String> {
        let due_ns = self.due_ns(node, self.instants_ns[i], after_ns);
        let worker = (node.0 as usize) < self.workers;
        let ppm = self.drift_ppm(node);
        if let Some(ttl_ns) = self
            .redlock_ttl_ns
            .filter(|_| worker && timer == redlock::VALIDITY)
        {
            let anchor = *self.acquired_from.get(&node).ok_or_else(|| {
                format!("step {i}: a validity timer with no acquisition before it")
            })?;
            // The law checked against the search's own timer.
            let validity_ns = redlock::validity_from_start_ns(ttl_ns);
            if self.due_ns(node, self.instants_ns[anchor], validity_ns) != due_ns {
                return Err(format!(
                    "step {i}: a validity timer not due ttl − drift after its acquisition's start (step {anchor})"
                ));
            }
            return Ok(Armed {
                anchor,
                span: Span::RedlockValidity { ttl_ns, ppm },
                due_ns,
                start: false,
                seq: 0,
            });
        }
        if after_ns % MS != 0 {
            return Err(format!(
                "step {i}: a timer of {after_ns} ns is not whole milliseconds"
            ));
        }
        let ms = (after_ns / MS) as i64;
        Ok(Armed {
            anchor: i,
            span: match ppm {
                0 => Span::Scaled(ms),
                ppm => Span::Drifted { ms, ppm },
            },
            due_ns,
            start: i == 0 && after_ns == 0 && worker,
            seq: 0,
        })
    }

    /// `node`'s drift, in ppm (0: its clock keeps true time's pace).
    fn drift_ppm(&self, node: NodeId) -> i64 {
        self.drifts.get(&node).copied().unwrap_or(0)
    }

    /// Where the search has a timer of `node` armed at true time `at_ns`
    /// for `after_ns` of its monotonic clock (which drifts from time zero).
    fn due_ns(&self, node: NodeId, at_ns: u64, after_ns: u64) -> u64 {
        match self.drift_ppm(node) {
            0 => at_ns + after_ns,
            ppm => {
                let clock = NodeClock {
                    drift_ppm: ppm as i32,
                    ..NodeClock::default()
                };
                clock.true_at_mono(clock.mono(at_ns) + after_ns)
            }
        }
    }

    /// The first copy in flight equal to `p` (copies of one message are
    /// interchangeable: the earliest sent is taken).
    fn take(&mut self, p: &Packet, i: usize) -> Result<Flight, String> {
        let at = self
            .flights
            .iter()
            .position(|f| f.packet == *p)
            .ok_or_else(|| format!("step {i}: no such message in flight"))?;
        Ok(self.flights.remove(at))
    }

    fn deliver(&mut self, p: &Packet, i: usize) -> Result<(), String> {
        if self.down.contains_key(&p.to) {
            // Arrives while its node is down: the simulator drops it.
            let f = self.take(p, i)?;
            if f.copy_of.is_some() || f.has_copy {
                return Err(format!(
                    "step {i}: a duplicated message reaching a down node is not scripted yet"
                ));
            }
            self.faults.push(Scripted::Drop { p: *p, nth: f.nth });
            return Ok(());
        }
        if self.holds_back(p.to) {
            return Err(format!(
                "step {i}: a message reaches a paused worker (the simulator holds it until the pause ends)"
            ));
        }
        let f = self.take(p, i)?;
        match f.copy_of {
            Some(Some(first)) => self.faults.push(Scripted::Duplicate {
                p: *p,
                nth: f.nth,
                first,
                second: i,
            }),
            Some(None) => {
                return Err(format!(
                    "step {i}: a duplicate arrives before its original (the simulator's copy lands after it)"
                ))
            }
            None => {
                self.edge(f.sent, i, 1, 0);
                self.faults.push(Scripted::Delay {
                    p: *p,
                    nth: f.nth,
                    sent: f.sent,
                    at: i,
                });
                if f.has_copy {
                    for c in self.flights.iter_mut() {
                        if c.copy_of == Some(None) && c.packet == *p && c.nth == f.nth {
                            c.copy_of = Some(Some(i));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn fire(&mut self, node: NodeId, timer: TimerId, i: usize) -> Result<(), String> {
        let t = self
            .timers
            .remove(&(node, timer))
            .ok_or_else(|| format!("step {i}: timer {} is not armed", timer.0))?;
        let paused = match self.pause_holds_ms {
            // Held, the timer falls due at its deadline all the same.
            Some(_) if !t.start => None,
            Some(_) => {
                self.starts.insert(node, Start::At(i));
                return Ok(());
            }
            None => self.paused(node),
        };
        match paused {
            paused if t.start => {
                self.starts.insert(node, Start::At(i));
                if let Some(k) = paused {
                    // Paused before its first step: the script's start_ms
                    // is this step's instant, where the pause ends.
                    self.pauses[k].resume = Some(i);
                }
            }
            Some(k) => {
                // The pause ends here: the timer, due within it, was held.
                let at = self.pauses[k].at;
                self.pauses[k].resume = Some(i);
                self.edge_span(t.anchor, i, 0, (1, t.span)); // due by the resume
                self.edge_span(at, t.anchor, 1, t.span.negated()); // due after the pause began
            }
            None => {
                self.edge_span(t.anchor, i, 0, (1, t.span));
                self.edge_span(i, t.anchor, 0, t.span.negated());
                if t.span.exact() {
                    self.fired_exactly.insert(node, (i, t));
                }
            }
        }
        if !t.span.exact() || self.unwindowed.contains(&t.anchor) {
            // Its node's steps and messages order it; its instant, by
            // (2K − 2) ms of drift, is not the search's × K (nor, for a
            // timer armed at such a step, its firing's).
            self.unwindowed.push(i);
        }
        Ok(())
    }

    /// Step `i` after its nodes' previous steps: each node's steps in
    /// path order; different nodes' steps are independent unless a
    /// message links them.
    fn in_node_order(&mut self, action: Action, i: usize) {
        let (node, also) = match action {
            Action::Deliver(p) => (Some(p.to), None),
            Action::Fire { node, .. }
            | Action::Pause(node)
            | Action::Resume(node)
            | Action::Crash(node)
            | Action::Rejoin(node) => (Some(node), None),
            // The old primary's last step and the promoted replica's first.
            Action::Failover { from, to } => (Some(from), Some(to)),
            // A jump is its node's: strictly after its previous step, seen
            // by its next one (which may share its instant: see below).
            Action::Jump { node, .. } => (Some(node), None),
            // The clock drifts from time zero in the simulator: no event.
            Action::Lose(_) | Action::Duplicate(_) | Action::Drift { .. } => (None, None),
        };
        for node in node.into_iter().chain(also) {
            // Each node's steps in path order; different nodes' steps are
            // independent unless a message links them. Two timers of one
            // node fired one after the other may share an instant if the
            // first was armed first (the simulator's order at one instant).
            let previous = self.last.insert(node, i).unwrap_or(0);
            let same_instant = match action {
                Action::Fire { timer, .. } if !self.holds_back(node) => {
                    self.timers.get(&(node, timer)).is_some_and(|t| {
                        // Or armed for 0 ms at the node's previous step: the
                        // simulator schedules it then, to run at that instant.
                        self.fires_before(node, previous, t)
                            || t.anchor == previous && !t.start && t.span.ms_at(1) == Some(0)
                    })
                }
                _ => false,
            } || self.pause_shares_instant(node, previous, action);
            // A `[clock]` jump at τ applies to every reading at τ and later.
            let after_jump = self.jumps.iter().any(|&(_, at, _)| at == previous);
            self.edge(previous, i, i64::from(!same_instant && !after_jump), 0);
        }
    }

    fn step(&mut self, action: Action, i: usize) -> Result<(), String> {
        self.in_node_order(action, i);
        match action {
            Action::Deliver(p) => self.deliver(&p, i)?,
            Action::Lose(p) => {
                let f = self.take(&p, i)?;
                if f.copy_of.is_some() || f.has_copy {
                    return Err(format!(
                        "step {i}: losing a duplicated message is not scripted yet"
                    ));
                }
                self.faults.push(Scripted::Drop { p, nth: f.nth });
            }
            Action::Duplicate(p) => {
                let at = self
                    .flights
                    .iter()
                    .position(|f| f.packet == p && f.copy_of.is_none() && !f.has_copy)
                    .ok_or_else(|| {
                        format!("step {i}: a second duplicate of one message is not scripted yet")
                    })?;
                self.flights[at].has_copy = true;
                let copy = Flight {
                    copy_of: Some(None),
                    has_copy: false,
                    ..self.flights[at]
                };
                self.flights.push(copy);
            }
            Action::Fire { node, timer } => self.fire(node, timer, i)?,
            Action::Pause(node) => {
                if self.paused(node).is_some() {
                    return Err(format!(
                        "step {i}: a second pause before the first one's timer fires"
                    ));
                }
                self.pauses.push(Pause {
                    node,
                    at: i,
                    resume: None,
                    crashed: false,
                });
            }
            Action::Crash(node) => {
                self.timers_die(node, i);
                if let Some(k) = self.paused(node) {
                    self.pauses[k].resume = Some(i); // a crash ends a pause
                    self.pauses[k].crashed = true;
                }
                self.faults.push(Scripted::Crash { node, at: i });
            }
            Action::Failover { from, .. } => {
                self.timers_die(from, i);
                self.failovers.push(i);
                self.down.insert(from, self.faults.len());
                self.faults.push(Scripted::Failover {
                    at: i,
                    rejoin: None,
                });
            }
            Action::Rejoin(node) => {
                let k = self
                    .down
                    .remove(&node)
                    .ok_or_else(|| format!("step {i}: a rejoin of a node that is up"))?;
                if let Scripted::Failover { rejoin, .. } = &mut self.faults[k] {
                    *rejoin = Some(i);
                }
            }
            Action::Resume(node) => self.resume(node, i)?,
            Action::Jump { node, forward } => {
                let by_ms = self.jump_ms as i64;
                self.jumps
                    .push((node, i, if forward { by_ms } else { -by_ms }));
            }
            Action::Drift { .. } => {} // known before the first step
        }
        Ok(())
    }

    /// `node` crashed at step `i`: its timers are due after the crash
    /// (they never fire).
    fn timers_die(&mut self, node: NodeId, i: usize) {
        let dead: Vec<(NodeId, TimerId)> = self
            .timers
            .keys()
            .filter(|k| k.0 == node)
            .copied()
            .collect();
        for k in dead {
            let t = self.timers.remove(&k).expect("listed");
            self.pending_at(node, t, i);
        }
    }

    /// Sends to the group address fall on their side of each failover;
    /// timers still armed at their node's last step are due after it,
    /// unless the node is paused to the end; messages still in flight are
    /// dropped.
    fn finish(&mut self) {
        for f in self.failovers.clone() {
            for s in self.group_sends.clone() {
                if s < f {
                    self.edge(s, f, 1, 0);
                } else if s > f {
                    self.edge(f, s, 1, 0);
                }
            }
        }
        let armed: Vec<((NodeId, TimerId), Armed)> =
            self.timers.iter().map(|(k, t)| (*k, *t)).collect();
        for ((node, _), t) in armed {
            if self.paused(node).is_some() {
                continue;
            }
            let last = self.last.get(&node).copied().unwrap_or(0);
            // Armed before a pause that ended at the node's last step: the
            // search delayed it past the path's end; the simulator holds
            // it and runs it at the pause's end, after the path's step (a
            // step the path does not have: the replay judges it).
            let held = self
                .pauses
                .iter()
                .find(|p| p.node == node && !p.crashed && p.resume == Some(last) && t.anchor < p.at)
                .map(|p| p.at);
            match held {
                Some(at) if self.hold && !t.start && self.pause_holds_ms.is_none() => {
                    self.edge_span(at, t.anchor, 1, t.span.negated());
                    self.edge_span(t.anchor, last, 0, (1, t.span));
                    self.held += 1;
                }
                _ => self.pending_at(node, t, last),
            }
        }
        for f in std::mem::take(&mut self.flights) {
            if f.copy_of.is_none() {
                self.faults.push(Scripted::Drop {
                    p: f.packet,
                    nth: f.nth,
                });
            }
        }
    }

    /// Step times in ms at scale `k`, or None when no schedule exists;
    /// bit i of `fired` set: tie i's timer fires first.
    fn solve(&self, k: i64, fired: u64) -> Option<Vec<i64>> {
        let n = self.instants_ms.len();
        let mut edges: Vec<(usize, usize, i64)> = self
            .edges
            .iter()
            .filter(|e| match e.tie {
                Some((i, pending)) => (fired >> i & 1 == 0) == pending,
                None => true,
            })
            .map(|e| Some((e.from, e.to, e.ms + e.sign * e.span.ms_at(k)?)))
            .collect::<Option<_>>()?;
        for i in (1..n).filter(|i| !self.unwindowed.contains(i)) {
            // Within its instant's window [K·t, K·t + K − 1]; a drift's
            // instants are fractions of a ms (its multiples of 1/11 ms at
            // 10% fast, to the ns), whole at this K but for the ns.
            let lo = match self.unit {
                1 => k * self.instants_ms[i],
                _ => {
                    ((i128::from(k) * self.instants_ns[i] as i128 + MS as i128 / 2) / MS as i128)
                        as i64
                }
            };
            edges.push((0, i, lo));
            edges.push((i, 0, -(lo + k - 1)));
        }
        // A drifting worker's start is on its clock: a whole-ms `start_ms`
        // only at an instant where that clock reads whole ms.
        for _ in 0..=STARTS_RAISED_MAX {
            let times = longest_paths(n, &edges, 0).filter(|t| t[0] == 0)?;
            match self.unreadable_start(&times) {
                Some((step, at_least)) => edges.push((0, step, at_least)),
                None => return Some(times),
            }
        }
        None
    }

    /// A drifting worker whose first step is at an instant where its clock
    /// does not read whole ms, and the next instant where it does.
    fn unreadable_start(&self, times: &[i64]) -> Option<(usize, i64)> {
        self.drifts.iter().find_map(|(node, &ppm)| {
            let Some(&Start::At(step)) = self.starts.get(node) else {
                return None;
            };
            let every = PPM as i64 / gcd(PPM as i64, ppm);
            (times[step] % every != 0).then_some((step, (times[step] / every + 1) * every))
        })
    }
}

/// How many times [`Walk::solve`] raises a drifting worker's start.
const STARTS_RAISED_MAX: usize = 8;

/// The scales tried, smallest first.
const SCALES: [i64; 10] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/// Ties tried every way up to this many; beyond, only "all pending"
/// and "all fired first".
const TIES_MAX: usize = 10;

/// Writes counterexample `c` of harness `h` (a catalogue protocol's
/// built-in nodes) as scenario TOML (schema_version 1): the first schedule
/// `accept` takes (the caller runs it in the simulator), trying the ties'
/// sides with the fewest timers fired first before the others.
///
/// If the path itself has none, the same-length paths one or two swaps of
/// adjacent steps away are tried (replayed through the harness, each must
/// end in the same violation): the search fires timers with one deadline
/// in any order, the simulator in the order they were armed, so the
/// shortest path may need its deliveries in the other order.
pub fn to_scenario<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Result<String, String> {
    let first = match schedule(h, c, accept) {
        Ok(text) => return Ok(text),
        Err(why) => why,
    };
    if let Some(text) = swapped(h, c, accept) {
        return Ok(text);
    }
    match first {
        // A holding pause is the simulator's: nothing to move past it.
        Refusal::Unscriptable(why) if h.bounds.pause_holds => Err(why),
        Refusal::Unscriptable(why) => match past_pauses(h, c, accept) {
            Some(Ok(text)) => Ok(text),
            Some(Err(moved)) => {
                with_holding_pauses(h, c, accept).map_err(|held| format!("{why}; {moved}; {held}"))
            }
            None => Err(why),
        },
        // The arming-order BFS can only help a path whose constraints
        // have no solution (or none that replays): see [`Refusal`].
        Refusal::NoSchedule(why) if h.bounds.arming_order => Err(why),
        Refusal::NoSchedule(why) => {
            in_arming_order(h, c, accept).map_err(|fallback| format!("{why}; {fallback}"))
        }
    }
}

/// Why a path has no script. Only the first kind may have one in
/// another order of timers, so only it sends [`to_scenario`] to the
/// arming-order BFS (a second full search: 11 s of CPU for
/// fenced-check-then-write's bounds).
#[derive(Debug)]
enum Refusal {
    /// Its constraints have no solution at any scale, or none of their
    /// solutions replays to the violation in the simulator.
    NoSchedule(String),
    /// A step the emitter has no scripted form for (a message reaching a
    /// paused worker, a lost duplicate, …), or not a path to the
    /// violation: no order of timers changes that.
    Unscriptable(String),
}

/// The same-length paths one or two swaps of adjacent steps away (see
/// [`to_scenario`]), the first that has a schedule, its header naming the swap.
fn swapped<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Option<String> {
    let n = c.steps.len();
    let swapped = |a: usize, b: Option<usize>| {
        let mut alt = c.clone();
        alt.steps.swap(a, a + 1);
        if let Some(b) = b {
            alt.steps.swap(b, b + 1);
        }
        alt
    };
    let singles = (0..n.saturating_sub(1)).map(|a| (a, None));
    let pairs = (0..n.saturating_sub(1))
        .flat_map(|a| (a + 2..n.saturating_sub(1)).map(move |b| (a, Some(b))));
    for (a, b) in singles.chain(pairs) {
        if let Ok(text) = schedule(h, &swapped(a, b), accept) {
            let note = match b {
                Some(b) => format!("steps {}/{} and {}/{}", a + 1, a + 2, b + 1, b + 2),
                None => format!("steps {}/{}", a + 1, a + 2),
            };
            return Some(format!(
                "# The search's shortest path with {note} swapped (the same length and violation):\n# the simulator fires timers with one deadline in the order they were armed.\n{text}"
            ));
        }
    }
    None
}

/// The fallback when the shortest path and its swaps have no schedule:
/// a shortest path to the same violation found by the BFS with each
/// node's timers of one instant fired in the order they were armed (the
/// simulator's order, `Bounds::arming_order`), scripted like any other.
/// Its steps are steps of the unrestricted search, so it is a path of the
/// same code to the same violation, only possibly longer.
fn in_arming_order<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Result<String, String> {
    let strict = h.in_arming_order();
    let out = search(&strict);
    let what = "with each node's timers of one instant in arming order";
    let (d, text) = script_other(&strict, &out, c, accept, what)?;
    Ok(format!(
        "# The search's shortest path ({} steps) has no schedule (the search fires one node's timers of one\n# instant in any order, the simulator in the order they were armed). Scripted instead: the shortest\n# path that fires them in that order ({} steps; a BFS of {} states).\n{text}",
        c.steps.len(),
        d.steps.len(),
        out.unique_states
    ))
}

/// The path an emitter's fallback search (`alt`, which found `out`)
/// gives for `c`'s violation, scripted; `what` names how that search
/// differs, for the reasons when it gives none.
fn script_other<N: Node + Clone + Hash + Eq>(
    alt: &Harness<N>,
    out: &super::search::Outcome,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
    what: &str,
) -> Result<(Counterexample, String), String> {
    let Some(d) = out.counterexample.clone() else {
        return Err(format!(
            "{what} the search finds no violation ({} states{})",
            out.unique_states,
            if out.hits.max_states {
                ", its state bound hit"
            } else {
                ""
            }
        ));
    };
    if d.finding.kind != c.finding.kind {
        return Err(format!(
            "{what} the shortest violation is {}, not {}",
            d.finding.kind, c.finding.kind
        ));
    }
    let text = to_scenario(alt, &d, accept)
        .map_err(|e| format!("the {}-step shortest path {what}: {e}", d.steps.len()))?;
    Ok((d, text))
}

/// The fallback when a path delivers to a paused worker and moving those
/// deliveries past the pause gives no path: a shortest path to the same
/// violation found by the BFS whose pauses are the simulator's
/// (`Bounds::pause_holds`: the worker holds what reaches it and runs it
/// at the pause's end), scripted like any other. Those are the pauses the
/// script has, so such a path needs no moving.
fn with_holding_pauses<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Result<String, String> {
    let holding = h.with_pause_holds();
    // The proof's DFS, then its shortest path (by bisection where the
    // BFS's levels outgrow their bound), as `check --code --pause-holds`.
    let out = super::search::check(&holding);
    let what = "with the simulator's pause (--pause-holds)";
    let (d, text) = script_other(&holding, &out, c, accept, what)?;
    Ok(format!(
        "# The search's shortest path ({} steps) delivers to a paused worker, which the simulator's pause\n# holds. Scripted instead: the shortest path whose pauses hold what reaches the worker and run it at\n# the pause's end, as the simulator's do (--pause-holds; {} steps{}; a search of {} states).\n{text}",
        c.steps.len(),
        d.steps.len(),
        if d.shortest { ", shortest" } else { "" },
        out.unique_states
    ))
}

/// The path with each delivery to a paused worker moved to just after the
/// pause's end, its first timer firing after the pause (where the emitter
/// ends the pause; a pause that outlasts the path holds the message past
/// the violation, so it is left undelivered): alone first, then with the
/// steps before that end which depend on it (a message a moved step sent,
/// a later step of a node a moved step acted at). Each variant is replayed
/// through the harness and must end in the same violation. None when no
/// message reaches a paused worker; else the first scripted variant, its
/// header saying what was moved, or why none is.
fn past_pauses<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Option<Result<String, String>> {
    paused_delivery(&c.steps)?;
    let mut why = Vec::new();
    let mut tried: Vec<Steps> = Vec::new();
    for cone in [false, true] {
        let (steps, notes) = match moved_past_pauses(h, c, cone) {
            Ok(moved) => moved,
            Err(e) => {
                why.push(e);
                continue;
            }
        };
        if tried.contains(&steps) {
            continue;
        }
        tried.push(steps.clone());
        let alt = Counterexample { steps, ..c.clone() };
        let note = notes.join("; ");
        match schedule(h, &alt, accept) {
            Ok(text) => {
                return Some(Ok(format!(
                    "# The search's shortest path delivers to a paused worker (its pause only delays the worker's\n# timers; the simulator holds a paused node's messages until the pause ends). Scripted with the\n# delivery moved past the pause (the same violation, replayed through the harness): {note}.\n{text}"
                )))
            }
            Err(Refusal::NoSchedule(e) | Refusal::Unscriptable(e)) => {
                why.push(format!("with {note}, in the moved path {e}"))
            }
        }
    }
    Some(Err(format!(
        "no path with it moved past the pause has a script: {}",
        why.join("; ")
    )))
}

/// A path's steps, as [`Counterexample::steps`].
type Steps = Vec<(Action, u64)>;

/// The first step of `steps` (0-based) that delivers to a worker paused
/// before it and not resumed since (no timer of it fired, not crashed), and
/// the worker.
fn paused_delivery(steps: &[(Action, u64)]) -> Option<(usize, NodeId)> {
    let mut paused: Vec<NodeId> = Vec::new();
    for (i, &(a, _)) in steps.iter().enumerate() {
        match a {
            Action::Pause(w) => paused.push(w),
            Action::Fire { node, .. } | Action::Crash(node) => paused.retain(|&w| w != node),
            Action::Deliver(p) if paused.contains(&p.to) => return Some((i, p.to)),
            _ => {}
        }
    }
    None
}

/// `c`'s steps with every delivery to a paused worker moved past its pause
/// (see [`past_pauses`]), and one note per pause; `cone`: with the steps
/// that depend on it.
fn moved_past_pauses<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    cone: bool,
) -> Result<(Steps, Vec<String>), String> {
    // Each step with its number in the search's path, for the notes.
    let mut steps: Vec<(usize, (Action, u64))> = c
        .steps
        .iter()
        .enumerate()
        .map(|(i, &s)| (i + 1, s))
        .collect();
    let mut notes = Vec::new();
    let describe = |n: usize| format!("step {n} ({})", h.describe(&c.steps[n - 1].0));
    // Each round moves one delivery or more past its pause's end (or out).
    for _ in 0..c.steps.len() {
        let Some((d, w)) = paused_delivery(&steps.iter().map(|&(_, s)| s).collect::<Vec<_>>())
        else {
            break;
        };
        let end = steps[d + 1..]
            .iter()
            .position(|&(_, (a, _))| {
                matches!(a, Action::Fire { node, .. } | Action::Crash(node) if node == w)
            })
            .map(|k| d + 1 + k);
        if let Some(e) = end.filter(|&e| matches!(steps[e].1 .0, Action::Crash(_))) {
            return Err(format!(
                "{}: the pause ends in a crash ({})",
                describe(steps[d].0),
                describe(steps[e].0)
            ));
        }
        let upto = end.unwrap_or(steps.len());
        let causes = if cone {
            causes(h, &steps.iter().map(|&(_, s)| s).collect::<Vec<_>>())?
        } else {
            Vec::new()
        };
        let mut moved = vec![d];
        let mut nodes: Vec<NodeId> = vec![w];
        for j in d + 1..upto {
            let a = steps[j].1 .0;
            let to_w = matches!(a, Action::Deliver(p) if p.to == w);
            let depends = cone
                && (causes[j].is_some_and(|s| moved.contains(&s))
                    || actors(a).iter().any(|n| nodes.contains(n)));
            if to_w || depends {
                moved.push(j);
                nodes.extend(actors(a));
            }
        }
        if let Some(e) = end.filter(|&e| cone && causes[e].is_some_and(|s| moved.contains(&s))) {
            return Err(format!(
                "the pause's end, {}, fires a timer that {} armed during the pause",
                describe(steps[e].0),
                describe(steps[causes[e].unwrap_or(e)].0)
            ));
        }
        if end.is_none() && moved.contains(&(steps.len() - 1)) {
            return Err(format!(
                "{}: the pause outlasts the path and the violation depends on it",
                describe(steps[d].0)
            ));
        }
        let names: Vec<String> = moved.iter().map(|&j| describe(steps[j].0)).collect();
        notes.push(match end {
            Some(e) => format!(
                "{} after {}, the end of the pause",
                names.join(", "),
                describe(steps[e].0)
            ),
            None => format!(
                "{} left undelivered (the pause outlasts the path)",
                names.join(", ")
            ),
        });
        let taken: Vec<(usize, (Action, u64))> = moved.iter().map(|&j| steps[j]).collect();
        let mut next: Vec<(usize, (Action, u64))> = Vec::new();
        for (j, &s) in steps.iter().enumerate() {
            if !moved.contains(&j) {
                next.push(s);
            }
            if Some(j) == end {
                next.extend(taken.iter().copied());
            }
        }
        steps = next;
    }
    Ok((steps.into_iter().map(|(_, s)| s).collect(), notes))
}

/// The nodes a step acts at (a lost or duplicated message: none).
fn actors(a: Action) -> Vec<NodeId> {
    match a {
        Action::Deliver(p) => vec![p.to],
        Action::Fire { node, .. }
        | Action::Pause(node)
        | Action::Crash(node)
        | Action::Rejoin(node)
        | Action::Resume(node)
        | Action::Drift { node, .. }
        | Action::Jump { node, .. } => vec![node],
        Action::Failover { from, to } => vec![from, to],
        Action::Lose(_) | Action::Duplicate(_) => Vec::new(),
    }
}

/// Per step of `steps` (0-based), the step that sent the message it
/// delivers, loses or duplicates (the earliest copy in flight, taken as
/// [`Walk::take`] does), or armed the timer it fires; None: the boot.
fn causes<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    steps: &[(Action, u64)],
) -> Result<Vec<Option<usize>>, String> {
    let mut log = Vec::new();
    let mut s = h.initial_logged(Some(&mut log));
    let mut flights: Vec<(Packet, Option<usize>)> = sent(&log, None);
    let mut armed: BTreeMap<(NodeId, TimerId), usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, &(a, _)) in steps.iter().enumerate() {
        let at = |p: &Packet, flights: &[(Packet, Option<usize>)]| {
            flights.iter().position(|(f, _)| f == p)
        };
        out.push(match a {
            Action::Deliver(p) | Action::Lose(p) => {
                at(&p, &flights).and_then(|k| flights.remove(k).1)
            }
            Action::Duplicate(p) => at(&p, &flights).and_then(|k| {
                flights.push(flights[k]);
                flights[k].1
            }),
            Action::Fire { node, timer } => armed.get(&(node, timer)).copied(),
            _ => None,
        });
        log.clear();
        match h.next_logged(&s, a, Some(&mut log)) {
            Next::State(next, _) => s = next,
            Next::Violation(..) if i + 1 == steps.len() => {}
            _ => return Err(format!("step {}: the path does not go on here", i + 1)),
        }
        flights.extend(sent(&log, Some(i)));
        for d in &log {
            if let Did::SetTimer { node, timer, .. } = *d {
                armed.insert((node, timer), i);
            }
        }
    }
    Ok(out)
}

/// The messages a step's log sent, with the step.
fn sent(log: &[Did], step: Option<usize>) -> Vec<(Packet, Option<usize>)> {
    log.iter()
        .filter_map(|d| match *d {
            Did::Sent { packet, .. } => Some((packet, step)),
            _ => None,
        })
        .collect()
}

/// [`to_scenario`] for the path as it is.
fn schedule<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    accept: &mut dyn FnMut(&str) -> bool,
) -> Result<String, Refusal> {
    let mut tried = 0;
    let mut ties = 0;
    for hold in [false, true] {
        let walk = walk(h, c, hold).map_err(Refusal::Unscriptable)?;
        ties = walk.ties;
        if let Some(text) = schedule_walk(h, c, &walk, accept, &mut tried) {
            return Ok(text);
        }
    }
    Err(Refusal::NoSchedule(format!(
        "none of the {tried} schedules found (of {ties} ties between a timer and a step at its deadline) replays to {} in the simulator",
        c.finding.kind
    )))
}

/// The first schedule of `walk` that `accept` takes, ties' sides with the
/// fewest timers fired first; `tried` counts the schedules rendered.
fn schedule_walk<N>(
    h: &Harness<N>,
    c: &Counterexample,
    walk: &Walk,
    accept: &mut dyn FnMut(&str) -> bool,
    tried: &mut usize,
) -> Option<String> {
    let mut choices: Vec<u64> = if walk.ties <= TIES_MAX {
        (0..1u64 << walk.ties).collect()
    } else {
        vec![0, u64::MAX]
    };
    choices.sort_by_key(|f| f.count_ones());
    for fired in choices {
        let Some((k, times)) = SCALES
            .iter()
            .find_map(|&k| walk.solve(k * walk.unit, fired).map(|t| (k * walk.unit, t)))
        else {
            continue;
        };
        *tried += 1;
        let text = render(h, c, walk, &times, k);
        if accept(&text) {
            return Some(text);
        }
    }
    None
}

fn render<N>(h: &Harness<N>, c: &Counterexample, walk: &Walk, times: &[i64], k: i64) -> String {
    let mut out = String::new();
    write_header(&mut out, h, c, walk, times, k);
    write_workers(&mut out, h, walk, times);
    write_clocks(&mut out, h, walk, times, k);
    write_faults(&mut out, h, walk, times);
    let kind = c.finding.kind;
    let _ = writeln!(
        out,
        "\n[expect]\nmust_find = [{{ kind = {}, min_failing_seeds = {EMITTED_SEEDS} }}]",
        quote(&kind.to_string())
    );
    // Messages the path never delivers are dropped, so some workers never
    // finish (liveness); lost updates are not what the code judge judges.
    let _ = writeln!(out, "allow = [\"lost_update\", \"liveness\"]");
    out
}

/// Replays the path with its effects logged, into constraints.
/// With `hold`, a timer armed before a pause that ended at its node's last
/// step and never fired in the path is held to the pause's end (see
/// [`Walk::finish`]).
fn walk<N: Node + Clone + Hash + Eq>(
    h: &Harness<N>,
    c: &Counterexample,
    hold: bool,
) -> Result<Walk, String> {
    let p = &h.topology.protocol;
    let (drifts, unit) = drifts(h, c)?;
    let mut w = Walk {
        workers: h.topology.workers,
        hold,
        redlock_ttl_ns: (p.kind == ProtocolKind::Redlock).then_some(p.lease_ttl_ns),
        pause_holds_ms: h.bounds.pause_holds.then_some(h.bounds.pause_ms as i64),
        unit,
        drifts,
        jump_ms: h.bounds.jump_ms,
        ..Walk::default()
    };
    let mut log = Vec::new();
    let mut s = h.initial_logged(Some(&mut log));
    w.instants_ms.push(0);
    w.instants_ns.push(0);
    w.apply_log(0, &log)?;
    for (i, &(action, _)) in c.steps.iter().enumerate() {
        let i = i + 1;
        if !h.actions(&s, &mut None).contains(&action) {
            return Err(format!("step {i}: {} is not enabled", h.describe(&action)));
        }
        log.clear();
        let next = h.next_logged(&s, action, Some(&mut log));
        let now_ns = match next {
            Next::State(next, _) if i < c.steps.len() => {
                let now = next.now_ns;
                s = next;
                now
            }
            Next::Violation(f, _, end) if i == c.steps.len() && f.kind == c.finding.kind => {
                end.now_ns
            }
            _ => {
                return Err(format!(
                    "step {i}: the path does not end in its violation here"
                ))
            }
        };
        w.instants_ms.push((now_ns / MS) as i64);
        w.instants_ns.push(now_ns);
        w.step(action, i)?;
        w.apply_log(i, &log)?;
    }
    // The verdict at the last step rests on what the path did before it,
    // not only on the steps messages link to it (a superseded effect's on
    // a newer grant another worker received): every other node's step
    // stays before it (its own node's are, in its order).
    let last = c.steps.len();
    let judged = c.steps.last().map_or(Vec::new(), |&(a, _)| actors(a));
    for (i, &(a, _)) in c.steps.iter().enumerate().take(last.saturating_sub(1)) {
        if !actors(a).iter().any(|n| judged.contains(n)) {
            w.edge(i + 1, last, 1, 0);
        }
    }
    w.finish();
    Ok(w)
}

/// Each drifting node of the path and its rate error in ppm, signed: the
/// simulator's `[clock."<node>"] drift_ppm`, from time zero as the
/// search's (whose drift is a step at time zero); and the smallest K at
/// which their whole-ms timers take whole ms of true time
/// (`K·ms·10^6 / (10^6 + ppm)` for every `ms`): the least common multiple
/// over the drifting nodes of `(10^6 + ppm) / gcd(10^6, 10^6 + ppm)` — 11
/// for the default 10% fast, 9 for 10% slow, 99 for both. Refused over
/// [`UNIT_MAX`] (the scripted durations would be that many times the
/// search's), or beyond the slowest drift a scenario takes.
fn drifts<N>(h: &Harness<N>, c: &Counterexample) -> Result<(BTreeMap<NodeId, i64>, i64), String> {
    let ppm = i64::from(h.bounds.drift_ppm.min(999_999));
    let mut out = BTreeMap::new();
    let mut unit = 1i64;
    for (i, &(a, _)) in c.steps.iter().enumerate() {
        let Action::Drift { node, fast } = a else {
            continue;
        };
        let ppm = if fast { ppm } else { -ppm };
        let clock = format!(
            "step {}: {}'s clock {} ppm {}",
            i + 1,
            node_name(h, node),
            ppm.abs(),
            if fast { "fast" } else { "slow" }
        );
        if ppm < DRIFT_PPM_MIN {
            return Err(format!(
                "{clock}, beyond the simulator's {DRIFT_PPM_MIN} ppm"
            ));
        }
        let q = drift_unit(ppm);
        unit = unit / gcd(unit, q) * q;
        if unit > UNIT_MAX {
            return Err(format!(
                "{clock}: its whole-ms timers take whole ms of true time (the simulator's steps and faults are whole ms) only at a timing scaled by a multiple of {q} = (10^6 + ppm) / gcd(10^6, 10^6 + ppm), beyond the {UNIT_MAX} the emitter tries"
            ));
        }
        out.insert(node, ppm);
    }
    Ok((out, unit))
}

/// The smallest K at which a clock drifting by `ppm` takes whole ms of
/// true time for every K·ms of its own: `(10^6 + ppm) / gcd(10^6, 10^6 + ppm)`.
fn drift_unit(ppm: i64) -> i64 {
    let rate = PPM as i64 + ppm;
    rate / gcd(PPM as i64, rate)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The largest factor a drift may put on the scale (see [`drifts`]).
const UNIT_MAX: i64 = 1_000;

fn node_name<N>(h: &Harness<N>, node: NodeId) -> String {
    if (node.0 as usize) < h.topology.workers {
        format!("worker/{}", worker_name(node.0 as usize))
    } else {
        h.node_name(node)
    }
}

fn worker_name(i: usize) -> String {
    char::from(b'A' + i as u8).to_string()
}

/// The scenario's settings: the harness's topology and timing, scaled by `k`.
fn write_header<N>(
    out: &mut String,
    h: &Harness<N>,
    c: &Counterexample,
    walk: &Walk,
    times: &[i64],
    k: i64,
) {
    let p = &h.topology.protocol;
    let t = h.bounds.timing;
    let k = k as u64;
    let kind = c.finding.kind;
    let end = *times.last().unwrap_or(&0) as u64;
    let _ = writeln!(
        out,
        "# Scripted by `fencesim check --code {} --emit-scenario` from the {}-step {kind} counterexample",
        p.kind.id(),
        c.steps.len()
    );
    let _ = writeln!(
        out,
        "# of the code-level search. Timing × {k}; step i at τ ms (solved in src/codecheck/to_scenario.rs):"
    );
    for (i, (a, _)) in c.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "#   {:>6} ms  {:>2}. (search {} ms) {}",
            times[i + 1],
            i + 1,
            walk.instants_ms[i + 1],
            h.describe(a)
        );
    }
    write_notes(out, walk);
    let _ = writeln!(out, "schema_version = 1");
    let _ = writeln!(
        out,
        "name = {}",
        quote(&format!("code-{}-{kind}", p.kind.id()))
    );
    let _ = writeln!(
        out,
        "description = {}",
        quote(&format!(
            "Code-level counterexample of {} ({kind}), replayed by the simulator: every delivery, timer, pause, crash{} scripted.",
            p.kind.id(),
            if walk.drifts.is_empty() && walk.jumps.is_empty() {
                " and failover"
            } else {
                ", failover and clock fault"
            }
        ))
    );
    let _ = writeln!(out, "seeds = {EMITTED_SEEDS}");
    let _ = writeln!(
        out,
        "max_time_ms = {}",
        end + k * (h.bounds.horizon_ms + h.bounds.pause_ms)
    );
    let _ = writeln!(out, "\n[protocol]\nkind = {}", quote(p.kind.id()));
    if p.kind.def().accepts("masters") {
        // Always: the scenario's default is the catalogue's five.
        let _ = writeln!(out, "masters = {}", h.topology.replicas);
        if p.fsync_always {
            let _ = writeln!(out, "fsync = \"always\"");
        }
        if p.restart_delay_ns > 0 {
            // A duration the master compares clock readings against: scaled.
            let _ = writeln!(out, "restart_delay_ms = {}", k * p.restart_delay_ns / MS);
        }
    } else if h.topology.replicas > 1 && !is_lock_server(p.kind) {
        let _ = writeln!(
            out,
            "replicas = {}\nreplication_lag_ms = {}",
            h.topology.replicas,
            k * t.replication_lag_ms
        );
    }
    if p.fence != p.kind.def().fence_default {
        let _ = writeln!(out, "fence = {}", p.fence);
    }
    if p.kind == ProtocolKind::FencedCheckThenWrite {
        let _ = writeln!(out, "check_to_write_ms = {}", k * p.check_to_write_ns / MS);
    }
    let _ = writeln!(out, "\n[lease]\nttl_ms = {}", k * t.lease_ttl_ms);
    let _ = writeln!(
        out,
        "\n[workload]\nwork_ms = {}\nthink_ms = {}\nretry_ms = {}\nrequest_timeout_ms = {}\nmax_retries = {}",
        k * t.work_ms,
        k * t.think_ms,
        k * t.retry_ms,
        k * t.request_timeout_ms,
        t.max_retries
    );
    let _ = writeln!(out, "\n[network]\nlatency_min_ms = 1\nlatency_max_ms = 1");
}

/// The header's notes on what the steps above do not say: clock faults,
/// timers held by a pause.
fn write_notes(out: &mut String, walk: &Walk) {
    if !walk.drifts.is_empty() {
        let _ = writeln!(
            out,
            "# A drift is the node's clock's from time zero (`[clock]` below): its timers run on it, and K is a\n# multiple of {} so that they take whole ms of true time.",
            walk.unit
        );
    }
    if !walk.jumps.is_empty() {
        let _ = writeln!(
            out,
            "# A jump steps the node's wall clock by K × {} ms at its step's instant (`[clock]` below).",
            walk.jump_ms
        );
    }
    if walk.held > 0 {
        let _ = writeln!(
            out,
            "# {} timer(s) armed before the pause run at its end in the simulator, after the path's last step of\n# that worker (the search delays them past the path's end).",
            walk.held
        );
    }
}

/// One `[[worker]]` each, starting when its first step fires in the path.
fn write_workers<N>(out: &mut String, h: &Harness<N>, w: &Walk, times: &[i64]) {
    for i in 0..h.topology.workers {
        let node = NodeId(i as u16);
        // On the worker's clock: the reading at that instant (a drifting
        // one's is whole ms there, see `Walk::solve`), or the first one
        // past it.
        let reading = |t: i64| {
            let mono = i128::from(t) * (PPM + i128::from(w.drift_ppm(node)));
            ((mono + PPM - 1) / PPM) as i64
        };
        let start_ms = match w.starts.get(&node) {
            Some(Start::At(step)) => reading(times[*step]),
            Some(Start::After(step)) => reading(times[*step] + 1),
            None => 0,
        };
        let _ = writeln!(
            out,
            "\n[[worker]]\nname = {}\nstart_ms = {start_ms}\nops = 1",
            quote(&worker_name(i))
        );
    }
}

/// One `[clock."<node>"]` per node whose clock the path drifts (from time
/// zero) or jumps (its wall clock, by K × the search's jump, at its step's
/// instant: a `[clock]` jump at τ applies to every reading at τ and later,
/// whatever the order of the events at τ).
fn write_clocks<N>(out: &mut String, h: &Harness<N>, w: &Walk, times: &[i64], k: i64) {
    let mut nodes: Vec<NodeId> = w.drifts.keys().copied().collect();
    nodes.extend(w.jumps.iter().map(|j| j.0));
    nodes.sort();
    nodes.dedup();
    for node in nodes {
        let _ = writeln!(out, "\n[clock.{}]", quote(&node_name(h, node)));
        if let Some(ppm) = w.drifts.get(&node) {
            let _ = writeln!(out, "drift_ppm = {ppm}");
        }
        let jumps: Vec<String> = w
            .jumps
            .iter()
            .filter(|j| j.0 == node)
            .map(|&(_, at, by_ms)| format!("{{ at_ms = {}, by_ms = {} }}", times[at], k * by_ms))
            .collect();
        if !jumps.is_empty() {
            let _ = writeln!(out, "jumps = [{}]", jumps.join(", "));
        }
    }
}

/// One `[[fault]]` per scripted fault and pause, at the solved times.
fn write_faults<N>(out: &mut String, h: &Harness<N>, w: &Walk, times: &[i64]) {
    let link = |p: &Packet, nth: u32| {
        format!(
            "from = {}\nto = {}\nnth = {nth}",
            quote(&node_name(h, p.from)),
            quote(&node_name(h, p.to))
        )
    };
    let end = *times.last().unwrap_or(&0);
    for f in &w.faults {
        let text = match *f {
            Scripted::Delay { p, nth, sent, at } => {
                let delay = times[at] - times[sent] - 1;
                if delay == 0 {
                    continue;
                }
                format!("kind = \"delay\"\n{}\ndelay_ms = {delay}", link(&p, nth))
            }
            Scripted::Drop { p, nth } => format!("kind = \"drop\"\n{}", link(&p, nth)),
            Scripted::Duplicate {
                p,
                nth,
                first,
                second,
            } => format!(
                "kind = \"duplicate\"\n{}\ndelay_ms = {}",
                link(&p, nth),
                times[second] - times[first]
            ),
            Scripted::Crash { node, at } => format!(
                "kind = \"crash\"\nnode = {}\nat_ms = {}\nrestart_after_ms = 0",
                quote(&node_name(h, node)),
                times[at]
            ),
            Scripted::Failover { at, rejoin } => {
                let restart = rejoin.map_or(String::new(), |r| {
                    format!("\nrestart_after_ms = {}", times[r] - times[at])
                });
                format!("kind = \"failover\"\nat_ms = {}{restart}", times[at])
            }
        };
        let _ = writeln!(out, "\n[[fault]]\n{text}");
    }
    for p in &w.pauses {
        // A pause its node's crash ends outlasts the crash.
        let until = p
            .resume
            .map_or(end + 1, |r| times[r] + i64::from(p.crashed));
        let _ = writeln!(
            out,
            "\n[[fault]]\nkind = \"pause\"\nnode = {}\nat_ms = {}\nduration_ms = {}",
            quote(&node_name(h, p.node)),
            times[p.at],
            (until - times[p.at]).max(1)
        );
    }
}

/// Whether the simulator reproduces an emitted scenario: it parses and
/// every seed meets its `[expect]` (the violation on all of them).
pub fn replays(text: &str, threads: usize) -> bool {
    match crate::scenario::parse(text, "emitted") {
        Ok(s) => crate::suite::run_scenario(&s, s.seeds.clone(), threads).met(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drifting_clocks_timers_are_whole_ms_at_multiples_of_its_unit_only() {
        assert_eq!(drift_unit(100_000), 11);
        assert_eq!(drift_unit(-100_000), 9);
        assert_eq!(drift_unit(250_000), 5);
        assert_eq!(drift_unit(-800_000), 1);
        assert_eq!(drift_unit(99_999), 1_099_999);
        // A 3 ms timer: 30 ms of true time at K = 11 fast, 30 at K = 9 slow.
        let fast = Span::Drifted {
            ms: 3,
            ppm: 100_000,
        };
        let slow = Span::Drifted {
            ms: 3,
            ppm: -100_000,
        };
        assert_eq!(fast.ms_at(11), Some(30));
        assert_eq!(slow.ms_at(9), Some(30));
        assert_eq!(fast.ms_at(10), None);
        assert_eq!(slow.ms_at(10), None);
        // Negated exactly: a timer still pending is due after a step.
        assert_eq!(slow.negated().1.ms_at(18), Some(-60));
    }
}
