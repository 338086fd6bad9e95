//! The refinement mapping: a state of the code-level search read as a
//! state of the protocol's atomic-step model (`src/model/`), so that the
//! refinement check (`refine.rs`) can ask whether the model allows each
//! step the shipped code takes. The model's state is one key's lease, the
//! grants and their tokens, the writes in flight and the fenced resource;
//! each of its fields is read from the node structs, the messages in
//! flight, the instant, or the judge's history of the path:
//!
//! - `grants`, `token_max`: the grants the coordinator sent, in issue
//!   order (the judge's list: the model counts grants, the code does not);
//! - `clients`: one slot per grant under which no write was sent yet
//!   (gen = its generation, token = its token or 0). A grant its worker
//!   never adopts (the `Granted` lost or late) keeps its slot: a model
//!   client may hold a grant and never write. The model's client slots are
//!   interchangeable (symmetry on), and there are as many as the grants
//!   bound, so every grant can have one. Where writes are conditional
//!   (the conditional-write model: object-store-cas, cache-lease), its
//!   `read` is the version the store served the read its worker sent under
//!   that grant (the judge's history of served reads: a served read whose
//!   answer the worker never used is still the model's `Read`);
//! - `holder`: the coordinator's lease record for key 0 (single-db: the
//!   row's transaction, on the database's own wall clock; the store-lock
//!   model's grants carry no ordered token, so its ids are not compared)
//!   while the clock of the node that keeps it reads before its expiry
//!   (that node's wall clock, drift included; a record past its expiry
//!   is expired even before the server drops it): the slot of its
//!   grant, or an idle slot once that grant's write was sent (the model
//!   forgets a client's grant at `SendWrite`, not its lease);
//! - `writes`: each write sent that the resource was not handed yet — in
//!   flight, or lost (a write that never arrives, which the model allows;
//!   the judge's history variable of handed writes tells the two apart
//!   from a handled one) — and, for check-then-write, each write the
//!   resource checked and has not yet written (`stage` checked), with the
//!   generation the judge gave the op and the token it carries (a
//!   conditional write: no token, and as `read` the version the store will
//!   check — the one it names, If-Match, or cache-lease's ticket);
//! - `fence`: the resource row's fence; `value`: the generation of the op
//!   whose value the row holds; `accepted_gen_max`: the judge's highest
//!   generation accepted;
//! - `violations`: `token_order` and `stale_write` when the step into the
//!   state found one (the code's judge against the model's own bits);
//!   `unsafe_release` and `unissued_token` are not model properties;
//!   `duplicate_effect` where an effect sink stands beside the resource
//!   (its `effects` are read in `effect_map.rs`), where
//!   `superseded_effect` is not one (the model does not say who asks);
//! - not compared ([`Abstraction::project`]): the vacuity witness
//!   `stale_attempt_seen` (a fact about the search, outside the code's
//!   state too), and, under an atomic fence, writes whose token is below
//!   the fence: they can only be rejected, which changes nothing — the
//!   model's own exact reduction (`forget_dead_data`).
//!
//! queue-claim's store is its lock: the lease is the head job's claim, on
//! the queue's own wall clock as single-db's transaction; `job_from`
//! counts the grants (deliveries, in issue order) of jobs before the head
//! job and `job_done` is whether the head job has a result (`map_jobs`).
//! incr-beside-lease (a replica pair) adds the token source and the backup
//! ([`Abstraction::map_backup`]): `counter` is the primary's (the primary
//! of the moment: a failover moves `holder` to the promoted replica's lease
//! record too), `failovers` the failovers done, and, while one is left,
//! `backup`/`backup_lease` the replica's counter and the generation of the
//! lease it holds a copy of, expired or not — what the primary's delayed
//! replication messages last set there.
//!
//! zk-sequential has no lease coordinator: its lease is read from the
//! ZooKeeper server's znodes and the workers' decisions (`map_znodes`): a
//! slot per live node and per decision not yet written under, `counter` the
//! last sequence number, `holder` the latest decision while its node lives
//! (exact because its client trusts only a fresh "you are lowest": the node
//! lives when it decides). Without the fence it is read against no-fence
//! ([`model_for`]). etcd's Mutex is read against its own model
//! (`etcd-mutex`, `etcd-mutex-no-recheck`; without the fence, the same with
//! `fence = false`) from the server's keys and the workers' lock clients
//! ([`Abstraction::map_keys`]): a slot per acquisition, its key's create
//! revision as `node` and `token`, and as its answer in hand a message its
//! lock client would decide on — not onto zk-sequential's, whose `Acquire`
//! takes only the lowest live node, while clientv3 acts on an answer
//! whenever it arrives.
//!
//! dynamodb-heartbeat and pg-advisory-lock are read against no-fence with
//! their lease the lock server's own state (`server_lease`): the DynamoDB
//! item's owner, the session holding the advisory lock, while it is the
//! latest decision's; no clock is read (the item has no expiry, the lock
//! lives until the server ends its session). Their fenced variants are
//! refused: a late decision carries a lower token.
//!
//! Redlock is read against no-fence with its lease Redlock's own "held"
//! (`redlock_lease`): the latest decision, while its client still holds
//! the lock and its validity (`ttl − 1 % − 2 ms` from the first `SET`) has
//! not run out on that client's monotonic clock. The masters' keys are
//! not read: they are how the algorithm keeps two validities apart, and a
//! decision while the one before is still valid — two leases at once — is
//! the step the model does not have. Its client checks its validity before
//! it decides, so no decision is late. The faults that break the
//! algorithm's assumptions are refused ([`refuse_for_redlock`]).
//! github-2012-pair has no lease at all: it is read against its own model,
//! active-passive ([`Abstraction::map_pair`]): a grant is a node's
//! promotion (`BecameActive`), a slot per node that believes it is active,
//! no holder, and the live writes in flight (its storage's ordered session
//! decides which writes can still execute). Its storage-fenced variant is
//! refused (`PAIR_FENCED` says why).
//! consensus-generation's replica group is read as the model's voters
//! and proposals (`src/model/quorum.rs`, [`map_quorum`]):
//!
//! - `failovers`: the failovers done; the primary must be `coord/<that>`
//!   (the harness promotes the next replica in order, the model's next
//!   voter), and the replicas before it are down: 0, as the model forgets
//!   a stopped leader's generation;
//! - `replicas[i]`: `coord/<i>`'s counter (the generation it accepted, or
//!   the primary's, raised by its query in memory); `counter`: the
//!   primary's;
//! - `ready`, `proposal`, `acks`, `heard_max`: the primary's round
//!   ([`Coordinator::quorum_round`](crate::protocol::coordinator::Coordinator::quorum_round)):
//!   whether it serves, its open proposal's generation and the replicas
//!   that accepted it, or, not ready, those that answered its `QueryMax`
//!   and the highest answer (its own counter at its promotion included);
//!   the primary's own bit is not in the model's `acks`;
//! - `proposing`: the generations of the `Propose` messages in flight to a
//!   live replica (one to a down replica is dropped on arrival, a stutter);
//! - `answers[i]`: while the primary is not ready, the lowest `MaxIs` in
//!   flight from `coord/<i>` to it, + 1.
//!
//! Refused ([`refuse_for_quorum`]): crashes, rejoins and losses, each for the step it
//! has no model step for.

use std::collections::BTreeMap;

use super::bounds::Bounds;
use super::judge::Finding;
use super::state::{Held, State};
use super::topology::{Builtin, Topology};
use crate::check::ViolationKind;
use crate::model::spec::Violation;
use crate::model::state::{
    Client, State as Model, Write, CLIENTS_CAP, GENERATIONS_CAP, GRANTS_CAP, NO_HOLDER,
    STAGE_CHECKED, STAGE_IN_FLIGHT,
};
use crate::model::{Bounds as ModelBounds, LockModel, Protocol};
use crate::protocol::cache_lease::CasCache;
use crate::protocol::client::LockClient;
use crate::protocol::coordinator::Coordinator;
use crate::protocol::etcd::EtcdServer;
use crate::protocol::queue_claim::Queue;
use crate::protocol::redlock::validity_from_start_ns;
use crate::protocol::resource::Resource;
use crate::protocol::single_db::{Db, Txn};
use crate::protocol::worker::Worker;
use crate::protocol::zookeeper::ZkServer;
use crate::protocol::{Key, Msg, NodeId, OpId, ProtocolConfig, ProtocolKind, Server, Token};

/// What the mapping reads of a node: the lease server and the resource
/// are the nodes whose structs hold model state (a worker's is all in the
/// messages it sends). A test's wrapper node exposes the real one inside.
pub trait Inspect {
    fn coordinator(&self) -> Option<&Coordinator>;
    fn resource(&self) -> Option<&Resource>;
    /// cache-lease's store (gets/cas) at `resource/0`.
    fn cache(&self) -> Option<&CasCache> {
        None
    }
    /// The fenced store at `resource/0` as the mapping reads it: the
    /// shipped [`Resource`], or a user's own store (`codecheck::own`).
    fn store(&self) -> Option<&dyn StoreView> {
        self.resource().map(|r| r as &dyn StoreView)
    }
    /// A lock server (zk-sequential's ZooKeeper at `coord/0`).
    fn lock_server(&self) -> Option<&Server> {
        None
    }
    /// single-db's database at `resource/0`: the lock and the data.
    fn db(&self) -> Option<&Db> {
        None
    }
    /// queue-claim's job queue at `resource/0`: the claims and the results
    /// (the shipped [`Queue`], or a test's copy of it).
    fn queue(&self) -> Option<&dyn QueueView> {
        None
    }
    /// A worker (Redlock's lease is its lock client's validity).
    fn worker(&self) -> Option<&Worker> {
        None
    }
}

/// A node that wraps a built-in one and shows the mapping the node inside
/// it (a broken copy that rewrites some inputs, a recorder): every
/// [`Inspect`] read goes to [`Wraps::wrapped`].
pub trait Wraps {
    fn wrapped(&self) -> &Builtin;
}

impl<W: Wraps> Inspect for W {
    fn coordinator(&self) -> Option<&Coordinator> {
        self.wrapped().coordinator()
    }
    fn resource(&self) -> Option<&Resource> {
        self.wrapped().resource()
    }
    fn cache(&self) -> Option<&CasCache> {
        self.wrapped().cache()
    }
    fn store(&self) -> Option<&dyn StoreView> {
        self.wrapped().store()
    }
    fn lock_server(&self) -> Option<&Server> {
        self.wrapped().lock_server()
    }
    fn db(&self) -> Option<&Db> {
        self.wrapped().db()
    }
    fn queue(&self) -> Option<&dyn QueueView> {
        self.wrapped().queue()
    }
    fn worker(&self) -> Option<&Worker> {
        self.wrapped().worker()
    }
}

/// What the mapping reads of a job queue (queue-claim): the head job of a
/// key and the job each delivery delivered.
pub trait QueueView {
    /// `key`'s head job: its id, whether it has a result, the last result
    /// recorded (the value a read returns) and its claim, one past its
    /// visibility timeout included.
    fn head(&self, key: Key) -> (u64, bool, OpId, Option<Txn>);
    /// The job delivery number `delivery` delivered, if the queue made it.
    fn job_of(&self, delivery: u64) -> Option<u64>;
}

impl QueueView for Queue {
    fn head(&self, key: Key) -> (u64, bool, OpId, Option<Txn>) {
        Queue::head(self, key)
    }
    fn job_of(&self, delivery: u64) -> Option<u64> {
        Queue::job_of(self, delivery)
    }
}

/// What the mapping reads of a fenced store: a row's value and fence, and
/// (check-then-write) the writes that passed the check and wait for their
/// second step. A user's own store implements it to be refined against
/// the model of the protocol whose resource it plays.
pub trait StoreView {
    /// `key`'s row: the op whose value it holds (`OpId::INITIAL` if none)
    /// and its fence (the greatest token it accepted).
    fn row(&self, key: Key) -> (OpId, Token);
    /// The writes checked and not yet written, as (op, token).
    fn checked_writes(&self) -> Vec<(OpId, Token)> {
        Vec::new()
    }
}

impl StoreView for Resource {
    fn row(&self, key: Key) -> (OpId, Token) {
        Resource::row(self, key)
    }
    fn checked_writes(&self) -> Vec<(OpId, Token)> {
        Resource::checked_writes(self).collect()
    }
}

impl Inspect for Builtin {
    fn coordinator(&self) -> Option<&Coordinator> {
        match self {
            Builtin::Coordinator(c) => Some(c),
            _ => None,
        }
    }
    fn resource(&self) -> Option<&Resource> {
        match self {
            Builtin::Resource(r) => Some(r),
            Builtin::Outbox(o) => Some(o.resource()),
            _ => None,
        }
    }
    fn cache(&self) -> Option<&CasCache> {
        match self {
            Builtin::Cache(c) => Some(c),
            _ => None,
        }
    }
    fn lock_server(&self) -> Option<&Server> {
        match self {
            Builtin::Server(s) => Some(s),
            _ => None,
        }
    }
    fn db(&self) -> Option<&Db> {
        match self {
            Builtin::Db(d) => Some(d),
            _ => None,
        }
    }
    fn queue(&self) -> Option<&dyn QueueView> {
        match self {
            Builtin::Queue(q) => Some(q),
            _ => None,
        }
    }
    fn worker(&self) -> Option<&Worker> {
        match self {
            Builtin::Worker(w) => Some(w),
            _ => None,
        }
    }
}

/// The abstract model a code-checked protocol refines.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ModelOf {
    pub protocol: Protocol,
    /// The bundled spec of that model.
    pub spec: &'static str,
    /// Why this model, where the protocol has none of its own.
    pub note: Option<&'static str>,
}

/// The model of `kind` run with its `fence` option: [`model_of`], except
/// that zk-sequential without the fence is checked against no-fence (the
/// model's resource compares the sequence numbers; the unfenced one does
/// not, and no model has nodes beside an unfenced resource).
pub fn model_for(kind: ProtocolKind, fence: bool) -> Result<ModelOf, String> {
    match kind {
        ProtocolKind::ZkSequential if !fence => Ok(ModelOf {
            protocol: Protocol::NoFence,
            spec: "models/no-fence.toml",
            note: Some(ZK_UNFENCED),
        }),
        ProtocolKind::DynamodbHeartbeat | ProtocolKind::PgAdvisoryLock if fence => {
            Err(server_lock_fenced(kind))
        }
        ProtocolKind::Github2012Pair if fence => Err(PAIR_FENCED.into()),
        // Its model has the unfenced twin (`fence = false`), read in `new`.
        ProtocolKind::EtcdMutex | ProtocolKind::EtcdMutexNoRecheck => model_of(kind),
        _ => {
            let of = model_of(kind)?;
            if fence != kind.def().fence_default {
                return Err(format!(
                    "{}: no refinement with --fence {fence}: its model is of the catalogue's variant (fence {})",
                    kind.id(),
                    kind.def().fence_default
                ));
            }
            Ok(of)
        }
    }
}

/// Why zk-sequential's unfenced variant is checked against no-fence.
const ZK_UNFENCED: &str = "without the fence no model in models/ has its nodes beside an unfenced resource; checked against no-fence: a decision is an Acquire once the last holder's node is gone, the deletion of the holder's node an Expire, a waiter's node creation and deletion stutters (the recipe's lowest-node rule is not checked)";

/// Why the storage-fenced pair has no model.
const PAIR_FENCED: &str = "github-2012-pair: no refinement with --fence true onto models/active-passive.toml: the storage's reservation raises the fence when the storage takes it, before the node hears it is active (the answer may be lost, late, or ignored after the node's retry under a fresh epoch, whose reservation raises the fence again), so the fence rises without a promotion and a promotion may come under an epoch already below the fence; the active-passive model has no fence and no reservation, and no model in models/ has either";

/// Why dynamodb-heartbeat and pg-advisory-lock with the fence have no
/// model (measured: `tests/it/codecheck/server_lock.rs`).
fn server_lock_fenced(kind: ProtocolKind) -> String {
    let (token, ended) = match kind {
        ProtocolKind::DynamodbHeartbeat => ("owner-change count", "its item was taken over"),
        _ => ("sequence value", "its session ended"),
    };
    format!(
        "{}: no refinement with --fence true onto models/fenced-cas.toml: its client acts on the server's answer whenever it arrives (only a request timer gives a request up, and a pause delays the timer), so a paused client decides on its lock after {ended} and the other client drew the next {token} and decided: a decision carrying a lower token than one already made, and the model's Acquire (token = grants + 1) has no such step",
        kind.id()
    )
}

/// The model of each protocol `--code` drives: the models' own
/// `simulator_protocol` link, read backwards, and the verdict-agreement
/// table's `no-fence` → `ttl-lease-del`.
pub fn model_of(kind: ProtocolKind) -> Result<ModelOf, String> {
    let of = |protocol, spec, note| {
        Ok(ModelOf {
            protocol,
            spec,
            note,
        })
    };
    match kind {
        ProtocolKind::FencedCas => of(Protocol::FencedCas, "models/fenced-cas.toml", None),
        ProtocolKind::FencedCheckThenWrite => of(
            Protocol::FencedCheckThenWrite,
            "models/fenced-check-then-write.toml",
            None,
        ),
        ProtocolKind::RedisSetNx => of(Protocol::NoFence, "models/no-fence.toml", None),
        ProtocolKind::TtlLeaseDel => of(
            Protocol::NoFence,
            "models/no-fence.toml",
            Some("a plain DEL ends whichever lease is live: the model's Expire (unsafe_release is not a model property)"),
        ),
        ProtocolKind::CheckBeforeWrite => of(
            Protocol::NoFence,
            "models/no-fence.toml",
            Some("no model of its own in models/; checked against no-fence (the same lease, release, no token, no fence: the worker's lease check only removes behaviours)"),
        ),
        ProtocolKind::IncrBesideLease => of(
            Protocol::IncrBesideLease,
            "models/incr-beside-lease.toml",
            None,
        ),
        ProtocolKind::ConsensusGeneration => of(
            Protocol::ConsensusGeneration,
            "models/consensus-generation.toml",
            None,
        ),
        ProtocolKind::ZkSequential => of(Protocol::ZkSequential, "models/zk-sequential.toml", None),
        ProtocolKind::EtcdMutex => of(Protocol::EtcdMutex, "models/etcd-mutex.toml", None),
        ProtocolKind::EtcdMutexNoRecheck => of(
            Protocol::EtcdMutexNoRecheck,
            "models/etcd-mutex-no-recheck.toml",
            None,
        ),
        ProtocolKind::EffectNaive => of(Protocol::EffectNaive, "models/effect-naive.toml", None),
        ProtocolKind::EffectIdempotencyKey => of(
            Protocol::EffectIdempotencyKey,
            "models/effect-idempotency-key.toml",
            None,
        ),
        ProtocolKind::EffectOutbox => of(Protocol::EffectOutbox, "models/effect-outbox.toml", None),
        ProtocolKind::Github2012Pair => of(
            Protocol::ActivePassive,
            "models/active-passive.toml",
            None,
        ),
        ProtocolKind::SingleDb => of(
            Protocol::StoreLock,
            "models/store-lock.toml",
            None,
        ),
        ProtocolKind::QueueClaim => of(
            Protocol::QueueClaim,
            "models/queue-claim.toml",
            None,
        ),
        ProtocolKind::ObjectStoreCas => of(
            Protocol::ConditionalWrite,
            "models/conditional-write.toml",
            None,
        ),
        ProtocolKind::CacheLease => of(
            Protocol::ConditionalWrite,
            "models/conditional-write.toml",
            Some("the conditional-write model (its simulator protocol is object-store-cas): the same lease, and memcached's cas applies a refill iff the entry is still the version its gets was served, as If-Match does"),
        ),
        ProtocolKind::DynamodbHeartbeat => of(
            Protocol::NoFence,
            "models/no-fence.toml",
            Some("no model of its own in models/; checked against no-fence: the lease is the lock item while its owner is the latest acquisition whose client decided it holds the lock; a takeover's conditional put is the old lease's Expire and the taker's decision its Acquire, a release's delete an Expire, heartbeats stutter, and a decision on an answer the item has since left (a paused client's) is an Acquire then an Expire (the waiter's lease of no RVN change, timed on its own clock, is not checked)"),
        ),
        ProtocolKind::PgAdvisoryLock => of(
            Protocol::NoFence,
            "models/no-fence.toml",
            Some("no model of its own in models/; checked against no-fence: the lease is the advisory lock while its session is the latest one whose client decided it holds the lock; the session's end (silent past the timeout, the unlock, a restart) is the model's Expire, keepalives stutter, and a decision on an answer whose session has since ended (a paused client's) is an Acquire then an Expire (the session timeout is not checked)"),
        ),
        ProtocolKind::Redlock => of(
            Protocol::NoFence,
            "models/no-fence.toml",
            Some("no model of its own in models/; checked against no-fence: the lease is Redlock's \"held\" — the latest decision, while its client holds the lock and its validity (ttl − 1 % − 2 ms from the first SET) is left on its own monotonic clock; a decision (a majority said OK, validity left) is the Acquire, the validity running out, the release or the client's crash the Expire; SETs, refusals, unlocks and the masters' expiries stutter, so a decision while the lease before it is still valid (two clients holding at once) has no model step"),
        ),
    }
}

/// The mapping from one harness's states into its protocol's model.
#[derive(Clone, Debug)]
pub struct Abstraction {
    pub model: LockModel,
    pub of: ModelOf,
    slots: usize,
    coord: NodeId,
    resource: NodeId,
    /// Writes below the fence are not compared (atomic fence only).
    doomed_hidden: bool,
    /// Where the lease is read: the coordinator's lease record, or the
    /// ZooKeeper server's znodes (zk-sequential).
    znodes: bool,
    /// Conditional writes: where the store keeps the version a write
    /// must find current (None: writes are not conditional).
    condition: Option<Condition>,
    /// dynamodb-heartbeat, pg-advisory-lock: the lease is the lock
    /// server's ([`server_lease`]), and a decision may come after it ended.
    server_lock: bool,
    /// Redlock: the workers (`0..n`), whose lock clients' validity is the
    /// lease ([`redlock_lease`]).
    redlock_workers: Option<usize>,
    /// Whether the model's grants carry the code's tokens: where the store
    /// is the lock, a transaction id only names its grant (the store-lock
    /// model's grants have no ordered token; its store checks the grant).
    tokens: bool,
    /// incr-beside-lease: the failovers a path may have (the primary's
    /// counter and the backup's copy are read, [`Abstraction::map_backup`]).
    backup: Option<u8>,
    /// github-2012-pair: the actives and the live writes are read
    /// ([`Abstraction::map_pair`]), no lease.
    pair: bool,
    /// consensus-generation: the failovers a path may have (the voters and
    /// the quorum rounds are read, [`map_quorum`]).
    quorum: Option<u8>,
    /// etcd's Mutex: the workers (`0..n`), whose lock clients' acquisitions
    /// are read beside the server's keys ([`Abstraction::map_keys`]).
    etcd_workers: Option<usize>,
}

/// What a conditional write is checked against at the store.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Condition {
    /// object-store-cas: the version the write names (its `token`, If-Match).
    IfMatch,
    /// cache-lease: the version the op's first `gets` was served (its ticket).
    Ticket,
}

/// The one key the harness's workers lock and write.
const KEY: Key = Key(0);

/// github-2012-pair's nodes (the scenario's two `[[worker]]`s): the
/// model's client slots, one per node's belief "I am active".
const PAIR_NODES: usize = 2;

impl Abstraction {
    /// The mapping for `topology` within `bounds`, or why the mapping
    /// would not be exact there (refused, never approximated). A second
    /// copy of a write is a stutter only under an atomic fence (rejected
    /// below it, or accepted again at its own token, the value already its
    /// own), so copies are mapped for fenced-cas, zk-sequential (whose
    /// resource fences atomically too; a copy of one of its ZooKeeper
    /// requests is answered again and changes no znode), single-db
    /// (where the store is the lock: the copy of a committed write finds
    /// the lock freed and is refused) and queue-claim (a copy of a result
    /// finds its job with a result, or deleted, and is refused; a copy of
    /// a release finds its claim gone).
    pub fn new(topology: &Topology, bounds: &Bounds) -> Result<Abstraction, String> {
        let kind = topology.protocol.kind;
        let of = model_for(kind, topology.protocol.fence)?;
        let id = kind.id();
        refuse_inexact(kind, &of, topology.protocol.fence, bounds)?;
        if kind == ProtocolKind::Redlock {
            refuse_for_redlock(&topology.protocol, bounds)?;
        }
        if bounds.grants == 0 || bounds.grants > CLIENTS_CAP {
            return Err(format!(
                "{id}: --grants {} is outside 1..={CLIENTS_CAP}: each grant takes one of the model's client slots",
                bounds.grants
            ));
        }
        // zk-sequential: a slot per live znode or pending grant (a worker
        // that gave a session up starts the next while the old node lives),
        // and the nodes created, not the grants, run the counter up.
        // etcd: a slot per acquisition, as zk-sequential's.
        let (slots, grants_max) =
            if of.protocol == Protocol::ZkSequential || of.protocol.has_revisions() {
                (CLIENTS_CAP, GRANTS_CAP)
            } else if of.protocol.is_pair() {
                (PAIR_NODES, bounds.grants) // a slot per node's belief
            } else {
                (bounds.grants, bounds.grants)
            };
        let backup = (of.protocol == Protocol::IncrBesideLease).then_some(bounds.failovers);
        let quorum = (of.protocol == Protocol::ConsensusGeneration).then_some(bounds.failovers);
        let replicas = match (backup, quorum) {
            (Some(_), _) => 2,
            (_, Some(_)) => topology.replicas as u8,
            _ => 1,
        };
        let model = LockModel::new(ModelBounds {
            protocol: of.protocol,
            clients: slots as u8,
            grants_max: grants_max as u8,
            failovers_max: backup.or(quorum).unwrap_or(0),
            replicas,
            reads: of.protocol.writes_are_conditional(),
            fence_reads: false,
            symmetry: true,
            // etcd's model has its unfenced twin; the others' are other models.
            fence: !of.protocol.has_revisions() || topology.protocol.fence,
        });
        let model = super::effect_map::model(model, of.protocol);
        let model = if quorum.is_some() {
            model.with_generations(GENERATIONS_CAP)
        } else {
            model
        };
        let condition = match kind {
            _ if !of.protocol.writes_are_conditional() => None,
            ProtocolKind::CacheLease => Some(Condition::Ticket),
            _ => Some(Condition::IfMatch),
        };
        Ok(Abstraction {
            model,
            of,
            slots,
            coord: topology.coord,
            resource: topology.resource,
            doomed_hidden: of.protocol.resource_fences()
                && of.protocol != Protocol::FencedCheckThenWrite,
            condition,
            znodes: kind == ProtocolKind::ZkSequential,
            tokens: of.protocol.issues_tokens(),
            server_lock: lease_is_server_lock(kind),
            redlock_workers: (kind == ProtocolKind::Redlock).then_some(topology.workers),
            backup,
            pair: of.protocol.is_pair(),
            quorum,
            etcd_workers: of.protocol.has_revisions().then_some(topology.workers),
        })
    }

    /// The model state of `s` at instant `now_ns` (a step that advances
    /// time is mapped before and after the advance); `finding`: the
    /// violation the step into `s` found. Err: `s` has no model state (a
    /// write under no grant, a token past the model's range, …).
    pub fn map<N: Inspect>(
        &self,
        s: &State<N>,
        now_ns: u64,
        finding: Option<&Finding>,
    ) -> Result<Model, String> {
        let (value, fence) = self.row(s)?;
        let judge = &s.judge;
        let mut a = Model::initial();
        let issued = judge.issued();
        a.grants = small(issued.len() as u64, "grants issued")?;
        let token_max = issued.iter().map(|g| g.1).max().unwrap_or(0);
        let token_max = self.model_token(token_max);
        a.token_max = small(if self.tokens { token_max } else { 0 }, "a token")?;
        if self.znodes {
            let server = match s.nodes[self.coord.0 as usize].lock_server() {
                Some(Server::Zk(z)) => z,
                _ => return Err("the node at coord/0 shows no ZooKeeper server".into()),
            };
            self.map_znodes(s, server, &mut a)?;
        } else if let Some(workers) = self.etcd_workers {
            let server = match s.nodes[self.coord.0 as usize].lock_server() {
                Some(Server::Etcd(e)) => e,
                _ => return Err("the node at coord/0 shows no etcd server".into()),
            };
            self.map_keys(s, server, workers, now_ns, &mut a)?;
        } else if !self.pair {
            self.map_lease(s, now_ns, &mut a)?;
        }
        if let Some(queue) = s.nodes[self.resource.0 as usize].queue() {
            map_jobs(s, queue, &mut a)?;
        }
        if let Some(failovers_max) = self.backup {
            self.map_backup(s, failovers_max, &mut a)?;
        }
        if let Some(failovers_max) = self.quorum {
            map_quorum(
                s,
                self.coord,
                self.model.bounds.replicas,
                failovers_max,
                &mut a,
            )?;
        }
        if self.pair {
            self.map_pair(s, &mut a)?;
        } else {
            self.map_writes(s, &s.nodes[self.resource.0 as usize], &mut a)?;
        }
        a.fence = small(self.model_token(fence.0), "the fence")?;
        a.value = version(s, value.0)?;
        a.accepted_gen_max = small(judge.accepted_max() as u64, "a generation")?;
        if self.etcd_workers.is_some() && judge.accepted_max() > 0 {
            // Grants rank by (token, generation) there: the top one's token.
            let (_, token) = issued[judge.accepted_max() as usize - 1];
            a.accepted_token = small(self.model_token(token), "a token")?;
        }
        if self.model.bounds.protocol.has_effect_sink() {
            super::effect_map::map(s, &mut a)?;
        }
        a.violations = match finding.map(|f| f.kind) {
            Some(ViolationKind::TokenOrder) => Violation::TokenOrder.bit(),
            Some(ViolationKind::StaleWrite) => Violation::StaleWrite.bit(),
            Some(ViolationKind::DuplicateEffect) => Violation::DuplicateEffect.bit(),
            _ => 0,
        };
        a.canonicalize(self.slots);
        Ok(a)
    }

    /// The store's row of the key: (the op whose value it holds, its
    /// fence) — single-db's database, a fenced store (the shipped
    /// resource or a user's, [`StoreView`]), or cache-lease's cache.
    fn row<N: Inspect>(&self, s: &State<N>) -> Result<(OpId, Token), String> {
        let store = &s.nodes[self.resource.0 as usize];
        if let Some(db) = store.db() {
            return Ok((db.row(KEY).0, Token(0)));
        }
        if let Some(queue) = store.queue() {
            return Ok((queue.head(KEY).2, Token(0)));
        }
        match (store.store(), store.cache()) {
            (Some(r), _) => Ok(r.row(KEY)),
            (None, Some(c)) => Ok((c.entry(KEY), Token(0))),
            (None, None) => Err("the node at resource/0 shows no resource".into()),
        }
    }

    /// The lease live at `now_ns`, as (owner, token): the coordinator's
    /// record, or where the store is the lock the row's transaction
    /// (single-db) or the head job's claim (queue-claim). Each is live
    /// while the clock of the node that keeps it (drift and jumps
    /// included: the deadline is on that node's wall clock) reads before
    /// its deadline — a record past it is expired even before its node
    /// drops it.
    fn lease_at<N: Inspect>(
        &self,
        s: &State<N>,
        now_ns: u64,
    ) -> Result<Option<(u64, Option<Token>)>, String> {
        let store = &s.nodes[self.resource.0 as usize];
        // Where the store is the lock: the row's transaction, the head job's claim.
        let held = match (store.db(), store.queue()) {
            (Some(db), _) => Some(db.row(KEY).1),
            (None, Some(queue)) => Some(queue.head(KEY).3),
            (None, None) => None,
        };
        if let Some(held) = held {
            let store_wall_ns = s.clock(self.resource).read(now_ns).wall_ns;
            return Ok(held
                .filter(|t| store_wall_ns < t.deadline_wall_ns)
                .map(|t| (t.owner, Some(Token(t.id)))));
        }
        if let Some(workers) = self.redlock_workers {
            return Ok(redlock_lease(s, workers, now_ns));
        }
        if let Some(server) = s.nodes[self.coord.0 as usize].lock_server() {
            return server_lease(s, server);
        }
        let coord = primary(s)?;
        let coord_wall_ns = s.clock(s.primary).read(now_ns).wall_ns;
        Ok(coord
            .lease(KEY)
            .filter(|l| coord_wall_ns < l.expires_wall_ns)
            .map(|l| (l.owner, l.token)))
    }

    /// The grants and the live lease: `clients` and `holder` (see the
    /// module doc).
    fn map_lease<N: Inspect>(
        &self,
        s: &State<N>,
        now_ns: u64,
        a: &mut Model,
    ) -> Result<(), String> {
        let judge = &s.judge;
        let lease = self.lease_at(s, now_ns)?;
        let holder = lease.map(|(owner, token)| judge.generation(owner, token));
        if holder == Some(0) {
            return Err("the live lease is no grant the coordinator sent".into());
        }
        let mut slot = 0;
        for (i, &(_, token)) in judge.issued().iter().enumerate() {
            let generation = i as u32 + 1;
            if judge.wrote_under(generation) {
                continue;
            }
            if holder == Some(generation) {
                a.holder = slot as u8;
            }
            let token = if self.tokens { token } else { 0 };
            a.clients[self.slot(slot)?] = Client {
                read: self.read_under(s, generation)?,
                ..pending(generation, token, 0)?
            };
            slot += 1;
        }
        if holder.is_some() && a.holder == NO_HOLDER {
            a.holder = self.slot(slot)? as u8; // its write went: an idle slot holds
        }
        Ok(())
    }

    /// incr-beside-lease: the primary's counter, the failovers done and,
    /// while one is left, the backup's (`coord/1`) copy of the counter and
    /// of the lease as the generation of its grant, expired or not (its
    /// expiry is read at the failover: the model's `Failover` keeps a live
    /// copy or none). With no failover left the backup is never read: 0,
    /// as the model forgets it.
    fn map_backup<N: Inspect>(
        &self,
        s: &State<N>,
        failovers_max: u8,
        a: &mut Model,
    ) -> Result<(), String> {
        a.counter = small(primary(s)?.counter(), "the counter")?;
        a.failovers = failovers_max.saturating_sub(s.budget.failovers);
        if a.failovers >= failovers_max {
            return Ok(());
        }
        let backup = s.nodes[self.coord.0 as usize + 1]
            .coordinator()
            .ok_or("the node at coord/1 shows no lease coordinator")?;
        a.backup = small(backup.counter(), "the backup's counter")?;
        if let Some(lease) = backup.lease(KEY) {
            if lease.token != Some(Token(backup.counter())) {
                return Err(format!(
                    "the backup holds a lease with token {:?} beside counter {}: a state the primary never had",
                    lease.token,
                    backup.counter()
                ));
            }
            let generation = s.judge.generation(lease.owner, lease.token);
            if generation == 0 {
                return Err("the backup holds a lease no grant the coordinator sent".into());
            }
            a.backup_lease = small(generation as u64, "a generation")?;
        }
        Ok(())
    }

    /// zk-sequential: the server's znodes and the workers' decisions.
    /// One slot per live znode (its sequence number as `node`) and per
    /// decision under which no write was sent (its generation and token,
    /// and its node while it lives: a decision's token is its node's
    /// sequence number); `counter` is the last sequence number given;
    /// `holder` is the latest decision's slot while its node lives. Against
    /// no-fence (the unfenced variant) the nodes are not read: the latest
    /// decision holds while its node lives, an idle slot once its write
    /// went, and tokens are 0.
    fn map_znodes<N>(&self, s: &State<N>, z: &ZkServer, a: &mut Model) -> Result<(), String> {
        let judge = &s.judge;
        let issued = judge.issued();
        let nodes = self.model.bounds.protocol == Protocol::ZkSequential;
        let live: Vec<u64> = z.znodes(KEY).collect();
        let latest = issued.len() as u32;
        let holds = issued.last().is_some_and(|g| live.contains(&g.1));
        let mut slots: Vec<(Client, bool)> = Vec::new();
        for (i, &(_, token)) in issued.iter().enumerate() {
            let generation = i as u32 + 1;
            if judge.wrote_under(generation) {
                continue;
            }
            let node = if nodes && live.contains(&token) {
                token
            } else {
                0
            };
            let token = if nodes { token } else { 0 };
            let holder = holds && generation == latest;
            slots.push((pending(generation, token, node)?, holder));
        }
        if nodes {
            a.counter = small(z.last_seq(KEY), "a sequence number")?;
            for &seq in &live {
                if slots.iter().any(|(c, _)| c.node as u64 == seq) {
                    continue;
                }
                let holder = holds && issued.last().is_some_and(|g| g.1 == seq);
                let node = small(seq, "a sequence number")?;
                slots.push((
                    Client {
                        node,
                        ..Client::default()
                    },
                    holder,
                ));
            }
        } else if holds && !slots.iter().any(|(_, h)| *h) {
            slots.push((Client::default(), true)); // its write went: an idle slot holds
        }
        for (i, (client, holder)) in slots.into_iter().enumerate() {
            a.clients[self.slot(i)?] = client;
            if holder {
                a.holder = i as u8;
            }
        }
        Ok(())
    }

    /// A token as the model counts it: etcd's revisions start at 1, the
    /// model's counter at 0, so a create revision is the model's plus one.
    fn model_token(&self, token: u64) -> u64 {
        match self.etcd_workers {
            Some(_) => token.saturating_sub(1),
            None => token,
        }
    }

    /// etcd's Mutex: a slot per acquisition (by its lease), as the model's
    /// (`src/model/lock_model.rs`, `etcd_step`):
    ///
    /// - `node`: the create revision of its key while the server holds it;
    /// - `gen`, `token`: its decision's, while no write was sent under it;
    /// - undecided, `token`: its key's create revision while its worker's
    ///   lock client is still after the lock (locking, waiting, re-checking)
    ///   and the revision is known: to the client, to the server (the key
    ///   lives) or to the answer to its Lock transaction on its way (in
    ///   flight, or held by its paused worker). A key gone before its
    ///   client learnt its revision can never be decided on (every later
    ///   Lock transaction finds the lease dead): the model's `Abandon`,
    ///   at the deletion;
    /// - `read` 1 (the answer in hand): a message in flight to its worker,
    ///   or held by it, that its lock client would decide on if it were
    ///   delivered now — the code's own verdict, asked of a copy of the
    ///   client ([`EtcdClient::decides_on`]).
    ///
    /// `counter` is the store's revision minus one, and tokens the create
    /// revisions minus one ([`Abstraction::model_token`]).
    fn map_keys<N: Inspect>(
        &self,
        s: &State<N>,
        server: &EtcdServer,
        workers: usize,
        now_ns: u64,
        a: &mut Model,
    ) -> Result<(), String> {
        let judge = &s.judge;
        let rev = |r: u64| small(self.model_token(r), "a revision");
        a.counter = rev(server.revision())?;
        let mut slots: BTreeMap<u64, Client> = BTreeMap::new();
        for (i, &(owner, token)) in judge.issued().iter().enumerate() {
            let generation = i as u32 + 1;
            if !judge.wrote_under(generation) {
                let slot = slots.entry(owner).or_default();
                slot.gen = small(generation as u64, "a generation")?;
                slot.token = rev(token)?;
            }
        }
        for (created, lease) in server.lock_keys(KEY) {
            slots.entry(lease).or_default().node = rev(created)?;
        }
        for i in 0..workers {
            let node = NodeId(i as u16);
            let Some(LockClient::Etcd(client)) = s.nodes[i].worker().and_then(|w| w.client())
            else {
                continue;
            };
            let Some((lease, known)) = client.acquisition() else {
                continue;
            };
            let held = s.hold(node).into_iter().flat_map(|h| &h.inputs);
            let inputs: Vec<Msg> = s
                .in_flight
                .iter()
                .filter(|p| p.to == node)
                .map(|p| p.msg)
                .chain(held.filter_map(|h| match h {
                    Held::Message(p) => Some(p.msg),
                    Held::Timer(_) => None,
                }))
                .collect();
            let key = server
                .lock_keys(KEY)
                .find(|&(_, l)| l == lease)
                .map(|(created, _)| created);
            let created = [known]
                .into_iter()
                .chain(key)
                .chain(inputs.iter().filter_map(|&m| client.revision_in(m)))
                .find(|&r| r != 0);
            let Some(created) = created else {
                continue; // no key yet, or gone unknown: no acquisition left
            };
            let clocks = s.clock(node).read(now_ns);
            let slot = slots.entry(lease).or_default();
            slot.token = rev(created)?;
            slot.read = u8::from(inputs.iter().any(|&m| client.decides_on(clocks, m)));
        }
        let taken: Vec<Client> = slots
            .into_values()
            .filter(|c| *c != Client::default())
            .collect();
        for (i, client) in taken.into_iter().enumerate() {
            a.clients[self.slot(i)?] = client;
        }
        Ok(())
    }

    /// etcd's Mutex: one server step may be several model actions — a
    /// Lock transaction puts the key (`CreateNode`) and answers "you are
    /// first" (`Answer`) at once, one lease check deletes every key whose
    /// lease ran out (a chain of `DeleteNode`), and a key gone before its
    /// client learnt its revision ends that acquisition (`Abandon`).
    pub fn server_steps_chain(&self) -> Option<NodeId> {
        self.etcd_workers.map(|_| self.coord)
    }

    /// dynamodb-heartbeat, pg-advisory-lock: a client acts on the server's
    /// answer whenever it arrives (a paused client's request timer fires
    /// late), so it may decide after the lock it was answered has left its
    /// acquisition — its session ended, its item taken over — and after
    /// another client decided: a grant whose lease already ended, matched
    /// by `Acquire` then `Expire` (after the previous holder's `Expire`).
    pub fn grants_may_be_late(&self) -> bool {
        self.server_lock
    }

    /// zk-sequential: one server step may end several sessions whose
    /// deadlines fall at one instant (ZooKeeper expires them one by one),
    /// so such a step is matched by a chain of session ends (`Expire` for
    /// the holder's node, `DeleteNode` for a waiter's).
    pub fn ends_sessions_at_once(&self) -> bool {
        self.znodes && self.model.bounds.protocol == Protocol::ZkSequential
    }

    /// github-2012-pair: a slot per node that believes it is active (the
    /// judge's record of `BecameActive`, `SteppedDown` and crashes) with
    /// its promotion's generation, no token; no lease. `writes`: the live
    /// writes in flight — a write to the storage whose request id is above
    /// the last one the storage executed from its sender (the ordered
    /// session discards the others, so a copy, a given-up write behind its
    /// sender's next command, and a lost one are gone), one per generation.
    fn map_pair<N: Inspect>(&self, s: &State<N>, a: &mut Model) -> Result<(), String> {
        for (i, &(_, generation)) in s.judge.actives().iter().enumerate() {
            a.clients[self.slot(i)?] = pending(generation, 0, 0)?;
        }
        let store = s.nodes[self.resource.0 as usize]
            .resource()
            .ok_or("the node at resource/0 shows no storage")?;
        let mut live: Vec<(u8, u64)> = Vec::new();
        for p in s.in_flight.iter().filter(|p| p.to == self.resource) {
            let Msg::Write { req, op, .. } = p.msg else {
                continue;
            };
            if req <= store.last_command(p.from) {
                continue;
            }
            let (generation, _) = s
                .judge
                .write_of(op.0)
                .filter(|w| w.0 != 0)
                .ok_or(format!("op {}'s write was sent under no promotion", op.0))?;
            let gen = small(generation as u64, "a generation")?;
            match live.iter().find(|w| w.0 == gen) {
                Some(w) if w.1 == op.0 => {} // a copy
                Some(w) => {
                    return Err(format!(
                        "ops {} and {} of generation {gen} are both live in flight: the model has one write of a generation in flight at once",
                        w.1, op.0
                    ))
                }
                None => live.push((gen, op.0)),
            }
        }
        if live.len() > GRANTS_CAP {
            return Err(format!("more than {GRANTS_CAP} writes in flight"));
        }
        live.sort_unstable();
        for (slot, &(gen, _)) in a.writes.iter_mut().zip(&live) {
            *slot = Write {
                gen,
                token: 0,
                read: 0,
                stage: STAGE_IN_FLIGHT,
            };
        }
        Ok(())
    }

    fn slot(&self, i: usize) -> Result<usize, String> {
        if i < self.slots {
            Ok(i)
        } else {
            Err(format!(
                "more grants are pending than the model's {} client slots",
                self.slots
            ))
        }
    }

    /// The writes sent that the resource was not handed (in flight, or
    /// lost: a write that never arrives, which the model allows) and the
    /// ones it checked.
    fn map_writes<N: Inspect>(&self, s: &State<N>, store: &N, a: &mut Model) -> Result<(), String> {
        let unhanded = s
            .judge
            .unhanded()
            .ok_or("the state keeps no write history (Bounds::write_history)")?;
        let mut ops: Vec<(u64, Option<Token>, u8)> = unhanded
            .map(|(op, _, token)| (op, (token != 0).then_some(Token(token)), STAGE_IN_FLIGHT))
            .collect();
        if let Some(r) = store.store() {
            ops.extend(
                r.checked_writes()
                    .into_iter()
                    .map(|(op, t)| (op.0, Some(t), STAGE_CHECKED)),
            );
        }
        let mut writes = Vec::with_capacity(ops.len());
        for (op, token, stage) in ops {
            let read = self.read_of_write(s, store, op, token)?;
            // A conditional write's token is the version it names, not a grant's.
            let token = if self.condition.is_some() || !self.tokens {
                None
            } else {
                token
            };
            let (generation, _) = s
                .judge
                .write_of(op)
                .filter(|w| w.0 != 0)
                .ok_or(format!("op {op}'s write was sent under no grant"))?;
            let gen = small(generation as u64, "a generation")?;
            if writes.iter().any(|w: &Write| w.gen == gen) {
                return Err(format!(
                    "two writes of generation {gen}: the model sends one write per grant"
                ));
            }
            // etcd's unfenced twin: the write carries no token, the model's
            // its decision's (the stale write's rank).
            let token = match token {
                None if self.etcd_workers.is_some() => s.judge.issued()[generation as usize - 1].1,
                _ => token.map_or(0, |t| t.0),
            };
            let token = small(self.model_token(token), "a token")?;
            writes.push(Write {
                gen,
                token,
                read,
                stage,
            });
        }
        if writes.len() > GRANTS_CAP {
            return Err(format!("more than {GRANTS_CAP} writes in flight"));
        }
        writes.sort_by_key(|w| w.gen);
        a.writes[..writes.len()].copy_from_slice(&writes);
        Ok(())
    }

    /// Conditional writes: the model's `read` of grant `generation`'s
    /// slot — the version its worker's read was served, + 1 (0: not
    /// served yet, or writes are not conditional).
    fn read_under<N>(&self, s: &State<N>, generation: u32) -> Result<u8, String> {
        if self.condition.is_none() {
            return Ok(0);
        }
        let served = s
            .judge
            .served_reads()
            .ok_or("the state keeps no read history (Bounds::write_history)")?;
        let mut under = served.iter().filter(|r| r.1 == generation);
        let read = under.next();
        if under.next().is_some() {
            return Err(format!(
                "two reads under generation {generation}: the model reads once per grant"
            ));
        }
        match read.and_then(|r| r.2) {
            Some(value) => Ok(version(s, value)? + 1),
            None => Ok(0),
        }
    }

    /// Conditional writes: the model's `read` of op `op`'s write — the
    /// version the store will check, + 1: the one it names (If-Match), or
    /// the one its first `gets` was served (cache-lease's ticket).
    fn read_of_write<N: Inspect>(
        &self,
        s: &State<N>,
        store: &N,
        op: u64,
        token: Option<Token>,
    ) -> Result<u8, String> {
        let named = match self.condition {
            None => return Ok(0),
            Some(Condition::IfMatch) => token.map_or(0, |t| t.0),
            Some(Condition::Ticket) => {
                store
                    .cache()
                    .and_then(|c| c.ticket(OpId(op)))
                    .ok_or(format!(
                        "op {op}'s cas has no ticket: its gets was never served"
                    ))?
                    .0
            }
        };
        Ok(version(s, named)? + 1)
    }

    /// What the check compares of a model state: without the vacuity
    /// witness, and without writes below an atomic fence (see the module
    /// doc).
    pub fn project(&self, a: &Model) -> Model {
        let mut p = *a;
        p.stale_attempt_seen = false;
        if self.doomed_hidden {
            let fence = p.fence;
            for w in p.writes.iter_mut() {
                if w.gen != 0 && w.stage == STAGE_IN_FLIGHT && w.token < fence {
                    *w = Write::default();
                }
            }
            p.sort_writes();
        }
        p
    }
}

/// queue-claim: `job_from`, the grants issued before the head job's first
/// delivery (each grant's token is its delivery number, and deliveries are
/// of the head job in issue order), and `job_done`, whether the head job
/// has a result.
fn map_jobs<N>(s: &State<N>, queue: &dyn QueueView, a: &mut Model) -> Result<(), String> {
    let (head, done, _, _) = queue.head(KEY);
    let mut from = 0;
    for (i, &(_, delivery)) in s.judge.issued().iter().enumerate() {
        let job = queue
            .job_of(delivery)
            .ok_or(format!("grant {delivery} is no delivery the queue made"))?;
        if job < head && from < i as u64 {
            return Err(format!(
                "delivery {delivery} of job {job} was handed out after a delivery of a later job"
            ));
        }
        if job < head {
            from += 1;
        }
    }
    a.job_from = small(from, "a generation")?;
    a.job_done = done;
    Ok(())
}

/// The bounds at which `kind`'s mapping onto `of` would not be exact:
/// refused with the reason, never approximated.
fn refuse_inexact(
    kind: ProtocolKind,
    of: &ModelOf,
    fence: bool,
    bounds: &Bounds,
) -> Result<(), String> {
    let id = kind.id();
    let copies = bounds.duplicates > 0 || bounds.timing.max_retries > 0;
    // etcd's fenced store is fenced-cas's: a copy is rejected below the
    // fence or accepted again at its own token, its value already current.
    let etcd_fenced = of.protocol.has_revisions() && fence;
    if copies
        && !etcd_fenced
        && !matches!(
            of.protocol,
            Protocol::FencedCas
                | Protocol::ZkSequential
                | Protocol::StoreLock
                | Protocol::QueueClaim
                | Protocol::EffectNaive
                | Protocol::EffectIdempotencyKey
                | Protocol::EffectOutbox
                | Protocol::ActivePassive
        )
    {
        return Err(format!(
            "{id}: no refinement with duplicates or retransmissions: the {} model hands each write to the resource once, and a second copy has no model step ({})",
            of.protocol.id(),
            match of.protocol {
                Protocol::NoFence | Protocol::EtcdMutex | Protocol::EtcdMutexNoRecheck => {
                    "an unfenced resource applies it again, so the value goes back"
                }
                Protocol::ConditionalWrite => "nor has a second copy of a read: the store serves it again, perhaps a newer version, and the model reads once per grant",
                _ => "the resource checks it again and commits it twice",
            }
        ));
    }
    if bounds.crashes > 0 && of.protocol == Protocol::FencedCheckThenWrite {
        return Err(format!(
            "{id}: no refinement with crashes: a restarted resource forgets the writes it checked but has not written, and the model has no step that drops a checked write"
        ));
    }
    if bounds.jumps > 0 && of.protocol.store_is_lock() {
        return Err(format!(
            "{id}: no refinement with wall-clock jumps: a backward jump of the database's clock revives a transaction that idled past its timeout but was not aborted yet (the database aborts it when a request next touches the row), and the model's lease never comes back once it expired"
        ));
    }
    if bounds.jumps > 0 && of.protocol.has_jobs() {
        return Err(format!(
            "{id}: no refinement with wall-clock jumps: a backward jump of the queue's clock makes a claim that ran past its visibility timeout but was not dropped yet (the queue drops it when a request next touches the group) live again, and the model's claim never comes back once it expired"
        ));
    }
    // etcd's leases run on its monotonic clock, which no jump moves.
    let own_jump_rule = kind == ProtocolKind::ZkSequential
        || of.protocol.has_revisions()
        || kind == ProtocolKind::Redlock
        || lease_is_server_lock(kind)
        || of.protocol.is_pair();
    if bounds.jumps > 0 && !own_jump_rule {
        return Err(format!(
            "{id}: no refinement with wall-clock jumps: a backward jump of the lease server's clock revives a lease record that ran out but was not dropped yet (the server drops it at its expiry check; Redis, too, expires a key lazily against its wall clock), and the model's lease never comes back once it expired"
        ));
    }
    if let Some(why) = of
        .protocol
        .has_effect_sink()
        .then(|| super::effect_map::refusal(id, bounds))
        .flatten()
    {
        return Err(why);
    }
    if kind == ProtocolKind::IncrBesideLease {
        refuse_for_incr(bounds)?;
    }
    if kind == ProtocolKind::ConsensusGeneration {
        refuse_for_quorum(bounds)?;
    }
    Ok(())
}

/// Whether `kind`'s lease is a lock server's state, which no clock ends
/// (see [`server_lease`]).
fn lease_is_server_lock(kind: ProtocolKind) -> bool {
    matches!(
        kind,
        ProtocolKind::DynamodbHeartbeat | ProtocolKind::PgAdvisoryLock
    )
}

/// dynamodb-heartbeat, pg-advisory-lock: the lease as (owner, its
/// decision's token) — the lock item's owner, the session holding the
/// advisory lock — while that acquisition is the latest decision: the
/// model's grant is the decision, so a lock whose answer is in flight,
/// lost or came too late is no model lease, and a decision ends the one
/// before it (the model's lease is always the latest grant's). Neither is
/// read on a clock: the item stays until a delete or a takeover (a waiter
/// times the lease on its own clock), the lock until the server ends its
/// session.
fn server_lease<N>(s: &State<N>, server: &Server) -> Result<Option<(u64, Option<Token>)>, String> {
    let owner = match server {
        Server::Dynamo(table) => table.item(KEY).map(|i| i.0),
        Server::PgAdvisory(pg) => pg.lock_holder(KEY),
        _ => return Err("the node at coord/0 shows no lock table or PostgreSQL server".into()),
    };
    let latest = s.judge.issued().last().filter(|g| Some(g.0) == owner);
    Ok(latest.map(|&(o, t)| (o, (t != 0).then_some(Token(t)))))
}

/// Redlock: the lease as (owner, no token) — the latest decision, while
/// its client holds the lock and its validity has not run out on the
/// client's own monotonic clock (drift included; a paused client's timer
/// fires late, its clock does not stop). A crashed worker's client holds
/// nothing.
fn redlock_lease<N: Inspect>(
    s: &State<N>,
    workers: usize,
    now_ns: u64,
) -> Option<(u64, Option<Token>)> {
    let &(latest, _) = s.judge.issued().last()?;
    (0..workers).find_map(|i| {
        let Some(LockClient::Redis(client)) = s.nodes[i].worker()?.client() else {
            return None;
        };
        let (owner, valid_until_mono_ns) = client.holding()?;
        let mono_ns = s.clock(NodeId(i as u16)).read(now_ns).mono_ns;
        (owner == latest && mono_ns < valid_until_mono_ns).then_some((owner, None))
    })
}

/// The fastest drift (ppm, of any node) at which no master's key can run
/// out before the validity of the client it said OK to: a key lives `ttl`
/// on a master's wall clock, at worst `ttl / (1 + ρ)` of true time; the
/// validity is `v = ttl − 1 % − 2 ms` on the client's monotonic clock, at
/// most `v / (1 − ρ)`; so `ρ ≤ (ttl − v) / (ttl + v)`.
pub fn redlock_drift_ppm_max(ttl_ns: u64) -> u64 {
    let valid = validity_from_start_ns(ttl_ns);
    (ttl_ns - valid) * 1_000_000 / (ttl_ns + valid)
}

/// The faults under which Redlock's validities can overlap — the two the
/// algorithm was criticised for, and a drift past its allowance — refused:
/// a decision while the lease before it is valid has no model step
/// (measured: `tests/it/codecheck/redlock_refine.rs`).
fn refuse_for_redlock(p: &ProtocolConfig, bounds: &Bounds) -> Result<(), String> {
    if bounds.jumps > 0 {
        return Err("redlock: no refinement with wall-clock jumps: a master's wall clock stepping forward expires the holder's key inside its validity (Kleppmann's first failure), so the other client takes a majority and decides while the holder's lease is valid — two leases at once, which the model's one lease has no state for".into());
    }
    if bounds.crashes > 0 && !p.fsync_always && p.restart_delay_ns < p.lease_ttl_ns {
        return Err(format!(
            "redlock: no refinement with crashes under fsync = \"never\" and a restart delay of {} ms (below the {} ms TTL): a master restarted without the key it said OK to lets the other client take a majority and decide inside the holder's validity (Kleppmann's second failure) — two leases at once, which the model's one lease has no state for; with --fsync always or --restart-delay-ms of at least the TTL (antirez's answer) it is mapped",
            p.restart_delay_ns / 1_000_000,
            p.lease_ttl_ns / 1_000_000
        ));
    }
    let max_ppm = redlock_drift_ppm_max(p.lease_ttl_ns);
    if bounds.drifts > 0 && u64::from(bounds.drift_ppm) > max_ppm {
        return Err(format!(
            "redlock: no refinement with --drift-ppm {} (above {max_ppm} at a {} ms TTL): a fast master's key can run out before a slow client's validity (TTL − 1 % − 2 ms) does, so the other client decides while the holder's lease is valid — two leases at once, which the model's one lease has no state for",
            bounds.drift_ppm,
            p.lease_ttl_ns / 1_000_000
        ));
    }
    Ok(())
}

/// The lease coordinator primary of the moment (a failover moves it:
/// incr-beside-lease).
fn primary<N: Inspect>(s: &State<N>) -> Result<&Coordinator, String> {
    s.nodes[s.primary.0 as usize]
        .coordinator()
        .ok_or_else(|| "the coordinator primary shows no lease coordinator".into())
}

/// Bounds incr-beside-lease's mapping is not exact at.
fn refuse_for_incr(bounds: &Bounds) -> Result<(), String> {
    if bounds.failovers > 1 {
        return Err(format!(
            "incr-beside-lease: no refinement with --failovers {}: a second failover promotes the old primary, which rejoined with counter 0 (its INCRs are buffered, never synced) and whatever the new primary shipped it since; the model's backup after a failover is read from the new primary alone",
            bounds.failovers
        ));
    }
    if bounds.crashes > 0 {
        return Err("incr-beside-lease: no refinement with crashes: the primary's counter is only buffered (AOF everysec), so a primary that crashes and restarts comes back with counter 0 and no lease without a failover spent, and the model's counter goes back only at a failover".into());
    }
    Ok(())
}

/// The model's name of a value: the generation of the op whose write
/// produced it (0: the initial value).
fn version<N>(s: &State<N>, op: u64) -> Result<u8, String> {
    match OpId(op) {
        OpId::INITIAL => Ok(0),
        _ => s
            .judge
            .write_of(op)
            .map(|w| w.0 as u8)
            .ok_or(format!("the store holds op {op}, which no worker sent")),
    }
}

/// A pending grant's slot: generation, token, node (0: none).
fn pending(generation: u32, token: u64, node: u64) -> Result<Client, String> {
    Ok(Client {
        gen: small(generation as u64, "a generation")?,
        token: small(token, "a token")?,
        read: 0,
        node: small(node, "a sequence number")?,
    })
}

/// `n` as the model's byte, or why it does not fit.
fn small(n: u64, what: &str) -> Result<u8, String> {
    u8::try_from(n).map_err(|_| format!("{what} ({n}) is past the model's range (255)"))
}

/// The voters, the primary's quorum round and the messages of the rounds
/// in flight, into `a` (see the module doc: consensus-generation).
fn map_quorum<N: Inspect>(
    s: &State<N>,
    coord: NodeId,
    replicas: u8,
    failovers_max: u8,
    a: &mut Model,
) -> Result<(), String> {
    let done = failovers_max.saturating_sub(s.budget.failovers);
    if s.primary != NodeId(coord.0 + done as u16) {
        return Err(format!(
            "the primary is {:?} after {done} failovers: the model's leader is voter {done}",
            s.primary
        ));
    }
    a.failovers = done;
    for i in 0..replicas {
        let node = NodeId(coord.0 + i as u16);
        if s.is_down(node) {
            continue;
        }
        let c = s.nodes[node.0 as usize]
            .coordinator()
            .ok_or_else(|| format!("the node at coord/{i} shows no lease coordinator"))?;
        a.replicas[i as usize] = generation(c.counter())?;
    }
    let p = primary(s)?;
    a.counter = generation(p.counter())?;
    let me = 1u8 << done;
    let (ready, proposal, query) = p.quorum_round();
    a.ready = ready;
    if let Some((gen, acks)) = proposal {
        a.proposal = generation(gen)?;
        a.acks = acks & !me;
    }
    if let Some((acks, max)) = query {
        if ready || proposal.is_some() {
            return Err("the primary queries while it serves".into());
        }
        a.acks = acks & !me;
        a.heard_max = generation(max)?;
    }
    for packet in &s.in_flight {
        match packet.msg {
            Msg::Propose { gen } if !s.is_down(packet.to) => {
                let gen = generation(gen)?;
                if gen == 0 {
                    return Err("a proposal of generation 0".into());
                }
                a.proposing |= 1 << (gen - 1);
            }
            Msg::MaxIs { gen } if !ready && packet.to == s.primary => {
                let Some(i) = packet
                    .from
                    .0
                    .checked_sub(coord.0)
                    .filter(|&i| i < replicas as u16)
                else {
                    continue; // not a replica's: the primary ignores it
                };
                let answer = generation(gen)? + 1;
                let slot = &mut a.answers[i as usize];
                *slot = if *slot == 0 {
                    answer
                } else {
                    (*slot).min(answer)
                };
            }
            _ => {}
        }
    }
    Ok(())
}

/// A generation as the model's byte, within its proposals' range.
fn generation(gen: u64) -> Result<u8, String> {
    let g = small(gen, "a generation")?;
    if g > GENERATIONS_CAP {
        return Err(format!(
            "generation {g} is past the model's {GENERATIONS_CAP} (its proposals in flight are a byte)"
        ));
    }
    Ok(g)
}

/// Bounds consensus-generation's mapping is not exact at.
fn refuse_for_quorum(bounds: &Bounds) -> Result<(), String> {
    if bounds.crashes > 0 {
        return Err("consensus-generation: no refinement with crashes: a crashed primary restarts as a replica from its synced generation (one its query raised in memory is lost) and is promoted again without a failover, starting a query round the model's leader starts only at a failover".into());
    }
    if bounds.rejoins > 0 {
        return Err(format!(
            "consensus-generation: no refinement with --rejoins {}: the failed-over primary rejoins as a replica with its synced generation and accepts and answers again, and the model's stopped leader never comes back",
            bounds.rejoins
        ));
    }
    if bounds.losses > 0 {
        return Err(format!(
            "consensus-generation: no refinement with --losses {}: a lost Propose leaves the flight without reaching a replica, and a lost MaxIs raises the lowest answer in flight, and the model's proposals leave the flight only at a replica, its answers only when heard",
            bounds.losses
        ));
    }
    Ok(())
}
