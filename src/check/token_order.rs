//! token_order: two grants of a key the resource cannot tell apart, or
//! cannot order by their tokens. On a key ranked by issue order (see
//! [`super::generations`]): a grant, in issue order, whose token is ≤ an
//! earlier grant's — the INCR-beside-a-lease failover bug. On a key ranked
//! by token (every grant client-decided): a decision carrying a token an
//! earlier decision by a *different* node already carried — two clients
//! holding under one fence. A re-send of a grant (same id) is not a grant.

use super::generations::Generations;
use super::{Found, KindSet, ViolationKind};
use crate::history::{Event, History, Kind};
use crate::lookup::{Lookup, LookupSet};

#[derive(Default)]
pub struct TokenOrder {
    /// key -> (highest token issued, its grant_issued seq, its grant id).
    max: Lookup<u16, (u64, u64, u64)>,
    /// (key, token) -> (issuer, seq, grant) of its first decision (token-ranked keys).
    decided: Lookup<(u16, u64), (u16, u64, u64)>,
    seen_grants: LookupSet<u64>,
}

/// The records [`TokenOrder::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[Kind::GrantIssued]);

impl TokenOrder {
    pub fn clear(&mut self) {
        let TokenOrder {
            max,
            decided,
            seen_grants,
        } = self;
        max.clear();
        decided.clear();
        seen_grants.clear();
    }

    pub fn observe(&mut self, h: &History, e: &Event, gens: &Generations, out: &mut Found) {
        if e.kind != Kind::GrantIssued {
            return;
        }
        let (Some(key), Some(token), Some(grant)) = (e.key, e.token, e.grant_id) else {
            return;
        };
        if !self.seen_grants.insert(grant) {
            return;
        }
        if gens.ranked_by_token.contains(&key) {
            match self.decided.get(&(key, token)).copied() {
                Some((issuer, prev_seq, prev_grant)) if issuer != e.node => {
                    out.push(ViolationKind::TokenOrder, key, vec![prev_seq, e.seq], || {
                        format!(
                            "{} decided it holds grant {grant} with token {token}, which {} already held under grant {prev_grant}",
                            h.node_name(e.node),
                            h.node_name(issuer)
                        )
                    });
                }
                Some(_) => {}
                None => {
                    self.decided.insert((key, token), (e.node, e.seq, grant));
                }
            }
            return;
        }
        match self.max.get(&key).copied() {
            Some((prev, prev_seq, prev_grant)) if token <= prev => {
                out.push(ViolationKind::TokenOrder, key, vec![prev_seq, e.seq], || {
                    format!(
                        "{} issued grant {grant} with token {token} after grant {prev_grant} had token {prev}",
                        h.node_name(e.node)
                    )
                });
            }
            _ => {
                self.max.insert(key, (token, e.seq, grant));
            }
        }
    }
}
