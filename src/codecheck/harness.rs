//! The harness around the real nodes: what the simulator's event loop does,
//! as a nondeterministic transition relation. From a state, every enabled
//! [`Action`] — deliver any message in flight, lose one, duplicate one, fire
//! the earliest timer (time advances to its deadline; ties in any order,
//! or with `Bounds::arming_order` one node's in the order they were armed),
//! pause a worker, crash and restart a node — yields one successor, computed
//! by handing the input to the node's own `handle` and applying its effects
//! as the simulator does (sends to the group address go to the coordinator
//! primary, a synced record survives a crash, a buffered one never is
//! recovered). A replicated coordinator may also fail over, as the
//! simulator's `failover` fault does it: the primary crashes (and stays
//! down, or rejoins later as a replica from its synced record: the fault's
//! `restart_after_ms`), the next live replica (in `coord/<i>` order) is
//! told `Promote`;
//! whatever the replicas do then (replication timers, quorum rounds) is
//! their own code's. A node's clock may drift (`Bounds::drifts`: from time
//! zero, as the simulator's, its monotonic and wall clocks run `drift_ppm`
//! fast or slow; its timers armed at boot keep their readings and so move
//! on the true-time line) and its wall clock may jump forward or back at
//! any step (`Bounds::jumps`), see [`super::clock`].
//! Lock servers (ZooKeeper, etcd, DynamoDB's table, PostgreSQL, Redlock's
//! masters) are nodes like the others; the
//! orchestrator's `Promote` goes to a lease coordinator only, and a
//! worker's `Observation::Acquired` (its lock client decided it holds the
//! lock) is handed to the judge as the grant.
//! Messages take no time and may wait in flight arbitrarily long, so every
//! delay and reordering is covered; time moves only to the next deadline
//! a node's timer names, on the true-time line (a drifting node's timers
//! are placed there from its own clock's readings).

use std::hash::Hash;

use super::bounds::Bounds;
use super::judge::{Finding, Judge, Notes};
use super::state::{Budget, Held, Packet, State};
use super::topology::Topology;
use crate::protocol::{
    Durability, Effect, Input, Msg, Node, NodeId, NodeLayout, Observation, Role, TimerId,
};

/// One step of a path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    Deliver(Packet),
    Lose(Packet),
    Duplicate(Packet),
    Fire {
        node: NodeId,
        timer: TimerId,
    },
    Pause(NodeId),
    /// A holding pause (`Bounds::pause_holds`) ends: the worker runs what
    /// it held ([`super::hold`]).
    Resume(NodeId),
    Crash(NodeId),
    /// The coordinator primary `from` crashes and `to` (the next live
    /// replica) is promoted.
    Failover {
        from: NodeId,
        to: NodeId,
    },
    /// A failed-over primary restarts as a replica from its synced record.
    Rejoin(NodeId),
    /// `node`'s clock runs `drift_ppm` fast (or slow), from time zero.
    Drift {
        node: NodeId,
        fast: bool,
    },
    /// `node`'s wall clock steps `jump_ms` forward (or back).
    Jump {
        node: NodeId,
        forward: bool,
    },
}

/// What a node's effects did to the state, in order: logged only when a
/// caller asks (`next_logged`), for rebuilding a path elsewhere — the
/// scenario emitter needs which step armed each timer and sent each
/// message, which the states alone do not tell (a timer re-armed to the
/// same deadline looks unchanged).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Did {
    /// `group`: sent to the coordinator group's address, routed to the
    /// primary of that moment (a failover changes where such a send goes).
    Sent {
        packet: Packet,
        group: bool,
    },
    SetTimer {
        node: NodeId,
        timer: TimerId,
        after_ns: u64,
    },
    CancelTimer {
        node: NodeId,
        timer: TimerId,
    },
}

/// Why a successor was cut (not explored).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cut {
    Horizon,
    InFlight,
    Grants,
}

/// A successor: the next state, or the violation reached. Moved once per
/// transition and taken apart at once, so the size difference between the
/// variants costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Next<N> {
    State(State<N>, Notes),
    /// The violation, what the step noted, and the state it left (a
    /// terminal state: the search goes no further; its `now_ns` is the
    /// instant the violation happened at).
    Violation(Finding, Notes, State<N>),
    Cut(Cut),
}

/// The nodes' roles and factory, and the bounds.
pub struct Harness<N> {
    pub topology: Topology,
    pub factory: fn(&Role) -> N,
    pub bounds: Bounds,
}

impl<N: Node + Clone + Hash + Eq> Harness<N> {
    /// The same nodes and bounds with each node's timers of one instant
    /// fired only in the order they were armed ([`Bounds::arming_order`]).
    pub fn in_arming_order(&self) -> Harness<N> {
        Harness {
            topology: self.topology.clone(),
            factory: self.factory,
            bounds: Bounds {
                arming_order: true,
                ..self.bounds
            },
        }
    }

    /// The same nodes and bounds with the simulator's pause: a paused
    /// worker holds what reaches it ([`Bounds::pause_holds`]).
    pub fn with_pause_holds(&self) -> Harness<N> {
        Harness {
            topology: self.topology.clone(),
            factory: self.factory,
            bounds: Bounds {
                pause_holds: true,
                ..self.bounds
            },
        }
    }

    /// Every node booted at time 0, the coordinator promoted.
    pub fn initial(&self) -> State<N> {
        self.initial_logged(None)
    }

    /// [`Harness::initial`], logging what the boot did into `log`.
    pub fn initial_logged(&self, mut log: Option<&mut Vec<Did>>) -> State<N> {
        let b = &self.bounds;
        let n = self.topology.roles.len();
        let mut s = State {
            nodes: self.topology.roles.iter().map(self.factory).collect(),
            synced: vec![None; n],
            timers: Vec::new(),
            in_flight: Vec::new(),
            now_ns: 0,
            budget: Budget {
                losses: b.losses,
                duplicates: b.duplicates,
                crashes: b.crashes,
                pauses: b.pauses,
                failovers: b.failovers,
                rejoins: b.rejoins,
                drifts: b.drifts,
                jumps: b.jumps,
            },
            primary: self.topology.coord,
            down: 0,
            clocks: Vec::new(),
            held: Vec::new(),
            judge: Judge::new(
                self.topology.workers,
                b.write_history,
                self.topology.protocol.worker_writes_if_match(),
                self.topology.protocol.kind.has_effect_sink(),
                self.topology.protocol.kind.def().layout == NodeLayout::Pair,
            ),
        };
        let mut notes = Notes::default();
        for i in 0..n {
            let start = Input::Start { recovered: None };
            let log = log.as_deref_mut();
            self.handle(&mut s, NodeId(i as u16), start, &mut notes, log);
        }
        self.promote(&mut s, &mut notes, log);
        s
    }

    /// The orchestrator's `Promote` to the primary, if it is a lease
    /// coordinator (as the simulator's: a lock server is not promoted).
    fn promote(
        &self,
        s: &mut State<N>,
        notes: &mut Notes,
        log: Option<&mut Vec<Did>>,
    ) -> Option<Finding> {
        let primary = s.primary;
        if !matches!(
            self.topology.roles[primary.0 as usize],
            Role::Coordinator(_)
        ) {
            return None;
        }
        let promote = Input::Message {
            from: primary,
            msg: Msg::Promote,
        };
        self.handle(s, primary, promote, notes, log)
    }

    /// Hands `input` to `node` at the current instant and applies its effects.
    pub(super) fn handle(
        &self,
        s: &mut State<N>,
        node: NodeId,
        input: Input<'_>,
        notes: &mut Notes,
        mut log: Option<&mut Vec<Did>>,
    ) -> Option<Finding> {
        let now = s.now_ns;
        let clock = s.clock(node);
        let clocks = clock.read(now);
        let mut fx = Vec::new();
        s.nodes[node.0 as usize].handle(clocks, input, &mut fx);
        let received = match input {
            Input::Message { msg, .. } => Some(msg),
            _ => None,
        };
        let mut finding = None;
        let primary = s.primary;
        for effect in fx {
            if let Some(log) = log.as_deref_mut() {
                log.extend(did(node, &effect, primary));
            }
            match effect {
                Effect::Send { to, msg } => {
                    let to = route(to, primary);
                    let found = s.judge.on_send(node, received.as_ref(), &msg, notes);
                    finding = finding.or(found);
                    if s.is_gone(to) {
                        // Dropped on arrival by the simulator; it can do
                        // nothing else, so it is dropped at once here.
                        continue;
                    }
                    s.send(Packet {
                        from: node,
                        to,
                        msg,
                    });
                }
                // Armed on the node's monotonic clock.
                Effect::SetTimer { timer, after_ns } => {
                    s.forget_held_timer(node, timer);
                    s.set_timer(
                        node,
                        timer,
                        clock.true_at_mono(clocks.mono_ns.saturating_add(after_ns)),
                        self.bounds.arming_order,
                    )
                }
                Effect::CancelTimer { timer } => {
                    s.forget_held_timer(node, timer);
                    s.cancel_timer(node, timer)
                }
                Effect::Persist {
                    durability: Durability::Synced,
                    record,
                } => s.synced[node.0 as usize] = Some(record),
                // Lost with any crash, and a restart reads only the synced record.
                Effect::Persist {
                    durability: Durability::Buffered,
                    ..
                } => {}
                // A lock client's decision that it holds the lock: the
                // grant, as the simulator's recorder takes it.
                Effect::Observe(Observation::Acquired { owner, token, .. }) => {
                    let found = s.judge.on_decided(node, owner, token, notes);
                    finding = finding.or(found);
                }
                Effect::Observe(Observation::ReplyUsed { reply }) => s.judge.on_reply_used(&reply),
                Effect::Observe(Observation::BecameActive { epoch, .. }) => {
                    s.judge.on_became_active(node, epoch, notes)
                }
                Effect::Observe(Observation::SteppedDown { .. }) => s.judge.on_stepped_down(node),
                Effect::Observe(_) => {}
            }
        }
        finding
    }

    /// The enabled actions, in a fixed order; `cuts` learns of the horizon.
    pub fn actions(&self, s: &State<N>, cut: &mut Option<Cut>) -> Vec<Action> {
        let mut out = Vec::new();
        let mut previous: Option<&Packet> = None;
        for p in &s.in_flight {
            if previous == Some(p) {
                continue; // copies of one message: one choice
            }
            previous = Some(p);
            out.push(Action::Deliver(*p));
            if s.budget.losses > 0 {
                out.push(Action::Lose(*p));
            }
            if s.budget.duplicates > 0 {
                out.push(Action::Duplicate(*p));
            }
        }
        self.time_actions(s, cut, &mut out);
        if s.budget.pauses > 0 {
            for w in 0..self.topology.workers {
                let w = NodeId(w as u16);
                // A delaying pause does nothing to a worker without timers;
                // a holding one holds its messages too.
                let matters = if self.bounds.pause_holds {
                    s.hold(w).is_none()
                } else {
                    s.timers.iter().any(|t| t.node == w)
                };
                if matters {
                    out.push(Action::Pause(w));
                }
            }
        }
        if s.budget.crashes > 0 {
            for i in 0..s.nodes.len() {
                let node = NodeId(i as u16);
                if !s.is_down(node) {
                    out.push(Action::Crash(node));
                }
            }
        }
        if s.budget.failovers > 0 {
            if let Some(to) = self.next_replica(s) {
                out.push(Action::Failover {
                    from: s.primary,
                    to,
                });
            }
        }
        if s.budget.rejoins > 0 {
            for i in 0..s.nodes.len() {
                let node = NodeId(i as u16);
                if s.is_down(node) {
                    out.push(Action::Rejoin(node));
                }
            }
        }
        self.clock_faults(s, &mut out);
        out
    }

    /// Time's next instant: the earliest timers (ties in any order, or one
    /// node's in arming order) and the earliest holding pauses' ends.
    fn time_actions(&self, s: &State<N>, cut: &mut Option<Cut>, out: &mut Vec<Action>) {
        let timer_ns = s.timers.first().map(|t| t.deadline_ns);
        let resume_ns = s.next_resume_ns();
        let Some(next_ns) = timer_ns.into_iter().chain(resume_ns).min() else {
            return;
        };
        if next_ns > self.bounds.horizon_ms * super::topology::MS {
            *cut = Some(Cut::Horizon);
            return;
        }
        let mut node = None;
        for t in s.timers.iter().take_while(|t| t.deadline_ns == next_ns) {
            if self.bounds.arming_order && node.replace(t.node) == Some(t.node) {
                continue; // armed after this node's first one due now
            }
            out.push(Action::Fire {
                node: t.node,
                timer: t.timer,
            });
        }
        for h in s.held.iter().filter(|h| h.until_ns == next_ns) {
            out.push(Action::Resume(h.node));
        }
    }

    /// A drift of each live node whose clock keeps pace (one drift a
    /// clock, at time zero), a jump of each live node's wall clock (at any
    /// step), while the budget lasts.
    fn clock_faults(&self, s: &State<N>, out: &mut Vec<Action>) {
        for i in 0..s.nodes.len() {
            let node = NodeId(i as u16);
            if s.is_down(node) {
                continue;
            }
            // From time zero, as the simulator's clocks drift: a rate
            // error is the clock's for the whole run (a drift starting
            // at every later step multiplied the space beyond 20 M states
            // for fenced-cas, for no behaviour a from-zero one lacks
            // within a horizon of a few leases).
            if s.budget.drifts > 0 && s.now_ns == 0 && s.clock(node).drift_ppm == 0 {
                for fast in [true, false] {
                    out.push(Action::Drift { node, fast });
                }
            }
            if s.budget.jumps > 0 {
                for forward in [true, false] {
                    out.push(Action::Jump { node, forward });
                }
            }
        }
    }

    /// The replica a failover promotes: the next live one after the
    /// primary in `coord/<i>` order, as the simulator picks it.
    fn next_replica(&self, s: &State<N>) -> Option<NodeId> {
        let t = &self.topology;
        let first = t.coord.0 as usize;
        let at = s.primary.0 as usize - first;
        (1..t.replicas)
            .map(|k| NodeId((first + (at + k) % t.replicas) as u16))
            .find(|&r| !s.is_down(r))
    }

    /// The successor of `s` by `action`.
    pub fn next(&self, s: &State<N>, action: Action) -> Next<N> {
        self.next_logged(s, action, None)
    }

    /// [`Harness::next`], logging what the step did into `log`.
    pub fn next_logged(
        &self,
        s: &State<N>,
        action: Action,
        mut log: Option<&mut Vec<Did>>,
    ) -> Next<N> {
        let mut s = s.clone();
        let mut notes = Notes::default();
        let finding = match action {
            Action::Deliver(p) if s.is_down(p.to) => {
                s.take(&p); // arrives while its node is down: dropped
                None
            }
            Action::Deliver(p) if s.hold_input(p.to, Held::Message(p)) => {
                s.take(&p); // reaches a paused worker: held
                None
            }
            Action::Deliver(p) => {
                s.take(&p);
                s.judge.on_deliver(p.to, &p.msg, &mut notes);
                let input = Input::Message {
                    from: p.from,
                    msg: p.msg,
                };
                self.handle(&mut s, p.to, input, &mut notes, log.as_deref_mut())
            }
            Action::Lose(p) => {
                s.take(&p);
                s.budget.losses -= 1;
                None
            }
            Action::Duplicate(p) => {
                s.send(p);
                s.budget.duplicates -= 1;
                None
            }
            Action::Fire { node, timer } => {
                let deadline = s.timers.iter().find(|t| t.node == node && t.timer == timer);
                s.now_ns = deadline.map_or(s.now_ns, |t| t.deadline_ns);
                s.cancel_timer(node, timer);
                if s.hold_input(node, Held::Timer(timer)) {
                    None // falls due while its worker is paused: held
                } else {
                    let input = Input::Timer { timer };
                    self.handle(&mut s, node, input, &mut notes, log.as_deref_mut())
                }
            }
            Action::Pause(node) => {
                s.budget.pauses -= 1;
                let by_ns = self.bounds.pause_ms * super::topology::MS;
                if self.bounds.pause_holds {
                    s.start_hold(node, by_ns);
                } else {
                    s.delay_timers(node, by_ns, self.bounds.arming_order);
                }
                None
            }
            Action::Resume(node) => self.resume(&mut s, node, &mut notes, log),
            Action::Crash(node) => self.crash(&mut s, node, &mut notes, log),
            Action::Failover { from, to } => self.failover(&mut s, from, to, &mut notes, log),
            // A down node restarts from its synced record as a replica (the
            // primary is another node now: it is not promoted).
            Action::Rejoin(node) => {
                s.budget.rejoins -= 1;
                s.down &= !(1 << node.0);
                self.boot(&mut s, node, &mut notes, log)
            }
            Action::Drift { node, fast } => {
                s.budget.drifts -= 1;
                self.drift(&mut s, node, fast);
                None
            }
            Action::Jump { node, forward } => {
                s.budget.jumps -= 1;
                let by_ns = (self.bounds.jump_ms * super::topology::MS) as i64;
                let clock = clock_of(&mut s, node);
                clock.wall_step_ns += if forward { by_ns } else { -by_ns };
                None
            }
        };
        if s.in_flight.len() > self.bounds.in_flight_max {
            return Next::Cut(Cut::InFlight);
        }
        if s.judge.grants() > self.bounds.grants {
            return Next::Cut(Cut::Grants);
        }
        match finding {
            Some(f) => Next::Violation(f, notes, s),
            None => Next::State(s, notes),
        }
    }

    /// `node`'s clock runs `drift_ppm` fast or slow from time zero (the
    /// only instant a drift happens, as in the simulator); its pending
    /// timers keep the readings they are due at, so they move on the
    /// true-time line (sooner on a fast clock).
    fn drift(&self, s: &mut State<N>, node: NodeId, fast: bool) {
        assert_eq!(s.now_ns, 0, "a clock drifts from time zero");
        let ppm = self.bounds.drift_ppm.min(999_999) as i32;
        let clock = clock_of(s, node);
        debug_assert_eq!(clock.drift_ppm, 0, "a clock drifts once");
        clock.drift_ppm = if fast { ppm } else { -ppm };
        let new = *clock;
        // Until now the clock read true time: a deadline is its reading.
        let moved: Vec<_> = s
            .timers
            .iter()
            .filter(|t| t.node == node)
            .map(|t| (t.timer, new.true_at_mono(t.deadline_ns)))
            .collect();
        for (timer, deadline_ns) in moved {
            s.set_timer(node, timer, deadline_ns, self.bounds.arming_order);
        }
    }

    /// Crash and immediate restart: a fresh node from its role, booted
    /// from its synced record; its timers die with it; messages in flight
    /// to it reach the new incarnation.
    fn crash(
        &self,
        s: &mut State<N>,
        node: NodeId,
        notes: &mut Notes,
        mut log: Option<&mut Vec<Did>>,
    ) -> Option<Finding> {
        s.budget.crashes -= 1;
        s.timers.retain(|t| t.node != node);
        s.drop_hold(node);
        // A crashed pair node no longer believes it is active (as the
        // history checker reads a `crash` record).
        s.judge.on_stepped_down(node);
        let found = self.boot(s, node, notes, log.as_deref_mut());
        if node == s.primary {
            return found.or(self.promote(s, notes, log));
        }
        found
    }

    /// The primary `from` crashes; `to` is promoted. A down node's struct
    /// is never read again (a rejoin builds a fresh one), so it is reset to
    /// one canonical value; its timers die. With no rejoin left it is down
    /// for good: its record is reset too and messages to it are dropped
    /// (states that differ only there are one).
    fn failover(
        &self,
        s: &mut State<N>,
        from: NodeId,
        to: NodeId,
        notes: &mut Notes,
        log: Option<&mut Vec<Did>>,
    ) -> Option<Finding> {
        s.budget.failovers -= 1;
        let i = from.0 as usize;
        s.down |= 1 << from.0;
        s.nodes[i] = (self.factory)(&self.topology.roles[i]);
        s.timers.retain(|t| t.node != from);
        if s.is_gone(from) {
            s.synced[i] = None;
            s.in_flight.retain(|p| p.to != from);
        }
        s.primary = to;
        self.promote(s, notes, log)
    }

    /// A fresh node from `node`'s role, booted from its synced record.
    fn boot(
        &self,
        s: &mut State<N>,
        node: NodeId,
        notes: &mut Notes,
        log: Option<&mut Vec<Did>>,
    ) -> Option<Finding> {
        let i = node.0 as usize;
        s.nodes[i] = (self.factory)(&self.topology.roles[i]);
        let record = s.synced[i].clone();
        let start = Input::Start {
            recovered: record.as_deref(),
        };
        self.handle(s, node, start, notes, log)
    }
}

/// `node`'s clock, to change: the clocks are kept once a clock fault
/// happened (every node's, from true time).
fn clock_of<N>(s: &mut State<N>, node: NodeId) -> &mut super::clock::NodeClock {
    if s.clocks.is_empty() {
        s.clocks = vec![Default::default(); s.nodes.len()];
    }
    &mut s.clocks[node.0 as usize]
}

/// Sends to the group address go to the coordinator primary.
fn route(to: NodeId, primary: NodeId) -> NodeId {
    if to == NodeId::COORD_GROUP {
        primary
    } else {
        to
    }
}

/// What `effect` of `node` does to the state, if anything the log keeps.
fn did(node: NodeId, effect: &Effect, primary: NodeId) -> Option<Did> {
    match *effect {
        Effect::Send { to, msg } => Some(Did::Sent {
            packet: Packet {
                from: node,
                to: route(to, primary),
                msg,
            },
            group: to == NodeId::COORD_GROUP,
        }),
        Effect::SetTimer { timer, after_ns } => Some(Did::SetTimer {
            node,
            timer,
            after_ns,
        }),
        Effect::CancelTimer { timer } => Some(Did::CancelTimer { node, timer }),
        Effect::Persist { .. } | Effect::Observe(_) => None,
    }
}

impl<N> Harness<N> {
    /// The address's name as a scenario gives it.
    pub fn node_name(&self, node: NodeId) -> String {
        let t = &self.topology;
        let replica = (node.0 as usize).wrapping_sub(t.coord.0 as usize);
        if (node.0 as usize) < t.workers {
            format!("worker/{}", node.0)
        } else if replica < t.replicas {
            format!("coord/{replica}")
        } else if node == t.resource {
            "resource/0".into()
        } else if let Some(name) = (node.0 as usize)
            .checked_sub(t.resource.0 as usize + 1)
            .and_then(|i| t.extra.get(i))
        {
            name.clone()
        } else {
            format!("node/{}", node.0)
        }
    }

    /// One step as a counterexample line.
    pub fn describe(&self, action: &Action) -> String {
        let msg = |p: &Packet| {
            let fields: Vec<String> = p
                .msg
                .shown()
                .iter()
                .filter(|f| !f.name.is_empty())
                .filter_map(|f| f.value.map(|v| format!("{}={v}", f.name)))
                .collect();
            format!(
                "{} {} -> {} ({})",
                p.msg.name(),
                self.node_name(p.from),
                self.node_name(p.to),
                fields.join(" ")
            )
        };
        match action {
            Action::Deliver(p) => format!("deliver {}", msg(p)),
            Action::Lose(p) => format!("lose {}", msg(p)),
            Action::Duplicate(p) => format!("duplicate {}", msg(p)),
            Action::Fire { node, timer } => {
                format!("timer {} fires at {}", timer.0, self.node_name(*node))
            }
            Action::Pause(node) => format!(
                "{} pauses for {} ms ({})",
                self.node_name(*node),
                self.bounds.pause_ms,
                if self.bounds.pause_holds {
                    "it holds what reaches it"
                } else {
                    "its timers fire later"
                }
            ),
            Action::Resume(node) => {
                format!("{} resumes and runs what it held", self.node_name(*node))
            }
            Action::Crash(node) => format!(
                "{} crashes and restarts from its synced record",
                self.node_name(*node)
            ),
            Action::Failover { from, to } => format!(
                "failover: {} crashes, {} is promoted",
                self.node_name(*from),
                self.node_name(*to)
            ),
            Action::Rejoin(node) => format!(
                "{} rejoins as a replica from its synced record",
                self.node_name(*node)
            ),
            Action::Drift { node, fast } => format!(
                "{}'s clock runs {} ppm {} from now on",
                self.node_name(*node),
                self.bounds.drift_ppm,
                if *fast { "fast" } else { "slow" }
            ),
            Action::Jump { node, forward } => format!(
                "{}'s wall clock jumps {} ms {}",
                self.node_name(*node),
                self.bounds.jump_ms,
                if *forward { "forward" } else { "back" }
            ),
        }
    }
}
