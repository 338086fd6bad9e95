//! A scenario's faults as a user's program can be given them: each bound
//! to a worker and to a point in its conversation that the proxies can see
//! (its grant, its read's answer, its UPDATE, the UPDATE's answer) or to a time, with what to do
//! there. Faults a program cannot be given — a failover, a crash of the
//! harness's Redis, which the built-in worker's gate times — are refused
//! here, before any server is touched.

use anyhow::{bail, Context, Result};

use crate::live::proxy::ProxyMode;
use crate::live::scenario::{CrashTarget, LiveScenario, NetMessage, Trigger};

/// Where in the program's conversation a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The server's account shows the lock granted to it (before the
    /// program sees the reply that followed the grant).
    Granted,
    /// Its read of the document returned (before the program sees the row).
    Read,
    /// Its UPDATE reached the proxy (before it is forwarded).
    Write,
    /// PostgreSQL's answer to its UPDATE reached the proxy (the write is
    /// applied; before the program sees the answer).
    Acked,
}

impl Anchor {
    /// The scenario's protocol point names (the built-in worker's, plus
    /// `lock_granted` and `write_acked`).
    pub fn from_point(point: &str) -> Option<Anchor> {
        match point {
            "lock_granted" => Some(Anchor::Granted),
            "read_ok" => Some(Anchor::Read),
            "fence_checked" => Some(Anchor::Write),
            "write_acked" => Some(Anchor::Acked),
            _ => None,
        }
    }

    /// When a fault anchored here strikes, in a report's words.
    pub fn when_text(self) -> String {
        match self {
            Anchor::Write => "at fence_checked".into(),
            a => format!("after {}", a.point()),
        }
    }

    /// The protocol point's name (the inverse of [`Anchor::from_point`]).
    pub fn point(self) -> &'static str {
        match self {
            Anchor::Granted => "lock_granted",
            Anchor::Read => "read_ok",
            Anchor::Write => "fence_checked",
            Anchor::Acked => "write_acked",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// SIGSTOP for the duration (the bytes wait with the program).
    Pause,
    /// Hold the bytes, program running.
    Delay,
    /// From the fault's time on, for its duration, every `message` of the
    /// worker that reaches its proxy waits for the window's end (a stalled
    /// link): consulted by the proxies, never fired on its own.
    Stall { message: NetMessage },
    /// Lose the UPDATE's request; reset its connection `duration_ms` later.
    Drop,
    /// Close the connection instead of forwarding the UPDATE.
    Cut,
    /// SIGKILL of the program's process group; the same command, with the
    /// same environment, is started again this long after (None: it stays down).
    Crash { restart_after_ms: Option<u64> },
}

/// When a fault strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum When {
    At(Anchor),
    /// Ms after the trial started (its first lock request let through).
    AtMs(u64),
}

#[derive(Clone, Debug)]
pub(super) struct Fault {
    pub worker: usize,
    pub when: When,
    pub action: Action,
    pub duration_ms: u64,
}

impl Fault {
    /// What a drop or cut loses: the UPDATE, the lock reply that
    /// carried the grant, or PostgreSQL's answer to the read or the UPDATE.
    pub(super) fn message(&self) -> &'static str {
        let message = match (self.action, self.when) {
            (Action::Stall { message }, _) => message,
            (_, When::At(Anchor::Granted)) => NetMessage::LockReply,
            (_, When::At(Anchor::Read)) => NetMessage::ReadReply,
            (_, When::At(Anchor::Acked)) => NetMessage::UpdateReply,
            _ => NetMessage::Update,
        };
        message.label()
    }

    /// The fault as the scenario named it, for a message.
    pub(super) fn describe(&self) -> String {
        let what = match self.action {
            Action::Pause => "pause",
            Action::Delay => "delay",
            Action::Stall { .. } => "delay",
            Action::Drop => "drop",
            Action::Cut => "cut",
            Action::Crash { .. } => "crash",
        };
        match self.when {
            When::At(anchor) => format!("{what} {}", anchor.when_text()),
            When::AtMs(ms) if matches!(self.action, Action::Stall { .. }) => {
                format!("{what} of its {} at_ms {ms}", self.message())
            }
            When::AtMs(ms) => format!("{what} at_ms {ms}"),
        }
    }
}

/// The scenario's faults as client faults; those a user's program cannot
/// be given (a failover, or a crash of the harness's Redis, which the
/// built-in worker's gate times) are refused.
pub(super) fn faults_of(s: &LiveScenario) -> Result<Vec<Fault>> {
    let index = |name: &str| s.workers.iter().position(|w| w.name == name).unwrap_or(0);
    let anchor = |point: &str| {
        Anchor::from_point(point)
            .with_context(|| format!("protocol point {point:?} has no client anchor"))
    };
    if !s.faults.failovers.is_empty() {
        bail!("{}: failover faults need the built-in worker; they are not supported with --worker-cmd", s.path.display());
    }
    // Not yet timed for a user's program: refused, never silently left out.
    let member_crash = s
        .faults
        .crashes
        .iter()
        .any(|c| matches!(c.target, CrashTarget::Member(_)));
    if member_crash
        || !s.faults.partitions.is_empty()
        || !s.faults.member_delays.is_empty()
        || !s.faults.lock_cuts.is_empty()
    {
        bail!("{}: faults of a cluster member (crash, partition, delay, pause) need the built-in worker; they are not supported with --worker-cmd yet", s.path.display());
    }
    let mut faults = Vec::new();
    for p in &s.faults.pauses {
        faults.push(Fault {
            worker: index(&p.worker),
            when: When::At(anchor(&p.after)?),
            action: Action::Pause,
            duration_ms: p.duration_ms,
        });
    }
    for p in &s.faults.timed_pauses {
        faults.push(Fault {
            worker: index(&p.worker),
            when: When::AtMs(p.at_ms),
            action: Action::Pause,
            duration_ms: p.duration_ms,
        });
    }
    for h in &s.faults.net {
        let (action, duration_ms) = match h.mode {
            ProxyMode::Hold { ms } => (Action::Delay, ms),
            ProxyMode::Drop { ms } => (Action::Drop, ms),
            ProxyMode::Cut => (Action::Cut, 0),
        };
        if let Some(ms) = h.at_ms {
            // The loader lets `at_ms` through only on a delay.
            debug_assert_eq!(action, Action::Delay);
            faults.push(Fault {
                worker: index(&h.worker),
                when: When::AtMs(ms),
                action: Action::Stall { message: h.message },
                duration_ms,
            });
            continue;
        }
        let anchor = match h.message {
            NetMessage::Update => Anchor::Write,
            NetMessage::LockReply => Anchor::Granted,
            NetMessage::ReadReply => Anchor::Read,
            NetMessage::UpdateReply => Anchor::Acked,
        };
        if anchor == Anchor::Granted && action != Action::Delay && s.lock.cluster().is_some() {
            bail!(
                "{}: a drop or cut of the lock reply acts on a Redis lock; on {} only a delay of it is applied",
                s.path.display(),
                s.lock.name()
            );
        }
        faults.push(Fault {
            worker: index(&h.worker),
            when: When::At(anchor),
            action,
            duration_ms,
        });
    }
    for c in &s.faults.crashes {
        let w = match &c.target {
            CrashTarget::Worker(w) => w,
            CrashTarget::RedisPrimary => bail!(
                "{}: a crash of coord/0 needs the built-in worker; with --worker-cmd a worker can be crashed",
                s.path.display()
            ),
            CrashTarget::Member(m) => bail!(
                "{}: a crash of {m} needs the built-in worker; with --worker-cmd a worker can be crashed",
                s.path.display()
            ),
        };
        let (worker, when) = match &c.trigger {
            // `after = "worker/B:read_ok"` crashes this worker when B reaches it.
            Trigger::After { worker, point } => (index(worker), When::At(anchor(point)?)),
            Trigger::AtMs(ms) => (index(w), When::AtMs(*ms)),
        };
        if index(w) != worker {
            bail!(
                "{}: with --worker-cmd a crash follows the crashed worker's own step (after = \"{}\")",
                s.path.display(),
                match &c.trigger {
                    Trigger::After { point, .. } => point.as_str(),
                    Trigger::AtMs(_) => "",
                }
            );
        }
        faults.push(Fault {
            worker,
            when,
            action: Action::Crash {
                restart_after_ms: c.restart_after_ms,
            },
            duration_ms: 0,
        });
    }
    Ok(faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(faults: &str) -> LiveScenario {
        let src = format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\nworker_cmd = \"true\"\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n{faults}\n[expect]\n"
        );
        crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml")).unwrap()
    }

    #[test]
    fn a_fault_on_the_lock_reply_strikes_at_the_grant_and_one_on_the_update_at_the_write() {
        let s = scenario(
            "[[fault]]\nkind = \"drop\"\nnode = \"worker/A\"\nmessage = \"lock_reply\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 7\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(When, Action, &str)> =
            f.iter().map(|f| (f.when, f.action, f.message())).collect();
        assert_eq!(
            got,
            vec![
                (When::At(Anchor::Granted), Action::Drop, "lock reply"),
                (When::At(Anchor::Write), Action::Delay, "UPDATE"),
            ]
        );
    }

    #[test]
    fn faults_on_postgresqls_answers_strike_when_the_read_and_the_update_are_answered() {
        let s = scenario(
            "[[fault]]\nkind = \"delay\"\nnode = \"worker/A\"\nmessage = \"read_reply\"\nduration_ms = 900\n\
             [[fault]]\nkind = \"drop\"\nnode = \"worker/B\"\nmessage = \"update_reply\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"pause\"\nnode = \"worker/A\"\nafter = \"write_acked\"\nduration_ms = 600\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(usize, When, Action, &str, String)> = f
            .iter()
            .map(|f| (f.worker, f.when, f.action, f.message(), f.describe()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    0,
                    When::At(Anchor::Acked),
                    Action::Pause,
                    "UPDATE reply",
                    "pause after write_acked".into()
                ),
                (
                    0,
                    When::At(Anchor::Read),
                    Action::Delay,
                    "read reply",
                    "delay after read_ok".into()
                ),
                (
                    1,
                    When::At(Anchor::Acked),
                    Action::Drop,
                    "UPDATE reply",
                    "drop after write_acked".into()
                ),
            ]
        );
        // The built-in worker's PostgreSQL link carries no reply fault, and
        // it has no `write_acked` point.
        for fault in [
            "kind = \"delay\"\nnode = \"worker/A\"\nmessage = \"read_reply\"\nduration_ms = 9",
            "kind = \"pause\"\nnode = \"worker/A\"\nafter = \"write_acked\"\nduration_ms = 9",
        ] {
            let src = format!(
                "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
                 lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
                 [[worker]]\nname = \"A\"\n[[fault]]\n{fault}\n[expect]\n"
            );
            let e = crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("only a user's program") || e.contains("write_acked"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_pause_at_a_time_is_a_timed_fault_of_a_program_and_bad_input_for_the_built_in_worker() {
        let s = scenario(
            "[[fault]]\nkind = \"pause\"\nnode = \"worker/B\"\nat_ms = 40\nduration_ms = 900\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(usize, When, Action, u64)> = f
            .iter()
            .map(|f| (f.worker, f.when, f.action, f.duration_ms))
            .collect();
        assert_eq!(got, vec![(1, When::AtMs(40), Action::Pause, 900)]);
        let built_in = "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
             [[worker]]\nname = \"A\"\n[[fault]]\nkind = \"pause\"\nnode = \"worker/A\"\nat_ms = 5\nduration_ms = 9\n[expect]\n";
        let e = crate::live::scenario::parse(built_in, std::path::Path::new("live/t.toml"))
            .unwrap_err();
        assert!(e.to_string().contains("needs a user's program"), "{e}");
    }

    #[test]
    fn a_delay_at_a_time_stalls_the_programs_link_and_is_bad_input_for_the_built_in_worker() {
        let s = scenario(
            "[[fault]]\nkind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 30\nduration_ms = 700\n\
             [[fault]]\nkind = \"delay\"\nnode = \"worker/B\"\nmessage = \"lock_reply\"\nat_ms = 0\nduration_ms = 400\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(usize, When, Action, u64, String)> = f
            .iter()
            .map(|f| (f.worker, f.when, f.action, f.duration_ms, f.describe()))
            .collect();
        let stall = |message| Action::Stall { message };
        assert_eq!(
            got,
            vec![
                (
                    0,
                    When::AtMs(30),
                    stall(NetMessage::Update),
                    700,
                    "delay of its UPDATE at_ms 30".into()
                ),
                (
                    1,
                    When::AtMs(0),
                    stall(NetMessage::LockReply),
                    400,
                    "delay of its lock reply at_ms 0".into()
                ),
            ]
        );
        let file = |fault: &str| {
            format!(
                "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
                 lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
                 [[worker]]\nname = \"A\"\n[[fault]]\n{fault}\n[expect]\n"
            )
        };
        let parse = |src: String| {
            crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = parse(file("kind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 5\nduration_ms = 9"));
        assert!(
            e.contains("needs a user's program") && e.contains("live/t.toml:"),
            "{e}"
        );
        let e = parse(file("kind = \"drop\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 5\nduration_ms = 9"));
        assert!(e.contains("a drop or cut acts on its message"), "{e}");
    }

    #[test]
    fn a_lock_reply_fault_without_a_users_program_is_bad_input() {
        let src = "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
             [[worker]]\nname = \"A\"\n[[fault]]\nkind = \"cut\"\nnode = \"worker/A\"\nmessage = \"lock_reply\"\n[expect]\n";
        let e = crate::live::scenario::parse(src, std::path::Path::new("live/t.toml")).unwrap_err();
        assert!(e.to_string().contains("only a user's program"), "{e}");
    }

    #[test]
    fn crashes_drops_and_cuts_of_a_program_are_faults_and_a_redis_crash_is_refused() {
        let s = scenario(
            "[[fault]]\nkind = \"crash\"\nnode = \"worker/A\"\nafter = \"lock_granted\"\nrestart_after_ms = 5\n\
             [[fault]]\nkind = \"crash\"\nnode = \"worker/B\"\nat_ms = 40\n\
             [[fault]]\nkind = \"drop\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"cut\"\nnode = \"worker/B\"\nmessage = \"update\"\n",
        );
        let f = faults_of(&s).unwrap();
        let got: Vec<(usize, When, Action)> =
            f.iter().map(|f| (f.worker, f.when, f.action)).collect();
        assert_eq!(
            got,
            vec![
                (0, When::At(Anchor::Write), Action::Drop),
                (1, When::At(Anchor::Write), Action::Cut),
                (
                    0,
                    When::At(Anchor::Granted),
                    Action::Crash {
                        restart_after_ms: Some(5)
                    }
                ),
                (
                    1,
                    When::AtMs(40),
                    Action::Crash {
                        restart_after_ms: None
                    }
                ),
            ]
        );
        let redis = scenario("[[fault]]\nkind = \"crash\"\nnode = \"coord/0\"\nat_ms = 40\n");
        let err = faults_of(&redis).unwrap_err().to_string();
        assert!(err.contains("coord/0 needs the built-in worker"), "{err}");
    }

    #[test]
    fn a_cluster_members_faults_are_refused_for_a_program_not_left_out() {
        let zk = |fault: &str| {
            let src = format!(
                "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/real-systems/zk-sequential-gc-pause.toml\"\n\
                 lock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 2000\nworker_cmd = \"true\"\n\
                 [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n[[fault]]\n{fault}\n[expect]\n"
            );
            let s =
                crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml")).unwrap();
            faults_of(&s).unwrap_err().to_string()
        };
        let partition = zk("kind = \"partition\"\nnode = \"member/0\"\nafter = \"worker/A:read_ok\"\nduration_ms = 50");
        assert!(
            partition.contains("need the built-in worker"),
            "{partition}"
        );
        let pause = zk("kind = \"pause\"\nnode = \"member/leader\"\nat_ms = 30\nduration_ms = 50");
        assert!(pause.contains("need the built-in worker"), "{pause}");
        let crash = zk("kind = \"crash\"\nnode = \"member/leader\"\nat_ms = 30");
        assert!(crash.contains("need the built-in worker"), "{crash}");
    }
}
