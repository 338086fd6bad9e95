//! wasted_work (informational, never a failure): operations that did their
//! work and then had its result refused — a duplicate job result, a cache
//! fill that lost its compare-and-set, a stale holder's fenced-off update.
//! Counted once per op, at its first `write_rejected`. Under a queue or a
//! best-effort cache lease this is the whole cost of a duplicate: the work
//! was done twice, the data was stored once.

use super::{Info, KindSet};
use crate::history::{Event, Kind};
use crate::lookup::LookupSet;

#[derive(Default)]
pub struct Work {
    wasted_ops: LookupSet<u64>,
}

/// The records [`Work::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[Kind::WriteRejected]);

impl Work {
    pub fn clear(&mut self) {
        let Work { wasted_ops } = self;
        wasted_ops.clear();
    }

    pub fn observe(&mut self, e: &Event, info: &mut Info) {
        if e.kind != Kind::WriteRejected {
            return;
        }
        if let Some(op) = e.op_id {
            if self.wasted_ops.insert(op) {
                info.wasted_work += 1;
            }
        }
    }
}
