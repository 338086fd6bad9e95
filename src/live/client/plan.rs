//! A scenario's faults as a user's program can be given them: each bound
//! to a worker and to a point in its conversation that the proxies can see
//! (its grant, its read's answer, its UPDATE, the UPDATE's answer) or to a
//! time ([`Fault::program_point`], [`Fault::at_ms`]); a cluster member's
//! faults at a time ([`super::members`]). Faults a program cannot be given
//! — a failover, a crash of the harness's Redis, which the built-in
//! worker's gate times, a member's fault after a worker's step — are
//! refused here, before any server is touched.

use anyhow::{bail, Result};

use crate::live::fault::{Action, Fault, NetMessage, Point, Target, Trigger};
use crate::live::proxy::ProxyMode;
use crate::live::scenario::LiveScenario;

/// The scenario's faults (indices into `s.faults`) in the order they
/// strike at one point of a program ([`Fault::program_order`], then the
/// file's); Err: one a user's program cannot be given, refused.
pub(super) fn strike_order(s: &LiveScenario) -> Result<Vec<usize>> {
    if s.faults.iter().any(|f| f.action == Action::Failover) {
        bail!("{}: failover faults need the built-in worker; they are not supported with --worker-cmd", s.path.display());
    }
    // Not yet anchored to a program's steps: refused, never silently left out.
    if s.faults
        .iter()
        .any(|f| f.on_member() && f.at_ms().is_none())
    {
        bail!("{}: a cluster member's fault (crash, partition, delay, pause) after a worker's step needs the built-in worker; with --worker-cmd give it an at_ms", s.path.display());
    }
    let mut order: Vec<usize> = (0..s.faults.len()).collect();
    order.sort_by_key(|&k| s.faults[k].program_order());
    for &k in &order {
        refuse(s, &s.faults[k])?;
    }
    Ok(order)
}

/// Err when a user's program cannot be given this fault.
fn refuse(s: &LiveScenario, f: &Fault) -> Result<()> {
    if let Trigger::After { point, .. } = f.trigger {
        if point == Point::WriteSent {
            bail!(
                "{}: a fault after {:?} (the built-in worker's UPDATE sent) has no point in a user's program's \
                 conversation that fencesim sees; use fence_checked (its UPDATE reaching the proxy) or write_acked",
                s.path.display(),
                point.name()
            );
        }
    }
    match f.action {
        Action::Net {
            message: NetMessage::LockReply,
            mode: ProxyMode::Drop { .. } | ProxyMode::Cut,
            ..
        } if f.trigger == Trigger::Passing && s.lock.cluster().is_some() => bail!(
            "{}: a drop or cut of the lock reply acts on a Redis lock; on {} only a delay of it is applied",
            s.path.display(),
            s.lock.name()
        ),
        Action::Crash {
            target: Target::RedisPrimary,
            ..
        } => bail!(
            "{}: a crash of coord/0 needs the built-in worker; with --worker-cmd a worker can be crashed",
            s.path.display()
        ),
        Action::Crash {
            target: Target::Member(_),
            ..
        } => Ok(()),
        // `after = "worker/B:read_ok"` would crash this worker when B reaches it.
        Action::Crash {
            target: Target::Worker(w),
            ..
        } => match f.trigger {
            Trigger::After { worker, point } if worker != w => bail!(
                "{}: with --worker-cmd a crash follows the crashed worker's own step (after = \"{}\")",
                s.path.display(),
                point.name()
            ),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::fault::WorkerId;

    fn scenario(faults: &str) -> LiveScenario {
        let src = format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\nworker_cmd = \"true\"\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n{faults}\n[expect]\n"
        );
        crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml")).unwrap()
    }

    /// A fault as a program is given it: its worker, its point or time,
    /// its kind, its words.
    type Planned = (usize, Option<Point>, Option<u64>, &'static str, String);

    /// What a program is given, in strike order.
    fn planned(s: &LiveScenario) -> Vec<Planned> {
        strike_order(s)
            .unwrap()
            .iter()
            .map(|&k| {
                let f = &s.faults[k];
                let w = f.worker().map_or(usize::MAX, |w| w.0);
                (
                    w,
                    f.program_point(),
                    f.at_ms(),
                    f.kind_name(),
                    f.in_program(),
                )
            })
            .collect()
    }

    fn parse_error(fault: &str) -> String {
        let src = format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
             [[worker]]\nname = \"A\"\n[[fault]]\n{fault}\n[expect]\n"
        );
        crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_fault_on_the_lock_reply_strikes_at_the_grant_and_one_on_the_update_at_the_write() {
        let s = scenario(
            "[[fault]]\nkind = \"drop\"\nnode = \"worker/A\"\nmessage = \"lock_reply\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 7\n",
        );
        let got: Vec<(Option<Point>, &str, &str)> = strike_order(&s)
            .unwrap()
            .iter()
            .map(|&k| {
                let f = &s.faults[k];
                let Action::Net { message, .. } = f.action else {
                    panic!("{f:?}")
                };
                (f.program_point(), f.kind_name(), message.label())
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(Point::LockGranted), "drop", "lock reply"),
                (Some(Point::FenceChecked), "delay", "UPDATE"),
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
        assert_eq!(
            planned(&s),
            vec![
                (
                    0,
                    Some(Point::WriteAcked),
                    None,
                    "pause",
                    "pause after write_acked".into()
                ),
                (
                    0,
                    Some(Point::ReadOk),
                    None,
                    "delay",
                    "delay after read_ok".into()
                ),
                (
                    1,
                    Some(Point::WriteAcked),
                    None,
                    "drop",
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
            let e = parse_error(fault);
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
        assert_eq!(
            planned(&s),
            vec![(1, None, Some(40), "pause", "pause at_ms 40".into())]
        );
        assert_eq!(s.faults[0].length_ms(300), 900);
        let e = parse_error("kind = \"pause\"\nnode = \"worker/A\"\nat_ms = 5\nduration_ms = 9");
        assert!(e.contains("needs a user's program"), "{e}");
    }

    #[test]
    fn a_delay_at_a_time_stalls_the_programs_link_and_is_bad_input_for_the_built_in_worker() {
        let s = scenario(
            "[[fault]]\nkind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 30\nduration_ms = 700\n\
             [[fault]]\nkind = \"delay\"\nnode = \"worker/B\"\nmessage = \"lock_reply\"\nat_ms = 0\nduration_ms = 400\n",
        );
        assert!(s.faults.iter().all(Fault::is_stall));
        assert_eq!(
            planned(&s),
            vec![
                (
                    0,
                    None,
                    Some(30),
                    "delay",
                    "delay of its UPDATE at_ms 30".into()
                ),
                (
                    1,
                    None,
                    Some(0),
                    "delay",
                    "delay of its lock reply at_ms 0".into()
                ),
            ]
        );
        assert_eq!(s.faults[0].length_ms(300), 700);
        let e = parse_error("kind = \"delay\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 5\nduration_ms = 9");
        assert!(
            e.contains("needs a user's program") && e.contains("live/t.toml:"),
            "{e}"
        );
        let e = parse_error("kind = \"drop\"\nnode = \"worker/A\"\nmessage = \"update\"\nat_ms = 5\nduration_ms = 9");
        assert!(e.contains("a drop or cut acts on its message"), "{e}");
    }

    #[test]
    fn a_lock_reply_fault_without_a_users_program_is_bad_input() {
        let e = parse_error("kind = \"cut\"\nnode = \"worker/A\"\nmessage = \"lock_reply\"");
        assert!(e.contains("only a user's program"), "{e}");
    }

    #[test]
    fn crashes_drops_and_cuts_of_a_program_are_faults_and_a_redis_crash_is_refused() {
        let s = scenario(
            "[[fault]]\nkind = \"crash\"\nnode = \"worker/A\"\nafter = \"lock_granted\"\nrestart_after_ms = 5\n\
             [[fault]]\nkind = \"crash\"\nnode = \"worker/B\"\nat_ms = 40\n\
             [[fault]]\nkind = \"drop\"\nnode = \"worker/A\"\nmessage = \"update\"\nduration_ms = 9\n\
             [[fault]]\nkind = \"cut\"\nnode = \"worker/B\"\nmessage = \"update\"\n",
        );
        let got: Vec<(usize, Option<Point>, Option<u64>, &str)> = planned(&s)
            .into_iter()
            .map(|(w, p, at, kind, _)| (w, p, at, kind))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Some(Point::FenceChecked), None, "drop"),
                (1, Some(Point::FenceChecked), None, "cut"),
                (0, Some(Point::LockGranted), None, "crash"),
                (1, None, Some(40), "crash"),
            ]
        );
        let restarts: Vec<Option<u64>> = s
            .faults
            .iter()
            .filter_map(|f| match f.action {
                Action::Crash {
                    restart_after_ms, ..
                } => Some(restart_after_ms),
                _ => None,
            })
            .collect();
        assert_eq!(restarts, vec![Some(5), None]);
        assert_eq!(s.faults[0].worker(), Some(WorkerId(0)));
        let redis = scenario("[[fault]]\nkind = \"crash\"\nnode = \"coord/0\"\nat_ms = 40\n");
        let err = strike_order(&redis).unwrap_err().to_string();
        assert!(err.contains("coord/0 needs the built-in worker"), "{err}");
    }

    #[test]
    fn a_cluster_members_fault_after_a_step_is_refused_for_a_program_and_one_at_a_time_is_given() {
        let zk = |fault: &str| {
            let src = format!(
                "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/real-systems/zk-sequential-gc-pause.toml\"\n\
                 lock = \"zk-lock\"\nwrite = \"plain\"\nttl_ms = 2000\nworker_cmd = \"true\"\n\
                 [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n[[fault]]\n{fault}\n[expect]\n"
            );
            let s =
                crate::live::scenario::parse(&src, std::path::Path::new("live/t.toml")).unwrap();
            strike_order(&s).map_err(|e| e.to_string())
        };
        let partition = zk("kind = \"partition\"\nnode = \"member/0\"\nafter = \"worker/A:read_ok\"\nduration_ms = 50").unwrap_err();
        assert!(partition.contains("give it an at_ms"), "{partition}");
        let pause = zk("kind = \"pause\"\nnode = \"member/leader\"\nat_ms = 30\nduration_ms = 50");
        assert_eq!(pause, Ok(vec![0]));
        let crash = zk("kind = \"crash\"\nnode = \"member/leader\"\nat_ms = 30");
        assert_eq!(crash, Ok(vec![0]));
    }
}
