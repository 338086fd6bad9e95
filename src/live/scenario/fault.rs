//! The `[[fault]]` tables of a live scenario file: what each may name (a
//! worker, a cluster member, the Redis primary), which protocol point or
//! time it follows, and which fields go with which kind — every mistake
//! located at file:line:column in the file's own words.
//!
//! Apart from the rest of the file's reading because it is most of it:
//! seven fault kinds on three kinds of target, each with its own fields.
//! What they become ([`LivePause`], [`LiveCrash`], …) is the fault
//! executor's input ([`crate::live::faults`]).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::choice::one_of;
use crate::live::cluster::MEMBERS;
use crate::live::proxy::ProxyMode;
use crate::live::LockKind;
use crate::scenario::ScenarioError;

/// A SIGSTOP of `worker` right after `after` returned, for `duration_ms`.
#[derive(Clone, Debug)]
pub struct LivePause {
    pub worker: String,
    pub after: String,
    pub duration_ms: u64,
}

/// A SIGSTOP of a user's program (`worker_cmd`) `at_ms` after the trial
/// started, for `duration_ms`: wherever it is then, not at a point.
#[derive(Clone, Debug)]
pub struct LiveTimedPause {
    pub worker: String,
    pub at_ms: u64,
    pub duration_ms: u64,
}

/// Right after `worker`'s `after` step: the Redis primary is SIGKILLed and
/// the replica, whose replication link was cut before the trial, promoted.
#[derive(Clone, Debug)]
pub struct LiveFailover {
    pub worker: String,
    pub after: String,
}

/// Which of a worker's messages a network fault acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetMessage {
    /// Its UPDATE, in the proxy between it and PostgreSQL.
    Update,
    /// The lock server's reply that carries its grant, in the proxy
    /// between it and the lock server (a user's program only: the
    /// built-in worker's lock connection has no proxy).
    LockReply,
    /// PostgreSQL's answer to its read of the document, in the proxy
    /// between it and PostgreSQL (a user's program only).
    ReadReply,
    /// PostgreSQL's answer to its UPDATE: the write is applied, the
    /// program is late to learn it or never does (a user's program only).
    UpdateReply,
}

impl NetMessage {
    /// Every message a network fault can name, in the catalogue's order.
    pub const ALL: [NetMessage; 4] = [
        NetMessage::Update,
        NetMessage::LockReply,
        NetMessage::ReadReply,
        NetMessage::UpdateReply,
    ];

    /// The message as a scenario names it.
    pub fn name(self) -> &'static str {
        match self {
            NetMessage::Update => "update",
            NetMessage::LockReply => "lock_reply",
            NetMessage::ReadReply => "read_reply",
            NetMessage::UpdateReply => "update_reply",
        }
    }

    /// The message in a report's words.
    pub fn label(self) -> &'static str {
        match self {
            NetMessage::Update => "UPDATE",
            NetMessage::LockReply => "lock reply",
            NetMessage::ReadReply => "read reply",
            NetMessage::UpdateReply => "UPDATE reply",
        }
    }

    /// The message a scenario names `name`.
    pub fn from_name(name: &str) -> Option<NetMessage> {
        NetMessage::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Does it travel from a server to the worker?
    pub fn is_reply(self) -> bool {
        self != NetMessage::Update
    }
}

/// A TCP proxy holds, drops or cuts one of `worker`'s messages. With
/// `at_ms` (a delay of a user's program only) the link stalls at a time
/// instead: every such message that reaches the proxy from `at_ms` on, for
/// the delay's `ms`, waits until that window ends — a queue that froze, not
/// one message picked out.
#[derive(Clone, Debug)]
pub struct LiveNet {
    pub worker: String,
    pub mode: ProxyMode,
    pub message: NetMessage,
    pub at_ms: Option<u64>,
}

/// Right after `worker`'s `after` step, its connections to the etcd or
/// ZooKeeper members are cut (reset) and the members it was on refuse it
/// for `refuse_ms`: the session or lease lives on the servers while its
/// client reconnects to another member.
#[derive(Clone, Debug)]
pub struct LiveLockCut {
    pub worker: String,
    pub after: String,
    pub refuse_ms: u64,
}

/// When a crash happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Right after `worker`'s protocol point returned.
    After { worker: String, point: String },
    /// This many ms after the trial started.
    AtMs(u64),
}

/// What a crash kills (SIGKILL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrashTarget {
    Worker(String),
    /// The harness's own Redis primary (no persistence: it restarts empty).
    RedisPrimary,
    /// A member of the etcd / ZooKeeper cluster (its data survives a restart).
    Member(MemberSel),
}

/// Which cluster member a fault hits: `member/N` or `member/leader`
/// (whichever leads when the fault fires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberSel {
    Index(usize),
    Leader,
}

impl std::fmt::Display for MemberSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberSel::Index(i) => write!(f, "member/{i}"),
            MemberSel::Leader => write!(f, "member/leader"),
        }
    }
}

/// Right after `worker`'s `after` step, `member` is cut off from the other
/// members (both ways; its clients stay connected) for `duration_ms`.
#[derive(Clone, Debug)]
pub struct LivePartition {
    pub member: MemberSel,
    pub worker: String,
    pub after: String,
    pub duration_ms: u64,
}

/// From `trigger` on, for `for_ms`, `member` is slowed: with `by_ms`, every
/// message between it and the other members (both ways) is held that long
/// by the links (its clients' traffic is not); with `by_ms = None` the
/// member is SIGSTOPped (a GC pause or a frozen VM of a server: peers and
/// clients hear nothing, and it wakes up believing what it believed).
#[derive(Clone, Debug)]
pub struct LiveMemberDelay {
    pub member: MemberSel,
    pub trigger: Trigger,
    pub by_ms: Option<u64>,
    pub for_ms: u64,
}

#[derive(Clone, Debug)]
pub struct LiveCrash {
    pub target: CrashTarget,
    pub trigger: Trigger,
    pub restart_after_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    kind: Spanned<String>,
    node: Spanned<String>,
    /// The protocol point the fault follows: `read_ok` (of the worker named
    /// by `node`) or `worker/A:read_ok`.
    after: Option<Spanned<String>>,
    /// crash, pause, a member's delay; a delay of a user's program's
    /// message: ms after the trial started (instead of `after`).
    at_ms: Option<u64>,
    /// crash: restart the node this long after it was killed (none: it stays down).
    restart_after_ms: Option<u64>,
    /// delay/drop/cut: which of the worker's messages the proxy acts on
    /// ("update"); cut: or its connection to the lock's cluster ("lock").
    message: Option<Spanned<String>>,
    #[serde(default)]
    duration_ms: u64,
    /// delay of a member's links: by how many ms every message is held.
    by_ms: Option<u64>,
    /// delay of a member's links: for how long (ms).
    for_ms: Option<u64>,
}

impl RawFault {
    /// Whether it strikes the lock server (`coord/…`) rather than a worker.
    pub(super) fn names_coordinator(&self) -> bool {
        self.node.get_ref().starts_with("coord/")
    }
}

#[derive(Clone, Copy, PartialEq)]
enum K {
    Pause,
    Delay,
    Drop,
    Cut,
    Failover,
    Crash,
    Partition,
}

const KINDS: [(&str, K); 7] = [
    ("pause", K::Pause),
    ("delay", K::Delay),
    ("drop", K::Drop),
    ("cut", K::Cut),
    ("failover", K::Failover),
    ("crash", K::Crash),
    ("partition", K::Partition),
];

/// What reading a fault needs from the rest of the file.
pub(super) struct Context<'a> {
    pub file: &'a str,
    pub src: &'a str,
    pub lock: LockKind,
    /// The `[[worker]]` names.
    pub workers: Vec<&'a str>,
    /// The protocol points a fault may follow (name, value).
    pub points: Vec<(&'a str, &'a str)>,
    /// A user's program runs the workers (`worker_cmd`).
    pub client: bool,
}

/// Every fault of a scenario, by what it does.
#[derive(Clone, Debug, Default)]
pub struct LiveFaults {
    pub pauses: Vec<LivePause>,
    /// Pauses at a time (a user's program only).
    pub timed_pauses: Vec<LiveTimedPause>,
    pub net: Vec<LiveNet>,
    pub failovers: Vec<LiveFailover>,
    pub crashes: Vec<LiveCrash>,
    pub partitions: Vec<LivePartition>,
    pub member_delays: Vec<LiveMemberDelay>,
    pub lock_cuts: Vec<LiveLockCut>,
    /// (worker, point, span) of every gate, to keep one point per worker.
    gates: Vec<(String, String, Range<usize>)>,
}

/// One fault table as read so far: its kind, its target and the protocol
/// point it follows.
struct Read<'f> {
    f: &'f RawFault,
    kind: K,
    target: CrashTarget,
    /// (worker, point) of `after`.
    after: Option<(String, String)>,
}

impl Context<'_> {
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.file, self.src, span, msg)
    }

    fn worker_named(&self, name: &str, span: Range<usize>) -> Result<String, ScenarioError> {
        name.strip_prefix("worker/")
            .filter(|w| self.workers.contains(w))
            .map(str::to_string)
            .ok_or_else(|| {
                self.err(
                    span,
                    format!("unknown node {name:?}; expected worker/<name> of a [[worker]]"),
                )
            })
    }

    /// The target: a worker, a cluster member (crash, partition, delay,
    /// pause), or (crash only) the Redis primary.
    fn target(&self, f: &RawFault, kind: K) -> Result<CrashTarget, ScenarioError> {
        let node = f.node.get_ref();
        if let Some(m) = node.strip_prefix("member/") {
            return self.member(f, kind, m).map(CrashTarget::Member);
        }
        if kind == K::Partition {
            return Err(self.err(
                f.node.span(),
                "a partition cuts off a cluster member: node = \"member/0\" (or member/leader)",
            ));
        }
        if kind == K::Crash && node == "coord/0" {
            if self.lock.cluster().is_some() {
                return Err(self.err(
                    f.node.span(),
                    "coord/0 is the Redis lock server; this scenario's lock runs on a cluster: crash member/N or member/leader",
                ));
            }
            if self.lock == LockKind::None {
                return Err(self.err(
                    f.node.span(),
                    "coord/0 is the Redis lock server; this scenario has none (lock = \"none\")",
                ));
            }
            return Ok(CrashTarget::RedisPrimary);
        }
        Ok(CrashTarget::Worker(self.worker_named(node, f.node.span())?))
    }

    /// `member/<m>`: which member, if this fault can act on one here.
    fn member(&self, f: &RawFault, kind: K, m: &str) -> Result<MemberSel, ScenarioError> {
        let node = f.node.get_ref();
        if !matches!(kind, K::Crash | K::Partition | K::Delay | K::Pause) {
            return Err(self.err(
                f.node.span(),
                "a cluster member can be crashed, partitioned, delayed or paused; other faults act on a worker",
            ));
        }
        if self.lock.cluster().is_none() {
            return Err(self.err(
                f.node.span(),
                format!(
                    "{node} is a member of an etcd or ZooKeeper cluster; this scenario's lock ({}) has none",
                    self.lock.name()
                ),
            ));
        }
        match m {
            "leader" => Ok(MemberSel::Leader),
            n => match n.parse::<usize>() {
                Ok(i) if i < MEMBERS => Ok(MemberSel::Index(i)),
                _ => Err(self.err(
                    f.node.span(),
                    format!(
                        "unknown member {node:?}; expected member/0..member/{} or member/leader",
                        MEMBERS - 1
                    ),
                )),
            },
        }
    }

    /// The protocol point: `read_ok` (the node's own) or `worker/A:read_ok`.
    fn after(
        &self,
        f: &RawFault,
        target: &CrashTarget,
    ) -> Result<Option<(String, String)>, ScenarioError> {
        let Some(a) = &f.after else {
            return Ok(None);
        };
        let (who, point) = match a.get_ref().split_once(':') {
            Some((who, point)) => (self.worker_named(who, a.span())?, point),
            None => match target {
                CrashTarget::Worker(w) => (w.clone(), a.get_ref().as_str()),
                CrashTarget::RedisPrimary | CrashTarget::Member(_) => {
                    return Err(self.err(
                        a.span(),
                        "name the worker whose step it follows: after = \"worker/A:read_ok\"",
                    ))
                }
            },
        };
        let point = Spanned::new(a.span(), point.to_string());
        let point = one_of(self.file, self.src, &point, "protocol point", &self.points)?;
        Ok(Some((who, point.to_string())))
    }
}

impl Read<'_> {
    fn member_pause(&self) -> bool {
        self.kind == K::Pause && matches!(self.target, CrashTarget::Member(_))
    }

    fn member_delay(&self) -> bool {
        self.kind == K::Delay && matches!(self.target, CrashTarget::Member(_))
    }

    /// The worker it acts on (empty for a server's fault).
    fn worker(&self) -> String {
        match &self.target {
            CrashTarget::Worker(w) => w.clone(),
            CrashTarget::RedisPrimary | CrashTarget::Member(_) => String::new(),
        }
    }

    fn missing(&self, cx: &Context, what: &str) -> ScenarioError {
        cx.err(self.f.kind.span(), format!("this fault needs `{what}`"))
    }

    /// Fields that belong to other kinds of fault.
    fn check_fields(&self, cx: &Context) -> Result<(), ScenarioError> {
        let (f, kind) = (self.f, self.kind);
        let worker_pause = kind == K::Pause && !self.member_pause();
        let message_delay = kind == K::Delay && !self.member_delay();
        if f.restart_after_ms.is_some() && kind != K::Crash
            || f.at_ms.is_some()
                && kind != K::Crash
                && !self.member_delay()
                && !self.member_pause()
                && !worker_pause
                && !message_delay
        {
            return Err(cx.err(
                f.kind.span(),
                "`at_ms` belongs to a crash, a pause or a delay (a drop or cut acts on its message, not at a time), `restart_after_ms` to a crash",
            ));
        }
        if message_delay && f.at_ms.is_some() && !cx.client {
            return Err(cx.err(
                f.kind.span(),
                "a delay at a time (`at_ms`) of a worker's message needs a user's program (worker_cmd); \
                 the built-in worker's UPDATE is delayed as it is sent (no `at_ms`)",
            ));
        }
        if worker_pause && f.at_ms.is_some() && !cx.client {
            return Err(cx.err(
                f.kind.span(),
                "a worker's pause at a time (`at_ms`) needs a user's program (worker_cmd); \
                 the built-in worker is paused after a protocol point (`after`)",
            ));
        }
        if (f.by_ms.is_some() || f.for_ms.is_some()) && !self.member_delay() {
            return Err(cx.err(
                f.kind.span(),
                "`by_ms` and `for_ms` belong to a delay of a cluster member (node = \"member/N\")",
            ));
        }
        Ok(())
    }

    /// When a crash or a member delay happens: after a protocol point or
    /// at a time, one of them.
    fn trigger(&self, cx: &Context, what: &str) -> Result<Trigger, ScenarioError> {
        match (self.after.clone(), self.f.at_ms) {
            (Some((worker, point)), None) => Ok(Trigger::After { worker, point }),
            (None, Some(ms)) => Ok(Trigger::AtMs(ms)),
            (Some(_), Some(_)) => Err(cx.err(
                self.f.kind.span(),
                format!("{what} has `after` or `at_ms`, not both"),
            )),
            (None, None) => Err(self.missing(cx, "after` or `at_ms")),
        }
    }

    /// The member a member fault acts on.
    fn member(&self, cx: &Context) -> Result<MemberSel, ScenarioError> {
        match self.target {
            CrashTarget::Member(m) => Ok(m),
            _ => Err(self.missing(cx, "node = \"member/N\"")),
        }
    }

    /// The worker and point a pause, failover or partition follows.
    fn after_point(&self, cx: &Context) -> Result<(String, String), ScenarioError> {
        self.after.clone().ok_or_else(|| self.missing(cx, "after"))
    }
}

impl LiveFaults {
    /// Reads every `[[fault]]` table, then checks that no worker stops at
    /// two different protocol points.
    pub(super) fn read(cx: &Context, raw: &[RawFault]) -> Result<LiveFaults, ScenarioError> {
        let mut faults = LiveFaults::default();
        for f in raw {
            let kind = one_of(cx.file, cx.src, &f.kind, "fault kind", &KINDS)?;
            let target = cx.target(f, kind)?;
            let after = cx.after(f, &target)?;
            if let (Some((who, point)), Some(a)) = (&after, &f.after) {
                faults.gates.push((who.clone(), point.clone(), a.span()));
            }
            let r = Read {
                f,
                kind,
                target,
                after,
            };
            r.check_fields(cx)?;
            faults.add(cx, r)?;
        }
        faults.one_point_per_worker(cx)?;
        Ok(faults)
    }

    fn add(&mut self, cx: &Context, r: Read) -> Result<(), ScenarioError> {
        let f = r.f;
        match r.kind {
            K::Pause if r.member_pause() => {
                let member = r.member(cx)?;
                let trigger = r.trigger(cx, "a member pause")?;
                if f.duration_ms == 0 {
                    return Err(r.missing(cx, "duration_ms"));
                }
                self.member_delays.push(LiveMemberDelay {
                    member,
                    trigger,
                    by_ms: None,
                    for_ms: f.duration_ms,
                });
            }
            K::Pause if f.at_ms.is_some() => {
                let Trigger::AtMs(at_ms) = r.trigger(cx, "a pause")? else {
                    return Err(r.missing(cx, "at_ms"));
                };
                if f.duration_ms == 0 {
                    return Err(r.missing(cx, "duration_ms"));
                }
                self.timed_pauses.push(LiveTimedPause {
                    worker: r.worker(),
                    at_ms,
                    duration_ms: f.duration_ms,
                });
            }
            K::Pause => {
                let (worker, after) = r.after_point(cx)?;
                self.pauses.push(LivePause {
                    worker,
                    after,
                    duration_ms: f.duration_ms,
                });
            }
            K::Failover => {
                let (worker, after) = r.after_point(cx)?;
                if cx.lock == LockKind::None || cx.lock.cluster().is_some() {
                    return Err(cx.err(
                        f.kind.span(),
                        "a failover needs a Redis lock (on a cluster: crash member/leader)",
                    ));
                }
                self.failovers.push(LiveFailover { worker, after });
            }
            K::Crash => {
                let trigger = r.trigger(cx, "a crash")?;
                self.crashes.push(LiveCrash {
                    target: r.target.clone(),
                    trigger,
                    restart_after_ms: f.restart_after_ms,
                });
            }
            K::Partition => {
                let (worker, after) = r.after_point(cx)?;
                if f.duration_ms == 0 {
                    return Err(r.missing(cx, "duration_ms"));
                }
                let member = r.member(cx)?;
                self.partitions.push(LivePartition {
                    member,
                    worker,
                    after,
                    duration_ms: f.duration_ms,
                });
            }
            K::Delay if r.member_delay() => self.member_delay(cx, &r)?,
            K::Delay | K::Drop | K::Cut => {
                let f = r.f;
                let message = f.message.as_ref().ok_or_else(|| r.missing(cx, "message"))?;
                // Every proxied message, and "lock": a cut of the cluster link.
                let choices: Vec<(&str, Option<NetMessage>)> = NetMessage::ALL
                    .iter()
                    .map(|m| (m.name(), Some(*m)))
                    .chain([("lock", None)])
                    .collect();
                let net = one_of(cx.file, cx.src, message, "message", &choices)?;
                match net {
                    Some(net) => self.net_fault(cx, &r, net, message.span())?,
                    None => self.lock_cut(cx, &r, message.span())?,
                }
            }
        }
        Ok(())
    }

    /// A cut of a worker's connection to the lock's cluster.
    fn lock_cut(&mut self, cx: &Context, r: &Read, at: Range<usize>) -> Result<(), ScenarioError> {
        if r.kind != K::Cut || cx.lock.cluster().is_none() {
            return Err(cx.err(
                at,
                "message = \"lock\" goes with kind = \"cut\" on an etcd or ZooKeeper lock (the worker's connection to its member)",
            ));
        }
        let (worker, after) = r.after_point(cx)?;
        self.lock_cuts.push(LiveLockCut {
            worker,
            after,
            refuse_ms: r.f.duration_ms,
        });
        Ok(())
    }

    /// A delay of a member's links: every message between it and the others.
    fn member_delay(&mut self, cx: &Context, r: &Read) -> Result<(), ScenarioError> {
        let f = r.f;
        let member = r.member(cx)?;
        let trigger = r.trigger(cx, "a member delay")?;
        let by_ms = f
            .by_ms
            .filter(|ms| *ms > 0)
            .ok_or_else(|| r.missing(cx, "by_ms"))?;
        let for_ms = f
            .for_ms
            .filter(|ms| *ms > 0)
            .ok_or_else(|| r.missing(cx, "for_ms"))?;
        if f.duration_ms != 0 || f.message.is_some() {
            return Err(cx.err(
                f.kind.span(),
                "a member delay holds every message between members: `by_ms` and `for_ms`, no `duration_ms` or `message`",
            ));
        }
        self.member_delays.push(LiveMemberDelay {
            member,
            trigger,
            by_ms: Some(by_ms),
            for_ms,
        });
        Ok(())
    }

    /// A delay, drop or cut of a worker's UPDATE in its PostgreSQL proxy.
    fn net_fault(
        &mut self,
        cx: &Context,
        r: &Read,
        message: NetMessage,
        at: Range<usize>,
    ) -> Result<(), ScenarioError> {
        let f = r.f;
        let worker = r.worker();
        if message.is_reply() && !cx.client {
            return Err(cx.err(
                at,
                format!(
                    "message = \"{}\" acts on a server's reply in fencesim's proxy, which only a \
                     user's program (worker_cmd) talks through; the built-in worker's act on its UPDATE",
                    message.name()
                ),
            ));
        }
        if r.kind != K::Cut && f.duration_ms == 0 {
            return Err(r.missing(cx, "duration_ms"));
        }
        if self
            .net
            .iter()
            .any(|n| n.worker == worker && n.message == message && n.at_ms == f.at_ms)
        {
            return Err(cx.err(
                f.node.span(),
                format!(
                    "worker/{worker} already has a network fault on that message; one per worker and message (and time)"
                ),
            ));
        }
        let mode = match r.kind {
            K::Delay => ProxyMode::Hold { ms: f.duration_ms },
            K::Drop => ProxyMode::Drop { ms: f.duration_ms },
            _ => ProxyMode::Cut,
        };
        self.net.push(LiveNet {
            worker,
            mode,
            message,
            at_ms: f.at_ms,
        });
        Ok(())
    }

    fn one_point_per_worker(&self, cx: &Context) -> Result<(), ScenarioError> {
        let gates = &self.gates;
        for (i, (w, p, span)) in gates.iter().enumerate() {
            if let Some((_, other, _)) = gates[..i].iter().find(|(w2, p2, _)| w2 == w && p2 != p) {
                return Err(cx.err(
                    span.clone(),
                    format!("worker/{w} already stops at {other:?}; one protocol point per worker"),
                ));
            }
        }
        Ok(())
    }
}
