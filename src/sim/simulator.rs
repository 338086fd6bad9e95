//! The discrete-event loop.
//!
//! One priority queue ([`EventQueue`]) ordered by (true time, insertion
//! number), events kept in a slab beside it: ties run in
//! the order they were scheduled, so the order of simultaneous events is
//! total and reproducible. Nodes are driven through the sans-IO
//! [`Node`] trait; the loop owns everything they cannot: true time, clocks,
//! the network, durable storage, faults, and the history record.
//!
//! Fault rules:
//! - **pause**: the node handles nothing; messages and timers that come due
//!   are held and run, in order, at resume (a pause of a paused node
//!   extends it to the later end).
//! - **crash**: the node object is dropped; held inputs, pending timers and
//!   buffered writes are lost; messages to it are dropped (`down`). A
//!   restart builds a fresh node and hands it the last synced record.
//! - **partition**: messages across the cut are dropped when sent, and —
//!   if `partition_hits_in_flight` — when delivered.
//!
//! A run ends when nothing is pending — no message in flight, no timer set,
//! no pause or restart to come (every workload done, or stuck) — or at
//! `max_time_ns`; workers not done are recorded as `unfinished`. Draining
//! the queue rather than stopping at the last worker's answer matters: a
//! resource may still hold a write it has not applied. There is no wall clock, no ambient randomness and no
//! threading inside a run.

use std::collections::VecDeque;

use super::faults::resolve_random;
use super::network::{mask, Fate, Network};
use super::options::{describe_fault, Fault, Options, When};
use super::queue::EventQueue;
use super::recorder::{lifecycle, Recorder};
use super::trace::{DropReason, Trace, TraceEvent, What};
use crate::history::{Event, History, Kind};
use crate::protocol::{
    Durability, Effect, Input, Msg, Nanos, Node, NodeId, Observation, Record, Role, TimerId,
};

/// Builds the node for an id: built-in protocols, or a driver for an
/// implementation under test. Called at boot and after every crash.
pub type NodeFactory<'a> = dyn FnMut(NodeId, &Role) -> Box<dyn Node> + 'a;

#[derive(Clone, Copy, Debug)]
enum Ev {
    Start(NodeId),
    Deliver {
        from: NodeId,
        to: NodeId,
        msg: Msg,
    },
    Timer {
        node: NodeId,
        timer: TimerId,
        gen: u32,
        incarnation: u32,
    },
    Resume(NodeId),
    Fault(usize),
    Restart(NodeId),
    Heal(u32),
}

struct Slot {
    node: Option<Box<dyn Node>>,
    /// The node's `records_own_replies`, asked once when it is built
    /// rather than through the trait object on every delivery.
    reports_replies: bool,
    up: bool,
    paused_until: Option<Nanos>,
    held: VecDeque<Ev>,
    incarnation: u32,
    timer_gens: Vec<u32>,
    synced: Option<Record>,
    buffered: Option<Record>,
    done: bool,
    /// Wall-clock steps applied by `ClockJump` faults so far (the node's
    /// hardware clock: it survives a crash).
    wall_jump_ns: i64,
}

impl Slot {
    /// The slot of a node booting with `node`.
    fn new(node: Box<dyn Node>) -> Slot {
        Slot {
            reports_replies: node.records_own_replies(),
            node: Some(node),
            up: true,
            paused_until: None,
            held: VecDeque::new(),
            incarnation: 0,
            timer_gens: Vec::new(),
            synced: None,
            buffered: None,
            done: false,
            wall_jump_ns: 0,
        }
    }

    /// This slot as [`Slot::new`] makes it, keeping its buffers'
    /// allocations (emptied).
    fn reset(&mut self, node: Box<dyn Node>) {
        let mut held = std::mem::take(&mut self.held);
        let mut timer_gens = std::mem::take(&mut self.timer_gens);
        held.clear();
        timer_gens.clear();
        *self = Slot {
            held,
            timer_gens,
            ..Slot::new(node)
        };
    }
}

/// Everything a run produced.
pub struct RunOutcome {
    pub seed: u64,
    pub history: History,
    pub trace_hash: u64,
    /// Kept only when asked for (`keep_trace`).
    pub trace: Vec<TraceEvent>,
    /// Queue events processed (the benchmarks' "simulated events").
    pub events: u64,
    pub end_ns: Nanos,
    pub unfinished: Vec<NodeId>,
    /// Every fault the run actually had: scripted, random ones resolved at
    /// start, and per-message loss/delay drawn while it ran.
    pub script: Vec<Fault>,
    pub hit_max_time: bool,
    /// Cut off after [`EVENTS_MAX`] events (reported like `max_time_ms`).
    pub hit_event_budget: bool,
}

/// Queue events one run may process. The history (and the trace, when
/// kept) grows with every event, so this bounds a run's memory (a few
/// hundred MB at most) whatever `max_time_ms` and the timers ask for; the
/// bundled scenarios use well under 1% of it. Reaching it ends the run as
/// `max_time_ms` does: workers not done are recorded `unfinished`.
pub const EVENTS_MAX: u64 = 1_000_000;
/// Events pending at once (messages in flight, timers): part of the same
/// budget, since one event can schedule several.
pub const PENDING_MAX: usize = 1_000_000;

struct Trigger {
    fault: usize,
    node: NodeId,
    kind: Kind,
    nth: u32,
    seen: u32,
}

struct Sim<'o, 'f> {
    opts: &'o Options,
    factory: &'f mut NodeFactory<'f>,
    now: Nanos,
    order: u32,
    seq: u64,
    queue: EventQueue,
    /// Events by slot; `free` lists the slots to reuse.
    slab: Vec<Ev>,
    free: Vec<u32>,
    slots: Vec<Slot>,
    /// Boxed, and kept in the [`Scratch`] between runs: set up in place
    /// for each seed (its four ChaCha streams are most of its size), and
    /// moved as one pointer.
    net: Box<Network>,
    recorder: Box<Recorder>,
    history: History,
    trace: Trace,
    script: Vec<Fault>,
    triggers: Vec<Trigger>,
    fired: VecDeque<usize>,
    fx: Vec<Effect>,
    in_flight: u64,
    workers_left: usize,
    events_processed: u64,
    hit_event_budget: bool,
    /// Where `NodeId::COORD_GROUP` is routed now (changes on failover).
    primary: NodeId,
}

/// Runs one seed of `opts` with the built-in protocol nodes.
pub fn run(opts: &Options, seed: u64, keep_trace: bool) -> RunOutcome {
    let mut build = |_: NodeId, role: &Role| crate::protocol::build(role);
    run_with(opts, seed, keep_trace, &mut build)
}

/// Runs one seed with nodes from `factory`.
pub fn run_with<'f>(
    opts: &Options,
    seed: u64,
    keep_trace: bool,
    factory: &'f mut NodeFactory<'f>,
) -> RunOutcome {
    run_in(opts, seed, keep_trace, factory, &mut Scratch::default())
}

/// The buffers a run leaves behind for the next one on the same thread:
/// the event queue and slab, the node slots, the network (its per-link
/// counters and its streams, re-seeded in place: [`Network::reset`]), the
/// recorder's tables, the effect and trigger lists and (handed back with
/// [`Scratch::recycle`]) the history's event vector. Cleared, never
/// reallocated, between runs; what a run computes never depends on them (a
/// fresh `Scratch` and a used one give the same outcome and trace hash).
#[derive(Default)]
pub struct Scratch {
    queue: EventQueue,
    slab: Vec<Ev>,
    free: Vec<u32>,
    slots: Vec<Slot>,
    net: Option<Box<Network>>,
    triggers: Vec<Trigger>,
    fired: VecDeque<usize>,
    fx: Vec<Effect>,
    events: Vec<Event>,
    /// The last recycled history's node and key names: the next seed of
    /// the same scenario has the same ones and need not copy them again.
    nodes: Vec<String>,
    keys: Vec<String>,
    recorder: Option<Box<Recorder>>,
}

impl Scratch {
    /// Takes back a finished run's history for its event vector's storage
    /// and its name tables.
    pub fn recycle(&mut self, history: History) {
        if history.events.capacity() > self.events.capacity() {
            self.events = history.events;
        }
        self.nodes = history.nodes;
        self.keys = history.keys;
    }

    /// `opts`' node and key names, reusing the recycled tables when they
    /// already hold them.
    fn names(&mut self, opts: &Options) -> (Vec<String>, Vec<String>) {
        let mut nodes = std::mem::take(&mut self.nodes);
        if !nodes.iter().eq(opts.nodes.iter().map(|n| &n.name)) {
            nodes.clear();
            nodes.extend(opts.nodes.iter().map(|n| n.name.clone()));
        }
        let mut keys = std::mem::take(&mut self.keys);
        if keys != opts.keys {
            keys.clone_from(&opts.keys);
        }
        (nodes, keys)
    }
}

/// A scratch vector, emptied, its allocation kept.
fn reuse<T>(v: &mut Vec<T>) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v
}

/// [`run_with`] on `scratch`'s buffers (see [`Scratch`]).
pub fn run_in<'f>(
    opts: &Options,
    seed: u64,
    keep_trace: bool,
    factory: &'f mut NodeFactory<'f>,
    scratch: &mut Scratch,
) -> RunOutcome {
    let mut script = opts.faults.clone();
    script.extend(resolve_random(opts, seed));
    let net = match scratch.net.take() {
        Some(mut net) => {
            net.reset(&opts.network, opts.nodes.len(), &script, seed);
            net
        }
        None => Box::new(Network::new(&opts.network, opts.nodes.len(), &script, seed)),
    };
    let mut queue = std::mem::take(&mut scratch.queue);
    queue.clear();
    let mut fired = std::mem::take(&mut scratch.fired);
    fired.clear();
    let mut events = reuse(&mut scratch.events);
    events.reserve(256);
    let (nodes, keys) = scratch.names(opts);
    let mut sim = Sim {
        opts,
        factory,
        now: 0,
        order: 0,
        seq: 0,
        queue,
        slab: reuse(&mut scratch.slab),
        free: reuse(&mut scratch.free),
        slots: std::mem::take(&mut scratch.slots),
        net,
        recorder: match scratch.recorder.take() {
            Some(mut r) => {
                r.clear();
                r
            }
            None => Box::default(),
        },
        history: History {
            nodes,
            keys,
            events,
        },
        trace: Trace::new(keep_trace),
        script,
        triggers: reuse(&mut scratch.triggers),
        fired,
        fx: reuse(&mut scratch.fx),
        in_flight: 0,
        workers_left: opts.workers().count(),
        events_processed: 0,
        hit_event_budget: false,
        primary: opts.coordinator_primary,
    };
    sim.boot();
    let hit_max_time = sim.run_loop();
    sim.finish(seed, hit_max_time, scratch)
}

impl<'o, 'f> Sim<'o, 'f> {
    fn schedule(&mut self, t_ns: Nanos, ev: Ev) {
        debug_assert!(t_ns >= self.now, "scheduling into the past");
        self.order = self
            .order
            .checked_add(1)
            .expect("fewer than 2^32 events scheduled in one run");
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = ev;
                slot
            }
            None => {
                self.slab.push(ev);
                u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 pending events")
            }
        };
        self.queue.push(t_ns, self.order, slot);
    }

    fn boot(&mut self) {
        // Slots left by the previous run keep their `held` and
        // `timer_gens` allocations; everything else is set afresh.
        self.slots.truncate(self.opts.nodes.len());
        for (i, spec) in self.opts.nodes.iter().enumerate() {
            let id = NodeId(i as u16);
            let node = (self.factory)(id, &spec.role);
            match self.slots.get_mut(i) {
                Some(slot) => slot.reset(node),
                None => self.slots.push(Slot::new(node)),
            }
            self.schedule(0, Ev::Start(id));
        }
        for i in 0..self.script.len() {
            let when = match &self.script[i] {
                Fault::Pause { when, .. }
                | Fault::Crash { when, .. }
                | Fault::Partition { when, .. }
                | Fault::Failover { when, .. }
                | Fault::ClockJump { when, .. } => when.clone(),
                Fault::Delay { .. } | Fault::Drop { .. } | Fault::Duplicate { .. } => continue,
            };
            match when {
                When::At(t) => self.schedule(t, Ev::Fault(i)),
                When::After { node, kind, nth } => self.triggers.push(Trigger {
                    fault: i,
                    node,
                    kind,
                    nth,
                    seen: 0,
                }),
            }
        }
    }

    /// Returns whether the run was cut off at `max_time_ns`.
    fn run_loop(&mut self) -> bool {
        let mut processed = 0u64;
        while let Some((t_ns, slot)) = self.queue.pop() {
            if t_ns > self.opts.max_time_ns {
                self.now = self.opts.max_time_ns;
                self.events_processed = processed;
                return true;
            }
            if processed == EVENTS_MAX || self.queue.len() > PENDING_MAX {
                self.hit_event_budget = true;
                self.events_processed = processed;
                return true;
            }
            assert!(t_ns >= self.now, "time went backwards");
            self.now = t_ns;
            processed += 1;
            let ev = self.slab[slot as usize];
            self.free.push(slot);
            if let Ev::Deliver { .. } = ev {
                self.in_flight -= 1;
            }
            self.dispatch_and_apply(ev);
        }
        self.events_processed = processed;
        false
    }

    fn dispatch_and_apply(&mut self, ev: Ev) {
        self.dispatch(ev);
        while let Some(i) = self.fired.pop_front() {
            self.apply_fault(i);
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start(node) => {
                self.step(node, Input::Start { recovered: None });
                self.promote_if_primary(node);
            }
            Ev::Deliver { from, to, msg } => self.deliver(from, to, msg, ev),
            Ev::Timer {
                node,
                timer,
                gen,
                incarnation,
            } => {
                let slot = &mut self.slots[node.0 as usize];
                let current = slot.timer_gens.get(timer.0 as usize).copied();
                if !slot.up || incarnation != slot.incarnation || current != Some(gen) {
                    return;
                }
                if slot.paused_until.is_some() {
                    slot.held.push_back(ev);
                    return;
                }
                self.trace(node, What::Timer { timer }, None);
                self.step(node, Input::Timer { timer });
            }
            Ev::Resume(node) => self.resume(node),
            Ev::Fault(i) => self.apply_fault(i),
            Ev::Restart(node) => self.restart(node),
            Ev::Heal(id) => {
                self.net.heal(id);
                let node = match &self.script[id as usize] {
                    Fault::Partition { side_a, .. } => side_a.first().copied().unwrap_or(NodeId(0)),
                    _ => NodeId(0),
                };
                self.record(lifecycle(node, Kind::Heal, None));
            }
        }
    }
}

impl<'o, 'f> Sim<'o, 'f> {
    fn deliver(&mut self, from: NodeId, to: NodeId, msg: Msg, ev: Ev) {
        let slot = &mut self.slots[to.0 as usize];
        if !slot.up {
            self.trace(
                to,
                What::Drop {
                    from,
                    to,
                    msg,
                    reason: DropReason::Down,
                },
                None,
            );
            return;
        }
        if self.net.partition_hits_in_flight() && self.net.cut(from, to) {
            self.trace(
                to,
                What::Drop {
                    from,
                    to,
                    msg,
                    reason: DropReason::Partition,
                },
                None,
            );
            return;
        }
        if slot.paused_until.is_some() {
            slot.held.push_back(ev);
            return;
        }
        self.trace(to, What::Recv { from, msg }, None);
        let reports_replies = self.slots[to.0 as usize].reports_replies;
        let first = self.history.events.len();
        self.recorder
            .on_deliver(from, to, &msg, reports_replies, &mut self.history.events);
        self.stamp_from(first);
        self.step(to, Input::Message { from, msg });
    }

    /// Hands one input to a node and applies its effects, in order, now.
    fn step(&mut self, id: NodeId, input: Input<'_>) {
        let spec = &self.opts.nodes[id.0 as usize];
        let mut clocks = spec.clock.read(self.now);
        clocks.wall_ns = clocks
            .wall_ns
            .saturating_add(self.slots[id.0 as usize].wall_jump_ns);
        let mut fx = std::mem::take(&mut self.fx);
        debug_assert!(fx.is_empty());
        {
            let slot = &mut self.slots[id.0 as usize];
            assert!(
                slot.up && slot.paused_until.is_none(),
                "stepping a node that is down or paused"
            );
            let node = slot.node.as_mut().expect("an up node has a state machine");
            node.handle(clocks, input, &mut fx);
        }
        // By reference, then cleared: no per-effect move out of the buffer,
        // and a persisted record is taken, leaving an empty `Vec` to drop.
        for effect in fx.iter_mut() {
            match effect {
                &mut Effect::Send { to, msg } => self.send(id, to, msg),
                &mut Effect::SetTimer { timer, after_ns } => {
                    let slot = &mut self.slots[id.0 as usize];
                    let i = timer.0 as usize;
                    if slot.timer_gens.len() <= i {
                        slot.timer_gens.resize(i + 1, 0);
                    }
                    slot.timer_gens[i] += 1;
                    let gen = slot.timer_gens[i];
                    let incarnation = slot.incarnation;
                    let due_mono = clocks.mono_ns.saturating_add(after_ns);
                    let at = spec.clock.true_at_mono(due_mono).max(self.now);
                    self.schedule(
                        at,
                        Ev::Timer {
                            node: id,
                            timer,
                            gen,
                            incarnation,
                        },
                    );
                }
                &mut Effect::CancelTimer { timer } => {
                    if let Some(g) = self.slots[id.0 as usize]
                        .timer_gens
                        .get_mut(timer.0 as usize)
                    {
                        *g += 1;
                    }
                }
                Effect::Persist { durability, record } => {
                    let (durability, record) = (*durability, std::mem::take(record));
                    self.trace(
                        id,
                        What::Save {
                            durability,
                            bytes: record.len() as u32,
                        },
                        None,
                    );
                    let slot = &mut self.slots[id.0 as usize];
                    match durability {
                        Durability::Synced => {
                            slot.synced = Some(record);
                            slot.buffered = None;
                        }
                        Durability::Buffered => slot.buffered = Some(record),
                    }
                }
                &mut Effect::Observe(obs) => {
                    // A worker that crashes after finishing reports done again on restart.
                    let slot = &mut self.slots[id.0 as usize];
                    if obs == Observation::WorkloadDone && !slot.done {
                        slot.done = true;
                        self.workers_left -= 1;
                    }
                    let key = match spec.role {
                        Role::Worker(w) => Some(w.key.0),
                        _ => None,
                    };
                    let first = self.history.events.len();
                    self.recorder
                        .on_observe(id, &obs, key, &mut self.history.events);
                    self.stamp_from(first);
                }
            }
        }
        fx.clear();
        self.fx = fx;
    }

    fn send(&mut self, from: NodeId, to: NodeId, msg: Msg) {
        let to = if to == NodeId::COORD_GROUP {
            self.primary
        } else {
            to
        };
        assert!(
            (to.0 as usize) < self.slots.len(),
            "send to unknown node {to:?}"
        );
        let first = self.history.events.len();
        self.recorder
            .on_send(self.now, from, to, &msg, &mut self.history.events);
        self.stamp_from(first);
        match self.net.send(self.now, from, to) {
            Fate::Deliver {
                at_ns,
                nth,
                copy_at_ns,
            } => {
                self.trace(from, What::Send { to, msg, nth }, None);
                self.in_flight += 1;
                self.schedule(at_ns, Ev::Deliver { from, to, msg });
                if let Some(copy_at) = copy_at_ns {
                    self.in_flight += 1;
                    self.schedule(copy_at, Ev::Deliver { from, to, msg });
                }
            }
            Fate::Lost { reason, nth } => {
                self.trace(from, What::Send { to, msg, nth }, None);
                self.trace(
                    from,
                    What::Drop {
                        from,
                        to,
                        msg,
                        reason,
                    },
                    None,
                );
            }
        }
    }

    /// Inlined: at each call site `what` is one known variant, so the
    /// hashing is that variant's words alone, with no `What` built, passed
    /// or matched on.
    #[inline(always)]
    fn trace(&mut self, node: NodeId, what: What, record: Option<&Event>) {
        self.seq += 1;
        self.trace.push(self.seq, self.now, node, &what, record);
    }

    /// A lifecycle record (crash, pause, …): into the history, then stamped.
    fn record(&mut self, e: Event) {
        self.history.events.push(e);
        self.stamp_from(self.history.events.len() - 1);
    }

    /// Stamps the records the recorder pushed from index `first` on, in
    /// order: seq and time written into each one's slot, its trace words
    /// and its fault triggers. A record is built where it stays (the
    /// recorder pushes it), never moved here.
    #[inline]
    fn stamp_from(&mut self, first: usize) {
        for index in first..self.history.events.len() {
            self.stamp(index);
        }
    }

    fn stamp(&mut self, index: usize) {
        self.seq += 1;
        let (seq, now) = (self.seq, self.now);
        let e = &mut self.history.events[index];
        e.seq = seq;
        e.t_true_ns = now;
        self.trace
            .push(seq, now, NodeId(e.node), &What::Record(index), Some(e));
        let (node, kind) = (e.node, e.kind);
        for t in &mut self.triggers {
            if t.seen < t.nth && t.node.0 == node && t.kind == kind {
                t.seen += 1;
                if t.seen == t.nth {
                    self.fired.push_back(t.fault);
                }
            }
        }
    }

    fn apply_fault(&mut self, i: usize) {
        let fault = self.script[i].clone();
        match fault {
            Fault::Pause {
                node, duration_ns, ..
            } => {
                let now = self.now;
                let slot = &mut self.slots[node.0 as usize];
                if !slot.up {
                    return;
                }
                let until = now.saturating_add(duration_ns);
                slot.paused_until = Some(slot.paused_until.map_or(until, |u| u.max(until)));
                let detail = format!("for {}ms", duration_ns / 1_000_000);
                self.record(lifecycle(node, Kind::Pause, Some(detail)));
                self.schedule(until, Ev::Resume(node));
            }
            Fault::Crash {
                node,
                restart_after_ns,
                ..
            } => self.crash(node, restart_after_ns),
            Fault::Failover {
                restart_after_ns, ..
            } => self.failover(restart_after_ns),
            Fault::ClockJump { node, by_ns, .. } => {
                let slot = &mut self.slots[node.0 as usize];
                slot.wall_jump_ns = slot.wall_jump_ns.saturating_add(by_ns);
            }
            Fault::Partition {
                duration_ns,
                ref side_a,
                ref side_b,
                one_way,
                ..
            } => {
                self.net
                    .start_partition(i as u32, mask(side_a), mask(side_b), one_way);
                let detail = describe_fault(self.opts, &fault);
                let node = side_a.first().copied().unwrap_or(NodeId(0));
                self.record(lifecycle(node, Kind::Partition, Some(detail)));
                self.schedule(self.now.saturating_add(duration_ns), Ev::Heal(i as u32));
            }
            Fault::Delay { .. } | Fault::Drop { .. } | Fault::Duplicate { .. } => {
                unreachable!("message faults are applied by the network")
            }
        }
    }

    fn crash(&mut self, node: NodeId, restart_after_ns: Option<Nanos>) {
        let slot = &mut self.slots[node.0 as usize];
        if !slot.up {
            return;
        }
        slot.up = false;
        slot.node = None;
        slot.held.clear();
        slot.paused_until = None;
        slot.incarnation += 1;
        slot.buffered = None;
        self.record(lifecycle(node, Kind::Crash, None));
        if let Some(after) = restart_after_ns {
            self.schedule(self.now.saturating_add(after), Ev::Restart(node));
        }
    }

    /// Crash the coordinator primary and promote the next live replica.
    fn failover(&mut self, restart_after_ns: Option<Nanos>) {
        let old = self.primary;
        let replicas: Vec<NodeId> = (0..self.opts.nodes.len() as u16)
            .map(NodeId)
            .filter(|id| matches!(self.opts.nodes[id.0 as usize].role, Role::Coordinator(_)))
            .collect();
        let at = replicas.iter().position(|&r| r == old).unwrap_or(0);
        let next = (1..replicas.len())
            .map(|k| replicas[(at + k) % replicas.len()])
            .find(|r| self.slots[r.0 as usize].up);
        self.crash(old, restart_after_ns);
        let Some(next) = next else { return }; // no live replica: the group is down
        self.primary = next;
        let detail = format!(
            "{} -> {}",
            self.opts.node_name(old),
            self.opts.node_name(next)
        );
        self.record(lifecycle(next, Kind::Failover, Some(detail)));
        self.promote(next);
    }

    fn promote_if_primary(&mut self, node: NodeId) {
        if node == self.primary
            && matches!(self.opts.nodes[node.0 as usize].role, Role::Coordinator(_))
        {
            self.promote(node);
        }
    }

    /// The orchestrator's word to the new primary: a `Promote` input, held
    /// like any other if the node is paused.
    fn promote(&mut self, node: NodeId) {
        let ev = Ev::Deliver {
            from: node,
            to: node,
            msg: Msg::Promote,
        };
        let slot = &mut self.slots[node.0 as usize];
        if !slot.up {
            return;
        }
        if slot.paused_until.is_some() {
            slot.held.push_back(ev);
            return;
        }
        self.trace(
            node,
            What::Recv {
                from: node,
                msg: Msg::Promote,
            },
            None,
        );
        self.step(
            node,
            Input::Message {
                from: node,
                msg: Msg::Promote,
            },
        );
    }

    fn resume(&mut self, node: NodeId) {
        let now = self.now;
        let slot = &mut self.slots[node.0 as usize];
        match slot.paused_until {
            Some(until) if until <= now => slot.paused_until = None,
            _ => return, // extended by a later pause, or crashed meanwhile
        }
        self.record(lifecycle(node, Kind::Resume, None));
        loop {
            let slot = &mut self.slots[node.0 as usize];
            if !slot.up || slot.paused_until.is_some() {
                break;
            }
            let Some(ev) = slot.held.pop_front() else {
                break;
            };
            self.dispatch_and_apply(ev);
        }
    }

    fn restart(&mut self, node: NodeId) {
        let role = self.opts.nodes[node.0 as usize].role;
        let fresh = (self.factory)(node, &role);
        let slot = &mut self.slots[node.0 as usize];
        assert!(!slot.up, "restarting a node that is up");
        slot.reports_replies = fresh.records_own_replies();
        slot.node = Some(fresh);
        slot.up = true;
        slot.timer_gens.clear();
        let recovered = slot.synced.clone();
        self.record(lifecycle(node, Kind::Restart, None));
        self.step(
            node,
            Input::Start {
                recovered: recovered.as_deref(),
            },
        );
        self.promote_if_primary(node);
    }

    fn finish(mut self, seed: u64, hit_max_time: bool, scratch: &mut Scratch) -> RunOutcome {
        let unfinished: Vec<NodeId> = self
            .opts
            .workers()
            .map(|(id, _)| id)
            .filter(|id| !self.slots[id.0 as usize].done)
            .collect();
        for &id in &unfinished {
            self.record(lifecycle(id, Kind::Unfinished, None));
        }
        let mut script = self.script;
        script.append(&mut self.net.resolved);
        // Hand the buffers back (nodes and records dropped now, the slots'
        // other contents cleared on reuse: `Slot::reset`).
        for slot in &mut self.slots {
            slot.node = None;
            slot.synced = None;
            slot.buffered = None;
        }
        scratch.slots = self.slots;
        scratch.queue = self.queue;
        scratch.slab = self.slab;
        scratch.free = self.free;
        scratch.net = Some(self.net);
        scratch.triggers = self.triggers;
        scratch.fired = self.fired;
        scratch.fx = self.fx;
        scratch.recorder = Some(self.recorder);
        RunOutcome {
            seed,
            history: self.history,
            trace_hash: self.trace.hash(),
            trace: self.trace.events,
            events: self.events_processed,
            end_ns: self.now,
            unfinished,
            script,
            hit_max_time: hit_max_time && !self.hit_event_budget,
            hit_event_budget: self.hit_event_budget,
        }
    }
}
