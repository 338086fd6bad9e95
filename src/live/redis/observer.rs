//! A worker's connection to a Redis master, decoded ([`super::resp`]) for
//! the trial's shared observer ([`crate::live::common::wire`]). Nothing
//! here reads the shape of a lock command: a command naming the lock key
//! is the worker's lock request (the first waits at the start gate; every
//! master hears the same command, so master 0's is the one noted), and the
//! reply to any command that may have touched the lock — one naming the
//! lock or token key, a script, a function, a transaction's `EXEC` — is
//! one after which the server's own account is asked whether the worker
//! has been granted the lock since. A `SET NX` of the lock key outside a
//! transaction also tells the account whether Redis took the key for it
//! ([`super::account::LockAccount::replied`]: the replay is held to it).
//!
//! Until the account has found the lock's key (when the scenario does not
//! name it exactly), a command that may be the lock request is one that
//! creates a key the name matches conditionally (`SET … NX`, `SETNX`) or a
//! script naming such a key; and every count (`INCR`) may be a token's.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use redis_protocol::resp3::types::OwnedFrame;

use super::account::LockAccount;
use super::keyspace::{counted, is_script, key_positions, takes_if_free};
use super::resp::{command_args, FrameBuffer};
use crate::live::common::wire::{Conversation, Reply, Request, Side, Wire};
use crate::live::locked;

/// What a command sent and not yet answered is, for its reply.
#[derive(Clone, Default)]
struct Pending {
    /// It may have touched the lock (the account is asked after its reply).
    may_touch: bool,
    /// A `SET NX` of the lock key (or of a key that may be it) outside a
    /// transaction, with the key: its reply says whether Redis took it.
    takes_if_free: Option<Vec<u8>>,
}

/// The decoders of every worker connection to a Redis master, each
/// registered with the account of that master's feed (the address the
/// server sees it come from is the worker's).
/// `accounts`: each worker's (its document's); `token_key`: the token
/// counter's, when named (empty: any count may be).
pub(super) fn wire(accounts: Vec<Arc<LockAccount>>, token_key: String) -> Wire {
    Arc::new(move |worker, master, seen_as| {
        let account = &accounts[worker];
        account.register(master, seen_as.to_string(), worker);
        let pending: Arc<Mutex<VecDeque<Pending>>> = Arc::default();
        let requests = Commands {
            master,
            account: account.clone(),
            lock_key: None,
            token_key: token_key.clone(),
            in_multi: false,
            frames: FrameBuffer::default(),
            pending: pending.clone(),
        };
        let replies = Replies {
            master,
            seen_as: seen_as.to_string(),
            account: account.clone(),
            frames: FrameBuffer::default(),
            pending,
        };
        let conversation: Conversation = (Box::new(requests), Box::new(replies));
        conversation
    })
}

/// The worker's commands.
struct Commands {
    master: usize,
    /// Knows the lock's key once named or found.
    account: Arc<LockAccount>,
    /// The lock's key once the account named or found it (kept: it stays).
    lock_key: Option<Vec<u8>>,
    token_key: String,
    in_multi: bool,
    frames: FrameBuffer,
    pending: Arc<Mutex<VecDeque<Pending>>>,
}

impl Side<Request> for Commands {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Request)) {
        for frame in self.frames.push(chunk) {
            let args = command_args(&frame).unwrap_or_default();
            let names = |key: &[u8]| args.iter().skip(1).any(|a| a == key);
            let name = args
                .first()
                .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
                .unwrap_or_default();
            if self.lock_key.is_none() {
                self.lock_key = self.account.lock_key(self.master);
            }
            let names_lock = match &self.lock_key {
                Some(key) => names(key),
                None => self.may_be_lock(&args, &name),
            };
            each(Request {
                note: names_lock && self.master == 0,
                gate: names_lock,
            });
            let takes = (names_lock && !self.in_multi && takes_if_free(&args))
                .then(|| args.get(1).cloned())
                .flatten();
            match name.as_str() {
                "multi" => self.in_multi = true,
                "exec" | "discard" => self.in_multi = false,
                _ => {}
            }
            let token = match self.token_key.is_empty() {
                true => counted(&args).is_some(),
                false => names(self.token_key.as_bytes()),
            };
            let may_touch = names_lock || token || name == "exec" || is_script(&name);
            locked(&self.pending).push_back(Pending {
                may_touch,
                takes_if_free: takes,
            });
        }
    }

    fn broken(&self) -> Option<String> {
        self.frames.broken()
    }
}

impl Commands {
    /// Before the lock's key is found: whether the command creates a key
    /// the lock's name matches conditionally, or is a script naming one.
    fn may_be_lock(&self, args: &[Vec<u8>], name: &str) -> bool {
        let choice = self.account.choice();
        if is_script(name) {
            let keys = key_positions(args).unwrap_or_default();
            return keys.iter().any(|&k| choice.matches(&args[k]));
        }
        takes_if_free(args) && args.get(1).is_some_and(|k| choice.matches(k))
    }
}

/// Redis's replies to them.
struct Replies {
    master: usize,
    seen_as: String,
    account: Arc<LockAccount>,
    frames: FrameBuffer,
    pending: Arc<Mutex<VecDeque<Pending>>>,
}

impl Side<Reply> for Replies {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Reply)) {
        for frame in self.frames.push(chunk) {
            let p = locked(&self.pending).pop_front().unwrap_or_default();
            if let Some(key) = &p.takes_if_free {
                let took = match &frame {
                    OwnedFrame::Null => Some(false),
                    OwnedFrame::SimpleString { data, .. } => Some(data.eq_ignore_ascii_case(b"OK")),
                    OwnedFrame::Number { data, .. } => Some(*data == 1),
                    _ => None,
                };
                self.account.replied(self.master, &self.seen_as, key, took);
            }
            each(Reply {
                touches_lock: p.may_touch,
                problem: None,
            });
        }
    }

    fn broken(&self) -> Option<String> {
        self.frames.broken()
    }
}
