//! A code-level counterexample (`fencesim check --code P`) as a live
//! scenario: the same protocol's live recipe on real servers, and the one
//! fault of the path that stalls the worker whose step is the violation
//! (its *stale* worker) across the other worker's operation, as a live
//! fault on that worker, anchored at the protocol point it last passed.
//!
//! The search's path is exact about order and loose about time (messages
//! take no time, a pause is the lease TTL + 1 ms); a live trial is the
//! other way round. So what carries over is the order the path forces,
//! not its instants: the stale worker is granted first (the other starts
//! after its grant, `start_after`, when the path starts it later), and the
//! stall that spans the other worker's grant to its last step ends when
//! the other worker's operation is done (`until = "other_op_done"`). The
//! lease TTL is the recipe's (50 ms on Redis, 1 s for etcd's lease and
//! ZooKeeper's session, which count coarser than the path's 10 ms), and
//! the reruns decide whether the scenario reproduces.
//!
//! What stalls the stale worker (the sender of the message whose arrival
//! violates, or of the write whose commit does), in the order it is
//! looked for:
//!
//! - its pause before the other's grant, whose delayed timers fire only
//!   after the other's last step: a `pause` after its last built-in gate
//!   (`read_ok`, `write_sent`) — its write, if it sent it at that gate, is
//!   held by the pause itself;
//! - else its write in flight from before the other's grant to after the
//!   other's last step: a `delay` of its `update` (the proxy holds it);
//! - else its write lost: a `drop` of its `update`;
//! - when the violation is the resource committing the stale worker's
//!   write it checked earlier (a check-to-write timer), the other's write
//!   arriving in between: a `pause` after `fence_checked` of the
//!   check-then-update recipe, whose worker checks the fence itself.
//!
//! Everything else that is a fault in the path and not that stall is
//! refused, naming the step: a clock drift or jump (the live mode has no
//! clock fault), a loss or duplicate of any other message, a pause of the
//! other worker, a crash, a failover or a rejoin (the path's crash restarts
//! at once from the synced record; a failover before the first holder
//! passed a built-in gate has no anchor); so is a stall the built-in worker has no
//! fault for (a held release or reply: its lock connection has no proxy),
//! and a protocol with no live recipe.
//!
//! One path is not a stall: a failover that loses the holder's token
//! (incr-beside-lease: the INCR not yet replicated when the replica is
//! promoted), the violation the other worker's grant carrying it again
//! (`token_order`). It becomes the live failover (the primary SIGKILLed,
//! the replica whose link the harness cut promoted) at the holder's last
//! gate before it, or its first (`read_ok`) when the path fails over
//! right after its grant; any other fault in such a path is refused.

use crate::check::ViolationKind;
use crate::codecheck::harness::{Did, Next};
use crate::codecheck::{Action, Builtin, Counterexample, Harness};
use crate::live::fault::{Action as LiveAction, Fault, NetMessage, PauseEnd, Point};
use crate::live::fault::{Trigger, WorkerId};
use crate::live::proxy::ProxyMode;
use crate::live::{LockKind, WriteKind};
use crate::protocol::{NodeId, ProtocolKind, TimerId};

/// A protocol's live recipe: the lock, the write, the timing its bundled
/// live scenarios measured, and its simulated twin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recipe {
    pub lock: LockKind,
    pub write: WriteKind,
    pub ttl_ms: u64,
    /// The worker machine's request timeout (on a cluster: how long the
    /// second worker's lock call waits for the first's lease to go).
    pub request_timeout_ms: u64,
    /// The second worker's start after the first's grant.
    pub start_gap_ms: u64,
    /// The longest a stall lasts when it ends at the other's operation.
    pub hold_cap_ms: u64,
    /// The simulated twin, relative to the repository.
    pub twin: &'static str,
}

/// Redis: the bundled scenarios' 50 ms lease, the second worker half a
/// lease after the first's grant.
const REDIS: Recipe = Recipe {
    lock: LockKind::RedisSetNxCad,
    write: WriteKind::Plain,
    ttl_ms: 50,
    request_timeout_ms: 2_000,
    start_gap_ms: 25,
    hold_cap_ms: 5_000,
    twin: "scenarios/article/gc-pause-redis-set-nx.toml",
};

/// etcd and ZooKeeper: whole-second leases and sessions.
const CLUSTER: Recipe = Recipe {
    lock: LockKind::EtcdLock,
    write: WriteKind::Plain,
    ttl_ms: 1_000,
    request_timeout_ms: 10_000,
    start_gap_ms: 100,
    hold_cap_ms: 10_000,
    twin: "scenarios/real-systems/etcd-mutex-gc-pause.toml",
};

/// The live recipe of `kind` (`fence`: its resource checks the lock's
/// token), or why it has none.
pub fn recipe(kind: ProtocolKind, fence: bool) -> Result<Recipe, String> {
    known(kind, fence).ok_or_else(|| match kind {
        ProtocolKind::EtcdMutexNoRecheck => format!(
            "{}: the live etcd-lock is etcd's own lock service (/v3/lock/lock), which \
             re-checks after waiting; the 3.4.3 client without the re-check has no live recipe",
            kind.id()
        ),
        _ => format!(
            "{} has no live recipe (live recipes: {})",
            kind.id(),
            with_recipe().join(", ")
        ),
    })
}

/// The protocols with a live recipe.
pub fn with_recipe() -> Vec<&'static str> {
    (ProtocolKind::ALL.iter())
        .filter(|k| known(**k, true).is_some())
        .map(|k| k.id())
        .collect()
}

/// The recipe table.
fn known(kind: ProtocolKind, fence: bool) -> Option<Recipe> {
    let fenced = |on: bool| match on {
        true => WriteKind::Fenced,
        false => WriteKind::Plain,
    };
    Some(match kind {
        ProtocolKind::TtlLeaseDel => Recipe {
            lock: LockKind::RedisSetNxDel,
            twin: "scenarios/article/unsafe-release.toml",
            ..REDIS
        },
        ProtocolKind::RedisSetNx => REDIS,
        ProtocolKind::FencedCas => Recipe {
            write: WriteKind::Fenced,
            twin: "scenarios/article/gc-pause-fenced-cas.toml",
            ..REDIS
        },
        ProtocolKind::FencedCheckThenWrite => Recipe {
            write: WriteKind::CheckThenUpdate,
            // live/check-then-update-pause.toml: a starved PostgreSQL let
            // the second worker write first at 50 ms.
            ttl_ms: 500,
            start_gap_ms: 10,
            twin: "scenarios/real-systems/fenced-check-then-write.toml",
            ..REDIS
        },
        ProtocolKind::IncrBesideLease => Recipe {
            lock: LockKind::RedisSetNxDel,
            write: WriteKind::Fenced,
            twin: "scenarios/real-systems/incr-beside-lease-failover.toml",
            ..REDIS
        },
        ProtocolKind::ZkSequential => Recipe {
            lock: LockKind::ZkLock,
            write: fenced(fence),
            twin: match fence {
                true => "scenarios/real-systems/zk-sequential-gc-pause-fenced.toml",
                false => "scenarios/real-systems/zk-sequential-gc-pause.toml",
            },
            ..CLUSTER
        },
        ProtocolKind::EtcdMutex => Recipe {
            write: fenced(fence),
            twin: match fence {
                true => "scenarios/real-systems/etcd-mutex-gc-pause-fenced.toml",
                false => "scenarios/real-systems/etcd-mutex-gc-pause.toml",
            },
            ..CLUSTER
        },
        _ => return None,
    })
}

/// A counterexample made into a live scenario's parts.
#[derive(Clone, Debug)]
pub struct LivePlan {
    pub recipe: Recipe,
    /// The workers in `[[worker]]` order, `worker/i` as the i-th letter:
    /// (name, start_ms, waits for the grant of).
    pub workers: Vec<(String, u64, Option<usize>)>,
    pub faults: Vec<Fault>,
    /// The machine's request timeout the faults need.
    pub request_timeout_ms: u64,
    pub find: ViolationKind,
    /// How each step that became a fault or an order maps, one line each.
    pub mapped: Vec<String>,
}

/// A step the mapping cannot carry over, or a path it cannot: why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One step of the path as the mapping reads it.
#[derive(Clone, Debug)]
struct Step {
    action: Action,
    /// The node that handled it (None: a loss, a clock fault, …).
    actor: Option<NodeId>,
    grant: bool,
    sent: Vec<crate::codecheck::state::Packet>,
    /// The timers it armed.
    armed: Vec<(NodeId, TimerId)>,
}

/// The path replayed through the harness, what each step did logged.
fn replay(h: &Harness<Builtin>, c: &Counterexample) -> Result<Vec<Step>, Refusal> {
    let mut s = h.initial();
    let mut steps = Vec::new();
    for (i, &(action, _)) in c.steps.iter().enumerate() {
        let mut log = Vec::new();
        let (next, notes) = match h.next_logged(&s, action, Some(&mut log)) {
            Next::State(next, notes) => (next, notes),
            Next::Violation(_, notes, next) => (next, notes),
            Next::Cut(_) => {
                return Err(Refusal(format!(
                    "step {}: the path does not replay (implementation error)",
                    i + 1
                )))
            }
        };
        let actor = match action {
            Action::Deliver(p) => Some(p.to),
            Action::Fire { node, .. } => Some(node),
            _ => None,
        };
        let sent = (log.iter())
            .filter_map(|d| match d {
                Did::Sent { packet, .. } => Some(*packet),
                _ => None,
            })
            .collect();
        let armed = (log.iter())
            .filter_map(|d| match d {
                Did::SetTimer { node, timer, .. } => Some((*node, *timer)),
                _ => None,
            })
            .collect();
        steps.push(Step {
            action,
            actor,
            grant: notes.new_grant,
            sent,
            armed,
        });
        s = next;
    }
    Ok(steps)
}

/// The path's roles: its stale worker, the other, their grant steps and
/// the other's last step (0-based).
struct Roles {
    /// Where the resource checked the stale worker's write, when the
    /// violation is the resource committing it later (check-then-write).
    checked: Option<usize>,
    stale: u16,
    other: u16,
    stale_grant: usize,
    other_grant: usize,
    other_last: usize,
}

/// Which worker a grant step is for: its handler if a worker (a lock
/// server's client decided), else the sender of the delivered request.
fn granted(h: &Harness<Builtin>, st: &Step) -> Option<u16> {
    let worker = |n: NodeId| ((n.0 as usize) < h.topology.workers).then_some(n.0);
    match (st.actor.and_then(worker), st.action) {
        (Some(w), _) => Some(w),
        (None, Action::Deliver(p)) => worker(p.from),
        _ => None,
    }
}

/// The stale worker: the sender of the message whose arrival violates,
/// or of the write whose commit (a timer the resource armed when the
/// write arrived and was checked: the step returned) violates.
fn stale_of(h: &Harness<Builtin>, steps: &[Step]) -> Result<(u16, Option<usize>), Refusal> {
    let n = steps.len();
    let is_worker = |n: NodeId| (n.0 as usize) < h.topology.workers;
    let last = steps.last().map(|s| s.action);
    if let Some(Action::Deliver(p)) = last.filter(|_| n > 0) {
        if is_worker(p.from) {
            return Ok((p.from.0, None));
        }
    }
    if let Some(Action::Fire { node, timer }) = last {
        let armed_by = (0..n - 1)
            .rev()
            .find(|&i| steps[i].armed.contains(&(node, timer)));
        if let Some(i) = armed_by {
            if let Action::Deliver(p) = steps[i].action {
                if is_worker(p.from) && p.to == node && p.msg.name() == "write" {
                    return Ok((p.from.0, Some(i)));
                }
            }
        }
    }
    let Some(a) = last else {
        return Err(Refusal("an empty path".into()));
    };
    Err(Refusal(format!(
        "step {n} ({}): the violation is neither a worker's message arriving nor the commit of \
         a worker's write, so no worker's fault stands in its way",
        h.describe(&a)
    )))
}

fn roles(h: &Harness<Builtin>, steps: &[Step]) -> Result<Roles, Refusal> {
    let n = steps.len();
    let (stale, checked) = stale_of(h, steps)?;
    if h.topology.workers != 2 {
        return Err(Refusal(format!(
            "{} workers: the live mapping pairs the stale worker with one other",
            h.topology.workers
        )));
    }
    let other = 1 - stale;
    let grant_of = |w: u16| (steps.iter()).position(|st| st.grant && granted(h, st) == Some(w));
    let (Some(stale_grant), Some(other_grant)) = (grant_of(stale), grant_of(other)) else {
        return Err(Refusal(format!(
            "the path does not grant both worker/{stale} and worker/{other}"
        )));
    };
    if other_grant < stale_grant {
        return Err(Refusal(format!(
            "step {}: worker/{other} is granted before the stale worker/{stale} (step {})",
            other_grant + 1,
            stale_grant + 1
        )));
    }
    let involves = |st: &Step, w: u16| {
        st.actor == Some(NodeId(w))
            || matches!(st.action, Action::Deliver(p) | Action::Lose(p) if p.from == NodeId(w))
    };
    let other_last = (0..n - 1).rev().find(|&i| involves(&steps[i], other));
    Ok(Roles {
        checked,
        stale,
        other,
        stale_grant,
        other_grant,
        other_last: other_last.unwrap_or(other_grant),
    })
}

/// The built-in gate worker `w` last passed before step `before`, and its step.
fn last_gate(steps: &[Step], w: u16, before: usize) -> Option<(Point, usize)> {
    let me = NodeId(w);
    (0..before).rev().find_map(|i| {
        let st = &steps[i];
        if st
            .sent
            .iter()
            .any(|p| p.from == me && p.msg.name() == "write")
        {
            return Some((Point::WriteSent, i));
        }
        match st.action {
            Action::Deliver(p) if p.to == me && p.msg.name() == "read_ok" => {
                Some((Point::ReadOk, i))
            }
            _ => None,
        }
    })
}

/// The steps no live fault does, whatever the path, refused, naming the
/// first: a clock fault, a duplicate, a crash, a failover or a rejoin.
fn refuse_unmapped(h: &Harness<Builtin>, steps: &[Step]) -> Result<(), Refusal> {
    refuse_first(h, steps, |i, st| {
        Some(match st.action {
            Action::Drift { .. } | Action::Jump { .. } => "the live mode has no clock fault".into(),
            Action::Duplicate(_) => "the live mode duplicates no message".into(),
            // Tried for redis-set-nx's 15-step crash path (`crash coord/0`
            // at A's gate, restarted empty, A's UPDATE held): 0/5 reruns,
            // the built-in B's Redis connection dies with the server and
            // B ends its operation on the error instead of acquiring.
            Action::Crash(_) => "a crash restarts at once from its synced record in the \
                                  search; not mapped (a live crash of coord/0 also ends the \
                                  other worker's connection: it gives its operation up)"
                .into(),
            Action::Failover { .. } => failover_why(h, steps, i),
            Action::Rejoin(_) => "the live failover's old primary never rejoins".into(),
            _ => return None,
        })
    })
}

/// The first step `why` names a reason for, refused with it.
fn refuse_first(
    h: &Harness<Builtin>,
    steps: &[Step],
    why: impl Fn(usize, &Step) -> Option<String>,
) -> Result<(), Refusal> {
    match steps
        .iter()
        .enumerate()
        .find_map(|(i, st)| Some((i, st, why(i, st)?)))
    {
        Some((i, st, why)) => Err(Refusal(format!(
            "step {} ({}): {why}",
            i + 1,
            h.describe(&st.action)
        ))),
        None => Ok(()),
    }
}

/// Why a failover at step `f` is refused: the live failover (Redis's
/// replica promoted) strikes at a worker's gate.
fn failover_why(h: &Harness<Builtin>, steps: &[Step], f: usize) -> String {
    let first = (0..f).find_map(|i| steps[i].grant.then(|| granted(h, &steps[i])).flatten());
    match first.map(|w| (w, last_gate(steps, w, f))) {
        Some((w, None)) => format!(
            "the live failover strikes at a worker's gate, and worker/{w}, granted first, has \
             passed none yet (read_ok, write_sent)"
        ),
        Some((w, Some((point, _)))) => format!(
            "a failover after worker/{w}'s {} (not mapped yet: the live failover is Redis's, \
             its replica promoted)",
            point.name()
        ),
        None => {
            "the live failover strikes at a worker's gate, and no worker holds the lock yet".into()
        }
    }
}

/// The pauses and losses of the path but the stall's own step (`kept`), refused,
/// naming the first.
fn refuse_left(
    h: &Harness<Builtin>,
    steps: &[Step],
    r: &Roles,
    kept: Option<usize>,
) -> Result<(), Refusal> {
    refuse_first(h, steps, |i, st| {
        let why = match st.action {
            _ if Some(i) == kept => return None,
            Action::Lose(_) => "only the stale worker's lost UPDATE has a live form (a drop)",
            Action::Pause(n) if n == NodeId(r.other) => {
                "a pause of the other worker: the live mapping stalls only the stale worker"
            }
            Action::Pause(_) => "a pause that does not span the other worker's operation",
            _ => return None,
        };
        Some(why.into())
    })
}

/// A stall as a live fault, the path's fault step it stands for (a pause,
/// a loss; none for a late delivery or a commit), and a line saying so.
type Stall = (Fault, Option<usize>, String);

/// The stale worker's stall across the other's operation.
fn stall(h: &Harness<Builtin>, steps: &[Step], r: &Roles, rec: &Recipe) -> Result<Stall, Refusal> {
    let me = NodeId(r.stale);
    let worker = WorkerId(r.stale as usize);
    let name = letter(r.stale as usize);
    let next_fire = |from: usize| {
        (from + 1..steps.len())
            .find(|&i| matches!(steps[i].action, Action::Fire { node, .. } if node == me))
    };
    if let Some(d) = r.checked {
        return checked_write(steps, r, rec, d);
    }
    let pause = (0..=r.other_grant).find(|&i| steps[i].action == Action::Pause(me));
    if let Some(p) = pause {
        let ends = next_fire(p).unwrap_or(steps.len());
        if ends > r.other_last {
            let Some((point, at)) = last_gate(steps, r.stale, p) else {
                return Err(Refusal(format!(
                    "step {} ({}): worker/{} pauses before its read returned; the built-in \
                     worker's first gate is read_ok",
                    p + 1,
                    h.describe(&steps[p].action),
                    r.stale
                )));
            };
            let fault = Fault {
                trigger: Trigger::After { worker, point },
                action: LiveAction::Pause {
                    worker,
                    duration_ms: rec.hold_cap_ms,
                    until: PauseEnd::OtherOpDone,
                },
            };
            let line = format!(
                "step {} (pause of worker/{}) -> pause of worker/{name} after {} (step {}) until \
                 worker/{}'s operation is done (the path's steps {}-{})",
                p + 1,
                r.stale,
                point.name(),
                at + 1,
                letter(r.other as usize),
                r.other_grant + 1,
                r.other_last + 1
            );
            return Ok((fault, Some(p), line));
        }
    }
    held_write(h, steps, r, rec)
}

/// The resource checked the stale worker's write at step `d` and commits
/// it last, after the other's write: the live check-then-update's worker
/// stalled between its fence check and its UPDATE until the other's
/// operation is done (`live/check-then-update-pause.toml`).
fn checked_write(steps: &[Step], r: &Roles, rec: &Recipe, d: usize) -> Result<Stall, Refusal> {
    let n = steps.len();
    let other_write = (d + 1..n).find(|&j| {
        matches!(steps[j].action, Action::Deliver(p)
            if p.from == NodeId(r.other) && p.msg.name() == "write")
    });
    let (true, Some(j)) = (rec.write == WriteKind::CheckThenUpdate, other_write) else {
        return Err(Refusal(format!(
            "step {n}: the resource commits worker/{}'s write checked at step {}, which only a \
             check-then-update recipe with the other's write checked in between has a form for",
            r.stale,
            d + 1
        )));
    };
    let worker = WorkerId(r.stale as usize);
    let fault = Fault {
        trigger: Trigger::After {
            worker,
            point: Point::FenceChecked,
        },
        action: LiveAction::Pause {
            worker,
            duration_ms: rec.hold_cap_ms,
            until: PauseEnd::OtherOpDone,
        },
    };
    let line = format!(
        "step {n} (the resource commits worker/{}'s write, checked at step {}, after worker/{}'s \
         write arrived at step {}) -> pause of worker/{} after fence_checked until worker/{}'s \
         operation is done",
        r.stale,
        d + 1,
        r.other,
        j + 1,
        letter(r.stale as usize),
        letter(r.other as usize)
    );
    Ok((fault, None, line))
}

/// The stale worker's write held in flight, or lost, across the other's
/// operation; else what holds it instead, refused.
fn held_write(
    h: &Harness<Builtin>,
    steps: &[Step],
    r: &Roles,
    rec: &Recipe,
) -> Result<Stall, Refusal> {
    let me = NodeId(r.stale);
    let worker = WorkerId(r.stale as usize);
    let name = letter(r.stale as usize);
    let sent_at = |p: &crate::codecheck::state::Packet| {
        (0..steps.len()).rfind(|&i| steps[i].sent.contains(p))
    };
    for (i, st) in steps.iter().enumerate() {
        let (p, lost) = match st.action {
            Action::Deliver(p) => (p, false),
            Action::Lose(p) => (p, true),
            _ => continue,
        };
        let Some(s) = sent_at(&p).filter(|&s| s < r.other_grant) else {
            continue;
        };
        if p.from != me || (!lost && i <= r.other_last) {
            continue;
        }
        if p.msg.name() != "write" {
            return Err(Refusal(format!(
                "step {} ({}): worker/{}'s {} is held from step {} past worker/{}'s grant; the \
                 built-in worker's only proxied message is its UPDATE",
                i + 1,
                h.describe(&st.action),
                r.stale,
                p.msg.name(),
                s + 1,
                r.other
            )));
        }
        let (mode, what) = match lost {
            true => (
                ProxyMode::Drop {
                    ms: rec.hold_cap_ms,
                },
                "drop",
            ),
            false => (
                ProxyMode::Hold {
                    ms: rec.hold_cap_ms,
                },
                "delay",
            ),
        };
        let fault = Fault {
            trigger: Trigger::Passing,
            action: LiveAction::Net {
                worker,
                message: NetMessage::Update,
                mode,
                until: PauseEnd::OtherOpDone,
            },
        };
        let line = format!(
            "step {} ({} of worker/{}'s write sent at step {}) -> {what} of worker/{name}'s \
             UPDATE until worker/{}'s operation is done (the path's steps {}-{})",
            i + 1,
            if lost { "loss" } else { "late delivery" },
            r.stale,
            s + 1,
            letter(r.other as usize),
            r.other_grant + 1,
            r.other_last + 1
        );
        return Ok((fault, lost.then_some(i), line));
    }
    Err(Refusal(format!(
        "nothing the live mode can do stalls worker/{} across worker/{}'s operation (steps \
         {}-{}): no pause of it, no write of it held or lost",
        r.stale,
        r.other,
        r.other_grant + 1,
        r.other_last + 1
    )))
}

/// The failover step of a path whose violation is its last step's grant
/// carrying a token an earlier grant carried (incr-beside-lease: the
/// primary's INCR not yet replicated when its replica was promoted).
fn reissued_after_failover(steps: &[Step], c: &Counterexample) -> Option<usize> {
    let last = steps.last()?;
    if c.finding.kind != ViolationKind::TokenOrder || !last.grant {
        return None;
    }
    (steps.iter()).position(|st| matches!(st.action, Action::Failover { .. }))
}

/// A reissued token after failover `f` as the live failover (Redis's
/// primary SIGKILLed, its replica — whose replication link the harness cut
/// before the trial — promoted) struck at the first holder's last built-in
/// gate before the failover. When the holder passed none yet (the path
/// fails over right after its grant), at its first, `read_ok`, which the
/// built-in worker reaches right after its grant: what the path needs is
/// order, the failover after the holder's grant and before the other
/// worker's acquire, and the other starts after the holder's grant (a
/// start gap later). The path's other faults have no place in it: refused.
fn failover_plan(
    h: &Harness<Builtin>,
    steps: &[Step],
    rec: Recipe,
    f: usize,
) -> Result<LivePlan, Refusal> {
    refuse_first(h, steps, |i, st| match st.action {
        Action::Failover { .. } if i == f => None,
        Action::Deliver(_) | Action::Fire { .. } => None,
        _ => Some("a path whose token is reissued after a failover maps only that failover".into()),
    })?;
    // The first grant before the failover: its step and its worker.
    let holder = (0..f).find_map(|i| steps[i].grant.then(|| Some((i, granted(h, &steps[i])?)))?);
    let n = steps.len();
    let (Some((holder_grant, w)), Some(o)) = (holder, granted(h, &steps[n - 1])) else {
        return Err(Refusal(failover_why(h, steps, f)));
    };
    if w == o {
        return Err(Refusal(format!(
            "step {n}: worker/{w} is granted again; the live mapping pairs two workers"
        )));
    }
    let (point, moved) = match last_gate(steps, w, f) {
        Some((point, at)) => (point, format!("(step {})", at + 1)),
        None => (
            Point::ReadOk,
            "(moved: the path fails over before it; the built-in worker reads right after its \
             grant, and what the path needs is the failover after that grant and before the \
             other's acquire)"
                .to_string(),
        ),
    };
    let worker = WorkerId(w as usize);
    let mut mapped = vec![format!(
        "step {} ({}) -> failover after worker/{}'s {} {moved}; worker/{o}'s grant at step {n} \
         reissues the token",
        f + 1,
        h.describe(&steps[f].action),
        letter(w as usize),
        point.name()
    )];
    let workers = start_order(steps, &rec, (w, holder_grant), o, &mut mapped);
    Ok(LivePlan {
        recipe: rec,
        workers,
        faults: vec![Fault {
            trigger: Trigger::After { worker, point },
            action: LiveAction::Failover,
        }],
        request_timeout_ms: rec.request_timeout_ms,
        find: ViolationKind::TokenOrder,
        mapped,
    })
}

/// The workers in `[[worker]]` order: `first`, granted at its step, starts
/// at once; `other` starts after `first`'s grant (a start gap later) when
/// the path starts it after that grant, which `mapped` then says.
fn start_order(
    steps: &[Step],
    rec: &Recipe,
    (first, first_grant): (u16, usize),
    other: u16,
    mapped: &mut Vec<String>,
) -> Vec<(String, u64, Option<usize>)> {
    let other_starts = (steps.iter())
        .position(|st| st.actor == Some(NodeId(other)))
        .unwrap_or(0);
    let after_grant = other_starts > first_grant;
    let mut workers = vec![(String::new(), 0, None); 2];
    workers[first as usize] = (letter(first as usize), 0, None);
    workers[other as usize] = (
        letter(other as usize),
        if after_grant { rec.start_gap_ms } else { 0 },
        after_grant.then_some(first as usize),
    );
    if after_grant {
        mapped.push(format!(
            "worker/{other} starts at step {}, after worker/{first}'s grant (step {}) -> worker/{} \
             starts after worker/{}:lock_granted",
            other_starts + 1,
            first_grant + 1,
            letter(other as usize),
            letter(first as usize)
        ));
    }
    workers
}

/// `worker/i`'s name in the live scenario: A, B, C.
pub fn letter(i: usize) -> String {
    char::from(b'A' + (i as u8 % 26)).to_string()
}

/// The live scenario's parts for counterexample `c` of `kind` (`fence`:
/// its resource checks tokens), or why it has none.
pub fn plan(
    h: &Harness<Builtin>,
    kind: ProtocolKind,
    fence: bool,
    c: &Counterexample,
) -> Result<LivePlan, Refusal> {
    let rec = recipe(kind, fence).map_err(Refusal)?;
    let steps = replay(h, c)?;
    if let Some(f) = reissued_after_failover(&steps, c) {
        return failover_plan(h, &steps, rec, f);
    }
    refuse_unmapped(h, &steps)?;
    let r = roles(h, &steps)?;
    let (fault, kept, line) = stall(h, &steps, &r, &rec)?;
    refuse_left(h, &steps, &r, kept)?;
    let mut mapped = vec![line];
    let workers = start_order(
        steps.as_slice(),
        &rec,
        (r.stale, r.stale_grant),
        r.other,
        &mut mapped,
    );
    let request_timeout_ms = match fault.action {
        LiveAction::Net {
            mode: ProxyMode::Hold { ms },
            ..
        } => rec.request_timeout_ms.max(ms + 1_000),
        _ => rec.request_timeout_ms,
    };
    Ok(LivePlan {
        recipe: rec,
        workers,
        faults: vec![fault],
        request_timeout_ms,
        find: c.finding.kind,
        mapped,
    })
}
