//! The `[[fault]]` tables of a live scenario file: what each may name (a
//! worker, a cluster member, the Redis primary), which protocol point or
//! time it follows, and which fields go with which kind — every mistake
//! located at file:line:column in the file's own words.
//!
//! Apart from the rest of the file's reading because it is most of it:
//! seven fault kinds on three kinds of target, each with its own fields.
//! What they become is the one typed fault list ([`crate::live::fault`]),
//! whose combination rules ([`crate::live::fault::conflict`]) are checked
//! here too, pointed at the table that breaks them.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::choice::one_of;
use crate::live::cluster::MEMBERS;
use crate::live::fault::{
    conflict, Action, Fault, MemberSel, NetMessage, PauseEnd, Point, Target, Trigger, WorkerId,
};
use crate::live::proxy::ProxyMode;
use crate::live::LockKind;
use crate::scenario::ScenarioError;

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
    duration_ms: Option<Spanned<u64>>,
    /// pause of a built-in worker: what ends it before `duration_ms`
    /// ("other_op_done": another worker's operation ended).
    until: Option<Spanned<String>>,
    /// delay of a member's links: by how many ms every message is held.
    by_ms: Option<u64>,
    /// delay of a member's links: for how long (ms).
    for_ms: Option<u64>,
}

impl RawFault {
    /// `duration_ms` as given (0: not given).
    fn duration_ms(&self) -> u64 {
        self.duration_ms.as_ref().map_or(0, |d| *d.get_ref())
    }

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
    /// The `[[worker]]` names, in order (a fault names a worker by its index).
    pub workers: Vec<&'a str>,
    /// The protocol points a fault may follow.
    pub points: Vec<Point>,
    /// A user's program runs the workers (`worker_cmd`).
    pub client: bool,
}

/// One fault table as read so far: its kind, its target and the protocol
/// point it follows.
struct Read<'f> {
    f: &'f RawFault,
    kind: K,
    target: Target,
    /// (worker, point) of `after`.
    after: Option<(WorkerId, Point)>,
}

impl Context<'_> {
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::at(self.file, self.src, span, msg)
    }

    fn worker_named(&self, name: &str, span: Range<usize>) -> Result<WorkerId, ScenarioError> {
        name.strip_prefix("worker/")
            .and_then(|w| self.workers.iter().position(|x| *x == w))
            .map(WorkerId)
            .ok_or_else(|| {
                self.err(
                    span,
                    format!("unknown node {name:?}; expected worker/<name> of a [[worker]]"),
                )
            })
    }

    /// The target: a worker, a cluster member (crash, partition, delay,
    /// pause), or (crash only) the Redis primary.
    fn target(&self, f: &RawFault, kind: K) -> Result<Target, ScenarioError> {
        let node = f.node.get_ref();
        if let Some(m) = node.strip_prefix("member/") {
            return self.member(f, kind, m).map(Target::Member);
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
            return Ok(Target::RedisPrimary);
        }
        Ok(Target::Worker(self.worker_named(node, f.node.span())?))
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
        target: &Target,
    ) -> Result<Option<(WorkerId, Point)>, ScenarioError> {
        let Some(a) = &f.after else {
            return Ok(None);
        };
        let (who, point) = match a.get_ref().split_once(':') {
            Some((who, point)) => (self.worker_named(who, a.span())?, point),
            None => match target {
                Target::Worker(w) => (*w, a.get_ref().as_str()),
                Target::RedisPrimary | Target::Member(_) => {
                    return Err(self.err(
                        a.span(),
                        "name the worker whose step it follows: after = \"worker/A:read_ok\"",
                    ))
                }
            },
        };
        if point == Point::FenceChecked.name() && !self.points.contains(&Point::FenceChecked) {
            return Err(self.err(
                a.span(),
                "the built-in worker checks the fence (fence_checked) only with write = \"check-then-update\": \
                 a fault there would never strike; follow read_ok or write_sent",
            ));
        }
        let point = Spanned::new(a.span(), point.to_string());
        let choices: Vec<(&str, Point)> = self.points.iter().map(|p| (p.name(), *p)).collect();
        let point = one_of(self.file, self.src, &point, "protocol point", &choices)?;
        Ok(Some((who, point)))
    }
}

impl Read<'_> {
    fn member_pause(&self) -> bool {
        self.kind == K::Pause && matches!(self.target, Target::Member(_))
    }

    fn member_delay(&self) -> bool {
        self.kind == K::Delay && matches!(self.target, Target::Member(_))
    }

    /// The worker it acts on (a worker's fault: its node names one).
    fn worker(&self, cx: &Context) -> Result<WorkerId, ScenarioError> {
        match self.target {
            Target::Worker(w) => Ok(w),
            Target::RedisPrimary | Target::Member(_) => {
                Err(self.missing(cx, "node = \"worker/<name>\""))
            }
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
        if let (Some(m), K::Pause | K::Crash | K::Failover | K::Partition) = (&f.message, kind) {
            return Err(cx.err(
                m.span(),
                "`message` belongs to a delay, drop or cut (which of a worker's messages the proxy acts on); \
                 a pause, crash, failover or partition acts on its node",
            ));
        }
        if let (Some(d), K::Crash | K::Failover) = (&f.duration_ms, kind) {
            return Err(cx.err(
                d.span(),
                "a crash lasts until `restart_after_ms` (or for good) and a failover is at once: no `duration_ms`",
            ));
        }
        let held_or_dropped =
            matches!(kind, K::Delay | K::Drop) && f.message.is_some() && !self.member_delay();
        if let (Some(u), false) = (&f.until, worker_pause || held_or_dropped) {
            return Err(cx.err(
                u.span(),
                "`until` belongs to a worker's pause or the delay or drop of a worker's message (node = \"worker/A\"): what ends it before its `duration_ms`",
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

    /// When a crash, a pause or a member's fault happens: after a protocol
    /// point or at a time, one of them.
    fn trigger(&self, cx: &Context, what: &str) -> Result<Trigger, ScenarioError> {
        match (self.after, self.f.at_ms) {
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
            Target::Member(m) => Ok(m),
            _ => Err(self.missing(cx, "node = \"member/N\"")),
        }
    }

    /// The protocol point a pause, failover, partition or cut follows.
    fn after_point(&self, cx: &Context) -> Result<Trigger, ScenarioError> {
        let (worker, point) = self.after.ok_or_else(|| self.missing(cx, "after"))?;
        Ok(Trigger::After { worker, point })
    }

    /// The protocol point a worker's own pause or lock cut follows: its
    /// own step (it is stopped there, at its gate), not another's.
    fn own_point(&self, cx: &Context, worker: WorkerId) -> Result<Trigger, ScenarioError> {
        let trigger = self.after_point(cx)?;
        match (trigger, &self.f.after) {
            (Trigger::After { worker: w, .. }, Some(a)) if w != worker => Err(cx.err(
                a.span(),
                "this fault acts at its own worker's step (after = \"read_ok\"); \
                 `worker/B:` names another worker's, which only a crash or a cluster member's fault may follow",
            )),
            _ => Ok(trigger),
        }
    }

    /// A worker pause's or held message's `until`: only the built-in worker's trial watches
    /// the other workers' operations end as they happen.
    fn pause_end(&self, cx: &Context) -> Result<PauseEnd, ScenarioError> {
        let Some(u) = &self.f.until else {
            return Ok(PauseEnd::Elapsed);
        };
        if u.get_ref() != "other_op_done" {
            return Err(cx.err(
                u.span(),
                format!(
                    "unknown `until` {:?}: expected \"other_op_done\"",
                    u.get_ref()
                ),
            ));
        }
        // A user's program's pause lasts its `duration_ms`: the harness
        // does not see a program's operation end as it happens (its trial
        // line says so), so a bundled file runs unchanged with a program.
        Ok(PauseEnd::OtherOpDone)
    }

    /// A `duration_ms` that must be given.
    fn duration(&self, cx: &Context) -> Result<u64, ScenarioError> {
        match self.f.duration_ms() {
            0 => Err(self.missing(cx, "duration_ms")),
            ms => Ok(ms),
        }
    }
}

/// Reads every `[[fault]]` table, then checks that the faults can be
/// applied together (a worker stops at one protocol point; one network
/// fault per worker, message and time), pointing at the table that can't.
pub(super) fn read(cx: &Context, raw: &[RawFault]) -> Result<Vec<Fault>, ScenarioError> {
    let mut faults = Vec::new();
    for f in raw {
        let kind = one_of(cx.file, cx.src, &f.kind, "fault kind", &KINDS)?;
        let target = cx.target(f, kind)?;
        let after = cx.after(f, &target)?;
        let r = Read {
            f,
            kind,
            target,
            after,
        };
        r.check_fields(cx)?;
        faults.push(r.fault(cx)?);
    }
    let names: Vec<String> = cx.workers.iter().map(|w| w.to_string()).collect();
    if let Some(c) = conflict(&faults, &names) {
        let f = &raw[c.fault];
        let span = match (&f.after, c.at_after) {
            (Some(a), true) => a.span(),
            _ => f.node.span(),
        };
        return Err(cx.err(span, c.why));
    }
    Ok(faults)
}

impl Read<'_> {
    /// The table as a typed fault.
    fn fault(&self, cx: &Context) -> Result<Fault, ScenarioError> {
        let f = self.f;
        let (trigger, action) = match self.kind {
            K::Pause if self.member_pause() => {
                let member = self.member(cx)?;
                let trigger = self.trigger(cx, "a member pause")?;
                let for_ms = self.duration(cx)?;
                let by_ms = None;
                (
                    trigger,
                    Action::SlowMember {
                        member,
                        by_ms,
                        for_ms,
                    },
                )
            }
            K::Pause if f.at_ms.is_some() => {
                let trigger = self.trigger(cx, "a pause")?;
                let worker = self.worker(cx)?;
                let duration_ms = self.duration(cx)?;
                let until = self.pause_end(cx)?;
                (
                    trigger,
                    Action::Pause {
                        worker,
                        duration_ms,
                        until,
                    },
                )
            }
            K::Pause => {
                let worker = self.worker(cx)?;
                let trigger = self.own_point(cx, worker)?;
                let duration_ms = self.duration(cx)?;
                let until = self.pause_end(cx)?;
                (
                    trigger,
                    Action::Pause {
                        worker,
                        duration_ms,
                        until,
                    },
                )
            }
            K::Failover => {
                let trigger = self.after_point(cx)?;
                if cx.lock == LockKind::None || cx.lock.cluster().is_some() {
                    return Err(cx.err(
                        f.kind.span(),
                        "a failover needs a Redis lock (on a cluster: crash member/leader)",
                    ));
                }
                (trigger, Action::Failover)
            }
            K::Crash => {
                let trigger = self.trigger(cx, "a crash")?;
                let (target, restart_after_ms) = (self.target, f.restart_after_ms);
                (
                    trigger,
                    Action::Crash {
                        target,
                        restart_after_ms,
                    },
                )
            }
            K::Partition => {
                let trigger = self.after_point(cx)?;
                let duration_ms = self.duration(cx)?;
                let member = self.member(cx)?;
                (
                    trigger,
                    Action::Partition {
                        member,
                        duration_ms,
                    },
                )
            }
            K::Delay if self.member_delay() => self.member_delay_fault(cx)?,
            K::Delay | K::Drop | K::Cut => self.message_fault(cx)?,
        };
        Ok(Fault { trigger, action })
    }

    /// A delay, drop or cut of a worker's message in its proxy, or a cut
    /// of its connection to the lock's cluster (`message = "lock"`).
    fn message_fault(&self, cx: &Context) -> Result<(Trigger, Action), ScenarioError> {
        let f = self.f;
        let message = f
            .message
            .as_ref()
            .ok_or_else(|| self.missing(cx, "message"))?;
        // Every proxied message, and "lock": a cut of the cluster link.
        let choices: Vec<(&str, Option<NetMessage>)> = NetMessage::ALL
            .iter()
            .map(|m| (m.name(), Some(*m)))
            .chain([("lock", None)])
            .collect();
        match one_of(cx.file, cx.src, message, "message", &choices)? {
            Some(net) => self.net_fault(cx, net, message.span()),
            None => self.lock_cut(cx, message.span()),
        }
    }

    /// A cut of a worker's connection to the lock's cluster.
    fn lock_cut(&self, cx: &Context, at: Range<usize>) -> Result<(Trigger, Action), ScenarioError> {
        if self.kind != K::Cut || cx.lock.cluster().is_none() {
            return Err(cx.err(
                at,
                "message = \"lock\" goes with kind = \"cut\" on an etcd or ZooKeeper lock (the worker's connection to its member)",
            ));
        }
        let worker = self.worker(cx)?;
        let trigger = self.own_point(cx, worker)?;
        let refuse_ms = self.f.duration_ms();
        Ok((trigger, Action::CutLock { worker, refuse_ms }))
    }

    /// A delay of a member's links: every message between it and the others.
    fn member_delay_fault(&self, cx: &Context) -> Result<(Trigger, Action), ScenarioError> {
        let f = self.f;
        let member = self.member(cx)?;
        let trigger = self.trigger(cx, "a member delay")?;
        let by_ms = f
            .by_ms
            .filter(|ms| *ms > 0)
            .ok_or_else(|| self.missing(cx, "by_ms"))?;
        let for_ms = f
            .for_ms
            .filter(|ms| *ms > 0)
            .ok_or_else(|| self.missing(cx, "for_ms"))?;
        if f.duration_ms.is_some() || f.message.is_some() {
            return Err(cx.err(
                f.kind.span(),
                "a member delay holds every message between members: `by_ms` and `for_ms`, no `duration_ms` or `message`",
            ));
        }
        let by_ms = Some(by_ms);
        Ok((
            trigger,
            Action::SlowMember {
                member,
                by_ms,
                for_ms,
            },
        ))
    }

    /// A delay, drop or cut of one of a worker's messages in its proxy:
    /// as the message passes, or (a delay of a program's) at a time.
    fn net_fault(
        &self,
        cx: &Context,
        message: NetMessage,
        at: Range<usize>,
    ) -> Result<(Trigger, Action), ScenarioError> {
        let f = self.f;
        let worker = self.worker(cx)?;
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
        if let Some(a) = &f.after {
            return Err(cx.err(
                a.span(),
                "a network fault acts on its message as it passes the proxy (or, a delay, `at_ms`): no `after`",
            ));
        }
        if self.kind != K::Cut && f.duration_ms() == 0 {
            return Err(self.missing(cx, "duration_ms"));
        }
        let mode = match self.kind {
            K::Delay => ProxyMode::Hold {
                ms: f.duration_ms(),
            },
            K::Drop => ProxyMode::Drop {
                ms: f.duration_ms(),
            },
            _ => ProxyMode::Cut,
        };
        let trigger = f.at_ms.map_or(Trigger::Passing, Trigger::AtMs);
        Ok((
            trigger,
            Action::Net {
                worker,
                message,
                mode,
                until: self.pause_end(cx)?,
            },
        ))
    }
}
