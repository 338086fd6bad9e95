//! The system a code-level check drives: the scenario's fixed addresses
//! (workers `0..n`, the coordinator replicas or lock servers `coord/0..r`,
//! the resource), the roles built from a catalogue protocol exactly as a
//! scenario resolves them, and the timing the nodes run with (the
//! replication lag too: a replicated coordinator's timers must fall inside
//! the search's horizon). Two layouts: a lease coordinator (one, or a
//! replica group that fails over), and lock servers (ZooKeeper, etcd,
//! Redlock's Redis masters, DynamoDB's lock table, PostgreSQL) whose
//! clients, inside the workers, decide they hold the lock.
//! [`Builtin`] is the built-in nodes as one hashable type; a test may put
//! its own node type in their place through a factory (a deliberately
//! broken copy of a node, say).

use crate::protocol::active_passive::PairNode;
use crate::protocol::alt_role::{layout, pair_node, AltRole};
use crate::protocol::cache_lease::CasCache;
use crate::protocol::client::LockKind;
use crate::protocol::coordinator::Coordinator;
use crate::protocol::effects::{Dispatcher, OutboxStore, Sink};
use crate::protocol::queue_claim::Queue;
use crate::protocol::resource::Resource;
use crate::protocol::single_db::Db;
use crate::protocol::systems::redlock::MASTERS_MAX;
use crate::protocol::worker::{MoreLocks, Worker, WorkerConfig};
use crate::protocol::{
    Clocks, Effect, Input, Key, Nanos, Node, NodeId, NodeLayout, ProtocolConfig, ProtocolKind,
    Role, Server,
};

/// Milliseconds in nanoseconds.
pub const MS: Nanos = 1_000_000;

/// The built-in nodes of a lease or lock-server protocol, as one
/// `Clone + Hash + Eq` type. A worker is boxed (616 bytes against the
/// others' ~170), and so is a lock server (its maps and watches): a state
/// holds one slot per node.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Builtin {
    Worker(Box<Worker>),
    Coordinator(Coordinator),
    Resource(Resource),
    Server(Box<Server>),
    /// cache-lease's cache at `resource/0` (gets/cas).
    Cache(CasCache),
    /// single-db's database: row lock and data in one node (`resource/0`).
    Db(Db),
    /// queue-claim's job queue: claims and results in one node (`resource/0`).
    Queue(Queue),
    /// The effect protocols' provider (`sink/0`).
    Sink(Sink),
    /// effect-outbox's store: the document and its outbox (`resource/0`).
    Outbox(OutboxStore),
    /// effect-outbox's dispatcher (`dispatcher/0`).
    Dispatcher(Dispatcher),
    /// github-2012-pair's node (at a worker's address).
    Pair(PairNode),
}

impl Node for Builtin {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, effects: &mut Vec<Effect>) {
        match self {
            Builtin::Worker(n) => n.handle(clocks, input, effects),
            Builtin::Coordinator(n) => n.handle(clocks, input, effects),
            Builtin::Resource(n) => n.handle(clocks, input, effects),
            Builtin::Server(n) => n.handle(clocks, input, effects),
            Builtin::Cache(n) => n.handle(clocks, input, effects),
            Builtin::Db(n) => n.handle(clocks, input, effects),
            Builtin::Queue(n) => n.handle(clocks, input, effects),
            Builtin::Sink(n) => n.handle(clocks, input, effects),
            Builtin::Outbox(n) => n.handle(clocks, input, effects),
            Builtin::Dispatcher(n) => n.handle(clocks, input, effects),
            Builtin::Pair(n) => n.handle(clocks, input, effects),
        }
    }
}

/// Builds a fresh built-in node for `role` (first boot or a restart).
pub fn builtin(role: &Role) -> Builtin {
    match *role {
        Role::Worker(cfg) => Builtin::Worker(Box::new(Worker::new(cfg))),
        Role::Coordinator(cfg) => Builtin::Coordinator(Coordinator::new(cfg)),
        Role::Resource(cfg) => Builtin::Resource(Resource::new(cfg)),
        Role::Server(cfg) => Builtin::Server(Box::new(cfg.server())),
        Role::Alt(AltRole::CasCache) => Builtin::Cache(CasCache::new()),
        Role::Alt(AltRole::Db(cfg)) => Builtin::Db(Db::new(cfg)),
        Role::Alt(AltRole::Queue(cfg)) => Builtin::Queue(Queue::new(cfg)),
        Role::Alt(AltRole::Sink) => Builtin::Sink(Sink::new()),
        Role::Alt(AltRole::OutboxStore(cfg)) => Builtin::Outbox(OutboxStore::new(cfg)),
        Role::Alt(AltRole::Dispatcher(cfg)) => Builtin::Dispatcher(Dispatcher::new(cfg)),
        Role::Alt(AltRole::Pair(cfg)) => Builtin::Pair(PairNode::new(cfg)),
    }
}

/// How the workers are timed (the scenario's `[workload]`, in ms).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Timing {
    pub lease_ttl_ms: u64,
    pub work_ms: u64,
    pub think_ms: u64,
    pub retry_ms: u64,
    pub request_timeout_ms: u64,
    pub max_retries: u32,
    /// Async replication (incr-beside-lease): the primary ships its state
    /// this long after it changes.
    pub replication_lag_ms: u64,
}

impl Timing {
    /// The timing `kind` is checked with: the default, except that a lock
    /// server's lease or session TTL is 9 ms — the clients ping or keep
    /// alive every third of it (ZooKeeper also ages its answers by two
    /// thirds), and a scripted scenario needs those periods in whole ms —
    /// and DynamoDB's lease is 10 ms: its client heartbeats every 3/10 of
    /// the lease (the library's 3 s against 10 s), whole at 10 ms only.
    pub fn for_protocol(kind: ProtocolKind) -> Timing {
        let lease_ttl_ms = match kind {
            ProtocolKind::DynamodbHeartbeat => 10,
            _ if is_lock_server(kind) => 9,
            _ => return Timing::default(),
        };
        Timing {
            lease_ttl_ms,
            ..Timing::default()
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_ttl_ms: 10,
            work_ms: 2,
            think_ms: 1,
            retry_ms: 4,
            request_timeout_ms: 6,
            max_retries: 0,
            replication_lag_ms: 3,
        }
    }
}

/// Every node's role by address, and the addresses the harness needs.
#[derive(Clone, Debug)]
pub struct Topology {
    pub protocol: ProtocolConfig,
    /// `roles[i]` is node `NodeId(i)`'s.
    pub roles: Vec<Role>,
    pub workers: usize,
    /// The first coordinator replica or lock server (`coord/0`): the
    /// primary at boot, where the group address routes until a failover.
    pub coord: NodeId,
    /// Coordinator replicas or lock servers, `coord .. coord + replicas`
    /// (0 where the store is the lock: `coord` is then `resource`).
    pub replicas: usize,
    pub resource: NodeId,
    /// The nodes after `resource/0`, by name (`sink/0`, `dispatcher/0`:
    /// the effect protocols'), as the simulator's layout adds them.
    pub extra: Vec<String>,
}

/// The protocol options a check may set against the catalogue's defaults
/// (the scenario's `[protocol]` keys of the same names).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct Options {
    /// `fence`: whether writes carry the lock's token and the resource
    /// checks it (`None`: the catalogue default).
    pub fence: Option<bool>,
    /// `masters`: Redlock's independent Redis masters (`None`:
    /// [`MASTERS_DEFAULT`], not the catalogue's five).
    pub masters: Option<u8>,
    /// `fsync`: whether Redlock's masters sync every write before the
    /// reply (`appendfsync always`; `None`: the catalogue's `never`, so a
    /// restarted master has forgotten its keys).
    pub fsync_always: Option<bool>,
    /// `restart_delay_ms`: a restarted Redlock master answers nothing for
    /// this long (antirez's answer to the restart; `None`: 0).
    pub restart_delay_ms: Option<u64>,
}

/// Redlock's masters in a code-level check: three, the fewest whose
/// majority (two) is not all of them, so a client can hold the lock with
/// one master refusing or silent. The catalogue's five multiply the space
/// (each acquisition is a `SET` to every master, answered one by one in
/// any order): their stale write needs 6 messages in flight, where the
/// search does not finish within 20,000,000 states.
pub const MASTERS_DEFAULT: u8 = 3;

/// Whether `--code` can drive `kind`: lease coordinators (one, or a
/// replica group that fails over) and a resource — also one whose writes
/// are conditional (object-store-cas's If-Match, cache-lease's gets/cas) —
/// or the lock servers the clients decide with (see [`is_lock_server`]),
/// or a store that is its own lock (see [`is_store_lock`]), an effect
/// sink (and outbox dispatcher) beside the resource, or the active/passive
/// pair at the workers' addresses (`alt_role::pair_node`): every protocol
/// of the catalogue.
pub fn is_supported(kind: ProtocolKind) -> bool {
    matches!(
        kind,
        ProtocolKind::TtlLeaseDel
            | ProtocolKind::RedisSetNx
            | ProtocolKind::CheckBeforeWrite
            | ProtocolKind::FencedCas
            | ProtocolKind::FencedCheckThenWrite
            | ProtocolKind::IncrBesideLease
            | ProtocolKind::ConsensusGeneration
            | ProtocolKind::ZkSequential
            | ProtocolKind::EtcdMutex
            | ProtocolKind::EtcdMutexNoRecheck
            | ProtocolKind::Redlock
            | ProtocolKind::DynamodbHeartbeat
            | ProtocolKind::PgAdvisoryLock
            | ProtocolKind::ObjectStoreCas
            | ProtocolKind::CacheLease
            | ProtocolKind::SingleDb
            | ProtocolKind::QueueClaim
            | ProtocolKind::EffectNaive
            | ProtocolKind::EffectIdempotencyKey
            | ProtocolKind::EffectOutbox
            | ProtocolKind::Github2012Pair
    )
}

/// Whether `kind`'s store is its lock (single-db's row lock, queue-claim's
/// claim): no coordinator, the workers acquire from `resource/0`.
pub fn is_store_lock(kind: ProtocolKind) -> bool {
    matches!(kind, ProtocolKind::SingleDb | ProtocolKind::QueueClaim)
}

/// Whether `kind` runs lock servers at `coord/<i>`, whose clients in the
/// workers decide they hold the lock (`Observation::Acquired`, which the
/// judge takes as the grant, as the simulator's recorder does).
pub fn is_lock_server(kind: ProtocolKind) -> bool {
    kind.def().layout == NodeLayout::LockServers
}

/// Whether `kind`'s coordinator is a replica group (its catalogue default
/// has replicas), so that a failover is a fault the harness may inject.
pub fn is_replicated(kind: ProtocolKind) -> bool {
    is_supported(kind) && !is_lock_server(kind) && kind.default_replicas() > 1
}

/// The protocols `--code` checks, in the catalogue's order.
pub fn supported() -> Vec<&'static str> {
    ProtocolKind::ALL
        .iter()
        .filter(|k| is_supported(**k))
        .map(|k| k.id())
        .collect()
}

impl Topology {
    /// [`Topology::new`] with the catalogue's options.
    pub fn lease(kind: ProtocolKind, workers: usize, timing: Timing) -> Result<Topology, String> {
        Topology::new(kind, Options::default(), workers, timing)
    }

    /// `workers` workers with one op each on key 0, the coordinator
    /// replicas or lock servers `coord/0..` (the catalogue's default count:
    /// 1, or 2 for incr-beside-lease, 3 for consensus-generation; Redlock's
    /// masters as `options` say, [`MASTERS_DEFAULT`] if they do not) and
    /// `resource/0`, at the addresses a scenario gives them.
    pub fn new(
        kind: ProtocolKind,
        options: Options,
        workers: usize,
        timing: Timing,
    ) -> Result<Topology, String> {
        if !is_supported(kind) {
            return Err(format!(
                "protocol {:?} cannot be checked at the code level yet; supported: {}",
                kind.id(),
                supported().join(", ")
            ));
        }
        let mut protocol = protocol_config(kind, options, timing)?;
        protocol.replication_lag_ns = timing.replication_lag_ms * MS;
        // Where the store is the lock (single-db, queue-claim) there is no
        // coordinator: the workers acquire from `resource/0` itself.
        let store_is_lock = is_store_lock(kind);
        if store_is_lock {
            protocol.replicas = 0;
        }
        let replicas = protocol.replicas as usize;
        let resource = NodeId((workers + replicas) as u16);
        // The simulator's own layout of the alternatives (`alt_role::layout`):
        // the role `resource/0` takes, the nodes after it, and where workers
        // acquire and call the effect sink.
        let layout = layout(&protocol, resource, timing.request_timeout_ms * MS);
        if workers + replicas + 1 + layout.extra.len() > 32 {
            return Err(format!(
                "{workers} workers: a state marks down nodes in 32 bits"
            ));
        }
        let coord = if store_is_lock {
            resource
        } else {
            NodeId(workers as u16)
        };
        let mut roles: Vec<Role> = (0..workers)
            .map(|i| {
                let mut cfg = worker_config(&protocol, i, coord, resource, timing);
                cfg.coordinator = layout.worker_coordinator.unwrap_or(cfg.coordinator);
                cfg.effect = layout.worker_effect;
                if kind.def().layout == NodeLayout::Pair {
                    // The pair's two nodes stand at the workers' addresses.
                    pair_node(&protocol, &cfg, NodeId(1 - i as u16))
                } else {
                    Role::Worker(cfg)
                }
            })
            .collect();
        for i in 0..protocol.replicas {
            roles.push(Role::server(&protocol, coord, i));
        }
        roles.push(
            layout
                .resource
                .unwrap_or(Role::Resource(protocol.resource())),
        );
        let extra = layout.extra.iter().map(|(name, _)| name.clone()).collect();
        roles.extend(layout.extra.into_iter().map(|(_, role)| role));
        Ok(Topology {
            protocol,
            roles,
            workers,
            coord,
            replicas,
            resource,
            extra,
        })
    }
}

/// `kind`'s configuration at `timing`'s TTL with `options` set against the
/// catalogue's defaults (an option the protocol does not take is refused),
/// and the coordinator replicas or lock servers a check runs.
fn protocol_config(
    kind: ProtocolKind,
    options: Options,
    timing: Timing,
) -> Result<ProtocolConfig, String> {
    let mut protocol = ProtocolConfig::new(kind, timing.lease_ttl_ms * MS);
    if let Some(fence) = options.fence {
        if !kind.def().accepts("fence") {
            return Err(format!("protocol {:?} has no `fence` option", kind.id()));
        }
        protocol.fence = fence;
    }
    protocol.replicas = if is_replicated(kind) || is_lock_server(kind) {
        kind.default_replicas()
    } else {
        1
    };
    if kind.def().accepts("masters") {
        protocol.replicas = options.masters.unwrap_or(MASTERS_DEFAULT);
        if !(1..=MASTERS_MAX).contains(&protocol.replicas) {
            return Err(format!(
                "{} takes masters from 1 to {MASTERS_MAX}",
                kind.id()
            ));
        }
    } else if options.masters.is_some() {
        return Err(format!("protocol {:?} has no `masters` option", kind.id()));
    }
    if let Some(always) = options.fsync_always {
        if !kind.def().accepts("fsync") {
            return Err(format!("protocol {:?} has no `fsync` option", kind.id()));
        }
        protocol.fsync_always = always;
    }
    if let Some(delay_ms) = options.restart_delay_ms {
        if !kind.def().accepts("restart_delay_ms") {
            return Err(format!(
                "protocol {:?} has no `restart_delay_ms` option",
                kind.id()
            ));
        }
        protocol.restart_delay_ns = delay_ms.saturating_mul(MS);
    }
    Ok(protocol)
}

fn worker_config(
    p: &ProtocolConfig,
    i: usize,
    coord: NodeId,
    resource: NodeId,
    t: Timing,
) -> WorkerConfig {
    WorkerConfig {
        id: NodeId(i as u16),
        index: i as u16 + 1,
        key: Key(0),
        coordinator: NodeId::COORD_GROUP,
        resource,
        start_ns: 0,
        ops: 1,
        work_ns: t.work_ms * MS,
        think_ns: t.think_ms * MS,
        retry_ns: t.retry_ms * MS,
        request_timeout_ns: t.request_timeout_ms * MS,
        max_retries: t.max_retries,
        send_token: p.worker_sends_token(),
        token_on_reads: p.worker_token_on_reads(),
        check_lease_before_write: p.worker_checks_lease(),
        renew_every_ns: p.renew_every_ns,
        write_if_match: p.worker_writes_if_match(),
        lock: LockKind::for_protocol(p, coord),
        effect: None,
        more_locks: MoreLocks::NONE,
    }
}
