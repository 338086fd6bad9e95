//! What every client-decided lock system shares, and nothing system-specific:
//! the [`LockSystem`] contract a system file implements, the events a client
//! reports to the worker, the timer ids it owns, the worker's configuration
//! it needs, the one request/retransmit helper, and the session-timeout
//! check of the servers with sessions (ZooKeeper, PostgreSQL). Every system
//! file imports this; `client.rs`, which dispatches to them, imports them —
//! so no file of this wing imports one that imports it back.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;

use crate::protocol::catalogue::ProtocolConfig;
use crate::protocol::msg::{first_req, next_req, Key, Msg, ReqId, Token};
use crate::protocol::node::{Clocks, Effect, Nanos, Node, NodeId, TimerId};
use crate::protocol::systems::SystemWire;

/// What a client-decided system's file provides, on one marker type that
/// its line in the registry (`systems::for_each_system!`) names. The
/// registry generates `Msg`'s nested variant, `ServerConfig`, `LockKind`
/// and `LockClient` variants and their dispatch from it.
///
/// Besides these, the types must have what the generated dispatch calls:
/// its [`SystemWire::Msg`] is a `system_msgs!` enum; `Client` has `acquire(clocks, owner, fx)`,
/// `release(clocks, fx)`, `on_message(clocks, msg, fx) -> LockEvent` and
/// `on_timer(clocks, timer, fx) -> LockEvent`.
pub trait LockSystem: SystemWire {
    /// The lock server's configuration, resolved from the protocol.
    type ServerConfig: Copy + Eq + Hash + Debug;
    /// The lock client's configuration, resolved from the protocol.
    type ClientConfig: Copy + Eq + Hash + Debug;
    /// The library in the worker that decides it holds the lock.
    type Client: Clone + Eq + Hash + Debug;

    /// The server at coordinator address `first + index` (`coord/<index>`).
    fn server_config(p: &ProtocolConfig, first: NodeId, index: u8) -> Self::ServerConfig;
    /// The lock server, as plain data (the code-level checker clones and
    /// hashes it with the rest of a state).
    type Server: Node + Clone + Eq + Hash + Debug;

    /// A fresh server (first boot, or after a crash).
    fn server(cfg: Self::ServerConfig) -> Self::Server;
    /// The client of a worker; `first` is `coord/0`'s id.
    fn client_config(p: &ProtocolConfig, first: NodeId) -> Self::ClientConfig;
    fn client(cfg: Self::ClientConfig, base: ClientBase) -> Self::Client;
}

/// What a lock client tells the worker.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockEvent {
    Pending,
    /// The client decided it holds the lock; `valid_ns` is how long it
    /// believes that stays true (on its own monotonic clock).
    Acquired {
        token: Option<Token>,
        valid_ns: Nanos,
    },
    /// Not this time: back off and try again with a new acquisition.
    Busy,
    /// The client learned it no longer holds the lock.
    Lost,
    Released,
}

/// Timers at or above this id belong to the lock client.
pub const CLIENT_TIMER_BASE: u16 = 8;
/// The client's request timeout.
pub const CLIENT_REQUEST: TimerId = TimerId(CLIENT_TIMER_BASE);
/// Two protocol timers (heartbeats, lease waits).
pub const CLIENT_TIMER_A: TimerId = TimerId(CLIENT_TIMER_BASE + 1);
pub const CLIENT_TIMER_B: TimerId = TimerId(CLIENT_TIMER_BASE + 2);

/// What every client needs from the worker's configuration.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ClientBase {
    pub key: Key,
    pub request_timeout_ns: Nanos,
    pub max_retries: u32,
    /// The worker's incarnation (0 on first boot): request ids carry it, so
    /// a restarted client never takes a reply meant for its predecessor.
    pub incarnation: u32,
}

/// A request waiting for its answer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Sent {
    pub to: NodeId,
    pub msg: Msg,
    pub retries: u32,
    /// When it was first sent, on the client's monotonic clock.
    pub first_sent_mono_ns: Nanos,
}

/// One outstanding request at a time, retransmitted unchanged (same
/// request id) on timeout, as the worker does with its own requests.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Requests {
    timeout_ns: Nanos,
    max_retries: u32,
    next_req: ReqId,
    pub outstanding: Option<Sent>,
}

/// What a request timeout came to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Timeout {
    /// Nothing was outstanding.
    Idle,
    Retransmitted,
    /// Retries exhausted; the request is forgotten.
    GaveUp(Sent),
}

impl Requests {
    pub fn new(base: ClientBase) -> Self {
        Requests {
            timeout_ns: base.request_timeout_ns,
            max_retries: base.max_retries,
            next_req: first_req(base.incarnation),
            outstanding: None,
        }
    }

    pub fn take_req(&mut self) -> ReqId {
        let req = self.next_req;
        self.next_req = next_req(req);
        req
    }

    pub fn send(&mut self, clocks: Clocks, to: NodeId, msg: Msg, fx: &mut Vec<Effect>) {
        self.outstanding = Some(Sent {
            to,
            msg,
            retries: 0,
            first_sent_mono_ns: clocks.mono_ns,
        });
        fx.push(Effect::Send { to, msg });
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.timeout_ns,
        });
    }

    /// If `req` answers the outstanding request, settle it and return it.
    pub fn answer(&mut self, req: ReqId, fx: &mut Vec<Effect>) -> Option<Sent> {
        let sent = self.outstanding.filter(|_| self.answers(req))?;
        self.forget(fx);
        Some(sent)
    }

    /// Does `req` answer the outstanding request?
    pub fn answers(&self, req: ReqId) -> bool {
        self.outstanding
            .is_some_and(|s| s.msg.words()[0] as ReqId == req)
    }

    pub fn forget(&mut self, fx: &mut Vec<Effect>) {
        if self.outstanding.take().is_some() {
            fx.push(Effect::CancelTimer {
                timer: CLIENT_REQUEST,
            });
        }
    }

    pub fn on_timeout(&mut self, fx: &mut Vec<Effect>) -> Timeout {
        let Some(sent) = self.outstanding else {
            return Timeout::Idle;
        };
        if sent.retries >= self.max_retries {
            self.outstanding = None;
            return Timeout::GaveUp(sent);
        }
        self.outstanding = Some(Sent {
            retries: sent.retries + 1,
            ..sent
        });
        fx.push(Effect::Send {
            to: sent.to,
            msg: sent.msg,
        });
        fx.push(Effect::SetTimer {
            timer: CLIENT_REQUEST,
            after_ns: self.timeout_ns,
        });
        Timeout::Retransmitted
    }
}

/// The timer id of a server's [`SessionCheck`].
pub const SESSION_CHECK: TimerId = TimerId(0);

/// A lock server's session timeouts (ZooKeeper's sessions, PostgreSQL's
/// connections): one timer, armed for the earliest deadline, that ends
/// every session silent past its own. The server keeps its sessions and
/// what ending one means; this keeps when to look.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SessionCheck {
    /// When the timer fires (`None`: not armed).
    at_mono_ns: Option<Nanos>,
}

impl SessionCheck {
    pub fn arm(&mut self, clocks: Clocks, at_mono_ns: Nanos, fx: &mut Vec<Effect>) {
        self.at_mono_ns = Some(at_mono_ns);
        fx.push(Effect::SetTimer {
            timer: SESSION_CHECK,
            after_ns: at_mono_ns.saturating_sub(clocks.mono_ns),
        });
    }

    /// A request from a session moved its deadline to `now + timeout_ns`
    /// (returned): arms the check if none is pending — a pending one fires
    /// earlier, and re-arms for the rest.
    pub fn touch(&mut self, clocks: Clocks, timeout_ns: Nanos, fx: &mut Vec<Effect>) -> Nanos {
        let deadline_mono_ns = clocks.mono_ns.saturating_add(timeout_ns);
        if self.at_mono_ns.is_none() {
            self.arm(clocks, deadline_mono_ns, fx);
        }
        deadline_mono_ns
    }

    /// The timer fired: the sessions whose deadline passed, in id order,
    /// for the server to end; then [`SessionCheck::rearm`].
    pub fn due<S>(
        &mut self,
        clocks: Clocks,
        sessions: &BTreeMap<u64, S>,
        deadline_mono_ns: impl Fn(&S) -> Nanos,
    ) -> Vec<u64> {
        self.at_mono_ns = None;
        sessions
            .iter()
            .filter(|(_, s)| deadline_mono_ns(s) <= clocks.mono_ns)
            .map(|(&id, _)| id)
            .collect()
    }

    /// Arms for the earliest deadline of the sessions left, if any.
    pub fn rearm<S>(
        &mut self,
        clocks: Clocks,
        sessions: &BTreeMap<u64, S>,
        deadline_mono_ns: impl Fn(&S) -> Nanos,
        fx: &mut Vec<Effect>,
    ) {
        if let Some(next) = sessions.values().map(deadline_mono_ns).min() {
            self.arm(clocks, next, fx);
        }
    }
}
