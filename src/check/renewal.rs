//! expired_renewal: the coordinator extended (`renew_ok`) the lease of
//! grant g after it had dropped that lease (`lease_expired` of g) and had
//! since issued the key to another grant g′. The old holder is now told it
//! holds a lease the new holder holds too: the lease no longer excludes
//! anyone. Evidence: g's `lease_expired`, g′'s `grant_issued`, the
//! `renew_ok`.

use super::generations::Generations;
use super::{Found, KindSet, ViolationKind};
use crate::history::{fmt_time, Event, History, Kind};
use crate::lookup::Lookup;

#[derive(Default)]
pub struct Renewals {
    /// grant -> seq of its latest `lease_expired`.
    expired: Lookup<u64, u64>,
    /// key -> (seq, grant) of its latest first `grant_issued`.
    latest_issue: Lookup<u16, (u64, u64)>,
    /// Renewals of a lease after its expiry (the hazard of `expired_renewal`).
    pub hazards: u64,
}

/// The records [`Renewals::observe`] reads (see [`super::KindSet`]).
pub const KINDS: KindSet = KindSet::of(&[Kind::LeaseExpired, Kind::GrantIssued, Kind::RenewOk]);

impl Renewals {
    pub fn clear(&mut self) {
        let Renewals {
            expired,
            latest_issue,
            hazards,
        } = self;
        expired.clear();
        latest_issue.clear();
        *hazards = 0;
    }

    pub fn observe(&mut self, h: &History, e: &Event, gens: &Generations, out: &mut Found) {
        match e.kind {
            Kind::LeaseExpired => {
                if let Some(g) = e.grant_id {
                    self.expired.insert(g, e.seq);
                }
            }
            Kind::GrantIssued => {
                let (Some(g), Some(key)) = (e.grant_id, e.key) else {
                    return;
                };
                if gens.grants.get(&g).is_some_and(|i| i.issued_seq == e.seq) {
                    self.latest_issue.insert(key, (e.seq, g));
                }
            }
            Kind::RenewOk => {
                let Some(g) = e.grant_id else { return };
                let Some(&expired_seq) = self.expired.get(&g) else {
                    return;
                };
                self.hazards += 1;
                let Some(key) = gens.grants.get(&g).map(|i| i.key).or(e.key) else {
                    return;
                };
                let Some(&(issued_seq, newer)) = self.latest_issue.get(&key) else {
                    return;
                };
                if newer == g || issued_seq < expired_seq {
                    return;
                }
                out.push(ViolationKind::ExpiredRenewal, key, vec![expired_seq, issued_seq, e.seq], || {
                    format!(
                        "{} renewed grant {g} at {} although its lease expired (#{expired_seq}) and grant {newer} was issued since (#{issued_seq}): two holders now hold live leases",
                        h.node_name(e.node),
                        fmt_time(e.t_true_ns).trim()
                    )
                });
            }
            _ => {}
        }
    }
}
