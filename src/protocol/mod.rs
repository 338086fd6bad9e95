//! Sans-IO lock protocols: workers, lease coordinators and protected
//! resources as state machines that take inputs and return effects.
//!
//! **Invariant:** nothing here imports `sim`, `serde`, a clock or an RNG.
//! The simulator, tests and external drivers all drive these nodes through
//! the one [`Node`] trait.

pub mod active_passive;
pub mod alt_role;
pub mod cache_lease;
pub mod catalogue;
pub mod client;
pub mod coordinator;
pub mod dynamodb;
pub mod effects;
pub mod etcd;
pub mod msg;
pub mod node;
pub mod queue_claim;
pub mod record;
pub mod redlock;
pub mod resource;
pub mod single_db;
#[cfg(test)]
mod testkit;
pub mod worker;
pub mod zookeeper;

pub use catalogue::{ProtocolConfig, ProtocolKind};
pub use msg::{Key, Msg, OpId, Token};
pub use node::{
    Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation, StepDownCause, TimerId,
};

use coordinator::{Coordinator, CoordinatorConfig};
use dynamodb::LockTable;
use etcd::EtcdServer;
use redlock::{RedisMaster, RedisMasterConfig};
use resource::{Resource, ResourceConfig};
use worker::{Worker, WorkerConfig};
use zookeeper::{ZkServer, ZkServerConfig};

/// What a node is, with its configuration resolved.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Role {
    Worker(WorkerConfig),
    Coordinator(CoordinatorConfig),
    Resource(ResourceConfig),
    /// The lock service of a real-system protocol, at a coordinator's
    /// address (`coord/<i>`): the clients decide, the server only answers.
    Server(ServerConfig),
    /// Effect sinks, outboxes and the article's alternatives (see [`alt_role`]).
    Alt(alt_role::AltRole),
}

/// The real-system lock services.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ServerConfig {
    ZooKeeper(ZkServerConfig),
    /// A DynamoDB lock table.
    DynamoDb,
    /// One of Redlock's independent Redis masters.
    Redis(RedisMasterConfig),
    /// An etcd server (revisions, leases, watches).
    Etcd,
}

impl Role {
    pub fn is_worker(&self) -> bool {
        matches!(self, Role::Worker(_))
    }
}

/// Builds a fresh built-in node (first boot, or after a crash: the
/// persisted record arrives with `Input::Start`).
pub fn build(role: &Role) -> Box<dyn Node> {
    match *role {
        Role::Worker(cfg) => Box::new(Worker::new(cfg)),
        Role::Coordinator(cfg) => Box::new(Coordinator::new(cfg)),
        Role::Resource(cfg) => Box::new(Resource::new(cfg)),
        Role::Server(ServerConfig::ZooKeeper(cfg)) => Box::new(ZkServer::new(cfg)),
        Role::Server(ServerConfig::DynamoDb) => Box::new(LockTable::new()),
        Role::Server(ServerConfig::Redis(cfg)) => Box::new(RedisMaster::new(cfg)),
        Role::Server(ServerConfig::Etcd) => Box::new(EtcdServer::new()),
        Role::Alt(alt) => alt.build(),
    }
}
