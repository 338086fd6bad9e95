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
pub mod zookeeper;

pub use base::LockSystem;

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

/// The or-pattern of every system message (`Msg::Zk(_) | …`), so a match
/// over the core stays exhaustive without an arm per system.
macro_rules! system_msg {
    () => {
        $crate::protocol::systems::for_each_system!($crate::protocol::systems::system_pattern)
    };
}
pub(crate) use system_msg;

macro_rules! system_pattern {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        $( $crate::protocol::msg::Msg::$variant(_) )|*
    };
}
pub(crate) use system_pattern;

macro_rules! declare_servers {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        /// A client-decided system, as a catalogue row names it.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum SystemId {
            $( $variant, )*
        }

        /// The real-system lock services, with their configuration.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum ServerConfig {
            $( $variant(<$system as LockSystem>::ServerConfig), )*
        }

        impl ServerConfig {
            /// The server of `system` at coordinator address `first + index`.
            pub fn of(
                system: SystemId,
                p: &$crate::protocol::ProtocolConfig,
                first: $crate::protocol::NodeId,
                index: u8,
            ) -> ServerConfig {
                match system {
                    $( SystemId::$variant => ServerConfig::$variant(
                        <$system as LockSystem>::server_config(p, first, index)
                    ), )*
                }
            }

            /// A fresh server node.
            pub fn build(self) -> Box<dyn $crate::protocol::Node> {
                match self {
                    $( ServerConfig::$variant(cfg) => <$system as LockSystem>::server(cfg), )*
                }
            }
        }
    };
}

for_each_system!(declare_servers);
