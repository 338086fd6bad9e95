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
//! in that system's file with [`system_msgs!`] (`Msg::Zk(ZkMsg)`, …). Core
//! and system messages alike are declared once, one line per message
//! ([`msg_enum!`]): the line yields its wire name, trace tag, key, trace
//! words (per field type, [`Word`]), text-trace fields ([`Show`]), drawing
//! class and lock-domain event, so no per-message table is written by
//! hand. The nested variants and `Msg`'s delegations to them are generated
//! from the system registry (`systems::for_each_system!`), so adding a
//! system adds no line here.

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

use crate::protocol::systems::SystemWire;

/// The simulator moves millions of messages: `Msg` stays a small `Copy`
/// value (48 bytes when the systems' messages were split out of it).
const _: () = assert!(std::mem::size_of::<Msg>() <= 48);

/// Declares `Msg` — the core messages, one line each, and one nested
/// variant per registered system (the registry, `systems::for_each_system!`,
/// calls it with its lines), so a new system adds no line here. The line
/// grammar is [`msg_enum!`]'s: `Variant = (tag, "wire_name", Draw) { field:
/// Type => "trace name" Show, … }`. Tags are the binary trace encoding's
/// and pinned by every trace hash: never renumber one.
macro_rules! declare_msg {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        crate::protocol::msg::msg_enum! {
            pub enum Msg {
                // worker -> coordinator
                Acquire = (1, "acquire", Acquire) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex },
                Release = (2, "release", Release) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex },
                /// Heartbeat: extend the lease held under `owner` by a full TTL.
                Renew = (12, "renew", Grant) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex },
                // coordinator -> worker
                Granted = (3, "acquire_ok", Grant) {
                    req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex,
                    token: Option<Token> => "token", ttl_ns: u64 => "ttl" Ms,
                },
                Busy = (4, "acquire_busy", Acquire) { req: ReqId => "req", key: Key => "" },
                /// `removed` is the owner nonce of the lease record the release deleted.
                Released = (5, "release_ok", Release) { req: ReqId => "req", key: Key => "", removed: Option<u64> => "removed" Hex },
                /// The lease of `owner` now runs `ttl_ns` from the coordinator's step.
                Renewed = (13, "renew_ok", Grant) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex, ttl_ns: u64 => "ttl" Ms },
                /// The lease is gone (expired, or someone else's now): the holder lost it.
                RenewFailed = (14, "renew_failed", Rejected) { req: ReqId => "req", key: Key => "", owner: u64 => "owner" Hex },
                // worker -> resource
                Read = (6, "read", Read) { req: ReqId => "req", key: Key => "", op: OpId => "op", token: Option<Token> => "token" },
                Write = (7, "write", Write) {
                    req: ReqId => "req", key: Key => "", op: OpId => "op", token: Option<Token> => "token", value: OpId => "value",
                },
                // resource -> worker
                ReadOk = (8, "read_ok", Read) { req: ReqId => "req", key: Key => "", op: OpId => "op", value: OpId => "value" },
                ReadRejected = (9, "read_rejected", Rejected) { req: ReqId => "req", key: Key => "", op: OpId => "op", fence: Token => "fence" },
                WriteOk = (10, "write_ok", Write) { req: ReqId => "req", key: Key => "", op: OpId => "op" },
                WriteRejected = (11, "write_rejected", Rejected) { req: ReqId => "req", key: Key => "", op: OpId => "op", fence: Token => "fence" },
                // coordinator replica <-> replica
                /// Asynchronous replication (Redis primary -> replica): the primary's
                /// INCR counter and its lease on `key` (owner 0: none), as of now.
                Replicate = (15, "replicate", Replica) {
                    key: Key => "", counter: u64 => "counter", owner: u64 => "lease_owner" Hex,
                    token: Option<Token> => "token", expires_wall_ns: i64 => "",
                },
                /// Quorum commit of a generation before it is handed out (Chubby).
                Propose = (16, "propose", Replica) { gen: u64 => "gen" },
                Accepted = (17, "accepted", Replica) { gen: u64 => "gen", ok: bool => "ok" Flag },
                /// A newly promoted primary asks every replica for the highest
                /// generation it accepted; it serves only after a majority answered.
                QueryMax = (18, "query_max", Replica),
                MaxIs = (19, "max_is", Replica) { gen: u64 => "gen" },
                /// The failover orchestrator (Sentinel, an election) makes a backup
                /// primary. Sent by the harness on a `failover` fault.
                Promote = (20, "promote", Replica),
                // worker or outbox dispatcher -> effect sink (email / payment provider)
                /// Perform the irreversible effect of `op`; `idem_key` is the provider's
                /// idempotency key (`None`: the caller sends none).
                Effect = (40, "effect", Write) {
                    req: ReqId => "req", key: Key => "", op: OpId => "op", idem_key: Option<u64> => "idempotency_key",
                },
                /// `performed`: false when the provider recognised the key and did nothing.
                EffectOk = (41, "effect_ok", Write) { req: ReqId => "req", key: Key => "", op: OpId => "op", performed: bool => "performed" Flag },
                // outbox dispatcher <-> store
                /// Mark `delivered` delivered (`OpId::INITIAL`: nothing), then ask for
                /// the oldest undelivered outbox entry — one round trip, so an
                /// acknowledgement can never arrive after the poll that follows it.
                OutboxPoll = (42, "outbox_poll", Read) { req: ReqId => "req", delivered: OpId => "delivered" },
                /// The oldest undelivered entry (`op` = `OpId::INITIAL`: none).
                OutboxEntry = (43, "outbox_entry", Read) { req: ReqId => "req", key: Key => "", op: OpId => "op" },
                // active/passive pair (src/protocol/active_passive.rs), node <-> peer
                /// The active's heartbeat, with the epoch it acts under.
                PairHeartbeat = (44, "pair_heartbeat", Replica) { key: Key => "", epoch: u64 => "epoch" },
                /// STONITH ("shoot the other node in the head"): the fencing command a
                /// passive sends before it takes over; its receiver powers off.
                Stonith = (45, "stonith", Release) { key: Key => "", epoch: u64 => "epoch" },
                // pair node -> storage: SCSI-3 persistent reservation PREEMPT
                /// Raise the storage's fence for `key` to `epoch` (if not below it):
                /// from now on, writes under older epochs are refused.
                Reserve = (46, "reserve", Acquire) { req: ReqId => "req", key: Key => "", epoch: u64 => "epoch" },
                /// `ok`: the fence is now `fence` = the reserved epoch; otherwise a
                /// newer epoch holds it.
                Reserved = (47, "reserved", Grant if ok else Rejected) { req: ReqId => "req", key: Key => "", ok: bool => "ok", fence: u64 => "fence" },
            }
            // The real systems' own messages, each declared in its system's file
            // and named by one line of the registry (src/protocol/systems/mod.rs).
            nested {
                $(
                    #[doc = concat!("The messages of `", stringify!($system), "`.")]
                    $variant(<$system as SystemWire>::Msg),
                )*
            }
        }
    };
}

crate::protocol::systems::for_each_system!(declare_msg);

/// The or-pattern of every system message (`Msg::Zk(_) | …`), so a match
/// over the core stays exhaustive without an arm per system.
macro_rules! system_msg {
    () => {
        $crate::protocol::systems::for_each_system!($crate::protocol::msg::system_pattern)
    };
}
pub(crate) use system_msg;

macro_rules! system_pattern {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        $( $crate::protocol::msg::Msg::$variant(_) )|*
    };
}
pub(crate) use system_pattern;

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

/// The `lock_domain_event` of one declared message (see [`msg_enum!`]).
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

/// The drawing class of one declared message: `Grant`, or `Grant if ok
/// else Rejected` for a reply whose class depends on its `bool` field.
macro_rules! draw_class {
    ($draw:ident) => {
        $crate::protocol::msg::Draw::$draw
    };
    ($draw:ident if $cond:ident else $other:ident) => {
        if $cond {
            $crate::protocol::msg::Draw::$draw
        } else {
            $crate::protocol::msg::Draw::$other
        }
    };
}
pub(crate) use draw_class;

/// How the text trace shows a field's value (an absent one shows `-`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Show {
    /// Its word in decimal (a `bool` as 0 or 1) — the default.
    Dec,
    /// `0x…`: nonces and session ids, which are bit patterns, not counts.
    Hex,
    /// Nanoseconds shown as whole milliseconds, `…ms`.
    Ms,
    /// A `bool` as `true` / `false`.
    Flag,
}

/// The `Show` of one declared field (none written: `Dec`).
macro_rules! show_style {
    () => {
        $crate::protocol::msg::Show::Dec
    };
    ($show:ident) => {
        $crate::protocol::msg::Show::$show
    };
}
pub(crate) use show_style;

/// One field as the text trace shows it: `name=value` (`name` `""`: not
/// shown; `value` `None`: `-`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Shown {
    pub name: &'static str,
    pub show: Show,
    pub value: Option<u64>,
}

impl Shown {
    /// Padding after a message's last field.
    pub const BLANK: Shown = Shown {
        name: "",
        show: Show::Dec,
        value: None,
    };
}

/// A message field's encoding as trace words, per type. Most fields are
/// one word; an `Option<u64>` is two (value, present), since 0 is a value
/// it may carry, while an `Option<Token>` is one (tokens start at 1, so
/// 0 is none).
pub trait Word: Copy {
    /// How many trace words the field takes.
    const WORDS: usize = 1;
    /// Writes its `WORDS` words at the front of `out`.
    fn put(self, out: &mut [u64]);
    /// Its value for the text trace (`None`: absent).
    fn shown(self) -> Option<u64>;
    /// `Some` for the message's key: a message is about its `Key` field
    /// (`Key(0)` if it has none).
    fn as_key(self) -> Option<Key> {
        None
    }
}

macro_rules! one_word {
    ($($ty:ty => |$v:ident| $word:expr),* $(,)?) => {
        $(
            impl Word for $ty {
                fn put(self, out: &mut [u64]) {
                    out[0] = self.shown().unwrap_or(0);
                }
                fn shown(self) -> Option<u64> {
                    let $v = self;
                    Some($word)
                }
            }
        )*
    };
}

one_word! {
    u64 => |v| v,
    u32 => |v| v as u64,
    // A wall-clock instant may be negative under skew: its bits, as they are.
    i64 => |v| v as u64,
    bool => |v| v as u64,
    OpId => |v| v.0,
    Token => |v| v.0,
}

impl Word for Key {
    fn put(self, out: &mut [u64]) {
        out[0] = self.0 as u64;
    }
    fn shown(self) -> Option<u64> {
        Some(self.0 as u64)
    }
    fn as_key(self) -> Option<Key> {
        Some(self)
    }
}

impl Word for Option<Token> {
    fn put(self, out: &mut [u64]) {
        out[0] = self.map_or(0, |t| t.0);
    }
    fn shown(self) -> Option<u64> {
        self.map(|t| t.0)
    }
}

impl Word for Option<u64> {
    const WORDS: usize = 2;
    fn put(self, out: &mut [u64]) {
        out[0] = self.unwrap_or(0);
        out[1] = self.is_some() as u64;
    }
    fn shown(self) -> Option<u64> {
        self
    }
}

/// A message's fields as the trace's five words, in declaration order.
macro_rules! msg_words {
    ($( $field:ident : $ty:ty ),*) => {{
        #[allow(unused_mut)]
        let mut out = [0u64; 5];
        let mut _at = 0;
        $(
            $crate::protocol::msg::Word::put($field, &mut out[_at..]);
            _at += <$ty as $crate::protocol::msg::Word>::WORDS;
        )*
        out
    }};
}
pub(crate) use msg_words;

/// Declares a message enum from one line per message, so no per-message
/// table is written by hand:
///
/// `Variant = (tag, "wire_name", Draw) { field: Type => "trace name" Show, … } => Event(field)`
///
/// Generates `name`, `tag`, `key` (its `Key` field), `draw`, `shown` (the
/// text trace's fields: a `""` name is not shown, `Show` defaults to
/// `Dec`), `words` (the hashed encoding, fields in declaration order, per
/// type by [`Word`], at most five — checked at compile time) and
/// `lock_domain_event` (after `=>`, see [`LockDomainEvent`]). The draw
/// class may depend on a `bool` field (`Grant if ok else Rejected`); a
/// message without fields omits the braces. `nested { Variant(Type), … }`
/// adds variants that wrap another such enum and delegate to it (`Msg`'s
/// systems). Tags must stay unique across all of `Msg` (the trace
/// encoding), which `tests/it/sim` pins through the trace hashes.
macro_rules! msg_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = ($tag:literal, $wire:literal, $draw:ident $(if $cond:ident else $other:ident)?)
                $({ $( $field:ident : $ty:ty => $fname:literal $($show:ident)? ),* $(,)? })?
                $( => $event:ident $( ($nonce:ident) )? )?
            ),* $(,)?
        }
        $( nested { $( $(#[$nmeta:meta])* $nested:ident($nested_ty:ty) ),* $(,)? } )?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum $name {
            $( $(#[$vmeta])* $variant $({ $( $field: $ty ),* })?, )*
            $($( $(#[$nmeta])* $nested($nested_ty), )*)?
        }

        // At most five trace words per message.
        $( const _: () = assert!(0 $($( + <$ty as $crate::protocol::msg::Word>::WORDS )*)? <= 5); )*

        impl $name {
            /// The wire names declared here, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),*];

            /// The wire name, as in the trace and the JSON-lines protocol.
            pub fn name(&self) -> &'static str {
                match self {
                    $( $name::$variant { .. } => $wire, )*
                    $($( $name::$nested(m) => m.name(), )*)?
                }
            }

            /// A stable small integer per message: the binary trace encoding's tag.
            #[inline]
            pub fn tag(&self) -> u8 {
                match self {
                    $( $name::$variant { .. } => $tag, )*
                    $($( $name::$nested(m) => m.tag(), )*)?
                }
            }

            /// The key a message is about (`Key(0)` for one without a
            /// `Key` field: replica-internal messages, about the
            /// coordinator's state as a whole).
            pub fn key(&self) -> $crate::protocol::msg::Key {
                match *self {
                    $( $name::$variant { $($( $field ),*)? } => None
                        $($( .or($crate::protocol::msg::Word::as_key($field)) )*)?
                        .unwrap_or($crate::protocol::msg::Key(0)), )*
                    $($( $name::$nested(m) => m.key(), )*)?
                }
            }

            /// How a report draws it (its colour family).
            pub fn draw(&self) -> $crate::protocol::msg::Draw {
                match *self {
                    $( $name::$variant { $( $cond, )? .. } =>
                        $crate::protocol::msg::draw_class!($draw $(if $cond else $other)?), )*
                    $($( $name::$nested(m) => m.draw(), )*)?
                }
            }

            /// Its fields as the text trace shows them, padded with blanks.
            pub fn shown(&self) -> [$crate::protocol::msg::Shown; 5] {
                match *self {
                    $( $name::$variant { $($( $field ),*)? } => {
                        let fields: &[$crate::protocol::msg::Shown] = &[$($(
                            $crate::protocol::msg::Shown {
                                name: $fname,
                                show: $crate::protocol::msg::show_style!($($show)?),
                                value: $crate::protocol::msg::Word::shown($field),
                            }
                        ),*)?];
                        let mut out = [$crate::protocol::msg::Shown::BLANK; 5];
                        out[..fields.len()].copy_from_slice(fields);
                        out
                    } )*
                    $($( $name::$nested(m) => m.shown(), )*)?
                }
            }

            /// Every field as trace words, in declaration order; absent
            /// options encode as 0. The trace hash reads this (inlined
            /// there: the five words stay in registers).
            #[inline]
            pub fn words(&self) -> [u64; 5] {
                match *self {
                    $( $name::$variant { $($( $field ),*)? } =>
                        $crate::protocol::msg::msg_words!($($( $field: $ty ),*)?), )*
                    $($( $name::$nested(m) => m.words(), )*)?
                }
            }

            /// What it means in the lock domain (`=> Event(nonce_field)`
            /// in its declaration; `None`: nothing the recorder records).
            pub fn lock_domain_event(&self) -> Option<$crate::protocol::msg::LockDomainEvent> {
                match *self {
                    $( $name::$variant { $($( $nonce, )?)? .. } =>
                        $crate::protocol::msg::lock_domain_event!($( $event $( ($nonce) )? )?), )*
                    $($( $name::$nested(m) => m.lock_domain_event(), )*)?
                }
            }
        }
    };
}
pub(crate) use msg_enum;

/// Declares one system's messages — a nested enum of [`Msg`] — with
/// [`msg_enum!`]'s grammar, one line per message. Every system message
/// carries `key`; tags must stay unique across all of `Msg`.
macro_rules! system_msgs {
    ($($decl:tt)*) => {
        $crate::protocol::msg::msg_enum! { $($decl)* }
    };
}
pub(crate) use system_msgs;
