//! token_order: in issue order, a later grant whose token is ≤ an earlier
//! grant's token (for the same key). A duplicate or regressed token means
//! the resource can no longer tell the newer holder from the older one —
//! the INCR-beside-a-lease failover bug.

use std::collections::BTreeMap;

use super::{Violation, ViolationKind};
use crate::history::{Event, History, Kind};

#[derive(Default)]
pub struct TokenOrder {
    /// key -> (highest token issued, its grant_issued seq, its grant id).
    max: BTreeMap<u16, (u64, u64, u64)>,
    seen_grants: std::collections::BTreeSet<u64>,
}

impl TokenOrder {
    pub fn observe(&mut self, h: &History, e: &Event, out: &mut Vec<Violation>) {
        if e.kind != Kind::GrantIssued {
            return;
        }
        let (Some(key), Some(token), Some(grant)) = (e.key, e.token, e.grant_id) else {
            return;
        };
        if !self.seen_grants.insert(grant) {
            return;
        }
        match self.max.get(&key).copied() {
            Some((prev, prev_seq, prev_grant)) if token <= prev => {
                out.push(Violation {
                    kind: ViolationKind::TokenOrder,
                    key,
                    evidence: vec![prev_seq, e.seq],
                    explanation: format!(
                        "{} issued grant {grant} with token {token} after grant {prev_grant} had token {prev}",
                        h.node_name(e.node)
                    ),
                });
            }
            Some((prev, ..)) if token < prev => unreachable!(),
            _ => {
                self.max.insert(key, (token, e.seq, grant));
            }
        }
    }
}
