//! The timeline of one run as drawable facts, before any geometry: lanes
//! (one per node), lease bars, pause/crash/partition shades, message
//! arrows, record marks, and the checker's violations.
//!
//! Everything comes from what the harness recorded — the history (what the
//! checker reads) and the trace (every send, delivery and drop) — never from
//! the protocol's own view. Lease bars follow the checker's definition of
//! belief ([`crate::check::overlap`]): a worker holds from `grant_received`
//! until it sends the release, gives the op up, or crashes; the part after
//! the coordinator dropped the lease (`lease_expired`, or a release that
//! removed it on someone else's behalf) is marked `expired` — the window in
//! which only a fence can stop the worker. Marks carry their record's `seq`;
//! those the checker cited as evidence are flagged, so what is highlighted
//! is exactly what the checker proved.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::check::Report;
use crate::history::{Event, History, Kind, Outcome};
use crate::protocol::Msg;
use crate::sim::trace::{fmt_msg, DropReason, TraceEvent, What};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Worker,
    Coordinator,
    Resource,
}

#[derive(Clone, Debug)]
pub struct Lane {
    pub node: u16,
    pub label: String,
    pub role: Role,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BarKind {
    /// A worker holds a lease the coordinator still has.
    Held,
    /// A worker still acts on a lease the coordinator already dropped.
    Expired,
    /// The coordinator's own lease record.
    Lease,
}

#[derive(Clone, Debug)]
pub struct Bar {
    pub lane: usize,
    pub from_ns: u64,
    pub to_ns: u64,
    pub kind: BarKind,
    pub label: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ShadeKind {
    Paused,
    Down,
    Partition,
}

#[derive(Clone, Debug)]
pub struct Shade {
    /// None: the whole picture (partitions cut links, not one node).
    pub lane: Option<usize>,
    pub from_ns: u64,
    pub to_ns: u64,
    pub kind: ShadeKind,
    pub label: String,
}

/// Message families, coloured alike: the protocol's own drawing classes
/// (every message declares its class, `protocol::msg`).
pub use crate::protocol::msg::Draw as MsgClass;

impl MsgClass {
    pub fn of(msg: &Msg) -> MsgClass {
        msg.draw()
    }

    pub fn name(self) -> &'static str {
        match self {
            MsgClass::Acquire => "acquire",
            MsgClass::Grant => "grant",
            MsgClass::Release => "release",
            MsgClass::Read => "read",
            MsgClass::Write => "write",
            MsgClass::Rejected => "rejected",
            MsgClass::Replica => "replica",
        }
    }

    pub const ALL: [MsgClass; 7] = [
        MsgClass::Acquire,
        MsgClass::Grant,
        MsgClass::Release,
        MsgClass::Read,
        MsgClass::Write,
        MsgClass::Rejected,
        MsgClass::Replica,
    ];
}

#[derive(Clone, Debug)]
pub struct Arrow {
    pub from_lane: usize,
    pub to_lane: usize,
    pub sent_ns: u64,
    /// Delivery (handled), drop, or end of run if still in flight.
    pub end_ns: u64,
    pub class: MsgClass,
    pub dropped: Option<DropReason>,
    pub in_flight: bool,
    pub title: String,
}

/// How a record is drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MarkKind {
    /// A small dot with a tooltip.
    Minor,
    /// A dot with a label.
    Labelled,
    Accepted,
    Rejected,
}

#[derive(Clone, Debug)]
pub struct Mark {
    pub lane: usize,
    pub t_ns: u64,
    pub seq: u64,
    pub kind: MarkKind,
    pub label: String,
    /// The full record, for the tooltip.
    pub title: String,
    /// 1-based numbers of the violations citing this record.
    pub cited_by: Vec<usize>,
}

#[derive(Clone, Debug)]
pub struct Citation {
    pub number: usize,
    pub kind: String,
    pub explanation: String,
    pub evidence: Vec<u64>,
}

#[derive(Clone, Debug)]
pub struct Scene {
    pub lanes: Vec<Lane>,
    pub bars: Vec<Bar>,
    pub shades: Vec<Shade>,
    pub arrows: Vec<Arrow>,
    pub marks: Vec<Mark>,
    pub citations: Vec<Citation>,
    pub end_ns: u64,
}

impl Scene {
    /// Every evidence seq of every violation, for checks and tests.
    pub fn evidence(&self) -> BTreeSet<u64> {
        self.citations
            .iter()
            .flat_map(|c| c.evidence.iter().copied())
            .collect()
    }
}

/// The lane order of the article: workers, then the lease (coordinators),
/// then the resource.
fn lanes(h: &History) -> Vec<Lane> {
    let role = |name: &str| {
        if name.starts_with("coord") {
            Role::Coordinator
        } else if name.starts_with("resource") {
            Role::Resource
        } else {
            Role::Worker
        }
    };
    let mut lanes: Vec<Lane> = h
        .nodes
        .iter()
        .enumerate()
        .map(|(i, name)| Lane {
            node: i as u16,
            label: name.clone(),
            role: role(name),
        })
        .collect();
    lanes.sort_by_key(|l| (l.role as u8, l.node));
    lanes
}

/// Builds the scene of one run. `trace` may be empty (a history from
/// elsewhere): then there are no arrows.
pub fn build(h: &History, trace: &[TraceEvent], report: &Report, end_ns: u64) -> Scene {
    let lanes = lanes(h);
    let lane_of: BTreeMap<u16, usize> =
        lanes.iter().enumerate().map(|(i, l)| (l.node, i)).collect();
    let citations: Vec<Citation> = report
        .violations
        .iter()
        .enumerate()
        .map(|(i, v)| Citation {
            number: i + 1,
            kind: v.kind.name().to_string(),
            explanation: v.explanation.clone(),
            evidence: v.evidence.clone(),
        })
        .collect();
    let mut scene = Scene {
        lanes,
        bars: Vec::new(),
        shades: Vec::new(),
        arrows: arrows(trace, &lane_of, h, end_ns),
        marks: Vec::new(),
        citations,
        end_ns,
    };
    Leases::default().build(h, &lane_of, end_ns, &mut scene.bars);
    shades(h, &lane_of, end_ns, &mut scene.shades);
    for e in &h.events {
        let Some(&lane) = lane_of.get(&e.node) else {
            continue;
        };
        let cited_by: Vec<usize> = scene
            .citations
            .iter()
            .filter(|c| c.evidence.contains(&e.seq))
            .map(|c| c.number)
            .collect();
        let Some((kind, label)) = mark(e).or_else(|| {
            // Evidence is always drawn, whatever its kind.
            (!cited_by.is_empty()).then(|| (MarkKind::Labelled, e.kind.name().to_string()))
        }) else {
            continue;
        };
        scene.marks.push(Mark {
            lane,
            t_ns: e.t_true_ns,
            seq: e.seq,
            kind,
            label,
            title: h.describe(e).trim().to_string(),
            cited_by,
        });
    }
    debug_assert!(
        scene
            .evidence()
            .iter()
            .all(|s| h.by_seq(*s).is_none() || scene.marks.iter().any(|m| m.seq == *s)),
        "every evidence record that exists must be drawn"
    );
    scene
}

/// How a record is marked, or None when bars, shades and arrows already
/// say it.
fn mark(e: &Event) -> Option<(MarkKind, String)> {
    let g = |id: Option<u64>| id.map_or("g?".to_string(), |g| format!("g{g}"));
    let tok = |t: Option<u64>| t.map_or(String::new(), |t| format!(" #{t}"));
    let op = e.op_id.unwrap_or(0);
    let labelled = |s: String| Some((MarkKind::Labelled, s));
    match e.kind {
        Kind::GrantIssued => labelled(format!("grant {}{}", g(e.grant_id), tok(e.token))),
        Kind::LeaseExpired => labelled(format!("{} expires", g(e.grant_id))),
        Kind::ReadOk => labelled(format!("read → {}", e.value.unwrap_or(0))),
        Kind::ReadRejected => Some((MarkKind::Rejected, "read fenced".to_string())),
        Kind::WriteSent => labelled(format!("write {op}{}", tok(e.token))),
        Kind::WriteAccepted => Some((
            MarkKind::Accepted,
            format!("✓ op {op}{} stored", tok(e.token)),
        )),
        Kind::WriteRejected => Some((
            MarkKind::Rejected,
            format!(
                "✗ op {op}{} rejected (fence {})",
                tok(e.token),
                e.value.unwrap_or(0)
            ),
        )),
        Kind::WriteAcked if e.outcome == Some(Outcome::Rejected) => {
            Some((MarkKind::Rejected, format!("op {op} refused")))
        }
        Kind::ReleaseApplied => match e.removed_grant_id {
            Some(r) if Some(r) != e.grant_id => {
                labelled(format!("DEL {} (for {})", g(Some(r)), g(e.grant_id)))
            }
            Some(r) => labelled(format!("release {}", g(Some(r)))),
            None => labelled(format!("release {}: none", g(e.grant_id))),
        },
        Kind::OpAbandoned => labelled(format!("gives up {op}")),
        Kind::RenewFailed => Some((
            MarkKind::Rejected,
            format!("renew {} refused", g(e.grant_id)),
        )),
        Kind::LeaseLost => labelled(format!("lost lease {}", g(e.grant_id))),
        Kind::Failover => labelled("promoted (failover)".to_string()),
        Kind::AcquireSent | Kind::RenewOk | Kind::WatchNotified => None,
        Kind::Unfinished => labelled("unfinished".to_string()),
        Kind::EffectSent => labelled(format!("effect {op}")),
        Kind::EffectPerformed => Some((MarkKind::Accepted, format!("✉ effect {op} performed"))),
        Kind::EffectDeduplicated => labelled(format!("effect {op} deduplicated")),
        Kind::WriteDeduplicated => labelled(format!("op {op} duplicate, not applied")),
        Kind::BecameActive => labelled(format!("active {}{}", g(e.grant_id), tok(e.token))),
        Kind::SteppedDown => labelled(format!(
            "steps down ({})",
            e.detail.as_deref().unwrap_or("?")
        )),
        Kind::GrantReceived
        | Kind::ReadSent
        | Kind::ReadServed
        | Kind::WriteAcked
        | Kind::ReleaseSent
        | Kind::WorkloadDone
        | Kind::Crash
        | Kind::Restart => Some((MarkKind::Minor, e.kind.name().to_string())),
        Kind::Pause | Kind::Resume | Kind::Partition | Kind::Heal => None,
    }
}

/// Open lease intervals while walking the history.
#[derive(Default)]
struct Leases {
    /// (worker node, grant) -> (held since, coordinator dropped it at)
    held: BTreeMap<(u16, u64), (u64, Option<u64>)>,
    /// grant -> (coordinator lane, issued at): leases the coordinator has
    lease: BTreeMap<u64, (usize, u64)>,
    /// grant -> when the coordinator dropped it
    dropped: BTreeMap<u64, u64>,
    /// grant -> token, for labels
    tokens: BTreeMap<u64, Option<u64>>,
}

impl Leases {
    fn label(&self, g: u64) -> String {
        match self.tokens.get(&g).copied().flatten() {
            Some(t) => format!("g{g} · token {t}"),
            None => format!("g{g}"),
        }
    }

    fn build(
        mut self,
        h: &History,
        lane_of: &BTreeMap<u16, usize>,
        end_ns: u64,
        out: &mut Vec<Bar>,
    ) {
        for e in &h.events {
            let t = e.t_true_ns;
            let Some(&lane) = lane_of.get(&e.node) else {
                continue;
            };
            match (e.kind, e.grant_id) {
                (Kind::GrantIssued, Some(g)) => {
                    self.tokens.entry(g).or_insert(e.token);
                    self.lease.entry(g).or_insert((lane, t));
                }
                // A pair node's promotion: held from here until it steps down.
                (Kind::BecameActive, Some(g)) => {
                    self.tokens.entry(g).or_insert(e.token);
                    self.held.entry((e.node, g)).or_insert((t, None));
                }
                (Kind::SteppedDown, _) => self.end_held(|n, _| n == e.node, t, lane_of, out),
                (Kind::GrantReceived, Some(g)) => {
                    let dropped = self.dropped.get(&g).copied();
                    self.held.entry((e.node, g)).or_insert((t, dropped));
                }
                (Kind::LeaseExpired, Some(g)) => self.drop_lease(g, t, out),
                (Kind::ReleaseApplied, _) => {
                    if let Some(r) = e.removed_grant_id {
                        self.drop_lease(r, t, out);
                    }
                }
                (Kind::ReleaseSent, Some(g)) => {
                    self.end_held(|n, gg| n == e.node && gg == g, t, lane_of, out)
                }
                (Kind::OpAbandoned | Kind::Crash, _) => {
                    self.end_held(|n, _| n == e.node, t, lane_of, out)
                }
                _ => {}
            }
        }
        let open: Vec<u64> = self.lease.keys().copied().collect();
        for g in open {
            self.drop_lease(g, end_ns, out);
        }
        self.end_held(|_, _| true, end_ns, lane_of, out);
    }

    fn drop_lease(&mut self, g: u64, t: u64, out: &mut Vec<Bar>) {
        let Some((lane, since)) = self.lease.remove(&g) else {
            return;
        };
        self.dropped.insert(g, t);
        out.push(Bar {
            lane,
            from_ns: since,
            to_ns: t,
            kind: BarKind::Lease,
            label: self.label(g),
        });
        for ((_, gg), (_, expired)) in self.held.iter_mut() {
            if *gg == g && expired.is_none() {
                *expired = Some(t);
            }
        }
    }

    fn end_held(
        &mut self,
        matches: impl Fn(u16, u64) -> bool,
        t: u64,
        lane_of: &BTreeMap<u16, usize>,
        out: &mut Vec<Bar>,
    ) {
        let ended: Vec<(u16, u64)> = self
            .held
            .keys()
            .copied()
            .filter(|&(n, g)| matches(n, g))
            .collect();
        for (node, g) in ended {
            let (since, expired) = self.held.remove(&(node, g)).expect("key listed above");
            let Some(&lane) = lane_of.get(&node) else {
                continue;
            };
            let valid_until = expired.map_or(t, |x| x.clamp(since, t));
            out.push(Bar {
                lane,
                from_ns: since,
                to_ns: valid_until,
                kind: BarKind::Held,
                label: self.label(g),
            });
            if valid_until < t {
                out.push(Bar {
                    lane,
                    from_ns: valid_until,
                    to_ns: t,
                    kind: BarKind::Expired,
                    label: format!("g{g} expired — worker still believes it holds it"),
                });
            }
        }
    }
}

/// Pauses and crashes shade their node's lane; partitions shade everything.
fn shades(h: &History, lane_of: &BTreeMap<u16, usize>, end_ns: u64, out: &mut Vec<Shade>) {
    // node -> (kind, since, label) of the open shade
    let mut open: BTreeMap<u16, (ShadeKind, u64, String)> = BTreeMap::new();
    let mut partitions: VecDeque<(u64, String)> = VecDeque::new();
    let mut close = |open: &mut BTreeMap<u16, (ShadeKind, u64, String)>, node: u16, t: u64| {
        if let (Some((kind, since, label)), Some(&lane)) = (open.remove(&node), lane_of.get(&node))
        {
            out.push(Shade {
                lane: Some(lane),
                from_ns: since,
                to_ns: t,
                kind,
                label,
            });
        }
    };
    let mut whole = Vec::new();
    for e in &h.events {
        let t = e.t_true_ns;
        match e.kind {
            Kind::Pause => {
                let d = e.detail.as_deref().unwrap_or("").trim_start_matches("for ");
                open.insert(e.node, (ShadeKind::Paused, t, format!("paused {d}")));
            }
            Kind::Crash => {
                close(&mut open, e.node, t);
                open.insert(e.node, (ShadeKind::Down, t, "crashed".to_string()));
            }
            Kind::Resume | Kind::Restart => close(&mut open, e.node, t),
            Kind::Partition => {
                partitions.push_back((t, e.detail.clone().unwrap_or_default()));
            }
            Kind::Heal => {
                if let Some((since, label)) = partitions.pop_front() {
                    whole.push((since, t, label));
                }
            }
            _ => {}
        }
    }
    let nodes: Vec<u16> = open.keys().copied().collect();
    for node in nodes {
        close(&mut open, node, end_ns);
    }
    whole.extend(partitions.into_iter().map(|(s, l)| (s, end_ns, l)));
    out.extend(whole.into_iter().map(|(from_ns, to_ns, label)| Shade {
        lane: None,
        from_ns,
        to_ns,
        kind: ShadeKind::Partition,
        label,
    }));
}

/// Pairs every send with its delivery or drop, first in first out per
/// (link, identical message) — retransmissions of one message are
/// indistinguishable, and FIFO pairing keeps each arrow forward in time.
fn arrows(
    trace: &[TraceEvent],
    lane_of: &BTreeMap<u16, usize>,
    h: &History,
    end_ns: u64,
) -> Vec<Arrow> {
    type LinkMsg = (u16, u16, u8, [u64; 5]);
    let key = |from: u16, to: u16, m: &Msg| -> LinkMsg { (from, to, m.tag(), m.words()) };
    let mut pending: BTreeMap<LinkMsg, VecDeque<usize>> = BTreeMap::new();
    let mut out: Vec<Arrow> = Vec::new();
    for ev in trace {
        match ev.what {
            What::Send { to, msg, .. } => {
                let (Some(&a), Some(&b)) = (lane_of.get(&ev.node.0), lane_of.get(&to.0)) else {
                    continue;
                };
                pending
                    .entry(key(ev.node.0, to.0, &msg))
                    .or_default()
                    .push_back(out.len());
                out.push(Arrow {
                    from_lane: a,
                    to_lane: b,
                    sent_ns: ev.t_ns,
                    end_ns,
                    class: MsgClass::of(&msg),
                    dropped: None,
                    in_flight: true,
                    title: format!(
                        "{} → {}: {}",
                        h.node_name(ev.node.0),
                        h.node_name(to.0),
                        fmt_msg(&msg)
                    ),
                });
            }
            What::Recv { from, msg } => {
                if let Some(i) = pending
                    .get_mut(&key(from.0, ev.node.0, &msg))
                    .and_then(VecDeque::pop_front)
                {
                    out[i].end_ns = ev.t_ns;
                    out[i].in_flight = false;
                }
            }
            What::Drop {
                from,
                to,
                msg,
                reason,
            } => {
                if let Some(i) = pending
                    .get_mut(&key(from.0, to.0, &msg))
                    .and_then(VecDeque::pop_front)
                {
                    out[i].end_ns = ev.t_ns;
                    out[i].in_flight = false;
                    out[i].dropped = Some(reason);
                    out[i]
                        .title
                        .push_str(&format!(" — dropped ({})", reason.name()));
                }
            }
            _ => {}
        }
    }
    for a in &mut out {
        if a.in_flight {
            a.title.push_str(" — still in flight when the run ended");
        }
        debug_assert!(a.end_ns >= a.sent_ns, "an arrow must point forward in time");
    }
    out
}
