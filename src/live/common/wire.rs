//! One worker connection to a lock server, as that server's room decodes
//! it: the requests the worker sent and the replies it got, each said in
//! the few words every user-program trial needs — does it name the lock,
//! does the worker's first acquisition wait on it, may its reply follow a
//! change of the lock — and, when a direction stops decoding, why.
//!
//! Each room decodes its own protocol (RESP, etcd's gRPC, ZooKeeper's
//! jute) and talks to its own account as it goes; the steps every server
//! shares — the start gate, noting what was sent and replied, asking the
//! account for new grants before the reply goes on, reporting a broken
//! decoder — are done once, by the trial's shared observer
//! ([`crate::live::client`]).

use std::net::SocketAddr;
use std::sync::Arc;

/// A request a worker sent, as its lock server's decoder read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// It is a lock request of the worker (it names the lock, or could
    /// change it): noted as one.
    pub note: bool,
    /// The worker's first acquisition waits on it at the trial's start gate.
    pub gate: bool,
}

/// A reply to a worker, as its decoder read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reply {
    /// It may follow a change of the lock: noted, and the server's
    /// account is asked whether the worker was granted the lock since
    /// (the faults at the grant strike before it goes on).
    pub touches_lock: bool,
    /// Why the account could not be brought up to it (the trial cannot be
    /// judged), if it could not.
    pub problem: Option<String>,
}

/// One direction of one connection, decoded.
pub(crate) trait Side<T>: Send {
    /// Decodes a chunk (a message may span chunks) and tells `each` about
    /// every message it completes, in order, as it goes: the trial's steps
    /// for a message (its start gate may hold it there) come before the
    /// room's own bookkeeping of the message after it.
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(T));
    /// Why this direction stopped decoding, if it did (what it carries
    /// after is forwarded, not seen).
    fn broken(&self) -> Option<String>;
}

/// A connection's two sides: the worker's requests, the server's replies.
pub(crate) type Conversation = (Box<dyn Side<Request>>, Box<dyn Side<Reply>>);

/// A room's decoders for each new connection of `worker` to upstream
/// `upstream`, which the server sees as coming from the given address.
pub(crate) type Wire = Arc<dyn Fn(usize, usize, SocketAddr) -> Conversation + Send + Sync>;
