//! The one typed list of a live scenario's faults: each a [`Trigger`] (a
//! worker's protocol point, a message passing its proxy, or a time) and an
//! [`Action`] (what is done, to a typed worker, cluster member or server).
//!
//! Every part of the live mode reads this one list: the loader fills it
//! from the `[[fault]]` tables ([`crate::live::scenario`]), the built-in
//! workers' trial strikes it at their gates and on its timetable
//! ([`crate::live::trial`]), a user's program's trial at what its proxies
//! see ([`crate::live::client`]), and the live search draws and combines
//! its faults ([`crate::live::search`]); [`Fired`] is the one record of
//! which have struck. Adding a fault kind is one variant of [`Action`]
//! (every `match` on it is exhaustive, so the compiler lists what else
//! must say something about it) plus its doing in [`executor`].
//!
//! [`table`] spells a fault as the scenario file does (a written finding,
//! the nemesis's report); [`Fault::label`] says it in a report's words.

pub(crate) mod executor;
mod table;

use serde::{Deserialize, Serialize};

use super::proxy::ProxyMode;

/// A worker of the scenario: its index in the file's `[[worker]]` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorkerId(pub usize);

/// A protocol point a fault can follow: a step of the built-in worker
/// (its gate), or a point of a user's program's conversation its proxies
/// see. (serde: the built-in worker names its gate on its stdout.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// The server granted the program the lock (before it learns so; a
    /// user's program only).
    LockGranted,
    /// Its read of the document returned.
    ReadOk,
    /// The built-in worker checked the fence (check-then-update); a
    /// program's UPDATE reached its proxy.
    FenceChecked,
    /// The built-in worker sent its UPDATE.
    WriteSent,
    /// PostgreSQL's answer to the UPDATE reached the proxy (a user's
    /// program only).
    WriteAcked,
}

impl Point {
    /// Every point, by name.
    pub const ALL: [Point; 5] = [
        Point::LockGranted,
        Point::ReadOk,
        Point::FenceChecked,
        Point::WriteSent,
        Point::WriteAcked,
    ];
    /// The built-in worker's gates.
    pub const BUILT_IN: [Point; 3] = [Point::ReadOk, Point::FenceChecked, Point::WriteSent];
    /// The gates the built-in worker passes with its write: `fence_checked`
    /// only when it checks the fence before its update (check-then-update);
    /// a fault placed at a gate it never reaches would never strike.
    pub fn built_in(check_then_update: bool) -> &'static [Point] {
        if check_then_update {
            &Point::BUILT_IN
        } else {
            &[Point::ReadOk, Point::WriteSent]
        }
    }
    /// Points only a user's program can be stopped at: the proxies see them.
    pub const PROGRAM_ONLY: [Point; 2] = [Point::LockGranted, Point::WriteAcked];
    /// A user's program's points in its conversation's order (its grant,
    /// its read's answer, its UPDATE, the UPDATE's answer).
    pub const CONVERSATION: [Point; 4] = [
        Point::LockGranted,
        Point::ReadOk,
        Point::FenceChecked,
        Point::WriteAcked,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Point::LockGranted => "lock_granted",
            Point::ReadOk => "read_ok",
            Point::FenceChecked => "fence_checked",
            Point::WriteSent => "write_sent",
            Point::WriteAcked => "write_acked",
        }
    }

    pub fn from_name(name: &str) -> Option<Point> {
        Point::ALL.into_iter().find(|p| p.name() == name)
    }

    /// When a fault at this point of a program's conversation strikes, in
    /// a report's words (its UPDATE is held *at* the point, not after).
    pub fn when_text(self) -> String {
        match self {
            Point::FenceChecked => "at fence_checked".into(),
            p => format!("after {}", p.name()),
        }
    }
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

    /// Where it passes in a program's conversation: a fault on it strikes there.
    pub fn point(self) -> Point {
        match self {
            NetMessage::Update => Point::FenceChecked,
            NetMessage::LockReply => Point::LockGranted,
            NetMessage::ReadReply => Point::ReadOk,
            NetMessage::UpdateReply => Point::WriteAcked,
        }
    }
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

/// What a crash kills (SIGKILL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Worker(WorkerId),
    /// The harness's own Redis primary (no persistence: it restarts empty).
    RedisPrimary,
    /// A member of the etcd / ZooKeeper cluster (its data survives a restart).
    Member(MemberSel),
}

/// When a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Right after `worker`'s protocol point returned: the built-in
    /// worker's gate, or where a program's proxies see that point.
    After { worker: WorkerId, point: Point },
    /// As the network fault's message passes its worker's proxy.
    Passing,
    /// This many ms after the trial started. For a network fault: its
    /// link stalls from then on (a queue that froze, not one message).
    AtMs(u64),
}

/// What ends a worker's pause before its `duration_ms` is up.
///
/// A fixed pause holds only as long as the machine is quick enough for
/// the other worker to act inside it; anchoring its end on the event the
/// scenario is about (the other worker took the lock, wrote and let go)
/// keeps the verdict whatever the load, and `duration_ms` stays its
/// longest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PauseEnd {
    /// Only `duration_ms` ends it.
    #[default]
    Elapsed,
    /// Another worker's operation ended — its release was answered, it
    /// gave the operation up, or it finished its workload: the pause ends
    /// then (`until = "other_op_done"`; the built-in worker's trials).
    OtherOpDone,
}

/// What a fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// SIGSTOP of the worker (its process, or its program's process
    /// group) for `duration_ms`, or until `until` comes first.
    Pause {
        worker: WorkerId,
        duration_ms: u64,
        until: PauseEnd,
    },
    /// SIGKILL of the target, started again `restart_after_ms` later
    /// (None: it stays down).
    Crash {
        target: Target,
        restart_after_ms: Option<u64>,
    },
    /// The Redis primary SIGKILLed and its replica, whose replication link
    /// was cut before the trial, promoted.
    Failover,
    /// A TCP proxy holds, drops or cuts one of the worker's messages; a
    /// hold ends at its length or, with `until`, when another worker's
    /// operation ends, whichever comes first (the built-in worker's trials).
    Net {
        worker: WorkerId,
        message: NetMessage,
        mode: ProxyMode,
        until: PauseEnd,
    },
    /// The member cut off from the others (both ways; its clients stay
    /// connected) for `duration_ms`.
    Partition { member: MemberSel, duration_ms: u64 },
    /// For `for_ms`, the member slowed: with `by_ms`, every message
    /// between it and the other members held that long by the links;
    /// without, the member SIGSTOPped (a frozen VM of a server).
    SlowMember {
        member: MemberSel,
        by_ms: Option<u64>,
        for_ms: u64,
    },
    /// The worker's connections to the cluster's members cut (reset) and
    /// those members refusing it for `refuse_ms`.
    CutLock { worker: WorkerId, refuse_ms: u64 },
}

/// One fault of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub trigger: Trigger,
    pub action: Action,
}

impl Fault {
    /// The worker it acts on, if it acts on one.
    pub fn worker(&self) -> Option<WorkerId> {
        match self.action {
            Action::Pause { worker, .. }
            | Action::Net { worker, .. }
            | Action::CutLock { worker, .. }
            | Action::Crash {
                target: Target::Worker(worker),
                ..
            } => Some(worker),
            Action::Crash { .. }
            | Action::Failover
            | Action::Partition { .. }
            | Action::SlowMember { .. } => None,
        }
    }

    /// The worker and protocol point it follows (the worker's gate).
    pub fn gate(&self) -> Option<(WorkerId, Point)> {
        match self.trigger {
            Trigger::After { worker, point } => Some((worker, point)),
            Trigger::Passing | Trigger::AtMs(_) => None,
        }
    }

    /// Ms after the trial's start it strikes at, if it is timed.
    pub fn at_ms(&self) -> Option<u64> {
        match self.trigger {
            Trigger::AtMs(ms) => Some(ms),
            Trigger::After { .. } | Trigger::Passing => None,
        }
    }

    /// A network fault at a time: its worker's link stalls for a window.
    pub fn is_stall(&self) -> bool {
        matches!(
            (self.trigger, self.action),
            (Trigger::AtMs(_), Action::Net { .. })
        )
    }

    /// Where in a user's program's conversation it strikes: the point it
    /// follows, or the point its message passes (a stall strikes at a time).
    pub fn program_point(&self) -> Option<Point> {
        match (self.trigger, self.action) {
            (Trigger::After { point, .. }, _) => Some(point),
            (Trigger::Passing, Action::Net { message, .. }) => Some(message.point()),
            _ => None,
        }
    }

    /// How long it lasts (ms) once it struck: a pause's or a window's
    /// length, a crash until its restart, a cut until the lease
    /// (`ttl_ms`) would have run out.
    pub fn length_ms(&self, ttl_ms: u64) -> u64 {
        match self.action {
            Action::Pause { duration_ms, .. } | Action::Partition { duration_ms, .. } => {
                duration_ms
            }
            Action::Crash {
                restart_after_ms, ..
            } => restart_after_ms.unwrap_or(0),
            Action::Failover => 0,
            Action::Net { mode, .. } => match mode {
                ProxyMode::Hold { ms } | ProxyMode::Drop { ms } => ms,
                ProxyMode::Cut => ttl_ms,
            },
            Action::SlowMember { for_ms, .. } => for_ms,
            Action::CutLock { refuse_ms, .. } => refuse_ms,
        }
    }

    /// The fault that needs the harness's own Redis (it kills or promotes
    /// it), in words, if this is one.
    pub fn needs_own_redis(&self) -> Option<&'static str> {
        match self.action {
            Action::Failover => Some("failover"),
            Action::Crash {
                target: Target::RedisPrimary,
                ..
            } => Some("crash of coord/0"),
            _ => None,
        }
    }

    /// Whether it acts on a cluster member (or a worker's link to one).
    pub fn on_member(&self) -> bool {
        matches!(
            self.action,
            Action::Crash {
                target: Target::Member(_),
                ..
            } | Action::Partition { .. }
                | Action::SlowMember { .. }
                | Action::CutLock { .. }
        )
    }

    /// The order faults at one built-in worker's gate strike in: the
    /// servers' faults first (failover, partition, the lock link's cut,
    /// a member slowed), then crashes, the worker's pause last (a crashed
    /// worker is not paused).
    pub fn gate_order(&self) -> u8 {
        match self.action {
            Action::Failover => 0,
            Action::Partition { .. } => 1,
            Action::CutLock { .. } => 2,
            Action::SlowMember { .. } => 3,
            Action::Crash { .. } => 4,
            Action::Pause { .. } => 5,
            Action::Net { .. } => 6,
        }
    }

    /// The order a user's program's faults at one point strike in: its
    /// pause (it sleeps through the pause), the proxy's network faults,
    /// then a crash.
    pub fn program_order(&self) -> u8 {
        match self.action {
            Action::Pause { .. } => 0,
            Action::Net { .. } => 1,
            Action::Crash { .. } => 2,
            Action::Failover
            | Action::Partition { .. }
            | Action::SlowMember { .. }
            | Action::CutLock { .. } => 3,
        }
    }
}

/// Why a set of faults cannot be applied together, and which fault (its
/// index) and field the loader points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub fault: usize,
    /// The clash is in its `after` (a second protocol point for a worker),
    /// else in its `node` (a second network fault on one message).
    pub at_after: bool,
    pub why: String,
}

/// Whether the faults can be applied together: a worker stops at one
/// protocol point (its gate), and has one network fault per message and
/// time. The loader points at the first clash; the search counts a
/// placement with one as not expressible.
pub fn conflict(faults: &[Fault], names: &[String]) -> Option<Conflict> {
    let name = |w: WorkerId| names.get(w.0).map_or("?", String::as_str);
    for (i, f) in faults.iter().enumerate() {
        let Action::Net {
            worker, message, ..
        } = f.action
        else {
            continue;
        };
        let same = |g: &Fault| {
            matches!(g.action, Action::Net { worker: w, message: m, .. } if w == worker && m == message)
                && g.at_ms() == f.at_ms()
        };
        if faults[..i].iter().any(same) {
            return Some(Conflict {
                fault: i,
                at_after: false,
                why: format!(
                    "worker/{} already has a network fault on that message; one per worker and message (and time)",
                    name(worker)
                ),
            });
        }
    }
    for (i, f) in faults.iter().enumerate() {
        let Some((w, p)) = f.gate() else { continue };
        let other = faults[..i]
            .iter()
            .filter_map(Fault::gate)
            .find(|(w2, p2)| *w2 == w && *p2 != p);
        if let Some((_, other)) = other {
            return Some(Conflict {
                fault: i,
                at_after: true,
                why: format!(
                    "worker/{} already stops at {:?}; one protocol point per worker",
                    name(w),
                    other.name()
                ),
            });
        }
    }
    None
}

/// Which of a scenario's faults have struck: each strikes at most once (a
/// restarted worker passes its protocol point again; a proxy sees a
/// retransmitted message again). The one record of both modes.
#[derive(Clone, Debug, Default)]
pub struct Fired(Vec<bool>);

impl Fired {
    /// None of `n` faults has struck.
    pub fn new(n: usize) -> Fired {
        Fired(vec![false; n])
    }

    /// Fault `k` strikes now: true the first time, false once it has.
    pub fn claim(&mut self, k: usize) -> bool {
        !std::mem::replace(&mut self.0[k], true)
    }

    pub fn has(&self, k: usize) -> bool {
        self.0[k]
    }

    /// How many have struck.
    pub fn count(&self) -> usize {
        self.0.iter().filter(|f| **f).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(worker: usize, point: Point) -> Fault {
        Fault {
            trigger: Trigger::After {
                worker: WorkerId(worker),
                point,
            },
            action: Action::Pause {
                worker: WorkerId(worker),
                duration_ms: 10,
                until: PauseEnd::Elapsed,
            },
        }
    }

    #[test]
    fn a_worker_stopped_at_two_points_is_a_conflict_at_the_second() {
        let names = ["A".to_string(), "B".to_string()];
        let ok = [pause(0, Point::ReadOk), pause(1, Point::WriteSent)];
        assert_eq!(conflict(&ok, &names), None);
        let two = [
            pause(0, Point::ReadOk),
            pause(1, Point::WriteSent),
            pause(0, Point::WriteSent),
        ];
        let c = conflict(&two, &names).expect("a conflict");
        assert_eq!((c.fault, c.at_after), (2, true));
        assert_eq!(
            c.why,
            "worker/A already stops at \"read_ok\"; one protocol point per worker"
        );
    }

    #[test]
    fn each_fault_is_claimed_once() {
        let mut fired = Fired::new(2);
        assert!(fired.claim(1));
        assert!(!fired.claim(1));
        assert!(!fired.has(0));
        assert_eq!(fired.count(), 1);
    }
}
