//! The lock servers of the registered systems as one type: `ServerConfig`,
//! one variant per registry line (`for_each_system!`), resolved from a
//! protocol and built into a fresh node. The worker side's twin is
//! `client.rs` (`LockKind`, `LockClient`).

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::node::{Node, NodeId};
use crate::protocol::systems::{LockSystem, SystemId};

macro_rules! declare_servers {
    ($( $variant:ident => $system:path ),* $(,)?) => {
        /// The real-system lock services, with their configuration.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub enum ServerConfig {
            $( $variant(<$system as LockSystem>::ServerConfig), )*
        }

        impl ServerConfig {
            /// The server of `system` at coordinator address `first + index`.
            pub fn of(system: SystemId, p: &ProtocolConfig, first: NodeId, index: u8) -> ServerConfig {
                match system {
                    $( SystemId::$variant => ServerConfig::$variant(
                        <$system as LockSystem>::server_config(p, first, index)
                    ), )*
                }
            }

            /// A fresh server node.
            pub fn build(self) -> Box<dyn Node> {
                match self {
                    $( ServerConfig::$variant(cfg) => <$system as LockSystem>::server(cfg), )*
                }
            }
        }
    };
}

crate::protocol::systems::for_each_system!(declare_servers);
