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

use crate::protocol::client::LockKind;
use crate::protocol::coordinator::{CoordinatorConfig, ReleaseStyle, Replication};
use crate::protocol::dynamodb::DynamoClientConfig;
use crate::protocol::etcd::EtcdClientConfig;
use crate::protocol::node::{Nanos, NodeId};
use crate::protocol::redlock::{RedisMasterConfig, RedlockClientConfig};
use crate::protocol::resource::{FenceCheck, ResourceConfig};
use crate::protocol::zookeeper::{ZkClientConfig, ZkServerConfig};
use crate::protocol::{Role, ServerConfig};

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
}

impl ProtocolKind {
    pub const ALL: [ProtocolKind; 20] = [
        ProtocolKind::TtlLeaseDel,
        ProtocolKind::RedisSetNx,
        ProtocolKind::CheckBeforeWrite,
        ProtocolKind::FencedCas,
        ProtocolKind::FencedCheckThenWrite,
        ProtocolKind::IncrBesideLease,
        ProtocolKind::ConsensusGeneration,
        ProtocolKind::ZkSequential,
        ProtocolKind::DynamodbHeartbeat,
        ProtocolKind::Redlock,
        ProtocolKind::EtcdMutex,
        ProtocolKind::EtcdMutexNoRecheck,
        ProtocolKind::Github2012Pair,
        ProtocolKind::EffectNaive,
        ProtocolKind::EffectIdempotencyKey,
        ProtocolKind::EffectOutbox,
        ProtocolKind::SingleDb,
        ProtocolKind::QueueClaim,
        ProtocolKind::CacheLease,
        ProtocolKind::ObjectStoreCas,
    ];

    pub fn id(self) -> &'static str {
        match self {
            ProtocolKind::TtlLeaseDel => "ttl-lease-del",
            ProtocolKind::RedisSetNx => "redis-set-nx",
            ProtocolKind::CheckBeforeWrite => "check-before-write",
            ProtocolKind::FencedCas => "fenced-cas",
            ProtocolKind::FencedCheckThenWrite => "fenced-check-then-write",
            ProtocolKind::IncrBesideLease => "incr-beside-lease",
            ProtocolKind::ConsensusGeneration => "consensus-generation",
            ProtocolKind::ZkSequential => "zk-sequential",
            ProtocolKind::DynamodbHeartbeat => "dynamodb-heartbeat",
            ProtocolKind::Redlock => "redlock",
            ProtocolKind::EffectNaive => "effect-naive",
            ProtocolKind::EffectIdempotencyKey => "effect-idempotency-key",
            ProtocolKind::EffectOutbox => "effect-outbox",
            ProtocolKind::SingleDb => "single-db",
            ProtocolKind::QueueClaim => "queue-claim",
            ProtocolKind::CacheLease => "cache-lease",
            ProtocolKind::ObjectStoreCas => "object-store-cas",
            ProtocolKind::EtcdMutex => "etcd-mutex",
            ProtocolKind::EtcdMutexNoRecheck => "etcd-mutex-no-recheck",
            ProtocolKind::Github2012Pair => "github-2012-pair",
        }
    }

    pub fn from_id(id: &str) -> Option<ProtocolKind> {
        ProtocolKind::ALL.into_iter().find(|k| k.id() == id)
    }

    pub fn summary(self) -> &'static str {
        match self {
            ProtocolKind::TtlLeaseDel => {
                "TTL lease, released with plain DEL; resource trusts the lease"
            }
            ProtocolKind::RedisSetNx => {
                "Redis SET NX PX with a random value, compare-and-delete release; no fence"
            }
            ProtocolKind::CheckBeforeWrite => {
                "holder re-checks its lease just before saving; a pause after the check still wins"
            }
            ProtocolKind::FencedCas => {
                "coordinator issues increasing tokens; resource accepts token >= fence atomically"
            }
            ProtocolKind::FencedCheckThenWrite => {
                "resource reads the fence, compares, then writes in a second step"
            }
            ProtocolKind::IncrBesideLease => {
                "INCR counter beside the lease on an async-replicated primary; failover reissues"
            }
            ProtocolKind::ConsensusGeneration => {
                "Chubby-style sequencer: generation committed on a majority before the grant"
            }
            ProtocolKind::ZkSequential => {
                "ZooKeeper recipe: ephemeral sequential znodes, lowest owns, watch predecessor; seq is the token"
            }
            ProtocolKind::DynamodbHeartbeat => {
                "DynamoDB lock client: RVN heartbeat; waiter takes over after a lease of no change; no fence"
            }
            ProtocolKind::Redlock => {
                "Redlock: SET NX PX on N independent Redis masters; a majority within validity = TTL - elapsed - drift; no fence"
            }
            ProtocolKind::EffectNaive => {
                "fenced update, then the holder calls an email/payment provider, retrying on timeout"
            }
            ProtocolKind::EffectIdempotencyKey => {
                "fenced update, then the provider call carries an idempotency key it dedups on"
            }
            ProtocolKind::EffectOutbox => {
                "effect enqueued in the same fenced write; one dispatcher delivers with the entry id as key"
            }
            ProtocolKind::SingleDb => {
                "no coordinator: one database owns lock and data (row lock, UPDATE + COMMIT in one transaction)"
            }
            ProtocolKind::QueueClaim => {
                "durable queue claim / visibility timeout / ack; a redelivered job is done twice, stored once"
            }
            ProtocolKind::CacheLease => {
                "best-effort lease before a cache refresh that is a gets/cas: duplicates only waste work"
            }
            ProtocolKind::ObjectStoreCas => {
                "lease + conditional object write: the write carries the generation it read (If-Match)"
            }
            ProtocolKind::EtcdMutex => {
                "etcd Mutex: lease-bound key, waiters by create revision, own key re-read after waiting; revision is the token"
            }
            ProtocolKind::EtcdMutexNoRecheck => {
                "etcd 3.4.3 Mutex: returns the lock after waiting even if its lease expired meanwhile"
            }
            ProtocolKind::Github2012Pair => {
                "active/passive pair: heartbeats, STONITH, takeover assuming the fence worked (fence = true: storage reservation)"
            }
        }
    }

    /// Where the real system's behaviour is documented.
    pub fn source(self) -> &'static str {
        match self {
            ProtocolKind::TtlLeaseDel => {
                "the article; redis.io distributed-locks page (why not plain DEL)"
            }
            ProtocolKind::RedisSetNx => {
                "redis.io 'Distributed Locks with Redis'; Redis 8.4 DELEX IFEQ"
            }
            ProtocolKind::CheckBeforeWrite => {
                "the article: 'A can pause between the check and the write'"
            }
            ProtocolKind::FencedCas => "the article's UPDATE ... WHERE fencing_token < $2",
            ProtocolKind::FencedCheckThenWrite => {
                "the article's 'subtly broken' getFence-then-update"
            }
            ProtocolKind::IncrBesideLease => {
                "the article: 'Why INCR is not automatically token 42'"
            }
            ProtocolKind::ConsensusGeneration => {
                "Burrows, The Chubby lock service (OSDI 2006): sequencers"
            }
            ProtocolKind::ZkSequential => {
                "zookeeper.apache.org 'ZooKeeper Recipes and Solutions: Locks'; Curator InterProcessMutex"
            }
            ProtocolKind::DynamodbHeartbeat => {
                "github.com/awslabs/amazon-dynamodb-lock-client; AWS blog 'Building Distributed Locks with the DynamoDB Lock Client'"
            }
            ProtocolKind::Redlock => {
                "redis.io 'Distributed Locks with Redis' (Redlock); Kleppmann 'How to do distributed locking' (2016); antirez 'Is Redlock safe?' (2016)"
            }
            ProtocolKind::EffectNaive => {
                "the article: 'You cannot fence an email after it was sent'"
            }
            ProtocolKind::EffectIdempotencyKey => {
                "the article ('use the provider's idempotency facility'); Stripe Idempotency-Key"
            }
            ProtocolKind::EffectOutbox => {
                "the article ('record an outbox entry transactionally'); Richardson, transactional outbox"
            }
            ProtocolKind::SingleDb => {
                "the article's alternatives table; PostgreSQL SELECT FOR UPDATE, idle_in_transaction_session_timeout"
            }
            ProtocolKind::QueueClaim => {
                "the article's alternatives table; Amazon SQS visibility timeout and DeleteMessage"
            }
            ProtocolKind::CacheLease => {
                "the article's alternatives table ('duplicate cache refresh is only wasted work'); memcached cas"
            }
            ProtocolKind::ObjectStoreCas => {
                "the article ('use its conditional-write primitive'); GCS x-goog-if-generation-match, S3 If-Match"
            }
            ProtocolKind::EtcdMutex => {
                "etcd clientv3/concurrency Mutex; etcd PR #11408 'concurrency: make lock more reliable'"
            }
            ProtocolKind::EtcdMutexNoRecheck => {
                "jepsen.io/analyses/etcd-3.4.3 ('locks are not mutually exclusive'; revision as fencing token)"
            }
            ProtocolKind::Github2012Pair => {
                "the article; github.blog 'Downtime last Saturday' (Imbriaco, Dec 2012); SCSI-3 persistent reservations (fence_scsi)"
            }
        }
    }

    pub fn is_fenced(self) -> bool {
        matches!(
            self,
            ProtocolKind::FencedCas
                | ProtocolKind::FencedCheckThenWrite
                | ProtocolKind::IncrBesideLease
                | ProtocolKind::ConsensusGeneration
                | ProtocolKind::ZkSequential
                | ProtocolKind::EffectNaive
                | ProtocolKind::EffectIdempotencyKey
                | ProtocolKind::EffectOutbox
                | ProtocolKind::EtcdMutex
                | ProtocolKind::EtcdMutexNoRecheck
        )
    }

    /// The client, not a server, decides that it holds the lock.
    pub fn is_client_decided(self) -> bool {
        matches!(
            self,
            ProtocolKind::ZkSequential
                | ProtocolKind::DynamodbHeartbeat
                | ProtocolKind::Redlock
                | ProtocolKind::EtcdMutex
                | ProtocolKind::EtcdMutexNoRecheck
        )
    }

    /// Its token comes from the lock service itself (a znode sequence, a
    /// revision), so `fence = false` — not sending it — is a variant.
    pub fn has_native_token(self) -> bool {
        matches!(
            self,
            ProtocolKind::ZkSequential
                | ProtocolKind::DynamodbHeartbeat
                | ProtocolKind::Github2012Pair
                | ProtocolKind::EffectNaive
                | ProtocolKind::EffectIdempotencyKey
                | ProtocolKind::EffectOutbox
                | ProtocolKind::EtcdMutex
                | ProtocolKind::EtcdMutexNoRecheck
        )
    }

    /// Protocols that deliver an irreversible effect through `sink/0`.
    pub fn has_effect_sink(self) -> bool {
        matches!(
            self,
            ProtocolKind::EffectNaive
                | ProtocolKind::EffectIdempotencyKey
                | ProtocolKind::EffectOutbox
        )
    }

    /// Replica count when the scenario does not say.
    pub fn default_replicas(self) -> u8 {
        match self {
            ProtocolKind::IncrBesideLease => 2,
            ProtocolKind::ConsensusGeneration => 3,
            // Five masters, the redis.io page's example.
            ProtocolKind::Redlock => 5,
            ProtocolKind::SingleDb | ProtocolKind::QueueClaim | ProtocolKind::Github2012Pair => 0,
            _ => 1,
        }
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
            // The DynamoDB lock client has no token, GitHub's pair fenced
            // only through STONITH; `fence = true` adds one.
            fence: !matches!(
                kind,
                ProtocolKind::DynamodbHeartbeat | ProtocolKind::Github2012Pair
            ),
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

    /// The node at coordinator address `first + index`.
    pub fn server_role(&self, first: NodeId, index: u8) -> Role {
        match self.kind {
            ProtocolKind::ZkSequential => Role::Server(ServerConfig::ZooKeeper(ZkServerConfig {
                session_timeout_ns: self.lease_ttl_ns,
            })),
            ProtocolKind::DynamodbHeartbeat => Role::Server(ServerConfig::DynamoDb),
            ProtocolKind::Redlock => Role::Server(ServerConfig::Redis(RedisMasterConfig {
                fsync_always: self.fsync_always,
                restart_delay_ns: self.restart_delay_ns,
            })),
            ProtocolKind::EtcdMutex | ProtocolKind::EtcdMutexNoRecheck => {
                Role::Server(ServerConfig::Etcd)
            }
            _ => Role::Coordinator(self.coordinator(first, index)),
        }
    }

    /// Who decides a worker holds the lock; `first` is `coord/0`'s id.
    pub fn lock_kind(&self, first: NodeId) -> LockKind {
        match self.kind {
            ProtocolKind::ZkSequential => LockKind::Zk(ZkClientConfig {
                server: NodeId::COORD_GROUP,
                session_timeout_ns: self.lease_ttl_ns,
                herd: self.herd,
            }),
            ProtocolKind::DynamodbHeartbeat => LockKind::Dynamo(DynamoClientConfig {
                table: NodeId::COORD_GROUP,
                lease_ns: self.lease_ttl_ns,
                // The client's defaults: 3 s heartbeats against a 10 s lease.
                heartbeat_ns: self
                    .renew_every_ns
                    .unwrap_or(self.lease_ttl_ns * 3 / 10)
                    .max(1),
                fence: self.fence,
            }),
            ProtocolKind::Redlock => LockKind::Redlock(RedlockClientConfig {
                first_master: first,
                masters: self.replicas,
                ttl_ns: self.lease_ttl_ns,
            }),
            ProtocolKind::EtcdMutex | ProtocolKind::EtcdMutexNoRecheck => {
                LockKind::Etcd(EtcdClientConfig {
                    server: NodeId::COORD_GROUP,
                    lease_ttl_ns: self.lease_ttl_ns,
                    // clientv3 keeps a lease alive every third of its TTL.
                    keepalive_every_ns: self.renew_every_ns.unwrap_or(self.lease_ttl_ns / 3).max(1),
                    recheck: self.kind == ProtocolKind::EtcdMutex,
                })
            }
            _ => LockKind::Lease,
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
