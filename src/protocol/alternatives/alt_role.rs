//! Roles beyond the lock domain's worker / coordinator / resource: the
//! effect sink and outbox nodes, and the article's alternatives to a
//! distributed lock. One enum so the shared `Role` gains a single variant.

use crate::protocol::active_passive::{PairConfig, PairNode};
use crate::protocol::cache_lease::CasCache;
use crate::protocol::catalogue::{ProtocolConfig, ProtocolKind};
use crate::protocol::effects::{Dispatcher, DispatcherConfig, EffectCall, OutboxStore, Sink};
use crate::protocol::node::{Nanos, Node, NodeId};
use crate::protocol::queue_claim::{Queue, QueueConfig};
use crate::protocol::resource::ResourceConfig;
use crate::protocol::single_db::{Db, DbConfig};
use crate::protocol::worker::WorkerConfig;
use crate::protocol::Role;

/// How often the outbox dispatcher polls an empty outbox.
pub const OUTBOX_POLL_NS: Nanos = 100_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AltRole {
    /// An email / payment provider that cannot check tokens (`sink/0`).
    Sink,
    /// The fenced document store with a transactional outbox (`resource/0`).
    OutboxStore(ResourceConfig),
    /// The single outbox dispatcher (`dispatcher/0`).
    Dispatcher(DispatcherConfig),
    /// One database owning lock and data (`resource/0`, no coordinator).
    Db(DbConfig),
    /// A durable job queue with claims and results (`resource/0`, no coordinator).
    Queue(QueueConfig),
    /// A cache whose refresh is a gets/cas (`resource/0`).
    CasCache,
    /// A node of an active/passive pair (at a `[[worker]]`'s address).
    Pair(PairConfig),
}

impl AltRole {
    pub fn build(&self) -> Box<dyn Node> {
        match *self {
            AltRole::Sink => Box::new(Sink::new()),
            AltRole::OutboxStore(cfg) => Box::new(OutboxStore::new(cfg)),
            AltRole::Dispatcher(cfg) => Box::new(Dispatcher::new(cfg)),
            AltRole::Db(cfg) => Box::new(Db::new(cfg)),
            AltRole::Queue(cfg) => Box::new(Queue::new(cfg)),
            AltRole::CasCache => Box::new(CasCache::new()),
            AltRole::Pair(cfg) => Box::new(PairNode::new(cfg)),
        }
    }

    /// A short description for the resolved-options block.
    pub fn describe(&self) -> String {
        match self {
            AltRole::Sink => "effect sink (performs every request; dedups idempotency keys)".into(),
            AltRole::OutboxStore(cfg) => format!("resource check {cfg:?} + transactional outbox"),
            AltRole::Dispatcher(cfg) => format!(
                "outbox dispatcher poll {}ms timeout {}ms",
                cfg.poll_ns / 1_000_000,
                cfg.request_timeout_ns / 1_000_000
            ),
            AltRole::Db(cfg) => format!(
                "database: row locks + data, transaction timeout {}ms",
                cfg.txn_timeout_ns / 1_000_000
            ),
            AltRole::Queue(cfg) => format!(
                "job queue: claims, visibility timeout {}ms, results keyed by job",
                cfg.visibility_timeout_ns / 1_000_000
            ),
            AltRole::CasCache => "cache: gets/cas refresh, no fence".into(),
            AltRole::Pair(c) => format!(
                "pair node ({}) heartbeat {}ms dead time {}ms stonith timeout {}ms, storage fence {}",
                if c.starts_active { "boots active" } else { "boots passive" },
                c.heartbeat_ns / 1_000_000,
                c.failover_after_ns / 1_000_000,
                c.fence_timeout_ns / 1_000_000,
                c.storage_fence
            ),
        }
    }

    /// The same role under protocol `p` (what `Options::set_protocol` does):
    /// only a pair node derives anything from the protocol.
    pub fn with_protocol(self, p: &ProtocolConfig) -> AltRole {
        match self {
            AltRole::Pair(c) => AltRole::Pair(PairConfig {
                heartbeat_ns: pair_heartbeat_ns(p),
                failover_after_ns: p.lease_ttl_ns,
                storage_fence: p.fence,
                ..c
            }),
            other => other,
        }
    }
}

/// The pair's heartbeat: `renew_every_ms`, else 3/10 of the dead time.
fn pair_heartbeat_ns(p: &ProtocolConfig) -> Nanos {
    p.renew_every_ns.unwrap_or(p.lease_ttl_ns * 3 / 10).max(1)
}

/// `github-2012-pair`: the node at a `[[worker]]`'s address (`w`), whose
/// peer is the other worker. Worker 1 boots active.
pub fn pair_node(p: &ProtocolConfig, w: &WorkerConfig, peer: NodeId) -> Role {
    Role::Alt(AltRole::Pair(PairConfig {
        peer,
        storage: w.resource,
        key: w.key,
        index: w.index,
        starts_active: w.index == 1,
        start_ns: w.start_ns,
        heartbeat_ns: pair_heartbeat_ns(p),
        failover_after_ns: p.lease_ttl_ns,
        fence_timeout_ns: w.request_timeout_ns,
        request_timeout_ns: w.request_timeout_ns,
        work_ns: w.work_ns,
        think_ns: w.think_ns,
        storage_fence: p.fence,
    }))
}

/// What a protocol changes in the standard node layout (workers, `coord/*`,
/// `resource/0`): nodes added after `resource/0` (ids follow on), the role
/// `resource/0` takes instead of the plain store, and how workers call the
/// effect sink.
#[derive(Debug, Default)]
pub struct Layout {
    pub extra: Vec<(String, Role)>,
    pub resource: Option<Role>,
    pub worker_effect: Option<EffectCall>,
    /// Where workers send acquire/release, when not the coordinator group.
    pub worker_coordinator: Option<NodeId>,
}

pub fn layout(p: &ProtocolConfig, resource: NodeId, request_timeout_ns: Nanos) -> Layout {
    let mut out = Layout::default();
    let ttl_ns = p.lease_ttl_ns;
    match p.kind {
        ProtocolKind::SingleDb => {
            out.resource = Some(Role::Alt(AltRole::Db(DbConfig {
                txn_timeout_ns: ttl_ns,
            })));
            out.worker_coordinator = Some(resource);
        }
        ProtocolKind::QueueClaim => {
            out.resource = Some(Role::Alt(AltRole::Queue(QueueConfig {
                visibility_timeout_ns: ttl_ns,
            })));
            out.worker_coordinator = Some(resource);
        }
        ProtocolKind::CacheLease => out.resource = Some(Role::Alt(AltRole::CasCache)),
        _ => {}
    }
    if !p.kind.has_effect_sink() {
        return out;
    }
    let sink = NodeId(resource.0 + 1);
    out.extra.push(("sink/0".into(), Role::Alt(AltRole::Sink)));
    match p.kind {
        ProtocolKind::EffectOutbox => {
            out.resource = Some(Role::Alt(AltRole::OutboxStore(p.resource())));
            out.extra.push((
                "dispatcher/0".into(),
                Role::Alt(AltRole::Dispatcher(DispatcherConfig {
                    store: resource,
                    sink,
                    poll_ns: OUTBOX_POLL_NS,
                    request_timeout_ns,
                })),
            ));
        }
        kind => {
            out.worker_effect = Some(EffectCall {
                sink,
                idempotency_key: kind == ProtocolKind::EffectIdempotencyKey,
            });
        }
    }
    out
}
