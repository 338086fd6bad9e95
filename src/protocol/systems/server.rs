//! The lock servers of the registered systems as one type: `ServerConfig`,
//! one variant per registry line (`for_each_system!`), resolved from a
//! protocol and built into a fresh node — a [`Server`], one
//! `Clone + Hash + Eq` type over every system's server (the code-level
//! checker keeps it in its hashed states), or boxed for the simulator. The
//! worker side's twin is `client.rs` (`LockKind`, `LockClient`).

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::node::{Clocks, Effect, Input, Node, NodeId};
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
                Box::new(self.server())
            }

            /// A fresh server, as plain data.
            pub fn server(self) -> Server {
                match self {
                    $( ServerConfig::$variant(cfg) => Server::$variant(<$system as LockSystem>::server(cfg)), )*
                }
            }
        }

        /// A lock server of any registered system.
        #[derive(Clone, PartialEq, Eq, Hash, Debug)]
        pub enum Server {
            $( $variant(<$system as LockSystem>::Server), )*
        }

        impl Node for Server {
            fn handle(&mut self, clocks: Clocks, input: Input<'_>, effects: &mut Vec<Effect>) {
                match self {
                    $( Server::$variant(n) => n.handle(clocks, input, effects), )*
                }
            }

            fn records_own_replies(&self) -> bool {
                match self {
                    $( Server::$variant(n) => n.records_own_replies(), )*
                }
            }
        }
    };
}

crate::protocol::systems::for_each_system!(declare_servers);
