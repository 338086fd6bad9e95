//! Sans-IO lock protocols: workers, lease coordinators and protected
//! resources as state machines that take inputs and return effects.
//!
//! **Invariant:** nothing here imports `sim`, `serde`, a clock or an RNG.
//! The simulator, tests and external drivers all drive these nodes through
//! the one [`Node`] trait.
//!
//! Four wings: `core/` (messages, the `Node` contract, durable records),
//! `lease/` (coordinator, resource, worker), `systems/` (ZooKeeper, etcd,
//! Redlock, DynamoDB over their shared client base) and `alternatives/`
//! (single database, queue claim, cache lease, active/passive pair,
//! irreversible effects). `catalogue.rs` composes them into named protocols.

pub mod alternatives;
pub mod catalogue;
pub mod core;
pub mod lease;
pub mod systems;
#[cfg(test)]
mod testkit;

// The wings' files keep their flat paths (`protocol::worker`, `protocol::msg`, …):
// code outside protocol/ names a file, not the wing it lives in.
pub use self::alternatives::{
    active_passive, alt_role, cache_lease, effects, queue_claim, single_db,
};
pub use self::core::{msg, node, record};
pub use self::lease::{coordinator, resource, worker};
pub use self::systems::{client, dynamodb, etcd, redlock, zookeeper};

pub use catalogue::{NodeLayout, ProtocolConfig, ProtocolDef, ProtocolKind, PROTOCOLS};
pub use msg::{Key, Msg, OpId, Token};
pub use node::{
    Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation, Record, StepDownCause,
    TimerId,
};

pub use systems::{Server, ServerConfig, SystemId};

use coordinator::{Coordinator, CoordinatorConfig};
use resource::{Resource, ResourceConfig};
use worker::{Worker, WorkerConfig};

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

impl Role {
    pub fn is_worker(&self) -> bool {
        matches!(self, Role::Worker(_))
    }

    /// The node of protocol `p` at coordinator address `first + index`:
    /// its system's server, or a lease coordinator replica.
    pub fn server(p: &ProtocolConfig, first: NodeId, index: u8) -> Role {
        match p.kind.def().system {
            Some(system) => Role::Server(ServerConfig::of(system, p, first, index)),
            None => Role::Coordinator(p.coordinator(first, index)),
        }
    }
}

/// Builds a fresh built-in node (first boot, or after a crash: the
/// persisted record arrives with `Input::Start`).
pub fn build(role: &Role) -> Box<dyn Node> {
    match *role {
        Role::Worker(cfg) => Box::new(Worker::new(cfg)),
        Role::Coordinator(cfg) => Box::new(Coordinator::new(cfg)),
        Role::Resource(cfg) => Box::new(Resource::new(cfg)),
        Role::Server(cfg) => cfg.build(),
        Role::Alt(alt) => alt.build(),
    }
}
