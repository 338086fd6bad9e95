//! The named protocols a scenario can pick, as compositions of orthogonal
//! parts: lease release style × token source (and its replication) ×
//! resource check × worker discipline. Renewal (heartbeats) is an option on
//! every lease protocol.
//!
//! | id | real system | release | tokens | resource check | worker |
//! |----|-------------|---------|--------|----------------|--------|
//! | ttl-lease-del | a TTL lock released with plain `DEL` | DEL | none | none | writes blindly |
//! | redis-set-nx | `SET key rand NX PX ttl` + compare-and-delete (redis.io "Distributed Locks with Redis") | CAD | none | none | writes blindly |
//! | check-before-write | the holder re-checks its lease (local clock) right before saving | CAD | none | none | checks lease |
//! | fenced-cas | coordinator counter + the article's `UPDATE … WHERE fencing_token < $2` | CAD | durable counter | atomic CAS | sends token |
//! | fenced-check-then-write | the article's "subtly broken" read-fence-then-write | CAD | durable counter | check, then write later | sends token |
//! | incr-beside-lease | Redis lease + `INCR lock:counter` on an async-replicated primary | CAD | async-replicated counter | atomic CAS | sends token |
//! | object-store-cas | a lease plus a conditional object write (If-Match / generation match) | CAD | none | generation read == current | sends what it read |
//! | consensus-generation | Chubby sequencer: generation committed on a majority (Burrows, OSDI '06) | CAD | quorum | atomic CAS | sends token |
//!
//! The real-system protocols below are *client-decided*: a library in the
//! worker concludes it holds the lock from what lock servers said
//! (`Role::Server`, `client::LockClient`), and the harness records that
//! decision as the grant.
//!
//! | id | real system | lock service | token | resource check |
//! |----|-------------|--------------|-------|----------------|
//! | zk-sequential | ZooKeeper lock recipe / Curator `InterProcessMutex` | sessions, ephemeral sequential znodes, watches | znode sequence | atomic CAS (`fence = false`: none) |
//! | dynamodb-heartbeat | AWS DynamoDB Lock Client | lock table, conditional put on a record version number | none (`fence = true`: owner-change counter) | none (`fence = true`: atomic CAS) |
//! | redlock | Redlock (redis.io "Distributed Locks with Redis") | N independent Redis masters, `SET NX PX` on a majority within validity | none | none |
//! | etcd-mutex | etcd clientv3 `concurrency.Mutex` after PR #11408 (re-reads its key after waiting) | revisions, leases, watches | create revision | atomic CAS (`fence = false`: none) |
//! | etcd-mutex-no-recheck | the same Mutex as in etcd 3.4.3 (Jepsen: returns the lock after its lease expired while waiting) | revisions, leases, watches | create revision | atomic CAS (`fence = false`: none) |
//! | pg-advisory-lock | PostgreSQL session-level `pg_try_advisory_lock` guarding another store | sessions ended by the keepalive timeout | none (`fence = true`: `nextval` in the same statement) | none (`fence = true`: atomic CAS) |
//! | effect-naive | fenced-cas, then an email/payment call retried on timeout | CAD | durable counter | atomic CAS | + effect call, no key |
//! | effect-idempotency-key | fenced-cas, then the call with the op id as idempotency key | CAD | durable counter | atomic CAS | + effect call, keyed |
//! | single-db | one database owns lock and data: `SELECT … FOR UPDATE`, `UPDATE`, `COMMIT` | COMMIT | transaction ids | live transaction | unchanged, pointed at the db |
//! | queue-claim | SQS-style claim / visibility timeout / delete, results keyed by job | delete | delivery numbers | first result per job | unchanged, pointed at the queue |
//! | cache-lease | best-effort `SET NX PX` lease before a memcached `gets`/`cas` refresh | CAD | none | cas on the entry read | writes blindly |
//! | effect-outbox | fenced-cas whose write also enqueues an outbox entry; one dispatcher delivers | CAD | durable counter | atomic CAS + outbox | sends token |
//!
//! `github-2012-pair` has no lock service: two file servers decide between
//! themselves by heartbeats and STONITH who is active (`active_passive`);
//! the harness records each promotion. No token (`fence = true`: the
//! storage is reserved with the promotion's epoch, SCSI-3 style).

use crate::protocol::coordinator::{CoordinatorConfig, ReleaseStyle, Replication};
use crate::protocol::node::{Nanos, NodeId};
use crate::protocol::resource::{FenceCheck, ResourceConfig};
use crate::protocol::systems::SystemId;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ProtocolKind {
    TtlLeaseDel,
    RedisSetNx,
    CheckBeforeWrite,
    FencedCas,
    FencedCheckThenWrite,
    IncrBesideLease,
    ConsensusGeneration,
    ZkSequential,
    DynamodbHeartbeat,
    Redlock,
    EffectNaive,
    EffectIdempotencyKey,
    EffectOutbox,
    SingleDb,
    QueueClaim,
    CacheLease,
    ObjectStoreCas,
    EtcdMutex,
    EtcdMutexNoRecheck,
    Github2012Pair,
    PgAdvisoryLock,
}

/// How a protocol's nodes stand at the scenario's fixed addresses.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NodeLayout {
    /// A lease coordinator (and its replicas) at `coord/<i>` grants; the
    /// resource (or the protocol's own store) at `resource/0`.
    Lease,
    /// The real system's lock servers at `coord/<i>`; a library in each
    /// worker decides it holds the lock.
    LockServers,
    /// No lock service: one database or queue at `resource/0` is the lock.
    Store,
    /// No lock service and no workers: the pair's two nodes stand at the
    /// workers' addresses.
    Pair,
}

impl NodeLayout {
    /// As docs/scenarios.md's protocol table names it.
    pub fn name(self) -> &'static str {
        match self {
            NodeLayout::Lease => "lease",
            NodeLayout::LockServers => "lock servers",
            NodeLayout::Store => "store",
            NodeLayout::Pair => "pair",
        }
    }
}

/// One protocol of the catalogue: its name, where its behaviour is
/// documented, its traits and the scenario rules that depend on it.
#[derive(Clone, Copy, Debug)]
pub struct ProtocolDef {
    pub kind: ProtocolKind,
    /// The scenario's `[protocol] kind`.
    pub id: &'static str,
    pub summary: &'static str,
    /// Where the real system's behaviour is documented.
    pub source: &'static str,
    /// Grants carry an ordered token (the fenced family; `strict`,
    /// `fence_reads` and `volatile_fence` apply).
    pub fenced: bool,
    /// The client, not a server, decides that it holds the lock.
    pub client_decided: bool,
    /// Its token comes from the lock service itself (a znode sequence, a
    /// revision), so `fence = false` — not sending it — is a variant.
    pub native_token: bool,
    /// It delivers an irreversible effect through `sink/0`.
    pub effect_sink: bool,
    /// `fence` when the scenario does not say.
    pub fence_default: bool,
    /// Replica count when the scenario does not say.
    pub replicas_default: u8,
    /// The `replicas` a scenario may set (inclusive); `None`: the key is
    /// refused (redlock counts `masters`).
    pub replicas_range: Option<(u8, u8)>,
    /// The `[protocol]` keys it accepts besides `kind`, `replicas`,
    /// `replication_lag_ms` and `renew_every_ms` (which every protocol takes).
    pub options: &'static [&'static str],
    pub layout: NodeLayout,
    /// The client-decided system whose servers and client it runs (its
    /// line in the registry, `systems::for_each_system!`); `None`: the
    /// layout's built-in nodes.
    pub system: Option<SystemId>,
}

impl ProtocolDef {
    /// Whether the scenario may set `[protocol] <key>`.
    pub fn accepts(&self, key: &str) -> bool {
        self.options.contains(&key)
    }
}

/// The `[protocol]` keys the fenced family shares.
const FENCED_OPTIONS: &[&str] = &["strict", "fence_reads", "volatile_fence", "lock_delay_ms"];
/// Plain leases (no token): a lease server's lock-delay only.
const LEASE_OPTIONS: &[&str] = &["lock_delay_ms"];
/// Fenced with a token from the lock service that `fence = false` omits.
const NATIVE_FENCED_OPTIONS: &[&str] = &[
    "strict",
    "fence_reads",
    "volatile_fence",
    "lock_delay_ms",
    "fence",
];
/// Fenced protocols on client-decided lock servers (no lock-delay).
const SERVER_FENCED_OPTIONS: &[&str] = &["strict", "fence_reads", "volatile_fence", "fence"];

/// The defaults rows start from (`..LEASE`): the fields a row does not
/// set are its template's. `kind`, `id`, `summary` and `source` are always
/// the row's own.
const LEASE: ProtocolDef = ProtocolDef {
    kind: ProtocolKind::TtlLeaseDel,
    id: "",
    summary: "",
    source: "",
    fenced: false,
    client_decided: false,
    native_token: false,
    effect_sink: false,
    fence_default: true,
    replicas_default: 1,
    replicas_range: Some((1, 8)),
    options: LEASE_OPTIONS,
    layout: NodeLayout::Lease,
    system: None,
};
/// A lease coordinator that issues tokens the resource checks.
const FENCED: ProtocolDef = ProtocolDef {
    fenced: true,
    options: FENCED_OPTIONS,
    ..LEASE
};
/// A real system's lock servers; the client decides.
const SERVERS: ProtocolDef = ProtocolDef {
    client_decided: true,
    options: &[],
    layout: NodeLayout::LockServers,
    ..LEASE
};
/// No lock service: the store itself is the lock.
const NO_LOCK_SERVICE: ProtocolDef = ProtocolDef {
    replicas_default: 0,
    replicas_range: Some((0, 0)),
    options: &[],
    layout: NodeLayout::Store,
    ..LEASE
};

/// Every protocol, in the order `fencesim list` and error messages name
/// them. Adding a protocol is one row here (and its `ProtocolKind` variant).
pub const PROTOCOLS: &[ProtocolDef] = &[
    ProtocolDef {
        kind: ProtocolKind::TtlLeaseDel,
        id: "ttl-lease-del",
        summary: "TTL lease, released with plain DEL; resource trusts the lease",
        source: "the article; redis.io distributed-locks page (why not plain DEL)",
        ..LEASE
    },
    ProtocolDef {
        kind: ProtocolKind::RedisSetNx,
        id: "redis-set-nx",
        summary: "Redis SET NX PX with a random value, compare-and-delete release; no fence",
        source: "redis.io 'Distributed Locks with Redis'; Redis 8.4 DELEX IFEQ",
        ..LEASE
    },
    ProtocolDef {
        kind: ProtocolKind::CheckBeforeWrite,
        id: "check-before-write",
        summary: "holder re-checks its lease just before saving; a pause after the check still wins",
        source: "the article: 'A can pause between the check and the write'",
        ..LEASE
    },
    ProtocolDef {
        kind: ProtocolKind::FencedCas,
        id: "fenced-cas",
        summary: "coordinator issues increasing tokens; resource accepts token >= fence atomically",
        source: "the article's UPDATE ... WHERE fencing_token < $2",
        replicas_range: Some((1, 1)),
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::FencedCheckThenWrite,
        id: "fenced-check-then-write",
        summary: "resource reads the fence, compares, then writes in a second step",
        source: "the article's 'subtly broken' getFence-then-update",
        replicas_range: Some((1, 1)),
        options: &[
            "strict",
            "fence_reads",
            "volatile_fence",
            "lock_delay_ms",
            "check_to_write_ms",
        ],
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::IncrBesideLease,
        id: "incr-beside-lease",
        summary: "INCR counter beside the lease on an async-replicated primary; failover reissues",
        source: "the article: 'Why INCR is not automatically token 42'",
        replicas_default: 2,
        replicas_range: Some((2, 8)),
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::ConsensusGeneration,
        id: "consensus-generation",
        summary: "Chubby-style sequencer: generation committed on a majority before the grant",
        source: "Burrows, The Chubby lock service (OSDI 2006): sequencers",
        replicas_default: 3,
        // `fence = false`: a resource that cannot check sequencers.
        options: NATIVE_FENCED_OPTIONS,
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::ZkSequential,
        id: "zk-sequential",
        summary: "ZooKeeper recipe: ephemeral sequential znodes, lowest owns, watch predecessor; seq is the token",
        source: "zookeeper.apache.org 'ZooKeeper Recipes and Solutions: Locks'; Curator InterProcessMutex",
        fenced: true,
        native_token: true,
        options: &["strict", "fence_reads", "volatile_fence", "fence", "herd"],
        system: Some(SystemId::Zk),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::DynamodbHeartbeat,
        id: "dynamodb-heartbeat",
        summary: "DynamoDB lock client: RVN heartbeat; waiter takes over after a lease of no change; no fence",
        source: "github.com/awslabs/amazon-dynamodb-lock-client; AWS blog 'Building Distributed Locks with the DynamoDB Lock Client'",
        native_token: true,
        // The DynamoDB lock client has no token; `fence = true` adds one.
        fence_default: false,
        options: &["fence"],
        system: Some(SystemId::Dynamo),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::Redlock,
        id: "redlock",
        summary: "Redlock: SET NX PX on N independent Redis masters; a majority within validity = TTL - elapsed - drift; no fence",
        source: "redis.io 'Distributed Locks with Redis' (Redlock); Kleppmann 'How to do distributed locking' (2016); antirez 'Is Redlock safe?' (2016)",
        // Five masters, the redis.io page's example.
        replicas_default: 5,
        replicas_range: None,
        options: &["masters", "fsync", "restart_delay_ms"],
        system: Some(SystemId::Redis),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::EtcdMutex,
        id: "etcd-mutex",
        summary: "etcd Mutex: lease-bound key, waiters by create revision, own key re-read after waiting; revision is the token",
        source: "etcd clientv3/concurrency Mutex; etcd PR #11408 'concurrency: make lock more reliable'",
        fenced: true,
        native_token: true,
        options: SERVER_FENCED_OPTIONS,
        system: Some(SystemId::Etcd),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::EtcdMutexNoRecheck,
        id: "etcd-mutex-no-recheck",
        summary: "etcd 3.4.3 Mutex: returns the lock after waiting even if its lease expired meanwhile",
        source: "jepsen.io/analyses/etcd-3.4.3 ('locks are not mutually exclusive'; revision as fencing token)",
        fenced: true,
        native_token: true,
        options: SERVER_FENCED_OPTIONS,
        system: Some(SystemId::Etcd),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::PgAdvisoryLock,
        id: "pg-advisory-lock",
        summary: "PostgreSQL session-level pg_try_advisory_lock guarding another store: held until the session ends (keepalive timeout); no fence (fence = true: nextval drawn with the lock)",
        source: "PostgreSQL manual 'Advisory Locks' and pg_try_advisory_lock; tcp_keepalives_idle/interval/count, idle_session_timeout",
        native_token: true,
        // Advisory locks carry no token; `fence = true` draws one from a sequence.
        fence_default: false,
        replicas_range: Some((1, 1)),
        // With the token: the store's fence options too (`fence_reads`: the
        // new holder's read raises the fence before a thawed holder writes).
        options: SERVER_FENCED_OPTIONS,
        system: Some(SystemId::PgAdvisory),
        ..SERVERS
    },
    ProtocolDef {
        kind: ProtocolKind::Github2012Pair,
        id: "github-2012-pair",
        summary: "active/passive pair: heartbeats, STONITH, takeover assuming the fence worked (fence = true: storage reservation)",
        source: "the article; github.blog 'Downtime last Saturday' (Imbriaco, Dec 2012); SCSI-3 persistent reservations (fence_scsi)",
        native_token: true,
        // GitHub's pair fenced only through STONITH; `fence = true` adds one.
        fence_default: false,
        options: &["fence"],
        layout: NodeLayout::Pair,
        ..NO_LOCK_SERVICE
    },
    ProtocolDef {
        kind: ProtocolKind::EffectNaive,
        id: "effect-naive",
        summary: "fenced update, then the holder calls an email/payment provider, retrying on timeout",
        source: "the article: 'You cannot fence an email after it was sent'",
        native_token: true,
        effect_sink: true,
        options: NATIVE_FENCED_OPTIONS,
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::EffectIdempotencyKey,
        id: "effect-idempotency-key",
        summary: "fenced update, then the provider call carries an idempotency key it dedups on",
        source: "the article ('use the provider's idempotency facility'); Stripe Idempotency-Key",
        native_token: true,
        effect_sink: true,
        options: NATIVE_FENCED_OPTIONS,
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::EffectOutbox,
        id: "effect-outbox",
        summary: "effect enqueued in the same fenced write; one dispatcher delivers with the entry id as key",
        source: "the article ('record an outbox entry transactionally'); Richardson, transactional outbox",
        native_token: true,
        effect_sink: true,
        options: NATIVE_FENCED_OPTIONS,
        ..FENCED
    },
    ProtocolDef {
        kind: ProtocolKind::SingleDb,
        id: "single-db",
        summary: "no coordinator: one database owns lock and data (row lock, UPDATE + COMMIT in one transaction)",
        source: "the article's alternatives table; PostgreSQL SELECT FOR UPDATE, idle_in_transaction_session_timeout",
        ..NO_LOCK_SERVICE
    },
    ProtocolDef {
        kind: ProtocolKind::QueueClaim,
        id: "queue-claim",
        summary: "durable queue claim / visibility timeout / ack; a redelivered job is done twice, stored once",
        source: "the article's alternatives table; Amazon SQS visibility timeout and DeleteMessage",
        ..NO_LOCK_SERVICE
    },
    ProtocolDef {
        kind: ProtocolKind::CacheLease,
        id: "cache-lease",
        summary: "best-effort lease before a cache refresh that is a gets/cas: duplicates only waste work",
        source: "the article's alternatives table ('duplicate cache refresh is only wasted work'); memcached cas",
        ..LEASE
    },
    ProtocolDef {
        kind: ProtocolKind::ObjectStoreCas,
        id: "object-store-cas",
        summary: "lease + conditional object write: the write carries the generation it read (If-Match)",
        source: "the article ('use its conditional-write primitive'); GCS x-goog-if-generation-match, S3 If-Match",
        ..LEASE
    },
];

/// `ProtocolKind as usize` → its row in [`PROTOCOLS`]; building it checks
/// at compile time that every kind has exactly one row.
const ROW: [u8; PROTOCOLS.len()] = {
    let mut row = [u8::MAX; PROTOCOLS.len()];
    let mut i = 0;
    while i < PROTOCOLS.len() {
        let k = PROTOCOLS[i].kind as usize;
        assert!(k < PROTOCOLS.len(), "a ProtocolKind without a row");
        assert!(row[k] == u8::MAX, "a ProtocolKind with two rows");
        row[k] = i as u8;
        i += 1;
    }
    row
};

impl ProtocolKind {
    /// Every protocol, in the catalogue's order.
    pub const ALL: [ProtocolKind; PROTOCOLS.len()] = {
        let mut all = [ProtocolKind::TtlLeaseDel; PROTOCOLS.len()];
        let mut i = 0;
        while i < PROTOCOLS.len() {
            all[i] = PROTOCOLS[i].kind;
            i += 1;
        }
        all
    };

    /// Its row of the catalogue.
    pub fn def(self) -> &'static ProtocolDef {
        &PROTOCOLS[ROW[self as usize] as usize]
    }

    pub fn id(self) -> &'static str {
        self.def().id
    }

    pub fn from_id(id: &str) -> Option<ProtocolKind> {
        PROTOCOLS.iter().find(|d| d.id == id).map(|d| d.kind)
    }

    pub fn summary(self) -> &'static str {
        self.def().summary
    }

    /// Where the real system's behaviour is documented.
    pub fn source(self) -> &'static str {
        self.def().source
    }

    pub fn is_fenced(self) -> bool {
        self.def().fenced
    }

    /// The client, not a server, decides that it holds the lock.
    pub fn is_client_decided(self) -> bool {
        self.def().client_decided
    }

    /// Its token comes from the lock service itself (a znode sequence, a
    /// revision), so `fence = false` — not sending it — is a variant.
    pub fn has_native_token(self) -> bool {
        self.def().native_token
    }

    /// Protocols that deliver an irreversible effect through `sink/0`.
    pub fn has_effect_sink(self) -> bool {
        self.def().effect_sink
    }

    /// Replica count when the scenario does not say.
    pub fn default_replicas(self) -> u8 {
        self.def().replicas_default
    }
}

/// A protocol with its options resolved.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ProtocolConfig {
    pub kind: ProtocolKind,
    pub lease_ttl_ns: Nanos,
    /// Fenced: one write per token (`fence < $token`).
    pub strict: bool,
    /// Fenced: reads carry the token and raise the fence.
    pub fence_reads: bool,
    /// Coordinator replicas (`coord/0..`).
    pub replicas: u8,
    /// incr-beside-lease (and replicated plain leases): replication lag.
    pub replication_lag_ns: Nanos,
    /// Heartbeat period; `None`: no renewal.
    pub renew_every_ns: Option<Nanos>,
    /// fenced-check-then-write: time between the fence check and the write.
    pub check_to_write_ns: Nanos,
    /// The resource keeps its fence only in memory (lost on restart).
    pub volatile_fence: bool,
    /// Protocols with a native token: send it and check it (default true);
    /// consensus-generation: the resource checks the sequencer.
    pub fence: bool,
    /// zk-sequential: every waiter watches the lock node (the herd effect).
    pub herd: bool,
    /// Chubby's lock-delay after a lease expires (0: none).
    pub lock_delay_ns: Nanos,
    /// redlock: masters sync every write (`appendfsync always`).
    pub fsync_always: bool,
    /// redlock: a restarted master stays silent this long (antirez's fix).
    pub restart_delay_ns: Nanos,
}

impl ProtocolConfig {
    pub fn new(kind: ProtocolKind, lease_ttl_ns: Nanos) -> Self {
        ProtocolConfig {
            kind,
            lease_ttl_ns,
            strict: false,
            fence_reads: false,
            replicas: kind.default_replicas(),
            replication_lag_ns: 50_000_000,
            renew_every_ns: None,
            check_to_write_ns: 5_000_000,
            volatile_fence: false,
            fence: kind.def().fence_default,
            herd: false,
            lock_delay_ns: 0,
            fsync_always: false,
            restart_delay_ns: 0,
        }
    }

    /// Whether writes carry a token the resource checks.
    pub fn fenced(&self) -> bool {
        if self.kind.has_native_token() {
            self.fence
        } else {
            // consensus-generation with `fence = false`: a resource that
            // cannot check sequencers (what Chubby's lock-delay is for).
            self.kind.is_fenced() && self.fence
        }
    }

    /// The coordinator replica `index` of a group starting at `first`.
    pub fn coordinator(&self, first: NodeId, index: u8) -> CoordinatorConfig {
        let release = match self.kind {
            ProtocolKind::TtlLeaseDel => ReleaseStyle::Del,
            _ => ReleaseStyle::CompareAndDelete,
        };
        let replication = match self.kind {
            ProtocolKind::ConsensusGeneration => Replication::Quorum,
            _ if self.replicas > 1 => Replication::Async {
                lag_ns: self.replication_lag_ns,
            },
            _ => Replication::None,
        };
        CoordinatorConfig {
            lease_ttl_ns: self.lease_ttl_ns,
            release,
            tokens: self.kind.is_fenced(),
            replication,
            first,
            replicas: self.replicas,
            index,
            lock_delay_ns: self.lock_delay_ns,
        }
    }

    pub fn resource(&self) -> ResourceConfig {
        let check = match self.kind {
            ProtocolKind::ObjectStoreCas => FenceCheck::GenerationMatch,
            ProtocolKind::FencedCheckThenWrite => FenceCheck::CheckThenWrite {
                step_ns: self.check_to_write_ns,
            },
            _ if self.fenced() => FenceCheck::Cas {
                strict: self.strict,
                fence_reads: self.fence_reads,
            },
            _ => FenceCheck::None,
        };
        ResourceConfig {
            check,
            volatile_fence: self.volatile_fence,
            ordered_sessions: self.kind == ProtocolKind::Github2012Pair,
        }
    }

    pub fn worker_sends_token(&self) -> bool {
        self.fenced() || matches!(self.kind, ProtocolKind::SingleDb | ProtocolKind::QueueClaim)
    }

    pub fn worker_token_on_reads(&self) -> bool {
        self.fenced() && self.fence_reads || self.kind == ProtocolKind::SingleDb
    }

    pub fn worker_checks_lease(&self) -> bool {
        self.kind == ProtocolKind::CheckBeforeWrite
    }

    /// The write carries the version its read returned (If-Match on the
    /// object generation; memcached's `cas` on the entry `gets` returned):
    /// a conditional write, judged by whether its condition held.
    pub fn worker_writes_if_match(&self) -> bool {
        matches!(
            self.kind,
            ProtocolKind::ObjectStoreCas | ProtocolKind::CacheLease
        )
    }
}
