//! The second checker: the verdicts of `docs/history.md`, read straight
//! from its definitions, with no state carried between records.
//!
//! Why it exists: `crate::check` is a one-pass, streaming checker tuned to
//! stay O(n log n); its bookkeeping is where a wrong verdict would hide.
//! This module judges each record by scanning the records before it again
//! (quadratic, and fine for the histories the differential test feeds it),
//! so the two share nothing but the history types. The differential test
//! (`tests/it/check/differential.rs`) holds them to the same verdicts.
//!
//! It reports, per violation, the kind's name and the `seq` of the record
//! that commits it (the last of the main checker's evidence). It assumes a
//! history `history::validate` accepted; on others it only promises not to
//! panic.

use std::collections::BTreeMap;

use crate::history::{Event, History, Kind};

/// (generation, sender, token, read) a resource record is judged as.
type Judged = (u64, Option<u16>, Option<u64>, Option<(u64, u64)>);

/// One violation: its kind's name and the record that commits it.
#[derive(Clone, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub struct Finding {
    pub kind: &'static str,
    pub seq: u64,
}

/// A grant as the history declares it: its first issue record.
#[derive(Clone, Copy)]
struct Grant {
    key: u16,
    issue: usize,
    issuer: u16,
    token: Option<u64>,
    rank: u64,
}

fn is_issue(e: &Event) -> bool {
    matches!(e.kind, Kind::GrantIssued | Kind::BecameActive)
}

fn is_receipt(e: &Event) -> bool {
    matches!(e.kind, Kind::GrantReceived | Kind::BecameActive)
}

struct Oracle<'h> {
    ev: &'h [Event],
    grants: BTreeMap<u64, Grant>,
    /// Index of every receipt that adopts its grant (definition 3).
    adopting: Vec<bool>,
}

impl<'h> Oracle<'h> {
    fn new(h: &'h History) -> Oracle<'h> {
        let ev = &h.events[..];
        let mut grants: BTreeMap<u64, Grant> = BTreeMap::new();
        for (i, e) in ev.iter().enumerate() {
            if let (true, Some(id), Some(key)) = (is_issue(e), e.grant_id, e.key) {
                grants.entry(id).or_insert(Grant {
                    key,
                    issue: i,
                    issuer: e.node,
                    token: e.token,
                    rank: 0,
                });
            }
        }
        // Client-decided: the first node to receive the grant is its issuer.
        let client_decided = |id: u64, g: &Grant| {
            ev.iter()
                .find(|e| is_receipt(e) && e.grant_id == Some(id))
                .is_some_and(|e| e.node == g.issuer)
        };
        let keys: Vec<u16> = grants.values().map(|g| g.key).collect();
        for key in keys {
            let mut ids: Vec<u64> = grants
                .iter()
                .filter(|(_, g)| g.key == key)
                .map(|(&id, _)| id)
                .collect();
            let by_token = ids.iter().all(|id| {
                let g = &grants[id];
                g.token.is_some() && client_decided(*id, g)
            });
            if by_token {
                ids.sort_by_key(|id| (grants[id].token, grants[id].issue));
            } else {
                ids.sort_by_key(|id| grants[id].issue);
            }
            for (n, id) in ids.iter().enumerate() {
                if let Some(g) = grants.get_mut(id) {
                    g.rank = n as u64 + 1;
                }
            }
        }
        let mut o = Oracle {
            ev,
            grants,
            adopting: vec![false; ev.len()],
        };
        for i in 0..ev.len() {
            o.adopting[i] = o.adopts(i);
        }
        o
    }

    fn issued_by(&self, id: u64, i: usize) -> bool {
        self.grants.get(&id).is_some_and(|g| g.issue <= i)
    }

    fn rank(&self, id: u64) -> u64 {
        self.grants.get(&id).map_or(0, |g| g.rank)
    }

    /// The grant `node` had adopted for `key` before record `i`.
    fn adopted_before(&self, node: u16, key: u16, i: usize) -> Option<u64> {
        (0..i)
            .rev()
            .find(|&j| {
                self.adopting[j] && self.ev[j].node == node && self.receipt_key(j) == Some(key)
            })
            .and_then(|j| self.ev[j].grant_id)
    }

    fn receipt_key(&self, j: usize) -> Option<u16> {
        self.ev[j]
            .grant_id
            .and_then(|g| self.grants.get(&g))
            .map(|g| g.key)
    }

    /// Whether receipt `i` adopts its grant: a grant other than the one its
    /// node acts on, issued already, and either decided by the node itself,
    /// or newer than what it acts on for a node that never asks, or
    /// answering an `acquire_sent` for the key made since the node's last
    /// adoption of a grant it asked for, or replacing a provisional
    /// adoption (see [`Oracle::replaces_provisional`]).
    fn adopts(&self, i: usize) -> bool {
        let e = &self.ev[i];
        if !is_receipt(e) {
            return false;
        }
        let Some(id) = e.grant_id.filter(|&g| self.issued_by(g, i)) else {
            return false;
        };
        let g = self.grants[&id];
        if self.adopted_before(e.node, g.key, i) == Some(id) {
            return false;
        }
        if g.issuer == e.node {
            return true;
        }
        if !self
            .ev
            .iter()
            .any(|a| a.kind == Kind::AcquireSent && a.node == e.node)
        {
            let current = self.adopted_before(e.node, g.key, i);
            return current.is_none_or(|c| self.rank(c) < g.rank);
        }
        let last_asked_adoption = (0..i).rev().find(|&j| {
            self.adopting[j]
                && self.ev[j].node == e.node
                && self.receipt_key(j) == Some(g.key)
                && self.ev[j]
                    .grant_id
                    .and_then(|x| self.grants.get(&x))
                    .is_some_and(|x| x.issuer != e.node)
        });
        let from = last_asked_adoption.map_or(0, |j| j + 1);
        (from..i).any(|j| self.is_acquire(j, e.node, g.key)) || self.replaces_provisional(i, id)
    }

    fn is_acquire(&self, j: usize, node: u16, key: u16) -> bool {
        let a = &self.ev[j];
        a.kind == Kind::AcquireSent && a.node == node && a.key == Some(key)
    }

    /// Index of the latest issue record of grant `id` at or before record `i`.
    fn last_issue(&self, id: u64, i: usize) -> Option<usize> {
        (0..=i)
            .rev()
            .find(|&j| is_issue(&self.ev[j]) && self.ev[j].grant_id == Some(id))
    }

    /// Whether receipt `i` of grant `id` replaces a provisional adoption:
    /// its node's current grant for the key was adopted at a receipt `j`
    /// while that grant's latest issue preceded the node's latest
    /// `acquire_sent` `a` for the key; no `write_sent`, `effect_sent` or
    /// `release_sent` of the node for the key came since `j`; and `id`'s
    /// latest issue comes after `a`.
    fn replaces_provisional(&self, i: usize, id: u64) -> bool {
        let e = &self.ev[i];
        let Some(key) = self.grants.get(&id).map(|g| g.key) else {
            return false;
        };
        let Some(j) = (0..i).rev().find(|&j| {
            self.adopting[j] && self.ev[j].node == e.node && self.receipt_key(j) == Some(key)
        }) else {
            return false;
        };
        let Some(current) = self.ev[j].grant_id else {
            return false;
        };
        let Some(asked) = (0..j).rev().find(|&k| self.is_acquire(k, e.node, key)) else {
            return false;
        };
        if self.last_issue(current, j).is_none_or(|x| x > asked) {
            return false;
        }
        let acted = (j + 1..i).any(|k| {
            let r = &self.ev[k];
            let r_key = r
                .key
                .or_else(|| r.grant_id.and_then(|g| self.grants.get(&g)).map(|g| g.key));
            r.node == e.node
                && r_key == Some(key)
                && matches!(
                    r.kind,
                    Kind::WriteSent | Kind::EffectSent | Kind::ReleaseSent
                )
        });
        !acted && self.last_issue(id, i).is_some_and(|x| x > asked)
    }

    /// The grant a request by `sender` on `key` at record `i` acted on.
    fn acted_on(
        &self,
        sender: Option<u16>,
        key: u16,
        explicit: Option<u64>,
        token: Option<u64>,
        i: usize,
    ) -> Option<u64> {
        if let Some(x) = explicit.filter(|&x| self.issued_by(x, i)) {
            return Some(x);
        }
        if let Some(t) = token {
            let matches = |id: u64| {
                self.grants
                    .get(&id)
                    .is_some_and(|g| g.key == key && g.token == Some(t))
            };
            if let Some(n) = sender {
                let received = (0..i).rev().find(|&j| {
                    let r = &self.ev[j];
                    is_receipt(r)
                        && r.node == n
                        && r.grant_id
                            .is_some_and(|id| matches(id) && self.issued_by(id, j))
                });
                if let Some(j) = received {
                    return self.ev[j].grant_id;
                }
            }
            let issued = self
                .grants
                .iter()
                .filter(|(&id, g)| matches(id) && g.issue <= i)
                .max_by_key(|(_, g)| g.issue);
            if let Some((&id, _)) = issued {
                return Some(id);
            }
        }
        sender.and_then(|n| self.adopted_before(n, key, i))
    }

    /// The op's latest read before record `i`: (value, seq).
    fn read_before(&self, op: u64, i: usize) -> Option<(u64, u64)> {
        self.ev[..i]
            .iter()
            .rev()
            .find(|r| r.kind == Kind::ReadOk && r.op_id == Some(op) && r.value.is_some())
            .map(|r| (r.value.unwrap_or(0), r.seq))
    }

    /// The send a resource record `i` answers: the latest `write_sent` of
    /// its op with its token, else the latest.
    fn send_of(&self, i: usize, op: u64) -> Option<usize> {
        let sends: Vec<usize> = (0..i)
            .filter(|&j| {
                let s = &self.ev[j];
                s.kind == Kind::WriteSent && s.op_id == Some(op) && s.key.is_some()
            })
            .collect();
        let token = self.ev[i].token;
        token
            .and_then(|t| sends.iter().rev().find(|&&j| self.ev[j].token == Some(t)))
            .or(sends.last())
            .copied()
    }

    /// (generation, sender, token, read) of the write resource record `i` is judged as.
    fn judged(&self, i: usize, op: u64, key: u16) -> Judged {
        match self.send_of(i, op) {
            Some(j) => {
                let s = &self.ev[j];
                let key = s.key.unwrap_or(key); // a send is judged on its own key
                let g = self.acted_on(Some(s.node), key, s.grant_id, s.token, j);
                (
                    g.map_or(0, |g| self.rank(g)),
                    Some(s.node),
                    s.token,
                    self.read_before(op, j),
                )
            }
            None => {
                let e = &self.ev[i];
                let g = self.acted_on(None, key, None, e.token, i);
                (
                    g.map_or(0, |g| self.rank(g)),
                    None,
                    e.token,
                    self.read_before(op, i),
                )
            }
        }
    }

    /// The grant the write resource record `i` is judged as acting on.
    fn judged_grant(&self, i: usize, op: u64, key: u16) -> Option<u64> {
        match self.send_of(i, op) {
            Some(j) => {
                let s = &self.ev[j];
                self.acted_on(Some(s.node), s.key.unwrap_or(key), s.grant_id, s.token, j)
            }
            None => self.acted_on(None, key, None, self.ev[i].token, i),
        }
    }

    /// Whether `token`, on write resource record `i`, is a position of the
    /// lock server's order within the ownership of the grant it acted on
    /// (docs/history.md, `unissued_token`): from that grant's token to the
    /// `order` on its first end — to the highest position the history
    /// records for `key` if nothing ends it — on a key with an `order`.
    fn owned_position(&self, i: usize, op: u64, key: u16, token: u64) -> bool {
        let ends_of = |e: &Event| match e.kind {
            Kind::LeaseExpired => e.grant_id,
            Kind::ReleaseApplied => e.removed_grant_id.or(e.grant_id),
            _ => None,
        };
        let orders: Vec<u64> = self
            .ev
            .iter()
            .filter(|e| ends_of(e).is_some() && e.key == Some(key))
            .filter_map(|e| e.order)
            .collect();
        let Some(g) = self.judged_grant(i, op, key) else {
            return false;
        };
        let Some(grant) = self.grants.get(&g).filter(|gr| gr.key == key) else {
            return false;
        };
        let (Some(start), false) = (grant.token, orders.is_empty()) else {
            return false;
        };
        let end = match self.ev.iter().find(|e| ends_of(e) == Some(g)) {
            Some(e) => e.order,
            None => {
                let tokens = self.grants.values().filter(|gr| gr.key == key);
                orders
                    .into_iter()
                    .chain(tokens.filter_map(|gr| gr.token))
                    .max()
            }
        };
        end.is_some_and(|end| start <= token && token <= end)
    }

    /// Highest generation received for `key` at or before record `i`.
    fn received_max(&self, key: u16, i: usize) -> u64 {
        (0..=i)
            .filter(|&j| is_receipt(&self.ev[j]))
            .filter_map(|j| {
                let id = self.ev[j].grant_id?;
                let g = self.grants.get(&id)?;
                (g.key == key && g.issue <= j).then_some(g.rank)
            })
            .max()
            .unwrap_or(0)
    }

    fn issued_max(&self, key: u16, i: usize) -> u64 {
        self.grants
            .values()
            .filter(|g| g.key == key && g.issue <= i)
            .map(|g| g.rank)
            .max()
            .unwrap_or(0)
    }

    /// Accepted writes to the document (resource, key) before record `i`.
    fn accepted_before(&self, resource: u16, key: u16, i: usize) -> Vec<usize> {
        (0..i)
            .filter(|&j| {
                let a = &self.ev[j];
                a.kind == Kind::WriteAccepted
                    && a.node == resource
                    && a.key == Some(key)
                    && a.op_id.is_some()
            })
            .collect()
    }

    fn judge(&self, i: usize, out: &mut Vec<Finding>) {
        let e = &self.ev[i];
        let mut find = |kind| out.push(Finding { kind, seq: e.seq });
        match e.kind {
            Kind::WriteAccepted => self.judge_write(i, out),
            Kind::GrantIssued => self.judge_grant(i, out),
            Kind::ReleaseApplied => {
                if let Some(r) = e.removed_grant_id {
                    if e.grant_id != Some(r) {
                        find("unsafe_release");
                    }
                }
            }
            Kind::Unfinished => {
                let last = self.ev[..i].iter().rev().find(|p| {
                    p.node == e.node
                        && matches!(
                            p.kind,
                            Kind::Crash | Kind::Pause | Kind::Restart | Kind::Resume
                        )
                });
                if !last.is_some_and(|p| matches!(p.kind, Kind::Crash | Kind::Pause)) {
                    find("liveness");
                }
            }
            Kind::EffectPerformed => self.judge_effect(i, out),
            Kind::RenewOk => self.judge_renewal(i, out),
            _ => {}
        }
    }

    /// A write the resource accepted: stale, lost update, unissued token, two actives.
    fn judge_write(&self, i: usize, out: &mut Vec<Finding>) {
        let e = &self.ev[i];
        let mut find = |kind| out.push(Finding { kind, seq: e.seq });
        let (Some(op), Some(key)) = (e.op_id, e.key) else {
            return;
        };
        let (generation, sender, token, read) = self.judged(i, op, key);
        let before = self.accepted_before(e.node, key, i);
        let current = before.last().and_then(|&j| self.ev[j].op_id).unwrap_or(0);
        let newest = before
            .iter()
            .map(|&j| self.judged(j, self.ev[j].op_id.unwrap_or(0), key).0)
            .max();
        // If-Match only where grants carry no token (there a token is a fence).
        let tokened = self
            .grants
            .values()
            .any(|g| g.key == key && g.issue <= i && g.token.is_some());
        let condition_held =
            !tokened && token == Some(current) && read.is_some_and(|(v, _)| v == current);
        // A redelivery absorbed by the document (current value is
        // already this op's) changed nothing: its first acceptance was judged.
        if newest.is_some_and(|n| generation < n) && !condition_held && current != op {
            find("stale_write");
        }
        if current != op && read.is_some_and(|(v, _)| v != current) {
            find("lost_update");
        }
        if let Some(t) = e.token {
            let issued = |want: Option<u64>| {
                self.grants.values().any(|g| {
                    g.key == key
                        && g.issue <= i
                        && g.token.is_some()
                        && want.is_none_or(|w| g.token == Some(w))
                })
            };
            if issued(None) && !issued(Some(t)) && !self.owned_position(i, op, key, t) {
                find("unissued_token");
            }
        }
        if let Some(x) = sender.filter(|_| self.send_of(i, op).is_some()) {
            if self.newer_active(x, key, generation, i) {
                find("two_actives");
            }
        }
    }

    /// A grant's first issue: its token in order.
    fn judge_grant(&self, i: usize, out: &mut Vec<Finding>) {
        let e = &self.ev[i];
        let mut find = |kind| out.push(Finding { kind, seq: e.seq });
        let (Some(key), Some(token), Some(id)) = (e.key, e.token, e.grant_id) else {
            return;
        };
        let first_issues = |j: usize| {
            let p = &self.ev[j];
            p.kind == Kind::GrantIssued
                && p.key == Some(key)
                && p.token.is_some()
                && p.grant_id.is_some_and(|pid| {
                    !(0..j).any(|k| {
                        let q = &self.ev[k];
                        q.kind == Kind::GrantIssued
                            && q.grant_id == Some(pid)
                            && q.key.is_some()
                            && q.token.is_some()
                    })
                })
        };
        if !first_issues(i) {
            return;
        }
        let earlier: Vec<usize> = (0..i).filter(|&j| first_issues(j)).collect();
        let ranked_by_token = {
            let mut ids = self.grants.iter().filter(|(_, g)| g.key == key);
            // all client-decided and tokened <=> ranks follow tokens
            ids.all(|(&gid, g)| {
                g.token.is_some()
                    && self
                        .ev
                        .iter()
                        .find(|r| is_receipt(r) && r.grant_id == Some(gid))
                        .is_some_and(|r| r.node == g.issuer)
            })
        };
        let _ = id;
        if ranked_by_token {
            let first_same = earlier.iter().find(|&&j| self.ev[j].token == Some(token));
            if first_same.is_some_and(|&j| self.ev[j].node != e.node) {
                find("token_order");
            }
        } else if earlier.iter().any(|&j| self.ev[j].token >= Some(token)) {
            find("token_order");
        }
    }

    /// An effect performed: twice, or under a superseded grant.
    fn judge_effect(&self, i: usize, out: &mut Vec<Finding>) {
        let e = &self.ev[i];
        let mut find = |kind| out.push(Finding { kind, seq: e.seq });
        let (Some(key), Some(op)) = (e.key, e.op_id) else {
            return;
        };
        let same = |p: &Event, kind| p.kind == kind && p.key == Some(key) && p.op_id == Some(op);
        if self.ev[..i].iter().any(|p| same(p, Kind::EffectPerformed)) {
            find("duplicate_effect");
        }
        let sent = (0..i).rev().find(|&j| same(&self.ev[j], Kind::EffectSent));
        if let Some(j) = sent {
            let s = &self.ev[j];
            if let Some(g) = self.acted_on(Some(s.node), key, s.grant_id, s.token, j) {
                if self.rank(g) < self.received_max(key, i) {
                    find("superseded_effect");
                }
            }
        }
    }

    /// A renewal granted after its lease expired and another was issued.
    fn judge_renewal(&self, i: usize, out: &mut Vec<Finding>) {
        let e = &self.ev[i];
        let mut find = |kind| out.push(Finding { kind, seq: e.seq });
        let Some(g) = e.grant_id else { return };
        let Some(x) = (0..i)
            .rev()
            .find(|&j| self.ev[j].kind == Kind::LeaseExpired && self.ev[j].grant_id == Some(g))
        else {
            return;
        };
        let Some(key) = self.grants.get(&g).map(|x| x.key).or(e.key) else {
            return;
        };
        let newest_issue = (0..i).rev().find(|&j| {
            let p = &self.ev[j];
            p.kind == Kind::GrantIssued
                && p.key == Some(key)
                && p.grant_id
                    .and_then(|id| self.grants.get(&id))
                    .is_some_and(|gr| gr.issue == j)
        });
        if let Some(j) = newest_issue {
            if self.ev[j].grant_id != Some(g) && j > x {
                find("expired_renewal");
            }
        }
    }

    /// Whether a node other than `writer` believes, at record `i`, that it
    /// is active for `key` under a promotion newer than `generation`.
    fn newer_active(&self, writer: u16, key: u16, generation: u64, i: usize) -> bool {
        let nodes: Vec<u16> = self.ev[..i]
            .iter()
            .filter(|p| p.kind == Kind::BecameActive && p.key == Some(key))
            .map(|p| p.node)
            .collect();
        nodes.into_iter().filter(|&y| y != writer).any(|y| {
            let Some(b) = (0..i).rev().find(|&j| {
                let p = &self.ev[j];
                p.kind == Kind::BecameActive && p.key == Some(key) && p.node == y
            }) else {
                return false;
            };
            let ended = self.ev[b + 1..i].iter().any(|p| {
                p.node == y
                    && (p.kind == Kind::Crash
                        || (p.kind == Kind::SteppedDown && p.key == Some(key)))
            });
            let promoted = self.ev[b]
                .grant_id
                .filter(|id| self.grants.contains_key(id))
                .map_or_else(|| self.issued_max(key, b), |id| self.rank(id));
            !ended && promoted > generation
        })
    }
}

/// Every violation in `h`, in record order (kinds of one record by name).
pub fn check(h: &History) -> Vec<Finding> {
    let o = Oracle::new(h);
    let mut out = Vec::new();
    for i in 0..h.events.len() {
        let start = out.len();
        o.judge(i, &mut out);
        out[start..].sort();
    }
    out
}
