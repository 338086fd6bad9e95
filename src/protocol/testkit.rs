//! Helpers for the protocol modules' unit tests, which drive one node by
//! hand: clocks that read true time, and the messages a step sent.

use crate::protocol::msg::Msg;
use crate::protocol::node::{Clocks, Effect, Nanos, NodeId};

/// Wall and monotonic clocks both reading `t_ns` (no offset, no drift).
pub fn at(t_ns: Nanos) -> Clocks {
    Clocks {
        wall_ns: t_ns as i64,
        mono_ns: t_ns,
    }
}

/// The messages among `fx`, with their destinations, in order.
pub fn sent(fx: &[Effect]) -> Vec<(NodeId, Msg)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Send { to, msg } => Some((*to, *msg)),
            _ => None,
        })
        .collect()
}
