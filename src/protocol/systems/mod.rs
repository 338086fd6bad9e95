//! Real lock systems in which the *client* decides it holds the lock:
//! ZooKeeper's recipe, etcd's Mutex, Redlock, the DynamoDB lock client and a
//! PostgreSQL session-level advisory lock, each one file with its server and client halves, over the shared client
//! base (`base`) whose [`LockSystem`] contract each file implements.
//!
//! The registry below is the one place a system is named outside its own
//! file: one line per system. Everything that dispatches per system —
//! `Msg`'s nested variants and their name/tag/key/words/drawing class/lock
//! domain event, `ServerConfig` and `build`, `LockKind`/`LockClient` and
//! their calls, [`SystemId`] — is generated from it, so the recorder, the
//! trace and the report need no arm per system. A catalogue row names its
//! system (`system: Some(SystemId::<Variant>)`).

pub mod base;
pub mod client;
pub mod dynamodb;
pub mod etcd;
pub mod pg_advisory;
pub mod redlock;
pub mod server;
pub mod zookeeper;

pub use base::LockSystem;
pub use server::{Server, ServerConfig};

/// The registry: `Variant => marker type` per client-decided system. Calls
/// the macro it is given with the lines, so each generated enum and match
/// lives beside the code it belongs to.
macro_rules! for_each_system {
    ($($then:tt)+) => {
        $($then)+! {
            Zk => $crate::protocol::zookeeper::ZooKeeper,
            Dynamo => $crate::protocol::dynamodb::DynamoDb,
            Redis => $crate::protocol::redlock::Redlock,
            Etcd => $crate::protocol::etcd::Etcd,
            PgAdvisory => $crate::protocol::systems::pg_advisory::PgAdvisory,
        }
    };
}
pub(crate) use for_each_system;

/// What `Msg` needs of a registered system: the type of its messages
/// (declared in its file with `system_msgs!`). Here, beside the registry
/// and below `core/msg.rs`, so the message type names no file that
/// speaks it; [`LockSystem`] builds on it.
pub trait SystemWire {
    /// Its messages, declared with `system_msgs!` (`Msg::<Variant>`).
    type Msg: Copy + Eq + std::hash::Hash + std::fmt::Debug;
}

macro_rules! declare_system_ids {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        /// A client-decided system, as a catalogue row names it.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum SystemId {
            $( $variant, )*
        }
    };
}

for_each_system!(declare_system_ids);
