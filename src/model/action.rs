//! The model's vocabulary: an [`Action`] (one atomic step, all of its
//! nondeterminism in its parameters), the [`Event`] it produced with its
//! values, a write's [`Outcome`], and [`describe`], the one line a step
//! reads as in a timeline. Below both the model (`lock_model.rs`, which
//! labels its steps with it) and the replay (`counterexample.rs`, which
//! records them), so neither imports the other to speak.

use super::spec::Violation;
use std::fmt::Write as _;

/// One atomic step. Client indices are slots of the state the action applies to (with
/// symmetry on, slots are re-sorted after each step; `counterexample::replay` maps them back to
/// stable client ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The coordinator grants the free lease to `client`. `quorum` is the bitmask of voters
    /// that stored the new generation (consensus-generation), 0 for the other protocols.
    Acquire { client: u8, quorum: u8 },
    /// zk-sequential: `client` creates its ephemeral sequential node.
    CreateNode { client: u8 },
    /// zk-sequential: the session of `client`, which does not hold the lock, expires (or is
    /// closed): its ephemeral node is deleted. The holder's node goes with `Expire`.
    DeleteNode { client: u8 },
    /// The live lease ends (TTL elapsed, session expired); its holder is not told.
    Expire,
    /// etcd's Mutex: the server answers `client`'s acquisition "you are first" (its key lives
    /// and no key below it does; without the re-check: no key below it lives). The client
    /// holds the answer until it acts on it (`Acquire`), loses it or gives up.
    Answer { client: u8 },
    /// etcd's Mutex: the answer `client` holds is lost (the reply dropped, or its request
    /// given up and sent again); the acquisition waits on.
    DropAnswer { client: u8 },
    /// etcd's Mutex: `client`'s acquisition ends without a decision (`Lock` returned an
    /// error, the request timed out); its key lives until its lease goes.
    Abandon { client: u8 },
    /// `client` reads the resource's current value under its grant.
    Read { client: u8 },
    /// `client` sends its one write under its grant; it goes in flight.
    SendWrite { client: u8 },
    /// The resource processes the in-flight write of generation `gen` (fenced-check-then-write:
    /// only the compare).
    DeliverWrite { gen: u8 },
    /// fenced-check-then-write: the resource writes the body of a write that passed its check.
    CommitWrite { gen: u8 },
    /// incr-beside-lease: a replication message reaches the backup with a state the primary
    /// had: its counter then, `counter`, and its lease then (`lease`: that grant's
    /// generation, 0 none). The messages may arrive late and out of order, so the backup
    /// may go back to an older state.
    Replicate { counter: u8, lease: u8 },
    /// queue-claim: the live claim's holder deletes the head job, which has a result
    /// (`DeleteMessage`); the claim ends and the next job is the head.
    DeleteJob,
    /// active-passive: `client`, active, stops believing it is active (it hears a newer
    /// active, is fenced off by STONITH, crashes); its writes in flight stay in flight.
    StepDown { client: u8 },
    /// active-passive: generation `gen`'s write in flight will never reach the storage (lost,
    /// or its sender's later command executed first: the ordered session discards it).
    DropWrite { gen: u8 },
    /// Effect sinks: a request for generation `gen`'s effect (owed: its write was accepted)
    /// goes in flight to the sink — the first call, a retry, or a copy.
    SendEffect { gen: u8 },
    /// Effect sinks: the sink handles one request for generation `gen`'s effect.
    DeliverEffect { gen: u8 },
    /// The coordinator fails over. consensus-generation: the leader stops for good (its lease
    /// table with it) and the next voter leads, not ready until it has heard a majority; of
    /// the proposals in flight, those in `uncommitted` (a subset, bit g - 1) stay in flight
    /// (the others were addressed to the stopped leader only); `quorum` is 0.
    /// incr-beside-lease (`uncommitted` 0): the backup is promoted with its counter and, with
    /// `quorum` 1, its copy of a lease still live (0: it has no live one).
    Failover { uncommitted: u8, quorum: u8 },
    /// consensus-generation: the ready leader, asked by `client` for the free lease, proposes
    /// generation `counter + 1` (stored as its own; the `Propose` goes in flight). Where the
    /// leader alone is a majority, it grants `client` at once.
    Propose { client: u8 },
    /// consensus-generation: a `Propose` of generation `gen` in flight reaches live voter
    /// `replica`, which stores it iff it is above its own (else refuses); `last`: no other
    /// copy of it is left in flight.
    Accept { replica: u8, gen: u8, last: bool },
    /// consensus-generation: the leader hears `replica`'s acceptance of its open proposal (the
    /// voter holds that generation or a higher one); once a majority did, it grants `client`
    /// the proposal's generation as the token.
    Ack { replica: u8, client: u8 },
    /// consensus-generation: the leader gives its open proposal up (its retry timer fired, or
    /// a voter refused it); the generation is never proposed by it again.
    GiveUp,
    /// consensus-generation: `replica` answers the not-ready leader's query with its
    /// generation (the answer goes in flight).
    Report { replica: u8 },
    /// consensus-generation: the not-ready leader hears `replica`'s answer `gen` — one the
    /// voter had since its first answer in flight was sent (its generation only grows);
    /// with a majority heard it takes the highest and is ready.
    Heard { replica: u8, gen: u8 },
}

/// What a resource did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    Accepted,
    Rejected,
    /// fenced-check-then-write: the compare passed; the body is written by a later commit.
    CheckPassed,
    /// conditional-write: applied, its read (the generation whose value it read, 0 = the
    /// initial one) being the current value.
    ConditionHeld {
        read: u8,
    },
    /// conditional-write: rejected, the value it read being no longer the current one.
    ConditionFailed {
        read: u8,
        current: u8,
    },
    /// store-lock: applied and committed, its grant holding the lease; the commit frees it.
    Committed,
    /// store-lock: refused, its grant no longer holding the lease (expired, released,
    /// committed or superseded).
    GrantEnded,
    /// queue-claim: kept, the first result for the head job (its claim live or not).
    FirstResult,
    /// queue-claim: refused, its job already having a result (or deleted).
    JobDone,
}

/// An action with the values it produced, for timelines and scripted scenarios.
/// `client` in write events is `UNKNOWN_CLIENT` from `step`; `counterexample::replay` fills it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    Granted {
        client: u8,
        generation: u8,
        token: u8,
        quorum: u8,
    },
    NodeCreated {
        client: u8,
        seq: u8,
    },
    /// etcd's Mutex: `client` puts its key at revision `rev`.
    KeyCreated {
        client: u8,
        rev: u8,
    },
    /// etcd's Mutex: `client`'s key of revision `rev` is deleted (its lease expired or was
    /// revoked), which takes revision `at`.
    KeyDeleted {
        client: u8,
        rev: u8,
        at: u8,
    },
    /// etcd's Mutex: the server tells `client` that its key `rev` is first (`live`: its key
    /// still lives; false only without the re-check).
    Answered {
        client: u8,
        rev: u8,
        live: bool,
    },
    AnswerLost {
        client: u8,
        rev: u8,
    },
    Abandoned {
        client: u8,
        rev: u8,
    },
    /// etcd's Mutex: `client` acts on its answer and decides it holds the lock: generation
    /// `generation`, its key's revision `token` as the token (`newer`: the greatest token a
    /// decision carried before, when above it).
    Decided {
        client: u8,
        generation: u8,
        token: u8,
        newer: u8,
    },
    LeaseExpired {
        client: u8,
    },
    NodeDeleted {
        client: u8,
        seq: u8,
    },
    /// `value` is the generation whose write produced the value read (0 = initial).
    ValueRead {
        client: u8,
        generation: u8,
        token: u8,
        value: u8,
        rejected: bool,
    },
    WriteSent {
        client: u8,
        generation: u8,
        token: u8,
        read_value: Option<u8>,
    },
    WriteDelivered {
        client: u8,
        generation: u8,
        token: u8,
        fence_before: u8,
        outcome: Outcome,
    },
    WriteCommitted {
        client: u8,
        generation: u8,
        token: u8,
        fence_before: u8,
    },
    Replicated {
        counter: u8,
        /// The generation of the lease shipped with it (0: none).
        lease: u8,
    },
    /// incr-beside-lease: the backup is promoted holding its copy of generation
    /// `generation`'s lease, still live (the primary may have ended it since).
    PromotedWithLease {
        counter_before: u8,
        counter_after: u8,
        generation: u8,
    },
    JobDeleted {
        client: u8,
    },
    SteppedDown {
        client: u8,
    },
    WriteDropped {
        generation: u8,
    },
    /// `copies`: the requests for the effect in flight after this one was sent.
    EffectRequested {
        generation: u8,
        copies: u8,
    },
    /// `performed`: the sink performed the effect (false: it recognised the key).
    EffectDelivered {
        generation: u8,
        performed: bool,
    },
    FailedOver {
        counter_before: u8,
        counter_after: u8,
        uncommitted: u8,
        quorum: u8,
    },
    /// consensus-generation: the leader stopped; the next voter leads (not ready), with the
    /// proposals `in_flight` (bit g - 1) still in flight.
    LeaderStopped {
        counter_before: u8,
        counter_after: u8,
        in_flight: u8,
    },
    /// consensus-generation: the leader proposed `generation` for `client`.
    Proposed {
        client: u8,
        generation: u8,
    },
    /// consensus-generation: a `Propose` reached a voter; `stored`: above its own, kept.
    ProposalReached {
        replica: u8,
        generation: u8,
        stored: bool,
    },
    /// consensus-generation: an acceptance heard, the open proposal still short of a majority.
    AckHeard {
        replica: u8,
        generation: u8,
    },
    GaveUp {
        generation: u8,
    },
    Reported {
        replica: u8,
        generation: u8,
    },
    /// consensus-generation: the leader heard an answer; `ready`: a majority, and it leads
    /// from generation `counter`.
    Heard {
        replica: u8,
        generation: u8,
        ready: bool,
        counter: u8,
    },
}

pub const UNKNOWN_CLIENT: u8 = u8::MAX;

fn value_name(value: u8) -> String {
    if value == 0 {
        "the initial value".to_string()
    } else {
        format!("the value of generation {value}")
    }
}

/// Token 0 is never issued by a token source; it marks a bare lease's grant.
fn token_name(token: u8) -> String {
    if token == 0 {
        "no token".to_string()
    } else {
        format!("token {token}")
    }
}

/// Generations by bit (bit g - 1: generation g).
fn gens(mask: u8) -> String {
    let names: Vec<String> = (0..8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| format!("{}", i + 1))
        .collect();
    format!("{{{}}}", names.join(","))
}

fn voters(mask: u8) -> String {
    let names: Vec<String> = (0..8)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| format!("r{i}"))
        .collect();
    format!("{{{}}}", names.join(","))
}

/// The resource's (or queue's) handling of one write, as `describe` tells it.
fn delivered(client: u8, generation: u8, token: u8, fence_before: u8, outcome: Outcome) -> String {
    match outcome {
        Outcome::Accepted if token == 0 => {
            format!("resource accepts client {client}'s write of generation {generation} (it checks nothing)")
        }
        Outcome::Accepted => format!(
            "resource accepts client {client}'s write of generation {generation} (token {token}, fence was {fence_before})"
        ),
        Outcome::Rejected => format!(
            "resource rejects client {client}'s write of generation {generation} (token {token} < fence {fence_before})"
        ),
        Outcome::CheckPassed => format!(
            "resource checks client {client}'s write of generation {generation}: token {token} >= fence {fence_before}, body not yet written"
        ),
        Outcome::ConditionHeld { read } => format!(
            "resource accepts client {client}'s write of generation {generation} (it read {}, still current)",
            value_name(read)
        ),
        Outcome::ConditionFailed { read, current } => format!(
            "resource rejects client {client}'s write of generation {generation} (it read {}, now {})",
            value_name(read),
            value_name(current)
        ),
        Outcome::Committed => format!(
            "resource commits client {client}'s write of generation {generation} (its grant holds the lease) and frees the lease"
        ),
        Outcome::GrantEnded => format!(
            "resource rejects client {client}'s write of generation {generation} (its grant no longer holds the lease)"
        ),
        Outcome::FirstResult => format!(
            "queue keeps client {client}'s write of generation {generation} (the first result for the head job)"
        ),
        Outcome::JobDone => format!(
            "queue refuses client {client}'s write of generation {generation} (its job already has a result)"
        ),
    }
}

/// `describe`'s line for an etcd Mutex step: a key, an answer, a decision.
fn etcd_line(event: &Event) -> String {
    match *event {
        Event::KeyCreated { client, rev } => format!("client {client} puts its key at revision {rev}"),
        Event::KeyDeleted { client, rev, at } => format!(
            "client {client}'s key of revision {rev} is deleted (its lease expired or was revoked), taking revision {at}"
        ),
        Event::Answered { client, rev, live: true } => format!(
            "the server answers client {client}: its key {rev} is first; the answer is in flight"
        ),
        Event::Answered { client, rev, live: false } => format!(
            "the server answers client {client}: no key below its key {rev} is left (its own is gone); the answer is in flight"
        ),
        Event::AnswerLost { client, rev } => format!("client {client}'s answer for key {rev} is lost"),
        Event::Abandoned { client, rev } => format!("client {client} gives up its acquisition of key {rev}"),
        Event::Decided { client, generation, token, newer: 0 } => format!(
            "client {client} acts on its answer: it holds the lock (generation {generation}, token {token})"
        ),
        Event::Decided { client, generation, token, newer } => format!(
            "client {client} acts on its old answer: it holds the lock (generation {generation}, token {token}, below token {newer} decided before)"
        ),
        _ => unreachable!("etcd_line is called for etcd steps only"),
    }
}

/// consensus-generation's quorum steps, as `describe` tells them (None: another event).
fn quorum_line(event: &Event) -> Option<String> {
    Some(match *event {
        Event::Proposed { client, generation } => {
            format!("the leader proposes generation {generation} for client {client}")
        }
        Event::ProposalReached { replica, generation, stored: true } => {
            format!("voter r{replica} stores proposed generation {generation}")
        }
        Event::ProposalReached { replica, generation, stored: false } => {
            format!("voter r{replica} refuses proposed generation {generation} (not above its own)")
        }
        Event::AckHeard { replica, generation } => {
            format!("the leader hears r{replica} accepted generation {generation}; no majority yet")
        }
        Event::GaveUp { generation } => format!("the leader gives up its proposal of generation {generation}"),
        Event::Reported { replica, generation } => {
            format!("voter r{replica} answers the new leader's query: generation {generation}")
        }
        Event::Heard { replica, generation, ready: true, counter } => format!(
            "the leader hears r{replica}'s answer {generation}: a majority, it leads from generation {counter}"
        ),
        Event::Heard { replica, generation, .. } => {
            format!("the leader hears r{replica}'s answer {generation}; no majority yet")
        }
        _ => return None,
    })
}

/// One line for a step; `new_violations` marks the step that broke a property.
pub fn describe(event: &Event, new_violations: u8) -> String {
    let mut line = match *event {
        Event::Proposed { .. }
        | Event::ProposalReached { .. }
        | Event::AckHeard { .. }
        | Event::GaveUp { .. }
        | Event::Reported { .. }
        | Event::Heard { .. } => quorum_line(event).unwrap_or_default(),
        Event::Granted { client, generation, token: 0, .. } => {
            format!("client {client} acquires the lease (generation {generation}; no ordered token)")
        }
        Event::Granted { client, generation, token, quorum: 0 } => {
            format!("client {client} is granted generation {generation} with token {token}")
        }
        Event::Granted { client, generation, token, quorum } => format!(
            "client {client} is granted generation {generation} with token {token} (committed on voters {})",
            voters(quorum)
        ),
        Event::NodeCreated { client, seq } => format!("client {client} creates sequential node {seq}"),
        Event::KeyCreated { .. }
        | Event::KeyDeleted { .. }
        | Event::Answered { .. }
        | Event::AnswerLost { .. }
        | Event::Abandoned { .. }
        | Event::Decided { .. } => etcd_line(event),
        Event::LeaseExpired { client } => format!("client {client}'s lease expires; client {client} is not told"),
        Event::NodeDeleted { client, seq } => {
            format!("client {client}'s session ends while it waits: its node {seq} is deleted")
        }
        Event::ValueRead { client, generation, token, rejected: true, .. } => format!(
            "resource rejects client {client}'s read (generation {generation}, token {token}): a newer token was seen; the grant is abandoned"
        ),
        Event::ValueRead { client, generation, value, .. } => {
            format!("client {client} (generation {generation}) reads {}", value_name(value))
        }
        Event::WriteSent { client, generation, token, read_value } => {
            let based = read_value.map(|v| format!(", computed from {}", value_name(v))).unwrap_or_default();
            format!("client {client} sends its write (generation {generation}, {}{based}); it is in flight", token_name(token))
        }
        Event::WriteDelivered { client, generation, token, fence_before, outcome } => {
            delivered(client, generation, token, fence_before, outcome)
        }
        Event::WriteCommitted { client, generation, token, fence_before } => format!(
            "resource writes client {client}'s checked write of generation {generation} and sets the fence to {token} (was {fence_before})"
        ),
        Event::Replicated { counter, lease: 0 } => {
            format!("backup receives the primary's counter {counter} and no lease")
        }
        Event::Replicated { counter, lease } => {
            format!("backup receives the primary's counter {counter} and generation {lease}'s lease")
        }
        Event::PromotedWithLease { counter_before, counter_after, generation } => format!(
            "primary fails over: the backup is promoted with counter {counter_after} (the primary had {counter_before}) and its copy of generation {generation}'s lease, still live"
        ),
        Event::JobDeleted { client } => format!(
            "client {client} deletes the head job, which has a result: its claim ends and the next job is the head"
        ),
        Event::SteppedDown { client } => format!("client {client} steps down: it no longer believes it is active"),
        Event::WriteDropped { generation } => format!(
            "generation {generation}'s write will never reach the resource (lost, or discarded behind its sender's later command)"
        ),
        Event::EffectRequested { generation, copies: 1 } => {
            format!("the sink is asked for generation {generation}'s effect")
        }
        Event::EffectRequested { generation, copies } => format!(
            "the sink is asked for generation {generation}'s effect again ({copies} requests in flight)"
        ),
        Event::EffectDelivered { generation, performed: true } => {
            format!("the sink performs generation {generation}'s effect")
        }
        Event::EffectDelivered { generation, performed: false } => format!(
            "the sink recognises generation {generation}'s idempotency key and does not perform it again"
        ),
        Event::LeaderStopped { counter_before, counter_after, in_flight } => format!(
            "leader fails over: the next voter leads from its generation {counter_after} (the old leader had {counter_before}), not ready until a majority answers; proposals in flight: {}",
            gens(in_flight)
        ),
        Event::FailedOver { counter_before, counter_after, quorum: 0, .. } => format!(
            "primary fails over: the backup is promoted with counter {counter_after} (the primary had {counter_before}); the lease is lost with it"
        ),
        Event::FailedOver { counter_before, counter_after, uncommitted, quorum } => {
            let partial = if uncommitted == 0 {
                String::new()
            } else {
                format!("the old leader left generation {} uncommitted on {}; ", counter_before + 1, voters(uncommitted))
            };
            format!(
                "leader fails over: {partial}the new leader reads majority {} and continues from generation {counter_after}",
                voters(quorum)
            )
        }
    };
    for v in Violation::ALL {
        if new_violations & v.bit() != 0 {
            let _ = write!(line, "  <-- {} violated", v.name());
        }
    }
    line
}
