//! The lock domain's messages, shared by every built-in protocol.
//!
//! Three roles talk: workers ask the coordinator for leases and the resource
//! for reads and writes. Every message is a small `Copy` value so the
//! simulator can move millions of them per second without allocating.
//!
//! Identity versus order: `owner` is the lease holder's nonce (Redis's
//! "random value"). It says *which* acquisition a lease belongs to, but has
//! no order. `token` is the fencing token: an order the resource can check.
//! Protocols without fencing send `token: None`.
//!
//! `Msg` keeps the lock-domain core flat — acquire, grant, release, renew,
//! read, write, effects, reservations: what the recorder and the checkers
//! reason about. Each real system's own messages are a nested enum declared
//! in that system's file with [`system_msgs!`] (`Msg::Zk(ZkMsg)`, …): one
//! declaration per message yields its wire name, trace tag, key, trace
//! words and their names, drawing class and lock-domain event. The nested
//! variants and `Msg`'s delegations to them are generated from the system
//! registry (`systems::for_each_system!`), so adding a system adds no line
//! here.

/// A lock key / protected document. Scenarios name keys; ids are indexes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Key(pub u16);

/// An operation id. Every write carries its op id as the value it stores, so
/// a read tells exactly which write it saw. `OpId(0)` is the initial value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct OpId(pub u64);

impl OpId {
    pub const INITIAL: OpId = OpId(0);
}

/// A fencing token (a lock generation as the coordinator numbers it).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Token(pub u64);

/// A request id, echoed in replies so a client can drop stale ones.
pub type ReqId = u32;

/// Request ids carry the sender's incarnation (bits 20..31; bit 31 is left
/// to the worker's renewals) above a per-incarnation counter: a node that
/// restarts and counts again from 1 must never take a reply meant for its
/// previous incarnation — matched on the id alone, it would act on an
/// answer to a request it never sent. The first incarnation (0) keeps the
/// plain ids 1, 2, 3…
pub const REQ_INCARNATION_SHIFT: u32 = 20;
const REQ_COUNTER_MASK: ReqId = (1 << REQ_INCARNATION_SHIFT) - 1;
const REQ_INCARNATION_MASK: ReqId = (1 << (31 - REQ_INCARNATION_SHIFT)) - 1;

/// The first request id of `incarnation` (0 on first boot).
pub fn first_req(incarnation: u32) -> ReqId {
    ((incarnation & REQ_INCARNATION_MASK) << REQ_INCARNATION_SHIFT) | 1
}

/// The id after `req` within the same incarnation (the counter wraps, the
/// incarnation bits stay).
pub fn next_req(req: ReqId) -> ReqId {
    (req & !REQ_COUNTER_MASK) | (req.wrapping_add(1) & REQ_COUNTER_MASK)
}

use crate::protocol::systems::base::LockSystem;

/// The simulator moves millions of messages: `Msg` stays a small `Copy`
/// value (48 bytes when the systems' messages were split out of it).
const _: () = assert!(std::mem::size_of::<Msg>() <= 48);

/// Declares `Msg` with one nested variant per registered system (the
/// registry, `systems::for_each_system!`, calls it with its lines), so a
/// new system adds no line here.
macro_rules! declare_msg {
    ($( $variant:ident => $system:path ),* $(,)?) => {
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Msg {
    // worker -> coordinator
    Acquire {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    Release {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    /// Heartbeat: extend the lease held under `owner` by a full TTL.
    Renew {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    // coordinator -> worker
    Granted {
        req: ReqId,
        key: Key,
        owner: u64,
        token: Option<Token>,
        ttl_ns: u64,
    },
    Busy {
        req: ReqId,
        key: Key,
    },
    /// `removed` is the owner nonce of the lease record the release deleted.
    Released {
        req: ReqId,
        key: Key,
        removed: Option<u64>,
    },
    /// The lease of `owner` now runs `ttl_ns` from the coordinator's step.
    Renewed {
        req: ReqId,
        key: Key,
        owner: u64,
        ttl_ns: u64,
    },
    /// The lease is gone (expired, or someone else's now): the holder lost it.
    RenewFailed {
        req: ReqId,
        key: Key,
        owner: u64,
    },
    // worker -> resource
    Read {
        req: ReqId,
        key: Key,
        op: OpId,
        token: Option<Token>,
    },
    Write {
        req: ReqId,
        key: Key,
        op: OpId,
        token: Option<Token>,
        value: OpId,
    },
    // resource -> worker
    ReadOk {
        req: ReqId,
        key: Key,
        op: OpId,
        value: OpId,
    },
    ReadRejected {
        req: ReqId,
        key: Key,
        op: OpId,
        fence: Token,
    },
    WriteOk {
        req: ReqId,
        key: Key,
        op: OpId,
    },
    WriteRejected {
        req: ReqId,
        key: Key,
        op: OpId,
        fence: Token,
    },
    // coordinator replica <-> replica
    /// Asynchronous replication (Redis primary -> replica): the primary's
    /// INCR counter and its lease on `key` (owner 0: none), as of now.
    Replicate {
        key: Key,
        counter: u64,
        owner: u64,
        token: Option<Token>,
        expires_wall_ns: i64,
    },
    /// Quorum commit of a generation before it is handed out (Chubby).
    Propose {
        gen: u64,
    },
    Accepted {
        gen: u64,
        ok: bool,
    },
    /// A newly promoted primary asks every replica for the highest
    /// generation it accepted; it serves only after a majority answered.
    QueryMax,
    MaxIs {
        gen: u64,
    },
    /// The failover orchestrator (Sentinel, an election) makes a backup
    /// primary. Sent by the harness on a `failover` fault.
    Promote,
    // The real systems' own messages, each declared in its system's file
    // and named by one line of the registry (src/protocol/systems/mod.rs).
    $(
        #[doc = concat!("The messages of `", stringify!($system), "`.")]
        $variant(<$system as LockSystem>::Msg),
    )*
    // worker or outbox dispatcher -> effect sink (email / payment provider)
    /// Perform the irreversible effect of `op`; `idem_key` is the provider's
    /// idempotency key (`None`: the caller sends none).
    Effect {
        req: ReqId,
        key: Key,
        op: OpId,
        idem_key: Option<u64>,
    },
    /// `performed`: false when the provider recognised the key and did nothing.
    EffectOk {
        req: ReqId,
        key: Key,
        op: OpId,
        performed: bool,
    },
    // outbox dispatcher <-> store
    /// Mark `delivered` delivered (`OpId::INITIAL`: nothing), then ask for
    /// the oldest undelivered outbox entry — one round trip, so an
    /// acknowledgement can never arrive after the poll that follows it.
    OutboxPoll {
        req: ReqId,
        delivered: OpId,
    },
    /// The oldest undelivered entry (`op` = `OpId::INITIAL`: none).
    OutboxEntry {
        req: ReqId,
        key: Key,
        op: OpId,
    },
    // active/passive pair (src/protocol/active_passive.rs), node <-> peer
    /// The active's heartbeat, with the epoch it acts under.
    PairHeartbeat {
        key: Key,
        epoch: u64,
    },
    /// STONITH ("shoot the other node in the head"): the fencing command a
    /// passive sends before it takes over; its receiver powers off.
    Stonith {
        key: Key,
        epoch: u64,
    },
    // pair node -> storage: SCSI-3 persistent reservation PREEMPT
    /// Raise the storage's fence for `key` to `epoch` (if not below it):
    /// from now on, writes under older epochs are refused.
    Reserve {
        req: ReqId,
        key: Key,
        epoch: u64,
    },
    /// `ok`: the fence is now `fence` = the reserved epoch; otherwise a
    /// newer epoch holds it.
    Reserved {
        req: ReqId,
        key: Key,
        ok: bool,
        fence: u64,
    },
}

impl Msg {
    /// The wire name, as in the trace and the JSON-lines protocol.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Acquire { .. } => "acquire",
            Msg::Release { .. } => "release",
            Msg::Granted { .. } => "acquire_ok",
            Msg::Busy { .. } => "acquire_busy",
            Msg::Released { .. } => "release_ok",
            Msg::Read { .. } => "read",
            Msg::Write { .. } => "write",
            Msg::ReadOk { .. } => "read_ok",
            Msg::ReadRejected { .. } => "read_rejected",
            Msg::WriteOk { .. } => "write_ok",
            Msg::WriteRejected { .. } => "write_rejected",
            Msg::Renew { .. } => "renew",
            Msg::Renewed { .. } => "renew_ok",
            Msg::RenewFailed { .. } => "renew_failed",
            Msg::Replicate { .. } => "replicate",
            Msg::Propose { .. } => "propose",
            Msg::Accepted { .. } => "accepted",
            Msg::QueryMax => "query_max",
            Msg::MaxIs { .. } => "max_is",
            Msg::Promote => "promote",
            Msg::Effect { .. } => "effect",
            Msg::EffectOk { .. } => "effect_ok",
            Msg::OutboxPoll { .. } => "outbox_poll",
            Msg::OutboxEntry { .. } => "outbox_entry",
            Msg::PairHeartbeat { .. } => "pair_heartbeat",
            Msg::Stonith { .. } => "stonith",
            Msg::Reserve { .. } => "reserve",
            Msg::Reserved { .. } => "reserved",
            $( Msg::$variant(m) => m.name(), )*
        }
    }

    /// A stable small integer per variant, used by the binary trace encoding.
    pub fn tag(&self) -> u8 {
        match self {
            Msg::Acquire { .. } => 1,
            Msg::Release { .. } => 2,
            Msg::Granted { .. } => 3,
            Msg::Busy { .. } => 4,
            Msg::Released { .. } => 5,
            Msg::Read { .. } => 6,
            Msg::Write { .. } => 7,
            Msg::ReadOk { .. } => 8,
            Msg::ReadRejected { .. } => 9,
            Msg::WriteOk { .. } => 10,
            Msg::WriteRejected { .. } => 11,
            Msg::Renew { .. } => 12,
            Msg::Renewed { .. } => 13,
            Msg::RenewFailed { .. } => 14,
            Msg::Replicate { .. } => 15,
            Msg::Propose { .. } => 16,
            Msg::Accepted { .. } => 17,
            Msg::QueryMax => 18,
            Msg::MaxIs { .. } => 19,
            Msg::Promote => 20,
            Msg::Effect { .. } => 40,
            Msg::EffectOk { .. } => 41,
            Msg::OutboxPoll { .. } => 42,
            Msg::OutboxEntry { .. } => 43,
            Msg::PairHeartbeat { .. } => 44,
            Msg::Stonith { .. } => 45,
            Msg::Reserve { .. } => 46,
            Msg::Reserved { .. } => 47,
            $( Msg::$variant(m) => m.tag(), )*
        }
    }

    /// The key a message is about (`Key(0)` for replica-internal messages,
    /// which are about the coordinator's state as a whole).
    pub fn key(&self) -> Key {
        match *self {
            Msg::Propose { .. }
            | Msg::Accepted { .. }
            | Msg::QueryMax
            | Msg::MaxIs { .. }
            | Msg::Promote
            | Msg::OutboxPoll { .. } => Key(0),
            Msg::Acquire { key, .. }
            | Msg::Release { key, .. }
            | Msg::Granted { key, .. }
            | Msg::Busy { key, .. }
            | Msg::Released { key, .. }
            | Msg::Read { key, .. }
            | Msg::Write { key, .. }
            | Msg::ReadOk { key, .. }
            | Msg::ReadRejected { key, .. }
            | Msg::WriteOk { key, .. }
            | Msg::WriteRejected { key, .. }
            | Msg::Renew { key, .. }
            | Msg::Renewed { key, .. }
            | Msg::RenewFailed { key, .. }
            | Msg::Replicate { key, .. }
            | Msg::Effect { key, .. }
            | Msg::EffectOk { key, .. }
            | Msg::OutboxEntry { key, .. }
            | Msg::PairHeartbeat { key, .. }
            | Msg::Stonith { key, .. }
            | Msg::Reserve { key, .. }
            | Msg::Reserved { key, .. } => key,
            $( Msg::$variant(m) => m.key(), )*
        }
    }

    /// The names of [`Msg::words`] for the real-system protocols' messages,
    /// which the trace renders generically (`""`: not shown). Other
    /// messages have hand-written renderings and answer all blanks.
    pub fn field_names(&self) -> [&'static str; 5] {
        match self {
            $( Msg::$variant(m) => m.field_names(), )*
            Msg::PairHeartbeat { .. } | Msg::Stonith { .. } => ["", "epoch", "", "", ""],
            Msg::Reserve { .. } => ["req", "", "epoch", "", ""],
            Msg::Reserved { .. } => ["req", "", "ok", "fence", ""],
            _ => [""; 5],
        }
    }

    /// Every field as a fixed list of words, in declaration order; absent
    /// options encode as 0 (tokens start at 1). The trace hash and the
    /// text renderer both read this, so they can never disagree.
    pub fn words(&self) -> [u64; 5] {
        let tok = |t: Option<Token>| t.map_or(0, |t| t.0);
        match *self {
            Msg::Acquire { req, key, owner } | Msg::Release { req, key, owner } => {
                [req as u64, key.0 as u64, owner, 0, 0]
            }
            Msg::Granted {
                req,
                key,
                owner,
                token,
                ttl_ns,
            } => [req as u64, key.0 as u64, owner, tok(token), ttl_ns],
            Msg::Busy { req, key } => [req as u64, key.0 as u64, 0, 0, 0],
            Msg::Released { req, key, removed } => [
                req as u64,
                key.0 as u64,
                removed.unwrap_or(0),
                removed.is_some() as u64,
                0,
            ],
            Msg::Read {
                req,
                key,
                op,
                token,
            } => [req as u64, key.0 as u64, op.0, tok(token), 0],
            Msg::Write {
                req,
                key,
                op,
                token,
                value,
            } => [req as u64, key.0 as u64, op.0, tok(token), value.0],
            Msg::ReadOk {
                req,
                key,
                op,
                value,
            } => [req as u64, key.0 as u64, op.0, value.0, 0],
            Msg::ReadRejected {
                req,
                key,
                op,
                fence,
            }
            | Msg::WriteRejected {
                req,
                key,
                op,
                fence,
            } => [req as u64, key.0 as u64, op.0, fence.0, 0],
            Msg::WriteOk { req, key, op } => [req as u64, key.0 as u64, op.0, 0, 0],
            Msg::Renew { req, key, owner } | Msg::RenewFailed { req, key, owner } => {
                [req as u64, key.0 as u64, owner, 0, 0]
            }
            Msg::Renewed {
                req,
                key,
                owner,
                ttl_ns,
            } => [req as u64, key.0 as u64, owner, ttl_ns, 0],
            Msg::Replicate {
                key,
                counter,
                owner,
                token,
                expires_wall_ns,
            } => [
                key.0 as u64,
                counter,
                owner,
                tok(token),
                expires_wall_ns as u64,
            ],
            Msg::Propose { gen } | Msg::MaxIs { gen } => [gen, 0, 0, 0, 0],
            Msg::Accepted { gen, ok } => [gen, ok as u64, 0, 0, 0],
            Msg::QueryMax | Msg::Promote => [0; 5],
            $( Msg::$variant(m) => m.words(), )*
            Msg::Effect {
                req,
                key,
                op,
                idem_key,
            } => [
                req as u64,
                key.0 as u64,
                op.0,
                idem_key.unwrap_or(0),
                idem_key.is_some() as u64,
            ],
            Msg::EffectOk {
                req,
                key,
                op,
                performed,
            } => [req as u64, key.0 as u64, op.0, performed as u64, 0],
            Msg::OutboxPoll { req, delivered } => [req as u64, delivered.0, 0, 0, 0],
            Msg::OutboxEntry { req, key, op } => [req as u64, key.0 as u64, op.0, 0, 0],
            Msg::PairHeartbeat { key, epoch } | Msg::Stonith { key, epoch } => {
                [key.0 as u64, epoch, 0, 0, 0]
            }
            Msg::Reserve { req, key, epoch } => [req as u64, key.0 as u64, epoch, 0, 0],
            Msg::Reserved {
                req,
                key,
                ok,
                fence,
            } => [req as u64, key.0 as u64, ok as u64, fence, 0],
        }
    }

    /// Is it one of the registered systems' own messages?
    pub fn is_system(&self) -> bool {
        matches!(self, $( Msg::$variant(_) )|*)
    }

    /// A system message's drawing class (`None`: a core message, which
    /// the report classifies itself).
    pub fn system_draw(&self) -> Option<Draw> {
        match self {
            $( Msg::$variant(m) => Some(m.draw()), )*
            _ => None,
        }
    }

    /// What a system message means in the lock domain, as its declaration
    /// says (`None`: nothing the recorder records, or a core message).
    pub fn lock_domain_event(&self) -> Option<LockDomainEvent> {
        match self {
            $( Msg::$variant(m) => m.lock_domain_event(), )*
            _ => None,
        }
    }
}

    };
}

crate::protocol::systems::for_each_system!(declare_msg);

/// How a report draws a message (its colour family).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Draw {
    Acquire,
    Grant,
    Release,
    Read,
    Write,
    Rejected,
    Replica,
}

/// What one of a system's messages means in the lock domain — the few the
/// recorder turns into history records; every other system message is
/// recorded through the client's `Observation`s. Declared per message in
/// [`system_msgs!`] (`=> Release(owner)`), so the recorder has no arm per
/// system.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockDomainEvent {
    /// A fired watch reached a waiter.
    WatchNotified,
    /// The holder's release of the grant its acquisition nonce names.
    Release(u64),
    /// One copy of an acquisition attempt sent to each of N servers: the
    /// first copy per nonce is the acquire (one decision, one record).
    FannedAcquire(u64),
    /// One copy of a release sent to each of N servers: the first copy of
    /// a nonce that was granted is its release (a failed attempt's unlock
    /// is none).
    FannedRelease(u64),
}

/// The `lock_domain_event` of one declared message (see [`system_msgs!`]).
macro_rules! lock_domain_event {
    () => {
        None
    };
    ($event:ident) => {
        Some($crate::protocol::msg::LockDomainEvent::$event)
    };
    ($event:ident ($nonce:ident)) => {
        Some($crate::protocol::msg::LockDomainEvent::$event($nonce))
    };
}
pub(crate) use lock_domain_event;

/// A field of a system message as one trace word.
pub trait Word: Copy {
    fn word(self) -> u64;
}

impl Word for u64 {
    fn word(self) -> u64 {
        self
    }
}

impl Word for u32 {
    fn word(self) -> u64 {
        self as u64
    }
}

impl Word for bool {
    fn word(self) -> u64 {
        self as u64
    }
}

impl Word for Key {
    fn word(self) -> u64 {
        self.0 as u64
    }
}

/// A message's words, zero-padded to the trace's five.
pub fn pad_words(words: &[u64]) -> [u64; 5] {
    let mut out = [0; 5];
    out[..words.len()].copy_from_slice(words);
    out
}

/// A message's field names, blank-padded to the trace's five.
pub fn pad_names(names: &[&'static str]) -> [&'static str; 5] {
    let mut out = [""; 5];
    out[..names.len()].copy_from_slice(names);
    out
}

/// Declares one system's messages — a nested enum of [`Msg`] — from one
/// line per message: `Variant = (tag, "wire_name", Draw) { field: Type =>
/// "trace name", … }`. Generates `name`, `tag`, `key`, `field_names`,
/// `words` (fields in declaration order; a `""` trace name is not shown)
/// and `draw`, so no per-message table is written by hand. A message that
/// is a lock-domain event says so after its fields: `=> Release(owner)`,
/// `=> WatchNotified` (see [`LockDomainEvent`]). Every system
/// message carries `key`; tags must stay unique across all of `Msg` (the
/// trace encoding), which `tests/it/sim` pins through the trace hashes.
macro_rules! system_msgs {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = ($tag:literal, $wire:literal, $draw:ident) {
                    $( $field:ident : $ty:ty => $word:literal ),* $(,)?
                } $( => $event:ident $( ($nonce:ident) )? )?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum $name {
            $( $(#[$vmeta])* $variant { $( $field: $ty ),* } ),*
        }

        impl $name {
            /// Every wire name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),*];

            /// The wire name, as in the trace and the JSON-lines protocol.
            pub fn name(&self) -> &'static str {
                match self { $( $name::$variant { .. } => $wire ),* }
            }

            /// The binary trace encoding's tag.
            pub fn tag(&self) -> u8 {
                match self { $( $name::$variant { .. } => $tag ),* }
            }

            pub fn key(&self) -> $crate::protocol::msg::Key {
                match *self { $( $name::$variant { key, .. } => key ),* }
            }

            /// How a report draws it.
            pub fn draw(&self) -> $crate::protocol::msg::Draw {
                match self { $( $name::$variant { .. } => $crate::protocol::msg::Draw::$draw ),* }
            }

            /// The trace names of [`Self::words`] (`""`: not shown).
            pub fn field_names(&self) -> [&'static str; 5] {
                match self {
                    $( $name::$variant { .. } => $crate::protocol::msg::pad_names(&[$($word),*]) ),*
                }
            }

            /// What it means in the lock domain (`=> Event(nonce_field)`
            /// in its declaration; `None`: nothing the recorder records).
            pub fn lock_domain_event(&self) -> Option<$crate::protocol::msg::LockDomainEvent> {
                match *self {
                    $( $name::$variant { $($( $nonce, )?)? .. } =>
                        $crate::protocol::msg::lock_domain_event!($( $event $( ($nonce) )? )?) ),*
                }
            }

            /// Every field as a trace word, in declaration order.
            pub fn words(&self) -> [u64; 5] {
                match *self {
                    $( $name::$variant { $($field),* } => $crate::protocol::msg::pad_words(
                        &[$( $crate::protocol::msg::Word::word($field) ),*]
                    ) ),*
                }
            }
        }
    };
}
pub(crate) use system_msgs;
