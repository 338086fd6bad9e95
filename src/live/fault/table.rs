//! A fault in words: as the scenario file spells it (a `[[fault]]` table:
//! what the live search writes for a finding and the nemesis reports of
//! its schedule, read back by the one loader), and as a report says it.
//! Worker names come from the scenario: a fault holds only their indices.

use super::{Action, Fault, NetMessage, PauseEnd, Point, Target, Trigger, WorkerId};
use crate::live::proxy::ProxyMode;

impl Fault {
    /// The fault's `kind` in a scenario file.
    pub fn kind_name(&self) -> &'static str {
        match self.action {
            Action::Pause { .. } | Action::SlowMember { by_ms: None, .. } => "pause",
            Action::Crash { .. } => "crash",
            Action::Failover => "failover",
            Action::Net { mode, .. } => match mode {
                ProxyMode::Hold { .. } => "delay",
                ProxyMode::Drop { .. } => "drop",
                ProxyMode::Cut => "cut",
            },
            Action::Partition { .. } => "partition",
            Action::SlowMember { by_ms: Some(_), .. } => "delay",
            Action::CutLock { .. } => "cut",
        }
    }

    /// The `node` it names.
    fn node(&self, names: &[String]) -> String {
        let worker = |w: WorkerId| format!("worker/{}", name(names, w));
        match self.action {
            Action::Pause { worker: w, .. }
            | Action::Net { worker: w, .. }
            | Action::CutLock { worker: w, .. }
            | Action::Crash {
                target: Target::Worker(w),
                ..
            } => worker(w),
            Action::Crash {
                target: Target::RedisPrimary,
                ..
            } => "coord/0".into(),
            Action::Crash {
                target: Target::Member(m),
                ..
            }
            | Action::Partition { member: m, .. }
            | Action::SlowMember { member: m, .. } => m.to_string(),
            // A failover names the worker whose step it follows.
            Action::Failover => match self.trigger {
                Trigger::After { worker: w, .. } => worker(w),
                _ => "coord/0".into(),
            },
        }
    }

    /// The protocol point it follows as `after` spells it: the point alone
    /// when it is the node's own worker's, else `worker/B:point`.
    fn after(&self, names: &[String], worker: WorkerId, point: Point) -> String {
        let own = self.worker().or(match self.action {
            Action::Failover => Some(worker),
            _ => None,
        });
        match own == Some(worker) {
            true => point.name().to_string(),
            false => format!("worker/{}:{}", name(names, worker), point.name()),
        }
    }

    /// The fault as a `[[fault]]` table (also the nemesis's JSON of it).
    pub fn table(&self, names: &[String]) -> toml::Table {
        let mut t = toml::Table::new();
        let mut put = |k: &str, v: toml::Value| {
            t.insert(k.to_string(), v);
        };
        let ms = |v: u64| toml::Value::Integer(v as i64);
        put("kind", self.kind_name().into());
        put("node", self.node(names).into());
        match self.trigger {
            Trigger::After { worker, point } => {
                put("after", self.after(names, worker, point).into())
            }
            Trigger::AtMs(at) => put("at_ms", ms(at)),
            Trigger::Passing => {}
        }
        match self.action {
            Action::Pause {
                duration_ms, until, ..
            } => {
                put("duration_ms", ms(duration_ms));
                if until == PauseEnd::OtherOpDone {
                    put("until", "other_op_done".into());
                }
            }
            Action::Partition { duration_ms, .. } => put("duration_ms", ms(duration_ms)),
            Action::Crash {
                restart_after_ms, ..
            } => {
                if let Some(r) = restart_after_ms {
                    put("restart_after_ms", ms(r));
                }
            }
            Action::Failover => {}
            Action::Net {
                message,
                mode,
                until,
                ..
            } => {
                put("message", message.name().into());
                if let ProxyMode::Hold { ms: d } | ProxyMode::Drop { ms: d } = mode {
                    put("duration_ms", ms(d));
                }
                if until == PauseEnd::OtherOpDone {
                    put("until", "other_op_done".into());
                }
            }
            Action::SlowMember {
                by_ms: None,
                for_ms,
                ..
            } => put("duration_ms", ms(for_ms)),
            Action::SlowMember {
                by_ms: Some(by),
                for_ms,
                ..
            } => {
                put("by_ms", ms(by));
                put("for_ms", ms(for_ms));
            }
            Action::CutLock { refuse_ms, .. } => {
                put("message", "lock".into());
                put("duration_ms", ms(refuse_ms));
            }
        }
        t
    }

    /// When it strikes, for a label: "after read_ok" (its own worker's
    /// point), "after worker/B:read_ok", "at 40 ms".
    fn when(&self, names: &[String]) -> String {
        match self.trigger {
            Trigger::After { worker, point } => {
                let own = self.worker() == Some(worker);
                match own {
                    true => format!("after {}", point.name()),
                    false => format!("after worker/{}:{}", name(names, worker), point.name()),
                }
            }
            Trigger::AtMs(at) => format!("at {at} ms"),
            Trigger::Passing => String::new(),
        }
    }

    /// One line for a report.
    pub fn label(&self, names: &[String]) -> String {
        let (node, when) = (self.node(names), self.when(names));
        let restart = |r: Option<u64>| {
            r.map_or("no restart".to_string(), |ms| {
                format!("restart after {ms} ms")
            })
        };
        match self.action {
            Action::Pause {
                duration_ms,
                until: PauseEnd::Elapsed,
                ..
            } => format!("pause {node} {when} for {duration_ms} ms"),
            Action::Pause { duration_ms, .. } => {
                format!(
                    "pause {node} {when} until another worker's write (at most {duration_ms} ms)"
                )
            }
            Action::Crash {
                target: Target::Member(_),
                restart_after_ms,
                ..
            } => match restart_after_ms {
                Some(ms) => format!("crash {node} {when} ({ms} ms)"),
                None => format!("crash {node} {when} (no restart)"),
            },
            Action::Crash {
                restart_after_ms, ..
            } => format!("crash {node} {when}, {}", restart(restart_after_ms)),
            Action::Failover => format!("failover {when}"),
            Action::Net {
                message,
                mode,
                until: PauseEnd::OtherOpDone,
                ..
            } => format!(
                "{} until another worker's operation ends",
                net_label(&node, message, mode, self.at_ms()).replacen(" for ", " for at most ", 1)
            ),
            Action::Net { message, mode, .. } => net_label(&node, message, mode, self.at_ms()),
            Action::Partition { duration_ms, .. } => {
                format!("partition {node} {when} ({duration_ms} ms)")
            }
            Action::SlowMember {
                by_ms: None,
                for_ms,
                ..
            } => format!("pause {node} {when} ({for_ms} ms)"),
            Action::SlowMember {
                by_ms: Some(by),
                for_ms,
                ..
            } => format!("delay {node}'s links by {by} ms {when} ({for_ms} ms)"),
            Action::CutLock { refuse_ms, .. } => {
                format!("cut {node}'s lock connection {when}, refused {refuse_ms} ms")
            }
        }
    }

    /// The fault as a user's program's trial names it when it never
    /// struck: "pause after read_ok", "delay at fence_checked", "crash
    /// at_ms 40", "delay of its UPDATE at_ms 30" (a stalled link).
    pub fn in_program(&self) -> String {
        let what = self.kind_name();
        match (self.trigger, self.action) {
            (Trigger::AtMs(ms), Action::Net { message, .. }) => {
                format!("{what} of its {} at_ms {ms}", message.label())
            }
            (Trigger::AtMs(ms), _) => format!("{what} at_ms {ms}"),
            _ => match self.program_point() {
                Some(point) => format!("{what} {}", point.when_text()),
                None => what.to_string(),
            },
        }
    }
}

/// A network fault's label: "delay worker/A's UPDATE for 900 ms", "cut
/// worker/A's connection at its UPDATE", "stall worker/A's lock reply link
/// at 40 ms for 300 ms".
fn net_label(node: &str, message: NetMessage, mode: ProxyMode, at_ms: Option<u64>) -> String {
    let m = message.label();
    match (mode, at_ms) {
        (ProxyMode::Hold { ms } | ProxyMode::Drop { ms }, Some(at)) => {
            format!("stall {node}'s {m} link at {at} ms for {ms} ms")
        }
        (ProxyMode::Cut, _) => format!("cut {node}'s connection at its {m}"),
        (ProxyMode::Hold { ms }, None) => format!("delay {node}'s {m} for {ms} ms"),
        (ProxyMode::Drop { ms }, None) => format!("drop {node}'s {m} for {ms} ms"),
    }
}

fn name(names: &[String], w: WorkerId) -> &str {
    names.get(w.0).map_or("?", String::as_str)
}
