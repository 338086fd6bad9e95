//! The model state: one key's lease, its token source, the writes in flight and the fenced
//! resource (queue-claim: and the queue's head job), as fixed arrays of small integers.
//!
//! stateright 0.31 deduplicates states by a 64-bit hash of `Hash` alone, so the state is `Copy`,
//! derives `Hash` over every field, and holds no history the future does not depend on: a
//! client's grant is forgotten once its write is sent, and a write is forgotten once the
//! resource has processed it. The only history kept is what the properties need (the highest
//! token issued, the highest generation accepted, the id of the current value, sticky violation
//! bits and the "stale attempt seen" bit for the vacuity check).
//!
//! Identities: a grant's *generation* is its position in issue order (1, 2, …). Each grant
//! sends at most one write, so a write, and the value it produces, is identified by its
//! generation; value 0 is the initial value. Clients are interchangeable, so with symmetry on
//! the client slots are kept sorted (`canonicalize`) and the one reference to a slot (`holder`)
//! is remapped.

/// Capacities of the fixed arrays; specs are validated against them.
pub const CLIENTS_CAP: usize = 5;
pub const GRANTS_CAP: usize = 12;
pub const REPLICAS_CAP: usize = 5;
/// consensus-generation: generations a proposal may have at most (`State::proposing` is a
/// byte of them).
pub const GENERATIONS_CAP: u8 = 8;

/// `holder` when no lease is live.
pub const NO_HOLDER: u8 = u8::MAX;

/// One client's view of its current grant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Client {
    /// Generation of the grant it will still write under; 0 when it has nothing left to do.
    pub gen: u8,
    /// Token that came with that grant (equal to `gen` for the correct token sources). etcd's
    /// Mutex: the create revision of the acquisition's key from its put until the acquisition
    /// ends (gives up, or its grant's write is sent), decided or not.
    pub token: u8,
    /// 0 = not read yet, v + 1 = read the value written by generation v. etcd's Mutex (no
    /// reads): 1 = the acquisition holds an answer "you are first" it has not acted on yet.
    pub read: u8,
    /// zk-sequential: sequence number of the client's node, 0 = no node. etcd's Mutex: the
    /// create revision of its live key (0: none, or deleted).
    pub node: u8,
}

impl Client {
    pub fn is_idle(&self) -> bool {
        self.gen == 0
    }
}

/// A write the resource has not finished processing. Empty slots have `gen == 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Write {
    pub gen: u8,
    pub token: u8,
    /// The sender's read, same encoding as `Client::read`.
    pub read: u8,
    /// 0 = in flight; 1 = fenced-check-then-write passed the check and awaits its commit.
    pub stage: u8,
}

pub const STAGE_IN_FLIGHT: u8 = 0;
pub const STAGE_CHECKED: u8 = 1;

/// Effect-sink protocols, `State::effects[g - 1]`: the requests for generation g's effect in
/// flight to the sink (the low bits), whether its write was accepted (the effect is owed) and
/// whether the sink performed it.
pub const EFFECT_REQUESTS: u8 = 0x0f;
pub const EFFECT_OWED: u8 = 1 << 4;
pub const EFFECT_PERFORMED: u8 = 1 << 5;

/// `Hash` is written by hand, but over every field: `encode` destructures the state, so a new
/// field does not compile until it is encoded. Hashing the packed bytes in one call instead of
/// ~90 one-byte calls roughly doubles the checker's throughput (see NOTES.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    pub clients: [Client; CLIENTS_CAP],
    /// Sorted by generation, empty slots last, so that the order writes were sent in (which
    /// the future does not depend on) does not split states.
    pub writes: [Write; GRANTS_CAP],
    /// Client slot holding the live lease, or `NO_HOLDER` (free or expired).
    pub holder: u8,
    /// Grants issued so far = generation of the latest grant.
    pub grants: u8,
    /// Highest token issued so far (token_order compares each new token with it).
    pub token_max: u8,
    pub failovers: u8,
    /// Token source: incr primary counter / consensus leader's generation / zk sequence counter.
    pub counter: u8,
    /// incr-beside-lease: the backup's copy of the counter (asynchronous replication lags).
    pub backup: u8,
    /// incr-beside-lease: the generation of the lease the backup holds a copy of (0: none).
    /// The primary ships its lease with the counter, so a promoted backup may hold a lease
    /// the primary has since released or let expire.
    pub backup_lease: u8,
    /// consensus-generation: the generation each voter has stored.
    pub replicas: [u8; REPLICAS_CAP],
    /// Resource: greatest token seen (by accepted writes, and by reads when reads are fenced).
    pub fence: u8,
    /// Resource ground truth: greatest generation among accepted writes (0 = none yet). etcd's
    /// Mutex: the accepted generation of the highest rank (grants rank by token there).
    pub accepted_gen_max: u8,
    /// etcd's Mutex: the token of `accepted_gen_max`'s grant (0 elsewhere). A client may decide
    /// on an old answer after a newer key's client decided, so the decisions' tokens are not in
    /// decision order, and grants rank by (token, generation) as in the history checker.
    pub accepted_token: u8,
    /// Resource: generation of the write whose value is current (0 = initial value).
    pub value: u8,
    /// Effect-sink protocols: per generation (index g - 1), its effect's `EFFECT_*` bits.
    /// Always 0 elsewhere, so the other models' states are what they were.
    pub effects: [u8; GRANTS_CAP],
    /// Sticky bitmask of `Violation::bit()`.
    pub violations: u8,
    /// Sticky: a write of generation g reached the resource after a grant > g was issued.
    pub stale_attempt_seen: bool,
    /// queue-claim: the grants issued before the head job's first delivery (a write of a
    /// generation above it is a result for the head job; one at or below, for a deleted job).
    pub job_from: u8,
    /// queue-claim: the head job has a result.
    pub job_done: bool,
    /// consensus-generation: the generation of the leader's open proposal (0: none).
    pub proposal: u8,
    /// consensus-generation: the voters but the leader that acknowledged the open proposal
    /// or, while the leader is not ready, answered its query (bit i: voter i).
    pub acks: u8,
    /// consensus-generation: the leader has learned the highest generation from a majority
    /// and serves acquires.
    pub ready: bool,
    /// consensus-generation: the highest generation the not-ready leader has heard (its own
    /// at its promotion included); 0 once ready.
    pub heard_max: u8,
    /// consensus-generation: the generations a `Propose` of which is in flight (bit g - 1).
    pub proposing: u8,
    /// consensus-generation: per voter, the lowest answer to the not-ready leader's query in
    /// flight, + 1 (0: none).
    pub answers: [u8; REPLICAS_CAP],
}

/// Bytes in `State::encode`.
pub const ENCODED_LEN: usize = CLIENTS_CAP * 4 + GRANTS_CAP * 5 + 11 + REPLICAS_CAP * 2 + 7;

impl std::hash::Hash for State {
    fn hash<H: std::hash::Hasher>(&self, hasher: &mut H) {
        hasher.write(&self.encode());
    }
}

impl State {
    /// Every field, packed; equal states and only equal states have equal encodings.
    pub fn encode(&self) -> [u8; ENCODED_LEN] {
        let State {
            clients,
            writes,
            holder,
            grants,
            token_max,
            failovers,
            counter,
            backup,
            backup_lease,
            replicas,
            fence,
            accepted_gen_max,
            accepted_token,
            value,
            effects,
            violations,
            stale_attempt_seen,
            job_from,
            job_done,
            proposal,
            acks,
            ready,
            heard_max,
            proposing,
            answers,
        } = self;
        let mut bytes = [0u8; ENCODED_LEN];
        let mut i = 0;
        let mut put = |b: u8| {
            bytes[i] = b;
            i += 1;
        };
        for Client {
            gen,
            token,
            read,
            node,
        } in clients
        {
            [*gen, *token, *read, *node].into_iter().for_each(&mut put);
        }
        for Write {
            gen,
            token,
            read,
            stage,
        } in writes
        {
            [*gen, *token, *read, *stage].into_iter().for_each(&mut put);
        }
        [
            *holder,
            *grants,
            *token_max,
            *failovers,
            *counter,
            *backup,
            *backup_lease,
            *fence,
            *accepted_gen_max,
            *accepted_token,
            *value,
        ]
        .into_iter()
        .for_each(&mut put);
        replicas.iter().copied().for_each(&mut put);
        effects.iter().copied().for_each(&mut put);
        put(*violations | ((*stale_attempt_seen as u8) << 7));
        assert!(*violations < 1 << 7);
        put(*job_from | ((*job_done as u8) << 7));
        assert!(*job_from < 1 << 7);
        [*proposal, *acks, *ready as u8, *heard_max, *proposing]
            .into_iter()
            .for_each(&mut put);
        answers.iter().copied().for_each(&mut put);
        bytes
    }

    pub fn initial() -> State {
        State {
            clients: [Client::default(); CLIENTS_CAP],
            writes: [Write::default(); GRANTS_CAP],
            holder: NO_HOLDER,
            grants: 0,
            token_max: 0,
            failovers: 0,
            counter: 0,
            backup: 0,
            backup_lease: 0,
            replicas: [0; REPLICAS_CAP],
            fence: 0,
            accepted_gen_max: 0,
            accepted_token: 0,
            value: 0,
            effects: [0; GRANTS_CAP],
            violations: 0,
            stale_attempt_seen: false,
            job_from: 0,
            job_done: false,
            proposal: 0,
            acks: 0,
            ready: false,
            heard_max: 0,
            proposing: 0,
            answers: [0; REPLICAS_CAP],
        }
    }

    /// Generation `gen`'s effect bits (`EFFECT_*`).
    pub fn effect(&self, gen: u8) -> u8 {
        assert!(gen != 0);
        self.effects[gen as usize - 1]
    }

    pub fn write_index(&self, gen: u8) -> Option<usize> {
        assert!(gen != 0);
        self.writes.iter().position(|w| w.gen == gen)
    }

    pub fn writes_in_flight(&self) -> impl Iterator<Item = &Write> {
        self.writes.iter().take_while(|w| w.gen != 0)
    }

    /// Adds a write where the sorted order puts it (the order `sort_writes` gives: writes
    /// are distinct by generation and empty slots all equal, so it is unique).
    pub fn push_write(&mut self, write: Write) {
        assert!(write.gen != 0);
        if self.writes[GRANTS_CAP - 1].gen != 0 {
            // Unreachable: at most one write per grant and grants_max <= GRANTS_CAP.
            panic!("write slots exhausted");
        }
        let at = self
            .writes
            .iter()
            .position(|w| w.gen == 0 || w.gen >= write.gen)
            .unwrap_or(GRANTS_CAP - 1);
        assert!(self.writes[at].gen != write.gen, "one write per generation");
        self.writes.copy_within(at..GRANTS_CAP - 1, at + 1);
        self.writes[at] = write;
    }

    /// Removes a write; the ones after it move down, so the order stays sorted.
    pub fn remove_write(&mut self, index: usize) {
        assert!(self.writes[index].gen != 0);
        self.writes.copy_within(index + 1.., index);
        self.writes[GRANTS_CAP - 1] = Write::default();
    }

    pub fn sort_writes(&mut self) {
        self.writes.sort_unstable_by_key(|w| (w.gen == 0, w.gen));
    }

    /// Sorts the first `clients` slots (the holder after any identical slot, so the form is
    /// canonical) and remaps `holder`. Returns `perm` with `perm[new_slot] = old_slot`, which
    /// lets a counterexample follow each real client through the reorderings.
    pub fn canonicalize(&mut self, clients: usize) -> [u8; CLIENTS_CAP] {
        assert!(clients <= CLIENTS_CAP);
        let mut perm = [0u8; CLIENTS_CAP];
        for (i, p) in perm.iter_mut().enumerate() {
            *p = i as u8;
        }
        let holder = self.holder;
        let slots = self.clients;
        perm[..clients].sort_by_key(|&old| (slots[old as usize], old == holder));
        for new in 0..clients {
            self.clients[new] = slots[perm[new] as usize];
        }
        if holder != NO_HOLDER {
            let new_holder = perm.iter().position(|&old| old == holder);
            assert!(new_holder.is_some());
            self.holder = new_holder.unwrap_or(0) as u8;
        }
        perm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalize_sorts_slots_and_follows_the_holder() {
        let mut s = State::initial();
        s.clients[0] = Client {
            gen: 2,
            token: 2,
            read: 0,
            node: 0,
        };
        s.clients[1] = Client::default();
        s.holder = 0;
        let perm = s.canonicalize(2);
        assert_eq!(perm[..2], [1, 0]);
        assert_eq!(s.holder, 1);
        assert_eq!(s.clients[1].gen, 2);
        assert!(s.clients[0].is_idle());
    }

    #[test]
    fn canonicalize_puts_the_holder_last_among_identical_slots() {
        let mut a = State::initial();
        a.holder = 0;
        let mut b = State::initial();
        b.holder = 1;
        a.canonicalize(3);
        b.canonicalize(3);
        assert_eq!(a, b);
        assert_eq!(a.holder, 2);
    }

    #[test]
    fn the_encoding_changes_with_every_field() {
        let base = State::initial();
        let mut variants = Vec::new();
        let mut push = |f: &dyn Fn(&mut State)| {
            let mut s = base;
            f(&mut s);
            variants.push(s.encode());
        };
        push(&|s| s.clients[4].node = 1);
        push(&|s| s.writes[11].stage = 1);
        push(&|s| s.holder = 0);
        push(&|s| s.grants = 1);
        push(&|s| s.token_max = 1);
        push(&|s| s.failovers = 1);
        push(&|s| s.counter = 1);
        push(&|s| s.backup = 1);
        push(&|s| s.backup_lease = 1);
        push(&|s| s.replicas[4] = 1);
        push(&|s| s.fence = 1);
        push(&|s| s.accepted_gen_max = 1);
        push(&|s| s.accepted_token = 1);
        push(&|s| s.value = 1);
        push(&|s| s.effects[11] = EFFECT_PERFORMED);
        push(&|s| s.violations = 1);
        push(&|s| s.stale_attempt_seen = true);
        push(&|s| s.job_from = 1);
        push(&|s| s.job_done = true);
        push(&|s| s.proposal = 1);
        push(&|s| s.acks = 1);
        push(&|s| s.ready = true);
        push(&|s| s.heard_max = 1);
        push(&|s| s.proposing = 1);
        push(&|s| s.answers[4] = 1);
        variants.push(base.encode());
        let count = variants.len();
        variants.sort();
        variants.dedup();
        assert_eq!(variants.len(), count);
    }

    #[test]
    fn pushing_and_removing_writes_keeps_the_order_a_sort_gives() {
        let mut s = State::initial();
        let write = |gen| Write {
            gen,
            token: gen,
            read: 0,
            stage: 0,
        };
        for gen in [5, 2, 9, 1, 12, 7, 3, 11, 4, 10, 6, 8] {
            s.push_write(write(gen));
            let mut sorted = s;
            sorted.sort_writes();
            assert_eq!(s, sorted, "after pushing {gen}");
        }
        for index in [3, 0, 9, 4, 0, 6, 1, 2, 0, 2, 1, 0] {
            s.remove_write(index);
            let mut sorted = s;
            sorted.sort_writes();
            assert_eq!(s, sorted, "after removing slot {index}");
        }
        assert_eq!(s.writes_in_flight().count(), 0);
    }

    #[test]
    fn writes_stay_sorted_by_generation() {
        let mut s = State::initial();
        s.push_write(Write {
            gen: 3,
            token: 3,
            read: 0,
            stage: 0,
        });
        s.push_write(Write {
            gen: 1,
            token: 1,
            read: 0,
            stage: 0,
        });
        assert_eq!(
            s.writes_in_flight().map(|w| w.gen).collect::<Vec<_>>(),
            vec![1, 3]
        );
        s.remove_write(0);
        assert_eq!(
            s.writes_in_flight().map(|w| w.gen).collect::<Vec<_>>(),
            vec![3]
        );
    }
}
