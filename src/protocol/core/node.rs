//! The sans-IO node interface: the one contract between protocol code and
//! whatever drives it (the simulator, tests, drivers for external processes).
//!
//! A node is a state machine. It is handed an [`Input`] together with its own
//! clock readings and answers by pushing [`Effect`]s; it never reads a clock,
//! draws randomness, sleeps or does I/O. That is what makes a run a pure
//! function of (scenario, seed): everything a node could observe about the
//! world arrives through `handle`.
//!
//! The trait deliberately does not require `Clone` or `Hash`: an external
//! process cannot be cloned. Built-in protocol state may be richer.

use crate::protocol::msg::Msg;

/// Nanoseconds. All time in fencesim is integer nanoseconds.
pub type Nanos = u64;

/// A node's address. The simulator owns the table that maps ids to names
/// (`worker/A`, `coord/0`, `resource/0`); protocol code only compares ids.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct NodeId(pub u16);

impl NodeId {
    /// The coordinator addressed as a group: the network routes it to the
    /// current primary, so clients never hard-code which replica leads.
    pub const COORD_GROUP: NodeId = NodeId(u16::MAX);
}

/// What a node's two clocks read at the instant an input is handed to it.
/// `wall_ns` can jump (and go backwards); `mono_ns` only drifts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Clocks {
    pub wall_ns: i64,
    pub mono_ns: Nanos,
}

/// A persisted record's bytes, as [`Effect::Persist`] carries them: inline
/// up to 32 bytes, on the heap beyond. A worker persists its op counter on
/// every acquire retry, and a `Vec` there was most of the allocations a
/// simulated seed made; a resource's one-key table (26 bytes) fits too.
/// At 32 an `Effect` is no larger (its `Send` variant is the biggest). Build one with `Record::from_slice`, or `.into()`
/// from a `Vec<u8>`; it derefs to `[u8]`.
pub type Record = smallvec::SmallVec<[u8; 32]>;

/// A timer name chosen by the node; setting a timer that is already set
/// replaces it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct TimerId(pub u16);

/// Whether a persisted record survives a crash.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Durability {
    /// fsync'ed before the step's other effects happen: survives a crash.
    Synced,
    /// written to a page cache: lost if the node crashes before a synced write.
    Buffered,
}

#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// The node boots; `recovered` is the last record it persisted as synced
    /// (None on first boot, or when nothing durable was written).
    Start {
        recovered: Option<&'a [u8]>,
    },
    Message {
        from: NodeId,
        msg: Msg,
    },
    Timer {
        timer: TimerId,
    },
}

/// Something a node noticed about itself that is worth recording but that
/// no message carries. The harness decides what to do with it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Observation {
    /// The coordinator dropped a lease record because its TTL ran out on the
    /// coordinator's own clock. `owner` is the nonce the lease was held under.
    LeaseExpired {
        key: crate::protocol::msg::Key,
        owner: u64,
    },
    /// A worker finished every operation of its workload.
    WorkloadDone,
    /// A worker gave up on an operation (retries exhausted, or rejected).
    OpAbandoned { op: crate::protocol::msg::OpId },
    /// A worker learned (a failed renewal) that its lease is gone.
    LeaseLost {
        key: crate::protocol::msg::Key,
        owner: u64,
    },
    /// A client-decided protocol's client (ZooKeeper recipe, Redlock,
    /// DynamoDB lock client, etcd mutex) concluded, at this step, that it
    /// holds the lock of `key` under acquisition `owner`, with fencing
    /// `token` if the protocol has one. No server issues such a lock, so the
    /// harness records this decision as the grant.
    Acquired {
        key: crate::protocol::msg::Key,
        owner: u64,
        token: Option<crate::protocol::msg::Token>,
    },
    /// A node of an active/passive pair (src/protocol/active_passive.rs)
    /// started acting as the owner of `key` under `epoch` (what it believes
    /// its generation is). The harness numbers promotions in true-time order.
    BecameActive {
        key: crate::protocol::msg::Key,
        epoch: Option<crate::protocol::msg::Token>,
    },
    /// A worker acted on this resource reply (`ReadOk`, `ReadRejected`,
    /// `WriteOk`, `WriteRejected`): the answer to its outstanding request.
    /// Late copies, duplicates and answers meant for an earlier incarnation
    /// are delivered too, but only the reply a worker used is its history
    /// (see [`Node::records_own_replies`]).
    ReplyUsed { reply: Msg },
    /// A pair node stopped acting as the owner of `key`, and why.
    SteppedDown {
        key: crate::protocol::msg::Key,
        cause: StepDownCause,
    },
}

/// Why an active/passive node stopped being active.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StepDownCause {
    /// Its peer's STONITH (fencing) command reached it: powered off.
    Stonith,
    /// The storage rejected its I/O: a newer active reserved it.
    FencedByStorage,
    /// It heard a heartbeat from an active with a newer epoch.
    NewerActive,
}

impl StepDownCause {
    pub fn name(self) -> &'static str {
        match self {
            StepDownCause::Stonith => "stonith",
            StepDownCause::FencedByStorage => "fenced by storage",
            StepDownCause::NewerActive => "newer active heard",
        }
    }
}

#[derive(Clone, Debug)]
pub enum Effect {
    Send {
        to: NodeId,
        msg: Msg,
    },
    /// Fire `timer` after `after_ns` on the node's monotonic clock.
    SetTimer {
        timer: TimerId,
        after_ns: Nanos,
    },
    CancelTimer {
        timer: TimerId,
    },
    /// Replace the node's persisted record.
    Persist {
        durability: Durability,
        record: Record,
    },
    Observe(Observation),
}

/// A protocol participant driven by someone else's event loop.
pub trait Node {
    /// React to one input. Effects are applied by the driver in push order,
    /// after `handle` returns, all at the same instant.
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, effects: &mut Vec<Effect>);

    /// Whether this node reports the resource replies it acts on itself
    /// ([`Observation::ReplyUsed`]). If not, the harness records every
    /// reply delivered to it (all a driver for an outside process can offer).
    fn records_own_replies(&self) -> bool {
        false
    }
}
