//! consensus-generation's quorum steps: proposals are states of their own.
//!
//! Voter `i` is replica `i`; the leader is voter `failovers` (each failover stops the leader
//! for good and the next voter in order leads, as the code checker's failover does), and the
//! voters before it are down, their generations never read again (0). The leader's
//! generation is `counter`, mirrored in its voter's slot.
//!
//! - `Propose`: the ready leader, the lease free and no proposal open, proposes `counter + 1`
//!   (its own acceptance: it stores it); the `Propose` goes in flight (`proposing`, a set of
//!   generations: which voter a copy is addressed to is not kept, so any live voter may take
//!   any generation in flight — more than the code does, never less).
//! - `Accept`: a `Propose` in flight reaches a live voter, which stores it iff it is above its
//!   own (else refuses it); the last copy leaves the flight. The leader is a voter too: the
//!   stopped leader's proposals may still reach the new one.
//! - `Ack`: the leader hears a voter's acceptance of its open proposal (the voter holds that
//!   generation or a higher one); with a majority it grants, the token being the proposal's
//!   generation. A proposal given up (`GiveUp`: a refusal, or the retry timer) raised some
//!   voters already: the next grant's token skips a number.
//! - `Failover`: the leader stops (its lease table with it: no lease is live), the next voter
//!   leads from its own generation, not ready; `Report` puts a live voter's generation in
//!   flight to it, `Heard` delivers one (any value the voter had since its first answer in
//!   flight was sent: generations only grow), and with a majority heard the leader takes the
//!   highest and serves. Before the first answer, at boot, the first leader is not ready
//!   either.
//!
//! Safety rests on what the code's does: a grant's generation is held by a majority, a new
//! leader reads a majority after the old one stopped, and any two majorities meet. The twin
//! (`with_early_commit`) grants on the leader's own acceptance and is found unsafe.

use super::action::Event;
use super::lock_model::LockModel;
use super::spec::Protocol;
use super::state::{State, GENERATIONS_CAP, NO_HOLDER, REPLICAS_CAP};

fn bit(gen: u8) -> u8 {
    1 << (gen - 1)
}

impl LockModel {
    fn quorum(&self) -> bool {
        self.bounds.protocol == Protocol::ConsensusGeneration
    }

    /// Acceptances (the leader's own included) a grant needs; the twin's leader needs its own.
    fn commit_majority(&self) -> u32 {
        if self.early_commit {
            1
        } else {
            self.majority()
        }
    }

    fn majority(&self) -> u32 {
        self.bounds.replicas as u32 / 2 + 1
    }

    pub(super) fn leader(s: &State) -> usize {
        s.failovers as usize
    }

    fn live(&self, s: &State, replica: u8) -> bool {
        replica >= s.failovers && replica < self.bounds.replicas
    }

    /// Live voters besides the leader.
    fn live_peers(&self, s: &State) -> u8 {
        self.bounds.replicas.saturating_sub(s.failovers + 1)
    }

    /// The leader serves: it heard a majority (or is one alone).
    pub(super) fn is_ready(&self, s: &State) -> bool {
        s.ready || self.majority() == 1
    }

    /// `Propose`: see the module doc.
    pub(super) fn propose(&self, s: &State, n: &mut State, client: u8) -> Option<Event> {
        if !self.quorum()
            || !self.is_ready(s)
            || s.proposal != 0
            || s.holder != NO_HOLDER
            || s.counter >= self.generations_max
        {
            return None;
        }
        let gen = s.counter + 1;
        n.counter = gen;
        n.replicas[Self::leader(s)] = gen;
        if self.commit_majority() == 1 {
            if self.live_peers(s) > 0 {
                n.proposing |= bit(gen);
            }
            let quorum = 1 << Self::leader(s);
            return self.grant(s, n, client, gen, quorum);
        }
        if client != 0 {
            return None; // the client is named at the grant; one successor suffices
        }
        n.proposal = gen;
        n.acks = 0;
        if self.live_peers(s) > 0 {
            n.proposing |= bit(gen); // a copy to a stopped voter is dropped on arrival
        }
        Some(Event::Proposed {
            client,
            generation: gen,
        })
    }

    /// `Accept`: see the module doc.
    pub(super) fn accept_proposal(
        &self,
        s: &State,
        n: &mut State,
        replica: u8,
        gen: u8,
        last: bool,
    ) -> Option<Event> {
        if !self.quorum()
            || !self.live(s, replica)
            || gen == 0
            || gen > GENERATIONS_CAP
            || s.proposing & bit(gen) == 0
        {
            return None;
        }
        let r = replica as usize;
        let stored = gen > s.replicas[r];
        if !stored && !last {
            return None; // no change
        }
        if stored {
            n.replicas[r] = gen;
            if r == Self::leader(s) {
                n.counter = gen;
            }
        }
        if last {
            n.proposing &= !bit(gen);
        }
        Some(Event::ProposalReached {
            replica,
            generation: gen,
            stored,
        })
    }

    /// `Ack`: see the module doc.
    pub(super) fn ack(&self, s: &State, n: &mut State, replica: u8, client: u8) -> Option<Event> {
        let p = s.proposal;
        if !self.quorum()
            || p == 0
            || !self.live(s, replica)
            || replica as usize == Self::leader(s)
            || s.acks & (1 << replica) != 0
            || s.replicas[replica as usize] < p
        {
            return None;
        }
        n.acks = s.acks | (1 << replica);
        if n.acks.count_ones() + 1 < self.commit_majority() {
            if client != 0 {
                return None;
            }
            return Some(Event::AckHeard {
                replica,
                generation: p,
            });
        }
        let quorum = n.acks | (1 << Self::leader(s));
        n.proposal = 0;
        n.acks = 0;
        self.grant(s, n, client, p, quorum)
    }

    /// `GiveUp`: the open proposal is dropped.
    pub(super) fn give_up(&self, s: &State, n: &mut State) -> Option<Event> {
        if !self.quorum() || s.proposal == 0 {
            return None;
        }
        n.proposal = 0;
        n.acks = 0;
        Some(Event::GaveUp {
            generation: s.proposal,
        })
    }

    /// `Report`: a live voter's generation goes in flight to the not-ready leader (a later
    /// answer of the same voter is no lower than one in flight: no change).
    pub(super) fn answer(&self, s: &State, n: &mut State, replica: u8) -> Option<Event> {
        let r = replica as usize;
        if !self.quorum()
            || self.is_ready(s)
            || !self.live(s, replica)
            || r == Self::leader(s)
            || s.answers[r] != 0
        {
            return None;
        }
        n.answers[r] = s.replicas[r] + 1;
        Some(Event::Reported {
            replica,
            generation: s.replicas[r],
        })
    }

    /// `Heard`: see the module doc. Short of a majority the answer stays offered (a copy may
    /// come again, which changes nothing).
    pub(super) fn heard(&self, s: &State, n: &mut State, replica: u8, gen: u8) -> Option<Event> {
        let r = replica as usize;
        if !self.quorum()
            || self.is_ready(s)
            || !self.live(s, replica)
            || r == Self::leader(s)
            || s.answers[r] == 0
            || gen + 1 < s.answers[r]
            || gen > s.replicas[r]
        {
            return None;
        }
        n.acks = s.acks | (1 << replica);
        n.heard_max = s.heard_max.max(gen);
        let ready = n.acks.count_ones() + 1 >= self.majority();
        if ready {
            n.counter = s.counter.max(n.heard_max);
            n.replicas[Self::leader(s)] = n.counter;
            n.ready = true;
            n.acks = 0;
            n.heard_max = 0;
            n.answers = [0; REPLICAS_CAP];
        }
        Some(Event::Heard {
            replica,
            generation: gen,
            ready,
            counter: n.counter,
        })
    }

    /// `Failover`: see the module doc; `kept`, the proposals left in flight.
    pub(super) fn stop_leader(&self, s: &State, n: &mut State, kept: u8) -> Option<Event> {
        let b = &self.bounds;
        if s.failovers >= b.failovers_max
            || s.failovers + 1 >= b.replicas
            || kept & !s.proposing != 0
        {
            return None;
        }
        let old = Self::leader(s);
        n.failovers = s.failovers + 1;
        n.replicas[old] = 0; // stopped for good: never read again
        let new = Self::leader(n);
        n.counter = s.replicas[new];
        n.ready = false;
        n.proposal = 0;
        n.acks = 0;
        n.heard_max = n.counter;
        n.answers = [0; REPLICAS_CAP];
        n.holder = NO_HOLDER;
        n.proposing = kept;
        Some(Event::LeaderStopped {
            counter_before: s.counter,
            counter_after: n.counter,
            in_flight: kept,
        })
    }

    /// The quorum actions offered in `s` (candidates: `step` checks each guard).
    pub(super) fn quorum_actions(&self, s: &State, actions: &mut Vec<super::Action>) {
        use super::Action;
        let b = &self.bounds;
        for replica in 0..b.replicas {
            for gen in 1..=GENERATIONS_CAP {
                if s.proposing & bit(gen) != 0 {
                    for last in [false, true] {
                        actions.push(Action::Accept { replica, gen, last });
                    }
                }
            }
            if s.proposal != 0 {
                for client in 0..b.clients {
                    actions.push(Action::Ack { replica, client });
                }
            }
            if !self.is_ready(s) {
                actions.push(Action::Report { replica });
                let r = replica as usize;
                for gen in s.answers[r].saturating_sub(1)..=s.replicas[r] {
                    actions.push(Action::Heard { replica, gen });
                }
            }
        }
        if s.proposal != 0 {
            actions.push(Action::GiveUp);
        }
        if s.failovers < b.failovers_max {
            // Every subset of the proposals in flight may outlive the stopped leader.
            let mut kept = s.proposing;
            loop {
                actions.push(Action::Failover {
                    uncommitted: kept,
                    quorum: 0,
                });
                if kept == 0 {
                    break;
                }
                kept = (kept - 1) & s.proposing;
            }
        }
    }
}
