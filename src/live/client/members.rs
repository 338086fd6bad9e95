//! A cluster member's faults for a user's program (etcd, ZooKeeper): the
//! leader or a member crashed (SIGKILL, restarted from its data directory
//! after `restart_after_ms`), paused (SIGSTOP for `duration_ms`), its peer
//! messages delayed, or cut off from the others — at `at_ms` after the
//! trial's start (the first lock request let through), fired from the
//! supervise loop by the same fault executor as the built-in worker's, so
//! the program's connections (through their proxies to each member) meet
//! them as they come. Each fault's undoing (restart, SIGCONT, heal) is due
//! at its time, and whatever is still undone when the programs have
//! finished is undone then, before the trial is judged.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::shared::Shared;
use crate::live::fault::executor::{crash_line, MemberSlowdown};
use crate::live::fault::{Action, Target};
use crate::live::locked;
use crate::live::servers::Servers;

/// What a struck member fault leaves to undo.
enum Undo {
    Restart(usize),
    Unslow(MemberSlowdown),
    Heal,
}

/// The trial's timed member faults and what they left to undo.
pub(super) struct MemberFaults {
    /// Indices into the scenario's faults, in strike order.
    timed: Vec<usize>,
    later: Vec<(Instant, Undo)>,
}

impl MemberFaults {
    /// The member faults among `shared`'s (each is timed: the plan refused others).
    pub(super) fn new(shared: &Shared) -> MemberFaults {
        let timed = (shared.order.iter().copied())
            .filter(|&k| shared.faults[k].on_member() && shared.faults[k].at_ms().is_some())
            .collect();
        MemberFaults {
            timed,
            later: Vec::new(),
        }
    }

    /// Strikes the faults whose time has come and undoes those whose end has.
    pub(super) fn tick(
        &mut self,
        shared: &Shared,
        servers: &mut Servers,
        ttl_ms: u64,
        now: Instant,
    ) -> Result<()> {
        let started = *locked(&shared.started);
        for &k in &self.timed {
            let f = &shared.faults[k];
            let (Some(ms), Some(start)) = (f.at_ms(), started) else {
                continue;
            };
            if now < start + Duration::from_millis(ms) || !shared.exec.claim(k) {
                continue;
            }
            let end = Instant::now() + Duration::from_millis(f.length_ms(ttl_ms));
            let exec = &shared.exec;
            let undo = match f.action {
                Action::Crash {
                    target: Target::Member(sel),
                    restart_after_ms,
                } => {
                    let m = exec.crash_member(k, servers, sel)?;
                    exec.note(format!(
                        "{} at {:.1} ms",
                        crash_line(Target::Member(sel), "", restart_after_ms),
                        exec.since_start_ms()
                    ));
                    restart_after_ms
                        .map(|ms| (Instant::now() + Duration::from_millis(ms), Undo::Restart(m)))
                }
                Action::SlowMember { .. } => {
                    let undo = exec.slow_member((k, f), servers, "")?;
                    Some((end, Undo::Unslow(undo)))
                }
                Action::Partition {
                    member,
                    duration_ms,
                } => {
                    exec.partition(k, servers, (member, duration_ms), &format!("at {ms} ms"))?;
                    Some((end, Undo::Heal))
                }
                _ => bail!("fault {k} is no member's"),
            };
            self.later.extend(undo);
        }
        let (due, not): (Vec<_>, Vec<_>) = self.later.drain(..).partition(|(at, _)| *at <= now);
        self.later = not;
        for (_, undo) in due {
            undo_one(shared, servers, undo)?;
        }
        Ok(())
    }

    /// Undoes every fault still in force (the programs finished first).
    pub(super) fn finish(&mut self, shared: &Shared, servers: &mut Servers) -> Result<()> {
        self.later.sort_by_key(|(at, _)| *at);
        for (_, undo) in std::mem::take(&mut self.later) {
            undo_one(shared, servers, undo)?;
        }
        Ok(())
    }
}

fn undo_one(shared: &Shared, servers: &mut Servers, undo: Undo) -> Result<()> {
    match undo {
        Undo::Restart(m) => shared.exec.restart_member(servers, m)?,
        Undo::Unslow(u) => shared.exec.unslow_member(servers, u),
        Undo::Heal => shared.exec.heal(servers),
    }
    Ok(())
}
