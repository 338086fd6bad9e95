//! The core every protocol shares: the lock domain's messages (`msg`), the
//! sans-IO `Node` contract the simulator, the model checker and external
//! drivers call (`node`), and the durable record a lock service persists
//! (`record`). Nothing here knows a particular protocol.

pub mod msg;
pub mod node;
pub mod record;
