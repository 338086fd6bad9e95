//! liveness: a worker that is alive at the end of the run but never
//! finished its workload — the run hit `max_time_ms`, or nothing was left
//! to happen (every waiter stuck: a lock nobody will release, a takeover
//! that never comes, a deadlock). A worker that crashed and stayed down, or
//! is still paused when the run ends (a pause the fault schedule never
//! lifted), is not a liveness failure of the protocol: nothing it could
//! do would have finished its work. Evidence: the worker's last
//! record before the end, and the `unfinished` record. The violation's key
//! is that last record's key (a multi-lock worker stuck in a deadlock is
//! named with the lock it waits for).

use super::node_map::NodeMap;
use super::{Found, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Default)]
pub struct Liveness {
    /// node -> seq and key of its last record
    last: NodeMap<(u64, Option<u16>)>,
    down: NodeMap<()>,
}

impl Liveness {
    pub fn clear(&mut self) {
        let Liveness { last, down } = self;
        last.clear();
        down.clear();
    }

    pub fn observe(&mut self, h: &History, e: &Event, out: &mut Found) {
        match e.kind {
            Kind::Crash | Kind::Pause => {
                self.down.insert(e.node, ());
            }
            Kind::Restart | Kind::Resume => {
                self.down.remove(e.node);
            }
            Kind::Unfinished if !self.down.contains(e.node) => {
                let last = self.last.get(e.node).copied();
                let mut evidence: Vec<u64> = last.map(|(seq, _)| seq).into_iter().collect();
                evidence.push(e.seq);
                out.push(
                    ViolationKind::Liveness,
                    e.key.or(last.and_then(|(_, key)| key)).unwrap_or(0),
                    evidence,
                    || {
                        format!(
                            "{} is alive but never finished its workload (run ended at {})",
                            h.node_name(e.node),
                            crate::history::fmt_time(e.t_true_ns).trim()
                        )
                    },
                );
            }
            _ => {}
        }
        if e.kind != Kind::Unfinished {
            self.last.insert(e.node, (e.seq, e.key));
        }
    }
}
