//! The lock-client half of the protocols in which the *client* decides it
//! holds the lock: ZooKeeper's recipe, Redlock, the DynamoDB lock client,
//! the etcd mutex. No server hands out "the lock" in those systems; a
//! library in the worker process concludes it from what the servers said.
//!
//! The workload around the lock — read, compute, write, op ids as values,
//! retransmissions — is the [`Worker`](crate::protocol::worker::Worker)'s and is the
//! same for every protocol. The worker hands the lock phases (acquire,
//! release) to a [`LockClient`] and hears back [`LockEvent`]s; at
//! `Acquired` it emits [`Observation::Acquired`](crate::protocol::node::Observation),
//! which the harness records as the grant. [`Requests`] is the one
//! request/retransmit helper the clients share (all three live in
//! `base.rs`, which the clients import instead of this dispatcher).

pub use super::base::{
    ClientBase, LockEvent, Requests, Sent, Timeout, CLIENT_REQUEST, CLIENT_TIMER_A, CLIENT_TIMER_B,
    CLIENT_TIMER_BASE,
};
use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::msg::Msg;
use crate::protocol::node::{Clocks, Effect, NodeId, TimerId};
use crate::protocol::systems::{LockSystem, SystemId};

/// Declares `LockKind` and `LockClient` with one variant per registered
/// system (`systems::for_each_system!` calls it with its lines).
macro_rules! declare_clients {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        /// Which lock client a worker runs.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum LockKind {
            /// The lease coordinator's own grant (`acquire` -> `acquire_ok`).
            Lease,
            $( $variant(<$system as LockSystem>::ClientConfig), )*
        }

        impl LockKind {
            /// The client of `system` for protocol `p`; `first` is `coord/0`'s id.
            pub fn of(system: SystemId, p: &ProtocolConfig, first: NodeId) -> LockKind {
                match system {
                    $( SystemId::$variant => LockKind::$variant(
                        <$system as LockSystem>::client_config(p, first)
                    ), )*
                }
            }
        }

        #[derive(Clone, PartialEq, Eq, Hash, Debug)]
        pub enum LockClient {
            $( $variant(<$system as LockSystem>::Client), )*
        }

        impl LockClient {
            pub fn new(kind: LockKind, base: ClientBase) -> Option<LockClient> {
                match kind {
                    LockKind::Lease => None,
                    $( LockKind::$variant(cfg) => Some(LockClient::$variant(
                        <$system as LockSystem>::client(cfg, base)
                    )), )*
                }
            }

            /// Start acquiring under the fresh acquisition nonce `owner`.
            pub fn acquire(&mut self, clocks: Clocks, owner: u64, fx: &mut Vec<Effect>) {
                match self {
                    $( LockClient::$variant(c) => c.acquire(clocks, owner, fx), )*
                }
            }

            pub fn release(&mut self, clocks: Clocks, fx: &mut Vec<Effect>) {
                match self {
                    $( LockClient::$variant(c) => c.release(clocks, fx), )*
                }
            }

            pub fn on_message(&mut self, clocks: Clocks, msg: Msg, fx: &mut Vec<Effect>) -> LockEvent {
                match self {
                    $( LockClient::$variant(c) => c.on_message(clocks, msg, fx), )*
                }
            }

            pub fn on_timer(&mut self, clocks: Clocks, timer: TimerId, fx: &mut Vec<Effect>) -> LockEvent {
                match self {
                    $( LockClient::$variant(c) => c.on_timer(clocks, timer, fx), )*
                }
            }
        }
    };
}

crate::protocol::systems::for_each_system!(declare_clients);

impl LockKind {
    /// Who decides a worker of protocol `p` holds the lock: its system's
    /// client, or the lease coordinator's grant; `first` is `coord/0`'s id.
    pub fn for_protocol(p: &ProtocolConfig, first: NodeId) -> LockKind {
        match p.kind.def().system {
            Some(system) => LockKind::of(system, p, first),
            None => LockKind::Lease,
        }
    }
}
