//! The lease server: Redis `SET key value NX PX ttl` with an optional fencing
//! counter beside it.
//!
//! Models the lock service of the article's first half. A lease record is
//! (owner nonce, token, expiry on the server's wall clock — Redis stores
//! absolute expiry times, so a wall-clock jump moves every lease). Release
//! is either a plain `DEL` (removes whatever lease is there, the bug the
//! Redis docs warn about) or compare-and-delete (Lua script / `DELEX IFEQ`).
//!
//! With a token source, every grant takes the next value of a counter that
//! is persisted as *synced* before the grant is sent, so a crash and restart
//! can never hand out the same token twice. The lease table itself is
//! volatile: a restarted server forgets who held what, as Redis without AOF
//! fsync does. Fencing is what keeps data safe through that.
//!
//! Re-acquiring with the owner nonce that already holds the key answers with
//! the same grant again (without extending it), so a retransmitted acquire
//! is idempotent instead of locking its own sender out.

use std::collections::BTreeMap;

use super::msg::{Key, Msg, Token};
use super::node::{Clocks, Durability, Effect, Input, Nanos, Node, NodeId, Observation, TimerId};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReleaseStyle {
    /// `DEL key`: removes whichever lease is present.
    Del,
    /// `if GET key == value then DEL key`: removes only the caller's lease.
    CompareAndDelete,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CoordinatorConfig {
    pub lease_ttl_ns: Nanos,
    pub release: ReleaseStyle,
    /// Issue fencing tokens from a durable counter.
    pub tokens: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Lease {
    owner: u64,
    token: Option<Token>,
    expires_wall_ns: i64,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Coordinator {
    cfg: CoordinatorConfig,
    leases: BTreeMap<Key, Lease>,
    /// The greatest token ever issued (0: none yet).
    counter: u64,
}

impl Coordinator {
    pub fn new(cfg: CoordinatorConfig) -> Self {
        assert!(cfg.lease_ttl_ns > 0, "a lease needs a positive TTL");
        Coordinator {
            cfg,
            leases: BTreeMap::new(),
            counter: 0,
        }
    }

    /// Timers are per key: the expiry check for `key`.
    fn expiry_timer(key: Key) -> TimerId {
        TimerId(key.0)
    }

    /// Drops `key`'s lease if it ran out on our wall clock. Returns whether
    /// the key is now free.
    fn expire_if_due(&mut self, clocks: Clocks, key: Key, effects: &mut Vec<Effect>) -> bool {
        match self.leases.get(&key) {
            None => true,
            Some(lease) if clocks.wall_ns >= lease.expires_wall_ns => {
                effects.push(Effect::Observe(Observation::LeaseExpired {
                    key,
                    owner: lease.owner,
                }));
                self.leases.remove(&key);
                true
            }
            Some(_) => false,
        }
    }

    fn on_acquire(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        let free = self.expire_if_due(clocks, key, fx);
        if !free {
            let lease = self.leases[&key];
            if lease.owner == owner {
                let left_ns = (lease.expires_wall_ns - clocks.wall_ns).max(0) as u64;
                fx.push(Effect::Send {
                    to: from,
                    msg: Msg::Granted {
                        req,
                        key,
                        owner,
                        token: lease.token,
                        ttl_ns: left_ns,
                    },
                });
            } else {
                fx.push(Effect::Send {
                    to: from,
                    msg: Msg::Busy { req, key },
                });
            }
            return;
        }
        let token = if self.cfg.tokens {
            let next = self.counter.checked_add(1).expect("token counter overflow");
            assert!(next > self.counter, "issued tokens must strictly grow");
            self.counter = next;
            // Durable before the grant leaves: a restarted server resumes above it.
            fx.push(Effect::Persist {
                durability: Durability::Synced,
                record: next.to_le_bytes().to_vec(),
            });
            Some(Token(next))
        } else {
            None
        };
        let ttl_ns = self.cfg.lease_ttl_ns;
        self.leases.insert(
            key,
            Lease {
                owner,
                token,
                expires_wall_ns: clocks.wall_ns.saturating_add(ttl_ns as i64),
            },
        );
        fx.push(Effect::SetTimer {
            timer: Self::expiry_timer(key),
            after_ns: ttl_ns,
        });
        fx.push(Effect::Send {
            to: from,
            msg: Msg::Granted {
                req,
                key,
                owner,
                token,
                ttl_ns,
            },
        });
    }

    fn on_release(
        &mut self,
        clocks: Clocks,
        from: NodeId,
        req: u32,
        key: Key,
        owner: u64,
        fx: &mut Vec<Effect>,
    ) {
        self.expire_if_due(clocks, key, fx);
        let removed = match (self.cfg.release, self.leases.get(&key)) {
            (_, None) => None,
            (ReleaseStyle::Del, Some(lease)) => Some(lease.owner),
            (ReleaseStyle::CompareAndDelete, Some(lease)) if lease.owner == owner => {
                Some(lease.owner)
            }
            (ReleaseStyle::CompareAndDelete, Some(_)) => None,
        };
        if removed.is_some() {
            self.leases.remove(&key);
            fx.push(Effect::CancelTimer {
                timer: Self::expiry_timer(key),
            });
        }
        if self.cfg.release == ReleaseStyle::CompareAndDelete {
            assert!(
                removed.is_none() || removed == Some(owner),
                "compare-and-delete removed a foreign lease"
            );
        }
        fx.push(Effect::Send {
            to: from,
            msg: Msg::Released { req, key, removed },
        });
    }

    fn on_expiry_timer(&mut self, clocks: Clocks, key: Key, fx: &mut Vec<Effect>) {
        if self.expire_if_due(clocks, key, fx) {
            return;
        }
        // The wall clock was stepped back since the timer was set: re-arm for what is left.
        let lease = self.leases[&key];
        let left_ns = (lease.expires_wall_ns - clocks.wall_ns).max(1) as u64;
        fx.push(Effect::SetTimer {
            timer: Self::expiry_timer(key),
            after_ns: left_ns,
        });
    }
}

impl Node for Coordinator {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        match input {
            Input::Start { recovered } => {
                self.leases.clear();
                self.counter = match recovered {
                    Some(bytes) if bytes.len() == 8 => {
                        let mut word = [0u8; 8];
                        word.copy_from_slice(bytes);
                        u64::from_le_bytes(word)
                    }
                    Some(bytes) => {
                        panic!("coordinator record is {} bytes, expected 8", bytes.len())
                    }
                    None => 0,
                };
            }
            Input::Message { from, msg } => match msg {
                Msg::Acquire { req, key, owner } => {
                    self.on_acquire(clocks, from, req, key, owner, fx)
                }
                Msg::Release { req, key, owner } => {
                    self.on_release(clocks, from, req, key, owner, fx)
                }
                // Not addressed to a lock server: ignore, as a real one would drop a bad frame.
                _ => {}
            },
            Input::Timer { timer } => self.on_expiry_timer(clocks, Key(timer.0), fx),
        }
    }
}
